//! `loopbench compare A B`: two saved sessions, B against A.

use super::OutputArgs;
use crate::error::Error;
use crate::results::gate::{FailOn, Judged};
use crate::results::{self, compare, Document, Session};
use crate::stats::sessions::Between;
use clap::Args;
use std::path::Path;

#[derive(Args, Debug)]
pub struct CompareArgs {
    /// The earlier (reference) session: a saved JSON file, or a stored
    /// session: @last, @baseline:NAME, @ID (the database of --db, else LOOPBENCH_DB, else the default).
    pub a: String,
    /// The later session, compared against A.
    pub b: String,
    /// Anchor on this arm, which both sessions measured in the same build
    /// (default: the --reference both sessions were run with): each arm's
    /// ratio to it is compared, not its absolute time.
    #[arg(long, value_name = "ARM")]
    pub reference: Option<String>,
    /// "Unchanged" needs the whole interval inside +-PCT (default: the
    /// larger --precision the two sessions were run with, else 0.5).
    #[arg(long, value_name = "PCT")]
    pub precision: Option<f64>,
    /// A CI gate: exit 1 when a row's outcome is "changed" in this direction
    /// by more than PCT: slower[:PCT], faster[:PCT] or changed[:PCT]. Unsure
    /// rows never fail it. The Markdown report (--markdown FILE) starts with
    /// the gate's result, ready for a pull request comment.
    #[arg(long, value_name = "DIRECTION[:PCT]", value_parser = clap::builder::ValueParser::new(|s: &str| s.parse::<FailOn>()))]
    pub fail_on: Option<FailOn>,
    #[command(flatten)]
    pub output: OutputArgs,
    /// The history the between-session spread is learned from.
    #[command(flatten)]
    pub db: super::DbArg,
}

impl CompareArgs {
    pub fn execute(&self) -> Result<bool, Error> {
        let exports = self
            .output
            .exports_reading(&[Path::new(&self.a), Path::new(&self.b)])?;
        if let Some(p) = self.precision {
            super::run::check_precision(p)?;
        }
        let a = load_session(&self.a, self.db.db.as_deref())?;
        let b = load_session(&self.b, self.db.db.as_deref())?;
        let precision_pct = self.precision.unwrap_or_else(|| {
            [&a, &b]
                .iter()
                .filter_map(|s| s.session.stop_rule.as_ref().map(|r| r.precision_pct))
                .reduce(f64::max)
                .unwrap_or(0.5)
        });
        let (between, calibration, history_note) = self.history();
        let opts = compare::Options {
            precision_pct,
            reference: self.reference.clone(),
            between: &between,
            calibration: &calibration,
        };
        let mut c = compare::compare(&a, &self.a, &b, &self.b, &opts).map_err(Error::Usage)?;
        c.to_answer = results::answer::ways(&c, a.command_line().as_deref());
        if let Some(note) = history_note {
            if c.rows.iter().any(|r| r.basis == Some(compare::Basis::None)) {
                c.warnings.push(note);
            }
        }
        c.gate = self.fail_on.map(|rule| {
            rule.judge(c.rows.iter().map(|r| Judged {
                shape: &r.shape,
                arm: &r.arm,
                outcome: r.outcome,
                median_pct: r.median_pct,
                ci_pct: r.ci_pct,
                counted_out: r.counted_out,
            }))
        });
        // The warnings go to stderr when the report goes only to files,
        // where they are seen; the table on stdout starts with them (once).
        if !exports.stdout_has_table() {
            for w in &c.warnings {
                crate::diag!("warning: {w}");
            }
        }
        let passed = c.gate.as_ref().is_none_or(|g| !g.failed);
        if let Some(g) = &c.gate {
            crate::diag!("{}", g.summary());
        }
        exports.finish(&Document::Compare(c))?;
        Ok(passed)
    }

    /// The between-session spread of a series and the machine's
    /// calibration, from the history database; and, when there is no
    /// history to learn from, why.
    fn history(&self) -> (Lookup, Calibrate, Option<String>) {
        let none = || -> (Lookup, Calibrate) {
            (
                Box::new(|_: &compare::SeriesQuery| None),
                Box::new(|_: &compare::SeriesQuery, _, _| None),
            )
        };
        #[cfg(feature = "history")]
        {
            use crate::history::{series, sessions};
            use crate::stats::sessions::Calibration;
            use std::cell::RefCell;
            use std::collections::BTreeMap;
            use std::rc::Rc;
            let opened = self.db.location().and_then(|l| {
                l.open_read().map_err(|e| {
                    Error::Usage(format!(
                        "no history to learn between-session spread from: {e}"
                    ))
                })
            });
            match opened {
                Ok(db) => {
                    let db = Rc::new(RefCell::new(db));
                    let series_db = Rc::clone(&db);
                    let lookup = move |q: &compare::SeriesQuery| {
                        let (values, own_se) =
                            series::repeated(series_db.borrow_mut().as_mut(), q).ok()?;
                        Between::learn_excess(&values, &own_se)
                    };
                    // One calibration per kind and machine: every row of a
                    // comparison shares it, and learning it reads the
                    // machine's whole history.
                    let learned: RefCell<BTreeMap<(String, bool, u64), Option<Calibration>>> =
                        Default::default();
                    let calibrate = move |q: &compare::SeriesQuery, anchored: bool, level: f64| {
                        let key = (sessions::fingerprint(&q.machine), anchored, level.to_bits());
                        learned
                            .borrow_mut()
                            .entry(key)
                            .or_insert_with(|| {
                                let series = series::same_build_series(
                                    db.borrow_mut().as_mut(),
                                    q,
                                    anchored,
                                )
                                .ok()?;
                                Calibration::learn(&series, level)
                            })
                            .clone()
                    };
                    (Box::new(lookup), Box::new(calibrate), None)
                }
                Err(e) => {
                    let (l, c) = none();
                    (l, c, Some(e.to_string()))
                }
            }
        }
        #[cfg(not(feature = "history"))]
        {
            let (l, c) = none();
            (
                l,
                c,
                Some("built without the history feature: no between-session spread".to_string()),
            )
        }
    }
}

/// Where a row's between-session spread comes from.
type Lookup = Box<dyn Fn(&compare::SeriesQuery) -> Option<Between>>;
/// Where a kind's calibration comes from (anchored when `true`).
type Calibrate =
    Box<dyn Fn(&compare::SeriesQuery, bool, f64) -> Option<crate::stats::sessions::Calibration>>;

/// A session named on the command line (here, not in `results`, which
/// the history database itself builds on): a
/// stored session of the history database (`@last`, `@baseline:NAME`,
/// `@ID`; the database `db`, else that of `LOOPBENCH_DB`, else the default
/// one), or a saved session (or the session inside a model document) at
/// path `arg`.
pub fn load_session(arg: &str, db: Option<&str>) -> Result<Session, Error> {
    #[cfg(feature = "history")]
    if let Some(s) = crate::history::load_reference(arg, db)? {
        return Ok(s);
    }
    #[cfg(not(feature = "history"))]
    if arg.starts_with('@') {
        let _ = db;
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
