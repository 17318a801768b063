//! Changes in a series judged against the series' own history.
//!
//! The rule (after rustc-perf's significance test): for each point after
//! the first, its relative change from the previous point,
//! `|x_i / x_(i-1) - 1|`, is significant when it exceeds
//! `Q3 + 3 x IQR` of the absolute relative changes between the up to
//! [`WINDOW`] adjacent points before it (Tukey's "far out" fence: noise
//! that this series has shown often is not news, a change far beyond its
//! usual spread is). The fence is never below [`FLOOR_PCT`], and while the
//! series has fewer than [`MIN_HISTORY`] earlier changes, too few for
//! quartiles, the threshold is [`SHORT_HISTORY_PCT`].
//!
//! Why learn the threshold: each session's own interval says how precise
//! that session was, not how much the same measurement moves from one day
//! to the next on this machine (other load, a new kernel, a rebuilt
//! engine); the series' past adjacent changes do.

/// Adjacent changes the threshold is learned from.
pub const WINDOW: usize = 30;
/// Earlier changes needed before the threshold is learned.
pub const MIN_HISTORY: usize = 4;
/// The threshold while the history is shorter than [`MIN_HISTORY`], percent.
pub const SHORT_HISTORY_PCT: f64 = 5.0;
/// The smallest learned threshold, percent: below it a change is taken as
/// the instrument's own resolution (sessions stop at 0.5% by default).
pub const FLOOR_PCT: f64 = 1.0;

/// The rule in one line, for `--help` and output.
pub const RULE: &str = "a change is flagged when |x_i/x_(i-1) - 1| exceeds Q3 + 3 x IQR of the \
series' previous 30 adjacent changes (at least 1%; 5% while fewer than 4 earlier changes)";

/// One step of a series.
#[derive(Clone, Debug, PartialEq)]
pub struct Step {
    /// Index of the point this step arrives at.
    pub index: usize,
    /// Signed change from the previous point, percent.
    pub change_pct: f64,
    /// The threshold this change was judged against, percent.
    pub threshold_pct: f64,
    /// Earlier changes the threshold was learned from (0: the short-history
    /// threshold).
    pub history: usize,
    pub flagged: bool,
}

/// The quartile `q` (0..1) of sorted `xs`, linear between order statistics.
fn quantile(sorted: &[f64], q: f64) -> f64 {
    let pos = q * (sorted.len() - 1) as f64;
    let lo = pos.floor() as usize;
    let hi = pos.ceil() as usize;
    sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo as f64)
}

/// The threshold, percent, learned from earlier absolute changes (percent).
pub fn threshold(earlier: &[f64]) -> (f64, usize) {
    let window = &earlier[earlier.len().saturating_sub(WINDOW)..];
    if window.len() < MIN_HISTORY {
        return (SHORT_HISTORY_PCT, 0);
    }
    let mut sorted = window.to_vec();
    sorted.sort_by(f64::total_cmp);
    let q1 = quantile(&sorted, 0.25);
    let q3 = quantile(&sorted, 0.75);
    ((q3 + 3.0 * (q3 - q1)).max(FLOOR_PCT), window.len())
}

/// Every step of `values` (in time order), judged by the rule above.
pub fn steps(values: &[f64]) -> Vec<Step> {
    let mut out = Vec::new();
    let mut earlier: Vec<f64> = Vec::new();
    for i in 1..values.len() {
        let change_pct = (values[i] / values[i - 1] - 1.0) * 100.0;
        let (threshold_pct, history) = threshold(&earlier);
        out.push(Step {
            index: i,
            change_pct,
            threshold_pct,
            history,
            flagged: change_pct.abs() > threshold_pct,
        });
        earlier.push(change_pct.abs());
    }
    out
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

    #[test]
    fn a_flat_series_is_not_flagged() {
        let s = steps(&flat(40));
        assert_eq!(s.len(), 39);
        assert!(s.iter().all(|s| !s.flagged), "{s:?}");
    }

    #[test]
    fn a_step_is_flagged_once() {
        let mut v = flat(20);
        for x in &mut v[12..] {
            *x *= 1.08;
        }
        let s = steps(&v);
        let flagged: Vec<usize> = s.iter().filter(|s| s.flagged).map(|s| s.index).collect();
        assert_eq!(flagged, vec![12]);
        assert!(s[11].change_pct > 7.0);
        assert_eq!(s[11].history, 11);
    }

    #[test]
    fn short_history_uses_the_fixed_threshold() {
        let s = steps(&[100.0, 104.0, 100.0, 106.0]);
        assert_eq!(s.iter().map(|s| s.history).collect::<Vec<_>>(), [0, 0, 0]);
        assert_eq!(
            s.iter().map(|s| s.flagged).collect::<Vec<_>>(),
            [false, false, true]
        );
    }

    #[test]
    fn quartiles_interpolate() {
        let (t, n) = threshold(&[1.0, 2.0, 3.0, 4.0, 5.0]);
        // Q1 = 2, Q3 = 4: 4 + 3 x 2.
        assert_eq!((t, n), (10.0, 5));
        assert_eq!(threshold(&[0.1; 8]).0, FLOOR_PCT);
    }
}
