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
        let mut exports = self.output.exports_reading(&[&self.file])?;
        // Files asked for are the answer: a line each, not the table too
        // (unless --verbose asks for the table).
        let files_only = !self.output.verbose && exports.files_only();
        let doc = crate::results::read(&self.file)?;
        exports.finish(&doc)?;
        if files_only {
            for (format, path) in exports.files() {
                let size = std::fs::metadata(path)
                    .ok()
                    .filter(|m| m.is_file())
                    .map(|m| format!(", {}", crate::units::format_bytes(m.len())))
                    .unwrap_or_default();
                crate::outln!("wrote {} ({format}{size})", path.display());
            }
        }
        Ok(true)
    }
}
