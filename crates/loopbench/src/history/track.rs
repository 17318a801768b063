//! Tracks: an engine's branch followed over time against a reference arm.
//!
//! A track is a stored definition (`loopbench track add`): the arm (e.g.
//! `wasmi=git:../wasmi#main`, whose branch head is resolved when a run
//! starts), its reference, its shapes and the other `run` options, and
//! optionally machine labels and a period. Its sessions carry the track's
//! id (`sessions.track_id`), and each one stored raises the alerts of the
//! track's anchored series ([`super::alerts`]) in the transaction that
//! stores it.
//!
//! On one machine `track run` records one session per shape and a
//! `track_runs` row, so an interrupted run goes on from the shapes it
//! recorded ([`resume`]). On a fleet, agents queue the track's job once per
//! period and label ([`schedule`]): the primary key of `track_periods` is
//! the claim, taken with `ON CONFLICT DO NOTHING` in the transaction that
//! queues the job, so two agents polling together queue it once.

use super::queue::{self, Work};
use super::sessions::{self, Provenance};
use super::store::{transaction, Row, Sql, StoreError};
use crate::results::Session;

/// A track as stored.
#[derive(Clone, Debug, PartialEq)]
pub struct Track {
    pub id: i64,
    pub name: String,
    /// The tracked arm, as the sessions label it.
    pub arm: String,
    /// The reference arm: the yardstick of the anchored series.
    pub reference: String,
    pub shapes: Vec<String>,
    /// The other `run` options (`--budget 5`, `--precision 1`, ...).
    pub args: Vec<String>,
    /// Machine labels whose agents queue the track (empty: no schedule).
    pub labels: Vec<String>,
    /// The schedule's period, seconds.
    pub every_s: Option<f64>,
}

impl Track {
    /// The `run` arguments that measure `shapes` of this track.
    pub fn run_args(&self, shapes: &[String]) -> Vec<String> {
        let mut args: Vec<String> = [
            "run",
            "--engines",
            &self.arm,
            "--reference",
            &self.reference,
            "--shapes",
            &shapes.join(","),
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        args.extend(self.args.iter().cloned());
        args
    }

    /// The job the schedule queues: every shape in one session.
    pub fn job(&self) -> Work {
        Work::new(self.run_args(&self.shapes))
    }
}

fn json(v: &impl serde::Serialize) -> Result<String, StoreError> {
    serde_json::to_string(v).map_err(|e| StoreError::Query(format!("cannot encode: {e}")))
}

const COLUMNS: &str = "id, name, arm, reference, shapes, args, labels, every_s";

fn track(r: &Row) -> Result<Track, StoreError> {
    let split = |s: String| -> Vec<String> {
        s.split(',')
            .filter(|p| !p.is_empty())
            .map(str::to_string)
            .collect()
    };
    let name = r.text(1)?;
    Ok(Track {
        id: r.int(0)?,
        arm: r.text(2)?,
        reference: r.text(3)?,
        shapes: split(r.text(4)?),
        args: serde_json::from_str(&r.text(5)?)
            .map_err(|e| StoreError::Query(format!("track {name}: its args: {e}")))?,
        name,
        labels: split(r.text(6)?),
        every_s: r.opt_real(7)?,
    })
}

/// Store a new track (its `id` is ignored); its id, or `None` if a track of
/// that name exists.
pub fn add(db: &mut dyn Sql, t: &Track) -> Result<Option<i64>, StoreError> {
    let d = db.dialect();
    let rows = db.query(
        &d.sql(
            "INSERT INTO tracks (name, arm, reference, shapes, args, job, labels, every_s, created_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, {now})
             ON CONFLICT (name) DO NOTHING RETURNING id",
        ),
        &[
            t.name.as_str().into(),
            t.arm.as_str().into(),
            t.reference.as_str().into(),
            t.shapes.join(",").into(),
            json(&t.args)?.into(),
            json(&t.job().args)?.into(),
            t.labels.join(",").into(),
            t.every_s.into(),
        ],
    )?;
    rows.first().map(|r| r.int(0)).transpose()
}

/// The track named `name`.
pub fn find(db: &mut dyn Sql, name: &str) -> Result<Option<Track>, StoreError> {
    let d = db.dialect();
    let rows = db.query(
        &d.sql(&format!("SELECT {COLUMNS} FROM tracks WHERE name = $1")),
        &[name.into()],
    )?;
    rows.first().map(track).transpose()
}

/// Every track, oldest first.
pub fn list(db: &mut dyn Sql) -> Result<Vec<Track>, StoreError> {
    let rows = db.query(&format!("SELECT {COLUMNS} FROM tracks ORDER BY id"), &[])?;
    rows.iter().map(track).collect()
}

/// A job a schedule queued.
#[derive(Clone, Debug, PartialEq)]
pub struct Queued {
    pub track: String,
    pub period: i64,
    pub job_id: i64,
}

/// Queue the job of every track scheduled for `label` whose current
/// period (`floor(now / every)`, on the database's clock) has none yet.
/// Each track's period is claimed and its job queued in one transaction:
/// whoever inserts the period's row queues the job, everyone else finds
/// the row there and queues nothing.
pub fn schedule(db: &mut dyn Sql, label: &str) -> Result<Vec<Queued>, StoreError> {
    let d = db.dialect();
    let due: Vec<Track> = list(db)?
        .into_iter()
        .filter(|t| t.every_s.is_some_and(|e| e > 0.0) && t.labels.iter().any(|l| l == label))
        .collect();
    let mut queued = Vec::new();
    for t in due {
        let every = t.every_s.unwrap_or(f64::INFINITY);
        let job = transaction(db, |db| {
            let now = db.query(&d.sql("SELECT {now}"), &[])?;
            let now = now
                .first()
                .ok_or_else(|| StoreError::Query("the clock returned no row".into()))?
                .real(0)?;
            let period = (now / every).floor() as i64;
            let claimed = db.execute(
                &d.sql(
                    "INSERT INTO track_periods (track_id, label, period, queued_at)
                     VALUES ($1, $2, $3, {now}) ON CONFLICT DO NOTHING",
                ),
                &[t.id.into(), label.into(), period.into()],
            )?;
            if claimed == 0 {
                return Ok(None);
            }
            let id = queue::enqueue(db, label, &t.job(), Some(t.id))?;
            db.execute(
                &d.sql(
                    "UPDATE track_periods SET job_id = $4
                     WHERE track_id = $1 AND label = $2 AND period = $3",
                ),
                &[t.id.into(), label.into(), period.into(), id.into()],
            )?;
            Ok(Some((period, id)))
        })?;
        if let Some((period, job_id)) = job {
            queued.push(Queued {
                track: t.name.clone(),
                period,
                job_id,
            });
        }
    }
    Ok(queued)
}

/// A tracked run on one machine: its shapes' sessions so far.
#[derive(Clone, Debug, PartialEq)]
pub struct Run {
    pub id: i64,
    /// The tracked arm's commit when the run started (git arms).
    pub commit: Option<String>,
    /// Shapes this run has recorded already.
    pub recorded: Vec<String>,
    /// Whether this run was started before and is resumed.
    pub resumed: bool,
    /// An unfinished run left behind because the branch moved: its id and
    /// commit.
    pub abandoned: Option<(i64, Option<String>)>,
}

/// The run `track run` goes on with on the machine `fingerprint` for
/// `commit`: the newest unfinished run of the track there, if it measured
/// the same commit (its recorded shapes are not measured again), else a new
/// one (an unfinished run of another commit is closed: the branch moved).
pub fn resume(
    db: &mut dyn Sql,
    track: &Track,
    fingerprint: &str,
    commit: Option<&str>,
) -> Result<Run, StoreError> {
    let d = db.dialect();
    transaction(db, |db| {
        let rows = db.query(
            &d.sql(
                "SELECT id, commit_id FROM track_runs
                 WHERE track_id = $1 AND fingerprint = $2 AND finished_at IS NULL
                 ORDER BY id DESC LIMIT 1",
            ),
            &[track.id.into(), fingerprint.into()],
        )?;
        let mut abandoned = None;
        if let Some(r) = rows.first() {
            let id = r.int(0)?;
            let was = r.opt_text(1)?;
            if was.as_deref() == commit {
                let recorded = db.query(
                    &d.sql(
                        "SELECT DISTINCT h.name FROM sessions s
                         JOIN summaries x ON x.session_id = s.id
                         JOIN shapes h ON h.id = x.shape_id
                         WHERE s.track_run_id = $1 ORDER BY h.name",
                    ),
                    &[id.into()],
                )?;
                return Ok(Run {
                    id,
                    commit: was,
                    recorded: recorded
                        .iter()
                        .map(|r| r.text(0))
                        .collect::<Result<_, _>>()?,
                    resumed: true,
                    abandoned: None,
                });
            }
            finish(db, id)?;
            abandoned = Some((id, was));
        }
        let rows = db.query(
            &d.sql(
                "INSERT INTO track_runs (track_id, fingerprint, commit_id, started_at)
                 VALUES ($1, $2, $3, {now}) RETURNING id",
            ),
            &[track.id.into(), fingerprint.into(), commit.into()],
        )?;
        Ok(Run {
            id: rows
                .first()
                .ok_or_else(|| StoreError::Query("no run id returned".into()))?
                .int(0)?,
            commit: commit.map(str::to_string),
            recorded: Vec::new(),
            resumed: false,
            abandoned,
        })
    })
}

/// Mark run `id` finished.
pub fn finish(db: &mut dyn Sql, id: i64) -> Result<(), StoreError> {
    let d = db.dialect();
    db.execute(
        &d.sql("UPDATE track_runs SET finished_at = {now} WHERE id = $1 AND finished_at IS NULL"),
        &[id.into()],
    )?;
    Ok(())
}

/// Store `session` as one of `track`'s (of `run`, when `track run`
/// recorded it) and raise the track's alerts, in one transaction; the
/// session's id and the alerts raised now.
pub fn record(
    db: &mut dyn Sql,
    track: &Track,
    run: Option<i64>,
    session: &Session,
    p: &Provenance,
) -> Result<(i64, Vec<i64>), StoreError> {
    transaction(db, |db| {
        let id = sessions::insert(db, session, p)?;
        let raised = tag(db, track, run, id)?;
        Ok((id, raised))
    })
}

/// Give session `id` to `track` (and `run`) and raise the alerts of its
/// machine's series, inside the caller's transaction.
fn tag(db: &mut dyn Sql, track: &Track, run: Option<i64>, id: i64) -> Result<Vec<i64>, StoreError> {
    let d = db.dialect();
    db.execute(
        &d.sql("UPDATE sessions SET track_id = $2, track_run_id = $3 WHERE id = $1"),
        &[id.into(), track.id.into(), run.into()],
    )?;
    let machine = db.query(
        &d.sql("SELECT machine_id FROM sessions WHERE id = $1"),
        &[id.into()],
    )?;
    let machine = machine
        .first()
        .ok_or_else(|| StoreError::Query(format!("no session {id}")))?
        .int(0)?;
    super::alerts::evaluate(db, track.id, &track.arm, machine)
}

/// For `queue::complete` (the agent passes it), inside its transaction:
/// when `job` was queued by a track's schedule, session `session` joins the
/// track and its alerts are raised; how many (`None`: not a tracked job).
pub fn after_job(db: &mut dyn Sql, job: i64, session: i64) -> Result<Option<usize>, StoreError> {
    let d = db.dialect();
    let rows = db.query(
        &d.sql(&format!(
            "SELECT {} FROM tracks t JOIN jobs j ON j.track_id = t.id WHERE j.id = $1",
            COLUMNS
                .split(", ")
                .map(|c| format!("t.{c}"))
                .collect::<Vec<_>>()
                .join(", ")
        )),
        &[job.into()],
    )?;
    let Some(t) = rows.first().map(track).transpose()? else {
        return Ok(None);
    };
    Ok(Some(tag(db, &t, None, session)?.len()))
}
