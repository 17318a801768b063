//! `loopbench submit`: queue one job per machine label; the agents on
//! those machines run it.

use super::DbArg;
use crate::error::Error;
use crate::history::queue;
use clap::Args;

#[derive(Args, Debug)]
pub struct SubmitArgs {
    #[command(flatten)]
    pub db: DbArg,
    /// Machine labels, comma-separated: one job for each (an agent runs with `--label`).
    #[arg(long, value_delimiter = ',', required = true)]
    pub machines: Vec<String>,
    /// What to run, after `--`: `run` and its arguments, as each machine will run it.
    /// Outputs, --db and +rustflags: are refused; --shape-file files are read here
    /// and travel in the job.
    ///
    /// Example: loopbench submit --db postgres://... --machines epyc-2c,arm-4c -- run --engines wasmi,wasmi@0.31 --shapes add_chain
    #[arg(last = true, required = true, value_name = "run ARGS")]
    pub command: Vec<String>,
}

impl SubmitArgs {
    pub fn execute(&self) -> Result<bool, Error> {
        for label in &self.machines {
            super::job::check_name("--machines", label)?;
        }
        // A bad job fails here, not on every machine; the agents check it
        // again themselves (see `job`).
        let work = super::job::pack(&self.command)?;
        let location = self.db.location()?;
        let mut db = location.open()?;
        for label in &self.machines {
            let id = queue::submit(db.as_mut(), label, &work)?;
            crate::outln!(
                "job {id} queued for {label}: loopbench {}",
                work.args.join(" ")
            );
        }
        Ok(true)
    }
}
