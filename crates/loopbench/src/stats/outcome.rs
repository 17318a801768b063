//! Three outcomes, not two (methodology rule 16): a comparison is
//! **changed**, **unchanged** or **unsure**, and unsure earns more
//! measurement instead of being rounded to "within noise" or to a verdict.
//!
//! - changed: the verdict is `faster` or `slower` (the interval excludes
//!   zero and the median lies outside the noise floor, [`super::verdict`]);
//! - unchanged: not changed, and the whole interval lies inside
//!   `+-precision` (the change, if any, is smaller than the reader asked
//!   to resolve);
//! - unsure: neither yet. Chromium's Pinpoint keeps adding repeats while a
//!   comparison is in this state; the session's stop rule does the same
//!   ([`super::stop`]).
//!
//! This is the one implementation: a session's comparisons and, across
//! sessions, `compare` take their outcome from here.

use serde::{Deserialize, Serialize};

use super::Verdict;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Changed,
    Unchanged,
    Unsure,
}

impl Outcome {
    /// Decided either way: more measurement would not change the answer's
    /// kind.
    pub fn decided(self) -> bool {
        self != Outcome::Unsure
    }
}

impl std::fmt::Display for Outcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Outcome::Changed => "changed",
            Outcome::Unchanged => "unchanged",
            Outcome::Unsure => "unsure",
        })
    }
}

/// The outcome of a comparison with `verdict` and interval `ci_pct`, for a
/// reader who wants changes of `precision_pct` resolved.
pub fn outcome(verdict: Verdict, ci_pct: [f64; 2], precision_pct: f64) -> Outcome {
    match verdict {
        Verdict::Faster | Verdict::Slower => Outcome::Changed,
        Verdict::TooFewPairs => Outcome::Unsure,
        Verdict::WithinNoise => {
            let [lo, hi] = ci_pct;
            if lo.is_finite() && hi.is_finite() && -precision_pct <= lo && hi <= precision_pct {
                Outcome::Unchanged
            } else {
                Outcome::Unsure
            }
        }
    }
}

/// A comparison as a stop check sees it.
#[derive(Clone, Copy, Debug)]
pub struct Check {
    pub median_pct: f64,
    /// Its interval at `level`.
    pub ci_pct: [f64; 2],
    pub level: f64,
    pub pairs: usize,
    /// Degrees of freedom of the interval (epochs or build clusters - 1).
    pub df: f64,
}

impl Check {
    /// The two-sided p-value of no change on the interval's own footing
    /// (Student's t on the log scale, `df`): one minus the level of the
    /// widest such interval that still excludes zero. What counting many
    /// rows ([`discoveries`]) reads. `NaN` without an interval.
    pub fn p_value(&self) -> f64 {
        let log = |p: f64| (1.0 + p / 100.0).ln();
        let (lo, hi) = (log(self.ci_pct[0]), log(self.ci_pct[1]));
        if self.df.is_nan() || self.df < 1.0 || !(lo.is_finite() && hi.is_finite()) || hi < lo {
            return f64::NAN;
        }
        let mid = (lo + hi) / 2.0;
        let se = (hi - lo) / 2.0 / super::dist::t_quantile(0.5 + self.level / 2.0, self.df);
        if se == 0.0 {
            // Exact (a deterministic arm): a change or none, certainly.
            return if mid == 0.0 { 1.0 } else { 0.0 };
        }
        2.0 * (1.0 - super::dist::t_cdf(mid.abs() / se, self.df))
    }
}

/// The outcome of `c` judged at the stricter `strict_level`: the interval
/// widened on the log scale by the ratio of the t quantiles, the verdict
/// taken against `floor` as the session takes it.
pub fn outcome_at(
    c: &Check,
    floor: Option<[f64; 2]>,
    precision_pct: f64,
    strict_level: f64,
) -> Outcome {
    if c.df.is_nan() || c.df < 1.0 {
        return Outcome::Unsure;
    }
    let q = |level: f64| super::dist::t_quantile(0.5 + level / 2.0, c.df);
    let scale = q(strict_level) / q(c.level);
    let log = |p: f64| (1.0 + p / 100.0).ln();
    let pct = |y: f64| (y.exp() - 1.0) * 100.0;
    let (lo, hi) = (log(c.ci_pct[0]), log(c.ci_pct[1]));
    let (mid, half) = ((lo + hi) / 2.0, (hi - lo) / 2.0 * scale);
    let ci = [pct(mid - half), pct(mid + half)];
    outcome(
        super::verdict(c.median_pct, ci, c.pairs, floor),
        ci,
        precision_pct,
    )
}

/// What a comparison's verdict column says: the direction of a change,
/// `unchanged`, or `unsure` with why (the interval is wider than the
/// precision, or there are too few pairs).
pub fn describe(
    verdict: Verdict,
    outcome: Outcome,
    ci_pct: [f64; 2],
    precision_pct: f64,
) -> String {
    match (outcome, verdict) {
        (Outcome::Changed, v) => v.to_string(),
        (Outcome::Unchanged, _) => format!("unchanged (inside ±{precision_pct}%)"),
        (Outcome::Unsure, Verdict::TooFewPairs) => "unsure: too few pairs".to_string(),
        (Outcome::Unsure, _) => {
            let reach = ci_pct[0].abs().max(ci_pct[1].abs());
            format!("unsure (reaches ±{reach:.1}%, precision ±{precision_pct}%)")
        }
    }
}

/// Which of many comparisons are changes once their number is counted:
/// Benjamini and Hochberg's step-up rule at false discovery rate `rate`.
/// With `m` p-values sorted, the largest `k` with `p_(k) <= k rate / m`
/// and every smaller one are discoveries.
///
/// Why: a comparison of two sessions judges every shape and arm at once,
/// and at 95% each row of an A/A comparison is a "change" one time in 20:
/// 117 rows (39 shapes, three arms) give about six, and a CI gate on them
/// fails every run. The step-up rule keeps the expected share of false
/// changes among those reported at `rate` (and, when nothing changed at
/// all, the chance of any false change), while a clear change among many
/// rows still stands. A NaN p-value is never a discovery, nor counted.
pub fn discoveries(p_values: &[f64], rate: f64) -> Vec<bool> {
    // Rows without a p-value (nothing to decide) are not in the family.
    let mut order: Vec<usize> = (0..p_values.len())
        .filter(|&i| !p_values[i].is_nan())
        .collect();
    let m = order.len();
    order.sort_by(|&i, &j| p_values[i].total_cmp(&p_values[j]));
    let passed = order
        .iter()
        .enumerate()
        .filter(|(k, &i)| p_values[i] <= (k + 1) as f64 * rate / m as f64)
        .map(|(k, _)| k + 1)
        .max()
        .unwrap_or(0);
    let mut found = vec![false; p_values.len()];
    for &i in &order[..passed] {
        found[i] = true;
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn three_outcomes() {
        let p = 1.0;
        assert_eq!(outcome(Verdict::Faster, [-9.0, -5.0], p), Outcome::Changed);
        assert_eq!(
            outcome(Verdict::Slower, [0.2, 0.4], p),
            Outcome::Changed,
            "small but real"
        );
        assert_eq!(
            outcome(Verdict::WithinNoise, [-0.8, 0.9], p),
            Outcome::Unchanged
        );
        assert_eq!(
            outcome(Verdict::WithinNoise, [-0.8, 1.1], p),
            Outcome::Unsure
        );
        assert_eq!(
            outcome(Verdict::WithinNoise, [f64::NAN, 0.1], p),
            Outcome::Unsure
        );
        // Inside the precision but too few pairs for any call.
        assert_eq!(
            outcome(Verdict::TooFewPairs, [-0.1, 0.1], p),
            Outcome::Unsure
        );
        assert!(Outcome::Changed.decided() && Outcome::Unchanged.decided());
        assert!(!Outcome::Unsure.decided());
    }

    #[test]
    fn a_stricter_level_widens_the_interval_before_it_decides() {
        let c = Check {
            median_pct: -3.0,
            ci_pct: [-5.0, -1.0],
            level: 0.95,
            pairs: 40,
            df: 4.0,
        };
        let floor = Some([-0.5, 0.5]);
        assert_eq!(
            outcome_at(&c, floor, 0.5, 0.95),
            Outcome::Changed,
            "the same level"
        );
        // t(4) at 99.2% is about 1.8 times t(4) at 95%: the interval
        // reaches past zero and the change is no longer decided.
        assert_eq!(
            outcome_at(&c, floor, 0.5, 1.0 - 0.05 / 6.0),
            Outcome::Unsure
        );
        assert_eq!(
            outcome_at(&Check { df: 0.0, ..c }, floor, 0.5, 0.95),
            Outcome::Unsure
        );
    }

    #[test]
    fn the_verdict_column_says_why_it_is_unsure() {
        assert_eq!(
            describe(Verdict::Slower, Outcome::Changed, [1.0, 3.0], 0.5),
            "slower"
        );
        assert_eq!(
            describe(Verdict::WithinNoise, Outcome::Unchanged, [-0.3, 0.4], 0.5),
            "unchanged (inside ±0.5%)"
        );
        assert_eq!(
            describe(Verdict::WithinNoise, Outcome::Unsure, [-2.5, 1.0], 0.5),
            "unsure (reaches ±2.5%, precision ±0.5%)"
        );
    }

    #[test]
    fn an_interval_s_p_value_is_the_level_where_it_touches_zero() {
        // An interval on the log scale that touches zero at 95%.
        let pct = |y: f64| (y.exp() - 1.0) * 100.0;
        let check = |mid: f64, half: f64| Check {
            median_pct: pct(mid),
            ci_pct: [pct(mid - half), pct(mid + half)],
            level: 0.95,
            pairs: 40,
            df: 4.0,
        };
        let p = check(0.02, 0.02).p_value();
        assert!((p - 0.05).abs() < 1e-9, "{p}");
        let p = check(-0.02, 0.01).p_value();
        assert!(p < 0.05, "{p}");
        assert!((check(0.0, 0.03).p_value() - 1.0).abs() < 1e-12);
        assert_eq!(check(0.01, 0.0).p_value(), 0.0, "exact and moved");
        assert!(Check {
            df: 0.0,
            ..check(0.02, 0.01)
        }
        .p_value()
        .is_nan());
    }

    #[test]
    fn many_rows_keep_their_false_changes_at_the_rate() {
        // Four rows at 95%: one p of 0.03 alone is a change, among four
        // rows it is not; a clear one still is, and it carries the next.
        assert_eq!(discoveries(&[0.03], 0.05), [true]);
        assert_eq!(discoveries(&[0.03, 0.4, 0.7, 0.9], 0.05), [false; 4]);
        assert_eq!(
            discoveries(&[0.03, 0.001, 0.7, 0.9], 0.05),
            [false, true, false, false]
        );
        // Step-up: 0.024 <= 2 x 0.05 / 4 passes because of its rank, and
        // 0.001 with it.
        assert_eq!(
            discoveries(&[0.024, 0.001, 0.7, 0.9], 0.05),
            [true, true, false, false]
        );
        assert_eq!(discoveries(&[f64::NAN, 0.0], 0.05), [false, true]);
        // Rows with nothing to decide do not enlarge the family: 0.03 is
        // the only p-value, as above.
        assert_eq!(
            discoveries(&[f64::NAN, 0.03, f64::NAN], 0.05),
            [false, true, false]
        );
        assert!(discoveries(&[], 0.05).is_empty());
    }
}
