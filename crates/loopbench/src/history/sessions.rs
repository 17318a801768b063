//! Sessions in the store: recorded from a run or an imported file, listed,
//! read back as series, named as baselines and loaded back whole.

use super::store::{transaction, Row, Sql, StoreError, Value};
use crate::arm::build::Source;
use crate::arm::ArmSpec;
use crate::results::{build_identity, Role, Session, ShapeResult};
use crate::stats::sessions::Stored;
use std::collections::BTreeMap;

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

/// The build an arm label names, as stored: engine, options, source.
struct ArmParts {
    engine: String,
    options: String,
    source: String,
    commit: Option<String>,
}

/// The commit id a git arm's version states (`... commit <40 hex>`).
fn commit_in(version: &str) -> Option<String> {
    version.match_indices("commit ").find_map(|(i, m)| {
        let id: String = version[i + m.len()..].chars().take(40).collect();
        (id.len() == 40 && id.chars().all(|c| c.is_ascii_hexdigit())).then_some(id)
    })
}

/// A stored arm's build as the listings show it: its version, and the
/// first 12 characters of its commit (a row written straight into the
/// database may hold any text there, so characters, not bytes).
pub fn build_label(version: &str, commit: Option<&str>) -> String {
    match commit {
        Some(c) => format!("{version} {}", short_commit(c)),
        None => version.to_string(),
    }
}

/// Whether a session brought a new build of an arm, from the stored
/// builds (version and commit) of the session before and its own:
/// `Some(true)` when they differ, `Some(false)` when they agree and both
/// name the loopbench binary that hosted or built them (`loopbench ID`,
/// recorded since 2026-12-04), `None` otherwise: an older version string
/// says `this binary` whichever binary it was, and two loopbench binaries
/// are two builds of a compiled-in engine (tinywasm 0.10.0's
/// locals_traffic ran at 3.6x and 2.6x wasm3 in two binaries that differed
/// in report code only, both recorded as one version).
pub fn new_build(before: (&str, Option<&str>), at: (&str, Option<&str>)) -> Option<bool> {
    if before != at {
        return Some(true);
    }
    let names_binary = |v: &str| {
        v.match_indices("loopbench ").any(|(i, m)| {
            let id = &v[i + m.len()..];
            id.len() >= 12 && id.bytes().take(12).all(|b| b.is_ascii_hexdigit())
        })
    };
    names_binary(at.0).then_some(false)
}

/// A commit as listings show it: `@` and its first 12 characters.
pub fn short_commit(commit: &str) -> String {
    format!("@{}", commit.chars().take(12).collect::<String>())
}

fn arm_parts(label: &str, version: &str) -> ArmParts {
    // The null control is the baseline arm again, under a marked label.
    let spec_text = label.strip_suffix("#null").unwrap_or(label);
    match spec_text.parse::<ArmSpec>() {
        Ok(spec) => {
            let (source, commit) = match spec.worker.as_ref().map(|w| &w.source) {
                None | Some(Source::Default) => ("built-in".to_string(), None),
                Some(Source::Registry(req)) => (format!("crates.io {req}"), None),
                Some(Source::Path(p)) => (format!("path {}", p.display()), None),
                Some(Source::Git { repo, rev }) => {
                    (format!("git {}#{rev}", repo.display()), commit_in(version))
                }
            };
            ArmParts {
                engine: spec.engine.name().to_string(),
                options: spec.options.join(","),
                source,
                commit,
            }
        }
        // An arm this loopbench no longer parses (an older file): keep
        // its label as the engine so nothing is lost.
        Err(_) => ArmParts {
            engine: spec_text.to_string(),
            options: String::new(),
            source: "unknown".to_string(),
            commit: None,
        },
    }
}

fn id_of(rows: Vec<Row>) -> Result<i64, StoreError> {
    rows.first()
        .ok_or_else(|| StoreError::Query("an insert returned no id".into()))?
        .int(0)
}

fn json(v: &impl serde::Serialize) -> Result<String, StoreError> {
    serde_json::to_string(v).map_err(|e| StoreError::Query(format!("cannot encode: {e}")))
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
    let session_id = id_of(db.query(
        &d.sql(
            "INSERT INTO sessions (machine_id, recorded_at, origin, label, job_id, schema_name,
                complete, metric, baseline_arm, null_arm, build_profile, wall_seconds, errors, document, uid,
                reference_arm)
             VALUES ($1, COALESCE($14, {now}), $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $15, $16)
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
            json(session)?.into(),
            p.recorded_at.into(),
            session.id.clone().into(),
            info.reference.clone().into(),
        ],
    )?)?;
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
    Ok(session_id)
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
        let summary_id = id_of(db.query(
            &d.sql(
                "INSERT INTO summaries (session_id, shape_id, arm_id, role, iters, verified_reps,
                    median_ns, min_ns, ns_per_op, vs_arm, change_pct, ci_low_pct, ci_high_pct,
                    verdict, epochs, skipped, error, ref_change_pct, ref_ci_low_pct, ref_ci_high_pct,
                    instructions_per_iter)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17,
                    $18, $19, $20, $21)
                 RETURNING id",
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
            ],
        )?)?;
        insert_reps(db, summary_id, r.iters, a)?;
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

/// Rows per INSERT: far below both databases' parameter limits, and few
/// round trips to a distant PostgreSQL.
const REPS_PER_INSERT: usize = 256;

fn insert_reps(
    db: &mut dyn Sql,
    summary_id: i64,
    iters: u64,
    a: &crate::results::ArmResult,
) -> Result<(), StoreError> {
    let d = db.dialect();
    // Schema 1 kept samples without rep records: one epoch, rounds in order.
    let rows: Vec<[Value; 8]> = if a.reps.len() == a.samples_ns_per_iter.len() {
        a.reps
            .iter()
            .map(|r| {
                [
                    summary_id.into(),
                    i64::from(r.epoch).into(),
                    i64::from(r.round).into(),
                    i64::from(r.slot).into(),
                    (r.iters as i64).into(),
                    r.ns.into(),
                    r.cpu_ns.into(),
                    r.involuntary_switches.map(|n| n as i64).into(),
                ]
            })
            .collect()
    } else {
        a.samples_ns_per_iter
            .iter()
            .enumerate()
            .map(|(i, ns_per_iter)| {
                [
                    summary_id.into(),
                    0i64.into(),
                    (i as i64).into(),
                    0i64.into(),
                    (iters as i64).into(),
                    (ns_per_iter * iters as f64).into(),
                    Value::Null,
                    Value::Null,
                ]
            })
            .collect()
    };
    for chunk in rows.chunks(REPS_PER_INSERT) {
        let marks: Vec<String> = (0..chunk.len())
            .map(|i| {
                let b = i * 8;
                format!(
                    "(${}, ${}, ${}, ${}, ${}, ${}, ${}, ${})",
                    b + 1,
                    b + 2,
                    b + 3,
                    b + 4,
                    b + 5,
                    b + 6,
                    b + 7,
                    b + 8
                )
            })
            .collect();
        let params: Vec<Value> = chunk.iter().flat_map(|r| r.iter().cloned()).collect();
        db.execute(
            &d.sql(&format!(
                "INSERT INTO reps (summary_id, epoch, round, slot, iters, ns, cpu_ns, involuntary_switches)
                 VALUES {}",
                marks.join(", ")
            )),
            &params,
        )?;
    }
    Ok(())
}

/// What [`record`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Recorded {
    /// Stored now, as this id.
    New(i64),
    /// Already stored as this id (the same session id; for older files
    /// without one, the same document): nothing stored.
    Existing(i64),
}

impl Recorded {
    pub fn id(self) -> i64 {
        match self {
            Recorded::New(id) | Recorded::Existing(id) => id,
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
        None => db.query(
            &d.sql("SELECT min(id) FROM sessions WHERE uid IS NULL AND document = $1"),
            &[json(session)?.into()],
        )?,
    };
    Ok(rows.first().map(|r| r.opt_int(0)).transpose()?.flatten())
}

/// Store `session` in its own transaction, unless it is stored already.
pub fn record(db: &mut dyn Sql, session: &Session, p: &Provenance) -> Result<Recorded, StoreError> {
    transaction(db, |db| match stored_as(db, session)? {
        Some(id) => Ok(Recorded::Existing(id)),
        None => insert(db, session, p).map(Recorded::New),
    })
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

/// One series: a machine, a shape, an arm and a metric.
#[derive(Clone, Debug, PartialEq)]
pub struct SeriesKey {
    /// The agent's label for fleet sessions, else `hostname (cpu)`.
    pub machine: String,
    pub shape: String,
    pub arm: String,
    pub metric: String,
}

/// One session's value in a series.
#[derive(Clone, Debug)]
pub struct Point {
    pub session_id: i64,
    /// The session's own id (`Session::id`), when it has one.
    pub uid: Option<String>,
    /// The machine's fingerprint ([`fingerprint`]).
    pub fingerprint: String,
    pub recorded: String,
    /// Median ns per iteration over the session's reps.
    pub median_ns: f64,
    pub min_ns: Option<f64>,
    pub version: String,
    pub commit: Option<String>,
    /// The arm's ratio to the session's reference arm, when it had one.
    pub anchored: Option<AnchoredPoint>,
    /// Exact instructions per iteration (callgrind sessions).
    pub instructions_per_iter: Option<f64>,
    /// Epochs of the session's shape (the units of its intervals).
    pub epochs: Option<i64>,
}

impl Point {
    /// The arm's build as stored: version and commit ([`new_build`]).
    pub fn build(&self) -> (&str, Option<&str>) {
        (&self.version, self.commit.as_deref())
    }
}

/// A point's ratio to its session's reference.
#[derive(Clone, Debug, PartialEq)]
pub struct AnchoredPoint {
    pub reference: String,
    /// The reference's version as that session resolved it: a series is
    /// one yardstick only while this stays the same.
    pub reference_version: String,
    pub change_pct: f64,
    pub ci_pct: [f64; 2],
}

/// Every series matching the filters (empty filter: any), with its
/// points in recording order.
pub fn series(
    db: &mut dyn Sql,
    shape: Option<&str>,
    arm: Option<&str>,
    metric: Option<&str>,
) -> Result<Vec<(SeriesKey, Vec<Point>)>, StoreError> {
    let d = db.dialect();
    // Read-only commands never migrate: a database from before anchored
    // sessions (schema 3) has none of their columns.
    let (anchored, reference_join) = if super::store::version(db)? >= 4 {
        (
            "s.reference_arm, r.version, x.ref_change_pct, x.ref_ci_low_pct, x.ref_ci_high_pct, \
             x.instructions_per_iter",
            "LEFT JOIN arms r ON r.session_id = s.id AND r.label = s.reference_arm",
        )
    } else {
        ("NULL, NULL, NULL, NULL, NULL, NULL", "")
    };
    let rows = db.query(
        &d.sql(&format!(
            "SELECT COALESCE(s.label, m.hostname || ' (' || m.cpu || ')'), h.name, a.label, s.metric, s.id, {},
                    x.median_ns, x.min_ns, a.version, a.commit_id, s.uid, m.fingerprint, {anchored}, x.epochs
             FROM summaries x
             JOIN sessions s ON s.id = x.session_id
             JOIN machines m ON m.id = s.machine_id
             JOIN shapes h ON h.id = x.shape_id
             JOIN arms a ON a.id = x.arm_id
             {reference_join}
             WHERE x.median_ns IS NOT NULL AND x.role NOT IN ('null', 'build_null')
               AND ($1 = '' OR h.name = $1) AND ($2 = '' OR a.label = $2) AND ($3 = '' OR s.metric = $3)
             ORDER BY 1, 2, 3, 4, s.recorded_at, s.id",
            d.datetime("s.recorded_at")
        )),
        &[
            shape.unwrap_or("").into(),
            arm.unwrap_or("").into(),
            metric.unwrap_or("").into(),
        ],
    )?;
    let mut out: Vec<(SeriesKey, Vec<Point>)> = Vec::new();
    for r in rows {
        let key = SeriesKey {
            machine: r.text(0)?,
            shape: r.text(1)?,
            arm: r.text(2)?,
            metric: r.text(3)?,
        };
        let anchored = match (r.opt_text(12)?, r.opt_real(14)?) {
            (Some(reference), Some(change_pct)) => Some(AnchoredPoint {
                reference,
                reference_version: build_identity(&r.opt_text(13)?.unwrap_or_default()),
                change_pct,
                ci_pct: [
                    r.opt_real(15)?.unwrap_or(f64::NAN),
                    r.opt_real(16)?.unwrap_or(f64::NAN),
                ],
            }),
            _ => None,
        };
        let point = Point {
            session_id: r.int(4)?,
            recorded: r.text(5)?,
            median_ns: r.real(6)?,
            min_ns: r.opt_real(7)?,
            version: build_identity(&r.text(8)?),
            commit: r.opt_text(9)?,
            uid: r.opt_text(10)?,
            fingerprint: r.text(11)?,
            anchored,
            instructions_per_iter: r.opt_real(17)?,
            epochs: r.opt_int(18)?,
        };
        match out.last_mut() {
            Some((k, points)) if *k == key => points.push(point),
            _ => out.push((key, vec![point])),
        }
    }
    Ok(out)
}

/// The values of repeated sessions of one series on one machine, for the
/// between-session term of `compare` ([`crate::stats::sessions::Between`]),
/// with each one's own standard error on the log scale where it is known:
/// the sessions of `q`'s machine, shape, arm and metric, of the first of
/// `q.versions` that has at least `MIN_SESSIONS` of them, leaving out
/// `q.exclude`. With `q.reference`, the arm's ratios to that reference
/// build (whose own intervals give the standard errors); else its median
/// ns/iter (standard errors unknown).
pub fn repeated(
    db: &mut dyn Sql,
    q: &crate::results::compare::SeriesQuery,
) -> Result<(Vec<f64>, Vec<f64>), StoreError> {
    let fp = fingerprint(&q.machine);
    let points: Vec<Point> = series(db, Some(&q.shape), Some(&q.arm), Some(&q.metric))?
        .into_iter()
        .flat_map(|(_, p)| p)
        .filter(|p| p.fingerprint == fp)
        .filter(|p| p.uid.as_ref().is_none_or(|u| !q.exclude.contains(u)))
        .collect();
    let value = |p: &Point| -> Option<(f64, f64)> {
        if let (Some((label, build)), Some(a)) = (&q.reference, &p.anchored) {
            if a.reference != *label || a.reference_version != *build {
                return None;
            }
        }
        let s = stored(p, q.reference.is_some())?;
        Some((s.value, s.own.map_or(f64::NAN, |(se, _)| se)))
    };
    let mut best = (Vec::new(), Vec::new());
    for v in &q.versions {
        let (values, se): (Vec<f64>, Vec<f64>) = points
            .iter()
            .filter(|p| p.version == *v)
            .filter_map(value)
            .unzip();
        if values.len() >= crate::stats::sessions::MIN_SESSIONS {
            return Ok((values, se));
        }
        if values.len() > best.0.len() {
            best = (values, se);
        }
    }
    Ok(best)
}

/// A point as a stored session of its series: its ratio to its
/// reference (`anchored`; the standard error of its log from its stored
/// interval, a t interval across the shape's epochs) or its median ns/iter
/// (no standard error kept).
fn stored(p: &Point, anchored: bool) -> Option<Stored> {
    if !anchored {
        return Some(Stored {
            value: p.median_ns,
            own: None,
        });
    }
    let a = p.anchored.as_ref()?;
    let df = p.epochs.map_or(f64::NAN, |e| e as f64 - 1.0);
    let log = |pct: f64| (pct / 100.0).ln_1p();
    let half = (log(a.ci_pct[1]) - log(a.ci_pct[0])) / 2.0;
    let se = half / crate::stats::dist::t_quantile(0.975, df);
    Some(Stored {
        value: 1.0 + a.change_pct / 100.0,
        own: (se.is_finite() && df >= 1.0).then_some((se, df)),
    })
}

/// Every series of one kind on `q`'s machine and metric, oldest session
/// first, for [`crate::stats::sessions::Calibration::learn`]: anchored
/// (ratios to a reference, one series per shape, arm, build and reference
/// build) or absolute (ns/iter, one per shape, arm and build); `q.exclude`
/// left out.
pub fn same_build_series(
    db: &mut dyn Sql,
    q: &crate::results::compare::SeriesQuery,
    anchored: bool,
) -> Result<Vec<Vec<Stored>>, StoreError> {
    let fp = fingerprint(&q.machine);
    let mut groups: BTreeMap<(String, String, String, String, String), Vec<Stored>> =
        BTreeMap::new();
    for (key, points) in series(db, None, None, Some(&q.metric))? {
        for p in points
            .iter()
            .filter(|p| p.fingerprint == fp)
            .filter(|p| p.uid.as_ref().is_none_or(|u| !q.exclude.contains(u)))
        {
            let reference = match (&p.anchored, anchored) {
                (Some(a), true) => (a.reference.clone(), a.reference_version.clone()),
                (None, true) => continue,
                (_, false) => Default::default(),
            };
            if let Some(s) = stored(p, anchored) {
                groups
                    .entry((
                        key.shape.clone(),
                        key.arm.clone(),
                        p.version.clone(),
                        reference.0,
                        reference.1,
                    ))
                    .or_default()
                    .push(s);
            }
        }
    }
    Ok(groups.into_values().collect())
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
        &d.sql("SELECT document FROM sessions WHERE id = $1"),
        &[id.into()],
    )?;
    let text = rows
        .first()
        .ok_or_else(|| StoreError::Query(format!("no session {id}")))?
        .text(0)?;
    match crate::results::parse(&text) {
        Ok(doc) => doc
            .session()
            .cloned()
            .ok_or_else(|| StoreError::Query(format!("session {id} holds no session"))),
        Err(e) => Err(StoreError::Query(format!("session {id}: {e}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_build_is_known_the_same_only_when_it_names_its_binary() {
        let named = "tinywasm 0.10.0 [worker: this binary, loopbench 50b46371cb88]";
        let other = "tinywasm 0.10.0 [worker: this binary, loopbench 201b50a9afc4]";
        let old = "tinywasm 0.10.0 [worker: this binary]";
        assert_eq!(new_build((named, None), (named, None)), Some(false));
        assert_eq!(new_build((named, None), (other, None)), Some(true));
        assert_eq!(new_build((old, None), (named, None)), Some(true));
        // Recorded before versions named the binary: which one is unknown.
        assert_eq!(new_build((old, None), (old, None)), None);
        assert_eq!(new_build((old, Some("a")), (old, Some("b"))), Some(true));
        assert_eq!(
            new_build(("x [loopbench 12ab]", None), ("x [loopbench 12ab]", None)),
            None,
            "not an id"
        );
    }

    #[test]
    fn git_arms_keep_their_commit() {
        let id = "0123456789abcdef0123456789abcdef01234567";
        let p = arm_parts(
            "wasmi=git:../wasmi#main#null",
            &format!("2.0.0 [worker: git ../wasmi#main commit {id}, profile release]"),
        );
        assert_eq!(p.engine, "wasmi");
        assert_eq!(p.source, "git ../wasmi#main");
        assert_eq!(p.commit.as_deref(), Some(id));
        assert_eq!(commit_in("2.0.0 commit 0123"), None);
        let old = arm_parts("gone-engine:x", "1");
        assert_eq!(
            (old.engine.as_str(), old.source.as_str()),
            ("gone-engine:x", "unknown")
        );
    }
}
