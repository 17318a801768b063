//! The command line: one struct per subcommand, each with `execute()`.
//! Raw arguments are validated into a [`Plan`] before any work starts.

use crate::arm::{parse_arms, ArmSpec, EngineKind};
use crate::error::Error;
use crate::measure::callgrind;
use crate::measure::counters::{CounterChoice, CounterKind, CounterSet};
use crate::report::{self, JsonTarget};
use crate::session::{self, Plan, Report};
use crate::shapes::{self, user::UserShape, Body, Params, Shape};
use clap::{Args, Parser, Subcommand};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// Interleaved, verified, null-controlled loop benchmarks for WebAssembly engines.
#[derive(Parser, Debug)]
#[command(name = "loopbench", version, about, long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// List shapes (what each prices, declared counts) and the engines compiled in.
    List,
    /// Show a shape's WAT, parameters and declared per-iteration counts.
    Show(ShowArgs),
    /// Run a session: shapes x arms, interleaved rounds, with a null control.
    ///
    /// Example: loopbench run --engines wasmi,tinywasm,wasm3 --baseline wasmi --shapes add_chain,br_chain --bytes 8m --rounds 15
    Run(RunArgs),
    /// Count what a shape or any module executes, exactly (untimed counting run in wasmi).
    ///
    /// Examples: loopbench count br_chain --iters 1000; loopbench count app.wasm --invoke main 10
    Count(CountArgs),
    /// Price each primitive per engine: subtraction pairs and a non-negative least-squares fit over all shapes.
    ///
    /// Runs a session first (same options as `run`); --json writes the session and the models.
    Model(ModelArgs),
    /// Measure known effects (x% more loop iterations) to show the accuracy
    /// and the smallest effect this machine resolves, plus wasmi vs wasmi:fuel.
    ///
    /// Example: loopbench calibrate --repeat 10 --load 1 --json cal.json
    Calibrate(crate::calibrate::CalibrateArgs),
    /// Real applications (recipes in apps/): list, whole-app A/B, profile, projection, warm mode.
    ///
    /// Example: loopbench app run zlib --engines wasmi,tinywasm,wasm3
    App(crate::apps::cli::AppArgs),
}

#[derive(Args, Debug)]
pub struct ShapeParams {
    /// Working set in bytes (k/m/g suffixes; a power of two, at least 64k).
    #[arg(long, default_value = "8m", value_parser = crate::units::working_set)]
    pub bytes: u64,
    /// Override every shape's iteration count.
    #[arg(long)]
    pub iters: Option<u64>,
    /// Chain length K of add_chain / br_chain.
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub k: u32,
}

impl ShapeParams {
    fn params(&self) -> Params {
        Params {
            bytes: self.bytes,
            iters: self.iters,
            k: self.k,
        }
    }
}

#[derive(Args, Debug)]
pub struct ShowArgs {
    /// Shape name (see `loopbench list`).
    pub shape: String,
    #[command(flatten)]
    pub params: ShapeParams,
}

#[derive(Args, Debug)]
pub struct RunArgs {
    /// Arms, comma-separated: engine[:option,...], e.g. wasmi,wasmi:fuel,wasmtime:pulley;
    /// or builds run in worker processes: wasmi@0.31,wasmi@2 or
    /// tinywasm=path:../tinywasm+profile:lto (see `loopbench list`).
    #[arg(long, value_delimiter = ',')]
    pub engines: Vec<String>,
    /// The baseline arm (default: the first of --engines). Its second copy is the null control.
    #[arg(long)]
    pub baseline: Option<String>,
    /// Shapes, comma-separated, or `all` (default: all built-in shapes).
    #[arg(long, value_delimiter = ',')]
    pub shapes: Vec<String>,
    /// A user loop (.wat or .wasm) exporting run(iters), optionally setup(iters) and verify() -> i32.
    #[arg(long = "shape-file")]
    pub shape_files: Vec<PathBuf>,
    #[command(flatten)]
    pub params: ShapeParams,
    /// Measured rounds per shape (rounded up to a multiple of the arm count).
    #[arg(long, default_value_t = 12)]
    pub rounds: usize,
    /// Warm-up rounds per shape, run and verified but discarded.
    #[arg(long, default_value_t = 1)]
    pub warmup: usize,
    /// Write the session as JSON to FILE (`-` for stdout), rewritten after every shape.
    #[arg(long)]
    pub json: Option<String>,
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
}

/// Resolve `--shapes` and `--shape-file` into shapes, or say which names are valid.
pub fn select_shapes(names: &[String], files: &[PathBuf]) -> Result<Vec<Box<dyn Shape>>, Error> {
    let mut out: Vec<Box<dyn Shape>> = Vec::new();
    let all = names.is_empty() && files.is_empty() || names.iter().any(|n| n == "all");
    if all {
        out.extend(shapes::catalog());
    } else {
        for n in names {
            out.push(shapes::find(n).ok_or_else(|| {
                Error::Usage(format!(
                    "unknown shape `{n}` (valid: {}, all)",
                    shapes::names().join(", ")
                ))
            })?);
        }
    }
    for f in files {
        out.push(Box::new(UserShape::load(f)?));
    }
    Ok(out)
}

impl RunArgs {
    pub fn plan(&self) -> Result<Plan, Error> {
        let mut arms = if self.engines.is_empty() {
            EngineKind::defaults()
        } else {
            parse_arms(&self.engines)?
        };
        if let Some(b) = &self.baseline {
            let b: ArmSpec = b.parse().map_err(Error::Usage)?;
            arms.retain(|a| *a != b);
            arms.insert(0, b);
        }
        for (i, a) in arms.iter().enumerate() {
            if arms[..i].contains(a) {
                return Err(Error::Usage(format!(
                    "arm {a} is listed twice; the null control is added automatically"
                )));
            }
            if a.worker.is_some() {
                crate::workers::check(a).map_err(Error::Usage)?;
            } else if !a.engine.compiled_in() {
                return Err(Error::Usage(format!(
                    "{} is not compiled into this binary; rebuild with --features {}",
                    a.engine,
                    a.engine.feature()
                )));
            }
        }
        if self.rounds == 0 {
            return Err(Error::Usage("--rounds must be at least 1".into()));
        }
        Ok(Plan {
            shapes: select_shapes(&self.shapes, &self.shape_files)?,
            arms,
            params: self.params.params(),
            rounds: self.rounds,
            warmup: self.warmup,
            counters: CounterSet::none(),
        })
    }

    pub fn execute(&self) -> Result<bool, Error> {
        let mut plan = self.plan()?;
        if self.counters.wants(CounterKind::Callgrind) && callgrind::child_dir().is_none() {
            // Re-run this command under callgrind; the child prints the results.
            return match callgrind::reexec().map_err(Error::Usage)? {
                0 => Ok(true),
                1 => Ok(false),
                code => std::process::exit(code),
            };
        }
        plan.counters = CounterSet::resolve(&self.counters);
        for s in plan.counters.status() {
            if let Some(reason) = &s.reason {
                eprintln!("counters: {} unavailable: {reason}", s.counter);
            }
        }
        let json = self.json.as_deref().map(JsonTarget::parse);
        if let Some(j) = &json {
            j.check()?;
        }
        let quiet =
            self.quiet || json == Some(JsonTarget::Stdout) || !std::io::stderr().is_terminal();
        let mut sink = TerminalSink::new(quiet, json.clone());
        let started = Instant::now();
        let report = session::run(plan, &mut sink)?;
        sink.finish();
        match &json {
            Some(JsonTarget::Stdout) => crate::out!(
                "{}",
                String::from_utf8_lossy(&report::json::to_json(&report)?)
            ),
            Some(JsonTarget::File(p)) => {
                report::write_atomic(p, &report::json::to_json(&report)?)?;
                crate::out!("{}", report::table::render(&report));
            }
            None => crate::out!("{}", report::table::render(&report)),
        }
        if self.phases {
            let breakdown = crate::phases::take(started.elapsed());
            let text = breakdown.render();
            if json == Some(JsonTarget::Stdout) {
                eprint!("{text}");
            } else {
                crate::out!("{text}");
            }
        }
        for e in &report.errors {
            eprintln!("error: {e}");
        }
        Ok(report.errors.is_empty())
    }
}

/// Progress on stderr (after two seconds, only on a terminal) and the JSON
/// file rewritten after every shape.
struct TerminalSink {
    bar: ProgressBar,
    quiet: bool,
    started: Instant,
    shown: bool,
    json: Option<JsonTarget>,
}

impl TerminalSink {
    fn new(quiet: bool, json: Option<JsonTarget>) -> Self {
        let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::hidden());
        if let Ok(style) =
            ProgressStyle::with_template("{elapsed:>4} {bar:30} {pos}/{len} reps  {msg}")
        {
            bar.set_style(style);
        }
        TerminalSink {
            bar,
            quiet,
            started: Instant::now(),
            shown: false,
            json,
        }
    }
    fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

impl session::Sink for TerminalSink {
    fn shape_started(&mut self, shape: &str, reps: usize) {
        self.bar.set_position(0);
        self.bar.set_length(reps as u64);
        self.bar.set_message(shape.to_string());
    }
    fn shape_done(&mut self, report: &Report) -> Result<(), Error> {
        if let Some(JsonTarget::File(p)) = &self.json {
            report::write_atomic(p, &report::json::to_json(report)?)?;
        }
        Ok(())
    }
}

impl crate::schedule::Progress for TerminalSink {
    fn rep_done(&mut self) {
        self.bar.inc(1);
        if !self.quiet && !self.shown && self.started.elapsed() > Duration::from_secs(2) {
            self.shown = true;
            self.bar.set_draw_target(ProgressDrawTarget::stderr());
        }
    }
}

pub fn list() -> Result<bool, Error> {
    let p = Params::default();
    crate::outln!(
        "Shapes (declared per-iteration counts at --bytes {}, K = {}):",
        crate::units::format_bytes(p.bytes),
        p.k
    );
    crate::outln!(
        "  {:<20} {:>6} {:>6} {:>5} {:>6} {:>5} {:>6}  prices",
        "name",
        "ops",
        "taken",
        "loads",
        "stores",
        "calls",
        "bytes"
    );
    for s in shapes::catalog() {
        let d = s.declared(&p);
        let per = d.per.max(1) as f64;
        let f = |x: u64| {
            let v = x as f64 / per;
            if v.fract() == 0.0 {
                format!("{v:.0}")
            } else {
                format!("{v:.3}")
            }
        };
        crate::outln!(
            "  {:<20} {:>6} {:>6} {:>5} {:>6} {:>5} {:>6}  {}",
            s.name(),
            f(d.ops),
            f(d.taken_branches),
            f(d.loads),
            f(d.stores),
            f(d.calls),
            f(d.bytes),
            s.prices()
        );
    }
    crate::outln!();
    crate::outln!(
        "Engines (arm syntax: engine[:option,...]; the first arm or --baseline is the baseline):"
    );
    for k in EngineKind::ALL {
        let status = if k.compiled_in() {
            match ArmSpec::new(k).build() {
                Ok(e) => e.version(),
                Err(e) => e.to_string(),
            }
        } else {
            format!("not compiled in (rebuild with --features {})", k.feature())
        };
        crate::outln!("  {:<10} {status}", k.name());
        for (opt, what) in k.options() {
            crate::outln!("    {}:{opt:<12} {what}", k.name());
        }
    }
    crate::outln!();
    crate::out!("{}", crate::workers::help());
    Ok(true)
}

impl ShowArgs {
    pub fn execute(&self) -> Result<bool, Error> {
        let shape = shapes::find(&self.shape).ok_or_else(|| {
            Error::Usage(format!(
                "unknown shape `{}` (valid: {})",
                self.shape,
                shapes::names().join(", ")
            ))
        })?;
        let p = self.params.params();
        let d = shape.declared(&p);
        let iters = p.iters.unwrap_or_else(|| shape.default_iters(&p));
        crate::outln!(";; shape {}: {}", shape.name(), shape.prices());
        crate::outln!(
            ";; parameters: bytes = {}, K = {}, iterations = {iters}, linear memory = {}",
            crate::units::format_bytes(p.bytes),
            p.k,
            crate::units::format_bytes(shape.memory_bytes(&p))
        );
        crate::outln!(
            ";; declared per {} iteration(s): ops {}, taken branches {}, loads {}, stores {}, calls {}, bytes {}",
            d.per, d.ops, d.taken_branches, d.loads, d.stores, d.calls, d.bytes
        );
        crate::out!("{}", shape.wat(&p, Body::Enabled));
        Ok(true)
    }
}

#[derive(Args, Debug)]
pub struct CountArgs {
    /// A shape name, or a .wasm/.wat file (with --invoke).
    pub target: String,
    /// The export to call in a module file.
    #[arg(long)]
    pub invoke: Option<String>,
    /// Arguments for the export, parsed by its parameter types.
    #[arg(allow_negative_numbers = true)]
    pub args: Vec<String>,
    #[command(flatten)]
    pub params: ShapeParams,
    /// Stop a module file's call after this much wasmi fuel (default: no limit).
    #[arg(long)]
    pub fuel: Option<u64>,
    /// Write the counts as JSON to FILE (`-` for stdout).
    #[arg(long)]
    pub json: Option<String>,
}

#[derive(serde::Serialize)]
struct CountOutput<'a> {
    target: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    iters: Option<u64>,
    #[serde(flatten)]
    counts: &'a loopbench_count::Counts,
    #[serde(skip_serializing_if = "Option::is_none")]
    per_iter: Option<loopbench_count::PerIter>,
    #[serde(skip_serializing_if = "Option::is_none")]
    stopped: Option<String>,
}

impl CountArgs {
    pub fn execute(&self) -> Result<bool, Error> {
        use crate::count;
        let (counts, iters, stopped) = if let Some(shape) = shapes::find(&self.target) {
            if self.invoke.is_some() {
                return Err(Error::Usage(format!(
                    "`{}` is a shape; --invoke is for module files",
                    self.target
                )));
            }
            let module = shapes::ShapeModule::build(shape, &self.params.params())?;
            let inst = count::instrumented(&module.wasm)?;
            let counts = count::count_shape_once(&module, &inst, module.iters)?;
            (counts, Some(module.iters), None)
        } else {
            let path = std::path::Path::new(&self.target);
            if !path.exists() {
                return Err(Error::Usage(format!(
                    "`{}` is neither a shape (valid: {}) nor a file",
                    self.target,
                    shapes::names().join(", ")
                )));
            }
            let export = self
                .invoke
                .as_deref()
                .ok_or_else(|| Error::Usage("a module file needs --invoke EXPORT".into()))?;
            let wasm = load_module(path)?;
            let probe = crate::engines::counting::CountingInstance::new(&wasm, None)
                .map_err(|e| Error::Usage(format!("{}: {e}", self.target)))?;
            let (types, _) = probe
                .signature(export)
                .map_err(|e| Error::Usage(e.to_string()))?;
            let args = parse_values(export, &types, &self.args)?;
            let run = count::count_call(&wasm, export, &args, self.fuel)?;
            (run.counts, None, run.stopped)
        };
        let out = CountOutput {
            target: &self.target,
            iters,
            counts: &counts,
            per_iter: iters.map(|n| counts.per_iter(n)),
            stopped: stopped.clone(),
        };
        match self.json.as_deref().map(JsonTarget::parse) {
            Some(JsonTarget::Stdout) => {
                crate::out!("{}", String::from_utf8_lossy(&report::json::to_json(&out)?))
            }
            other => {
                if let Some(JsonTarget::File(p)) = other {
                    report::write_atomic(&p, &report::json::to_json(&out)?)?;
                }
                let title = match iters {
                    Some(n) => format!(
                        "{}: {n} iterations (exact counting run in wasmi)",
                        self.target
                    ),
                    None => format!(
                        "{} {}: exact counting run in wasmi",
                        self.target,
                        self.invoke.as_deref().unwrap_or("")
                    ),
                };
                crate::out!("{}", report::counts::render(&title, &counts, iters));
            }
        }
        if let Some(s) = stopped {
            eprintln!(
                "error: {} stopped early ({s}); the counts above are what executed up to there",
                self.target
            );
            return Ok(false);
        }
        Ok(true)
    }
}

/// Read a .wasm or .wat file into module bytes.
pub fn load_module(path: &std::path::Path) -> Result<Vec<u8>, Error> {
    let bytes =
        std::fs::read(path).map_err(|e| Error::io(format!("cannot read {}", path.display()), e))?;
    if bytes.starts_with(b"\0asm") {
        Ok(bytes)
    } else {
        wat::parse_bytes(&bytes)
            .map(|b| b.into_owned())
            .map_err(|e| {
                Error::Usage(format!(
                    "{}: malformed WAT: {}",
                    path.display(),
                    e.to_string().replace('\n', " ")
                ))
            })
    }
}

fn parse_values(
    export: &str,
    types: &[wasmi::ValType],
    args: &[String],
) -> Result<Vec<wasmi::Val>, Error> {
    use wasmi::{Val, ValType};
    if types.len() != args.len() {
        return Err(Error::Usage(format!(
            "export `{export}` takes {} argument(s) {types:?}, got {}",
            types.len(),
            args.len()
        )));
    }
    types
        .iter()
        .zip(args)
        .map(|(t, a)| {
            let bad = || {
                Error::Usage(format!(
                    "argument `{a}` is not a valid {t:?} for `{export}`"
                ))
            };
            Ok(match t {
                ValType::I32 => Val::I32(a.parse().map_err(|_| bad())?),
                ValType::I64 => Val::I64(a.parse().map_err(|_| bad())?),
                ValType::F32 => Val::F32(a.parse::<f32>().map_err(|_| bad())?.into()),
                ValType::F64 => Val::F64(a.parse::<f64>().map_err(|_| bad())?.into()),
                _ => {
                    return Err(Error::Usage(format!(
                        "export `{export}` takes a {t:?}, which the command line cannot pass"
                    )))
                }
            })
        })
        .collect()
}

#[derive(Args, Debug)]
pub struct ModelArgs {
    #[command(flatten)]
    pub run: RunArgs,
}

impl ModelArgs {
    pub fn execute(&self) -> Result<bool, Error> {
        let plan = self.run.plan()?;
        let json = self.run.json.as_deref().map(JsonTarget::parse);
        if let Some(j) = &json {
            j.check()?;
        }
        let quiet =
            self.run.quiet || json == Some(JsonTarget::Stdout) || !std::io::stderr().is_terminal();
        let mut sink = TerminalSink::new(quiet, None);
        let report = session::run(plan, &mut sink)?;
        sink.finish();
        let models = crate::model::build(&report);
        #[derive(serde::Serialize)]
        struct Out<'a> {
            schema: &'static str,
            session: &'a Report,
            models: &'a [crate::model::EngineModel],
        }
        let out = Out {
            schema: "loopbench-model/1",
            session: &report,
            models: &models,
        };
        match &json {
            Some(JsonTarget::Stdout) => {
                crate::out!("{}", String::from_utf8_lossy(&report::json::to_json(&out)?))
            }
            other => {
                if let Some(JsonTarget::File(p)) = other {
                    report::write_atomic(p, &report::json::to_json(&out)?)?;
                }
                crate::out!("{}", report::table::render(&report));
                crate::out!("{}", report::model::render(&models));
            }
        }
        for e in &report.errors {
            eprintln!("error: {e}");
        }
        Ok(report.errors.is_empty())
    }
}

impl Cli {
    pub fn execute(&self) -> Result<bool, Error> {
        match &self.command {
            Command::List => list(),
            Command::Show(a) => a.execute(),
            Command::Run(a) => a.execute(),
            Command::Count(a) => a.execute(),
            Command::Model(a) => a.execute(),
            Command::Calibrate(a) => a.execute(),
            Command::App(a) => a.execute(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_is_well_formed() {
        Cli::command().debug_assert();
    }
}
