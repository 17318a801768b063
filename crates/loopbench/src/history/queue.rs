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
use base64::Engine as _;
use serde::{Deserialize, Serialize};

/// What a job runs: `loopbench` arguments, starting with the command
/// (`run`), and the shape files they name, carried as content. A job never
/// names a path on the agent: `--shape-file NAME` means the file `NAME` of
/// `files`, which the agent writes to a private temporary directory.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Work {
    pub args: Vec<String>,
    pub files: Vec<JobFile>,
}

/// A shape file in a job: its file name (no directory) and its bytes.
#[derive(Clone, Debug, PartialEq)]
pub struct JobFile {
    pub name: String,
    pub content: Vec<u8>,
}

/// The `args` column: a JSON array of arguments, or, when the job carries
/// files, `{"args": [...], "files": [{"name": ..., "base64": ...}]}`.
#[derive(Serialize, Deserialize)]
struct Stored {
    args: Vec<String>,
    files: Vec<StoredFile>,
}

#[derive(Serialize, Deserialize)]
struct StoredFile {
    name: String,
    base64: String,
}

impl Work {
    pub fn new(args: Vec<String>) -> Self {
        Work {
            args,
            files: Vec::new(),
        }
    }

    fn encode(&self) -> Result<String, StoreError> {
        let json = if self.files.is_empty() {
            serde_json::to_string(&self.args)
        } else {
            serde_json::to_string(&Stored {
                args: self.args.clone(),
                files: self
                    .files
                    .iter()
                    .map(|f| StoredFile {
                        name: f.name.clone(),
                        base64: base64::engine::general_purpose::STANDARD.encode(&f.content),
                    })
                    .collect(),
            })
        };
        json.map_err(|e| StoreError::Query(format!("cannot encode a job: {e}")))
    }

    /// The `args` column back; the error says what is wrong with it.
    pub fn decode(text: &str) -> Result<Self, String> {
        if let Ok(args) = serde_json::from_str::<Vec<String>>(text) {
            return Ok(Work::new(args));
        }
        let stored: Stored = serde_json::from_str(text).map_err(|e| e.to_string())?;
        let files = stored
            .files
            .into_iter()
            .map(|f| {
                let content = base64::engine::general_purpose::STANDARD
                    .decode(&f.base64)
                    .map_err(|e| format!("file `{}`: {e}", f.name))?;
                Ok(JobFile {
                    name: f.name,
                    content,
                })
            })
            .collect::<Result<_, String>>()?;
        Ok(Work {
            args: stored.args,
            files,
        })
    }
}

/// A job as an agent takes it.
#[derive(Clone, Debug, PartialEq)]
pub struct Job {
    pub id: i64,
    pub label: String,
    pub work: Work,
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

/// Queue `work` for the machines labelled `label`; the job's id.
pub fn submit(db: &mut dyn Sql, label: &str, work: &Work) -> Result<i64, StoreError> {
    transaction(db, |db| enqueue(db, label, work, None))
}

/// Queue `work` for `label` inside the caller's transaction, for `track`
/// when a track's schedule queues it; the job's id.
pub fn enqueue(
    db: &mut dyn Sql,
    label: &str,
    work: &Work,
    track: Option<i64>,
) -> Result<i64, StoreError> {
    let d = db.dialect();
    let args = work.encode()?;
    let rows = db.query(
        &d.sql(
            "INSERT INTO jobs (label, args, loopbench_version, state, attempts, submitted_at, track_id)
             VALUES ($1, $2, $3, 'queued', 0, {now}, $4) RETURNING id",
        ),
        &[
            label.into(),
            args.into(),
            env!("CARGO_PKG_VERSION").into(),
            track.into(),
        ],
    )?;
    let id = first_int(&rows)?;
    let what = match track {
        Some(t) => format!("submitted for {label} by the schedule of track {t}"),
        None => format!("submitted for {label}"),
    };
    event(db, id, None, &what)?;
    Ok(id)
}

fn first_int(rows: &[Row]) -> Result<i64, StoreError> {
    rows.first()
        .ok_or_else(|| StoreError::Query("no row returned".into()))?
        .int(0)
}

/// Take the oldest queued job for `label`, if any, as `agent`. A job whose
/// arguments cannot be read is marked failed on the way (a row written
/// straight into the table must not stop the agents).
pub fn claim(db: &mut dyn Sql, label: &str, agent: &str) -> Result<Option<Job>, StoreError> {
    let d = db.dialect();
    transaction(db, |db| loop {
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
        let attempts = r.int(2)? + 1;
        let work = match Work::decode(&r.text(1)?) {
            Ok(work) => work,
            Err(e) => {
                let error = format!("the job's arguments are not a loopbench job: {e}");
                db.execute(
                    &d.sql(
                        "UPDATE jobs SET state = 'failed', agent = $2, attempts = $3,
                            finished_at = {now}, error = $4 WHERE id = $1",
                    ),
                    &[
                        id.into(),
                        agent.into(),
                        attempts.into(),
                        error.as_str().into(),
                    ],
                )?;
                event(db, id, Some(agent), &format!("failed: {error}"))?;
                continue;
            }
        };
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
        return Ok(Some(Job {
            id,
            label: label.to_string(),
            work,
            attempts,
        }));
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
/// `timeout_s` seconds (its agent died or lost the database), or is no
/// time at all (missing, NaN, or later than the timeout ahead: a row no
/// agent wrote, which would otherwise never be re-queued); their ids.
pub fn requeue_stale(db: &mut dyn Sql, timeout_s: f64) -> Result<Vec<i64>, StoreError> {
    let d = db.dialect();
    transaction(db, |db| {
        // `NOT (h <= now + t)` holds for NaN in both dialects (PostgreSQL
        // orders NaN above every number; SQLite stores it as NULL).
        let rows = db.query(
            &d.sql(&format!(
                "SELECT id, agent, {{now}} - heartbeat_at FROM jobs
                 WHERE state = 'running'
                   AND (heartbeat_at IS NULL OR heartbeat_at < {{now}} - $1
                        OR NOT (heartbeat_at <= {{now}} + $1))
                 ORDER BY id{}",
                lock(d)
            )),
            &[timeout_s.into()],
        )?;
        let mut ids = Vec::new();
        for r in rows {
            let id = r.int(0)?;
            let agent = r.opt_text(1)?.unwrap_or_default();
            let age = r
                .opt_real(2)?
                .filter(|a| a.is_finite() && *a >= 0.0)
                .map_or_else(|| "no valid time".to_string(), |a| format!("{a:.1} s old"));
            db.execute(
                &d.sql("UPDATE jobs SET state = 'queued', agent = NULL WHERE id = $1"),
                &[id.into()],
            )?;
            event(
                db,
                id,
                None,
                &format!("re-queued: heartbeat of {agent} is {age} (timeout {timeout_s} s)"),
            )?;
            ids.push(id);
        }
        Ok(ids)
    })
}

/// What else a job's completion does in its transaction: given the job
/// and its stored session, how many alerts it raised (`None`: nothing to
/// judge). The agent passes `track::after_job`; the queue knows no tracks.
pub type AfterJob = dyn Fn(&mut dyn Sql, i64, i64) -> Result<Option<usize>, StoreError>;

/// Store `session` as the result of `job`, run `after` and mark the job
/// done, in one transaction; `None` (nothing stored) if `agent` no longer
/// holds the job.
pub fn complete(
    db: &mut dyn Sql,
    job: &Job,
    agent: &str,
    session: &Session,
    after: &AfterJob,
) -> Result<Option<i64>, StoreError> {
    let d = db.dialect();
    transaction(db, |db| {
        if !held(db, job.id, agent)? {
            // Retried after a lost connection whose commit got through: the
            // job is already done by this agent, with this session.
            let rows = db.query(
                &d.sql(
                    "SELECT session_id FROM jobs WHERE id = $1 AND agent = $2 AND state = 'done'",
                ),
                &[job.id.into(), agent.into()],
            )?;
            return rows.first().map(|r| r.int(0)).transpose();
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
        // A tracked job's session joins its track, and the track's alerts
        // are raised here, in this transaction: a job done is a job judged.
        let raised = after(db, job.id, session_id)?;
        let alerts = match raised {
            Some(0) | None => String::new(),
            Some(n) => format!(", {n} alert(s)"),
        };
        event(
            db,
            job.id,
            Some(agent),
            &format!("done: session {session_id}{alerts}"),
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
