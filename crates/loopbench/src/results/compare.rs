//! `loopbench compare`: two saved sessions, shape by shape and arm by arm.
//!
//! Two sessions are independent samples (different processes, times,
//! perhaps machines), so nothing pairs round by round. Each side's unit is
//! an epoch (a fresh process, so a fresh layout): its median ns/iter. The
//! change is Welch's t interval on the difference of the mean log epoch
//! medians ([`crate::stats::epochs::welch_log_change`]); when either
//! session has a single epoch the units are its rounds, and the interval
//! then knows nothing of layout and says so. This is weaker than the
//! paired comparison of arms inside one session, which every report says.

use super::{EngineInfo, Session};
use crate::machine::Machine;
use crate::stats::{self, Verdict};
use serde::{Deserialize, Serialize};

/// The schema comparisons are written with.
pub const SCHEMA: &str = "loopbench-compare/1";

/// One side of a comparison.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SessionRef {
    /// What the user named it (a path).
    pub label: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    pub machine: Machine,
    pub engines: Vec<EngineInfo>,
}

/// One shape and arm, B against A.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct CompareRow {
    pub shape: String,
    pub arm: String,
    /// Median ns per iteration in each session.
    pub a_ns_per_iter: f64,
    pub b_ns_per_iter: f64,
    /// `epochs` or `rounds`: what one unit of each side is.
    pub units: String,
    pub a_units: usize,
    pub b_units: usize,
    pub median_pct: f64,
    pub ci_pct: [f64; 2],
    /// Faster or slower when the interval excludes zero, else within noise
    /// (no change).
    pub verdict: Verdict,
}

/// B against A.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SessionComparison {
    pub schema: String,
    pub a: SessionRef,
    pub b: SessionRef,
    pub confidence: f64,
    /// How the intervals were built, in words.
    pub method: String,
    /// Fingerprint fields that differ (`field: a vs b`).
    pub mismatches: Vec<String>,
    /// Everything a reader must know before believing a number.
    pub warnings: Vec<String>,
    pub rows: Vec<CompareRow>,
    /// Shapes or arms in only one of the two sessions.
    pub unmatched: Vec<String>,
}

/// What the comparison of two sessions means, once.
pub const METHOD: &str = "Welch t interval on the difference of mean log per-epoch medians \
(per-round values when a session has one epoch), two sessions treated as independent";

/// The warning every comparison carries.
pub const WEAKER: &str = "comparing two sessions is weaker than comparing arms inside one session: \
between them the machine's state, its load and the process layouts changed, and no null control spans both";

/// Why two sides' values give no change: too few of them, or too few
/// that are times at all (a change on the log scale needs two positive,
/// finite values a side; a saved session may hold zeros or negatives).
fn not_comparable(units: &str, a: &[f64], b: &[f64]) -> String {
    let non_positive: Vec<String> = [("A", a), ("B", b)]
        .into_iter()
        .filter_map(|(side, xs)| {
            let positive = xs.iter().filter(|x| **x > 0.0 && x.is_finite()).count();
            (xs.len() >= 2 && positive < 2).then(|| {
                format!(
                    "{} of the {} {units} in {side} have non-positive (or non-finite) samples",
                    xs.len() - positive,
                    xs.len()
                )
            })
        })
        .collect();
    if non_positive.is_empty() {
        format!("fewer than two measured {units} on a side")
    } else {
        format!(
            "{}; a change needs two positive times on a side",
            non_positive.join(", ")
        )
    }
}

/// `b` against `a`.
pub fn compare(a: &Session, a_label: &str, b: &Session, b_label: &str) -> SessionComparison {
    let level = a.session.confidence_level;
    let mismatches: Vec<String> = a
        .machine
        .differences(&b.machine)
        .iter()
        .map(|m| m.to_string())
        .collect();
    let mut warnings = vec![WEAKER.to_string()];
    if !mismatches.is_empty() {
        warnings.push(format!(
            "MACHINE FINGERPRINTS DIFFER ({}): every change below mixes the machine with the engine",
            mismatches.join("; ")
        ));
    }
    for ea in &a.session.engines {
        if let Some(eb) = b.session.engines.iter().find(|e| e.arm == ea.arm) {
            let rev = |e: &EngineInfo| {
                e.git
                    .as_ref()
                    .map(|g| format!(" ({g})"))
                    .unwrap_or_default()
            };
            let (va, vb) = (
                format!("{}{}", ea.version, rev(ea)),
                format!("{}{}", eb.version, rev(eb)),
            );
            if va != vb {
                warnings.push(format!("{}: {va} in A, {vb} in B", ea.arm));
            }
        }
    }
    if a.session.metric != b.session.metric {
        warnings.push(format!(
            "A was measured by {}, B by {}",
            a.session.metric.name(),
            b.session.metric.name()
        ));
    }
    let mut rows = Vec::new();
    let mut unmatched = Vec::new();
    for ra in &a.results {
        let Some(rb) = b.results.iter().find(|r| r.shape == ra.shape) else {
            unmatched.push(format!("{}: only in A", ra.shape));
            continue;
        };
        for arm_a in ra.arms.iter().filter(|x| !x.role.is_null()) {
            let Some(arm_b) = rb.arms.iter().find(|x| x.arm == arm_a.arm) else {
                unmatched.push(format!("{} {}: only in A", ra.shape, arm_a.arm));
                continue;
            };
            let (ea, eb) = (arm_a.samples_by_epoch(), arm_b.samples_by_epoch());
            let (va, vb) = (by_variant(arm_a), by_variant(arm_b));
            let (units, xa, xb) = if va.len() >= 2 && vb.len() >= 2 {
                // Builds in layout variants: each variant is one draw of the
                // build's layout, so the variants are the units.
                ("layout variants", va, vb)
            } else if ea.len() >= 2 && eb.len() >= 2 {
                let meds = |m: &std::collections::BTreeMap<u32, Vec<f64>>| -> Vec<f64> {
                    m.values()
                        .filter(|v| !v.is_empty())
                        .map(|v| stats::median(v))
                        .collect()
                };
                ("epochs", meds(&ea), meds(&eb))
            } else {
                (
                    "rounds",
                    arm_a.samples_ns_per_iter.clone(),
                    arm_b.samples_ns_per_iter.clone(),
                )
            };
            let Some((median_pct, ci_pct)) = stats::epochs::welch_log_change(&xa, &xb, level)
            else {
                unmatched.push(format!(
                    "{} {}: {}",
                    ra.shape,
                    arm_a.arm,
                    not_comparable(units, &xa, &xb)
                ));
                continue;
            };
            let verdict = if ci_pct[1] < 0.0 {
                Verdict::Faster
            } else if ci_pct[0] > 0.0 {
                Verdict::Slower
            } else {
                Verdict::WithinNoise
            };
            rows.push(CompareRow {
                shape: ra.shape.clone(),
                arm: arm_a.arm.clone(),
                a_ns_per_iter: stats::median(&arm_a.samples_ns_per_iter),
                b_ns_per_iter: stats::median(&arm_b.samples_ns_per_iter),
                units: units.to_string(),
                a_units: xa.len(),
                b_units: xb.len(),
                median_pct,
                ci_pct,
                verdict,
            });
        }
        for arm_b in rb.arms.iter().filter(|x| !x.role.is_null()) {
            if !ra.arms.iter().any(|x| x.arm == arm_b.arm) {
                unmatched.push(format!("{} {}: only in B", rb.shape, arm_b.arm));
            }
        }
    }
    for rb in &b.results {
        if !a.results.iter().any(|r| r.shape == rb.shape) {
            unmatched.push(format!("{}: only in B", rb.shape));
        }
    }
    let side = |s: &Session, label: &str| SessionRef {
        label: label.to_string(),
        id: s.id.clone(),
        machine: s.machine.clone(),
        engines: s.session.engines.clone(),
    };
    SessionComparison {
        schema: SCHEMA.to_string(),
        a: side(a, a_label),
        b: side(b, b_label),
        confidence: level,
        method: METHOD.to_string(),
        mismatches,
        warnings,
        rows,
        unmatched,
    }
}

impl SessionComparison {
    /// Whether rows were compared and none shows a change (e.g. a session
    /// against itself).
    pub fn no_change(&self) -> bool {
        !self.rows.is_empty() && self.rows.iter().all(|r| r.verdict == Verdict::WithinNoise)
    }
}

/// An arm's value per layout variant of its build (the geometric mean of
/// the medians of the epochs that ran it); empty for a fixed build.
fn by_variant(arm: &super::ArmResult) -> Vec<f64> {
    let mut logs: std::collections::BTreeMap<u32, Vec<f64>> = Default::default();
    for (epoch, samples) in arm.samples_by_epoch() {
        let (Some(v), false) = (arm.build_variants.get(&epoch), samples.is_empty()) else {
            continue;
        };
        logs.entry(*v)
            .or_default()
            .push(stats::median(&samples).ln());
    }
    logs.values()
        .map(|l| (l.iter().sum::<f64>() / l.len() as f64).exp())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An arm of 4 epochs, 2 reps each, `values[e]` per epoch, and the
    /// variant each epoch ran.
    fn arm(values: [f64; 4], variants: &[(u32, u32)]) -> super::super::ArmResult {
        let reps: Vec<serde_json::Value> = (0..8)
            .map(|i| serde_json::json!({"epoch": i / 2, "round": i % 2, "slot": 0, "iters": 1, "ns": values[i / 2]}))
            .collect();
        let samples: Vec<f64> = (0..8).map(|i| values[i / 2]).collect();
        let variants: std::collections::BTreeMap<String, u32> =
            variants.iter().map(|(e, v)| (e.to_string(), *v)).collect();
        serde_json::from_value(serde_json::json!({
            "arm": "a", "role": "candidate", "version": "v", "verified_reps": 8,
            "samples_ns_per_iter": samples, "reps": reps, "build_variants": variants,
        }))
        .unwrap()
    }

    #[test]
    fn variants_are_the_units_of_an_arm_in_layout_variants() {
        // Epochs 0 and 2 ran variant 0, epochs 1 and 3 variant 1.
        let a = arm([1.0, 2.0, 4.0, 8.0], &[(0, 0), (1, 1), (2, 0), (3, 1)]);
        let v = by_variant(&a);
        assert_eq!(v.len(), 2);
        assert!(
            (v[0] - 2.0).abs() < 1e-12,
            "geometric mean of 1 and 4: {v:?}"
        );
        assert!(
            (v[1] - 4.0).abs() < 1e-12,
            "geometric mean of 2 and 8: {v:?}"
        );
        // A fixed build has no variants.
        assert!(by_variant(&arm([1.0, 2.0, 4.0, 8.0], &[])).is_empty());
    }
}
