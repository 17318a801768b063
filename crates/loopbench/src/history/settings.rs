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
    /// What chose it, in words.
    pub source: String,
    /// When, `YYYY-MM-DD HH:MM:SS` UTC.
    pub recorded: String,
}

impl Setting {
    /// How a session that used it says so.
    pub fn describe(&self) -> String {
        match self.schedule.as_deref() {
            Some(s) if s != "sequential" => format!(
                "rep length {} ms and the {s} schedule recorded for this machine by {} at {} UTC (--rep-ms and --schedule override)",
                self.rep_ms, self.source, self.recorded
            ),
            _ => format!(
                "rep length {} ms recorded for this machine by {} at {} UTC (--rep-ms overrides)",
                self.rep_ms, self.source, self.recorded
            ),
        }
    }
}

/// Record `rep_ms` and `schedule` as `machine`'s setting, replacing an
/// earlier one.
pub fn record(
    db: &mut dyn Sql,
    machine: &Machine,
    rep_ms: f64,
    schedule: &str,
    source: &str,
) -> Result<(), StoreError> {
    let d = db.dialect();
    db.execute(
        &d.sql(
            "INSERT INTO machine_settings (fingerprint, rep_ms, schedule, source, recorded_at)
             VALUES ($1, $2, $3, $4, {now})
             ON CONFLICT (fingerprint) DO UPDATE SET rep_ms = excluded.rep_ms,
                schedule = excluded.schedule, source = excluded.source,
                recorded_at = excluded.recorded_at",
        ),
        &[
            fingerprint(machine).into(),
            rep_ms.into(),
            schedule.into(),
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
    // Schema 7 added the schedule; before it every setting was sequential.
    let schedule = if version >= 7 { "schedule" } else { "NULL" };
    let d = db.dialect();
    let rows = db.query(
        &d.sql(&format!(
            "SELECT rep_ms, source, {}, {schedule} FROM machine_settings WHERE fingerprint = $1",
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
            })
        })
        .transpose()
}
