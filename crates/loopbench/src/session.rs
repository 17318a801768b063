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
//! decision. Beside it: `plan.rs` what a session is asked, `setup.rs` what
//! its epochs share (arms, null control, variants, the worker context),
//! `counts.rs` a shape's exact counts, `pilot.rs` the iteration count,
//! `builds.rs` layout variants of build arms, `stop.rs` when a shape has
//! enough, and `summary.rs` a shape's reps reduced to its result.

use crate::arm::{skip_reason, Arm, Iters};
use crate::error::Error;
use crate::phases::Phase;
use crate::results::{EpochRecord, IterCounts, Session, ShapeResult, Stopped};
use crate::schedule::{self, ArmOutcome, EpochOrder, Progress, Timed};
use crate::shapes::{Shape, ShapeModule};
use crate::stats::stop::StopReason;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};
use stop::{stopped_after, widest_half_width};

pub use crate::stats::LEVEL;
pub use crate::workers::Isolation;

mod builds;
/// Counter readings reduced like times, per arm and per comparison (the
/// reports and calibration read their names and sign checks).
pub mod counters;
mod counts;
mod pilot;
mod plan;
mod rounds;
mod setup;
mod stop;
mod summary;
pub use builds::build_null_label;
pub use counts::shape_counts;
use pilot::pilot;
pub use plan::{
    default_rounds, fresh_seed, Plan, Recorded, Reference, DEFAULT_REP_MS, DEFAULT_SEED,
};
use setup::{engine_info, ArmPlan, Setup};
use summary::summarise;

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
    /// Measured rounds its next epoch runs ([`rounds::adapted`]).
    rounds: usize,
}

/// Run the plan. Returns the session (complete or not); arm failures are in
/// `errors` and do not stop other arms or shapes.
pub fn run(mut plan: Plan, sink: &mut dyn Sink) -> Result<Session, Error> {
    let started = Instant::now();
    let shapes = std::mem::take(&mut plan.shapes);
    // Parameters no shape can run with are the user's error before any
    // worker or layout variant is built.
    for shape in &shapes {
        crate::shapes::check_params(shape.as_ref(), &plan.params)?;
    }
    let mut setup = Setup::new(plan)?;
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
        let mut active = active_shapes(&runs, narrowing, epoch);
        if active.iter().all(|&i| runs[i].decided.is_some())
            && !narrowing
            && setup.plan.session_budget_s.is_some()
        {
            narrowing = true;
            active = active_shapes(&runs, narrowing, epoch);
        }
        if active.is_empty() {
            break;
        }
        if sink.interrupted() {
            interrupted = true;
            break;
        }
        let next = overhead + active.iter().map(|&i| runs[i].pace()).sum::<f64>();
        let budget = setup.plan.session_budget_s;
        // Two epochs first: an interval needs a layout component.
        if epoch >= 2 && would_overrun(budget, started, next) {
            out_of_time = true;
            break;
        }
        setup.grow(epoch, started.elapsed().as_secs_f64(), |link| {
            !would_overrun(budget, started, link + next)
        });
        setup.assign(epoch);
        if epoch > 0 {
            // The variants linked since are part of what the arms ran in.
            let layouts = setup.layouts.iter();
            for (info, layout) in report.session.engines.iter_mut().zip(layouts) {
                info.layout.clone_from(layout);
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
        run.end(last);
    }
    publish(&mut report, &runs, started);
    report.complete = !interrupted;
    // What this session ran from is the most recently used now.
    crate::workers::inventory::auto_prune();
    Ok(report)
}

/// The shapes taking `epoch`: those not stopped; of those decided (with a
/// session budget they wait to narrow), every other epoch while some shape
/// is unsure, and every epoch once the session is `narrowing`. The unsure
/// get the most time, and a decided shape still gains layouts: with a
/// fresh layout every epoch, one that sat out every epoch until the end
/// kept the few it was decided on (a 60 s default session left 16 of its
/// shapes at 5 epochs, ±20% and wider).
fn active_shapes(runs: &[ShapeRun], narrowing: bool, epoch: usize) -> Vec<usize> {
    (0..runs.len())
        .filter(|&i| {
            runs[i].stopped.is_none()
                && (narrowing || runs[i].decided.is_none() || epoch.is_multiple_of(2))
        })
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
        .zip(&setup.layouts)
        .filter_map(|(a, layout)| {
            let v = a.variant(epoch)?;
            let seed = match layout {
                Some(l) => l.variants.get(v)?.seed,
                None => crate::workers::layout::seed(setup.plan.variant_seed, v),
            };
            Some((a.label.clone(), seed))
        })
        .collect();
    if sink.interrupted() && ran.is_empty() {
        // The signal cut this epoch short before any shape of it ended:
        // it is no epoch of the session.
        return Ok(true);
    }
    report.epochs.push(EpochRecord {
        epoch,
        pids,
        shapes: ran,
        seconds: started.elapsed().as_secs_f64(),
        variants,
    });
    Ok(interrupted || sink.interrupted())
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
            if sink.interrupted() {
                // A pilot rep cut off by the signal is no arm's failure.
                return Ok(false);
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
    let reps = running * (plan.warmup + run.rounds);
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
        run.rounds,
        order,
        setup.duet_plan().as_ref(),
        &mut budgeted,
    );
    if budgeted.sink.interrupted() {
        // Asked to stop mid-epoch: the epoch is unfinished (a rep cut off
        // in a worker is no arm's failure), so none of it is kept.
        return Ok(false);
    }
    if budgeted.cut {
        run.cut_epochs += 1;
    }
    run.record(epoch, outcomes, &mut report.errors);
    run.spent += t0.elapsed();
    run.epochs += 1;
    let result = summarise(run, specs, arms, plan);
    if plan.adapt_rounds
        && plan.isolation == crate::workers::Isolation::Workers
        && setup.duet.is_none()
    {
        run.rounds = rounds::adapted(
            result.comparisons.iter().map(|c| &c.layout),
            run.rounds,
            setup.rounds,
            plan.order.period(specs.len()),
            plan.warmup,
        );
    }
    let rotation = setup.rotation();
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
    fn stop_asked(&self) -> bool {
        self.sink.interrupted()
    }
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
            rounds: setup.rounds,
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
    fn end(&mut self, last: &str) {
        // Decided, and no epoch since: the stop it was decided at.
        if let Some(decided) = self.decided.as_ref().filter(|d| d.epochs == self.epochs) {
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
