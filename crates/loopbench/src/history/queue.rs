//! The fleet's job queue, after rustc-perf's: a `jobs` table that agents
//! claim from with `SELECT ... FOR UPDATE SKIP LOCKED` (two agents never
//! take one job and never wait on each other), a heartbeat per running
//! job, and jobs whose heartbeat is older than a timeout going back to the
//! queue. A job's results are stored in the transaction that marks it done,
//! and only by the agent that still holds it, so a job is done once.
//!
//! Every change of a job is also written to `job_events`: the timeline of
//! the fleet (`loopbench jobs --events`).
//!
//! The queue works on SQLite too (one writer at a time makes the claim
//! atomic there), which is handy for a single machine; a fleet needs
//! PostgreSQL.

use super::sessions::{self, Origin, Provenance};
use super::store::{transaction, Dialect, Row, Sql, StoreError};
use crate::results::Session;

/// A job as an agent takes it.
#[derive(Clone, Debug, PartialEq)]
pub struct Job {
    pub id: i64,
    pub label: String,
    /// The `loopbench` arguments, starting with the command (`run`).
    pub args: Vec<String>,
    pub attempts: i64,
}

fn lock(d: Dialect) -> &'static str {
    match d {
        Dialect::Postgres => " FOR UPDATE SKIP LOCKED",
        // SQLite: the write transaction (BEGIN IMMEDIATE) already holds
        // the only write lock.
        Dialect::Sqlite => "",
    }
}

fn event(db: &mut dyn Sql, job: i64, agent: Option<&str>, what: &str) -> Result<(), StoreError> {
    let d = db.dialect();
    db.execute(
        &d.sql("INSERT INTO job_events (job_id, at, agent, event) VALUES ($1, {now}, $2, $3)"),
        &[job.into(), agent.into(), what.into()],
    )?;
    Ok(())
}

/// Queue `args` for the machines labelled `label`; the job's id.
pub fn submit(db: &mut dyn Sql, label: &str, args: &[String]) -> Result<i64, StoreError> {
    let d = db.dialect();
    let args = serde_json::to_string(args).map_err(|e| StoreError::Query(e.to_string()))?;
    transaction(db, |db| {
        let rows = db.query(
            &d.sql(
                "INSERT INTO jobs (label, args, loopbench_version, state, attempts, submitted_at)
                 VALUES ($1, $2, $3, 'queued', 0, {now}) RETURNING id",
            ),
            &[label.into(), args.into(), env!("CARGO_PKG_VERSION").into()],
        )?;
        let id = first_int(&rows)?;
        event(db, id, None, &format!("submitted for {label}"))?;
        Ok(id)
    })
}

fn first_int(rows: &[Row]) -> Result<i64, StoreError> {
    rows.first()
        .ok_or_else(|| StoreError::Query("no row returned".into()))?
        .int(0)
}

/// Take the oldest queued job for `label`, if any, as `agent`.
pub fn claim(db: &mut dyn Sql, label: &str, agent: &str) -> Result<Option<Job>, StoreError> {
    let d = db.dialect();
    transaction(db, |db| {
        let rows = db.query(
            &d.sql(&format!(
                "SELECT id, args, attempts FROM jobs WHERE label = $1 AND state = 'queued'
                 ORDER BY id LIMIT 1{}",
                lock(d)
            )),
            &[label.into()],
        )?;
        let Some(r) = rows.first() else {
            return Ok(None);
        };
        let id = r.int(0)?;
        let args: Vec<String> = serde_json::from_str(&r.text(1)?)
            .map_err(|e| StoreError::Query(format!("job {id}: bad arguments: {e}")))?;
        let attempts = r.int(2)? + 1;
        db.execute(
            &d.sql(
                "UPDATE jobs SET state = 'running', agent = $2, attempts = $3,
                    started_at = {now}, heartbeat_at = {now}, error = NULL WHERE id = $1",
            ),
            &[id.into(), agent.into(), attempts.into()],
        )?;
        event(
            db,
            id,
            Some(agent),
            &format!("claimed (attempt {attempts})"),
        )?;
        Ok(Some(Job {
            id,
            label: label.to_string(),
            args,
            attempts,
        }))
    })
}

/// Jobs for `label` not finished yet (queued or running).
pub fn pending(db: &mut dyn Sql, label: &str) -> Result<i64, StoreError> {
    let d = db.dialect();
    let rows = db.query(
        &d.sql("SELECT count(*) FROM jobs WHERE label = $1 AND state IN ('queued', 'running')"),
        &[label.into()],
    )?;
    first_int(&rows)
}

/// Refresh the heartbeat of `job`; false if `agent` no longer holds it
/// (it was re-queued meanwhile).
pub fn heartbeat(db: &mut dyn Sql, job: i64, agent: &str) -> Result<bool, StoreError> {
    let d = db.dialect();
    let n = db.execute(
        &d.sql(
            "UPDATE jobs SET heartbeat_at = {now}
             WHERE id = $1 AND agent = $2 AND state = 'running'",
        ),
        &[job.into(), agent.into()],
    )?;
    Ok(n == 1)
}

/// Put back in the queue every running job whose heartbeat is older than
/// `timeout_s` seconds (its agent died or lost the database); their ids.
pub fn requeue_stale(db: &mut dyn Sql, timeout_s: f64) -> Result<Vec<i64>, StoreError> {
    let d = db.dialect();
    transaction(db, |db| {
        let rows = db.query(
            &d.sql(&format!(
                "SELECT id, agent, {{now}} - heartbeat_at FROM jobs
                 WHERE state = 'running' AND heartbeat_at < {{now}} - $1 ORDER BY id{}",
                lock(d)
            )),
            &[timeout_s.into()],
        )?;
        let mut ids = Vec::new();
        for r in rows {
            let id = r.int(0)?;
            let agent = r.opt_text(1)?.unwrap_or_default();
            let age = r.real(2)?;
            db.execute(
                &d.sql("UPDATE jobs SET state = 'queued', agent = NULL WHERE id = $1"),
                &[id.into()],
            )?;
            event(
                db,
                id,
                None,
                &format!(
                    "re-queued: heartbeat of {agent} is {age:.1} s old (timeout {timeout_s} s)"
                ),
            )?;
            ids.push(id);
        }
        Ok(ids)
    })
}

/// Store `session` as the result of `job` and mark the job done, in one
/// transaction; `None` (nothing stored) if `agent` no longer holds the job.
pub fn complete(
    db: &mut dyn Sql,
    job: &Job,
    agent: &str,
    session: &Session,
) -> Result<Option<i64>, StoreError> {
    let d = db.dialect();
    transaction(db, |db| {
        if !held(db, job.id, agent)? {
            return Ok(None);
        }
        let session_id = sessions::insert(
            db,
            session,
            &Provenance {
                origin: Origin::Job,
                label: Some(&job.label),
                job_id: Some(job.id),
                recorded_at: None,
            },
        )?;
        db.execute(
            &d.sql(
                "UPDATE jobs SET state = 'done', finished_at = {now}, session_id = $2 WHERE id = $1",
            ),
            &[job.id.into(), session_id.into()],
        )?;
        event(
            db,
            job.id,
            Some(agent),
            &format!("done: session {session_id}"),
        )?;
        Ok(Some(session_id))
    })
}

/// Whether `agent` holds running `job`, locking its row until the end of
/// the transaction.
fn held(db: &mut dyn Sql, job: i64, agent: &str) -> Result<bool, StoreError> {
    let d = db.dialect();
    let for_update = if d == Dialect::Postgres {
        " FOR UPDATE"
    } else {
        ""
    };
    let rows = db.query(
        &d.sql(&format!(
            "SELECT id FROM jobs WHERE id = $1 AND agent = $2 AND state = 'running'{for_update}"
        )),
        &[job.into(), agent.into()],
    )?;
    Ok(!rows.is_empty())
}

/// Mark `job` failed with `error`; false if `agent` no longer holds it.
pub fn fail(db: &mut dyn Sql, job: i64, agent: &str, error: &str) -> Result<bool, StoreError> {
    let d = db.dialect();
    transaction(db, |db| {
        if !held(db, job, agent)? {
            return Ok(false);
        }
        db.execute(
            &d.sql(
                "UPDATE jobs SET state = 'failed', finished_at = {now}, error = $2 WHERE id = $1",
            ),
            &[job.into(), error.into()],
        )?;
        event(db, job, Some(agent), &format!("failed: {error}"))?;
        Ok(true)
    })
}

/// Give `job` back to the queue (the agent is stopping).
pub fn release(db: &mut dyn Sql, job: i64, agent: &str) -> Result<bool, StoreError> {
    let d = db.dialect();
    transaction(db, |db| {
        if !held(db, job, agent)? {
            return Ok(false);
        }
        db.execute(
            &d.sql("UPDATE jobs SET state = 'queued', agent = NULL WHERE id = $1"),
            &[job.into()],
        )?;
        event(db, job, Some(agent), "released: agent stopping")?;
        Ok(true)
    })
}

/// A job as listed by `loopbench jobs`.
#[derive(Clone, Debug)]
pub struct Listed {
    pub id: i64,
    pub label: String,
    pub state: String,
    pub agent: Option<String>,
    pub attempts: i64,
    /// Seconds since the last heartbeat (running jobs).
    pub heartbeat_age: Option<f64>,
    pub submitted: String,
    pub session_id: Option<i64>,
    pub error: Option<String>,
    pub args: String,
}

/// Every job, oldest first.
pub fn list(db: &mut dyn Sql) -> Result<Vec<Listed>, StoreError> {
    let d = db.dialect();
    let rows = db.query(
        &d.sql(&format!(
            "SELECT id, label, state, agent, attempts,
                    CASE WHEN state = 'running' THEN {{now}} - heartbeat_at END,
                    {}, session_id, error, args
             FROM jobs ORDER BY id",
            d.datetime("submitted_at")
        )),
        &[],
    )?;
    rows.iter()
        .map(|r| {
            Ok(Listed {
                id: r.int(0)?,
                label: r.text(1)?,
                state: r.text(2)?,
                agent: r.opt_text(3)?,
                attempts: r.int(4)?,
                heartbeat_age: r.opt_real(5)?,
                submitted: r.text(6)?,
                session_id: r.opt_int(7)?,
                error: r.opt_text(8)?,
                args: r.text(9)?,
            })
        })
        .collect()
}

/// One change of a job.
#[derive(Clone, Debug)]
pub struct Event {
    /// Seconds since the first event listed.
    pub at: f64,
    pub job_id: i64,
    pub agent: Option<String>,
    pub event: String,
}

/// Every job event, in order.
pub fn events(db: &mut dyn Sql) -> Result<Vec<Event>, StoreError> {
    let rows = db.query(
        "SELECT at, job_id, agent, event FROM job_events ORDER BY at, id",
        &[],
    )?;
    let start = rows.first().map(|r| r.real(0)).transpose()?.unwrap_or(0.0);
    rows.iter()
        .map(|r| {
            Ok(Event {
                at: r.real(0)? - start,
                job_id: r.int(1)?,
                agent: r.opt_text(2)?,
                event: r.text(3)?,
            })
        })
        .collect()
}
