//! `loopbench compare A B`: two saved sessions, B against A.

use super::OutputArgs;
use crate::error::Error;
use crate::results::{self, compare, Document, Session};
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
        let a = load_session(&self.a)?;
        let b = load_session(&self.b)?;
        let c = compare::compare(&a, &self.a, &b, &self.b);
        // The warnings go to stderr too, where they are seen even when the
        // report goes to a file.
        for w in &c.warnings {
            crate::diag!("warning: {w}");
        }
        exports.finish(&Document::Compare(c))?;
        Ok(true)
    }
}

/// A session named on the command line (here, not in `results`, which
/// the history database itself builds on): a
/// stored session of the history database (`@last`, `@baseline:NAME`,
/// `@ID`; the database of `LOOPBENCH_DB`, else the default one), or a saved
/// session (or the session inside a model document) at path `arg`.
pub fn load_session(arg: &str) -> Result<Session, Error> {
    #[cfg(feature = "history")]
    if let Some(s) = crate::history::load_reference(arg, None)? {
        return Ok(s);
    }
    #[cfg(not(feature = "history"))]
    if arg.starts_with('@') {
        return Err(Error::Usage(format!(
            "{arg}: stored sessions need the history feature; rebuild with --features history"
        )));
    }
    match results::read(std::path::Path::new(arg))? {
        Document::Session(s) => Ok(s),
        Document::Model(m) => Ok(m.session),
        other => Err(Error::Usage(format!(
            "{arg}: a {} document, not a session",
            other.kind()
        ))),
    }
}
