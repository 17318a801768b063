//! `loopbench run`: options validated into a [`Plan`], the session, then
//! every requested export.

use super::progress::TerminalSink;
use super::{OutputArgs, ShapeParams};
use crate::engines::{ArmSpec, EngineKind};
use crate::error::Error;
use crate::measure::callgrind;
use crate::measure::counters::{CounterChoice, CounterKind, CounterSet};
use crate::results::Document;
use crate::session::{self, Plan};
use crate::shapes;
use clap::Args;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::Instant;

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
}

pub fn parse_arms(list: &[String]) -> Result<Vec<ArmSpec>, Error> {
    list.iter()
        .map(|s| s.parse::<ArmSpec>().map_err(Error::Usage))
        .collect()
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
                crate::build::check(a).map_err(Error::Usage)?;
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
            shapes: shapes::select(&self.shapes, &self.shape_files)?,
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
        let exports = self.output.exports()?;
        let quiet = self.quiet || exports.stdout_is_data() || !std::io::stderr().is_terminal();
        let mut sink = TerminalSink::new(quiet, Some(&exports));
        let started = Instant::now();
        let report = session::run(plan, &mut sink)?;
        sink.finish();
        let errors = report.errors.clone();
        exports.finish(&Document::Session(report))?;
        if self.phases {
            let breakdown = crate::phases::take(started.elapsed());
            let text = breakdown.render();
            if exports.stdout_is_data() {
                eprint!("{text}");
            } else {
                crate::out!("{text}");
            }
        }
        for e in &errors {
            eprintln!("error: {e}");
        }
        Ok(errors.is_empty())
    }
}
