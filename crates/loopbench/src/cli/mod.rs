//! The command line, and nothing but: one file per command, each a clap
//! struct with an `execute()` that validates its arguments into the
//! library's types, runs, and hands the result to the exporters. Nothing in
//! the library imports from here.

#[cfg(feature = "history")]
mod agent;
#[cfg(feature = "history")]
mod alerts;
mod app;
#[cfg(feature = "history")]
mod bisect;
mod cache;
mod calibrate;
mod compare;
mod count;
#[cfg(feature = "history")]
mod db;
#[cfg(feature = "history")]
mod history;
#[cfg(feature = "history")]
mod job;
#[cfg(feature = "history")]
mod jobs;
mod keep;
#[cfg(feature = "history")]
mod leaderboard;
mod list;
mod model;
mod noise;
mod progress;
mod replay;
mod report;
mod run;
#[cfg(feature = "history")]
mod submit;
#[cfg(feature = "history")]
mod track;
#[cfg(feature = "history")]
mod trend;
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
    /// Compare two saved sessions: per shape and arm, B against A, each row
    /// changed, unchanged or unsure.
    ///
    /// Each side's unit is an epoch (a fresh process): its median ns/iter
    /// (with one epoch, the rounds), or, when both sessions measured the same
    /// --reference, each epoch's ratio to it (anchored). Without a shared
    /// reference the interval also holds the spread of this machine's
    /// repeated sessions from the history, and with no such history the row
    /// is unsure and says how to make it sure. --fail-on makes it a CI gate.
    ///
    /// Example: loopbench compare before.json after.json --fail-on slower:2 --markdown -
    Compare(compare::CompareArgs),
    /// Measure this machine's noise level by level (rep, round, epoch,
    /// session) across a sweep of rep lengths, and the smallest change a
    /// session of the budget would find at each.
    ///
    /// Example: loopbench noise --engine wasmi --shape add_chain --rep-ms 0.05,0.2,1,5 --json noise.json
    Noise(noise::NoiseArgs),
    /// Prove estimators on recorded noise: inject known effects into a session's null control.
    ///
    /// Reads the per-rep CSV of `run --csv` (gzip too), multiplies the null
    /// arm's reps by 1 + effect, resamples epochs and reports each
    /// estimator's coverage, interval half-width and detection rate.
    ///
    /// Example: loopbench replay reps.csv.gz --effects 0,0.01,0.05 --estimators all --resamples 400
    Replay(replay::ReplayArgs),
    /// Sessions and series stored in the history database; `history import FILE` stores saved JSON.
    ///
    /// Example: loopbench history --shape load_stream --arm wasmi
    #[cfg(feature = "history")]
    History(history::HistoryArgs),
    /// A series per machine, shape, arm and metric, its changes flagged
    /// against the series' own recent changes.
    ///
    /// Example: loopbench trend --shape load_stream --arm wasmi
    #[cfg(feature = "history")]
    Trend(trend::TrendArgs),
    /// The history database itself: `db init` creates or upgrades its schema.
    #[cfg(feature = "history")]
    Db(db::DbArgs),
    /// Queue a `run` for machines of a fleet: one job per machine label.
    ///
    /// Example: loopbench submit --db postgres://host/bench --machines epyc-2c,arm-4c -- run --engines wasmi,tinywasm
    #[cfg(feature = "history")]
    Submit(submit::SubmitArgs),
    /// Take and run the fleet's jobs for this machine's label, storing each session.
    ///
    /// Example: loopbench agent --db postgres://host/bench --label epyc-2c
    #[cfg(feature = "history")]
    Agent(agent::AgentArgs),
    /// The fleet's jobs: queued, running (agent, last heartbeat), done, failed.
    #[cfg(feature = "history")]
    Jobs(jobs::JobsArgs),
    /// Engines x shapes x machines from the history database, with intervals (HTML, Markdown).
    ///
    /// Example: loopbench leaderboard --db postgres://host/bench --html board.html --markdown board.md
    #[cfg(feature = "history")]
    Leaderboard(leaderboard::LeaderboardArgs),
    /// The first revision between a good and a bad one whose cost changed:
    /// every step one session of a revision against good, decided
    /// good / bad / unsure (epochs added while unsure); resumable.
    ///
    /// Example: loopbench bisect --engine wasmi=git:../wasmi --good v1.0.0 --bad main --shapes add_chain --counters callgrind
    #[cfg(feature = "history")]
    Bisect(bisect::BisectArgs),
    /// Follow an engine's branch over time against a reference arm: `track add`, `track run`, `track list`.
    ///
    /// Example: loopbench track add wasmi-main --engine wasmi=git:../wasmi#main --reference wasmi@=2.0.0 --shapes add_chain --label epyc-2c --every 24h
    #[cfg(feature = "history")]
    Track(track::TrackArgs),
    /// The alerts of the tracks: each flagged step of an anchored series, with its commit range.
    ///
    /// Example: loopbench alerts --track wasmi-main --markdown
    #[cfg(feature = "history")]
    Alerts(alerts::AlertsArgs),
    /// The worker cache: its size, its builds and relinks and when each was
    /// last used; prune it by age, count or size.
    ///
    /// Example: loopbench cache --max-size 2g
    Cache(cache::CacheArgs),
    /// Serve an engine of this binary to a session (started by `run`).
    #[command(hide = true)]
    Worker(worker::WorkerArgs),
}

/// Where results go, shared by every command that produces them.
#[derive(Args, Debug, Default)]
pub struct OutputArgs {
    /// Write the results as JSON to FILE (`-` for stdout), rewritten after
    /// every shape. In a file, every rep goes to a compressed file beside it
    /// (FILE.json -> FILE.reps.json.gz), which `report`, `compare` and the
    /// other readers put back; keep the two together.
    #[arg(long, value_name = "FILE")]
    pub json: Option<String>,
    /// Keep every rep inline in the --json file (one file, about ten times
    /// larger) rather than beside it.
    #[arg(long)]
    pub json_reps: bool,
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
    /// The terminal report in full: under every shape its floors, how its
    /// intervals were made and why it stopped, layout spreads and counters
    /// per op (by default one line per shape and arm and a summary).
    #[arg(long)]
    pub verbose: bool,
}

impl OutputArgs {
    /// The export manager for these options (the table goes to stdout
    /// unless another format takes it), checked before any work.
    pub fn exports(&self) -> Result<crate::report::Exports, Error> {
        self.exports_reading(&[])
    }

    /// [`OutputArgs::exports`] of a command that reads `inputs`: an output
    /// that is one of them (the same file, whatever its name) is refused.
    pub fn exports_reading(
        &self,
        inputs: &[&std::path::Path],
    ) -> Result<crate::report::Exports, Error> {
        use crate::report::{Exports, Target};
        let mut requested: Vec<(&str, Target)> = Vec::new();
        for (format, file) in [
            ("json", &self.json),
            ("csv", &self.csv),
            ("markdown", &self.markdown),
            ("html", &self.html),
        ] {
            if let Some(f) = file {
                if f.is_empty() {
                    return Err(Error::Usage(format!(
                        "--{format} \"\": the file name is empty (`-` is stdout)"
                    )));
                }
                requested.push((format, Target::parse(f)));
            }
        }
        for e in &self.export {
            let (format, path) = e.split_once('=').ok_or_else(|| {
                Error::Usage(format!(
                    "--export `{e}`: expected FORMAT=FILE, e.g. json=session.json"
                ))
            })?;
            if path.is_empty() {
                return Err(Error::Usage(format!(
                    "--export `{e}`: the file name is empty (`-` is stdout)"
                )));
            }
            requested.push((format, Target::parse(path)));
        }
        let mut exports = Exports::new(&requested)?;
        if self.verbose {
            exports.verbose_table();
        }
        if self.json_reps {
            exports.keep_parts_inline();
        }
        exports.check()?;
        exports.refuse_inputs(inputs)?;
        Ok(exports)
    }
}

/// The most rounds (or warm-up rounds) an epoch may be asked for: an epoch
/// stops at its `--budget` long before, and a count near the integer's
/// limit wrapped to no rounds at all when rounded up to whole designs.
pub const MAX_ROUNDS: usize = 1_000_000_000;

/// `--rounds` and `--warmup` as clap parses them, at most [`MAX_ROUNDS`].
pub fn rounds_count(s: &str) -> Result<usize, String> {
    let n: usize = s.parse().map_err(|e| format!("{e}"))?;
    if n > MAX_ROUNDS {
        return Err(format!(
            "at most {MAX_ROUNDS} (an epoch stops at its --budget long before)"
        ));
    }
    Ok(n)
}

/// Where the history database is, shared by every command that uses it.
#[derive(Args, Debug, Default)]
pub struct DbArg {
    /// The history database: a SQLite file or a postgres:// URL (default:
    /// $LOOPBENCH_DB, else history.sqlite in the user's data directory).
    #[arg(long, value_name = "PATH|URL")]
    pub db: Option<String>,
}

#[cfg(feature = "history")]
impl DbArg {
    pub fn location(&self) -> Result<crate::history::Location, Error> {
        Ok(crate::history::Location::resolve(self.db.as_deref())?)
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
            Command::Noise(a) => a.execute(),
            Command::Replay(a) => a.execute(),
            #[cfg(feature = "history")]
            Command::History(a) => a.execute(),
            #[cfg(feature = "history")]
            Command::Trend(a) => a.execute(),
            #[cfg(feature = "history")]
            Command::Db(a) => a.execute(),
            #[cfg(feature = "history")]
            Command::Submit(a) => a.execute(),
            #[cfg(feature = "history")]
            Command::Agent(a) => a.execute(),
            #[cfg(feature = "history")]
            Command::Jobs(a) => a.execute(),
            #[cfg(feature = "history")]
            Command::Leaderboard(a) => a.execute(),
            #[cfg(feature = "history")]
            Command::Bisect(a) => a.execute(),
            #[cfg(feature = "history")]
            Command::Track(a) => a.execute(),
            #[cfg(feature = "history")]
            Command::Alerts(a) => a.execute(),
            Command::Cache(a) => a.execute(),
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
