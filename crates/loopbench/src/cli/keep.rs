//! What a measuring command (`run`, `app run`) keeps besides its output
//! files: the session in the history database, and the verdict of its
//! `--fail-on` gate. One piece of code, so that both keep alike.

use crate::error::Error;
use crate::report::Exports;
use crate::results::gate::FailOn;
use crate::results::{Document, Session};
use clap::Args;

/// The history and gate options of a measuring command.
#[derive(Args, Debug)]
pub struct KeepArgs {
    /// A CI gate: exit 1 when a candidate's outcome is "changed" in this
    /// direction by more than PCT: slower[:PCT], faster[:PCT] or
    /// changed[:PCT]. Unsure comparisons never fail it.
    #[arg(long, value_name = "DIRECTION[:PCT]", value_parser = clap::builder::ValueParser::new(|s: &str| s.parse::<FailOn>()))]
    pub fail_on: Option<FailOn>,
    /// Do not record the session in the history database.
    #[arg(long, conflicts_with = "save_baseline")]
    pub no_history: bool,
    /// Also name the recorded session as baseline NAME (then `@baseline:NAME`).
    #[arg(long, value_name = "NAME")]
    pub save_baseline: Option<String>,
    #[command(flatten)]
    pub db: super::DbArg,
}

/// The history a session is recorded in, opened before it runs.
pub struct Keeping<'a> {
    args: &'a KeepArgs,
    #[cfg(feature = "history")]
    history: Option<crate::history::Location>,
}

impl KeepArgs {
    /// Resolve and open the history now, as the output files are checked:
    /// a database that cannot record is refused before the first epoch,
    /// not after minutes of measuring.
    pub fn open(&self) -> Result<Keeping<'_>, Error> {
        #[cfg(feature = "history")]
        {
            let history = (!self.no_history).then(|| self.db.location()).transpose()?;
            if let Some(location) = &history {
                location.open()?;
            }
            Ok(Keeping {
                args: self,
                history,
            })
        }
        #[cfg(not(feature = "history"))]
        Ok(Keeping { args: self })
    }
}

impl Keeping<'_> {
    /// Judge the session by the gate, if one was asked for.
    pub fn judge(&self, session: &mut Session) {
        session.gate = self
            .args
            .fail_on
            .map(|rule| rule.judge(crate::results::gate::rows(session)));
    }

    /// Record the session; a failure is one of `errors`, and then a
    /// session saved nowhere else is saved where the line says.
    pub fn record(&self, document: &Document, exports: &Exports, errors: &mut Vec<String>) {
        #[cfg(feature = "history")]
        if let (Some(location), Some(session)) = (&self.history, document.session()) {
            match crate::history::sessions::record_run(
                location,
                session,
                self.args.save_baseline.as_deref(),
            ) {
                Ok(said) => crate::diag!("history: {said}"),
                Err(e) => {
                    errors.push(format!("history: {e}"));
                    if exports.written("json").is_none() {
                        crate::diag!("{}", crate::report::save_unrecorded(document));
                    }
                }
            }
        }
        #[cfg(not(feature = "history"))]
        let _ = (document, exports, errors);
    }
}

/// Whether the session's gate passed (no gate: it did), said in one line.
pub fn gate_passed(document: &Document) -> bool {
    match document.session().and_then(|s| s.gate.as_ref()) {
        Some(g) => {
            crate::diag!("{}", g.summary());
            !g.failed
        }
        None => true,
    }
}
