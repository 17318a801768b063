//! Stored sessions read back as series: one shape and arm's points over
//! time on a machine (anchored to a reference arm where one was measured),
//! and the same-build groups that calibrate compare across sessions.

use super::sessions::fingerprint;
use super::store::{Sql, StoreError};
use crate::results::build_identity;
use crate::stats::sessions::Stored;
use std::collections::BTreeMap;

/// One series: a machine, a shape, an arm and a metric.
#[derive(Clone, Debug, PartialEq)]
pub struct SeriesKey {
    /// The agent's label for fleet sessions, else `hostname (cpu)`.
    pub machine: String,
    pub shape: String,
    /// A user's workload's identity (module, invocation, inputs): two of
    /// one name are two series.
    pub workload: Option<String>,
    pub arm: String,
    pub metric: String,
}

impl SeriesKey {
    /// The shape as a series names it: a workload with its identity.
    pub fn shape_label(&self) -> String {
        match &self.workload {
            Some(w) => format!("{} (workload {w})", self.shape),
            None => self.shape.clone(),
        }
    }
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
pub fn read(
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
    let workload = if super::store::version(db)? >= 10 {
        "x.workload"
    } else {
        "NULL"
    };
    let rows = db.query(
        &d.sql(&format!(
            "SELECT COALESCE(s.label, m.hostname || ' (' || m.cpu || ')'), h.name, a.label, s.metric, s.id, {},
                    x.median_ns, x.min_ns, a.version, a.commit_id, s.uid, m.fingerprint, {anchored}, x.epochs,
                    {workload}
             FROM summaries x
             JOIN sessions s ON s.id = x.session_id
             JOIN machines m ON m.id = s.machine_id
             JOIN shapes h ON h.id = x.shape_id
             JOIN arms a ON a.id = x.arm_id
             {reference_join}
             WHERE x.median_ns IS NOT NULL AND x.role NOT IN ('null', 'build_null')
               AND ($1 = '' OR h.name = $1) AND ($2 = '' OR a.label = $2) AND ($3 = '' OR s.metric = $3)
             ORDER BY 1, 2, 20, 3, 4, s.recorded_at, s.id",
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
            workload: r.opt_text(19)?,
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
    let points: Vec<Point> = read(db, Some(&q.shape), Some(&q.arm), Some(&q.metric))?
        .into_iter()
        .filter(|(k, _)| k.workload == q.workload)
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
    type Group = (String, Option<String>, String, String, String, String);
    let mut groups: BTreeMap<Group, Vec<Stored>> = BTreeMap::new();
    for (key, points) in read(db, None, None, Some(&q.metric))? {
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
                        key.workload.clone(),
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
