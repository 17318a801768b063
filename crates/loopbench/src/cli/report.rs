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
        let exports = self.output.exports_reading(&[&self.file])?;
        let doc = crate::results::read(&self.file)?;
        exports.finish(&doc)?;
        Ok(true)
    }
}
