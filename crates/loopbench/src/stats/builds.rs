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

use super::epochs::{mean, t_interval, variance};

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
    use crate::stats::epochs::{epoch_change_clustered, Options};
    use crate::stats::simulate::normal;
    use rand::rngs::Xoshiro256PlusPlus;
    use rand::{RngExt, SeedableRng};

    /// A simulated session of two builds in `k` layout variants each:
    /// epoch `e` runs variant `e mod k` of both, so its rounds are
    /// `truth + (b_cand[v] - b_base[v]) + epoch offset + noise`. Returns the
    /// epochs' log ratios and their clusters.
    fn three_levels(
        rng: &mut Xoshiro256PlusPlus,
        truth: f64,
        k: usize,
        epochs: usize,
        sd_build: f64,
        bimodal: bool,
    ) -> (Vec<Vec<f64>>, Vec<u32>) {
        let draw = |rng: &mut Xoshiro256PlusPlus| {
            if bimodal {
                if rng.random::<bool>() {
                    sd_build
                } else {
                    -sd_build
                }
            } else {
                sd_build * normal(rng)
            }
        };
        let offsets: Vec<f64> = (0..k).map(|_| draw(rng) - draw(rng)).collect();
        let (sd_epoch, sd_round, rounds) = (0.01, 0.03, 16);
        let logs = (0..epochs)
            .map(|e| {
                let b = truth + offsets[e % k] + sd_epoch * normal(rng);
                (0..rounds).map(|_| b + sd_round * normal(rng)).collect()
            })
            .collect();
        let clusters = (0..epochs).map(|e| (e % k) as u32).collect();
        (logs, clusters)
    }

    /// Coverage (of 400 sessions) and mean half-width in percent, with and
    /// without the build level, for `k` variants and `epochs` epochs.
    fn coverage(k: usize, epochs: usize, sd_build: f64, bimodal: bool) -> [(f64, f64); 2] {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(17 + k as u64);
        let truth = 0.02;
        let opts = Options::default();
        let mut out = [(0.0, 0.0); 2];
        let n = 400;
        for _ in 0..n {
            let (logs, clusters) = three_levels(&mut rng, truth, k, epochs, sd_build, bimodal);
            for (slot, c) in [Some(clusters.as_slice()), None].into_iter().enumerate() {
                let ch = epoch_change_clustered(&logs, c, &opts).unwrap();
                let [lo, hi] = ch.ci_pct;
                let t = (truth.exp() - 1.0) * 100.0;
                if lo <= t && t <= hi {
                    out[slot].0 += 1.0 / n as f64;
                }
                out[slot].1 += ch.half_width_pct() / n as f64;
            }
        }
        out
    }

    #[test]
    fn the_build_level_covers_a_known_build_component_and_epochs_alone_do_not() {
        // Builds differ by SD 4% per variant (about what an alignment-only
        // rebuild moved add_chain), 4 variants, 2 epochs each.
        let [(with, _), (without, _)] = coverage(4, 8, 0.04, false);
        assert!(
            (0.92..=0.98).contains(&with),
            "with the build level: {with}"
        );
        assert!(without < 0.80, "epochs alone: {without}");
        // Two modes (aligned or not), 6 variants.
        let [(with, _), _] = coverage(6, 12, 0.04, true);
        assert!((0.92..=0.99).contains(&with), "bimodal: {with}");
    }

    #[test]
    fn without_a_build_component_the_level_costs_width_not_coverage() {
        let [(with, w_with), (without, w_without)] = coverage(4, 8, 0.0, false);
        assert!((0.92..=0.99).contains(&with), "{with}");
        assert!((0.92..=0.98).contains(&without), "{without}");
        assert!(w_with > w_without, "{w_with} {w_without}");
    }

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

    /// The figures behind the default K (run with `--ignored --nocapture`):
    /// coverage and width per K at a fixed number of epochs.
    #[test]
    #[ignore]
    fn width_by_number_of_variants() {
        for sd in [0.0, 0.02, 0.04] {
            for k in [2, 3, 4, 6, 8] {
                let e = 24 / k * k;
                let [(c, w), (c0, w0)] = coverage(k, e, sd, false);
                println!(
                    "sd_build {:.0}% K {k} E {e}: coverage {:.1}% half-width {w:.2}% (epochs only: {:.1}% {w0:.2}%)",
                    sd * 100.0,
                    c * 100.0,
                    c0 * 100.0
                );
            }
        }
    }
}
