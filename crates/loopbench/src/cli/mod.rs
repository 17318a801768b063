//! The command line, and nothing but: one file per command, each a clap
//! struct with an `execute()` that validates its arguments into the
//! library's types, runs, and hands the result to the exporters. Nothing in
//! the library imports from here.

mod app;
mod calibrate;
mod compare;
mod count;
mod list;
mod model;
mod progress;
mod report;
mod run;
mod worker;

use crate::error::Error;
use crate::shapes::Params;
use clap::{Args, Parser, Subcommand};

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
    Show(list::ShowArgs),
    /// Run a session: shapes x arms, interleaved rounds, with a null control.
    ///
    /// Example: loopbench run --engines wasmi,tinywasm,wasm3 --baseline wasmi --shapes add_chain,br_chain --bytes 8m --rounds 15
    Run(run::RunArgs),
    /// Count what a shape or any module executes, exactly (untimed counting run in wasmi).
    ///
    /// Examples: loopbench count br_chain --iters 1000; loopbench count app.wasm --invoke main 10
    Count(count::CountArgs),
    /// Price each primitive per engine: subtraction pairs and a non-negative least-squares fit over all shapes.
    ///
    /// Runs a session first (same options as `run`); --json writes the session and the models.
    Model(model::ModelArgs),
    /// Measure known effects (x% more loop iterations) to show the accuracy
    /// and the smallest effect this machine resolves, plus wasmi vs wasmi:fuel.
    ///
    /// Example: loopbench calibrate --repeat 10 --load 1 --json cal.json
    Calibrate(calibrate::CalibrateArgs),
    /// Real applications (recipes in apps/): list, whole-app A/B, profile, projection, warm mode.
    ///
    /// Example: loopbench app run zlib --engines wasmi,tinywasm,wasm3
    App(app::AppArgs),
    /// Report a saved results file again, in any format (table, JSON, CSV, Markdown, HTML).
    ///
    /// Example: loopbench report session.json --html report.html --markdown -
    Report(report::ReportArgs),
    /// Compare two saved sessions: per shape and arm, B against A.
    ///
    /// Each side's unit is an epoch (a fresh process): its median ns/iter
    /// (with one epoch, the rounds). The interval is Welch's t on the
    /// difference of the mean logs, the two sessions treated as independent.
    /// This is weaker evidence than arms inside one session (the machine and
    /// its state changed in between, no null control spans both), and the
    /// output says so, louder when the machine fingerprints differ.
    ///
    /// Example: loopbench compare before.json after.json --markdown -
    Compare(compare::CompareArgs),
    /// Serve an engine of this binary to a session (started by `run`).
    #[command(hide = true)]
    Worker(worker::WorkerArgs),
}

/// Where results go, shared by every command that produces them.
#[derive(Args, Debug, Default)]
pub struct OutputArgs {
    /// Write the results as JSON to FILE (`-` for stdout), rewritten after every shape.
    #[arg(long, value_name = "FILE")]
    pub json: Option<String>,
    /// Write one row per timed rep as CSV to FILE (`-` for stdout).
    #[arg(long, value_name = "FILE")]
    pub csv: Option<String>,
    /// Write a Markdown report (for a pull request) to FILE (`-` for stdout).
    #[arg(long, value_name = "FILE")]
    pub markdown: Option<String>,
    /// Write a self-contained HTML report with plots to FILE (`-` for stdout).
    #[arg(long, value_name = "FILE")]
    pub html: Option<String>,
    /// Write the results in another format: FORMAT=FILE (`-` for stdout);
    /// repeat for more. Formats: table, json, csv, markdown, html.
    #[arg(long, value_name = "FORMAT=FILE")]
    pub export: Vec<String>,
}

impl OutputArgs {
    /// The export manager for these options (the table goes to stdout
    /// unless another format takes it), checked before any work.
    pub fn exports(&self) -> Result<crate::report::Exports, Error> {
        use crate::report::{Exports, Target};
        let mut requested: Vec<(&str, Target)> = Vec::new();
        for (format, file) in [
            ("json", &self.json),
            ("csv", &self.csv),
            ("markdown", &self.markdown),
            ("html", &self.html),
        ] {
            if let Some(f) = file {
                requested.push((format, Target::parse(f)));
            }
        }
        for e in &self.export {
            let (format, path) = e.split_once('=').ok_or_else(|| {
                Error::Usage(format!(
                    "--export `{e}`: expected FORMAT=FILE, e.g. json=session.json"
                ))
            })?;
            requested.push((format, Target::parse(path)));
        }
        let mut exports = Exports::new(&requested)?;
        exports.check()?;
        Ok(exports)
    }
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
    pub fn params(&self) -> Params {
        Params {
            bytes: self.bytes,
            iters: self.iters,
            k: self.k,
        }
    }
}

impl Cli {
    pub fn execute(&self) -> Result<bool, Error> {
        match &self.command {
            Command::List => list::list(),
            Command::Show(a) => a.execute(),
            Command::Run(a) => a.execute(),
            Command::Count(a) => a.execute(),
            Command::Model(a) => a.execute(),
            Command::Calibrate(a) => a.execute(),
            Command::App(a) => a.execute(),
            Command::Report(a) => a.execute(),
            Command::Compare(a) => a.execute(),
            Command::Worker(a) => a.execute(),
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
