//! Counter readings reduced like times: per arm, median and minimum per
//! iteration and per op; per candidate, the paired change against the
//! baseline with its interval and the verdict against the null control,
//! for every counter (the same `stats::paired_change` and `stats::verdict`
//! as for time).
//!
//! A rep without a value for a counter (the counter was unavailable for that
//! call) is left out of that counter's statistics and pairs; it is never
//! read as zero.

use crate::measure::{callgrind, perf, tsc, Reading};
use crate::results::{
    group_by_epoch, reps_against, ArmCounters, Comparison, CounterComparison, CounterSummary,
    MedianMin, NullControl, RepRecord, Role, ShapeResult,
};
use crate::stats;
use std::collections::BTreeMap;

/// How a reading is shown: its key, table header and meaning.
pub struct MetricInfo {
    pub key: &'static str,
    /// Short header for per-op table columns.
    pub column: &'static str,
    /// The word used in one-line summaries.
    pub word: &'static str,
}

/// The readings that are summarised and compared, in display order.
pub const METRICS: &[MetricInfo] = &[
    MetricInfo {
        key: tsc::NAME,
        column: "TSC-cyc/op",
        word: "TSC cycles",
    },
    MetricInfo {
        key: "cycles",
        column: "cycles/op",
        word: "cycles",
    },
    MetricInfo {
        key: "instructions",
        column: "instr/op",
        word: "instructions",
    },
    MetricInfo {
        key: callgrind::NAME,
        column: "Ir/op",
        word: "instructions (callgrind)",
    },
    MetricInfo {
        key: "branches",
        column: "branch/op",
        word: "branches",
    },
    MetricInfo {
        key: "branch_misses",
        column: "br-miss/op",
        word: "branch misses",
    },
];

pub fn metric(key: &str) -> Option<&'static MetricInfo> {
    METRICS.iter().find(|m| m.key == key)
}

impl MedianMin {
    fn of(xs: &[f64]) -> Option<Self> {
        (!xs.is_empty()).then(|| MedianMin {
            median: stats::median(xs),
            min: stats::min(xs),
        })
    }
    fn scaled(self, by: f64) -> Self {
        MedianMin {
            median: self.median / by,
            min: self.min / by,
        }
    }
}

/// Reduce the readings of one arm's reps (round order). `iters` is the
/// iteration count of every rep; `ops_per_iter` the shape's wasm ops per
/// iteration when known.
pub fn summarise_arm(readings: &[&Reading], iters: f64, ops_per_iter: Option<f64>) -> ArmCounters {
    let mut out = ArmCounters::default();
    for m in METRICS {
        let samples: Vec<Option<f64>> = readings
            .iter()
            .map(|r| {
                r.counters
                    .get(m.key)
                    .copied()
                    .filter(|v| v.is_finite())
                    .map(|v| v / iters)
            })
            .collect();
        let present: Vec<f64> = samples.iter().flatten().copied().collect();
        let Some(per_iter) = MedianMin::of(&present) else {
            continue;
        };
        let per_op = ops_per_iter
            .filter(|o| *o > 0.0)
            .map(|o| per_iter.scaled(o));
        out.values.insert(
            m.key.to_string(),
            CounterSummary {
                per_iter,
                per_op,
                reps: present.len(),
                samples_per_iter: samples,
            },
        );
    }
    let ipc: Vec<f64> = readings
        .iter()
        .filter_map(
            |r| match (r.counters.get("instructions"), r.counters.get("cycles")) {
                (Some(i), Some(c)) if *c > 0.0 => Some(i / c),
                _ => None,
            },
        )
        .collect();
    out.ipc = (!ipc.is_empty()).then(|| stats::median(&ipc));
    let fractions: Vec<f64> = readings
        .iter()
        .filter_map(|r| r.counters.get(perf::RUNNING_FRACTION).copied())
        .collect();
    out.perf_running_fraction_min = (!fractions.is_empty()).then(|| stats::min(&fractions));
    out
}

/// Pairs of rounds where both arms have a value.
fn paired(cand: &[Option<f64>], base: &[Option<f64>]) -> (Vec<f64>, Vec<f64>) {
    cand.iter()
        .zip(base)
        .filter_map(|(c, b)| Some(((*c)?, (*b)?)))
        .unzip()
}

/// Time and exact instruction counts of one comparison, side by side.
#[derive(Clone, Debug, PartialEq)]
pub struct SignCheck {
    /// The counter the instructions come from (`instructions`, `callgrind_ir`).
    pub counter: String,
    pub instructions_pct: f64,
    pub time_pct: f64,
    /// `Some(false)` when both changes are resolved (a verdict, not noise)
    /// and point in opposite directions: an alignment or prediction effect
    /// of the change, not its own cost. `None` when either is within noise.
    pub agrees: Option<bool>,
}

/// Time against executed instructions for `arm` on one shape, where an
/// instruction counter ran.
pub fn sign_check(r: &ShapeResult, arm: &str) -> Option<SignCheck> {
    let time = r.comparisons.iter().find(|c| c.arm == arm)?;
    let instr = [callgrind::NAME, "instructions"].iter().find_map(|k| {
        r.counter_comparisons
            .iter()
            .find(|c| c.arm == arm && c.counter == *k)
    })?;
    let resolved = |v: stats::Verdict| matches!(v, stats::Verdict::Faster | stats::Verdict::Slower);
    let agrees = (resolved(time.verdict) && resolved(instr.verdict))
        .then_some((time.median_pct > 0.0) == (instr.median_pct > 0.0));
    Some(SignCheck {
        counter: instr.counter.clone(),
        instructions_pct: instr.median_pct,
        time_pct: time.median_pct,
        agrees,
    })
}

/// Per counter: every non-baseline arm against the baseline, and the null
/// control's change (the floor the verdicts use), across epochs like time.
/// `arms` is `(label, role, counters, reps)` in session order; a rep
/// without a value for a counter is left out of that counter's pairs.
pub fn compare(
    arms: &[(&str, Role, &ArmCounters, &[RepRecord])],
) -> (Vec<CounterComparison>, BTreeMap<String, NullControl>) {
    let mut comparisons = Vec::new();
    let mut nulls = BTreeMap::new();
    let Some((base_label, _, base, base_reps)) =
        arms.iter().find(|(_, role, _, _)| *role == Role::Baseline)
    else {
        return (comparisons, nulls);
    };
    for m in METRICS {
        let Some(b) = base.values.get(m.key) else {
            continue;
        };
        let compare = |label: &str,
                       c: &ArmCounters,
                       reps: &[RepRecord],
                       null: Option<&stats::EpochChange>| {
            let s = c.values.get(m.key)?;
            // In a duet only the baseline's reps beside this arm pair.
            let (bv, br) = reps_against(&b.samples_per_iter, base_reps, label);
            let b = group_by_epoch(&bv, &br);
            let c = group_by_epoch(&s.samples_per_iter, reps);
            let (x, y): (Vec<Vec<f64>>, Vec<Vec<f64>>) = c
                .iter()
                .filter_map(|(e, c)| Some(paired(c, b.get(e)?)))
                .unzip();
            stats::compare(&x, &y, null, stats::LEVEL)
        };
        let null = arms
            .iter()
            .find(|(_, role, _, _)| *role == Role::Null)
            .and_then(|(label, _, c, reps)| compare(label, c, reps, None))
            .map(|c| c.change);
        if let Some(n) = &null {
            nulls.insert(m.key.to_string(), NullControl::of(n));
        }
        for (label, role, c, reps) in arms {
            if *role == Role::Baseline {
                continue;
            }
            if let Some(c) = compare(label, c, reps, null.as_ref()) {
                comparisons.push(CounterComparison {
                    counter: m.key.to_string(),
                    comparison: Comparison::of(label, base_label, &c),
                });
            }
        }
    }
    (comparisons, nulls)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reading(pairs: &[(&str, f64)]) -> Reading {
        Reading {
            ns: 1.0,
            counters: pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
        }
    }

    #[test]
    fn missing_values_are_absent_not_zero() {
        let r = [
            reading(&[
                (tsc::NAME, 1000.0),
                ("instructions", 500.0),
                ("cycles", 250.0),
            ]),
            reading(&[(tsc::NAME, 3000.0)]),
            reading(&[
                (tsc::NAME, 2000.0),
                ("instructions", 700.0),
                ("cycles", 350.0),
            ]),
        ];
        let refs: Vec<&Reading> = r.iter().collect();
        let s = summarise_arm(&refs, 10.0, Some(4.0));
        let t = &s.values[tsc::NAME];
        assert_eq!(
            t.per_iter,
            MedianMin {
                median: 200.0,
                min: 100.0
            }
        );
        assert_eq!(
            t.per_op,
            Some(MedianMin {
                median: 50.0,
                min: 25.0
            })
        );
        let i = &s.values["instructions"];
        assert_eq!(i.reps, 2);
        assert_eq!(i.samples_per_iter, vec![Some(50.0), None, Some(70.0)]);
        assert_eq!(i.per_iter.median, 60.0);
        assert_eq!(s.ipc, Some(2.0));
        assert!(!s.values.contains_key("branch_misses"));
        assert!(!s.multiplexed());
    }

    #[test]
    fn every_counter_is_compared_against_the_null_floor() {
        let arm = |vals: &[f64]| {
            let r: Vec<Reading> = vals
                .iter()
                .map(|v| reading(&[(callgrind::NAME, *v)]))
                .collect();
            summarise_arm(&r.iter().collect::<Vec<_>>(), 1.0, None)
        };
        let base = arm(&[100.0; 12]);
        let null = arm(&[100.0; 12]);
        let cand = arm(&[90.0; 12]);
        let (cmp, nulls) = compare(&[
            ("a", Role::Baseline, &base, &[]),
            ("b", Role::Candidate, &cand, &[]),
            ("a#null", Role::Null, &null, &[]),
        ]);
        assert_eq!(nulls[callgrind::NAME].median_pct, 0.0);
        let c = cmp.iter().find(|c| c.arm == "b").unwrap();
        assert!((c.median_pct + 10.0).abs() < 1e-9, "{c:?}");
        assert_eq!(c.verdict, stats::Verdict::Faster);
        let n = cmp.iter().find(|c| c.arm == "a#null").unwrap();
        assert_eq!(n.verdict, stats::Verdict::WithinNoise);
    }
}
