//! `loopbench bisect`: the first revision between a good and a bad one
//! whose cost changed, every step an in-session comparison against the
//! good revision. This file parses and checks the options; the bisect is
//! run by [`crate::bisect::drive`] ([`crate::bisect`] judges,
//! `bisect::store` keeps the steps so that a bisect run again goes on
//! where it stopped).

use super::DbArg;
use crate::error::Error;
use clap::Args;
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
    #[arg(long, value_delimiter = ',', required = true)]
    pub shapes: Vec<String>,
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
    /// Further `run` options for every step's session, after `--`
    /// (e.g. -- --layout-builds 1 --rep-ms 5).
    #[arg(last = true, value_name = "RUN OPTIONS")]
    pub run_args: Vec<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Counters {
    None,
    Callgrind,
}

impl BisectArgs {
    fn check(&self) -> Result<(), Error> {
        if !(self.precision > 0.0 && self.precision.is_finite()) {
            return Err(Error::Usage(
                "--precision must be a positive percentage".into(),
            ));
        }
        super::run::check_budget(self.budget)?;
        if self.max_steps == Some(0) {
            return Err(Error::Usage("--max-steps must be at least 1".into()));
        }
        for s in &self.shapes {
            crate::shapes::select(std::slice::from_ref(s), &[])?;
        }
        if let Some(a) = self.run_args.iter().find(|a| {
            matches!(
                a.as_str(),
                "--engines" | "--shapes" | "--json" | "--no-history" | "--counters" | "--db"
            ) || a.starts_with("--engines=")
                || a.starts_with("--shapes=")
                || a.starts_with("--counters=")
        }) {
            return Err(Error::Usage(format!(
                "`{a}` after `--`: bisect sets it for every step itself"
            )));
        }
        Ok(())
    }

    pub fn execute(&self) -> Result<bool, Error> {
        self.check()?;
        crate::bisect::drive::run(&crate::bisect::drive::Options {
            engine: self.engine.clone(),
            good: self.good.clone(),
            bad: self.bad.clone(),
            shapes: self.shapes.clone(),
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
