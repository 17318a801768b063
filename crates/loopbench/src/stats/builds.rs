//! Intervals with a build level: when the arms of a comparison ran in
//! several layout variants of their builds (methodology rule 17).
//!
//! # The problem
//!
//! Two builds of the same source differ in where the linker put the code,
//! and that alone moved wasmi's dispatch loop by 11-16% on a 2-vCPU EPYC VM.
//! A session that measures one build of each arm draws that offset once: no
//! number of epochs averages it out, because every epoch runs the same two
//! binaries. The process null (a second process of the baseline's binary)
//! cannot see it either.
//!
//! # The design
//!
//! A build arm is linked in `K` variants that differ only in code placement
//! ([`crate::workers::layout`]); epoch `e` runs variant `e mod K` of every
//! varied arm. This is the three-level design of Kalibera and Jones,
//! "Rigorous benchmarking in reasonable time" (ISMM 2013): builds, then
//! executions (epochs, fresh processes), then iterations (rounds). Epochs
//! that ran the same pair of variants form a **cluster**; a cluster's mean
//! of epoch medians is the change plus that pair's build offsets plus
//! epoch noise, and clusters are independent draws of all three. So the
//! estimate is the **mean of cluster means** (each pair of variants
//! weighted alike, whatever its number of epochs) and the interval is the
//! Student t interval on the cluster means with `clusters - 1` degrees of
//! freedom: the top level of the design, as [`super::epochs`] takes epochs
//! for the top level without builds. It is exact for normal build offsets
//! and includes every component a rebuild would draw afresh.
//!
//! # The build spread
//!
//! The variance of cluster means is `s_build^2 + s_epoch^2 / n` (`n` epochs
//! per cluster), so the build component is estimated as
//! `sqrt(max(0, var(cluster means) - s_within^2 * mean(1 / n_k)))`, with
//! `s_within^2` the pooled variance of epoch medians inside clusters. It
//! needs a cluster with two epochs; otherwise it is confounded with the
//! epoch noise and reported as unknown.
//!
//! The price of the build level is degrees of freedom: with K = 4 clusters
//! the t quantile is 3.18 where 20 epochs give 2.09. That is what two builds
//! of unknown layout can honestly tell apart; more variants buy it back
//! (the module tests measure coverage and width for K = 2 to 8).

use serde::{Deserialize, Serialize};

use super::dist::{mean, t_interval, variance};

/// The build level of one comparison, as recorded beside its interval.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct BuildLevel {
    /// Distinct pairs of variants (clusters) the interval is built across.
    pub clusters: usize,
    /// The build-layout component, 100 x SD of log ratio; `None` when no
    /// cluster had two epochs to separate it from epoch noise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub build_sd_pct: Option<f64>,
    /// Each cluster's mean change, percent, in cluster order.
    pub cluster_mean_pct: Vec<f64>,
}

/// The estimate and interval (log scale) from epoch medians `meds` and each
/// epoch's cluster `clusters` (parallel): `None` with fewer than two
/// clusters, when there is no build level to build on.
pub fn cluster_interval(
    meds: &[f64],
    clusters: &[u32],
    level: f64,
) -> Option<(f64, (f64, f64), BuildLevel)> {
    let c = Clusters::of(meds, clusters)?;
    let est = mean(&c.means);
    let (lo, hi) = t_interval(&c.means, level);
    let build_sd_pct = c.between_var().map(|v| 100.0 * v.max(0.0).sqrt());
    let means = c.means;
    Some((
        est,
        (lo, hi),
        BuildLevel {
            clusters: means.len(),
            build_sd_pct,
            cluster_mean_pct: means.iter().map(|m| (m.exp() - 1.0) * 100.0).collect(),
        },
    ))
}

/// Epoch medians grouped by the cluster (variant or pair of variants) they
/// ran in.
struct Clusters {
    groups: Vec<Vec<f64>>,
    means: Vec<f64>,
}

impl Clusters {
    /// `None` unless there are two clusters (and one value per epoch).
    fn of(meds: &[f64], clusters: &[u32]) -> Option<Clusters> {
        if meds.len() != clusters.len() {
            return None;
        }
        let mut keys: Vec<u32> = clusters.to_vec();
        keys.sort_unstable();
        keys.dedup();
        if keys.len() < 2 {
            return None;
        }
        let groups: Vec<Vec<f64>> = keys
            .iter()
            .map(|k| {
                meds.iter()
                    .zip(clusters)
                    .filter(|(_, c)| *c == k)
                    .map(|(m, _)| *m)
                    .collect()
            })
            .collect();
        let means = groups.iter().map(|g| mean(g)).collect();
        Some(Clusters { groups, means })
    }

    /// What epoch noise adds to the variance of cluster means: the pooled
    /// within-cluster variance times the mean of `1 / n`; `None` when no
    /// cluster has two epochs.
    fn epoch_share(&self) -> Option<f64> {
        let (ss, df) =
            self.groups
                .iter()
                .filter(|g| g.len() >= 2)
                .fold((0.0, 0usize), |(ss, df), g| {
                    let m = mean(g);
                    (
                        ss + g.iter().map(|x| (x - m) * (x - m)).sum::<f64>(),
                        df + g.len() - 1,
                    )
                });
        let inv_n: Vec<f64> = self.groups.iter().map(|g| 1.0 / g.len() as f64).collect();
        (df > 0).then(|| ss / df as f64 * mean(&inv_n))
    }

    /// The between-cluster variance (may be negative: noise exceeded it).
    fn between_var(&self) -> Option<f64> {
        Some(variance(&self.means) - self.epoch_share()?)
    }
}

/// One arm's spread across the code layouts it ran in: how far a link
/// that only moves its code moves its time. An engine whose dispatch loop
/// is sensitive to alignment shows it here, whatever it is compared with.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LayoutSpread {
    /// Layout variants it ran in.
    pub variants: usize,
    /// 100 x the SD of log time between variants, epoch noise removed.
    pub sd_pct: f64,
    /// The interval of `sd_pct` (chi-square on the variance of the
    /// variants' means, less the epoch noise's share).
    pub ci_pct: [f64; 2],
}

/// [`LayoutSpread`] from an arm's epoch medians of log time and the variant
/// each epoch ran (parallel); `None` with fewer than two variants. The
/// epoch noise is the variants run twice, or where none was (a session
/// that ran a fresh variant every epoch), `epoch_var`: the variance of one
/// epoch's log time about its variant's, as another measurement gives it
/// (the null control: see [`epoch_var_of_null`]); `None` when neither is
/// known (nothing separates layout from epoch noise).
pub fn layout_spread(
    log_meds: &[f64],
    variants: &[u32],
    level: f64,
    epoch_var: Option<f64>,
) -> Option<LayoutSpread> {
    let c = Clusters::of(log_meds, variants)?;
    let noise = c.epoch_share().or_else(|| {
        let inv_n: Vec<f64> = c.groups.iter().map(|g| 1.0 / g.len() as f64).collect();
        Some(epoch_var? * mean(&inv_n))
    })?;
    let var = variance(&c.means);
    let df = (c.means.len() - 1) as f64;
    let sd = |v: f64| 100.0 * (v - noise).max(0.0).sqrt();
    let tail = (1.0 - level) / 2.0;
    Some(LayoutSpread {
        variants: c.means.len(),
        sd_pct: sd(var),
        ci_pct: [
            sd(df * var / super::dist::chi2_quantile(1.0 - tail, df)),
            sd(df * var / super::dist::chi2_quantile(tail, df)),
        ],
    })
}

/// How two builds of one engine move together across the code layouts
/// they shared: both linked with the same shuffle seed in each epoch, so a
/// seed that puts a hot loop badly for one may do so for the other. Where
/// it does, the seeds' effects cancel in the ratio (whose interval, across
/// seeds, is already the paired one) and only what the change itself
/// moved remains.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Pairing {
    /// Layout seeds both arms ran in.
    pub seeds: usize,
    /// Pearson correlation of the two arms' mean log times per seed.
    /// Epoch noise, independent between the arms, pulls it toward zero.
    pub correlation: f64,
    /// Its interval (Fisher's z), from four seeds on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ci: Option<[f64; 2]>,
}

/// [`Pairing`] from each arm's epoch medians of log time and the variant
/// each epoch ran (parallel), variants of one index sharing a seed;
/// `None` with fewer than three shared variants or one arm constant.
pub fn pairing(a: (&[f64], &[u32]), b: (&[f64], &[u32]), level: f64) -> Option<Pairing> {
    let means = |(meds, variants): (&[f64], &[u32])| {
        let c = Clusters::of(meds, variants)?;
        let mut keys: Vec<u32> = variants.to_vec();
        keys.sort_unstable();
        keys.dedup();
        Some(
            keys.into_iter()
                .zip(c.means)
                .collect::<std::collections::BTreeMap<_, _>>(),
        )
    };
    let (ma, mb) = (means(a)?, means(b)?);
    let (xs, ys): (Vec<f64>, Vec<f64>) = ma
        .iter()
        .filter_map(|(k, x)| Some((*x, *mb.get(k)?)))
        .unzip();
    let n = xs.len();
    if n < 3 {
        return None;
    }
    let (mx, my) = (mean(&xs), mean(&ys));
    let sxy: f64 = xs.iter().zip(&ys).map(|(x, y)| (x - mx) * (y - my)).sum();
    let sxx: f64 = xs.iter().map(|x| (x - mx) * (x - mx)).sum();
    let syy: f64 = ys.iter().map(|y| (y - my) * (y - my)).sum();
    if sxx <= 0.0 || syy <= 0.0 {
        return None;
    }
    let r = (sxy / (sxx * syy).sqrt()).clamp(-1.0, 1.0);
    let ci = (n >= 4).then(|| {
        let z = r.clamp(-0.999_999, 0.999_999).atanh();
        let half = super::dist::normal_quantile(0.5 + level / 2.0) / ((n - 3) as f64).sqrt();
        [(z - half).tanh(), (z + half).tanh()]
    });
    Some(Pairing {
        seeds: n,
        correlation: r,
        ci,
    })
}

/// One arm's epoch noise from its null control: the null runs the same
/// variant as the baseline in every epoch, in processes of its own, so
/// each epoch's log ratio of the two is the difference of two epochs'
/// noise, of twice one's variance. `epoch_pct`: the null's change per
/// epoch, percent; `None` with fewer than two epochs.
pub fn epoch_var_of_null(epoch_pct: &[f64]) -> Option<f64> {
    (epoch_pct.len() >= 2).then(|| {
        let logs: Vec<f64> = epoch_pct.iter().map(|p| (1.0 + p / 100.0).ln()).collect();
        variance(&logs) / 2.0
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cluster_figures_are_exact() {
        // Two clusters of two epochs: means 0.1 and 0.3.
        let (est, (lo, hi), level) =
            cluster_interval(&[0.0, 0.2, 0.2, 0.4], &[0, 0, 1, 1], 0.95).unwrap();
        assert!((est - 0.2).abs() < 1e-12);
        assert!(lo < 0.0 && hi > 0.4, "t(1) is wide: {lo} {hi}");
        assert_eq!(level.clusters, 2);
        // var(means) = 0.02, within = 0.02, mean(1/n) = 0.5: 0.02 - 0.01.
        assert!((level.build_sd_pct.unwrap() - 100.0 * 0.01f64.sqrt()).abs() < 1e-9);
        // One cluster: no build level; one epoch per cluster: no spread.
        assert!(cluster_interval(&[0.1, 0.2], &[3, 3], 0.95).is_none());
        let (_, _, one_each) = cluster_interval(&[0.1, 0.2, 0.3], &[0, 1, 2], 0.95).unwrap();
        assert_eq!(one_each.build_sd_pct, None);
    }

    #[test]
    fn an_arms_layout_spread_is_its_variants_offsets_less_epoch_noise() {
        // Four variants 10% apart in log time, each run twice with +-1%.
        let offsets = [0.0, 0.1, -0.1, 0.2];
        let (mut meds, mut variants) = (Vec::new(), Vec::new());
        for (v, o) in offsets.iter().enumerate() {
            for noise in [-0.01, 0.01] {
                meds.push(o + noise);
                variants.push(v as u32);
            }
        }
        let s = layout_spread(&meds, &variants, 0.95, None).unwrap();
        assert_eq!(s.variants, 4);
        // var(means) = var(offsets); the epoch share is 0.0002 * 0.5.
        let expected = 100.0 * (variance(&offsets) - 0.0001).sqrt();
        assert!((s.sd_pct - expected).abs() < 1e-9, "{s:?}");
        assert!(s.ci_pct[0] < s.sd_pct && s.sd_pct < s.ci_pct[1], "{s:?}");
        // No variant run twice, or one variant: no spread.
        assert!(layout_spread(&[0.0, 0.1], &[0, 1], 0.95, None).is_none());
        assert!(layout_spread(&[0.0, 0.1], &[2, 2], 0.95, None).is_none());
        // Identical variants: no spread, an interval from zero.
        let flat = layout_spread(&[0.0, 0.01, 0.0, 0.01], &[0, 0, 1, 1], 0.95, None).unwrap();
        assert_eq!(flat.sd_pct, 0.0);
        assert_eq!(flat.ci_pct[0], 0.0);
    }

    /// A fresh variant every epoch: the epoch noise comes from the null
    /// control (its epochs' log ratios vary by twice one epoch's variance).
    #[test]
    fn with_no_variant_run_twice_the_null_gives_the_epoch_noise() {
        let offsets = [0.0, 0.1, -0.1, 0.2];
        let variants = [0, 1, 2, 3];
        assert!(layout_spread(&offsets, &variants, 0.95, None).is_none());
        // Null epochs of +-2% (logs): variance 0.0004 * 4/3, halved.
        let null_pct: Vec<f64> = [0.02, -0.02, 0.02, -0.02]
            .iter()
            .map(|l: &f64| (l.exp() - 1.0) * 100.0)
            .collect();
        let epoch_var = epoch_var_of_null(&null_pct).unwrap();
        assert!((epoch_var - 0.0004 * 4.0 / 3.0 / 2.0).abs() < 1e-12);
        let s = layout_spread(&offsets, &variants, 0.95, Some(epoch_var)).unwrap();
        let expected = 100.0 * (variance(&offsets) - epoch_var).sqrt();
        assert!((s.sd_pct - expected).abs() < 1e-9, "{s:?}");
        // Variants run twice keep their own measure of the noise.
        let twice = layout_spread(&[0.0, 0.02, 0.1, 0.12], &[0, 0, 1, 1], 0.95, Some(1.0));
        assert!(twice.unwrap().sd_pct > 0.0);
        assert!(epoch_var_of_null(&[1.0]).is_none());
    }

    /// Two builds whose seeds place them alike correlate; a build whose
    /// offsets are another draw does not; the ratio's spread across seeds
    /// shows what the pairing took away.
    #[test]
    fn paired_seeds_correlate_and_cancel_in_the_ratio() {
        let offsets = [0.0, 0.1, -0.1, 0.2, -0.05, 0.15];
        let other = [0.05, -0.1, -0.05, 0.1, 0.15, -0.1];
        let (mut a, mut b, mut unpaired, mut variants) = (vec![], vec![], vec![], vec![]);
        for (v, (o, x)) in offsets.iter().zip(&other).enumerate() {
            for noise in [-0.005, 0.005] {
                a.push(o + noise);
                // The candidate: 3% slower, the same layout effect.
                b.push(o + 0.03 - noise);
                unpaired.push(x + 0.03 + noise);
                variants.push(v as u32);
            }
        }
        let p = pairing((&a, &variants), (&b, &variants), 0.95).unwrap();
        assert_eq!(p.seeds, 6);
        assert!((p.correlation - 1.0).abs() < 1e-9, "{p:?}");
        let [lo, hi] = p.ci.unwrap();
        assert!(lo > 0.9 && hi <= 1.0, "{p:?}");
        let u = pairing((&a, &variants), (&unpaired, &variants), 0.95).unwrap();
        assert!(u.correlation.abs() < 0.5, "{u:?}");
        // The paired ratio's interval is narrow around +3%, the unpaired
        // one as wide as two arms' layout spreads.
        let ratio = |x: &[f64]| -> Vec<f64> { x.iter().zip(&a).map(|(x, a)| x - a).collect() };
        let (est, (lo, hi), _) = cluster_interval(&ratio(&b), &variants, 0.95).unwrap();
        assert!((est - 0.03).abs() < 1e-9 && hi - lo < 0.01, "{lo} {hi}");
        let (_, (ulo, uhi), _) = cluster_interval(&ratio(&unpaired), &variants, 0.95).unwrap();
        assert!(uhi - ulo > 0.2, "{ulo} {uhi}");
        // Too few shared seeds, or one arm flat: no figure.
        assert!(pairing((&a[..4], &variants[..4]), (&b[..4], &variants[..4]), 0.95).is_none());
        let flat = vec![0.0; a.len()];
        assert!(pairing((&flat, &variants), (&b, &variants), 0.95).is_none());
    }
}
