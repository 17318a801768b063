//! Steps in a series of sessions, judged by the windows before and after
//! each point.
//!
//! The rule: at point `i`, learn the series' noise from the logs of up to
//! [`BEFORE`] values before it: their mean `m` and SD `s` (never below
//! [`SD_FLOOR_PCT`], so that exact counts, whose SD is zero, still give a
//! finite test). Then each of the [`AFTER`] values from `i` on is a new
//! value to predict, with standard error `s * sqrt(1 + 1/n_before)`. The
//! step is flagged when
//!
//! - **every** value after lies beyond the two-sided [`P`] prediction
//!   bound (Student's t, `n_before - 1` degrees of freedom) on the same
//!   side, so that one disturbed session is not a step;
//! - the change, `exp(mean(after) - m) - 1`, is at least the series kind's
//!   smallest step ([`Kind::min_step_pct`]); and
//! - the smaller of the after values' distances, in units of the standard
//!   error, is the largest of its neighbours, so that one step is flagged
//!   once and not at each point whose windows straddle it.
//!
//! With one value after a point (the newest session) nothing is flagged
//! yet: the step is *pending* until the next session confirms it.
//!
//! Why this rule and not rustc-perf's (flag `|x_i/x_(i-1) - 1|` beyond
//! `Q3 + 3 IQR` of the series' earlier adjacent changes), which loopbench
//! used before: the IQR rule judges one adjacent pair, so a single
//! disturbed session is a flagged step, and on the 20 recorded A/A
//! sessions per engine of a noisy VM (absolute time, no change anywhere)
//! it flagged 24 of 152 steps. Perfherder's rule (Welch's t >= 7 between
//! 12 values back and 12 forward) needs 12 sessions after a regression
//! before it names it; two agreeing sessions name it the day after it
//! lands, at the cost of a larger smallest step on noisy series.

use crate::stats::dist::{mean, t_quantile, variance};

/// Values before a point the noise is learned from.
pub const BEFORE: usize = 12;
/// Values from the point on that the step is measured over.
pub const AFTER: usize = 2;
/// The fewest values before a point for it to be judged.
pub const MIN_BEFORE: usize = 4;
/// Two-sided p-value each value after a point must reach: with
/// [`AFTER`] = 2 agreeing values, about 1 false flag in 20,000 steps of
/// independent normal noise.
pub const P: f64 = 0.01;
/// The smallest SD of a series, percent: exact counts have none.
pub const SD_FLOOR_PCT: f64 = 0.01;

/// What a series' values are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Median ns per iteration: moves with the machine between sessions.
    Time,
    /// The ratio to the session's reference arm: carries across sessions.
    Anchored,
    /// Exact instructions per iteration (callgrind): deterministic.
    Instructions,
}

impl Kind {
    /// A smaller step is taken as the instrument's resolution, not news.
    pub fn min_step_pct(self) -> f64 {
        match self {
            Kind::Time | Kind::Anchored => 1.0,
            Kind::Instructions => 0.1,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Kind::Time => "absolute time",
            Kind::Anchored => "anchored ratio",
            Kind::Instructions => "instructions",
        }
    }
}

/// The rule in one line, for `--help` and output.
pub const RULE: &str = "a step at a session is flagged when it and the next session both lie \
beyond the 99% prediction bound of up to 12 sessions before it, on the same side (Student t on \
logs, the SD of the sessions before as the noise), the change is at least 1% (0.1% for \
instruction counts) and it is the clearest of its neighbours; the newest session alone is pending";

/// One step of a series.
#[derive(Clone, Debug, PartialEq)]
pub struct Step {
    /// Index of the point this step arrives at.
    pub index: usize,
    /// Signed change of the window after against the window before, percent.
    pub change_pct: f64,
    /// 95% interval of that change, percent: the difference of the two
    /// windows' mean logs, with the noise learned before the point as the
    /// SD of both (Student's t, `history - 1` degrees of freedom; `NaN`
    /// while fewer than [`MIN_BEFORE`] values precede the point).
    pub ci_pct: [f64; 2],
    /// The smallest change flagged at this point, percent (`NaN` while
    /// fewer than [`MIN_BEFORE`] values precede it).
    pub threshold_pct: f64,
    /// Values before the point the noise was learned from.
    pub history: usize,
    /// Values after the point (with it) the step was measured over: below
    /// [`AFTER`] the step is not yet confirmed.
    pub after: usize,
    pub flagged: bool,
    /// Beyond the bound with too few values after it to confirm (the
    /// newest session).
    pub pending: bool,
}

/// Every step of `values` (in time order), judged by the rule above.
pub fn steps(values: &[f64], kind: Kind) -> Vec<Step> {
    let logs: Vec<f64> = values.iter().map(|v| v.ln()).collect();
    let floor = (SD_FLOOR_PCT / 100.0).ln_1p();
    let judged: Vec<(Step, f64)> = (1..logs.len())
        .map(|i| {
            let before = &logs[i.saturating_sub(BEFORE)..i];
            let after = &logs[i..(i + AFTER).min(logs.len())];
            let m = mean(before);
            let change_pct = (mean(after) - m).exp_m1() * 100.0;
            let mut step = Step {
                index: i,
                change_pct,
                ci_pct: [f64::NAN; 2],
                threshold_pct: f64::NAN,
                history: before.len(),
                after: after.len(),
                flagged: false,
                pending: false,
            };
            let finite = before.iter().chain(after).all(|x| x.is_finite());
            if before.len() < MIN_BEFORE || !finite {
                return (step, 0.0);
            }
            let nb = before.len() as f64;
            let se = variance(before).sqrt().max(floor) * (1.0 + 1.0 / nb).sqrt();
            let critical = t_quantile(1.0 - P / 2.0, nb - 1.0);
            let sd = variance(before).sqrt().max(floor);
            let half =
                t_quantile(0.975, nb - 1.0) * sd * (1.0 / nb + 1.0 / after.len() as f64).sqrt();
            let diff = mean(after) - m;
            step.ci_pct = [
                (diff - half).exp_m1() * 100.0,
                (diff + half).exp_m1() * 100.0,
            ];
            step.threshold_pct = (critical * se).exp_m1().max(kind.min_step_pct() / 100.0) * 100.0;
            // The weakest of the values after, signed: a step needs all of
            // them on one side.
            let devs: Vec<f64> = after.iter().map(|x| (x - m) / se).collect();
            let same_side = devs.iter().all(|d| *d > 0.0) || devs.iter().all(|d| *d < 0.0);
            let weakest = if same_side {
                devs.iter().map(|d| d.abs()).fold(f64::INFINITY, f64::min)
            } else {
                0.0
            };
            let beyond = weakest >= critical && change_pct.abs() >= kind.min_step_pct();
            step.pending = beyond && after.len() < AFTER;
            step.flagged = beyond && after.len() == AFTER;
            (step, weakest)
        })
        .collect();
    // One step, one flag: the point where the windows split it best.
    (0..judged.len())
        .map(|j| {
            let t = judged[j].1;
            let left = j.checked_sub(1).map_or(0.0, |k| judged[k].1);
            let right = judged.get(j + 1).map_or(0.0, |r| r.1);
            let mut step = judged[j].0.clone();
            step.flagged &= t >= left && t > right;
            step
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A flat series with +-0.4% noise, deterministic.
    fn flat(n: usize) -> Vec<f64> {
        (0..n)
            .map(|i| 100.0 * (1.0 + 0.004 * ((i * 7 % 5) as f64 - 2.0) / 2.0))
            .collect()
    }

    fn flagged(s: &[Step]) -> Vec<usize> {
        s.iter().filter(|s| s.flagged).map(|s| s.index).collect()
    }

    #[test]
    fn a_flat_series_is_not_flagged() {
        let s = steps(&flat(40), Kind::Anchored);
        assert_eq!(s.len(), 39);
        assert!(flagged(&s).is_empty(), "{s:?}");
    }

    #[test]
    fn a_two_percent_step_is_flagged_once_at_its_point() {
        let mut v = flat(20);
        for x in &mut v[12..] {
            *x *= 1.02;
        }
        let s = steps(&v, Kind::Anchored);
        assert_eq!(flagged(&s), vec![12], "{s:?}");
        let at = &s[11];
        assert!((at.change_pct - 2.0).abs() < 0.3, "{at:?}");
        assert!(
            at.ci_pct[0] < at.change_pct && at.change_pct < at.ci_pct[1],
            "{at:?}"
        );
        assert!(at.ci_pct[0] > 0.0, "{at:?}");
        assert_eq!((at.history, at.after), (12, 2));
        // The same step as the newest point: pending, not yet flagged.
        let s = steps(&v[..13], Kind::Anchored);
        assert!(flagged(&s).is_empty());
        assert!(s[11].pending && s[11].after == 1, "{:?}", s[11]);
    }

    #[test]
    fn one_disturbed_session_is_not_a_step() {
        // A single session 6% slow (the absolute time of a noisy VM), then
        // back: the window after holds it and its normal successor.
        let mut v = flat(20);
        v[10] *= 1.06;
        let s = steps(&v, Kind::Time);
        assert!(flagged(&s).is_empty(), "{s:?}");
    }

    #[test]
    fn exact_counts_flag_small_steps_and_nothing_else() {
        let mut v = vec![1000.0; 10];
        v.extend([1003.0; 5]);
        let s = steps(&v, Kind::Instructions);
        assert_eq!(flagged(&s), vec![10]);
        // Under the smallest step of the kind: not news.
        let mut v = vec![1000.0; 10];
        v.extend([1000.5; 5]);
        assert!(flagged(&steps(&v, Kind::Instructions)).is_empty());
    }

    #[test]
    fn short_history_is_not_judged() {
        let s = steps(&[100.0, 104.0, 100.0, 150.0], Kind::Time);
        assert!(s.iter().all(|s| !s.flagged && s.threshold_pct.is_nan()));
    }
}
