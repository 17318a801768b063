//! Over a suite of workloads: each arm's geometric mean time ratio against
//! the baseline, with an interval.
//!
//! Each module's comparison gives a median ratio and a Student-t interval
//! on the log scale (epochs, or build clusters, minus one degrees of
//! freedom). The suite's figure is the mean of the modules' log ratios, so
//! the geometric mean of their ratios; its standard error is the root of
//! the summed squared standard errors over the count of modules, and its
//! degrees of freedom Welch and Satterthwaite's. That is the interval for
//! this suite of modules as measured (the question "is this engine faster
//! on these modules"), not for modules in general: the spread between
//! modules is the answer, not noise.

use super::dist::t_quantile;
use super::outcome::Check;

/// An arm's geometric mean over the modules of a suite.
#[derive(Clone, Debug, PartialEq)]
pub struct SuiteMean {
    /// Geometric mean of the modules' ratios (arm time over baseline time).
    pub ratio: f64,
    /// Its interval at `level`, as ratios.
    pub ci: [f64; 2],
    pub level: f64,
    /// Welch-Satterthwaite degrees of freedom.
    pub df: f64,
    /// Modules with a comparison for this arm.
    pub modules: usize,
}

/// The geometric mean of `checks` (one per module), or `None` without a
/// module whose interval has at least one degree of freedom.
pub fn geometric_mean(checks: &[Check], level: f64) -> Option<SuiteMean> {
    let log = |pct: f64| (1.0 + pct / 100.0).ln();
    let mut points = Vec::new();
    for c in checks {
        let (lo, hi) = (log(c.ci_pct[0]), log(c.ci_pct[1]));
        if !(c.df >= 1.0 && lo.is_finite() && hi.is_finite() && hi >= lo) {
            return None;
        }
        let se = (hi - lo) / 2.0 / t_quantile(0.5 + c.level / 2.0, c.df);
        points.push((log(c.median_pct), se, c.df));
    }
    if points.is_empty() {
        return None;
    }
    let n = points.len() as f64;
    let mean = points.iter().map(|p| p.0).sum::<f64>() / n;
    let var: f64 = points.iter().map(|p| p.1 * p.1).sum::<f64>() / (n * n);
    let denom: f64 = points
        .iter()
        .map(|p| (p.1 * p.1 / (n * n)).powi(2) / p.2)
        .sum();
    // Exact modules (no spread at all) leave no degrees of freedom to
    // estimate: the interval is the point.
    let df = if denom > 0.0 {
        var * var / denom
    } else {
        f64::INFINITY
    };
    let half = if var > 0.0 {
        t_quantile(0.5 + level / 2.0, df.min(1e6)) * var.sqrt()
    } else {
        0.0
    };
    Some(SuiteMean {
        ratio: mean.exp(),
        ci: [(mean - half).exp(), (mean + half).exp()],
        level,
        df,
        modules: points.len(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(median_pct: f64, ci_pct: [f64; 2], df: f64) -> Check {
        Check {
            median_pct,
            ci_pct,
            level: 0.95,
            pairs: 10,
            df,
        }
    }

    #[test]
    fn the_mean_is_geometric_and_one_module_keeps_its_interval() {
        let one = geometric_mean(&[check(100.0, [50.0, 166.67], 4.0)], 0.95).unwrap();
        assert!((one.ratio - 2.0).abs() < 1e-12);
        assert!(
            (one.ci[0] - 1.5).abs() < 1e-3 && (one.ci[1] - 2.6667).abs() < 1e-3,
            "{one:?}"
        );
        assert!((one.df - 4.0).abs() < 1e-9);
        // 2x and 8x: 4x.
        // Each interval is x1.1 either side on the log scale: equal errors.
        let pct = |r: f64| (r - 1.0) * 100.0;
        let two = geometric_mean(
            &[
                check(100.0, [pct(2.0 / 1.1), pct(2.2)], 9.0),
                check(700.0, [pct(8.0 / 1.1), pct(8.8)], 9.0),
            ],
            0.95,
        )
        .unwrap();
        assert!((two.ratio - 4.0).abs() < 1e-9, "{two:?}");
        assert!(two.ci[0] < 4.0 && two.ci[1] > 4.0 && two.modules == 2);
        // Two equal modules of 9 df each: Welch gives 18.
        assert!((two.df - 18.0).abs() < 0.5, "{two:?}");
    }

    #[test]
    fn a_module_without_an_interval_leaves_no_mean() {
        assert!(geometric_mean(&[check(5.0, [1.0, 9.0], 0.0)], 0.95).is_none());
        assert!(geometric_mean(&[], 0.95).is_none());
    }
}
