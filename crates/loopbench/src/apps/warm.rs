//! Warm mode: a shape's loop run inside a live app instance.
//!
//! A shape measured alone runs in a fresh, nearly empty instance: its memory
//! was never touched by anything else and the engine has compiled nothing
//! but the loop. Warm mode injects the shape's functions into the app module
//! (they use the app's memory 0), runs the app's workload for `N` steps, and
//! then calls the injected loop once. The cold arm does exactly the same
//! with `N = 0`, so warm vs cold differs only in the app having run.
//!
//! The injected loop writes over the app's memory (the shape's own layout),
//! which damages the app's state. So every rep is a *fresh instance*: setup,
//! N app steps, grow memory to the shape's size, the shape's init and reset,
//! the one timed call, the shape's verify, and the instance is dropped. It is
//! never resumed, never reused for a second rep and never shared between
//! shapes. The injected entry point enforces this itself: a second call on
//! one instance traps with a message.

use super::rewrite::{Additions, ElemSegment, ModuleInfo, Sig};
use super::{AppError, AppShape};
use crate::arm::{hook_error, skip_reason, timed_rep, Arm, ArmSpec, PreparedArm, Rep, RunError};
use crate::engines::EngineError;
use crate::engines::{Compiled, Engine};
use crate::error::Error;
use crate::measure::Meter;
use crate::proposals::Proposals;
pub use crate::results::app::WarmResult;
use crate::shapes::recipe::stub_failure;
use crate::shapes::{pages_for, HookError, Mismatch, ShapeModule, ShapeRef};
use crate::stats;
use crate::stats::LEVEL;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use wasm_encoder::reencode::{Reencode, RoundtripReencoder};
use wasm_encoder::{BlockType, ExportKind, Function, ValType};
use wasmparser::{Parser, Payload};

/// The injected one-shot entry point, `(i32) -> i32`.
pub const WARM_RUN: &str = "__loopbench_warm_run";
/// Injected `(pages) -> i32`: grows memory 0 to at least `pages`, returns its size.
pub const GROW: &str = "__loopbench_grow";
/// The stub-error code the entry point stores when called twice.
pub const REUSED_CODE: i32 = -1;

/// Index offsets for the shape's functions inside the app.
struct Offsets {
    types: u32,
    funcs: u32,
    globals: u32,
    tables: u32,
}

impl Reencode for Offsets {
    type Error = std::convert::Infallible;
    fn type_index(&mut self, ty: u32) -> Result<u32, wasm_encoder::reencode::Error<Self::Error>> {
        Ok(ty + self.types)
    }
    fn function_index(
        &mut self,
        f: u32,
    ) -> Result<u32, wasm_encoder::reencode::Error<Self::Error>> {
        Ok(f + self.funcs)
    }
    fn global_index(&mut self, g: u32) -> Result<u32, wasm_encoder::reencode::Error<Self::Error>> {
        Ok(g + self.globals)
    }
    fn table_index(&mut self, t: u32) -> Result<u32, wasm_encoder::reencode::Error<Self::Error>> {
        Ok(t + self.tables)
    }
}

fn enc<E: std::fmt::Debug>(e: E) -> AppError {
    AppError::ReencodeShape(format!("{e:?}"))
}

/// Append the shape module's types, functions, globals, tables and element
/// segments to `add`, plus the one-shot entry point and the grow helper.
/// `info` describes the app with everything added so far; `err_global` is
/// the app's stub error global.
pub fn inject_shape(
    shape_wasm: &[u8],
    info: &ModuleInfo,
    err_global: u32,
    add: &mut Additions,
) -> Result<(), AppError> {
    let shape = super::rewrite::inspect(shape_wasm)?;
    if !shape.imports.is_empty() {
        return Err(AppError::NotInjectable(
            "the shape imports something; only self-contained shapes can be injected",
        ));
    }
    match shape.memory0 {
        Some(m) if m.shared => {
            return Err(AppError::NotInjectable(
                "the shape uses a shared memory; the app's memory is not shared",
            ));
        }
        Some(m) if m.memory64 => {
            return Err(AppError::NotInjectable("the shape uses a 64-bit memory"))
        }
        None => return Err(AppError::NotInjectable("the shape has no memory")),
        _ => {}
    }
    if shape.memories > 1 {
        return Err(AppError::NotInjectable("the shape has several memories"));
    }
    if info.memory0.map(|m| m.memory64 || m.shared).unwrap_or(true) {
        return Err(AppError::NotInjectable(
            "the app's memory is not a plain 32-bit memory",
        ));
    }
    let mut off = Offsets {
        types: info.types,
        funcs: info.funcs(),
        globals: info.globals,
        tables: info.tables + add.tables.len() as u32,
    };
    let (run_idx, run_sig) = shape.export_func("run")?;
    if run_sig != Sig::new(&[ValType::I32], &[ValType::I32]) {
        return Err(AppError::NotInjectable(
            "the shape's run is not (i32) -> i32",
        ));
    }
    let mut rt = RoundtripReencoder;
    let mut nshape_types = 0u32;
    let mut nshape_globals = 0u32;
    let mut nshape_funcs = 0u32;
    let first_func = add.functions.len();
    let mut filled = 0usize;
    for payload in Parser::new(0).parse_all(shape_wasm) {
        match payload? {
            Payload::TypeSection(r) => {
                for ty in r.into_iter_err_on_gc_types() {
                    let f = ty?;
                    let mut conv = |v: &[wasmparser::ValType]| -> Result<Vec<ValType>, AppError> {
                        v.iter().map(|t| rt.val_type(*t).map_err(enc)).collect()
                    };
                    add.types.push(Sig {
                        params: conv(f.params())?,
                        results: conv(f.results())?,
                    });
                    nshape_types += 1;
                }
            }
            Payload::FunctionSection(r) => {
                for t in r {
                    let t = t?;
                    // Placeholder body replaced when the code arrives, in order.
                    add.functions.push((t + off.types, Function::new([])));
                    nshape_funcs += 1;
                }
            }
            Payload::TableSection(r) => {
                for t in r {
                    let t = t?;
                    add.tables.push(rt.table_type(t.ty).map_err(enc)?);
                }
            }
            Payload::GlobalSection(r) => {
                for g in r {
                    let g = g?;
                    let ty = rt.global_type(g.ty).map_err(enc)?;
                    let init = off.const_expr(g.init_expr).map_err(enc)?;
                    add.globals.push((ty, init));
                    nshape_globals += 1;
                }
            }
            Payload::ElementSection(r) => {
                for e in r {
                    let e = e?;
                    let wasmparser::ElementKind::Active {
                        table_index,
                        offset_expr,
                    } = e.kind
                    else {
                        return Err(AppError::NotInjectable(
                            "the shape has a passive or declared element segment",
                        ));
                    };
                    let mut ops = offset_expr.get_operators_reader();
                    let offset = match ops.read()? {
                        wasmparser::Operator::I32Const { value } => value,
                        _ => {
                            return Err(AppError::NotInjectable(
                                "the shape's element offset is not a constant",
                            ))
                        }
                    };
                    let wasmparser::ElementItems::Functions(funcs) = e.items else {
                        return Err(AppError::NotInjectable(
                            "the shape's element segment holds expressions",
                        ));
                    };
                    let funcs: Vec<u32> = funcs
                        .into_iter()
                        .map(|f| f.map(|f| f + off.funcs))
                        .collect::<Result<_, _>>()?;
                    add.elements.push(ElemSegment {
                        table: table_index.unwrap_or(0) + off.tables,
                        offset,
                        funcs,
                    });
                }
            }
            Payload::DataSection(_) => {
                return Err(AppError::NotInjectable(
                    "the shape has data segments; they would overwrite the app",
                ))
            }
            Payload::StartSection { .. } => {
                return Err(AppError::NotInjectable("the shape has a start function"))
            }
            Payload::CodeSectionStart { .. } => {}
            Payload::CodeSectionEntry(body) => {
                let mut f = off.new_function_with_parsed_locals(&body).map_err(enc)?;
                let mut reader = body.get_operators_reader()?;
                while !reader.eof() {
                    f.instruction(&off.parse_instruction(&mut reader).map_err(enc)?);
                }
                let slot = add
                    .functions
                    .get_mut(first_func + filled)
                    .ok_or(AppError::NotInjectable("code entry without a function"))?;
                slot.1 = f;
                filled += 1;
            }
            _ => {}
        }
    }
    if filled != nshape_funcs as usize {
        return Err(AppError::NotInjectable(
            "the shape's code and function sections disagree",
        ));
    }
    let shape_run = run_idx + off.funcs;
    // One (i32) -> i32 type for the entry point and the grow helper.
    let t = info.types + nshape_types;
    add.types.push(Sig::new(&[ValType::I32], &[ValType::I32]));
    let used = info.globals + nshape_globals;
    add.push_i32_global();
    let entry_idx = info.funcs() + nshape_funcs;
    let mut entry = Function::new([]);
    entry
        .instructions()
        .global_get(used)
        .if_(BlockType::Empty)
        .i32_const(REUSED_CODE)
        .global_set(err_global)
        .unreachable()
        .end()
        .i32_const(1)
        .global_set(used)
        .local_get(0)
        .call(shape_run)
        .end();
    add.functions.push((t, entry));
    add.exports
        .push((WARM_RUN.into(), ExportKind::Func, entry_idx));
    let mut grow = Function::new([]);
    grow.instructions()
        .memory_size(0)
        .local_get(0)
        .i32_lt_u()
        .if_(BlockType::Empty)
        .local_get(0)
        .memory_size(0)
        .i32_sub()
        .memory_grow(0)
        .drop()
        .end()
        .memory_size(0)
        .end();
    add.functions.push((t, grow));
    add.exports
        .push((GROW.into(), ExportKind::Func, entry_idx + 1));
    Ok(())
}

/// The message for a warm-mode stub error code.
pub fn explain(code: i32) -> Option<String> {
    (code == REUSED_CODE).then(|| {
        "warm-mode instance reused: the injected loop was called twice on one instance".into()
    })
}

/// An app with a shape injected, plus the shape module to run it as.
pub struct WarmSetup {
    pub app: Arc<AppShape>,
    pub module: ShapeModule,
}

/// Inject `shape` into the app and build the module the arms run.
pub fn setup(spec: &'static super::AppSpec, shape: ShapeModule) -> Result<WarmSetup, Error> {
    let shape_wasm = shape.wasm.clone();
    let inject = move |info: &ModuleInfo, add: &mut Additions| -> Result<(), AppError> {
        // The app's stub error global is the first global loopbench added.
        let err_global = info.globals - add.globals.len() as u32;
        inject_shape(&shape_wasm, info, err_global, add)
    };
    let app = AppShape::load_with(spec, Some(&inject)).map_err(|e| AppError::Warm {
        shape: shape.name().to_string(),
        source: Box::new(e),
    })?;
    let mut module = shape;
    module.wasm = app.prepared.wasm.clone();
    Ok(WarmSetup {
        app: Arc::new(app),
        module,
    })
}

/// One arm of a warm-mode session: an engine plus the number of app steps
/// run before the loop (0 = cold).
pub struct WarmArm {
    label: String,
    engine: Box<dyn Engine>,
    app: Arc<AppShape>,
    after: u64,
    /// Instances created so far (one per rep; tests check it).
    pub instances: Arc<AtomicUsize>,
    /// The app's checksum after `after` steps, when no recipe value is known:
    /// every rep on every arm must agree with the first.
    prefix: Arc<Mutex<Option<i32>>>,
}

impl WarmArm {
    pub fn new(
        spec: &ArmSpec,
        label: String,
        app: Arc<AppShape>,
        after: u64,
        prefix: Arc<Mutex<Option<i32>>>,
    ) -> Result<Self, Error> {
        let engine = spec.build().map_err(AppError::Engine)?;
        Ok(WarmArm {
            label,
            engine,
            app,
            after,
            instances: Arc::new(AtomicUsize::new(0)),
            prefix,
        })
    }
}

impl Arm for WarmArm {
    fn label(&self) -> &str {
        &self.label
    }
    fn version(&self) -> String {
        self.engine.version()
    }
    fn supports(&self) -> Proposals {
        self.engine.supports()
    }
    fn prepare<'s>(&self, shape: &'s ShapeModule) -> Result<Box<dyn PreparedArm + 's>, RunError> {
        let compiled = self
            .engine
            .compile(&shape.wasm)
            .map_err(|source| RunError::Engine {
                shape: shape.name().into(),
                arm: self.label.clone(),
                source,
            })?;
        Ok(Box::new(WarmPrepared {
            arm: self.label.clone(),
            shape: shape.shape_ref(),
            pages: pages_for(shape.shape.memory_bytes(&shape.params)),
            compiled,
            app: self.app.clone(),
            after: self.after,
            instances: self.instances.clone(),
            prefix: self.prefix.clone(),
            meter: Meter::new(Vec::new()),
        }))
    }
}

struct WarmPrepared<'a> {
    arm: String,
    shape: ShapeRef<'a>,
    pages: u64,
    compiled: Box<dyn Compiled>,
    app: Arc<AppShape>,
    after: u64,
    instances: Arc<AtomicUsize>,
    prefix: Arc<Mutex<Option<i32>>>,
    meter: Meter,
}

impl WarmPrepared<'_> {
    fn check_prefix(&self, ret: Option<i32>) -> Result<(), HookError> {
        let what = format!(
            "app {} checksum after {} steps",
            self.app.spec.name, self.after
        );
        if let Some(want) = self.app.expected(self.after) {
            return crate::shapes::expect_return(&what, want, ret);
        }
        let got =
            ret.ok_or_else(|| HookError::Mismatch(Mismatch::new(&what, "a value", "none")))?;
        let mut first = self.prefix.lock().unwrap_or_else(|p| p.into_inner());
        match *first {
            None => {
                *first = Some(got);
                Ok(())
            }
            Some(v) if v == got => Ok(()),
            Some(v) => Err(HookError::Mismatch(Mismatch::new(
                format!("{what} (same on every rep and engine)"),
                v,
                got,
            ))),
        }
    }
}

/// Why the last call on a warm instance failed, when the stubs or the
/// entry point say.
fn why(app: &AppShape, inst: &mut dyn crate::engines::Instance) -> Option<String> {
    let code = inst
        .call(super::stub::ERROR_EXPORT, None, None)
        .ok()
        .flatten()
        .unwrap_or(0);
    explain(code).or_else(|| stub_failure(code, &app.recipe.source().stubbed))
}

impl PreparedArm for WarmPrepared<'_> {
    fn rep(&mut self, rep: usize) -> Result<Rep, RunError> {
        let s = self.shape;
        let arm = self.arm.clone();
        let err = |e| hook_error(s.name, &arm, rep, e);
        // A fresh instance for every rep: never resumed, never reused.
        let mut inst = self
            .compiled
            .instantiate()
            .map_err(|e| err(HookError::Engine(e)))?;
        self.instances.fetch_add(1, Ordering::SeqCst);
        let inst = inst.as_mut();
        self.app.recipe.setup(inst).map_err(err)?;
        if self.after > 0 {
            self.app.recipe.before_rep(inst).map_err(err)?;
            let call = crate::children::Unstoppable::enter();
            let ret = inst.call("run", Some(self.after as i32), None);
            drop(call);
            let ret = match ret {
                Ok(r) => r,
                Err(e) => {
                    return Err(err(HookError::Engine(match why(&self.app, inst) {
                        Some(w) => EngineError::Trap(format!("{e}; {w}")),
                        None => e,
                    })))
                }
            };
            self.check_prefix(ret).map_err(err)?;
        }
        let pages = inst
            .call(GROW, Some(self.pages as i32), None)
            .map_err(|e| err(HookError::Engine(e)))?;
        if pages
            .map(|p| (p as u32 as u64) < self.pages)
            .unwrap_or(true)
        {
            return Err(err(HookError::Mismatch(Mismatch::new(
                "app memory grown for the shape",
                format!("{} pages", self.pages),
                format!("{pages:?}"),
            ))));
        }
        s.shape.init(s.params, inst).map_err(err)?;
        let app = &self.app;
        let explain = |inst: &mut dyn crate::engines::Instance| why(app, inst);
        let (reading, _) = timed_rep(
            &s,
            &arm,
            rep,
            (WARM_RUN, s.iters),
            inst,
            &mut self.meter,
            &explain,
        )?;
        Ok(Rep {
            reading,
            duet: None,
        })
    }
}

/// Cold (baseline), warm and a second cold copy (null control) on one
/// engine, interleaved like any session.
pub fn run_warm(
    setup: &WarmSetup,
    engine: &ArmSpec,
    after: u64,
    rounds: usize,
    warmup: usize,
) -> Result<(WarmResult, Vec<String>), Error> {
    let prefix = Arc::new(Mutex::new(None));
    let label = engine.to_string();
    let arms = [
        WarmArm::new(
            engine,
            format!("{label} cold"),
            setup.app.clone(),
            0,
            prefix.clone(),
        )?,
        WarmArm::new(
            engine,
            format!("{label} warm({after})"),
            setup.app.clone(),
            after,
            prefix.clone(),
        )?,
        WarmArm::new(
            engine,
            format!("{label} cold#null"),
            setup.app.clone(),
            0,
            prefix,
        )?,
    ];
    let refs: Vec<&dyn Arm> = arms.iter().map(|a| a as &dyn Arm).collect();
    let skips: Vec<Option<String>> = refs
        .iter()
        .map(|a| skip_reason(*a, &setup.module))
        .collect::<Result<_, _>>()?;
    let rounds = crate::schedule::complete_rounds(rounds, refs.len());
    let order = crate::schedule::EpochOrder::new(Default::default(), refs.len(), 0, None);
    let outcomes = crate::schedule::run_shape(
        &setup.module,
        &refs,
        &skips,
        warmup,
        rounds,
        &order,
        None,
        &mut (),
    );
    let iters = setup.module.iters as f64;
    let mut errors = Vec::new();
    let mut samples = Vec::new();
    for ((arm, outcome), _) in arms.iter().zip(outcomes).zip(&skips) {
        let (reps, skipped) = match outcome {
            crate::schedule::ArmOutcome::Ran(r) => (r, None),
            crate::schedule::ArmOutcome::Skipped(s) => (Vec::new(), Some(format!("skipped: {s}"))),
            crate::schedule::ArmOutcome::Failed { error, completed } => {
                errors.push(error.to_string());
                (completed, Some(format!("failed: {error}")))
            }
        };
        samples.push((
            arm.label().to_string(),
            reps.iter()
                .map(|r| r.rep.reading.ns / iters)
                .collect::<Vec<f64>>(),
            skipped,
        ));
    }
    // One process: the interval covers rounds only (no epochs here).
    let compare = |i: usize, null: Option<&stats::EpochChange>| {
        stats::compare(
            std::slice::from_ref(&samples[i].1),
            std::slice::from_ref(&samples[0].1),
            null,
            LEVEL,
        )
    };
    let null = compare(2, None).map(|c| c.change);
    let compared = compare(1, null.as_ref());
    let verdict = compared.as_ref().map(|c| c.verdict);
    let change = compared.map(|c| c.change);
    let instances = arms
        .iter()
        .map(|a| a.instances.load(std::sync::atomic::Ordering::SeqCst))
        .collect();
    Ok((
        WarmResult {
            engine: label,
            shape: setup.module.name().to_string(),
            iters: setup.module.iters,
            arms: samples,
            change,
            null,
            verdict,
            instances,
        },
        errors,
    ))
}
