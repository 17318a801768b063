//! `loopbench submit`: queue one job per machine label; the agents on
//! those machines run it.

use super::DbArg;
use crate::error::Error;
use crate::history::queue;
use clap::{Args, Parser};

#[derive(Args, Debug)]
pub struct SubmitArgs {
    #[command(flatten)]
    pub db: DbArg,
    /// Machine labels, comma-separated: one job for each (an agent runs with `--label`).
    #[arg(long, value_delimiter = ',', required = true)]
    pub machines: Vec<String>,
    /// What to run, after `--`: `run` and its arguments, exactly as each machine will run it.
    ///
    /// Example: loopbench submit --db postgres://... --machines epyc-2c,arm-4c -- run --engines wasmi,wasmi@0.31 --shapes add_chain
    #[arg(last = true, required = true, value_name = "run ARGS")]
    pub command: Vec<String>,
}

impl SubmitArgs {
    pub fn execute(&self) -> Result<bool, Error> {
        self.check()?;
        let location = self.db.location()?;
        let mut db = location.open()?;
        for label in &self.machines {
            let id = queue::submit(db.as_mut(), label, &self.command)?;
            crate::outln!(
                "job {id} queued for {label}: loopbench {}",
                self.command.join(" ")
            );
        }
        Ok(true)
    }

    /// The command must be a `run` this loopbench accepts, and leave the
    /// outputs to the agent: a bad job fails here, not on every machine.
    fn check(&self) -> Result<(), Error> {
        if let Some(l) = self.machines.iter().find(|l| l.trim().is_empty()) {
            return Err(Error::Usage(format!("--machines: empty label in `{l}`")));
        }
        if self.command.first().map(String::as_str) != Some("run") {
            return Err(Error::Usage(format!(
                "a job is `run ARGS...` after `--`, got `{}`",
                self.command.join(" ")
            )));
        }
        for own in [
            "--json",
            "--export",
            "--no-history",
            "--save-baseline",
            "--db",
        ] {
            if self
                .command
                .iter()
                .any(|a| a == own || a.starts_with(&format!("{own}=")))
            {
                return Err(Error::Usage(format!(
                    "{own} in a job: the agent stores each job's results in the database itself"
                )));
            }
        }
        let argv = std::iter::once("loopbench".to_string()).chain(self.command.iter().cloned());
        let cli = super::Cli::try_parse_from(argv).map_err(|e| {
            let text = e.to_string();
            let first = text
                .lines()
                .next()
                .unwrap_or("")
                .trim_start_matches("error: ");
            Error::Usage(format!("the job's `run` arguments: {first}"))
        })?;
        if let super::Command::Run(run) = &cli.command {
            run.plan()?;
        }
        Ok(())
    }
}
