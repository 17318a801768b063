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
    /// What chose it, in words.
    pub source: String,
    /// When, `YYYY-MM-DD HH:MM:SS` UTC.
    pub recorded: String,
}

impl Setting {
    /// How a session that used it says so.
    pub fn describe(&self) -> String {
        format!(
            "rep length {} ms recorded for this machine by {} at {} UTC (--rep-ms overrides)",
            self.rep_ms, self.source, self.recorded
        )
    }
}

/// Record `rep_ms` as `machine`'s setting, replacing an earlier one.
pub fn record(
    db: &mut dyn Sql,
    machine: &Machine,
    rep_ms: f64,
    source: &str,
) -> Result<(), StoreError> {
    let d = db.dialect();
    db.execute(
        &d.sql(
            "INSERT INTO machine_settings (fingerprint, rep_ms, source, recorded_at)
             VALUES ($1, $2, $3, {now})
             ON CONFLICT (fingerprint) DO UPDATE SET rep_ms = excluded.rep_ms,
                source = excluded.source, recorded_at = excluded.recorded_at",
        ),
        &[fingerprint(machine).into(), rep_ms.into(), source.into()],
    )?;
    Ok(())
}

/// `machine`'s recorded setting, if any (a database from before settings
/// has none; read-only, never migrates).
pub fn lookup(db: &mut dyn Sql, machine: &Machine) -> Result<Option<Setting>, StoreError> {
    if super::store::version(db)? < 4 {
        return Ok(None);
    }
    let d = db.dialect();
    let rows = db.query(
        &d.sql(&format!(
            "SELECT rep_ms, source, {} FROM machine_settings WHERE fingerprint = $1",
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
            })
        })
        .transpose()
}
