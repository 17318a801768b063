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

/// The bisect with `key`, created if new; its id and the steps it finished.
pub fn open(db: &mut dyn Sql, key: &Key) -> Result<(i64, Vec<Step>), StoreError> {
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
    Ok((id, steps))
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
