//! Over a suite of workloads: each arm's geometric mean time ratio against
//! the baseline, with an interval.
//!
//! The suite's figure is the mean over modules of their log ratios, so the
//! geometric mean of their ratios. Its interval is built where the noise
//! lives. In one session every module of an epoch runs in the same worker
//! processes' code layouts (and, with build arms, the same pair of layout
//! variants), so the modules' layout offsets are shared, not independent:
//! adding their variances as if they were understates the spread a rerun
//! would see. So per epoch (or per pair of layout variants, when the arms
//! ran in variants) the mean over modules is taken first, and the interval
//! is Student t across those units, as one module's own interval is across
//! its epochs ([`super::epochs`], [`super::builds`]). Every unit any module
//! ran in is used, so a module that stopped early does not cut the others'
//! units ([`shared_units`]). When a module ran in fewer than two units (one
//! process, or files older than the epoch numbers) the modules' intervals
//! are combined as independent (Welch and Satterthwaite's degrees of
//! freedom), which the result says.
//!
//! Either way it is the interval for this suite of modules as measured (the
//! question "is this engine faster on these modules"), not for modules in
//! general: the spread between modules is the answer, not noise.

use super::dist::{mean, t_quantile};
use super::outcome::Check;
use std::collections::BTreeMap;

/// One module's change of an arm against the baseline: its decision figures
/// and its epochs (parallel lists, as [`super::EpochChange`] keeps them).
#[derive(Clone, Copy, Debug)]
pub struct ModuleChange<'a> {
    pub check: Check,
    /// Each epoch's change, percent.
    pub epoch_pct: &'a [f64],
    /// Each epoch's number in the session.
    pub epoch_ids: &'a [u32],
    /// Each epoch's pair of layout variants; empty without variants.
    pub epoch_clusters: &'a [u32],
}

/// What the suite's interval was built across.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Basis {
    /// The epochs the modules ran in, and the fewest any module ran in.
    Epochs { units: usize, fewest: usize },
    /// The pairs of layout variants the modules ran in, and the fewest any
    /// module ran in.
    LayoutPairs { units: usize, fewest: usize },
    /// The modules' own intervals, taken as independent.
    Independent,
}

impl std::fmt::Display for Basis {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (units, fewest, what) = match *self {
            Basis::Epochs { units, fewest } => (units, fewest, "epochs"),
            Basis::LayoutPairs { units, fewest } => (units, fewest, "pairs of layout variants"),
            Basis::Independent => {
                return f.write_str("the modules' intervals taken as independent")
            }
        };
        if fewest == units {
            write!(f, "across the {units} {what} every module ran")
        } else {
            write!(f, "across {units} {what}, a module in {fewest} at least")
        }
    }
}

/// An arm's geometric mean over the modules of a suite.
#[derive(Clone, Debug, PartialEq)]
pub struct SuiteMean {
    /// Geometric mean of the modules' ratios (arm time over baseline time).
    pub ratio: f64,
    /// Its interval at `level`, as ratios.
    pub ci: [f64; 2],
    pub level: f64,
    /// Degrees of freedom of the interval.
    pub df: f64,
    /// Modules with a comparison for this arm.
    pub modules: usize,
    pub basis: Basis,
}

/// The geometric mean of `modules` (one change each), or `None` without
/// an interval to give it.
pub fn geometric_mean(modules: &[ModuleChange], level: f64) -> Option<SuiteMean> {
    if modules.is_empty() {
        return None;
    }
    shared_units(modules, level).or_else(|| independent(modules, level))
}

/// Per unit (epoch or pair of variants) each module's mean, then the
/// suite's mean over modules of their means over all their units, with a
/// cluster-robust interval across units; `None` when some module ran in
/// fewer than two units.
///
/// A shape that stopped early ran in fewer units than the others, and
/// keeping only the units every module shares would let it cut every
/// other module's units (a 16-epoch session whose one shape stopped after
/// 4 epochs rested on 4 units, 3 degrees of freedom). So every unit is
/// kept: the estimate is linear in the modules' unit values, its variance
/// is the sum over units of the squared unit totals of the weighted
/// residuals (each module's residuals about its own mean, scaled by
/// sqrt(n / (n - 1)) for the mean they lost: the CR2 correction of Bell and
/// McCaffrey, "Bias reduction in standard errors for linear regression
/// with multi-stage samples", Survey Methodology 28, 2002), and its degrees
/// of freedom theirs, from the design alone. With every module in every
/// unit this is exactly Student t across the units' means over modules.
fn shared_units(modules: &[ModuleChange], level: f64) -> Option<SuiteMean> {
    let by_cluster = modules.iter().all(|m| {
        let mut keys = m.epoch_clusters.to_vec();
        keys.sort_unstable();
        keys.dedup();
        m.epoch_clusters.len() == m.epoch_pct.len() && keys.len() >= 2
    });
    // Per module, its mean log change in each unit it ran in.
    let mut per_module: Vec<BTreeMap<u32, f64>> = Vec::with_capacity(modules.len());
    for m in modules {
        if m.epoch_ids.len() != m.epoch_pct.len() {
            return None;
        }
        let keys = if by_cluster {
            m.epoch_clusters
        } else {
            m.epoch_ids
        };
        let mut units: BTreeMap<u32, Vec<f64>> = BTreeMap::new();
        for (k, pct) in keys.iter().zip(m.epoch_pct) {
            units.entry(*k).or_default().push((1.0 + pct / 100.0).ln());
        }
        if units.len() < 2 {
            return None;
        }
        per_module.push(units.into_iter().map(|(k, v)| (k, mean(&v))).collect());
    }
    let all: std::collections::BTreeSet<u32> =
        per_module.iter().flat_map(|u| u.keys().copied()).collect();
    let index: BTreeMap<u32, usize> = all.iter().enumerate().map(|(i, k)| (*k, i)).collect();
    let count = modules.len() as f64;
    let mut est = 0.0;
    // Per unit, the weighted residuals' total.
    let mut totals = vec![0.0; all.len()];
    // The design's covariance of those totals under working independence
    // (Bell and McCaffrey's degrees of freedom).
    let mut design = vec![vec![0.0; all.len()]; all.len()];
    for units in &per_module {
        let n = units.len() as f64;
        let own = units.values().sum::<f64>() / n;
        est += own / count;
        let weight = (n / (n - 1.0)).sqrt() / (count * n);
        for (k, x) in units {
            totals[index[k]] += weight * (x - own);
        }
        let ids: Vec<usize> = units.keys().map(|k| index[k]).collect();
        for &u in &ids {
            for &v in &ids {
                design[u][v] += weight * weight * (f64::from(u8::from(u == v)) - 1.0 / n);
            }
        }
    }
    let var: f64 = totals.iter().map(|t| t * t).sum();
    let trace: f64 = (0..all.len()).map(|u| design[u][u]).sum();
    let trace_sq: f64 = design.iter().flatten().map(|x| x * x).sum();
    let df = if trace_sq > 0.0 {
        trace * trace / trace_sq
    } else {
        (all.len() - 1) as f64
    };
    if !(est.is_finite() && var.is_finite()) {
        return None;
    }
    let half = t_quantile(0.5 + level / 2.0, df) * var.sqrt();
    let fewest = per_module.iter().map(BTreeMap::len).min().unwrap_or(0);
    let units = all.len();
    Some(SuiteMean {
        ratio: est.exp(),
        ci: [(est - half).exp(), (est + half).exp()],
        level,
        df,
        modules: modules.len(),
        basis: if by_cluster {
            Basis::LayoutPairs { units, fewest }
        } else {
            Basis::Epochs { units, fewest }
        },
    })
}

/// The modules' intervals as independent: the mean's standard error is the
/// root of the summed squared standard errors over the count of modules,
/// its degrees of freedom Welch and Satterthwaite's.
fn independent(modules: &[ModuleChange], level: f64) -> Option<SuiteMean> {
    let log = |pct: f64| (1.0 + pct / 100.0).ln();
    let mut points = Vec::new();
    for ModuleChange { check: c, .. } in modules {
        let (lo, hi) = (log(c.ci_pct[0]), log(c.ci_pct[1]));
        if !(c.df >= 1.0 && lo.is_finite() && hi.is_finite() && hi >= lo) {
            return None;
        }
        let se = (hi - lo) / 2.0 / t_quantile(0.5 + c.level / 2.0, c.df);
        points.push((log(c.median_pct), se, c.df));
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
        basis: Basis::Independent,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::dist::t_interval;
    use crate::stats::simulate::normal;
    use rand::rngs::Xoshiro256PlusPlus;
    use rand::SeedableRng;

    fn check(median_pct: f64, ci_pct: [f64; 2], df: f64) -> Check {
        Check {
            median_pct,
            ci_pct,
            level: 0.95,
            pairs: 10,
            df,
        }
    }

    fn alone(check: Check) -> ModuleChange<'static> {
        ModuleChange {
            check,
            epoch_pct: &[],
            epoch_ids: &[],
            epoch_clusters: &[],
        }
    }

    #[test]
    fn without_shared_epochs_the_modules_intervals_combine_as_independent() {
        let one = geometric_mean(&[alone(check(100.0, [50.0, 166.67], 4.0))], 0.95).unwrap();
        assert!((one.ratio - 2.0).abs() < 1e-12);
        assert!(
            (one.ci[0] - 1.5).abs() < 1e-3 && (one.ci[1] - 2.6667).abs() < 1e-3,
            "{one:?}"
        );
        assert!((one.df - 4.0).abs() < 1e-9);
        assert_eq!(one.basis, Basis::Independent);
        // 2x and 8x: 4x.
        // Each interval is x1.1 either side on the log scale: equal errors.
        let pct = |r: f64| (r - 1.0) * 100.0;
        let two = geometric_mean(
            &[
                alone(check(100.0, [pct(2.0 / 1.1), pct(2.2)], 9.0)),
                alone(check(700.0, [pct(8.0 / 1.1), pct(8.8)], 9.0)),
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
        assert!(geometric_mean(&[alone(check(5.0, [1.0, 9.0], 0.0))], 0.95).is_none());
        assert!(geometric_mean(&[], 0.95).is_none());
    }

    /// With every module in every epoch: Student t across the epochs'
    /// means over modules, exactly.
    #[test]
    fn in_a_balanced_session_the_interval_is_t_across_the_epochs() {
        let pct = |l: f64| (l.exp() - 1.0) * 100.0;
        let a = [pct(0.10), pct(0.20), pct(0.30)];
        let b = [pct(0.30), pct(0.40), pct(0.20)];
        let nowhere = check(0.0, [0.0, 0.0], 0.0);
        let change = |p| ModuleChange {
            check: nowhere,
            epoch_pct: p,
            epoch_ids: &[0, 1, 2],
            epoch_clusters: &[],
        };
        let m = geometric_mean(&[change(&a), change(&b)], 0.95).unwrap();
        let (lo, hi) = crate::stats::dist::t_interval(&[0.20, 0.30, 0.25], 0.95);
        assert_eq!(
            m.basis,
            Basis::Epochs {
                units: 3,
                fewest: 3
            }
        );
        assert!((m.ratio.ln() - 0.25).abs() < 1e-12, "{m:?}");
        assert!((m.ci[0].ln() - lo).abs() < 1e-12 && (m.ci[1].ln() - hi).abs() < 1e-12);
        assert!((m.df - 2.0).abs() < 1e-12, "{m:?}");
    }

    /// A module that stopped early keeps the others' units: module a ran
    /// epochs 0-3, b only 0-2. The estimate is the mean of the modules'
    /// means, (0.375 + 0.3) / 2; its variance the sum over epochs of the
    /// squared weighted residual totals, each module's residuals about its
    /// own mean weighted sqrt(n / (n - 1)) / (2 n): by hand 0.0083170 (epoch
    /// 3 holds a's 0.525 alone); Bell and McCaffrey's degrees of freedom
    /// from the design, tr(S)^2 / tr(S^2), 49/19 = 2.579.
    #[test]
    fn a_module_that_stopped_early_does_not_cut_the_others_epochs() {
        let pct = |l: f64| (l.exp() - 1.0) * 100.0;
        let a = [pct(0.10), pct(0.20), pct(0.30), pct(0.90)];
        let b = [pct(0.30), pct(0.40), pct(0.20)];
        let nowhere = check(0.0, [0.0, 0.0], 0.0);
        let m = geometric_mean(
            &[
                ModuleChange {
                    check: nowhere,
                    epoch_pct: &a,
                    epoch_ids: &[0, 1, 2, 3],
                    epoch_clusters: &[],
                },
                ModuleChange {
                    check: nowhere,
                    epoch_pct: &b,
                    epoch_ids: &[0, 1, 2],
                    epoch_clusters: &[],
                },
            ],
            0.95,
        )
        .unwrap();
        assert_eq!(
            m.basis,
            Basis::Epochs {
                units: 4,
                fewest: 3
            }
        );
        assert_eq!(
            m.basis.to_string(),
            "across 4 epochs, a module in 3 at least"
        );
        assert!((m.ratio.ln() - 0.3375).abs() < 1e-12, "{m:?}");
        assert!((m.df - 49.0 / 19.0).abs() < 1e-9, "{m:?}");
        let half = t_quantile(0.975, 49.0 / 19.0) * 0.008_316_994_349_f64.sqrt();
        assert!((m.ci[0].ln() - (0.3375 - half)).abs() < 1e-9, "{m:?}");
        assert!((m.ci[1].ln() - (0.3375 + half)).abs() < 1e-9, "{m:?}");
        // In layout variants the unit is the pair of variants: epochs 0 and
        // 2 ran pair 7, epoch 1 pair 9.
        let m = geometric_mean(
            &[ModuleChange {
                check: nowhere,
                epoch_pct: &b,
                epoch_ids: &[0, 1, 2],
                epoch_clusters: &[7, 9, 7],
            }],
            0.95,
        )
        .unwrap();
        assert_eq!(
            m.basis,
            Basis::LayoutPairs {
                units: 2,
                fewest: 2
            }
        );
        assert!((m.ratio.ln() - (0.25 + 0.40) / 2.0).abs() < 1e-12, "{m:?}");
    }

    /// One shape of a session stops after 4 of 16 epochs (its budget), as
    /// memory_fill did: 400 simulated suites of 8 modules whose epochs share
    /// a layout offset (SD 5%) beside their own noise (SD 1%). Keeping every
    /// epoch covers near 95% (the Binomial band [364, 396]) and its median
    /// interval is well under two thirds as wide as the one the 4 shared
    /// epochs alone give (t with 3 degrees of freedom).
    #[test]
    fn an_early_stop_keeps_coverage_and_the_others_width() {
        let (sims, modules, epochs, short) = (400, 8, 16, 4);
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(6301);
        let effects: Vec<f64> = (0..modules).map(|i| 0.05 * i as f64).collect();
        let truth = effects.iter().sum::<f64>() / modules as f64;
        let ids: Vec<u32> = (0..epochs as u32).collect();
        let nowhere = check(0.0, [0.0, 0.0], 0.0);
        let (mut covered, mut widths, mut shared_widths) = (0, Vec::new(), Vec::new());
        for _ in 0..sims {
            let offsets: Vec<f64> = (0..epochs).map(|_| 0.05 * normal(&mut rng)).collect();
            let pcts: Vec<Vec<f64>> = effects
                .iter()
                .enumerate()
                .map(|(i, e)| {
                    let ran = if i == 0 { short } else { epochs };
                    offsets[..ran]
                        .iter()
                        .map(|o| ((e + o + 0.01 * normal(&mut rng)).exp() - 1.0) * 100.0)
                        .collect()
                })
                .collect();
            let changes = |cut: usize| -> Vec<ModuleChange> {
                pcts.iter()
                    .map(|p| ModuleChange {
                        check: nowhere,
                        epoch_pct: &p[..p.len().min(cut)],
                        epoch_ids: &ids[..p.len().min(cut)],
                        epoch_clusters: &[],
                    })
                    .collect()
            };
            let all = geometric_mean(&changes(epochs), 0.95).unwrap();
            assert_eq!(
                all.basis,
                Basis::Epochs {
                    units: epochs,
                    fewest: short
                }
            );
            covered += (all.ci[0].ln() <= truth && truth <= all.ci[1].ln()) as usize;
            widths.push(all.ci[1].ln() - all.ci[0].ln());
            let cut = geometric_mean(&changes(short), 0.95).unwrap();
            shared_widths.push(cut.ci[1].ln() - cut.ci[0].ln());
        }
        assert!((364..=396).contains(&covered), "coverage {covered}/400");
        let (w, s) = (
            crate::stats::median(&widths),
            crate::stats::median(&shared_widths),
        );
        assert!(
            w < 0.6 * s,
            "median width {w} against {s} on the shared epochs"
        );
    }

    /// Coverage when every module of an epoch shares that epoch's layout
    /// offset (SD 5%) beside its own noise (SD 1%): 400 simulated suites of
    /// 8 modules over 5 epochs. Per epoch first covers near 95% (Binomial
    /// band [364, 396], as in [`super::super::epochs`]); combining the
    /// modules' own intervals as independent divides the shared part by the
    /// count of modules once too often and covers far less.
    #[test]
    fn shared_layout_offsets_keep_their_coverage_and_independence_loses_it() {
        let (sims, modules, epochs) = (400, 8, 5);
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(1181);
        let effects: Vec<f64> = (0..modules).map(|i| 0.1 * i as f64).collect();
        let truth = effects.iter().sum::<f64>() / modules as f64;
        let (mut shared, mut indep) = (0, 0);
        for _ in 0..sims {
            let offsets: Vec<f64> = (0..epochs).map(|_| 0.05 * normal(&mut rng)).collect();
            let pcts: Vec<Vec<f64>> = effects
                .iter()
                .map(|e| {
                    offsets
                        .iter()
                        .map(|o| ((e + o + 0.01 * normal(&mut rng)).exp() - 1.0) * 100.0)
                        .collect()
                })
                .collect();
            let ids: Vec<u32> = (0..epochs as u32).collect();
            let changes: Vec<ModuleChange> = pcts
                .iter()
                .map(|p| {
                    let logs: Vec<f64> = p.iter().map(|x| (1.0 + x / 100.0).ln()).collect();
                    let (lo, hi) = t_interval(&logs, 0.95);
                    let pct = |l: f64| (l.exp() - 1.0) * 100.0;
                    ModuleChange {
                        check: check(pct(mean(&logs)), [pct(lo), pct(hi)], (epochs - 1) as f64),
                        epoch_pct: p,
                        epoch_ids: &ids,
                        epoch_clusters: &[],
                    }
                })
                .collect();
            let covers = |m: SuiteMean| m.ci[0].ln() <= truth && truth <= m.ci[1].ln();
            shared += covers(geometric_mean(&changes, 0.95).unwrap()) as usize;
            indep += covers(independent(&changes, 0.95).unwrap()) as usize;
        }
        assert!((364..=396).contains(&shared), "shared epochs: {shared}/400");
        assert!(indep < 300, "independent: {indep}/400");
    }
}
