//! A session: shapes x arms, interleaved, with the null control, reduced to
//! results. This is the pipeline's middle.
//!
//! Two instances of one engine in one process can differ by a fixed amount
//! for the whole process (code and heap layout, aliasing in caches and
//! predictors; Mytkowicz et al. 2009), so rounds of one process give
//! intervals that are precise but not true. A session therefore runs in
//! *epochs*: in each epoch every arm, the null control included, is a fresh
//! worker process (a fresh address-space layout), and every shape still
//! taking data runs its interleaved rounds there. Statistics pair rounds
//! inside an epoch and build intervals across epochs (Kalibera and Jones
//! 2013; [`crate::stats::epochs`]). A shape stops taking epochs when its
//! widest interval is as narrow as `--precision` asks, or its `--budget` is
//! spent, and says which ([`crate::stats::stop::StopRule`], the plan's
//! `stop`). After every epoch the caller receives the results so far, so an
//! interrupted session keeps everything it completed.
//!
//! [`run`] is a loop over epochs; `run_epoch` starts the arms and runs each
//! shape still taking data, `run_shape_epoch` one shape's rounds and its stop
//! decision, and `summary.rs` reduces a shape's reps to its result.

use crate::arm::ArmSpec;
use crate::arm::{skip_reason, Arm, Iters};
use crate::error::Error;
use crate::machine::Machine;
use crate::measure::counters::CounterSet;
use crate::phases::Phase;
use crate::results::{
    EngineInfo, EpochRecord, GitRevision, IterCounts, Metric, Role, Schedule, Session, SessionInfo,
    ShapeResult, Stopped, SESSION_SCHEMA,
};
use crate::schedule::{self, ArmOutcome, Design, EpochOrder, Progress, Timed};
use crate::shapes::{Declared, Params, Shape, ShapeModule};
use crate::stats::estimators::Estimator;
use crate::stats::stop::{StopReason, StopRule};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};
use stop::{stopped_after, widest_half_width};

pub use crate::stats::LEVEL;
pub use crate::workers::Isolation;

mod builds;
mod stop;
mod summary;
pub use builds::build_null_label;
use summary::summarise;

/// Everything a session needs, validated.
pub struct Plan {
    pub shapes: Vec<Box<dyn Shape>>,
    /// Arms in order; `arms[0]` is the baseline.
    pub arms: Vec<ArmSpec>,
    /// Labels of the arms, when not their spec (empty: the specs). Arms
    /// that share a spec (calibration's effects) need them.
    pub labels: Vec<String>,
    /// Iteration counts of the arms relative to the shape's (empty: all run
    /// the shape's count; see [`crate::arm::Iters`]).
    pub arm_iters: Vec<Iters>,
    pub params: Params,
    /// Measured rounds per epoch (rounded up to whole order designs).
    pub rounds: usize,
    /// Warm-up rounds per epoch and shape, run and verified, discarded.
    pub warmup: usize,
    /// Extra counters read around every timed call (`--counters`).
    pub counters: CounterSet,
    /// When shapes stop taking epochs.
    pub stop: StopRule,
    /// The order of arms in a round.
    pub order: Design,
    /// One arm at a time, or the baseline beside each arm in duets.
    pub schedule: Schedule,
    /// Account where the time goes (`--phases`): workers are asked for
    /// their phase totals.
    pub phases: bool,
    /// Seeds the per-epoch relabelling of the order, the start order of
    /// each epoch's processes and their layout draws. The command line
    /// draws a fresh one per session unless `--seed` is given: sessions
    /// that share it share their layouts, epoch by epoch, and are not
    /// independent samples of them.
    pub seed: u64,
    /// Seeds build arms' layout variants: fixed unless `--seed` is given,
    /// so that they are linked once per machine and reused.
    pub variant_seed: u64,
    /// Every arm in a fresh worker process per epoch, or all in this one.
    pub isolation: Isolation,
    /// Pin every timing thread to this core.
    pub pin: Option<usize>,
    /// What verdicts are taken on.
    pub metric: Metric,
    /// Target duration of one rep of the slowest arm; `None`: the shape's
    /// own iteration count (or `--iters`).
    pub rep_target: Option<Duration>,
    /// Layout variants of every build arm, sampled across epochs
    /// (`--layout-builds`; 1: the plain build only, no build level).
    pub layout_builds: usize,
    /// The arm every result is also given as a ratio to (`--reference`).
    pub reference: Option<Reference>,
    /// The machine's recorded setting the plan took, described.
    pub setting: Option<String>,
    /// Seconds the whole session may take (`--session-budget`): no epoch
    /// starts that would end past them (the second always runs). Shapes
    /// whose comparisons are decided wait while others are unsure, so the
    /// time goes to the unsure ones first; once none is, the time left
    /// narrows the decided ones' intervals (the null's included) towards
    /// `--precision`, each within its own `--budget`.
    pub session_budget_s: Option<f64>,
    /// How each epoch's rounds become one log ratio (the interval is
    /// across epochs whichever it is).
    pub estimator: Estimator,
}

/// The library's seed (and the command line's for build variants): "loop".
pub const DEFAULT_SEED: u64 = 0x6c6f_6f70;

/// The rep length of a session when neither `--rep-ms` nor a setting
/// recorded for the machine says otherwise, milliseconds. Half a
/// millisecond, not two: on a 2-vCPU Xeon VM the per-rep noise barely fell
/// with rep length (tinywasm's `br_table_switch` 9-13% at every length from
/// 0.05 to 10 ms), so an epoch's rounds resolve as much in a quarter of the
/// time and the session affords more epochs, which is what narrows
/// layout-dominated shapes (docs/measured/2026-12-04-shorter-reps/).
pub const DEFAULT_REP_MS: f64 = 0.5;

/// Milliseconds of the slowest arm's timed reps an epoch takes by default,
/// and the fewest rounds it takes to get them.
const EPOCH_TIMED_MS: f64 = 8.0;
const MIN_DEFAULT_ROUNDS: usize = 8;

/// Measured rounds per epoch when `--rounds` is not given: enough reps of
/// `rep_ms` for [`EPOCH_TIMED_MS`], at least [`MIN_DEFAULT_ROUNDS`] (16 at
/// the default 0.5 ms, 8 from 1 ms up; 8 with a fixed `--iters`).
pub fn default_rounds(rep_ms: Option<f64>) -> usize {
    match rep_ms {
        Some(ms) if ms > 0.0 => {
            ((EPOCH_TIMED_MS / ms).ceil() as usize).clamp(MIN_DEFAULT_ROUNDS, 1000)
        }
        _ => MIN_DEFAULT_ROUNDS,
    }
}

/// A seed no earlier session had: the session's own, recorded in its
/// results (`--seed` reruns it).
pub fn fresh_seed() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    // std's RandomState is keyed from the OS's randomness per process;
    // the clock and the pid separate two seeds drawn in one process.
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    h.write_u32(std::process::id());
    h.finish()
}

/// Which arm of a plan is the session's reference.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Reference {
    /// Its index in [`Plan::arms`].
    pub index: usize,
    /// Added by `--reference` rather than asked for as an arm: then it is
    /// a yardstick only ([`Role::Reference`]), not a candidate to decide.
    pub added: bool,
}

impl Default for Plan {
    /// An empty plan with the defaults the command line uses.
    fn default() -> Self {
        Plan {
            shapes: Vec::new(),
            arms: Vec::new(),
            labels: Vec::new(),
            arm_iters: Vec::new(),
            params: Params::default(),
            rounds: default_rounds(Some(DEFAULT_REP_MS)),
            warmup: 1,
            counters: CounterSet::none(),
            stop: StopRule::default(),
            order: Design::Williams,
            schedule: Schedule::Sequential,
            phases: false,
            seed: DEFAULT_SEED,
            variant_seed: DEFAULT_SEED,
            isolation: Isolation::Workers,
            pin: None,
            metric: Metric::Wall,
            rep_target: Some(Duration::from_secs_f64(DEFAULT_REP_MS / 1e3)),
            layout_builds: crate::workers::layout::DEFAULT_LAYOUT_BUILDS,
            reference: None,
            setting: None,
            session_budget_s: None,
            estimator: crate::stats::estimators::DEFAULT,
        }
    }
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
            bulk_bytes: None,
            bulk_fill_bytes: None,
            transfers: None,
            block_entries: None,
            mispredicts: None,
            multiway_mispredicts: None,
            classes: Default::default(),
            folded: Default::default(),
            source: "declared".to_string(),
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
            bulk_bytes: Some(p.bulk_bytes),
            bulk_fill_bytes: Some(p.bulk_fill_bytes),
            transfers: Some(p.transfers),
            block_entries: Some(p.block_entries),
            mispredicts: Some(c.mispredicts_per_iter()),
            multiway_mispredicts: Some(c.multiway_mispredicts_per_iter()),
            classes: crate::count::class_map(&p.classes),
            folded: crate::count::class_map(&p.folded),
            source: "counted".to_string(),
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
    if let Some(p) = crate::count::counting_engine_lacks(&module.wasm)? {
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

/// Hooks the caller receives as the session proceeds.
pub trait Sink: Progress {
    /// A shape starts its rounds of an epoch, `reps` of them at most.
    fn shape_started(&mut self, _shape: &str, _epoch: usize, _reps: usize) {}
    /// After every epoch, with the results so far.
    fn update(&mut self, _session: &Session) -> Result<(), Error> {
        Ok(())
    }
    /// Asked between shapes: stop now, keeping what is done (an interrupt).
    fn interrupted(&self) -> bool {
        false
    }
}

/// The sink that reports nothing: for sessions whose caller prints its own
/// progress (calibration, app projections) and for tests.
impl Sink for () {}

/// The null control's label: the baseline's, marked.
pub fn null_label(baseline: &str) -> String {
    format!("{baseline}{}", crate::results::NULL_SUFFIX)
}

/// One arm as the session runs it.
struct ArmPlan {
    spec: ArmSpec,
    label: String,
    role: Role,
    iters: Iters,
    /// Layout variants this arm cycles through (0: a fixed build), and the
    /// first one it runs (the build-layout null starts one further).
    variants: usize,
    first_variant: usize,
}

impl ArmPlan {
    /// The layout variant this arm runs in `epoch` (`None`: a fixed build).
    fn variant(&self, epoch: usize) -> Option<usize> {
        (self.variants > 0).then(|| (epoch + self.first_variant) % self.variants)
    }
}

/// What every epoch of a session shares: the plan, the arms it starts
/// afresh in each epoch (the null control last), and how it starts them.
struct Setup {
    plan: Plan,
    arms: Vec<ArmPlan>,
    /// Per arm, the layout variants it runs (build arms in variants only).
    layouts: Vec<Option<crate::workers::layout::Variants>>,
    ctx: crate::workers::ArmContext,
    /// Measured rounds per epoch, whole order designs.
    rounds: usize,
    /// The duet barrier, in a duet session (its page goes with it).
    duet: Option<crate::workers::barrier::BarrierFile>,
}

/// One shape across epochs.
struct ShapeRun {
    module: ShapeModule,
    counts: Option<IterCounts>,
    /// The iteration count is settled (by --iters, or by the pilot).
    iters_settled: bool,
    /// What one rep should take, in ns, when the pilot sized the reps
    /// (worker deadlines follow it before any rep is timed).
    expected_ns: Option<f64>,
    /// Epochs whose warm-up or rounds the budget cut short.
    cut_epochs: usize,
    /// Per arm: verified reps with their epoch.
    reps: Vec<Vec<(u32, Timed)>>,
    /// Per arm: why it does not run this shape.
    skipped: Vec<Option<String>>,
    /// Per arm: the error that stopped it (it runs no further epoch).
    failed: Vec<Option<String>>,
    /// Why no arm can run the shape (its counting run failed): recorded
    /// for this shape, and the session goes on with the others.
    broken: Option<String>,
    spent: Duration,
    epochs: usize,
    stopped: Option<Stopped>,
    /// With a session budget: the stop at which every comparison was
    /// decided, while the shape waits for the unsure ones and then narrows
    /// its intervals with the session's time left.
    decided: Option<Stopped>,
    result: Option<ShapeResult>,
}

/// Run the plan. Returns the session (complete or not); arm failures are in
/// `errors` and do not stop other arms or shapes.
pub fn run(mut plan: Plan, sink: &mut dyn Sink) -> Result<Session, Error> {
    let started = Instant::now();
    let shapes = std::mem::take(&mut plan.shapes);
    let setup = Setup::new(plan)?;
    let mut runs = shapes
        .into_iter()
        .map(|shape| ShapeRun::new(shape, &setup))
        .collect::<Result<Vec<_>, Error>>()?;
    let mut report = setup.new_session();
    let mut interrupted = false;
    let mut out_of_time = false;
    // Decided shapes take epochs again once no shape is unsure.
    let mut narrowing = false;
    // Seconds the last epoch spent outside its shapes' rounds (spawning
    // and ending workers): part of what the next one will take.
    let mut overhead = 0.0;
    for epoch in 0..setup.plan.stop.max_epochs {
        let mut active = active_shapes(&runs, narrowing);
        if active.is_empty() && !narrowing && setup.plan.session_budget_s.is_some() {
            narrowing = true;
            active = active_shapes(&runs, narrowing);
        }
        if active.is_empty() {
            break;
        }
        if sink.interrupted() {
            interrupted = true;
            break;
        }
        // Two epochs first: an interval needs a layout component.
        if epoch >= 2 {
            let next = overhead + active.iter().map(|&i| runs[i].pace()).sum::<f64>();
            if would_overrun(setup.plan.session_budget_s, started, next) {
                out_of_time = true;
                break;
            }
        }
        let before: f64 = runs.iter().map(|r| r.spent.as_secs_f64()).sum();
        interrupted = run_epoch(&setup, epoch, &active, &mut runs, &mut report, sink)?;
        let in_shapes = runs.iter().map(|r| r.spent.as_secs_f64()).sum::<f64>() - before;
        overhead = report
            .epochs
            .last()
            .map_or(0.0, |e| (e.seconds - in_shapes).max(0.0));
        publish(&mut report, &runs, started);
        crate::phases::time(Phase::Report, || sink.update(&report))?;
        if interrupted {
            break;
        }
    }
    let last = if interrupted {
        "interrupted"
    } else if out_of_time {
        "the session's --session-budget is spent"
    } else {
        "epoch limit"
    };
    for run in runs.iter_mut().filter(|r| r.stopped.is_none()) {
        run.end(last, narrowing);
    }
    publish(&mut report, &runs, started);
    report.complete = !interrupted;
    Ok(report)
}

/// The shapes still taking epochs: those not stopped, and those decided
/// only once the session is `narrowing`.
fn active_shapes(runs: &[ShapeRun], narrowing: bool) -> Vec<usize> {
    (0..runs.len())
        .filter(|&i| runs[i].stopped.is_none() && (narrowing || runs[i].decided.is_none()))
        .collect()
}

/// Whether an epoch of `next` seconds started now would end past the
/// session's own budget, if it has one.
fn would_overrun(budget_s: Option<f64>, started: Instant, next: f64) -> bool {
    budget_s.is_some_and(|b| started.elapsed().as_secs_f64() + next > b)
}

/// One epoch: every arm a fresh worker, every `active` shape its rounds,
/// starting at a different shape each epoch so that no shape always runs
/// first in a fresh process. Returns whether the sink interrupted it.
fn run_epoch(
    setup: &Setup,
    epoch: usize,
    active: &[usize],
    runs: &mut [ShapeRun],
    report: &mut Session,
    sink: &mut dyn Sink,
) -> Result<bool, Error> {
    let started = Instant::now();
    let arms = setup.start_arms(epoch)?;
    if report.session.engines.is_empty() {
        report.session.engines = engine_info(&arms, &setup.arms, &setup.layouts);
    }
    let arm_refs: Vec<&dyn Arm> = arms.iter().map(|a| a.as_ref()).collect();
    let plan = &setup.plan;
    // A duet's order is over the baseline's partners.
    let ordered = match setup.duet {
        Some(_) => setup.arms.len() - 1,
        None => setup.arms.len(),
    };
    let order = EpochOrder::new(plan.order, ordered, epoch, Some(plan.seed));
    let mut ran = Vec::new();
    let mut interrupted = false;
    for j in 0..active.len() {
        if sink.interrupted() {
            interrupted = true;
            break;
        }
        let run = &mut runs[active[(j + epoch) % active.len()]];
        if run_shape_epoch(setup, run, epoch, &arm_refs, &order, report, sink)? {
            ran.push(run.module.name().to_string());
        }
    }
    let pids: BTreeMap<String, u32> = arms
        .iter()
        .filter_map(|a| Some((a.label().to_string(), a.pid()?)))
        .collect();
    if plan.phases {
        for a in &arms {
            if let Some(seconds) = a.take_phases() {
                crate::phases::add(a.label(), &seconds);
            }
        }
    }
    drop(arm_refs);
    // Dropping the arms ends their worker processes.
    drop(arms);
    let variants = setup
        .arms
        .iter()
        .filter_map(|a| {
            Some((
                a.label.clone(),
                crate::workers::layout::seed(setup.plan.variant_seed, a.variant(epoch)?),
            ))
        })
        .collect();
    report.epochs.push(EpochRecord {
        epoch,
        pids,
        shapes: ran,
        seconds: started.elapsed().as_secs_f64(),
        variants,
    });
    Ok(interrupted)
}

/// One shape's rounds in one epoch, its results so far, and whether it
/// stops. Returns whether it ran (a shape that cannot run stops at once).
fn run_shape_epoch(
    setup: &Setup,
    run: &mut ShapeRun,
    epoch: usize,
    arms: &[&dyn Arm],
    order: &EpochOrder,
    report: &mut Session,
    sink: &mut dyn Sink,
) -> Result<bool, Error> {
    let (plan, specs) = (&setup.plan, &setup.arms);
    let t0 = Instant::now();
    if run.epochs == 0 {
        for (i, a) in arms.iter().enumerate() {
            run.skipped[i] = skip_reason(*a, &run.module)?;
        }
    }
    if let Some(e) = run.broken.take() {
        report.errors.push(e.clone());
        run.failed = vec![Some(format!("not run: {e}")); specs.len()];
        run.stop("failed before its first epoch", None);
        run.result = Some(summarise(run, specs, arms, plan));
        return Ok(false);
    }
    let skips = run.skips();
    if !run.iters_settled && specs.iter().all(|a| a.iters == Iters::Shape) {
        if let Some(target) = plan.rep_target {
            let failed = crate::phases::time_whole(crate::phases::SESSION, Phase::Pilot, || {
                pilot(&mut run.module, arms, &skips, target, &setup.ctx.timing)
            })?;
            if plan.phases {
                // What the workers did for the pilot is in its time.
                for a in arms {
                    a.take_phases();
                }
            }
            for (i, e) in failed.into_iter().enumerate() {
                if let Some(e) = e {
                    report.errors.push(format!("{e} (epoch {epoch})"));
                    run.failed[i] = Some(e);
                }
            }
            // Every rep should now take about `target`: one that never
            // ends is killed at the deadline floor.
            run.expected_ns = Some(target.as_secs_f64() * 1e9);
        }
        run.iters_settled = true;
    }
    let skips = run.skips();
    let running = skips.iter().filter(|s| s.is_none()).count();
    if run.epochs == 0 && running == 0 {
        // Nothing to measure, now or in any later epoch.
        let reason = if run.failed.iter().any(Option::is_some) {
            "failed before its first epoch"
        } else {
            "skipped by every arm"
        };
        run.stop(reason, None);
        run.result = Some(summarise(run, specs, arms, plan));
        return Ok(false);
    }
    // An unbounded budget (calibration runs every epoch it plans) has no
    // deadline.
    let budget = Duration::try_from_secs_f64(plan.stop.budget_s).ok();
    setup.ctx.timing.expect(run.expected_ns);
    // With --iters no pilot timed a rep: the first ones may take the
    // budget (at least the deadline floor), not minutes.
    setup.ctx.timing.within(budget);
    let reps = running * (plan.warmup + setup.rounds);
    sink.shape_started(run.module.name(), epoch, reps);
    // One epoch may take the whole budget at most; the stop rule, asked
    // after it, ends the shape once the epochs together have spent it.
    let mut budgeted = Budgeted {
        sink: &mut *sink,
        until: budget.and_then(|d| t0.checked_add(d)),
        cut: false,
    };
    let outcomes = schedule::run_shape(
        &run.module,
        arms,
        &skips,
        plan.warmup,
        setup.rounds,
        order,
        setup.duet_plan().as_ref(),
        &mut budgeted,
    );
    if budgeted.cut {
        run.cut_epochs += 1;
    }
    run.record(epoch, outcomes, &mut report.errors);
    run.spent += t0.elapsed();
    run.epochs += 1;
    let result = summarise(run, specs, arms, plan);
    let rotation = specs.iter().map(|a| a.variants).max().unwrap_or(0);
    run.stopped = match stopped_after(&plan.stop, rotation, run, &result) {
        // Decided, but the session has time to narrow it later: it waits.
        Some((StopReason::Decided, stopped))
            if plan.session_budget_s.is_some()
                && stopped
                    .half_width_pct
                    .is_some_and(|hw| hw > plan.stop.precision_pct)
                && run.spent.as_secs_f64() < plan.stop.budget_s =>
        {
            run.decided = Some(stopped);
            None
        }
        stop => stop.map(|(_, stopped)| stopped),
    };
    run.result = Some(result);
    Ok(true)
}

/// The sink, and the end of the time a shape's epoch may take: `--budget`
/// bounds every epoch, not only the number of them.
struct Budgeted<'a> {
    sink: &'a mut dyn Sink,
    until: Option<Instant>,
    /// The epoch ran out of time before its rounds were done.
    cut: bool,
}

impl schedule::Progress for Budgeted<'_> {
    fn rep_done(&mut self) {
        self.sink.rep_done();
    }
    fn out_of_time(&mut self) -> bool {
        self.cut = self.until.is_some_and(|u| Instant::now() >= u);
        self.cut
    }
}

/// A duet session runs every arm in a worker process pinned per rep, on
/// two cores this process may use, with no more arms than barrier slots.
fn check_duet(plan: &Plan, arms: usize) -> Result<crate::workers::barrier::BarrierFile, Error> {
    let Schedule::Duet { cores } = plan.schedule else {
        unreachable!("checked by the caller")
    };
    let usage = |m: String| Err(Error::Usage(m));
    if plan.isolation != Isolation::Workers {
        return usage(
            "--schedule duet runs every arm in a worker process: drop --in-process".into(),
        );
    }
    if plan.pin.is_some() {
        return usage("--schedule duet pins each pair to two cores itself: drop --pin".into());
    }
    if cores[0] == cores[1] {
        return usage(format!(
            "--schedule duet needs two different cores, not {} twice",
            cores[0]
        ));
    }
    let allowed = crate::measure::affinity::allowed();
    if let Some(c) = cores.iter().find(|c| !allowed.contains(c)) {
        return usage(format!(
            "--schedule duet: core {c} is not one this process may run on ({allowed:?})"
        ));
    }
    if arms > crate::workers::barrier::SLOTS {
        return usage(format!(
            "--schedule duet takes at most {} arms, null control included; this session has {arms}",
            crate::workers::barrier::SLOTS
        ));
    }
    Ok(crate::workers::barrier::BarrierFile::create()?)
}

impl Setup {
    /// What a duet epoch needs, in a duet session.
    fn duet_plan(&self) -> Option<schedule::duet::DuetPlan<'_>> {
        let Schedule::Duet { cores } = self.plan.schedule else {
            return None;
        };
        Some(schedule::duet::DuetPlan {
            barrier: self.duet.as_ref()?,
            cores,
        })
    }

    /// The arms of the plan with their labels and roles, and the null
    /// control: a second, separately started copy of the baseline.
    fn new(plan: Plan) -> Result<Self, Error> {
        let baseline = plan
            .arms
            .first()
            .ok_or(crate::arm::ArmError::NoArms)?
            .clone();
        let mut arms: Vec<ArmPlan> = plan
            .arms
            .iter()
            .enumerate()
            .map(|(i, a)| ArmPlan {
                spec: a.clone(),
                label: plan.labels.get(i).cloned().unwrap_or_else(|| a.to_string()),
                role: match plan.reference {
                    _ if i == 0 => Role::Baseline,
                    Some(r) if r.index == i && r.added => Role::Reference,
                    _ => Role::Candidate,
                },
                iters: plan.arm_iters.get(i).copied().unwrap_or_default(),
                variants: 0,
                first_variant: 0,
            })
            .collect();
        arms.push(ArmPlan {
            spec: baseline,
            label: null_label(&arms[0].label),
            role: Role::Null,
            iters: arms[0].iters,
            variants: 0,
            first_variant: 0,
        });
        let layouts = builds::plan_variants(&plan, &mut arms)?;
        let counter_set = plan.counters.clone();
        let make_counters: crate::arm::CounterFactory = std::sync::Arc::new(move || {
            // Outermost: started first and stopped last, so their system calls
            // stay outside every other counter's window (callgrind's above all).
            let mut c = crate::measure::disturbance_counters();
            c.extend(counter_set.make());
            c
        });
        let mut ctx = crate::workers::ArmContext::new(&plan.counters, make_counters)
            .with_isolation(plan.isolation, plan.pin, plan.seed, plan.variant_seed);
        ctx.layout = crate::workers::Randomise::from_env()?;
        let duet = match plan.schedule {
            Schedule::Sequential => None,
            Schedule::Duet { .. } => {
                let barrier = check_duet(&plan, arms.len())?;
                ctx.barrier = Some(barrier.path().to_path_buf());
                Some(barrier)
            }
        };
        let rounds = match plan.schedule {
            Schedule::Sequential => schedule::complete_rounds(plan.rounds, arms.len()),
            Schedule::Duet { .. } => {
                schedule::duet::complete_rounds(plan.rounds, arms.len(), &plan.order)
            }
        };
        Ok(Setup {
            plan,
            arms,
            layouts,
            ctx,
            rounds,
            duet,
        })
    }

    /// Fresh arms for `epoch`: with worker isolation, each one a new
    /// process (of the epoch's layout variant, for a build arm in
    /// variants). The baseline's reps are recorded (they set the workers'
    /// deadlines).
    fn start_arms(&self, epoch: usize) -> Result<Vec<Box<dyn Arm>>, Error> {
        let mut arms: Vec<Option<Box<dyn Arm>>> = (0..self.arms.len()).map(|_| None).collect();
        // Started in a drawn order, returned in the arms' order.
        for i in crate::schedule::order::spawn_order(self.plan.seed, epoch, self.arms.len()) {
            let a = &self.arms[i];
            let arm = self
                .ctx
                .make_with(&a.spec, a.label.clone(), a.iters, a.variant(epoch))?;
            arms[i] = Some(if i == 0 { self.ctx.record(arm) } else { arm });
        }
        Ok(arms.into_iter().flatten().collect())
    }

    /// The session's record before its first epoch: what the plan asked.
    fn new_session(&self) -> Session {
        let plan = &self.plan;
        Session {
            schema: SESSION_SCHEMA.to_string(),
            id: Some(crate::results::new_session_id()),
            command: std::env::args().collect(),
            machine: Machine::read(),
            session: SessionInfo {
                rounds: self.rounds,
                warmup: plan.warmup,
                baseline: self.arms[0].spec.to_string(),
                null_arm: null_label(&self.arms[0].label),
                bytes: plan.params.bytes,
                k: plan.params.k,
                iters_override: plan.params.iters,
                engines: Vec::new(),
                build_profile: crate::versions::BUILD_PROFILE.to_string(),
                confidence_level: LEVEL,
                rotation: match plan.schedule {
                    Schedule::Sequential => format!(
                        "{} design over all arms, null control included, relabelled per epoch",
                        plan.order.name()
                    ),
                    Schedule::Duet { cores: [a, b] } => format!(
                        "duets: the baseline beside each other arm (null control included) at the same moment on cores {a} and {b}, swapped every round, partners in a {} design relabelled per epoch",
                        plan.order.name()
                    ),
                },
                order: Some(plan.order),
                seed: Some(plan.seed),
                schedule: Some(plan.schedule),
                isolation: Some(plan.isolation.name().to_string()),
                randomised: (plan.isolation == Isolation::Workers)
                    .then(|| self.ctx.layout.describe()),
                pinned_cpu: plan.pin,
                metric: plan.metric,
                stop_rule: Some(plan.stop.clone()),
                rep_ms: plan.rep_target.map(|d| d.as_secs_f64() * 1e3),
                layout_builds: self
                    .arms
                    .iter()
                    .any(|a| a.spec.compiles())
                    .then_some(plan.layout_builds),
                reference: plan.reference.map(|r| self.arms[r.index].label.clone()),
                setting: plan.setting.clone(),
                session_budget_s: plan.session_budget_s,
                estimator: Some(plan.estimator.name()),
            },
            counters: plan.counters.status().to_vec(),
            results: Vec::new(),
            complete: false,
            errors: Vec::new(),
            wall_seconds: 0.0,
            epochs: Vec::new(),
            gate: None,
        }
    }
}

/// Each arm's engine version, and its source revision when it runs from a
/// local checkout.
fn engine_info(
    arms: &[Box<dyn Arm>],
    specs: &[ArmPlan],
    layouts: &[Option<crate::workers::layout::Variants>],
) -> Vec<EngineInfo> {
    arms.iter()
        .zip(specs)
        .zip(layouts)
        .map(|((a, p), layout)| EngineInfo {
            layout: layout.clone(),
            arm: a.label().to_string(),
            version: a.version(),
            git: match p.spec.worker.as_ref().map(|w| &w.source) {
                Some(crate::arm::build::Source::Path(dir)) => GitRevision::of(dir),
                _ => None,
            },
        })
        .collect()
}

impl ShapeRun {
    /// The shape built with the plan's parameters, and its counts from the
    /// counting run (a failed count breaks this shape only).
    fn new(shape: Box<dyn Shape>, setup: &Setup) -> Result<Self, Error> {
        let plan = &setup.plan;
        let n_arms = setup.arms.len();
        let module = ShapeModule::build(shape, &plan.params)?;
        let (counts, broken) =
            match crate::phases::time(Phase::CountingRun, || shape_counts(&module)) {
                Ok(c) => (c, None),
                Err(e) => (None, Some(e.to_string())),
            };
        Ok(ShapeRun {
            module,
            counts,
            broken,
            iters_settled: plan.rep_target.is_none() || plan.params.iters.is_some(),
            expected_ns: None,
            cut_epochs: 0,
            reps: vec![Vec::new(); n_arms],
            skipped: vec![None; n_arms],
            failed: vec![None; n_arms],
            spent: Duration::ZERO,
            epochs: 0,
            stopped: None,
            decided: None,
            result: None,
        })
    }

    /// Per arm, why it does not run this epoch: it skips the shape, or it
    /// failed in an earlier epoch.
    fn skips(&self) -> Vec<Option<String>> {
        self.skipped
            .iter()
            .zip(&self.failed)
            .map(|(skipped, failed)| {
                skipped.clone().or_else(|| {
                    failed
                        .as_ref()
                        .map(|_| "failed in an earlier epoch".to_string())
                })
            })
            .collect()
    }

    /// The epoch's verified reps, and each arm's failure (into `errors`
    /// too: the session reports it and goes on).
    fn record(&mut self, epoch: usize, outcomes: Vec<ArmOutcome>, errors: &mut Vec<String>) {
        for (i, outcome) in outcomes.into_iter().enumerate() {
            let (reps, error) = match outcome {
                ArmOutcome::Ran(reps) => (reps, None),
                ArmOutcome::Skipped(_) => (Vec::new(), None),
                ArmOutcome::Failed { error, completed } => (completed, Some(error)),
            };
            self.reps[i].extend(reps.into_iter().map(|r| (epoch as u32, r)));
            if let Some(e) = error {
                let e = format!("{e} (epoch {epoch})");
                errors.push(e.clone());
                self.failed[i] = Some(e);
            }
        }
    }

    /// A stop now, after the epochs and seconds spent so far.
    fn stopped_now(&self, reason: String, half_width_pct: Option<f64>) -> Stopped {
        Stopped {
            reason,
            epochs: self.epochs,
            seconds: self.spent.as_secs_f64(),
            half_width_pct,
        }
    }

    fn stop(&mut self, reason: &str, half_width_pct: Option<f64>) {
        self.stopped = Some(self.stopped_now(reason.to_string(), half_width_pct));
    }

    /// The stop of a shape the session ends (`last` says why): a decided
    /// shape that never narrowed keeps the stop it was decided at.
    fn end(&mut self, last: &str, narrowing: bool) {
        if let (Some(decided), false) = (&self.decided, narrowing) {
            self.stopped = Some(decided.clone());
            return;
        }
        let Some(hw) = self.result.as_ref().map(widest_half_width) else {
            return;
        };
        let reason = match &self.decided {
            Some(d) => stop::narrowed(d.epochs, last),
            None => last.to_string(),
        };
        self.stop(&reason, hw.is_finite().then_some(hw));
    }

    /// Seconds one epoch of this shape has taken on average (0 before its
    /// first).
    fn pace(&self) -> f64 {
        if self.epochs == 0 {
            0.0
        } else {
            self.spent.as_secs_f64() / self.epochs as f64
        }
    }
}

/// The results so far into the report.
fn publish(report: &mut Session, runs: &[ShapeRun], started: Instant) {
    report.results = runs
        .iter()
        .filter_map(|r| {
            let mut res = r.result.clone()?;
            res.stopped = r.stopped.clone();
            Some(res)
        })
        .collect();
    report.machine.finish();
    report.wall_seconds = started.elapsed().as_secs_f64();
}

/// Each pilot call runs this many times the iterations of the one before.
const PILOT_GROWTH: u64 = 8;
/// The most a pilot step grows the count by: a step projects the count
/// that would take a quarter of the target from the call before (per
/// iteration, a small call is dearer than a large one, so the projection
/// falls short, never over), at least `PILOT_GROWTH` times and at most this.
const PILOT_LEAP: u64 = 1024;

/// Settle a shape's iteration count so that one rep of its slowest arm
/// takes about `target`. Each arm that runs the shape is called at a
/// growing count, from one iteration group up, until a call takes a
/// `PILOT_GROWTH`th of `target` (or the shape's own count is reached);
/// three calls per count, the first of which may pay lazy compilation.
/// The slowest arm's time per iteration sets the count every arm then
/// runs. Growing from small counts means a loop that ends only for small
/// counts is caught by a pilot call's deadline (set from the call before
/// it), not by a call of unknown length. Each call resets and verifies
/// the working set like a rep, which is most of a pilot's cost, so a step
/// leaps to the projected count (`PILOT_LEAP`) rather than by a fixed
/// factor. Returns each arm's pilot failure: that arm does not run the
/// shape.
fn pilot(
    module: &mut ShapeModule,
    arms: &[&dyn Arm],
    skips: &[Option<String>],
    target: Duration,
    timing: &crate::workers::Timing,
) -> Result<Vec<Option<String>>, Error> {
    let per = module.shape.declared(&module.params).per.max(1);
    let own = module.iters;
    let most = (i32::MAX as u64 / per * per).min(own.max(per));
    let target_ns = target.as_secs_f64() * 1e9;
    let mut slowest = 0.0f64;
    let mut failed = vec![None; arms.len()];
    for (i, (arm, skip)) in arms.iter().zip(skips).enumerate() {
        if skip.is_some() {
            continue;
        }
        // The first call's deadline is the one of a rep nothing has timed;
        // each later call's follows the call before.
        timing.expect(None);
        timing.within(None);
        match pilot_arm(module, *arm, (per, most), target_ns, timing) {
            Ok(ns_per_iter) => slowest = slowest.max(ns_per_iter),
            Err((n, e)) => failed[i] = Some(format!("pilot at {n} iterations: {e}")),
        }
    }
    let n = if slowest > 0.0 {
        (target_ns / slowest) as u64 / per * per
    } else {
        own
    };
    module.set_iters(n.clamp(per, i32::MAX as u64 / per * per))?;
    Ok(failed)
}

/// One arm's pilot: calls at `per`, then `PILOT_GROWTH` times more each
/// step, until a call takes a `PILOT_GROWTH`th of the target (or `most`);
/// its ns per iteration. One instance serves every step (it is resized;
/// an arm that cannot resize is prepared anew), so the pilot costs one
/// compile and one setup per arm, not one per step. The caller sets the
/// module's count afterwards.
fn pilot_arm(
    module: &mut ShapeModule,
    arm: &dyn Arm,
    (per, most): (u64, u64),
    target_ns: f64,
    timing: &crate::workers::Timing,
) -> Result<f64, (u64, crate::arm::RunError)> {
    let mut n = per;
    let mut rep = 0;
    loop {
        module.set_iters(n).map_err(|e| (n, e.into()))?;
        let mut p = arm.prepare(module).map_err(|e| (n, e))?;
        loop {
            let ns = pilot_calls(p.as_mut(), &mut rep).map_err(|e| (n, e))?;
            if ns * PILOT_GROWTH as f64 >= target_ns || n >= most {
                return Ok(ns / n as f64);
            }
            let leap = ((target_ns / 4.0 / ns.max(1.0)) as u64).clamp(PILOT_GROWTH, PILOT_LEAP);
            let next = (n.saturating_mul(leap) / per * per).min(most);
            timing.expect(Some(ns * (next as f64 / n as f64)));
            n = next;
            if !p.resize(n).map_err(|e| (n, e))? {
                break;
            }
        }
    }
}

/// Three calls at the prepared count; the faster of the last two (the
/// first warms the instance up, or takes it to the new count). Contention
/// only adds time, and one disturbed call taken at face value sized a
/// whole session's reps 30 times too short on a noisy VM (a 0.2 ms target
/// measured 0.006 ms).
fn pilot_calls(
    p: &mut dyn crate::arm::PreparedArm,
    rep: &mut usize,
) -> Result<f64, crate::arm::RunError> {
    let mut next = || {
        *rep += 1;
        *rep - 1
    };
    p.rep(next())?;
    let a = p.rep(next())?.reading.ns;
    let b = p.rep(next())?.reading.ns;
    Ok(a.min(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_rounds_fill_the_epoch_time_with_at_least_eight() {
        // 8 ms of reps of the slowest arm per epoch, never fewer than 8.
        assert_eq!(default_rounds(Some(DEFAULT_REP_MS)), 16);
        assert_eq!(default_rounds(Some(0.25)), 32);
        assert_eq!(default_rounds(Some(0.3)), 27);
        assert_eq!(default_rounds(Some(1.0)), 8);
        assert_eq!(default_rounds(Some(10.0)), 8);
        // A fixed --iters has no rep length: the old default.
        assert_eq!(default_rounds(None), 8);
        // Tiny reps are capped where --rounds is.
        assert_eq!(default_rounds(Some(0.001)), 1000);
        assert_eq!(Plan::default().rounds, 16);
    }
}
