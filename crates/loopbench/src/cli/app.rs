//! `loopbench app ...`: list, run, profile, project and warm mode for the
//! real workloads in `apps/`.

use crate::apps::named::{self, Named};
use crate::apps::project::project_app;
use crate::apps::warm;
use crate::apps::{self, workload, AppShape, Invocation, Workload, APPS};

use super::model::check_price_in;
use super::run::{count_with, rerun_under_callgrind};
use super::OutputArgs;
use crate::arm::{parse_arms, ArmSpec};
use crate::error::Error;
use crate::measure::counters::{CounterChoice, CounterKind};
use crate::model::EngineModel;
use crate::results::app::{AppProjection, AppWarm, Prices, PROJECT_SCHEMA, WARM_SCHEMA};
use crate::results::{Document, Session};
use crate::session::{self, Plan};
use crate::shapes::{self, Params, ShapeModule};

use clap::{Args, Subcommand};
use std::path::Path;

#[derive(Args, Debug)]
pub struct AppArgs {
    #[command(subcommand)]
    pub command: AppCommand,
}

#[derive(Subcommand, Debug)]
pub enum AppCommand {
    /// List the app recipes: source, version pin, license, workload.
    List,
    /// Whole-app A/B: interleaved rounds, null control, every rep verified;
    /// the recipes, or your own WASI command modules.
    ///
    /// Example: loopbench app run zlib,lua --engines wasmi,tinywasm,wasm3
    ///
    /// Example: loopbench app run sightglass/benchmarks/bz2/benchmark.wasm
    Run(AppRunArgs),
    /// The app's exact op mix (counting run): each class's share, transfers,
    /// hottest functions and loops, and which shapes price the hot classes.
    ///
    /// Example: loopbench app profile lua
    Profile(AppProfileArgs),
    /// Predicted app change from per-primitive prices x the app's op mix,
    /// beside the measured app change.
    ///
    /// Example: loopbench app project zlib --engines wasmi,wasmi:fuel
    Project(AppProjectArgs),
    /// Warm mode: run the app N steps, then the shape's loop once, in a fresh
    /// instance per rep; compared with the same loop in a cold instance.
    ///
    /// Example: loopbench app warm zlib --shape store_stream --after 1
    Warm(AppWarmArgs),
}

#[derive(Args, Debug)]
pub struct ArmArgs {
    /// Arms, comma-separated: engine[:option,...] (default: wasmi,tinywasm,wasm3 as compiled in).
    #[arg(long, value_delimiter = ',')]
    pub engines: Vec<String>,
    /// Measured rounds (rounded up to a multiple of the arm count).
    #[arg(long, default_value_t = 6, value_parser = super::rounds_count)]
    pub rounds: usize,
    /// Warm-up rounds, run and verified but discarded.
    #[arg(long, default_value_t = 1, value_parser = super::rounds_count)]
    pub warmup: usize,
}

impl ArmArgs {
    fn arms(&self, default: Vec<ArmSpec>) -> Result<Vec<ArmSpec>, Error> {
        let arms = if self.engines.is_empty() {
            default
        } else {
            parse_arms(&self.engines)?
        };
        if arms.is_empty() {
            return Err(Error::Usage("no engines given".into()));
        }
        super::run::check_arms(&arms)?;
        // An engine compiled in takes its options now; a build is built by
        // the session's workers.
        for a in arms.iter().filter(|a| a.worker.is_none()) {
            a.build().map_err(|e| Error::Usage(e.to_string()))?;
        }
        if self.rounds == 0 {
            return Err(Error::Usage("--rounds must be at least 1".into()));
        }
        Ok(arms)
    }
}

#[derive(Args, Debug)]
pub struct AppRunArgs {
    /// Apps, comma-separated: recipe names, `all`, or your own WASI
    /// command modules (FILE.wasm, or a directory of them, or of
    /// directories that hold them, as Sightglass's benchmarks/).
    #[arg(value_delimiter = ',', required = true)]
    pub apps: Vec<String>,
    #[command(flatten)]
    pub workload: WorkloadArgs,
    #[command(flatten)]
    pub arms: ArmArgs,
    #[command(flatten)]
    pub stop: AppStopArgs,
    /// Run WASI commands in this process, one code layout, rather than a
    /// worker process per arm in layout variants (recipes always run here).
    #[arg(long)]
    pub in_process: bool,
    /// Code-layout variants of every arm's engine (see `loopbench run
    /// --layout-builds`), sampled across epochs; 1 runs one layout.
    #[arg(long, value_name = "K", default_value_t = crate::workers::layout::DEFAULT_LAYOUT_BUILDS as u64,
          value_parser = clap::value_parser!(u64).range(1..=64))]
    pub layout_builds: u64,
    /// Counters read around each rep, as `loopbench run --counters` (default:
    /// none, the clock alone); `callgrind` re-runs the session under
    /// valgrind for each module's exact host instructions per arm (one
    /// epoch, in this process; the counting runs too, so it takes long).
    ///
    /// Example: loopbench app run shootout/shootout-sieve.wasm --counters callgrind --rounds 1
    #[arg(long, default_value = "none", value_parser = clap::builder::ValueParser::new(|s: &str| s.parse::<CounterChoice>()))]
    pub counters: CounterChoice,
    #[command(flatten)]
    pub output: OutputArgs,
    #[command(flatten)]
    pub keep: super::keep::KeepArgs,
}

/// When an app (and, in `app project`, a pricing shape) stops.
#[derive(Args, Debug)]
pub struct AppStopArgs {
    /// Seconds each app (and each pricing shape) may take in all: more
    /// epochs, each in fresh processes and another code layout, narrow
    /// intervals that the layout moves between processes.
    #[arg(long, default_value_t = 3.0, value_name = "SECONDS")]
    pub budget: f64,
    /// Epochs every app (and pricing shape) takes at least, budget
    /// permitting.
    #[arg(long, default_value_t = 5)]
    pub min_epochs: usize,
    /// Stop an app once the widest interval half-width of its comparisons
    /// (null control included) is at most this, in percent of the ratio,
    /// and call a change "unchanged" inside it.
    #[arg(long, default_value_t = Plan::default().stop.precision_pct, value_name = "PCT")]
    pub precision: f64,
}

impl AppStopArgs {
    fn stop(&self) -> Result<crate::results::StopSettings, Error> {
        super::run::check_precision(self.precision)?;
        super::run::check_budget(self.budget)?;
        if self.min_epochs == 0 {
            return Err(Error::Usage("--min-epochs must be at least 1".into()));
        }
        Ok(crate::results::StopSettings {
            budget_s: self.budget,
            min_epochs: self.min_epochs,
            precision_pct: self.precision,
            ..Plan::default().stop
        })
    }
}

/// What a WASI command is given besides its module.
#[derive(Args, Debug)]
pub struct WorkloadArgs {
    /// An argument for every WASI command, after its program name
    /// (repeat for more).
    #[arg(long = "arg", value_name = "ARG", allow_hyphen_values = true)]
    pub args: Vec<String>,
    /// An environment variable for every WASI command, NAME=value
    /// (repeat for more); the commands see no other.
    #[arg(long = "env", value_name = "NAME=value")]
    pub env: Vec<String>,
    /// Fuel of each WASI command's untimed counting run (wasmi's units:
    /// one or more per instruction; a tight loop burns the default in
    /// about 20 s): a command that needs more is refused as one that
    /// never ends, before any timing.
    #[arg(long, default_value_t = apps::workload::WORKLOAD_FUEL)]
    pub fuel: u64,
}

impl WorkloadArgs {
    pub(super) fn invocation(&self) -> Result<Invocation, Error> {
        // A name is what a module can look up: not empty.
        if let Some(bad) = self
            .env
            .iter()
            .find(|e| e.split_once('=').is_none_or(|(n, _)| n.is_empty()))
        {
            return Err(Error::Usage(format!("--env {bad}: expected NAME=value")));
        }
        if self.fuel == 0 {
            return Err(Error::Usage("--fuel must be at least 1".into()));
        }
        Ok(Invocation {
            args: self.args.clone(),
            env: self.env.clone(),
            fuel: self.fuel,
        })
    }
}

#[derive(Args, Debug)]
pub struct AppProfileArgs {
    /// App name (see `loopbench app list`), or a WASI command module
    /// (FILE.wasm): the exact op mix of its timed region.
    pub app: String,
    #[command(flatten)]
    pub workload: WorkloadArgs,
    #[command(flatten)]
    pub output: OutputArgs,
}

#[derive(Args, Debug)]
pub struct AppProjectArgs {
    /// Apps, comma-separated: recipe names, `all`, or your own WASI
    /// command modules (as `app run` takes them).
    #[arg(value_delimiter = ',', required = true)]
    pub apps: Vec<String>,
    #[command(flatten)]
    pub workload: WorkloadArgs,
    /// Two or more arms, the baseline first (e.g. wasmi,wasmi:fuel,wasm3):
    /// every pair is projected.
    #[arg(long, value_delimiter = ',', required = true)]
    pub engines: Vec<String>,
    /// Working set of the pricing session's shapes.
    #[arg(long, default_value = "1m", value_parser = crate::units::working_set)]
    pub bytes: u64,
    /// Measured rounds of the pricing session and of the app session.
    #[arg(long, default_value_t = 6, value_parser = super::rounds_count)]
    pub rounds: usize,
    #[arg(long, default_value_t = 1, value_parser = super::rounds_count)]
    pub warmup: usize,
    #[command(flatten)]
    pub stop: AppStopArgs,
    /// Iterations per rep of the pricing shapes (default: each shape's
    /// own; a few thousand are plenty under --counters callgrind).
    #[arg(long)]
    pub iters: Option<u64>,
    /// Counters read in both sessions (see `loopbench run --counters`);
    /// `callgrind` runs them under valgrind for exact host instructions.
    #[arg(long, default_value = "auto", value_parser = clap::builder::ValueParser::new(|s: &str| s.parse::<CounterChoice>()))]
    pub counters: CounterChoice,
    /// Price and measure a counter instead of the time: with --counters
    /// callgrind, `callgrind_ir` says how much of each app's exact host
    /// instructions the op-class prices reproduce (what the engine's
    /// translation adds or fuses away), apart from what the CPU adds.
    ///
    /// Example: loopbench app project lua --engines wasmi,wasm3 --counters callgrind --iters 2000 --rounds 2 --price-in callgrind_ir --json app-ir.json
    #[arg(long, value_name = "COUNTER")]
    pub price_in: Option<String>,
    /// Also reproduce each app's time from its exact host instructions and
    /// simulated mispredictions, at the ns per instruction and per
    /// misprediction that this session's shapes cost: SESSION is the JSON
    /// of this command run with --counters callgrind (the shapes' and the
    /// apps' instructions).
    ///
    /// Example: loopbench app project lua --engines wasmi,wasm3 --budget 8 --instructions-from app-ir.json
    #[arg(long, value_name = "SESSION")]
    pub instructions_from: Option<String>,
    #[command(flatten)]
    pub output: OutputArgs,
}

#[derive(Args, Debug)]
pub struct AppWarmArgs {
    /// App name.
    pub app: String,
    /// The shape whose loop is injected (see `loopbench list`).
    #[arg(long)]
    pub shape: String,
    /// App workload steps run before the loop in the warm arm.
    #[arg(long, default_value_t = 1)]
    pub after: u64,
    /// Working set of the shape.
    #[arg(long, default_value = "1m", value_parser = crate::units::working_set)]
    pub bytes: u64,
    /// Override the shape's iteration count.
    #[arg(long)]
    pub iters: Option<u64>,
    #[command(flatten)]
    pub arms: ArmArgs,
    #[command(flatten)]
    pub output: OutputArgs,
}

impl AppArgs {
    pub fn execute(&self) -> Result<bool, Error> {
        match &self.command {
            AppCommand::List => list(),
            AppCommand::Run(a) => a.execute(),
            AppCommand::Profile(a) => a.execute(),
            AppCommand::Project(a) => a.execute(),
            AppCommand::Warm(a) => a.execute(),
        }
    }
}

fn list() -> Result<bool, Error> {
    crate::outln!(
        "Apps (recipes in apps/<name>/, built by scripts/apps/build.sh into {}):",
        apps::artifacts_dir().display()
    );
    for a in APPS {
        let built = apps::artifacts_dir()
            .join(format!("{}.wasm", a.name))
            .is_file();
        crate::outln!("  {:<8} {}", a.name, a.about);
        crate::outln!("           source:  {}", a.source);
        crate::outln!("           license: {}", a.license);
        let expected = match a.driver {
            apps::Driver::Zstd => "checksum computed from the input".to_string(),
            _ => format!("{:#010x}", a.expected as u32),
        };
        crate::outln!(
            "           workload: run({}) -> {expected}{}",
            a.steps,
            if built {
                ""
            } else {
                "   (not built yet: built on first use)"
            }
        );
        for d in a.known_defects {
            crate::outln!("           wrong on: {}x, which {}", d.engine, d.what);
            crate::outln!(
                "             (the engine's defect, reduced to {})",
                d.reduced
            );
        }
    }
    Ok(true)
}

fn app_plan(
    shapes: Vec<Box<dyn shapes::Shape>>,
    arms: Vec<ArmSpec>,
    rounds: usize,
    warmup: usize,
) -> Plan {
    Plan {
        shapes,
        arms,
        params: Params::default(),
        rounds,
        warmup,
        // An app's step count is its workload: no pilot.
        rep_target: None,
        ..Default::default()
    }
}

impl AppRunArgs {
    pub fn execute(&self) -> Result<bool, Error> {
        let invocation = self.workload.invocation()?;
        let stop = self.stop.stop()?;
        // The child of a callgrind re-run does the rest, outputs included.
        if let Some(outcome) = rerun_under_callgrind(&self.counters)? {
            return Ok(outcome);
        }
        let arms = self.arms.arms(ArmSpec::defaults())?;
        named::check_builds(&arms, self.in_process)?;
        // Outputs and the history are checked before the counting runs.
        let modules: Vec<&Path> = self.apps.iter().map(Path::new).collect();
        let exports = self.output.exports_reading(&modules)?;
        let keeping = self.keep.open()?;
        let named = named::load(&self.apps, &invocation)?;
        let recipes = named::recipes_of(&named);
        let (shapes, isolation) = named::into_session(named, self.in_process)?;
        let mut plan = app_plan(shapes, arms, self.arms.rounds, self.arms.warmup);
        plan.stop = stop;
        plan.layout_builds = self.layout_builds as usize;
        plan.isolation = isolation;
        count_with(&mut plan, &self.counters);
        let planned = plan.shapes.len();
        // The terminal sink stops the session on SIGINT or SIGTERM and
        // rewrites the files after every epoch.
        let mut sink = super::progress::TerminalSink::new(true, Some(&exports));
        let mut report = session::run(plan, &mut sink)?;
        named::name_known_defects(&recipes, &mut report.results, &mut report.errors);
        keeping.judge(&mut report);
        let (interrupted, completed) = (!report.complete, report.results.len());
        let mut errors = report.errors.clone();
        let document = Document::Session(report);
        let exported = exports.finish(&document);
        keeping.record(&document, &exports, &mut errors);
        for e in &errors {
            crate::diag!("error: {e}");
        }
        if interrupted {
            return Err(Error::interrupted(completed, planned, "shapes"));
        }
        exported?;
        Ok(errors.is_empty() && super::keep::gate_passed(&document))
    }
}

impl AppProfileArgs {
    pub fn execute(&self) -> Result<bool, Error> {
        let profile = if workload::is_path(&self.app) {
            let invocation = self.workload.invocation()?;
            let path = std::path::Path::new(&self.app);
            apps::profile::profile_workload(&Workload::load(path, &invocation)?)
        } else {
            apps::profile::profile(&AppShape::load(apps::find(&self.app)?)?)?
        };
        self.output
            .exports()?
            .finish(&Document::AppProfile(profile))?;
        Ok(true)
    }
}

/// The two sessions of an `app project` document saved with
/// `--counters callgrind`: the shapes' and the apps' host instructions.
fn instruction_sessions(from: &str) -> Result<(Session, Session), Error> {
    let bad = |why: String| Error::Usage(format!("--instructions-from {from}: {why}"));
    let doc = match crate::results::read(std::path::Path::new(from))? {
        Document::AppProject(doc) if doc.schema == PROJECT_SCHEMA => doc,
        other => {
            return Err(bad(format!(
                "a {} document, not the JSON of `app project --counters callgrind`",
                other.kind()
            )))
        }
    };
    let AppProjection {
        pricing_session: shapes,
        app_session: apps,
        ..
    } = *doc;
    if let Some(what) = crate::model::missing_counter(&apps, INSTRUCTIONS) {
        return Err(bad(format!(
            "the app session has no `{INSTRUCTIONS}` {what}"
        )));
    }
    Ok((shapes, apps))
}

const INSTRUCTIONS: &str = crate::model::instructions::COUNTER;

impl AppProjectArgs {
    pub fn execute(&self) -> Result<bool, Error> {
        let invocation = self.workload.invocation()?;
        let stop = self.stop.stop()?;
        check_price_in(self.price_in.as_deref(), &self.counters)?;
        if self.instructions_from.is_some()
            && (self.price_in.is_some() || self.counters.wants(CounterKind::Callgrind))
        {
            return Err(Error::Usage(
                "--instructions-from reproduces the measured time: it does not go with --price-in or --counters callgrind".into(),
            ));
        }
        let from_instructions = self
            .instructions_from
            .as_deref()
            .map(instruction_sessions)
            .transpose()?;
        // The child of a callgrind re-run writes the outputs.
        if let Some(outcome) = rerun_under_callgrind(&self.counters)? {
            return Ok(outcome);
        }
        let exports = self.output.exports()?;
        let counter = self.price_in.as_deref();
        let arms = ArmArgs {
            engines: self.engines.clone(),
            rounds: self.rounds,
            warmup: self.warmup,
        }
        .arms(Vec::new())?;
        if arms.len() < 2 {
            return Err(Error::Usage(
                "--engines takes at least two arms: baseline,candidate[,...]".into(),
            ));
        }
        let named = named::load(&self.apps, &invocation)?;
        let labels: Vec<String> = arms.iter().map(|a| a.to_string()).collect();
        // 1. Prices: the cost model fitted on the shape catalog, every arm, this session.
        crate::diag!(
            "pricing primitives: shape session on {} (--bytes {})",
            labels.join(", "),
            crate::units::format_bytes(self.bytes)
        );
        let shapes: Vec<Box<dyn shapes::Shape>> = shapes::catalog()
            .into_iter()
            .filter(|s| !s.name().starts_with("shared_"))
            .collect();
        let mut plan = Plan {
            shapes,
            arms: arms.clone(),
            params: Params {
                bytes: self.bytes,
                iters: self.iters,
                k: 8,
            },
            rounds: self.rounds,
            warmup: self.warmup,
            stop: stop.clone(),
            ..Default::default()
        };
        count_with(&mut plan, &self.counters);
        let price_report = session::run(plan, &mut ())?;
        let mut models = crate::model::build(&price_report, counter)
            .map_err(|e| Error::Usage(format!("--price-in: {e}")))?;
        if let Some((shapes_ir, _)) = &from_instructions {
            crate::model::instructions::add(&price_report, shapes_ir, &mut models)
                .map_err(|e| Error::Usage(format!("--instructions-from: {e}")))?;
        }
        // Every arm's model, in label order.
        let arm_models = labels
            .iter()
            .map(|l| {
                models.iter().find(|m| &m.arm == l).ok_or_else(|| {
                    Error::Usage(format!(
                        "the cost model could not price {l} (no shape ran on it)"
                    ))
                })
            })
            .collect::<Result<Vec<&EngineModel>, Error>>()?;
        let prices: Vec<Prices> = arm_models.iter().map(|m| Prices::from_model(m)).collect();
        // 2. The apps, counted (what the prices are projected onto), then
        // measured.
        let subjects = named
            .iter()
            .map(Named::subject)
            .collect::<Result<Vec<_>, _>>()?;
        crate::diag!(
            "measuring apps: {}",
            subjects
                .iter()
                .map(|s| s.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        );
        let (shapes, isolation) = named::into_session(named, false)?;
        let mut plan = app_plan(shapes, arms.clone(), self.rounds, self.warmup);
        plan.stop = stop;
        plan.isolation = isolation;
        count_with(&mut plan, &self.counters);
        let report = session::run(plan, &mut ())?;
        let by_instructions = from_instructions
            .as_ref()
            .map(|(_, apps_ir)| (apps_ir, arm_models.as_slice()));
        let projections = report
            .results
            .iter()
            .zip(&subjects)
            .map(|(r, subject)| project_app(r, subject, &prices, counter, by_instructions))
            .collect::<Result<Vec<_>, Error>>()?;
        let mut errors = price_report.errors.clone();
        errors.extend(report.errors.iter().cloned());
        let doc = AppProjection {
            schema: PROJECT_SCHEMA.to_string(),
            unit: counter.unwrap_or("ns").to_string(),
            pricing_session: price_report,
            app_session: report,
            projections,
            prices,
            from_instructions: from_instructions.is_some(),
        };
        exports.finish(&Document::AppProject(Box::new(doc)))?;
        for e in &errors {
            crate::diag!("error: {e}");
        }
        Ok(errors.is_empty())
    }
}

impl AppWarmArgs {
    pub fn execute(&self) -> Result<bool, Error> {
        let spec = apps::find(&self.app)?;
        let shape = shapes::lookup(&self.shape)?;
        if self.after == 0 {
            return Err(Error::Usage(
                "--after must be at least 1 (0 is the cold arm)".into(),
            ));
        }
        if self.after > i32::MAX as u64 {
            return Err(Error::Usage("--after must be below 2^31".into()));
        }
        let arms = self.arms.arms(vec!["wasmi".parse()?])?;
        let params = Params {
            bytes: self.bytes,
            iters: self.iters,
            k: 8,
        };
        let module = ShapeModule::build(shape, &params)?;
        let setup = warm::setup(spec, module)?;
        let exports = self.output.exports()?;
        // The app's steps before the loop run in this process: an app that
        // never ends them is stopped by fuel here, in one line, not hung.
        apps::profile::check_ends(&setup.app, self.after)?;
        let mut errors = Vec::new();
        let mut results = Vec::new();
        for spec_arm in &arms {
            let (result, e) = warm::run_warm(
                &setup,
                spec_arm,
                self.after,
                self.arms.rounds,
                self.arms.warmup,
            )?;
            results.push(result);
            errors.extend(e);
        }
        exports.finish(&Document::AppWarm(AppWarm {
            schema: WARM_SCHEMA.to_string(),
            app: spec.name.to_string(),
            after: self.after,
            results,
        }))?;
        for e in &errors {
            crate::diag!("error: {e}");
        }
        Ok(errors.is_empty())
    }
}
