//! The figures a calibration is read by: per effect, how often its
//! interval held the truth (coverage) and how often it resolved the effect
//! with the right sign (detection); and the smallest effect that it and
//! every larger one tried were detected in at least 9 repetitions of 10.
//! For the null control a detection is a false alarm.

use super::repetition::Repetitions;
use super::{Effect, EffectSummary, Metric, MetricSummary, Reliable, Repetition, Row};
use crate::stats;

/// Fraction of `rows` whose interval holds `truth`: the coverage figure.
pub fn coverage(intervals: &[[f64; 2]], truth: f64) -> f64 {
    if intervals.is_empty() {
        return f64::NAN;
    }
    intervals
        .iter()
        .filter(|[lo, hi]| *lo <= truth && truth <= *hi)
        .count() as f64
        / intervals.len() as f64
}

/// Whether an interval resolves an effect of sign `truth` (for `truth == 0`,
/// whether it wrongly excludes zero).
pub fn detects(ci: [f64; 2], truth: f64) -> bool {
    if truth > 0.0 {
        ci[0] > 0.0
    } else if truth < 0.0 {
        ci[1] < 0.0
    } else {
        ci[0] > 0.0 || ci[1] < 0.0
    }
}

/// Repetitions needed for "reliably": at least 90% of them.
pub fn reliable_threshold(repetitions: usize) -> usize {
    (repetitions * 9).div_ceil(10)
}

/// Summaries per effect from the rows, and the smallest reliable effect.
pub fn summarise(
    effects: &[Effect],
    rows: &[Row],
    reps: &[Repetition],
) -> (Vec<EffectSummary>, Option<Reliable>) {
    let mut out = Vec::new();
    for e in effects {
        let mine: Vec<&Row> = rows.iter().filter(|r| r.true_pct == e.pct()).collect();
        let n = mine.len();
        let intervals: Vec<[f64; 2]> = mine.iter().map(|r| r.ci_pct).collect();
        let detected = mine.iter().filter(|r| r.detected).count();
        let medians: Vec<f64> = mine.iter().map(|r| r.median_pct).collect();
        let mins: Vec<f64> = mine.iter().map(|r| r.min_pct).collect();
        let widths: Vec<f64> = mine.iter().map(|r| r.ci_pct[1] - r.ci_pct[0]).collect();
        let bias: Vec<f64> = mine.iter().map(|r| r.true_pct - r.true_time_pct).collect();
        out.push(EffectSummary {
            true_pct: e.pct(),
            repetitions: n,
            covered: mine.iter().filter(|r| r.covered).count(),
            coverage: coverage(&intervals, e.pct()),
            detected,
            detection_rate: if n == 0 {
                f64::NAN
            } else {
                detected as f64 / n as f64
            },
            reliably_detected: !e.is_null() && n > 0 && detected >= reliable_threshold(n),
            median_pct: stats::median(&medians),
            mean_abs_error_pct: medians.iter().map(|m| (m - e.pct()).abs()).sum::<f64>()
                / n.max(1) as f64,
            min_pct: stats::median(&mins),
            mean_abs_error_min_pct: mins.iter().map(|m| (m - e.pct()).abs()).sum::<f64>()
                / n.max(1) as f64,
            median_ci_width_pct: stats::median(&widths),
            overhead_bias_pct: stats::median(&bias),
        });
    }
    // The smallest effect that is reliable with every larger one reliable too.
    let mut smallest = None;
    for s in out.iter().rev().filter(|s| s.true_pct > 0.0) {
        if !s.reliably_detected {
            break;
        }
        smallest = Some(s);
    }
    let secs: Vec<f64> = reps.iter().map(|r| r.session_seconds).collect();
    let reliable = smallest.map(|s| Reliable {
        true_pct: s.true_pct,
        detected: s.detected,
        repetitions: s.repetitions,
        median_session_seconds: stats::median(&secs),
        total_session_seconds: secs.iter().sum(),
    });
    (out, reliable)
}

/// The thread-CPU figures beside the wall clock's, where the machine read
/// that metric.
pub(super) fn thread_cpu(
    effects: &[Effect],
    measured: &Repetitions,
    call_overhead_ns: f64,
) -> Option<MetricSummary> {
    let rows = measured.rows_of(Metric::ThreadCpu);
    (!rows.is_empty()).then(|| {
        let (effects, smallest_reliable) = summarise(effects, &rows, &measured.repetitions);
        MetricSummary {
            metric: Metric::ThreadCpu,
            call_overhead_ns,
            base_call_ns: stats::median(&measured.base_calls[1]),
            effects,
            smallest_reliable,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::LEVEL;

    /// Synthetic samples with a known shift: the baseline drifts by 30%
    /// over the session, and each pair's ratio is the shift times a noise
    /// factor drawn without replacement from a symmetric set, so the true
    /// median ratio is exactly the shift. Intervals computed the way the
    /// calibration computes them cover the shift and detect it, and the
    /// null's intervals cover zero.
    #[test]
    fn coverage_on_synthetic_shift() {
        let n = 31;
        let noise = |i: usize, rep: usize| 1.0 + 0.001 * (((i * 7 + rep) % n) as f64 - 15.0);
        let mut shifted = Vec::new();
        let mut null = Vec::new();
        for rep in 0..10 {
            let base: Vec<f64> = (0..n).map(|i| 1e6 * (1.0 + 0.01 * i as f64)).collect();
            let cand: Vec<f64> = base
                .iter()
                .enumerate()
                .map(|(i, b)| b * 1.02 * noise(i, rep))
                .collect();
            let same: Vec<f64> = base
                .iter()
                .enumerate()
                .map(|(i, b)| b * noise(i, rep + 3))
                .collect();
            shifted.push(stats::paired_change(&cand, &base, LEVEL).unwrap().ci_pct);
            null.push(stats::paired_change(&same, &base, LEVEL).unwrap().ci_pct);
        }
        assert_eq!(coverage(&shifted, 2.0), 1.0);
        assert_eq!(coverage(&null, 0.0), 1.0);
        assert!(shifted.iter().all(|ci| detects(*ci, 2.0)));
        assert!(null.iter().all(|ci| !detects(*ci, 0.0)));
        // A truth outside every interval has zero coverage; a wrong sign is never a detection.
        assert_eq!(coverage(&shifted, 3.0), 0.0);
        assert!(!detects([1.0, 3.0], -2.0));
        assert_eq!(
            coverage(&[[0.0, 1.0], [2.0, 3.0], [0.5, 2.5], [-1.0, -0.5]], 0.75),
            0.5
        );
    }

    fn row(rep: usize, truth: f64, ci: [f64; 2]) -> Row {
        Row {
            repetition: rep,
            metric: Metric::Wall,
            arm: String::new(),
            true_pct: truth,
            true_time_pct: truth,
            base_iters: 0,
            iters: 0,
            median_pct: (ci[0] + ci[1]) / 2.0,
            ci_pct: ci,
            confidence: 0.95,
            pairs: 30,
            min_pct: truth,
            covered: ci[0] <= truth && truth <= ci[1],
            detected: detects(ci, truth),
            verdict: stats::Verdict::WithinNoise,
            session_seconds: 1.0,
            load_start: None,
            load_end: None,
        }
    }

    #[test]
    fn smallest_reliable_needs_nine_of_ten_and_every_larger() {
        let effects = [0, 50, 100, 200].map(Effect::from_bp);
        let mut rows = Vec::new();
        for rep in 1..=10 {
            rows.push(row(rep, 0.0, [-0.2, 0.2]));
            // 0.5%: detected in 8 of 10 only.
            rows.push(row(
                rep,
                0.5,
                if rep <= 8 { [0.1, 0.9] } else { [-0.1, 0.9] },
            ));
            // 1%: detected in 9 of 10, and covered in 9.
            rows.push(row(
                rep,
                1.0,
                if rep == 1 { [-0.1, 0.9] } else { [0.5, 1.5] },
            ));
            rows.push(row(rep, 2.0, [1.5, 2.5]));
        }
        let reps: Vec<Repetition> = (1..=10)
            .map(|r| Repetition {
                repetition: r,
                session_seconds: 2.0,
                rounds: 30,
                reps: 0,
                base_call_ns: 1.0,
                load_start: None,
                load_end: None,
            })
            .collect();
        let (sum, rel) = summarise(&effects, &rows, &reps);
        assert_eq!(sum[0].detected, 0);
        assert_eq!(sum[0].coverage, 1.0);
        assert!(!sum[1].reliably_detected);
        assert!(sum[2].reliably_detected);
        assert_eq!(sum[2].coverage, 0.9);
        let rel = rel.unwrap();
        assert_eq!(rel.true_pct, 1.0);
        assert_eq!(rel.total_session_seconds, 20.0);
        assert_eq!(reliable_threshold(10), 9);
        assert_eq!(reliable_threshold(2), 2);
    }
}
