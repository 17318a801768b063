//! Sessions in the store: recorded from a run or an imported file, listed,
//! read back as series, named as baselines and loaded back whole.

use super::builds::arm_parts;
use super::store::{transaction, Row, Sql, StoreError, Value};
use crate::results::{Role, Session, ShapeResult};

/// Where a stored session came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    /// `loopbench run` on this machine.
    Run,
    /// `loopbench history import FILE`.
    Import,
    /// A fleet job, run by an agent.
    Job,
    /// A step of `loopbench bisect`.
    Bisect,
}

impl Origin {
    pub fn name(self) -> &'static str {
        match self {
            Origin::Run => "run",
            Origin::Import => "import",
            Origin::Job => "job",
            Origin::Bisect => "bisect",
        }
    }
}

/// What a stored session is tied to besides its results.
#[derive(Clone, Debug)]
pub struct Provenance<'a> {
    pub origin: Origin,
    /// The agent's machine label (fleet jobs).
    pub label: Option<&'a str>,
    pub job_id: Option<i64>,
    /// When the session ran, seconds since the epoch, where known better
    /// than "now" (an imported file's modification time).
    pub recorded_at: Option<f64>,
}

impl Provenance<'_> {
    pub fn of(origin: Origin) -> Self {
        Provenance {
            origin,
            label: None,
            job_id: None,
            recorded_at: None,
        }
    }
}

/// The identity of a machine across sessions: what does not change from
/// one session to the next (the load and the kernel release do).
pub fn fingerprint(m: &crate::machine::Machine) -> String {
    format!("{}|{}|{}|{}", m.hostname, m.cpu, m.cores, m.arch)
}

fn id_of(rows: Vec<Row>) -> Result<i64, StoreError> {
    rows.first()
        .ok_or_else(|| StoreError::Query("an insert returned no id".into()))?
        .int(0)
}

fn json(v: &impl serde::Serialize) -> Result<String, StoreError> {
    serde_json::to_string(v).map_err(|e| StoreError::Query(format!("cannot encode: {e}")))
}

/// What the reps of a stored document are cited as (they are in the
/// session's `reps` column, not a file).
const REPS_COLUMN: &str = "sessions.reps";

/// A session as stored: its document without its reps, and the reps
/// compressed ([`crate::results::reps`]), for the `document` and `reps`
/// columns.
fn stored(session: &Session) -> Result<(String, Value), StoreError> {
    let encode = |e: String| StoreError::Query(format!("cannot encode: {e}"));
    let value = serde_json::to_value(session).map_err(|e| encode(e.to_string()))?;
    let (document, reps) = crate::results::reps::split(value, REPS_COLUMN, "history");
    let reps = match reps {
        Some(r) => Value::Bytes(crate::results::reps::zip(&r).map_err(|e| encode(e.to_string()))?),
        None => Value::Null,
    };
    Ok((json(&document)?, reps))
}

/// Store `session` (inside the caller's transaction); its id.
pub fn insert(db: &mut dyn Sql, session: &Session, p: &Provenance) -> Result<i64, StoreError> {
    let d = db.dialect();
    let m = &session.machine;
    let machine_id = id_of(db.query(
        &d.sql(
            "INSERT INTO machines (fingerprint, hostname, cpu, cores, arch, os, machine_json)
             VALUES ($1, $2, $3, $4, $5, $6, $7)
             ON CONFLICT (fingerprint) DO UPDATE SET os = excluded.os, machine_json = excluded.machine_json
             RETURNING id",
        ),
        &[
            fingerprint(m).into(),
            m.hostname.as_str().into(),
            m.cpu.as_str().into(),
            (m.cores as i64).into(),
            m.arch.as_str().into(),
            m.os.as_str().into(),
            json(m)?.into(),
        ],
    )?)?;
    let info = &session.session;
    let metric = info.metric.key();
    let (document, reps) = stored(session)?;
    let session_id = id_of(db.query(
        &d.sql(
            "INSERT INTO sessions (machine_id, recorded_at, origin, label, job_id, schema_name,
                complete, metric, baseline_arm, null_arm, build_profile, wall_seconds, errors, document, uid,
                reference_arm, reps)
             VALUES ($1, COALESCE($14, {now}), $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $15, $16, $17)
             RETURNING id",
        ),
        &[
            machine_id.into(),
            p.origin.name().into(),
            p.label.into(),
            p.job_id.into(),
            session.schema.as_str().into(),
            i64::from(session.complete).into(),
            metric.into(),
            info.baseline.as_str().into(),
            info.null_arm.as_str().into(),
            info.build_profile.as_str().into(),
            session.wall_seconds.into(),
            (session.errors.len() as i64).into(),
            document.into(),
            p.recorded_at.into(),
            session.id.clone().into(),
            info.reference.clone().into(),
            reps,
        ],
    )?)?;
    insert_contents(db, session_id, session)?;
    Ok(session_id)
}

/// What the sessions row of `session_id` holds beside it: its arms, and
/// per shape its summaries (the reps are in the session row).
fn insert_contents(db: &mut dyn Sql, session_id: i64, session: &Session) -> Result<(), StoreError> {
    let d = db.dialect();
    let info = &session.session;
    // Every arm the session names, with the version it reported.
    let mut arms: Vec<(String, String)> = info
        .engines
        .iter()
        .map(|e| (e.arm.clone(), e.version.clone()))
        .collect();
    for r in &session.results {
        for a in &r.arms {
            if !arms.iter().any(|(l, _)| *l == a.arm) {
                arms.push((a.arm.clone(), a.version.clone()));
            }
        }
    }
    let mut arm_ids = std::collections::HashMap::new();
    for (label, version) in &arms {
        let parts = arm_parts(label, version);
        let id = id_of(db.query(
            &d.sql(
                "INSERT INTO arms (session_id, label, engine, options, version, source, commit_id)
                 VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id",
            ),
            &[
                session_id.into(),
                label.as_str().into(),
                parts.engine.into(),
                parts.options.into(),
                version.as_str().into(),
                parts.source.into(),
                parts.commit.into(),
            ],
        )?)?;
        arm_ids.insert(label.clone(), id);
    }
    for r in &session.results {
        insert_shape(db, session_id, r, &arm_ids)?;
    }
    Ok(())
}

/// Put the complete `session` in place of stored session `id`, an
/// incomplete copy of it (its `--json` file imported while it ran): the
/// id, and what refers to it (a baseline, a bisect step, an alert), stay.
fn replace(db: &mut dyn Sql, id: i64, session: &Session, p: &Provenance) -> Result<(), StoreError> {
    let d = db.dialect();
    // Rows of a copy stored before the reps went beside the document.
    db.execute(
        &d.sql(
            "DELETE FROM reps WHERE summary_id IN (SELECT id FROM summaries WHERE session_id = $1)",
        ),
        &[id.into()],
    )?;
    db.execute(
        &d.sql("DELETE FROM summaries WHERE session_id = $1"),
        &[id.into()],
    )?;
    db.execute(
        &d.sql("DELETE FROM arms WHERE session_id = $1"),
        &[id.into()],
    )?;
    let (document, reps) = stored(session)?;
    db.execute(
        &d.sql(
            "UPDATE sessions SET origin = $2, complete = $3, wall_seconds = $4, errors = $5,
                document = $6, reps = $7
             WHERE id = $1",
        ),
        &[
            id.into(),
            p.origin.name().into(),
            i64::from(session.complete).into(),
            session.wall_seconds.into(),
            (session.errors.len() as i64).into(),
            document.into(),
            reps,
        ],
    )?;
    insert_contents(db, id, session)
}

fn insert_shape(
    db: &mut dyn Sql,
    session_id: i64,
    r: &ShapeResult,
    arm_ids: &std::collections::HashMap<String, i64>,
) -> Result<(), StoreError> {
    let d = db.dialect();
    db.execute(
        &d.sql("INSERT INTO shapes (name, prices) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING"),
        &[r.shape.as_str().into(), r.prices.as_str().into()],
    )?;
    let shape_id = id_of(db.query(
        &d.sql("SELECT id FROM shapes WHERE name = $1"),
        &[r.shape.as_str().into()],
    )?)?;
    for a in &r.arms {
        let arm_id = *arm_ids
            .get(&a.arm)
            .ok_or_else(|| StoreError::Query(format!("arm {} was not stored", a.arm)))?;
        // The change of this arm against the baseline: its comparison, or
        // for the null control the null control's own change.
        let change = match a.role {
            Role::Null | Role::BuildNull => {
                let (null, what) = if a.role == Role::Null {
                    (&r.null_control, "null control")
                } else {
                    (&r.build_null, "build-layout null")
                };
                null.as_ref().map(|n| {
                    (
                        info_vs(r),
                        n.median_pct,
                        n.ci_pct,
                        what.to_string(),
                        n.layout.epochs,
                    )
                })
            }
            _ => r.comparisons.iter().find(|c| c.arm == a.arm).map(|c| {
                (
                    c.vs.clone(),
                    c.median_pct,
                    c.ci_pct,
                    c.verdict.to_string(),
                    c.layout.epochs,
                )
            }),
        };
        // Its ratio to the session's reference arm, the anchored series.
        let anchored = r.anchored.iter().find(|c| c.arm == a.arm);
        let epochs = r.stopped.as_ref().map(|s| s.epochs as i64).or_else(|| {
            change
                .as_ref()
                .map(|c| c.4 as i64)
                .filter(|e| *e > 0)
                .or(Some(a.samples_by_epoch().len() as i64))
        });
        let role = a.role.name();
        // Its spread across code layouts, and whether its change against
        // the baseline moves less than that spread (or the baseline's).
        let spread = a.layout_spread.as_ref();
        let inside_spread = r
            .comparisons
            .iter()
            .find(|c| c.arm == a.arm && !a.role.is_null())
            .map(|c| r.inside_layout_spread(c));
        db.execute(
            &d.sql(
                "INSERT INTO summaries (session_id, shape_id, arm_id, role, iters, verified_reps,
                    median_ns, min_ns, ns_per_op, vs_arm, change_pct, ci_low_pct, ci_high_pct,
                    verdict, epochs, skipped, error, ref_change_pct, ref_ci_low_pct, ref_ci_high_pct,
                    instructions_per_iter, layout_variants, layout_sd_pct, layout_sd_low_pct,
                    layout_sd_high_pct, inside_layout_spread, workload)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17,
                    $18, $19, $20, $21, $22, $23, $24, $25, $26, $27)",
            ),
            &[
                session_id.into(),
                shape_id.into(),
                arm_id.into(),
                role.into(),
                (r.iters as i64).into(),
                (a.verified_reps as i64).into(),
                a.ns_per_iter.as_ref().map(|m| m.median).into(),
                a.ns_per_iter.as_ref().map(|m| m.min).into(),
                a.ns_per_op.into(),
                change.as_ref().map(|c| c.0.clone()).into(),
                change.as_ref().map(|c| c.1).into(),
                change.as_ref().map(|c| c.2[0]).into(),
                change.as_ref().map(|c| c.2[1]).into(),
                change.as_ref().map(|c| c.3.clone()).into(),
                epochs.into(),
                a.skipped.clone().into(),
                a.error.clone().into(),
                anchored.map(|c| c.median_pct).into(),
                anchored.map(|c| c.ci_pct[0]).into(),
                anchored.map(|c| c.ci_pct[1]).into(),
                a.counters
                    .values
                    .get(crate::measure::callgrind::NAME)
                    .map(|c| c.per_iter.median)
                    .into(),
                spread.map(|l| l.variants as i64).into(),
                spread.map(|l| l.sd_pct).into(),
                spread.map(|l| l.ci_pct[0]).into(),
                spread.map(|l| l.ci_pct[1]).into(),
                inside_spread.map(i64::from).into(),
                r.identity.clone().into(),
            ],
        )?;
    }
    Ok(())
}

fn info_vs(r: &ShapeResult) -> String {
    r.arms
        .iter()
        .find(|a| a.role == Role::Baseline)
        .map(|a| a.arm.clone())
        .unwrap_or_default()
}

/// What [`record`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Recorded {
    /// Stored now, as this id.
    New(i64),
    /// Already stored as this id (the same session id; for older files
    /// without one, the same document): nothing stored.
    Existing(i64),
    /// Stored before only incomplete as this id, now complete in its place.
    Completed(i64),
}

impl Recorded {
    pub fn id(self) -> i64 {
        match self {
            Recorded::New(id) | Recorded::Existing(id) | Recorded::Completed(id) => id,
        }
    }
}

/// The id `session` is already stored as, if it is.
pub fn stored_as(db: &mut dyn Sql, session: &Session) -> Result<Option<i64>, StoreError> {
    let d = db.dialect();
    let rows = match &session.id {
        Some(uid) => db.query(
            &d.sql("SELECT min(id) FROM sessions WHERE uid = $1"),
            &[uid.as_str().into()],
        )?,
        // Without an id: the same document, as stored now (its reps apart)
        // or as stored before (inline).
        None => db.query(
            &d.sql(
                "SELECT min(id) FROM sessions WHERE uid IS NULL AND (document = $1 OR document = $2)",
            ),
            &[stored(session)?.0.into(), json(session)?.into()],
        )?,
    };
    Ok(rows.first().map(|r| r.opt_int(0)).transpose()?.flatten())
}

/// Store `session` in its own transaction, unless it is stored already;
/// a complete session stored before only incomplete (its `--json` file
/// imported while it ran) replaces that copy, under the same id.
pub fn record(db: &mut dyn Sql, session: &Session, p: &Provenance) -> Result<Recorded, StoreError> {
    transaction(db, |db| match stored_as(db, session)? {
        Some(id) if session.complete && !is_complete(db, id)? => {
            replace(db, id, session, p)?;
            Ok(Recorded::Completed(id))
        }
        Some(id) => Ok(Recorded::Existing(id)),
        None => insert(db, session, p).map(Recorded::New),
    })
}

fn is_complete(db: &mut dyn Sql, id: i64) -> Result<bool, StoreError> {
    let d = db.dialect();
    let rows = db.query(
        &d.sql("SELECT complete FROM sessions WHERE id = $1"),
        &[id.into()],
    )?;
    Ok(rows.first().map(|r| r.int(0)).transpose()?.unwrap_or(0) != 0)
}

/// Name session `id` as baseline `name` (replacing an earlier one).
pub fn save_baseline(db: &mut dyn Sql, name: &str, id: i64) -> Result<(), StoreError> {
    let d = db.dialect();
    db.execute(
        &d.sql(
            "INSERT INTO baselines (name, session_id) VALUES ($1, $2)
             ON CONFLICT (name) DO UPDATE SET session_id = excluded.session_id",
        ),
        &[name.into(), id.into()],
    )?;
    Ok(())
}

/// What a history keeps, and its room.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Kept {
    pub sessions: i64,
    /// Bytes of the sessions' documents (summaries; older ones with their
    /// reps inline).
    pub document_bytes: i64,
    /// Bytes of the sessions' reps, compressed.
    pub reps_bytes: i64,
    /// Rows of the `reps` table, which only sessions stored before the
    /// reps went beside the documents filled.
    pub rep_rows: i64,
}

/// What the history `db` keeps.
pub fn kept(db: &mut dyn Sql) -> Result<Kept, StoreError> {
    let dialect = db.dialect();
    let octets = |column: &str| match dialect {
        super::store::Dialect::Sqlite => format!("length(CAST({column} AS BLOB))"),
        super::store::Dialect::Postgres => format!("octet_length({column})"),
    };
    // A database the read-only commands found at an older version (they
    // never migrate) has no `reps` column yet.
    let reps = match super::store::version(db)? {
        v if v >= 11 => octets("reps"),
        _ => "0".to_string(),
    };
    let sql = format!(
        "SELECT count(*), CAST(COALESCE(SUM({}), 0) AS BIGINT), CAST(COALESCE(SUM({reps}), 0) AS BIGINT),
            (SELECT count(*) FROM reps)
         FROM sessions",
        octets("document"),
    );
    let rows = db.query(&sql, &[])?;
    let row = rows
        .first()
        .ok_or_else(|| StoreError::Query("a count returned no row".into()))?;
    Ok(Kept {
        sessions: row.int(0)?,
        document_bytes: row.int(1)?,
        reps_bytes: row.int(2)?,
        rep_rows: row.int(3)?,
    })
}

/// A stored session as listed.
#[derive(Clone, Debug)]
pub struct Listed {
    pub id: i64,
    pub recorded: String,
    pub hostname: String,
    pub label: Option<String>,
    pub origin: String,
    pub complete: bool,
    pub shapes: Vec<String>,
    pub arms: Vec<String>,
    pub baselines: Vec<String>,
}

/// Sessions, newest first, that ran `shape` and `arm` where given.
pub fn list(
    db: &mut dyn Sql,
    shape: Option<&str>,
    arm: Option<&str>,
    limit: usize,
) -> Result<Vec<Listed>, StoreError> {
    let d = db.dialect();
    let rows = db.query(
        &d.sql(&format!(
            "SELECT s.id, {}, m.hostname, s.label, s.origin, s.complete FROM sessions s
             JOIN machines m ON m.id = s.machine_id
             WHERE ($1 = '' OR EXISTS (SELECT 1 FROM summaries x JOIN shapes h ON h.id = x.shape_id
                                      WHERE x.session_id = s.id AND h.name = $1))
               AND ($2 = '' OR EXISTS (SELECT 1 FROM arms a WHERE a.session_id = s.id AND a.label = $2))
             ORDER BY s.id DESC LIMIT $3",
            d.datetime("s.recorded_at")
        )),
        &[
            shape.unwrap_or("").into(),
            arm.unwrap_or("").into(),
            (limit as i64).into(),
        ],
    )?;
    let mut out = Vec::new();
    for r in rows {
        let id = r.int(0)?;
        let shapes = texts(db.query(
            &d.sql(
                "SELECT DISTINCT h.name FROM summaries x JOIN shapes h ON h.id = x.shape_id
                 WHERE x.session_id = $1 ORDER BY h.name",
            ),
            &[id.into()],
        )?)?;
        let arms = texts(db.query(
            &d.sql("SELECT label FROM arms WHERE session_id = $1 AND label NOT LIKE '%#null' ORDER BY id"),
            &[id.into()],
        )?)?;
        let baselines = texts(db.query(
            &d.sql("SELECT name FROM baselines WHERE session_id = $1 ORDER BY name"),
            &[id.into()],
        )?)?;
        out.push(Listed {
            id,
            recorded: r.text(1)?,
            hostname: r.text(2)?,
            label: r.opt_text(3)?,
            origin: r.text(4)?,
            complete: r.int(5)? != 0,
            shapes,
            arms,
            baselines,
        });
    }
    Ok(out)
}

fn texts(rows: Vec<Row>) -> Result<Vec<String>, StoreError> {
    rows.iter().map(|r| r.text(0)).collect()
}

/// Which stored session a reference names: `@last`, `@baseline:NAME`, `@ID`.
pub fn resolve(db: &mut dyn Sql, reference: &str) -> Result<i64, StoreError> {
    let d = db.dialect();
    let missing = |what: String| StoreError::Query(format!("{reference}: {what}"));
    let rows = match reference.strip_prefix('@') {
        Some("last") => db.query("SELECT max(id) FROM sessions", &[])?,
        Some(name) if name.starts_with("baseline:") => db.query(
            &d.sql("SELECT session_id FROM baselines WHERE name = $1"),
            &[name["baseline:".len()..].into()],
        )?,
        Some(id) => {
            let id: i64 = id.parse().map_err(|_| {
                missing("expected @last, @baseline:NAME or @ID (a session id)".into())
            })?;
            db.query(
                &d.sql("SELECT id FROM sessions WHERE id = $1"),
                &[id.into()],
            )?
        }
        None => return Err(missing("a stored session is named with @".into())),
    };
    rows.first()
        .map(|r| r.opt_int(0))
        .transpose()?
        .flatten()
        .ok_or_else(|| missing("no such session in the history database".into()))
}

/// Stored session `id`, exactly as it was recorded.
pub fn load(db: &mut dyn Sql, id: i64) -> Result<Session, StoreError> {
    let d = db.dialect();
    let rows = db.query(
        &d.sql("SELECT document, reps FROM sessions WHERE id = $1"),
        &[id.into()],
    )?;
    let row = rows
        .first()
        .ok_or_else(|| StoreError::Query(format!("no session {id}")))?;
    let (text, reps) = (row.text(0)?, row.opt_bytes(1)?);
    let reps_of = |_: &str| match reps {
        Some(bytes) => crate::results::reps::unzip(bytes),
        None => Err("is empty".to_string()),
    };
    match crate::results::parse_with(&text, &reps_of) {
        Ok(doc) => doc
            .session()
            .cloned()
            .ok_or_else(|| StoreError::Query(format!("session {id} holds no session"))),
        Err(e) => Err(StoreError::Query(format!("session {id}: {e}"))),
    }
}

/// Stores a session of `loopbench run` in the history at `location` (as
/// `baseline` too) and says where, in words; a session that
/// did not complete is not recorded, and the words say so.
pub fn record_run(
    location: &super::Location,
    session: &Session,
    baseline: Option<&str>,
) -> Result<String, StoreError> {
    if !session.complete {
        return Ok("the session did not complete; not recorded".to_string());
    }
    let mut db = location.open()?;
    let recorded = record(db.as_mut(), session, &Provenance::of(Origin::Run))?;
    let id = recorded.id();
    let how = match recorded {
        Recorded::New(_) => "recorded",
        Recorded::Completed(_) => {
            "recorded whole (in place of its incomplete copy imported while it ran)"
        }
        Recorded::Existing(_) => "was recorded already",
    };
    Ok(match baseline {
        Some(name) => {
            save_baseline(db.as_mut(), name, id)?;
            format!("session {id} {how} in {location} as baseline `{name}`")
        }
        None => format!("session {id} {how} in {location}"),
    })
}
