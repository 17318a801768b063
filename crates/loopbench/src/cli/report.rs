//! `loopbench report FILE`: any saved document again, in any format.

use super::OutputArgs;
use crate::error::Error;
use clap::Args;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct ReportArgs {
    /// A saved results file (the JSON of run, model, calibrate, count, compare or app).
    pub file: PathBuf,
    #[command(flatten)]
    pub output: OutputArgs,
}

impl ReportArgs {
    pub fn execute(&self) -> Result<bool, Error> {
        let doc = crate::results::read(&self.file)?;
        self.output.exports()?.finish(&doc)?;
        Ok(true)
    }
}
