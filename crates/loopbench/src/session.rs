//! A session: shapes x arms, interleaved, with the null control, reduced to
//! results. This is the pipeline's middle: it builds modules, arms and
//! schedule, and hands each finished shape to the caller (who reports and
//! saves it) before starting the next, so an interrupted session keeps
//! everything it completed.

use crate::arm::ArmSpec;
use crate::arm::{skip_reason, Arm};
use crate::error::Error;
use crate::machine::Machine;
use crate::measure::counters::{CounterSet, CounterStatus};
use crate::measure::summary::{self as counter_summary, ArmCounters, CounterComparison};
use crate::schedule::{self, ArmOutcome, Progress};
use crate::shapes::{Declared, Params, Shape, ShapeModule};
use crate::stats::{self, Change, Verdict};
use serde::Serialize;

pub const SCHEMA: &str = "loopbench/1";
/// Confidence level of every interval loopbench prints.
pub const LEVEL: f64 = 0.95;

/// Everything a session needs, validated.
pub struct Plan {
    pub shapes: Vec<Box<dyn Shape>>,
    /// Arms in order; `arms[0]` is the baseline.
    pub arms: Vec<ArmSpec>,
    pub params: Params,
    pub rounds: usize,
    pub warmup: usize,
    /// Extra counters read around every timed call (`--counters`).
    pub counters: CounterSet,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    Baseline,
    Null,
    Candidate,
}

#[derive(Clone, Debug, Serialize)]
pub struct MinMedian {
    pub min: f64,
    pub median: f64,
}

#[derive(Clone, Debug, Serialize)]
pub struct ArmResult {
    pub arm: String,
    pub role: Role,
    pub version: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ns_per_iter: Option<MinMedian>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ns_per_op: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mb_per_s: Option<f64>,
    pub verified_reps: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skipped: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// ns per iteration of every measured rep, in round order.
    pub samples_ns_per_iter: Vec<f64>,
    /// Extra counters (TSC, perf events, callgrind), per iteration and per op.
    #[serde(skip_serializing_if = "ArmCounters::is_empty")]
    pub counters: ArmCounters,
}

#[derive(Clone, Debug, Serialize)]
pub struct Comparison {
    pub arm: String,
    pub vs: String,
    pub median_pct: f64,
    pub ci_pct: [f64; 2],
    pub confidence: f64,
    pub ratio: f64,
    pub verdict: Verdict,
}

#[derive(Clone, Debug, Serialize)]
pub struct NullControl {
    pub median_pct: f64,
    pub ci_pct: [f64; 2],
    pub confidence: f64,
}

/// Per-iteration counts and where they came from.
#[derive(Clone, Debug, Serialize)]
pub struct IterCounts {
    pub ops: f64,
    pub taken_branches: f64,
    pub loads: f64,
    pub stores: f64,
    pub calls: f64,
    pub bytes: f64,
    /// Taken branches + calls + returns (the seed harness's blocks/iter).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub transfers: Option<f64>,
    /// Executed instructions per class (counted runs only).
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub classes: std::collections::BTreeMap<String, f64>,
    /// `counted` (the exact counting run, checked against the declaration)
    /// or `declared` (the shape's own numbers, when the counting engine
    /// cannot run the shape).
    pub source: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl IterCounts {
    pub fn declared(d: &Declared) -> Self {
        let per = d.per.max(1) as f64;
        IterCounts {
            ops: d.ops as f64 / per,
            taken_branches: d.taken_branches as f64 / per,
            loads: d.loads as f64 / per,
            stores: d.stores as f64 / per,
            calls: d.calls as f64 / per,
            bytes: d.bytes as f64 / per,
            transfers: None,
            classes: Default::default(),
            source: "declared",
            note: None,
        }
    }

    pub fn counted(c: &crate::count::ShapeCounts) -> Self {
        use loopbench_count::OpClass;
        let p = c.per_iter();
        IterCounts {
            ops: p.total_ops,
            taken_branches: p.taken_branches,
            loads: p.classes.get(&OpClass::Load).copied().unwrap_or(0.0),
            stores: p.classes.get(&OpClass::Store).copied().unwrap_or(0.0),
            calls: p.calls,
            bytes: p.bytes_loaded + p.bytes_stored + p.bulk_bytes,
            transfers: Some(p.transfers),
            classes: crate::count::class_map(&p.classes),
            source: "counted",
            note: None,
        }
    }
}

/// Exact counts for a shape from the counting run, checked against its
/// declaration. Shapes the counting engine (wasmi) cannot run keep their
/// declared counts, labelled as such.
pub fn shape_counts(module: &ShapeModule) -> Result<Option<IterCounts>, Error> {
    if !module.shape.counted_in_session() {
        return Ok(None);
    }
    let needed = crate::proposals::required(&module.wasm).map_err(Error::Usage)?;
    let counting: crate::arm::ArmSpec = "wasmi".parse().map_err(Error::Usage)?;
    let supported = counting
        .build()
        .map_err(|e| Error::Usage(e.to_string()))?
        .supports();
    if let Some(p) = crate::proposals::first_missing(&needed, &supported) {
        return Ok(module.declared.as_ref().map(|d| IterCounts {
            note: Some(format!("declared: the counting engine (wasmi) lacks {p}")),
            ..IterCounts::declared(d)
        }));
    }
    let counted = crate::count::count_shape(module)?;
    if let Some(d) = &module.declared {
        crate::count::check_declared(module.name(), d, &counted)?;
    }
    Ok(Some(IterCounts::counted(&counted)))
}

#[derive(Clone, Debug, Serialize)]
pub struct ShapeResult {
    pub shape: String,
    pub prices: String,
    pub iters: u64,
    pub bytes_per_iter: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub counts_per_iter: Option<IterCounts>,
    pub arms: Vec<ArmResult>,
    pub comparisons: Vec<Comparison>,
    pub null_control: Option<NullControl>,
    /// Every candidate against the baseline, per counter.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub counter_comparisons: Vec<CounterComparison>,
    /// The null control's change, per counter.
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub counter_null_control: std::collections::BTreeMap<String, NullControl>,
}

#[derive(Clone, Debug, Serialize)]
pub struct SessionInfo {
    pub rounds: usize,
    pub warmup: usize,
    pub baseline: String,
    pub null_arm: String,
    pub bytes: u64,
    pub k: u32,
    pub iters_override: Option<u64>,
    pub engines: Vec<EngineInfo>,
    pub build_profile: &'static str,
    pub confidence_level: f64,
    pub rotation: &'static str,
}

#[derive(Clone, Debug, Serialize)]
pub struct EngineInfo {
    pub arm: String,
    pub version: String,
}

/// The whole session as reported and saved.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    pub schema: &'static str,
    pub machine: Machine,
    pub session: SessionInfo,
    /// Each requested counter: available or not, and why.
    pub counters: Vec<CounterStatus>,
    pub results: Vec<ShapeResult>,
    /// False while the session runs and when it stopped early.
    pub complete: bool,
    pub errors: Vec<String>,
    pub wall_seconds: f64,
}

/// Hooks the caller receives as the session proceeds.
pub trait Sink: Progress {
    fn shape_started(&mut self, _shape: &str, _reps: usize) {}
    /// Called after each shape with the report so far.
    fn shape_done(&mut self, _report: &Report) -> Result<(), Error> {
        Ok(())
    }
}

pub fn null_label(baseline: &ArmSpec) -> String {
    format!("{baseline}#null")
}

/// Run the plan. Returns the report (complete or not); arm failures are in
/// `errors` and do not stop other arms or shapes.
pub fn run(plan: Plan, sink: &mut dyn Sink) -> Result<Report, Error> {
    let started = std::time::Instant::now();
    let baseline = plan
        .arms
        .first()
        .ok_or_else(|| Error::Usage("no engines given".into()))?
        .clone();
    let mut arms: Vec<(Box<dyn Arm>, Role)> = Vec::new();
    let counter_set = plan.counters.clone();
    let make_counters: crate::arm::CounterFactory = std::sync::Arc::new(move || counter_set.make());
    // In-process engines, or workers for build arms (`wasmi@0.31`).
    let ctx = crate::workers::ArmContext::new(&plan.counters, make_counters);
    for (i, spec) in plan.arms.iter().enumerate() {
        let arm = ctx.make(spec, spec.to_string())?;
        arms.push(if i == 0 {
            (ctx.record(arm), Role::Baseline)
        } else {
            (arm, Role::Candidate)
        });
    }
    // The null control: a second, separately built copy of the baseline (for
    // a build, a second worker process of the same binary).
    arms.push((ctx.make(&baseline, null_label(&baseline))?, Role::Null));

    let rounds = schedule::balanced_rounds(plan.rounds, arms.len());
    let mut report = Report {
        schema: SCHEMA,
        machine: Machine::read(),
        session: SessionInfo {
            rounds,
            warmup: plan.warmup,
            baseline: baseline.to_string(),
            null_arm: null_label(&baseline),
            bytes: plan.params.bytes,
            k: plan.params.k,
            iters_override: plan.params.iters,
            engines: arms
                .iter()
                .map(|(a, _)| EngineInfo {
                    arm: a.label().to_string(),
                    version: a.version(),
                })
                .collect(),
            build_profile: crate::versions::BUILD_PROFILE,
            confidence_level: LEVEL,
            rotation: "cyclic Latin square over all arms, null control included",
        },
        counters: plan.counters.status().to_vec(),
        results: Vec::new(),
        complete: false,
        errors: Vec::new(),
        wall_seconds: 0.0,
    };

    for shape in plan.shapes {
        let module = ShapeModule::build(shape, &plan.params)?;
        let counts =
            crate::phases::time(crate::phases::Phase::CountingRun, || shape_counts(&module))?;
        let arm_refs: Vec<&dyn Arm> = arms.iter().map(|(a, _)| a.as_ref()).collect();
        let skips: Vec<Option<String>> = arm_refs
            .iter()
            .map(|a| skip_reason(*a, &module))
            .collect::<Result<_, _>>()?;
        let running = skips.iter().filter(|s| s.is_none()).count();
        sink.shape_started(module.name(), running * (plan.warmup + rounds));
        let outcomes = schedule::run_shape(&module, &arm_refs, &skips, plan.warmup, rounds, sink);
        let result = summarise(&module, counts, &arms, outcomes, &mut report.errors);
        report.results.push(result);
        report.machine.finish();
        report.wall_seconds = started.elapsed().as_secs_f64();
        crate::phases::time(crate::phases::Phase::Report, || sink.shape_done(&report))?;
    }
    report.complete = true;
    report.machine.finish();
    report.wall_seconds = started.elapsed().as_secs_f64();
    Ok(report)
}

fn summarise(
    module: &ShapeModule,
    counts: Option<IterCounts>,
    arms: &[(Box<dyn Arm>, Role)],
    outcomes: Vec<ArmOutcome>,
    errors: &mut Vec<String>,
) -> ShapeResult {
    let iters = module.iters as f64;
    let mut results = Vec::new();
    for ((arm, role), outcome) in arms.iter().zip(outcomes) {
        let (reps, skipped, error) = match outcome {
            ArmOutcome::Ran(reps) => (reps, None, None),
            ArmOutcome::Skipped(reason) => (Vec::new(), Some(format!("skipped: {reason}")), None),
            ArmOutcome::Failed { error, completed } => {
                errors.push(error.to_string());
                (completed, None, Some(error.to_string()))
            }
        };
        let samples: Vec<f64> = reps.iter().map(|r| r.reading.ns / iters).collect();
        let ns = (!samples.is_empty()).then(|| MinMedian {
            min: stats::min(&samples),
            median: stats::median(&samples),
        });
        let ns_per_op = match (&ns, &counts) {
            (Some(t), Some(c)) if c.ops > 0.0 => Some(t.median / c.ops),
            _ => None,
        };
        let mb_per_s = match (&ns, &counts) {
            (Some(t), Some(c)) if c.bytes > 0.0 => Some(c.bytes / t.median * 1e3),
            _ => None,
        };
        let readings: Vec<&crate::measure::Reading> = reps.iter().map(|r| &r.reading).collect();
        let arm_counters =
            counter_summary::summarise_arm(&readings, iters, counts.as_ref().map(|c| c.ops));
        results.push(ArmResult {
            counters: arm_counters,
            arm: arm.label().to_string(),
            role: *role,
            version: arm.version(),
            ns_per_iter: ns,
            ns_per_op,
            mb_per_s,
            verified_reps: reps.len(),
            skipped,
            error,
            samples_ns_per_iter: samples,
        });
    }
    let base = results
        .iter()
        .find(|r| r.role == Role::Baseline)
        .map(|r| r.samples_ns_per_iter.clone());
    let change_of = |r: &ArmResult| -> Option<Change> {
        let b = base.as_ref()?;
        let n = b.len().min(r.samples_ns_per_iter.len());
        stats::paired_change(&r.samples_ns_per_iter[..n], &b[..n], LEVEL)
    };
    let null_change = results
        .iter()
        .find(|r| r.role == Role::Null)
        .and_then(change_of);
    let mut comparisons = Vec::new();
    let baseline_label = results.first().map(|r| r.arm.clone()).unwrap_or_default();
    for r in results.iter().filter(|r| r.role != Role::Baseline) {
        if let Some(c) = change_of(r) {
            comparisons.push(Comparison {
                arm: r.arm.clone(),
                vs: baseline_label.clone(),
                median_pct: c.median_pct,
                ci_pct: c.ci_pct,
                confidence: c.confidence,
                ratio: c.ratio,
                verdict: stats::verdict(&c, null_change.as_ref()),
            });
        }
    }
    let counter_arms: Vec<(&str, Role, &ArmCounters)> = results
        .iter()
        .map(|r| (r.arm.as_str(), r.role, &r.counters))
        .collect();
    let (counter_comparisons, counter_null_control) = counter_summary::compare(&counter_arms);
    ShapeResult {
        counter_comparisons,
        counter_null_control,
        shape: module.name().to_string(),
        prices: module.shape.prices().to_string(),
        iters: module.iters,
        bytes_per_iter: counts.as_ref().map(|c| c.bytes),
        counts_per_iter: counts,
        arms: results,
        comparisons,
        null_control: null_change.map(|c| NullControl {
            median_pct: c.median_pct,
            ci_pct: c.ci_pct,
            confidence: c.confidence,
        }),
    }
}
