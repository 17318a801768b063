//! `loopbench compare A B`: two saved sessions, B against A.

use super::OutputArgs;
use crate::error::Error;
use crate::results::{self, compare, Document};
use clap::Args;

#[derive(Args, Debug)]
pub struct CompareArgs {
    /// The earlier (reference) session: a saved JSON file, or a stored
    /// session: @last, @baseline:NAME, @ID (the database of LOOPBENCH_DB, else the default).
    pub a: String,
    /// The later session, compared against A.
    pub b: String,
    #[command(flatten)]
    pub output: OutputArgs,
}

impl CompareArgs {
    pub fn execute(&self) -> Result<bool, Error> {
        let exports = self.output.exports()?;
        let a = results::load_session(&self.a)?;
        let b = results::load_session(&self.b)?;
        let c = compare::compare(&a, &self.a, &b, &self.b);
        // The warnings go to stderr too, where they are seen even when the
        // report goes to a file.
        for w in &c.warnings {
            eprintln!("warning: {w}");
        }
        exports.finish(&Document::Compare(c))?;
        Ok(true)
    }
}
