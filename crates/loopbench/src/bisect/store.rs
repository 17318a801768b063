//! Bisects kept in the history database, so that a bisect interrupted
//! halfway (or stopped by `--max-steps`) goes on from the steps it
//! finished: one `bisects` row per bisect, keyed by everything that decides
//! its verdicts (engine build, good and bad commits, shapes, counters,
//! precision, run options), and one `bisect_steps` row per measured
//! revision, written in the transaction that stores the step's session.
//! The same tables serve SQLite on one machine and PostgreSQL for a fleet.

use super::{ShapeStep, Verdict};
use crate::history::sessions::{self, Origin, Provenance};
use crate::history::store::{transaction, Sql, StoreError};
use crate::history::Location;
use crate::pid_lock::{self, PidLock, Taken};
use crate::results::Session;
use serde::{Deserialize, Serialize};

/// What a bisect is, as stored.
#[derive(Clone, Debug, PartialEq)]
pub struct Key {
    /// Everything that decides the verdicts, as one text.
    pub key: String,
    /// The engine's build without a revision (`wasmi=git:DIR`).
    pub engine: String,
    pub good: String,
    pub bad: String,
    pub shapes: String,
    /// `time` or `instructions`.
    pub metric: String,
}

/// One measured revision.
#[derive(Clone, Debug, PartialEq)]
pub struct Step {
    pub commit: String,
    /// 0 is the good revision, n the bad one.
    pub position: usize,
    pub verdict: Verdict,
    pub shapes: Vec<ShapeStep>,
    /// Why the verdict is unsure, or what the endpoint step found.
    pub reason: Option<String>,
    /// The step's session in the history.
    pub session_id: Option<i64>,
    /// Wall seconds the step took, build included.
    pub seconds: f64,
}

#[derive(Serialize, Deserialize)]
struct Detail {
    shapes: Vec<ShapeStep>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    reason: Option<String>,
}

/// Held while a bisect measures, released when dropped (or when its
/// process dies): a second loopbench on the same bisect is refused rather
/// than measuring every step again beside it. SQLite: an `flock`ed file
/// beside the database holding the owner's pid; PostgreSQL: an advisory
/// lock of the bisect's connection.
pub enum Running {
    File(PidLock),
    Postgres,
}

/// The first key of loopbench's PostgreSQL advisory locks on bisects
/// ("lb" and a 'b'), the bisect's id the second.
const ADVISORY_KEY: i64 = 0x006c_6262;

/// Hold bisect `id` of the database at `location`, or say who does.
fn hold(db: &mut dyn Sql, location: &Location, id: i64) -> Result<Running, StoreError> {
    let busy = |who: String| {
        StoreError::Query(format!(
            "bisect {id} is being measured by another loopbench{who}; wait for it to stop, then run this again: it goes on from the steps stored"
        ))
    };
    match location {
        Location::Postgres(_) => {
            let rows = db.query(
                "SELECT CASE WHEN pg_try_advisory_lock(CAST($1 AS integer), CAST($2 AS integer)) THEN 1 ELSE 0 END",
                &[ADVISORY_KEY.into(), id.into()],
            )?;
            match rows.first().map(|r| r.int(0)).transpose()? {
                Some(1) => Ok(Running::Postgres),
                _ => Err(busy(
                    " (it holds the bisect's advisory lock in PostgreSQL)".into(),
                )),
            }
        }
        Location::Sqlite(db_path) => {
            let name = db_path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let path = db_path.with_file_name(format!(".{name}.bisect-{id}.lock"));
            match pid_lock::take(&path) {
                Ok(Taken::Held(lock)) => Ok(Running::File(lock)),
                Ok(Taken::Busy { holder }) => Err(busy(
                    holder
                        .map(|pid| format!(" (pid {pid})"))
                        .unwrap_or_default(),
                )),
                Ok(Taken::KeepsChanging) => Err(busy(String::new())),
                Err(e) => Err(StoreError::Query(format!(
                    "cannot lock bisect {id} ({}): {e}",
                    path.display()
                ))),
            }
        }
    }
}

/// The bisect with `key` in the database at `location`, created if new:
/// its id, held for this process ([`Running`]), and the steps it finished.
pub fn open(
    db: &mut dyn Sql,
    location: &Location,
    key: &Key,
) -> Result<(i64, Running, Vec<Step>), StoreError> {
    let d = db.dialect();
    let id = transaction(db, |db| {
        db.execute(
            &d.sql(
                "INSERT INTO bisects (key, engine, good_commit, bad_commit, shapes, metric, started_at)
                 VALUES ($1, $2, $3, $4, $5, $6, {now}) ON CONFLICT (key) DO NOTHING",
            ),
            &[
                key.key.as_str().into(),
                key.engine.as_str().into(),
                key.good.as_str().into(),
                key.bad.as_str().into(),
                key.shapes.as_str().into(),
                key.metric.as_str().into(),
            ],
        )?;
        let rows = db.query(
            &d.sql("SELECT id FROM bisects WHERE key = $1"),
            &[key.key.as_str().into()],
        )?;
        rows.first()
            .ok_or_else(|| StoreError::Query("the bisect row was not written".into()))?
            .int(0)
    })?;
    // Held before the steps are read: what another runner stored up to
    // now is all there is.
    let running = hold(db, location, id)?;
    let rows = db.query(
        &d.sql(
            "SELECT commit_id, position, verdict, detail, session_id, seconds
             FROM bisect_steps WHERE bisect_id = $1 ORDER BY measured_at",
        ),
        &[id.into()],
    )?;
    let steps = rows
        .iter()
        .map(|r| {
            let bad = |what: String| StoreError::Query(format!("bisect {id}: {what}"));
            let detail: Detail =
                serde_json::from_str(&r.text(3)?).map_err(|e| bad(format!("step detail: {e}")))?;
            Ok(Step {
                commit: r.text(0)?,
                position: usize::try_from(r.int(1)?).map_err(|e| bad(e.to_string()))?,
                verdict: r.text(2)?.parse().map_err(bad)?,
                shapes: detail.shapes,
                reason: detail.reason,
                session_id: r.opt_int(4)?,
                seconds: r.real(5)?,
            })
        })
        .collect::<Result<Vec<_>, StoreError>>()?;
    Ok((id, running, steps))
}

/// Store a step and its session together; the session's id. A step
/// already stored (two runs of one bisect at once) keeps the first.
pub fn save_step(
    db: &mut dyn Sql,
    bisect: i64,
    step: &Step,
    session: &Session,
) -> Result<i64, StoreError> {
    let d = db.dialect();
    let detail = serde_json::to_string(&Detail {
        shapes: step.shapes.clone(),
        reason: step.reason.clone(),
    })
    .map_err(|e| StoreError::Query(format!("cannot encode a bisect step: {e}")))?;
    transaction(db, |db| {
        let session_id = sessions::insert(db, session, &Provenance::of(Origin::Bisect))?;
        db.execute(
            &d.sql(
                "INSERT INTO bisect_steps (bisect_id, commit_id, position, verdict, detail,
                    session_id, seconds, measured_at)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, {now})
                 ON CONFLICT (bisect_id, commit_id) DO NOTHING",
            ),
            &[
                bisect.into(),
                step.commit.as_str().into(),
                (step.position as i64).into(),
                step.verdict.to_string().into(),
                detail.into(),
                session_id.into(),
                step.seconds.into(),
            ],
        )?;
        Ok(session_id)
    })
}

/// Mark the bisect finished with its result (a one-line summary).
pub fn finish(db: &mut dyn Sql, bisect: i64, result: &str) -> Result<(), StoreError> {
    let d = db.dialect();
    db.execute(
        &d.sql("UPDATE bisects SET finished_at = {now}, result = $2 WHERE id = $1"),
        &[bisect.into(), result.into()],
    )?;
    Ok(())
}

/// Median seconds of the steps this database has seen for `engine` (any
/// bisect): the estimate of a step before one is measured here.
pub fn typical_step_seconds(db: &mut dyn Sql, engine: &str) -> Result<Option<f64>, StoreError> {
    let d = db.dialect();
    let rows = db.query(
        &d.sql(
            "SELECT s.seconds FROM bisect_steps s JOIN bisects b ON b.id = s.bisect_id
             WHERE b.engine = $1 ORDER BY s.seconds",
        ),
        &[engine.into()],
    )?;
    let secs: Vec<f64> = rows.iter().map(|r| r.real(0)).collect::<Result<_, _>>()?;
    Ok((!secs.is_empty()).then(|| secs[secs.len() / 2]))
}
