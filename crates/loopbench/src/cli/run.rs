//! `loopbench run`: options validated into a [`Plan`], the session, then
//! every requested export.

use super::progress::TerminalSink;
use super::{OutputArgs, ShapeParams};
use crate::arm::{parse_arms, ArmSpec};
use crate::error::Error;
use crate::measure::callgrind;
use crate::measure::counters::{CounterChoice, CounterKind, CounterSet};
use crate::results::Document;
use crate::results::{Metric, Schedule, StopSettings};
use crate::schedule::Design;
use crate::session::{self, Isolation, Plan, Recorded};
use crate::shapes;
use crate::stats::estimators::Estimator;
use clap::Args;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::time::Duration;
use std::time::Instant;

#[derive(Args, Debug)]
pub struct RunArgs {
    /// Arms, comma-separated: engine[:option,...], e.g. wasmi,wasmi:fuel,wasmtime:pulley;
    /// or builds run in worker processes: wasmi@0.31,wasmi@2 or
    /// tinywasm=path:../tinywasm+profile:lto (see `loopbench list`).
    #[arg(long, value_delimiter = ',')]
    pub engines: Vec<String>,
    /// The baseline arm (default: the first of --engines); it must be one of
    /// --engines (or of the default engines), and is moved first. Its second
    /// copy is the null control.
    #[arg(long)]
    pub baseline: Option<String>,
    /// Also measure ARM as the session's yardstick (a pinned build such as
    /// wasmi@=2.0.0, a git: revision or a compiled-in engine): every result
    /// is also given as a ratio to it, and `compare` of two sessions that
    /// share it compares those ratios, which survive the machine's drift
    /// between sessions. It may be one of --engines (then it stays a
    /// candidate too).
    #[arg(long, value_name = "ARM")]
    pub reference: Option<String>,
    /// Shapes, comma-separated, or `all` (default: all built-in shapes).
    #[arg(long, value_delimiter = ',')]
    pub shapes: Vec<String>,
    /// A user loop (.wat or .wasm) exporting run(iters), optionally setup(iters) and verify() -> i32.
    #[arg(long = "shape-file")]
    pub shape_files: Vec<PathBuf>,
    #[command(flatten)]
    pub params: ShapeParams,
    /// Measured rounds per shape and epoch (rounded up to whole order
    /// designs). Default: enough for 8 ms of the slowest arm's reps, at
    /// least 8 (16 at the default 0.5 ms reps).
    #[arg(long, value_parser = super::rounds_count)]
    pub rounds: Option<usize>,
    /// Warm-up rounds per shape and epoch, run and verified but discarded.
    #[arg(long, default_value_t = 1, value_parser = super::rounds_count)]
    pub warmup: usize,
    #[command(flatten)]
    pub epochs: EpochArgs,
    #[command(flatten)]
    pub output: OutputArgs,
    /// No progress bar.
    #[arg(long, short)]
    pub quiet: bool,
    /// After the table, print where the session's time went, per arm
    /// (compile, instantiate, setup, timed run, verify, counting run, report).
    #[arg(long)]
    pub phases: bool,
    /// Counters read around every timed call: `auto` (every counter that works
    /// here: tsc, perf), `none`, a list such as `tsc,perf`, or `callgrind`
    /// (exact instruction counts: re-runs the session under valgrind).
    ///
    /// Example: loopbench run --engines wasmi,tinywasm --shapes load_stream --bytes 64k --iters 10000 --rounds 2 --counters callgrind
    #[arg(long, default_value = "auto", value_parser = clap::builder::ValueParser::new(|s: &str| s.parse::<CounterChoice>()))]
    pub counters: CounterChoice,
    #[command(flatten)]
    pub keep: super::keep::KeepArgs,
}

impl RunArgs {
    pub fn plan(&self) -> Result<Plan, Error> {
        let mut arms = if self.engines.is_empty() {
            ArmSpec::defaults()
        } else {
            parse_arms(&self.engines)?
        };
        if let Some(b) = &self.baseline {
            let b: ArmSpec = b.parse()?;
            // A baseline that is not an arm would be measured without
            // being asked for: refuse rather than add it silently.
            if !arms.contains(&b) {
                let list: Vec<String> = arms.iter().map(|a| a.to_string()).collect();
                return Err(Error::Usage(format!(
                    "--baseline {b} is not one of the engines ({}); add it to --engines",
                    list.join(",")
                )));
            }
            arms.retain(|a| *a != b);
            arms.insert(0, b);
        }
        let reference = match &self.reference {
            None => None,
            Some(r) => {
                let r: ArmSpec = r.parse()?;
                Some(match arms.iter().position(|a| *a == r) {
                    Some(index) => session::Reference {
                        index,
                        added: false,
                    },
                    None => {
                        arms.push(r);
                        session::Reference {
                            index: arms.len() - 1,
                            added: true,
                        }
                    }
                })
            }
        };
        check_arms(&arms)?;
        if self.rounds == Some(0) {
            return Err(Error::Usage("--rounds must be at least 1".into()));
        }
        let e = &self.epochs;
        // The machine's recorded setting, for what no flag gives.
        let recorded = (e.rep_ms.is_none() || e.schedule.is_none() || e.estimator.is_none())
            .then(|| recorded_setting(&self.keep.db))
            .flatten();
        let rep = (self.params.iters.is_none())
            .then(|| e.rep_target(recorded.as_ref()))
            .transpose()?;
        let rounds = self.rounds.unwrap_or_else(|| {
            session::default_rounds(rep.as_ref().map(|r| r.0.as_secs_f64() * 1e3))
        });
        let (schedule, schedule_said) = e.schedule(recorded.as_ref())?;
        let (estimator, estimator_said) = e.estimator(recorded.as_ref())?;
        if let Some(b) = e.session_budget {
            check_budget(b).map_err(|_| {
                Error::Usage("--session-budget must be a positive number of seconds".into())
            })?;
        }
        let seed = e.seed.unwrap_or_else(session::fresh_seed);
        Ok(Plan {
            stop: e.stop()?,
            order: e.order(seed),
            schedule,
            phases: self.phases,
            seed,
            variant_seed: e.seed.unwrap_or(session::DEFAULT_SEED),
            isolation: if e.in_process {
                Isolation::InProcess
            } else {
                Isolation::Workers
            },
            pin: e.pin(schedule)?,
            metric: e.metric.into(),
            rep_target: rep.as_ref().map(|r| r.0),
            setting: rep.and_then(|r| r.1).or(schedule_said).or(estimator_said),
            estimator,
            session_budget_s: e.session_budget,
            shapes: shapes::select(&self.shapes, &self.shape_files)?,
            arms,
            params: self.params.params(),
            rounds,
            adapt_rounds: self.rounds.is_none(),
            warmup: self.warmup,
            counters: CounterSet::none(),
            labels: Vec::new(),
            arm_iters: Vec::new(),
            layout_builds: e.layout_builds as usize,
            reference,
        })
    }

    /// The plan with the requested counters (shared by `run` and `model`).
    /// Under `--counters callgrind` outside valgrind, this command is re-run
    /// under callgrind instead and `Err(outcome)` is its result, which the
    /// child has already printed.
    pub fn counted_plan(&self) -> Result<Result<Plan, bool>, Error> {
        let mut plan = self.plan()?;
        if let Some(outcome) = rerun_under_callgrind(&self.counters)? {
            return Ok(Err(outcome));
        }
        count_with(&mut plan, &self.counters);
        Ok(Ok(plan))
    }

    pub fn execute(&self) -> Result<bool, Error> {
        let plan = match self.counted_plan()? {
            Ok(plan) => plan,
            Err(outcome) => return Ok(outcome),
        };
        let notes = plan
            .counters
            .status()
            .iter()
            .filter_map(|s| {
                let reason = s.reason.as_ref()?;
                Some(format!("counters: {} unavailable: {reason}", s.counter))
            })
            .collect();
        let planned = plan.shapes.len();
        let shape_files: Vec<&Path> = self.shape_files.iter().map(PathBuf::as_path).collect();
        let exports = self.output.exports_reading(&shape_files)?;
        // A bad --db fails before the session, not after it.
        let keeping = self.keep.open()?;
        let quiet = self.quiet || exports.stdout_is_data() || !std::io::stderr().is_terminal();
        let names: Vec<String> = plan.shapes.iter().map(|s| s.name().to_string()).collect();
        let mut sink = TerminalSink::new(quiet, Some(&exports))
            .with_eta(&names, plan.stop.clone())
            .with_session_budget(plan.session_budget_s)
            .with_notes(notes);
        let started = Instant::now();
        let mut report = session::run(plan, &mut sink)?;
        sink.finish();
        keeping.judge(&mut report);
        let interrupted = !report.complete;
        let completed = report.results.len();
        let mut errors = report.errors.clone();
        if errors.is_empty() && !interrupted {
            // Every arm skipped every shape: no number at all is a failure.
            errors.extend(report.nothing_measured());
        }
        let document = Document::Session(report);
        // A failed export is reported at the end: the other outputs, the
        // table and the history record do not depend on it.
        let exported = exports.finish(&document);
        keeping.record(&document, &exports, &mut errors);
        if self.phases {
            let breakdown = crate::phases::take(started.elapsed());
            let text = breakdown.render();
            if exports.stdout_is_data() {
                crate::diag_part!("{text}");
            } else {
                crate::out!("{text}");
            }
        }
        for e in &errors {
            crate::diag!("error: {e}");
        }
        if interrupted {
            if let Err(e) = exported {
                crate::diag!("error: {e}");
            }
            return Err(Error::interrupted(completed, planned, "shapes"));
        }
        exported?;
        Ok(errors.is_empty() && super::keep::gate_passed(&document))
    }
}

/// The setting `noise --record` stored for this machine, if the history
/// has one (any failure to read it is no setting: the default applies).
fn recorded_setting(db: &super::DbArg) -> Option<Recorded> {
    #[cfg(feature = "history")]
    {
        crate::history::settings::for_this_machine(&db.location().ok()?)
    }
    #[cfg(not(feature = "history"))]
    {
        let _ = db;
        None
    }
}

/// How a session samples layouts and time: epochs of fresh worker
/// processes until the interval is narrow enough or the budget is spent.
#[derive(Args, Debug)]
pub struct EpochArgs {
    /// Stop a shape once the widest interval half-width of its comparisons
    /// (null control included) is at most this, in percent of the ratio.
    #[arg(long, default_value_t = 0.5, value_name = "PCT")]
    pub precision: f64,
    /// Seconds each shape may take in all (its epochs' rounds, preparation
    /// and verification included) before it stops, precise or not.
    #[arg(long, default_value_t = 3.0, value_name = "SECONDS")]
    pub budget: f64,
    /// Seconds the whole session may take: no epoch starts that would end
    /// past them (two always run). Decided shapes wait while others are
    /// unsure; once none is, the time left narrows their intervals (the
    /// null's included) towards --precision, each within its --budget.
    // The last one given counts: scripts/bench.sh gives one of its own.
    #[arg(long, value_name = "SECONDS", overrides_with = "session_budget")]
    pub session_budget: Option<f64>,
    /// Epochs every shape runs at least (precision only counts from here).
    #[arg(long, default_value_t = 5)]
    pub min_epochs: usize,
    /// Epochs at most.
    #[arg(long, default_value_t = 200)]
    pub max_epochs: usize,
    /// Target milliseconds of one rep of the slowest arm; the iteration count
    /// comes from a pilot call (ignored with --iters). Default: the setting
    /// `loopbench noise --record` stored for this machine, else 0.5.
    #[arg(long, value_name = "MS")]
    pub rep_ms: Option<f64>,
    /// The order of arms in a round: williams (every arm follows every other
    /// equally often) or random (a seeded permutation per round).
    #[arg(long, value_enum, default_value_t = OrderArg::Williams)]
    pub order: OrderArg,
    /// Seed of the session's randomisation: the order's per-epoch
    /// relabelling, the start order of each epoch's processes and their
    /// layout draws (environment size, stack offset, heap padding), and of
    /// build arms' layout variants. Default: drawn fresh for every session
    /// (recorded in the results: give it to rerun that session's draws),
    /// so that sessions sample layouts independently: the compiled-in
    /// engines take their code layouts from this machine's pool in an
    /// order drawn from it; build arms' variants then come from a fixed
    /// seed, so that they are compiled once per machine.
    #[arg(long)]
    pub seed: Option<u64>,
    /// When arms run: `sequential` (one at a time), or `duet` (the
    /// baseline beside each other arm at the same moment, one on each of
    /// two cores, swapped every round; `duet:A,B` names the cores).
    /// Default: the schedule `loopbench noise --record` stored for this
    /// machine, else sequential.
    #[arg(long, value_name = "sequential|duet[:A,B]")]
    pub schedule: Option<String>,
    /// How each epoch's rounds become one log ratio before the interval
    /// across epochs: median (of per-round log ratios), mean, hl
    /// (Hodges-Lehmann), trimP, min (ratio of minima), qP (ratio of P-th
    /// percentiles). Default: the estimator `loopbench noise --record`
    /// chose for this machine, else median.
    #[arg(long, value_name = "NAME")]
    pub estimator: Option<String>,
    /// Pin every timing thread to this core, or `none` (default: the last
    /// core this process may use).
    #[arg(long, value_name = "CPU|none")]
    pub pin: Option<String>,
    /// What verdicts are taken on: the wall clock, or the timing thread's
    /// CPU time (which leaves out time spent waiting for a core).
    #[arg(long, value_enum, default_value_t = MetricArg::Wall)]
    pub metric: MetricArg,
    /// Run every arm inside this process (one layout: intervals then cover
    /// rounds only; for debugging).
    #[arg(long)]
    pub in_process: bool,
    /// Layout variants of every build arm (function order shuffled at link
    /// time), sampled across epochs so that a rebuild that only moves code
    /// is never a verdict; 1 measures one build (the interval then has no
    /// build component, and the table says so).
    #[arg(long, value_name = "K", default_value_t = crate::workers::layout::DEFAULT_LAYOUT_BUILDS as u64,
          value_parser = clap::value_parser!(u64).range(1..=64))]
    pub layout_builds: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum OrderArg {
    Williams,
    Random,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum MetricArg {
    Wall,
    Cpu,
}

impl From<MetricArg> for Metric {
    fn from(m: MetricArg) -> Self {
        match m {
            MetricArg::Wall => Metric::Wall,
            MetricArg::Cpu => Metric::ThreadCpu,
        }
    }
}

/// `--budget` (seconds per shape) must be positive and finite.
/// Every arm, before any work: listed once, a build one that can be built
/// (its family, version, path or repository: [`crate::workers::check`]),
/// any other compiled into this binary.
pub(super) fn check_arms(arms: &[ArmSpec]) -> Result<(), Error> {
    for (i, a) in arms.iter().enumerate() {
        if arms[..i].contains(a) {
            return Err(Error::Usage(format!(
                "arm {a} is listed twice; the null control is added automatically"
            )));
        }
        if a.worker.is_some() {
            crate::workers::check(a)?;
        } else if !a.engine.compiled_in() {
            return Err(Error::Usage(format!(
                "{} is not compiled into this binary; rebuild with --features {}",
                a.engine,
                a.engine.feature()
            )));
        }
    }
    Ok(())
}

pub(super) fn check_budget(budget: f64) -> Result<(), Error> {
    if budget > 0.0 && budget.is_finite() {
        Ok(())
    } else {
        Err(Error::Usage(
            "--budget must be a positive number of seconds".into(),
        ))
    }
}

/// `--precision` of `run`, `app run`, `bisect` and `compare`: a percentage
/// from 1e-6 (a stop rule that only the budget ends) to 1000, so every
/// line that shows it stays a line (1e-300 printed 300 zeros).
pub(super) fn check_precision(precision: f64) -> Result<(), Error> {
    if crate::results::sane::PRECISION_PCT.contains(&precision) {
        Ok(())
    } else {
        Err(Error::Usage(format!(
            "--precision {}: must be a percentage from 0.000001 to 1000",
            crate::results::sane::shown(precision)
        )))
    }
}

impl EpochArgs {
    fn stop(&self) -> Result<StopSettings, Error> {
        check_precision(self.precision)?;
        check_budget(self.budget)?;
        if self.min_epochs == 0 || self.max_epochs < self.min_epochs {
            return Err(Error::Usage(format!(
                "--min-epochs {} and --max-epochs {}: need 1 <= min <= max",
                self.min_epochs, self.max_epochs
            )));
        }
        Ok(StopSettings {
            min_epochs: self.min_epochs,
            max_epochs: self.max_epochs,
            precision_pct: self.precision,
            budget_s: self.budget,
        })
    }

    /// `--schedule`, else the machine's recorded one (and how the session
    /// says it took it), else sequential; its cores checked against the
    /// ones this process may use.
    pub fn schedule(
        &self,
        recorded: Option<&Recorded>,
    ) -> Result<(Schedule, Option<String>), Error> {
        let allowed = crate::measure::affinity::allowed();
        if let Some(text) = &self.schedule {
            return Ok((parse_schedule(text, &allowed)?, None));
        }
        match recorded.and_then(|r| Some((r.schedule.as_deref()?, r))) {
            // A recorded duet on a machine that no longer has two cores
            // for this process falls back to sequential (no setting said).
            Some((text, r)) => match parse_schedule(text, &allowed) {
                Ok(s) => Ok((s, (s != Schedule::Sequential).then(|| r.said.clone()))),
                Err(_) => Ok((Schedule::Sequential, None)),
            },
            None => Ok((Schedule::Sequential, None)),
        }
    }

    /// `--estimator`, else the machine's recorded one (and how the session
    /// says it took it), else the median.
    fn estimator(&self, recorded: Option<&Recorded>) -> Result<(Estimator, Option<String>), Error> {
        if let Some(name) = &self.estimator {
            let e = name
                .parse()
                .map_err(|e: crate::stats::estimators::UnknownEstimator| {
                    Error::Usage(format!("--estimator: {e}"))
                })?;
            return Ok((e, None));
        }
        // A name this build does not know is no setting: the default applies.
        match recorded.and_then(|r| Some((r.estimator.as_deref()?.parse::<Estimator>().ok()?, r))) {
            Some((e, r)) if e != crate::stats::estimators::DEFAULT => Ok((e, Some(r.said.clone()))),
            _ => Ok((crate::stats::estimators::DEFAULT, None)),
        }
    }

    fn order(&self, seed: u64) -> Design {
        match self.order {
            OrderArg::Williams => Design::Williams,
            OrderArg::Random => Design::Random { seed },
        }
    }

    /// The rep length: `--rep-ms`, else the setting recorded for this
    /// machine (`noise --record`; described for the session), else
    /// [`session::DEFAULT_REP_MS`].
    fn rep_target(&self, recorded: Option<&Recorded>) -> Result<(Duration, Option<String>), Error> {
        let (ms, setting) = match (self.rep_ms, recorded) {
            (Some(ms), _) => (ms, None),
            (None, Some(r)) => (r.rep_ms, Some(r.said.clone())),
            (None, None) => (session::DEFAULT_REP_MS, None),
        };
        if !(ms > 0.0 && ms <= 60_000.0) {
            return Err(Error::Usage(
                "--rep-ms must be above 0 and at most 60000".into(),
            ));
        }
        Ok((Duration::from_secs_f64(ms / 1e3), setting))
    }

    fn pin(&self, schedule: Schedule) -> Result<Option<usize>, Error> {
        // A duet pins each pair itself; only an explicit core conflicts.
        if schedule != Schedule::Sequential && self.pin.is_none() {
            return Ok(None);
        }
        match self.pin.as_deref() {
            Some("none") => Ok(None),
            Some(cpu) => {
                let cpu: usize = cpu.parse().map_err(|_| {
                    Error::Usage(format!("--pin `{cpu}`: expected a core number or `none`"))
                })?;
                if !crate::measure::affinity::allowed().contains(&cpu) {
                    return Err(Error::Usage(format!(
                        "--pin {cpu}: this process may run on cores {:?} only",
                        crate::measure::affinity::allowed()
                    )));
                }
                Ok(Some(cpu))
            }
            None => Ok(crate::measure::affinity::allowed().last().copied()),
        }
    }
}

/// `sequential`, `duet` (the first two of `allowed`) or `duet:A,B`.
pub fn parse_schedule(text: &str, allowed: &[usize]) -> Result<Schedule, Error> {
    let bad = |why: String| Err(Error::Usage(format!("--schedule `{text}`: {why}")));
    match text.split_once(':') {
        None if text == "sequential" => Ok(Schedule::Sequential),
        None if text == "duet" => match allowed {
            [a, b, ..] => Ok(Schedule::Duet { cores: [*a, *b] }),
            _ => bad(format!(
                "a duet needs two cores, and this process may run on {allowed:?} only"
            )),
        },
        Some(("duet", cores)) => {
            let cores: Vec<usize> = match cores.split(',').map(|c| c.trim().parse()).collect() {
                Ok(c) => c,
                Err(_) => return bad("expected duet:A,B with two core numbers".into()),
            };
            match cores[..] {
                [a, b] if a != b => Ok(Schedule::Duet { cores: [a, b] }),
                _ => bad("expected duet:A,B with two different core numbers".into()),
            }
        }
        _ => bad("expected sequential, duet or duet:A,B".into()),
    }
}

/// Under `--counters callgrind` outside valgrind: run this command again
/// under callgrind and return its outcome (the child prints the results);
/// `None` when this process is the one to measure.
pub fn rerun_under_callgrind(counters: &CounterChoice) -> Result<Option<bool>, Error> {
    if !counters.wants(CounterKind::Callgrind) || callgrind::child_dir().is_some() {
        return Ok(None);
    }
    match callgrind::reexec()? {
        0 => Ok(Some(true)),
        1 => Ok(Some(false)),
        code => std::process::exit(code),
    }
}

/// Give `plan` the requested counters.
pub fn count_with(plan: &mut Plan, counters: &CounterChoice) {
    plan.counters = CounterSet::resolve(counters);
    if counters.wants(CounterKind::Callgrind) {
        // Instruction counts do not move with the layout, and valgrind
        // makes every process slow: one epoch, in this process.
        plan.isolation = Isolation::InProcess;
        plan.schedule = Schedule::Sequential;
        plan.stop.min_epochs = 1;
        plan.stop.max_epochs = 1;
        plan.rep_target = None;
    }
}
