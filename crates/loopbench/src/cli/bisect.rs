//! `loopbench bisect`: the first revision between a good and a bad one
//! whose cost changed, every step an in-session comparison against the
//! good revision. This file parses and checks the options; the bisect is
//! run by [`crate::bisect::drive`] ([`crate::bisect`] judges,
//! `bisect::store` keeps the steps so that a bisect run again goes on
//! where it stopped).

use super::DbArg;
use crate::bisect::drive::Subject;
use crate::error::Error;
use clap::{Args, Parser};
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct BisectArgs {
    /// The engine's repository, as an arm without a revision:
    /// ENGINE=git:DIR[+SETTING...][:OPTION,...], e.g. wasmi=git:../wasmi.
    #[arg(long)]
    pub engine: String,
    /// A revision without the change (a commit, tag or branch).
    #[arg(long)]
    pub good: String,
    /// A later revision with it; good must be an ancestor of bad.
    #[arg(long)]
    pub bad: String,
    /// Shapes that show the change, comma-separated.
    #[arg(
        long,
        value_delimiter = ',',
        required_unless_present = "app",
        conflicts_with = "app"
    )]
    pub shapes: Vec<String>,
    /// Or your own workload: WASI command modules (FILE.wasm, a directory
    /// of them, or a suite laid out as Sightglass's benchmarks/), each step
    /// an `app run` of them; its options (--arg, --env, --fuel,
    /// --layout-builds, ...) go after `--`.
    ///
    /// Example: loopbench bisect --engine wasmi=git:../wasmi --good v0.40.0 --bad main --app ../sightglass/benchmarks/bz2/benchmark.wasm
    #[arg(long, value_delimiter = ',', value_name = "FILE|DIR")]
    pub app: Vec<String>,
    /// `none` judges wall time (intervals across epochs); `callgrind`
    /// judges exact instruction counts, one rep per revision.
    #[arg(long, value_enum, default_value_t = Counters::None)]
    pub counters: Counters,
    /// The endpoint step's precision, percent: bad is "unchanged" against
    /// good when its interval lies inside +-PCT. Midpoints are judged at
    /// half the change found between the endpoints.
    #[arg(long, default_value_t = 1.0, value_name = "PCT")]
    pub precision: f64,
    /// Seconds each shape may take per step; the stop rule adds epochs
    /// while a comparison is unsure, up to this.
    #[arg(long, default_value_t = 30.0, value_name = "SECONDS")]
    pub budget: f64,
    /// Measure at most this many steps now, then stop (run the same
    /// command again to go on).
    #[arg(long, value_name = "N")]
    pub max_steps: Option<usize>,
    /// Write the bisect (every step, the result) as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    #[command(flatten)]
    pub db: DbArg,
    /// Further `run` (with --app: `app run`) options for every step's
    /// session, after `--` (e.g. -- --layout-builds 1 --rep-ms 5).
    #[arg(last = true, value_name = "RUN OPTIONS")]
    pub run_args: Vec<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Counters {
    None,
    Callgrind,
}

/// Options of a step's session that bisect sets itself.
const SET_BY_BISECT: [&str; 8] = [
    "--engines",
    "--shapes",
    "--json",
    "--no-history",
    "--counters",
    "--db",
    "--precision",
    "--budget",
];

impl BisectArgs {
    /// Everything checked before the plan: bisect's own options, and the
    /// step's command parsed as the step will run it, so that a wrong
    /// option after `--` is one line now, not a failed first step.
    fn check(&self) -> Result<Subject, Error> {
        super::run::check_precision(self.precision)?;
        super::run::check_budget(self.budget)?;
        if self.max_steps == Some(0) {
            return Err(Error::Usage("--max-steps must be at least 1".into()));
        }
        if let Some(a) = self.run_args.iter().find(|a| {
            SET_BY_BISECT
                .iter()
                .any(|o| a.as_str() == *o || a.starts_with(&format!("{o}=")))
        }) {
            let own = match a.split('=').next() {
                Some(o @ ("--precision" | "--budget")) => format!(" (give bisect's own {o})"),
                _ => String::new(),
            };
            return Err(Error::Usage(format!(
                "`{a}` after `--`: bisect sets it for every step itself{own}"
            )));
        }
        let step: Vec<String> = if self.app.is_empty() {
            for s in &self.shapes {
                crate::shapes::select(std::slice::from_ref(s), &[])?;
            }
            vec!["run".into(), "--shapes".into(), self.shapes.join(",")]
        } else {
            if self.counters == Counters::Callgrind {
                return Err(Error::Usage(
                    "--counters callgrind with --app: app run counts instructions in one process, where a revision's build cannot run; bisect an app by time".into(),
                ));
            }
            if let Some(recipe) = self.app.iter().find(|a| !crate::apps::workload::is_path(a)) {
                return Err(Error::Usage(format!(
                    "--app {recipe}: bisect steps through WASI command modules (a .wasm file or a directory of them), which it keys by their identity; a recipe has none yet: time it on two revisions with `app run {recipe} --engines A,B`"
                )));
            }
            vec!["app".into(), "run".into(), self.app.join(",")]
        };
        let argv = std::iter::once("loopbench".to_string())
            .chain(step)
            .chain(self.run_args.iter().cloned());
        let parsed = super::Cli::try_parse_from(argv).map_err(|e| {
            let text = e.to_string();
            let first = text.lines().next().unwrap_or_default();
            Error::Usage(format!(
                "after `--`: {}",
                first.trim_start_matches("error: ")
            ))
        })?;
        Ok(match parsed.command {
            super::Command::App(super::app::AppArgs {
                command: super::app::AppCommand::Run(run),
            }) => Subject::Commands {
                paths: self.app.clone(),
                invocation: run.workload.invocation()?,
            },
            _ => Subject::Shapes(self.shapes.clone()),
        })
    }

    pub fn execute(&self) -> Result<bool, Error> {
        let subject = self.check()?;
        crate::bisect::drive::run(&crate::bisect::drive::Options {
            engine: self.engine.clone(),
            good: self.good.clone(),
            bad: self.bad.clone(),
            subject,
            exact: self.counters == Counters::Callgrind,
            precision: self.precision,
            budget: self.budget,
            max_steps: self.max_steps,
            json: self.json.clone(),
            db: self.db.db.clone(),
            run_args: self.run_args.clone(),
        })
    }
}
