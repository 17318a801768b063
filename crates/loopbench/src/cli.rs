//! The command line: one struct per subcommand, each with `execute()`.
//! Raw arguments are validated into a [`Plan`] before any work starts.

use crate::engines::{ArmSpec, EngineKind};
use crate::error::Error;
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
        Params { bytes: self.bytes, iters: self.iters, k: self.k }
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
    /// Arms, comma-separated: engine[:option,...], e.g. wasmi,wasmi:fuel,wasmtime:pulley.
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
}

pub fn parse_arms(list: &[String]) -> Result<Vec<ArmSpec>, Error> {
    list.iter().map(|s| s.parse::<ArmSpec>().map_err(Error::Usage)).collect()
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
                Error::Usage(format!("unknown shape `{n}` (valid: {}, all)", shapes::names().join(", ")))
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
        let mut arms = if self.engines.is_empty() { EngineKind::defaults() } else { parse_arms(&self.engines)? };
        if let Some(b) = &self.baseline {
            let b: ArmSpec = b.parse().map_err(Error::Usage)?;
            arms.retain(|a| *a != b);
            arms.insert(0, b);
        }
        for (i, a) in arms.iter().enumerate() {
            if arms[..i].contains(a) {
                return Err(Error::Usage(format!("arm {a} is listed twice; the null control is added automatically")));
            }
            if !a.engine.compiled_in() {
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
        })
    }

    pub fn execute(&self) -> Result<bool, Error> {
        let plan = self.plan()?;
        let json = self.json.as_deref().map(JsonTarget::parse);
        if let Some(j) = &json {
            j.check()?;
        }
        let quiet = self.quiet || json == Some(JsonTarget::Stdout) || !std::io::stderr().is_terminal();
        let mut sink = TerminalSink::new(quiet, json.clone());
        let report = session::run(plan, &mut sink)?;
        sink.finish();
        match &json {
            Some(JsonTarget::Stdout) => print!("{}", String::from_utf8_lossy(&report::json::to_json(&report)?)),
            Some(JsonTarget::File(p)) => {
                report::write_atomic(p, &report::json::to_json(&report)?)?;
                print!("{}", report::table::render(&report));
            }
            None => print!("{}", report::table::render(&report)),
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
        if let Ok(style) = ProgressStyle::with_template("{elapsed:>4} {bar:30} {pos}/{len} reps  {msg}") {
            bar.set_style(style);
        }
        TerminalSink { bar, quiet, started: Instant::now(), shown: false, json }
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
    println!("Shapes (declared per-iteration counts at --bytes {}, K = {}):", crate::units::format_bytes(p.bytes), p.k);
    println!("  {:<20} {:>6} {:>6} {:>5} {:>6} {:>5} {:>6}  prices", "name", "ops", "taken", "loads", "stores", "calls", "bytes");
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
        println!(
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
    println!();
    println!("Engines (arm syntax: engine[:option,...]; the first arm or --baseline is the baseline):");
    for k in EngineKind::ALL {
        let status = if k.compiled_in() {
            match (ArmSpec { engine: k, options: Vec::new() }).build() {
                Ok(e) => e.version(),
                Err(e) => e.to_string(),
            }
        } else {
            format!("not compiled in (rebuild with --features {})", k.feature())
        };
        println!("  {:<10} {status}", k.name());
        for (opt, what) in k.options() {
            println!("    {}:{opt:<12} {what}", k.name());
        }
    }
    Ok(true)
}

impl ShowArgs {
    pub fn execute(&self) -> Result<bool, Error> {
        let shape = shapes::find(&self.shape).ok_or_else(|| {
            Error::Usage(format!("unknown shape `{}` (valid: {})", self.shape, shapes::names().join(", ")))
        })?;
        let p = self.params.params();
        let d = shape.declared(&p);
        let iters = p.iters.unwrap_or_else(|| shape.default_iters(&p));
        println!(";; shape {}: {}", shape.name(), shape.prices());
        println!(
            ";; parameters: bytes = {}, K = {}, iterations = {iters}, linear memory = {}",
            crate::units::format_bytes(p.bytes),
            p.k,
            crate::units::format_bytes(shape.memory_bytes(&p))
        );
        println!(
            ";; declared per {} iteration(s): ops {}, taken branches {}, loads {}, stores {}, calls {}, bytes {}",
            d.per, d.ops, d.taken_branches, d.loads, d.stores, d.calls, d.bytes
        );
        print!("{}", shape.wat(&p, Body::Enabled));
        Ok(true)
    }
}

impl Cli {
    pub fn execute(&self) -> Result<bool, Error> {
        match &self.command {
            Command::List => list(),
            Command::Show(a) => a.execute(),
            Command::Run(a) => a.execute(),
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
