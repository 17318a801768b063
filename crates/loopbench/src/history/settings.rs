//! The measurement setting chosen for a machine (`loopbench noise
//! --record`): `run` uses it by default there, says so, and a flag
//! overrides it.

use super::sessions::fingerprint;
use super::store::{Sql, StoreError};
use crate::machine::Machine;

/// A machine's recorded setting.
#[derive(Clone, Debug, PartialEq)]
pub struct Setting {
    pub rep_ms: f64,
    /// `sequential`, `duet` (`None`: recorded before schedules were).
    pub schedule: Option<String>,
    /// The per-epoch estimator (`None`: recorded before estimators were,
    /// the median).
    pub estimator: Option<String>,
    /// What chose it, in words.
    pub source: String,
    /// When, `YYYY-MM-DD HH:MM:SS` UTC.
    pub recorded: String,
}

impl Setting {
    /// How a session that used it says so: what it sets beyond the
    /// defaults, who recorded it when, and the flags that override.
    pub fn describe(&self) -> String {
        let mut what = vec![format!("rep length {} ms", self.rep_ms)];
        let mut flags = vec!["--rep-ms"];
        if let Some(s) = self.schedule.as_deref().filter(|s| *s != "sequential") {
            what.push(format!("the {s} schedule"));
            flags.push("--schedule");
        }
        if let Some(e) = self.estimator.as_deref().filter(|e| *e != "median") {
            what.push(format!("the {e} estimator"));
            flags.push("--estimator");
        }
        let what = match what.split_last() {
            Some((last, [])) => last.clone(),
            Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
            None => unreachable!("the rep length is always set"),
        };
        let verb = if flags.len() == 1 {
            "overrides"
        } else {
            "override"
        };
        format!(
            "{what} recorded for this machine by {} at {} UTC ({} {verb})",
            self.source,
            self.recorded,
            flags.join(", ")
        )
    }
}

/// Record `rep_ms`, `schedule` and `estimator` as `machine`'s setting,
/// replacing an earlier one.
pub fn record(
    db: &mut dyn Sql,
    machine: &Machine,
    rep_ms: f64,
    schedule: &str,
    estimator: &str,
    source: &str,
) -> Result<(), StoreError> {
    let d = db.dialect();
    db.execute(
        &d.sql(
            "INSERT INTO machine_settings (fingerprint, rep_ms, schedule, estimator, source, recorded_at)
             VALUES ($1, $2, $3, $4, $5, {now})
             ON CONFLICT (fingerprint) DO UPDATE SET rep_ms = excluded.rep_ms,
                schedule = excluded.schedule, estimator = excluded.estimator,
                source = excluded.source, recorded_at = excluded.recorded_at",
        ),
        &[
            fingerprint(machine).into(),
            rep_ms.into(),
            schedule.into(),
            estimator.into(),
            source.into(),
        ],
    )?;
    Ok(())
}

/// `machine`'s recorded setting, if any (a database from before settings
/// has none; read-only, never migrates).
pub fn lookup(db: &mut dyn Sql, machine: &Machine) -> Result<Option<Setting>, StoreError> {
    let version = super::store::version(db)?;
    if version < 4 {
        return Ok(None);
    }
    // Schema 7 added the schedule (before it every setting was
    // sequential), 8 the estimator (before it, the median).
    let schedule = if version >= 7 { "schedule" } else { "NULL" };
    let estimator = if version >= 8 { "estimator" } else { "NULL" };
    let d = db.dialect();
    let rows = db.query(
        &d.sql(&format!(
            "SELECT rep_ms, source, {}, {schedule}, {estimator} FROM machine_settings WHERE fingerprint = $1",
            d.datetime("recorded_at")
        )),
        &[fingerprint(machine).into()],
    )?;
    rows.first()
        .map(|r| {
            Ok(Setting {
                rep_ms: r.real(0)?,
                source: r.text(1)?,
                recorded: r.text(2)?,
                schedule: r.opt_text(3)?,
                estimator: r.opt_text(4)?,
            })
        })
        .transpose()
}

/// This machine's recorded setting as a session takes it, from the
/// history at `location`; `None` when there is none or it cannot be read
/// (the defaults then apply). A database file that does not exist is not
/// created.
pub fn for_this_machine(location: &super::Location) -> Option<crate::session::Recorded> {
    if let super::Location::Sqlite(p) = location {
        if !p.exists() {
            return None;
        }
    }
    let mut conn = location.open_read().ok()?;
    let s = lookup(conn.as_mut(), &Machine::read()).ok().flatten()?;
    Some(crate::session::Recorded {
        rep_ms: s.rep_ms,
        said: s.describe(),
        schedule: s.schedule,
        estimator: s.estimator,
    })
}
