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
    let means: Vec<f64> = groups.iter().map(|g| mean(g)).collect();
    let est = mean(&means);
    let (lo, hi) = t_interval(&means, level);
    // Pooled within-cluster variance of epoch medians.
    let (ss, df) = groups
        .iter()
        .filter(|g| g.len() >= 2)
        .fold((0.0, 0usize), |(ss, df), g| {
            let m = mean(g);
            (
                ss + g.iter().map(|x| (x - m) * (x - m)).sum::<f64>(),
                df + g.len() - 1,
            )
        });
    let build_sd_pct = (df > 0).then(|| {
        let within = ss / df as f64;
        let inv_n = mean(
            &groups
                .iter()
                .map(|g| 1.0 / g.len() as f64)
                .collect::<Vec<_>>(),
        );
        100.0 * (variance(&means) - within * inv_n).max(0.0).sqrt()
    });
    Some((
        est,
        (lo, hi),
        BuildLevel {
            clusters: keys.len(),
            build_sd_pct,
            cluster_mean_pct: means.iter().map(|m| (m.exp() - 1.0) * 100.0).collect(),
        },
    ))
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
}
