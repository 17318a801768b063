//! The exact counting run: instrument a module with `loopbench-count`, run
//! the copy in wasmi (untimed, outside every timed region), and read back
//! what the original executes.
//!
//! For a shape, per-iteration counts come from two runs on fresh instances,
//! `n` and `2n` iterations: `(counts(2n) - counts(n)) / n` removes the
//! prologue and epilogue exactly, so the result is what one more iteration
//! costs. Those numbers must equal the shape's declaration; a difference is
//! a hard error, because it means the shape (or an engine, or a change to
//! the generator) no longer does what it claims.
//!
//! wasmi runs the counting copy with fuel, so a module that never ends is
//! stopped and reported instead of hanging the session.

use crate::arm::RunError;
use crate::engines::counting::{CountingInstance, Stopped, TracingInstance};
use crate::engines::{EngineError, Instance};
use crate::shapes::{Declared, ShapeModule};
use loopbench_count::{instrument, Counts, Instrumented, OpClass};
use serde::Serialize;
use std::collections::BTreeMap;
use thiserror::Error;

/// Why a counting run gave no counts, or counts that contradict the shape.
#[derive(Debug, Error, Clone)]
pub enum CountError {
    /// The counting engine failed outside any shape (a module's export).
    #[error("counting run: {0}")]
    Engine(EngineError),
    #[error("cannot instrument the module for counting: {0}")]
    Instrument(String),
    #[error("cannot trace the module's branches: {0}")]
    Trace(String),
    /// The module's proposals could not be read.
    #[error("{0}")]
    Proposals(String),
    #[error(
        "shape {shape}: {iters} iterations did not finish within {fuel} units of fuel in the \
         counting run; does the loop end?"
    )]
    OutOfFuel {
        shape: String,
        iters: u64,
        fuel: u64,
    },
    /// A shape's hooks or the engine failed on the counting copy.
    #[error(transparent)]
    Run(#[from] RunError),
    /// The counting run disagrees with the shape's declared counts.
    #[error("counts for shape {shape} differ from its declaration: {detail}")]
    Declared { shape: String, detail: String },
}

/// Fuel for one counting run of a shape: generous for a few dozen
/// iterations of any real loop, small enough to stop a runaway in seconds.
pub const SHAPE_FUEL: u64 = 2_000_000_000;

/// Iterations of the shorter counting run, per declared group.
const COUNT_GROUPS: u64 = 16;

/// What a counting run saw, and how it ended.
pub struct CountRun {
    pub counts: Counts,
    /// `Some` when the run trapped or ran out of fuel: the counts are what
    /// executed up to there.
    pub stopped: Option<String>,
    pub results: Vec<wasmi::Val>,
}

fn engine_err(e: EngineError) -> CountError {
    CountError::Engine(e)
}

pub fn instrumented(wasm: &[u8]) -> Result<Instrumented, CountError> {
    instrument(wasm).map_err(|e| CountError::Instrument(e.to_string()))
}

fn decode(inst: &Instrumented, instance: &mut CountingInstance) -> Result<Counts, CountError> {
    inst.decode(|slot| instance.read_counter(Instrumented::COUNTER_EXPORT, slot))
        .map_err(engine_err)
}

/// Count one call of `export` with `args` in any module.
pub fn count_call(
    wasm: &[u8],
    export: &str,
    args: &[wasmi::Val],
    fuel: Option<u64>,
) -> Result<CountRun, CountError> {
    let inst = instrumented(wasm)?;
    let mut instance = CountingInstance::new(&inst.wasm, fuel).map_err(engine_err)?;
    let outcome = instance.call_values(export, args).map_err(engine_err)?;
    let counts = decode(&inst, &mut instance)?;
    let (results, stopped) = match outcome {
        Ok(r) => (r, None),
        Err(Stopped::Trap(m)) => (Vec::new(), Some(format!("trap: {m}"))),
        Err(Stopped::OutOfFuel) => (
            Vec::new(),
            Some(format!("out of fuel after {} units", fuel.unwrap_or(0))),
        ),
    };
    Ok(CountRun {
        counts,
        stopped,
        results,
    })
}

/// The first proposal `wasm` uses that the counting engine (wasmi, as
/// built) lacks: such a module keeps its declared counts.
pub fn counting_engine_lacks(
    wasm: &[u8],
) -> Result<Option<crate::proposals::Proposal>, CountError> {
    let needed =
        crate::proposals::required(wasm).map_err(|e| CountError::Proposals(e.to_string()))?;
    let supported = crate::engines::counting::supports().map_err(CountError::Engine)?;
    Ok(crate::proposals::first_missing(&needed, &supported))
}

/// Per-iteration counts of a shape, measured.
#[derive(Clone, Debug, Serialize)]
pub struct ShapeCounts {
    /// Iterations of the shorter run (the longer ran twice as many).
    pub iters: u64,
    /// Counts of one iteration, as exact rationals `delta / iters`.
    pub delta: Counts,
    /// What the simulated predictor saw over the same `iters` iterations
    /// (long run minus short run, so warm-up cancels).
    pub predictor: loopbench_count::PredictorStats,
}

impl ShapeCounts {
    pub fn per_iter(&self) -> loopbench_count::PerIter {
        self.delta.per_iter(self.iters)
    }
    pub fn mispredicts_per_iter(&self) -> f64 {
        self.predictor.mispredicts as f64 / self.iters as f64
    }
    pub fn multiway_mispredicts_per_iter(&self) -> f64 {
        self.predictor.multiway_mispredicts as f64 / self.iters as f64
    }
}

/// Run the shape's branch-traced module for `n` iterations on a fresh
/// instance (init, reset, verify as in the counting run) and return what
/// the simulated predictor saw.
pub fn trace_shape_once(
    module: &ShapeModule,
    traced: &loopbench_count::Traced,
    n: u64,
) -> Result<loopbench_count::PredictorStats, CountError> {
    let name = module.name().to_string();
    let hook = |e| crate::arm::hook_error(&name, "branch trace (wasmi)", 0, e);
    let mut instance = TracingInstance::new(traced.clone(), SHAPE_FUEL).map_err(engine_err)?;
    let s = module.shape.as_ref();
    s.init(&module.params, &mut instance).map_err(hook)?;
    s.reset(&module.params, n, &mut instance).map_err(hook)?;
    let ret = instance
        .call("run", Some(n as i32), None)
        .map_err(|e| RunError::Engine {
            shape: name.clone(),
            arm: "branch trace (wasmi)".into(),
            source: e,
        })?;
    if module.declared.is_some() {
        s.verify(&module.params, n, ret, &mut instance)
            .map_err(hook)?;
    }
    Ok(instance.stats())
}

fn traced(wasm: &[u8]) -> Result<loopbench_count::Traced, CountError> {
    loopbench_count::trace_branches(wasm).map_err(|e| CountError::Trace(e.to_string()))
}

/// Run the shape's instrumented module for `n` iterations on a fresh
/// instance, with the shape's own init, reset and verify.
pub fn count_shape_once(
    module: &ShapeModule,
    inst: &Instrumented,
    n: u64,
) -> Result<Counts, CountError> {
    let name = module.name().to_string();
    let hook = |e| crate::arm::hook_error(&name, "counting run (wasmi)", 0, e);
    let engine_err = |source| RunError::Engine {
        shape: name.clone(),
        arm: "counting run (wasmi)".into(),
        source,
    };
    let mut instance = CountingInstance::new(&inst.wasm, Some(SHAPE_FUEL)).map_err(engine_err)?;
    let s = module.shape.as_ref();
    s.init(&module.params, &mut instance).map_err(hook)?;
    s.reset(&module.params, n, &mut instance).map_err(hook)?;
    let ret = match instance
        .call_values("run", &[wasmi::Val::I32(n as i32)])
        .map_err(engine_err)?
    {
        Ok(r) => r.first().and_then(wasmi::Val::i32),
        Err(Stopped::OutOfFuel) => {
            return Err(CountError::OutOfFuel {
                shape: name,
                iters: n,
                fuel: SHAPE_FUEL,
            })
        }
        Err(Stopped::Trap(m)) => {
            return Err(RunError::Engine {
                shape: name,
                arm: "counting run (wasmi)".into(),
                source: EngineError::Trap(m),
            }
            .into())
        }
    };
    // Built-in shapes verify any iteration count, which also proves the
    // instrumented copy computes what the original does. A user's verify()
    // may only know the session's iteration count, so it runs in the timed
    // reps, not here.
    if module.declared.is_some() {
        s.verify(&module.params, n, ret, &mut instance)
            .map_err(hook)?;
    }
    decode(inst, &mut instance)
}

/// Exact per-iteration counts of a shape (see the module docs).
pub fn count_shape(module: &ShapeModule) -> Result<ShapeCounts, CountError> {
    let inst = instrumented(&module.wasm)?;
    let per = module.declared.map(|d| d.per.max(1)).unwrap_or(1);
    let n = per * COUNT_GROUPS;
    let short = count_shape_once(module, &inst, n)?;
    let long = count_shape_once(module, &inst, 2 * n)?;
    let tr = traced(&module.wasm)?;
    let (short_p, long_p) = (
        trace_shape_once(module, &tr, n)?,
        trace_shape_once(module, &tr, 2 * n)?,
    );
    Ok(ShapeCounts {
        iters: n,
        delta: long.delta(&short),
        predictor: long_p.since(&short_p),
    })
}

/// Compare counted with declared, exactly: `counted * per == declared * n`.
pub fn check_declared(
    shape: &str,
    declared: &Declared,
    counted: &ShapeCounts,
) -> Result<(), CountError> {
    let d = &counted.delta;
    let n = counted.iters;
    let per = declared.per.max(1);
    let pairs = [
        ("ops", d.total_ops, declared.ops),
        ("taken branches", d.taken_branches, declared.taken_branches),
        ("loads", d.class(OpClass::Load), declared.loads),
        ("stores", d.class(OpClass::Store), declared.stores),
        ("atomics", d.class(OpClass::Atomic), declared.atomics),
        ("calls", d.calls, declared.calls),
        (
            "bytes",
            d.bytes_loaded + d.bytes_stored + d.bulk_bytes,
            declared.bytes,
        ),
    ];
    let wrong: Vec<String> = pairs
        .iter()
        .filter(|(_, counted, declared)| counted * per != declared * n)
        .map(|(what, counted, declared)| {
            format!(
                "{what}/iter counted {} vs declared {}",
                trim(*counted as f64 / n as f64),
                trim(*declared as f64 / per as f64)
            )
        })
        .collect();
    if wrong.is_empty() {
        Ok(())
    } else {
        Err(CountError::Declared {
            shape: shape.to_string(),
            detail: wrong.join(", "),
        })
    }
}

fn trim(x: f64) -> String {
    let s = format!("{x:.4}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// Class counts keyed by the class's lowercase name.
pub fn class_map(classes: &BTreeMap<OpClass, f64>) -> BTreeMap<String, f64> {
    classes
        .iter()
        .map(|(c, v)| (c.name().to_string(), *v))
        .collect()
}
