//! Statistics: paired ratios, medians and distribution-free intervals.
//!
//! Each round gives one ratio per candidate arm, `candidate / baseline`, from
//! reps that ran back to back in the same round; pairing cancels drift that
//! is common to the round. We summarise the ratios by their median and a
//! confidence interval for the median from order statistics (the sign-test
//! interval; e.g. Conover, *Practical Nonparametric Statistics*, §3.2): with
//! the n ratios sorted, `[x(k), x(n+1-k)]` covers the true median with
//! probability `1 - 2 P(B <= k-1)`, `B ~ Binomial(n, 1/2)`, whatever the
//! distribution. We take the largest `k` whose coverage is at least the
//! requested level; with too few rounds for that level we report the widest
//! interval and the coverage it actually has.
//!
//! Minima are reported beside medians because contention only ever adds
//! time: the minimum is the least disturbed rep.
//!
//! Beside this file: [`epochs`] builds intervals across layout epochs (the
//! one [`compare`] every command makes), [`bootstrap`] the resampling
//! intervals measured against them, [`estimators`] the per-epoch
//! estimators made for contention (evaluated on recorded noise by
//! [`crate::replay`]), [`stop`] the rule that says when a shape has enough
//! epochs, [`sessions`] what a change between two sessions can claim, [`suite`] an arm's geometric mean over a suite of workloads, and [`dist`] the normal, t and chi-square functions they rest
//! on.

pub mod bootstrap;
pub mod builds;
pub mod components;
pub mod dist;
pub mod epochs;
pub mod estimators;
pub mod outcome;
pub mod sessions;
#[cfg(test)]
mod simulate;
pub mod stop;
pub mod suite;

/// Confidence level of every interval loopbench prints.
pub const LEVEL: f64 = 0.95;

use serde::{Deserialize, Serialize};

use dist::ln_gamma;

/// Median of a non-empty slice (mean of the middle two for even lengths).
pub fn median(xs: &[f64]) -> f64 {
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n == 0 {
        return f64::NAN;
    }
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

pub fn min(xs: &[f64]) -> f64 {
    xs.iter().copied().fold(f64::INFINITY, f64::min)
}

/// `P(B <= k)` for `B ~ Binomial(n, 1/2)` (the test oracle of the
/// log-space sum in [`median_interval`]).
#[cfg(test)]
fn binom_half_cdf(n: usize, k: usize) -> f64 {
    let mut term = 0.5f64.powi(n as i32); // C(n,0) / 2^n
    let mut sum = 0.0;
    for i in 0..=k.min(n) {
        sum += term;
        term = term * (n - i) as f64 / (i + 1) as f64;
    }
    sum
}

/// A distribution-free interval for the median.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Interval {
    pub lo: f64,
    pub hi: f64,
    /// The coverage this interval actually has (>= the requested level when
    /// there are enough samples).
    pub confidence: f64,
}

/// Order-statistics interval for the median of `xs` at `level` (e.g. 0.95),
/// exact for any number of rounds: the binomial probabilities are summed in
/// logs, since `0.5^n` underflows to zero beyond n = 1074, which would
/// collapse the interval to the middle two values with "confidence 1".
pub fn median_interval(xs: &[f64], level: f64) -> Option<Interval> {
    let n = xs.len();
    if n == 0 {
        return None;
    }
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    // cdf[k] = P(B <= k), B ~ Binomial(n, 1/2), for k < ceil(n/2).
    let ln_n1 = ln_gamma(n as f64 + 1.0);
    let ln_half_n = n as f64 * std::f64::consts::LN_2;
    let mut cdf = 0.0;
    let mut k = 1;
    let mut confidence = 0.0;
    for cand in 1..=n.div_ceil(2) {
        let i = (cand - 1) as f64;
        cdf += (ln_n1 - ln_gamma(i + 1.0) - ln_gamma(n as f64 - i + 1.0) - ln_half_n).exp();
        let coverage = (1.0 - 2.0 * cdf).max(0.0);
        if cand == 1 || coverage >= level {
            k = cand;
            confidence = coverage;
        }
        if coverage < level {
            break;
        }
    }
    Some(Interval {
        lo: v[k - 1],
        hi: v[n - k],
        confidence,
    })
}
/// Per-round ratios `candidate[i] / baseline[i]`.
pub fn paired_ratios(candidate: &[f64], baseline: &[f64]) -> Vec<f64> {
    candidate.iter().zip(baseline).map(|(c, b)| c / b).collect()
}

/// A paired change in percent: positive means the candidate took longer.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Change {
    pub median_pct: f64,
    pub ci_pct: [f64; 2],
    pub confidence: f64,
    /// The median ratio candidate / baseline.
    pub ratio: f64,
    pub pairs: usize,
}

pub fn paired_change(candidate: &[f64], baseline: &[f64], level: f64) -> Option<Change> {
    let ratios = paired_ratios(candidate, baseline);
    let iv = median_interval(&ratios, level)?;
    let ratio = median(&ratios);
    Some(Change {
        median_pct: (ratio - 1.0) * 100.0,
        ci_pct: [(iv.lo - 1.0) * 100.0, (iv.hi - 1.0) * 100.0],
        confidence: iv.confidence,
        ratio,
        pairs: ratios.len(),
    })
}

/// The verdict for a comparison, given the concurrent null control.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Faster,
    Slower,
    WithinNoise,
    /// Too few pairs for the interval to reach its level: no verdict.
    TooFewPairs,
}

impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Verdict::Faster => "faster",
            Verdict::Slower => "slower",
            Verdict::WithinNoise => "within noise",
            Verdict::TooFewPairs => "too few pairs",
        })
    }
}

/// The fewest pairs a verdict is taken on: with 6 the widest order-statistic
/// interval first reaches 95% (1 - 2/2^6 = 0.969); fewer is no evidence.
pub const MIN_PAIRS: usize = 6;

/// A comparison of one arm with the baseline: the change across epochs and
/// the verdict against the null control.
#[derive(Clone, Debug, PartialEq)]
pub struct Compared {
    pub change: EpochChange,
    pub verdict: Verdict,
}

pub use epochs::EpochChange;

/// The one comparison every command makes. `candidate[e]` and `baseline[e]`
/// are epoch `e`'s per-round values in round order (an arm that failed
/// partway has fewer; rounds pair up to the shorter), `null` the null
/// control's change. The interval includes the spread between epochs (new
/// processes, new layouts) whenever there are two or more
/// ([`epochs::epoch_change`]); with one it covers rounds only and says so.
pub fn compare(
    candidate: &[Vec<f64>],
    baseline: &[Vec<f64>],
    null: Option<&EpochChange>,
    level: f64,
) -> Option<Compared> {
    compare_builds(candidate, baseline, None, null.map(|n| n.ci_pct), level)
}

/// [`compare`] of arms that ran in layout variants of their builds:
/// `clusters[e]` names the pair of variants epoch `e` ran (parallel to the
/// epochs), and the interval is across those pairs ([`builds`]). `floor`
/// is the noise floor of the verdict: the null control's interval, joined
/// with the build-layout null's where there is one.
pub fn compare_builds(
    candidate: &[Vec<f64>],
    baseline: &[Vec<f64>],
    clusters: Option<&[u32]>,
    floor: Option<[f64; 2]>,
    level: f64,
) -> Option<Compared> {
    compare_by(
        candidate,
        baseline,
        clusters,
        floor,
        level,
        estimators::DEFAULT,
    )
}

/// [`compare_builds`] with each epoch reduced by `estimator` (the median
/// of per-round log ratios is [`estimators::DEFAULT`]); the interval is
/// across epochs whichever it is.
pub fn compare_by(
    candidate: &[Vec<f64>],
    baseline: &[Vec<f64>],
    clusters: Option<&[u32]>,
    floor: Option<[f64; 2]>,
    level: f64,
    estimator: estimators::Estimator,
) -> Option<Compared> {
    let mut logs: Vec<Vec<f64>> = candidate
        .iter()
        .zip(baseline)
        .map(|(c, b)| {
            let n = c.len().min(b.len());
            epochs::log_ratios(&c[..n], &b[..n])
        })
        .collect();
    let mut estimates = None;
    if estimator != estimators::DEFAULT {
        let mut per_epoch = Vec::with_capacity(logs.len());
        for ((c, b), l) in candidate.iter().zip(baseline).zip(logs.iter_mut()) {
            let pairs: Vec<(f64, f64)> = c.iter().copied().zip(b.iter().copied()).collect();
            match estimator.estimate(&pairs) {
                Some(x) => per_epoch.push(x),
                // An epoch the estimator has no value on is left out whole.
                None => {
                    l.clear();
                    per_epoch.push(f64::NAN);
                }
            }
        }
        estimates = Some(per_epoch);
    }
    let opts = epochs::Options {
        level,
        ..Default::default()
    };
    let change = epochs::epoch_change_estimated(&logs, estimates.as_deref(), clusters, &opts)?;
    Some(Compared {
        verdict: verdict(change.median_pct, change.ci_pct, change.pairs, floor),
        change,
    })
}

/// `faster`/`slower` only when the interval excludes zero AND the median
/// change lies outside the null control's interval; anything smaller than
/// the concurrent noise floor is not a result, and without a null control
/// there is no floor, so no call.
///
/// The floor is the null control's alone (methodology rule 2), nothing of
/// the build-layout null's.
///
/// Where arms run in layout variants, every comparison's interval is
/// across them: what a relink alone moves is in the interval already, and
/// the build-layout null shows its size. It was once part of the floor as
/// well, which asked a change to clear the layout spread twice: a build of
/// wasmi slowed 21% by a planted branch, with an interval of [+9%, +34%]
/// across 8 link orders, was "unsure" because the build null reached 21%,
/// while an identical copy in another directory was called changed in 0
/// of 24 (4 shapes, 6 independent layout draws, 2-vCPU EPYC; 23 of its 24
/// intervals contained no change, and the planted build was called slower
/// in 19 of 24, against 17 with the build null in the floor).
pub fn verdict(
    median_pct: f64,
    ci_pct: [f64; 2],
    pairs: usize,
    null_ci: Option<[f64; 2]>,
) -> Verdict {
    if pairs < MIN_PAIRS {
        return Verdict::TooFewPairs;
    }
    let [lo, hi] = ci_pct;
    let Some([null_lo, null_hi]) = null_ci else {
        return Verdict::WithinNoise;
    };
    let (null_lo, null_hi) = (null_lo.min(0.0), null_hi.max(0.0));
    if hi < 0.0 && median_pct < null_lo {
        Verdict::Faster
    } else if lo > 0.0 && median_pct > null_hi {
        Verdict::Slower
    } else {
        Verdict::WithinNoise
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_and_min() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        assert_eq!(min(&[3.0, 1.0, 2.0]), 1.0);
    }

    #[test]
    fn binomial_cdf_is_exact() {
        assert!((binom_half_cdf(4, 0) - 1.0 / 16.0).abs() < 1e-12);
        assert!((binom_half_cdf(4, 2) - 11.0 / 16.0).abs() < 1e-12);
        assert!((binom_half_cdf(10, 10) - 1.0).abs() < 1e-12);
    }

    /// Past 1074 rounds `0.5^n` underflows; the interval must stay an
    /// order-statistic interval, not collapse to the middle two values.
    #[test]
    fn interval_holds_for_many_rounds() {
        let xs: Vec<f64> = (1..=1200).map(f64::from).collect();
        let iv = median_interval(&xs, 0.95).unwrap();
        assert!(iv.hi - iv.lo > 50.0, "{iv:?}");
        assert!(iv.confidence >= 0.95 && iv.confidence < 0.96, "{iv:?}");
    }

    #[test]
    fn interval_uses_order_statistics() {
        // n = 12: k = 3 gives coverage 1 - 2 * P(B <= 2) = 0.9614.
        let xs: Vec<f64> = (1..=12).map(f64::from).collect();
        let iv = median_interval(&xs, 0.95).unwrap();
        assert_eq!((iv.lo, iv.hi), (3.0, 10.0));
        assert!((iv.confidence - 0.961_425_781_25).abs() < 1e-9);
        // n = 5 cannot reach 95%: the widest interval, honestly labelled.
        let iv = median_interval(&[1.0, 2.0, 3.0, 4.0, 5.0], 0.95).unwrap();
        assert_eq!((iv.lo, iv.hi), (1.0, 5.0));
        assert!((iv.confidence - 0.9375).abs() < 1e-12);
    }

    /// The log-space sum gives the interval the direct sum gives where that
    /// does not underflow, and order statistics far beyond it.
    #[test]
    fn median_interval_survives_many_rounds() {
        let same = |xs: &[f64]| {
            let mut v = xs.to_vec();
            v.sort_by(f64::total_cmp);
            let n = v.len();
            let coverage = |k: usize| (1.0 - 2.0 * binom_half_cdf(n, k - 1)).max(0.0);
            let k = (1..=n.div_ceil(2))
                .take_while(|&k| k == 1 || coverage(k) >= 0.95)
                .last()
                .unwrap();
            let iv = median_interval(xs, 0.95).unwrap();
            assert_eq!((iv.lo, iv.hi), (v[k - 1], v[n - k]));
            assert!((iv.confidence - coverage(k)).abs() < 1e-12);
        };
        same(&(1..=12).map(f64::from).collect::<Vec<_>>());
        same(&[1.0, 2.0, 3.0, 4.0, 5.0]);
        same(&(0..300).map(|i| ((i * 7) % 300) as f64).collect::<Vec<_>>());
        // n = 2000: k = 957 (normal approximation: n/2 - 1.96 sqrt(n)/2).
        let xs: Vec<f64> = (0..2000).map(f64::from).collect();
        let iv = median_interval(&xs, 0.95).unwrap();
        assert!((950.0..=960.0).contains(&iv.lo), "{iv:?}");
        assert!(iv.confidence >= 0.95 && iv.confidence < 0.96, "{iv:?}");
    }

    /// A known 5% shift under deterministic noise is recovered, the interval
    /// covers it, and the verdict says slower; a zero shift is within noise.
    #[test]
    fn known_shift_is_recovered() {
        let noise = |i: usize| 1.0 + 0.01 * (((i * 7919) % 13) as f64 / 13.0 - 0.5);
        let base: Vec<f64> = (0..24).map(|i| 100.0 * noise(i)).collect();
        let cand: Vec<f64> = (0..24).map(|i| 105.0 * noise(i + 5)).collect();
        let null: Vec<f64> = (0..24).map(|i| 100.0 * noise(i + 3)).collect();
        let null_change = paired_change(&null, &base, 0.95).unwrap();
        let change = paired_change(&cand, &base, 0.95).unwrap();
        assert!(change.ci_pct[0] <= 5.0 && 5.0 <= change.ci_pct[1] + 1.0);
        assert!(
            change.ci_pct[0] > 3.0 && change.ci_pct[1] < 7.0,
            "{change:?}"
        );
        let v = |c: &Change, n: &Change| verdict(c.median_pct, c.ci_pct, c.pairs, Some(n.ci_pct));
        assert_eq!(v(&change, &null_change), Verdict::Slower);
        assert_eq!(v(&null_change, &null_change), Verdict::WithinNoise);
        let faster: Vec<f64> = base.iter().map(|b| b * 0.9).collect();
        assert_eq!(
            v(&paired_change(&faster, &base, 0.95).unwrap(), &null_change),
            Verdict::Faster
        );
        // The same through compare, one epoch.
        let null = compare(&[null], std::slice::from_ref(&base), None, 0.95)
            .unwrap()
            .change;
        let c = compare(&[cand], &[base], Some(&null), 0.95).unwrap();
        assert_eq!(c.verdict, Verdict::Slower);
        assert!(!c.change.includes_layout);
    }

    #[test]
    fn change_inside_the_null_floor_is_noise() {
        let c = Change {
            median_pct: 0.8,
            ci_pct: [0.2, 1.4],
            confidence: 0.96,
            ratio: 1.008,
            pairs: 12,
        };
        let n = Change {
            median_pct: 0.1,
            ci_pct: [-1.0, 1.2],
            confidence: 0.96,
            ratio: 1.001,
            pairs: 12,
        };
        assert_eq!(
            verdict(c.median_pct, c.ci_pct, c.pairs, Some(n.ci_pct)),
            Verdict::WithinNoise
        );
        assert_eq!(
            verdict(c.median_pct, c.ci_pct, c.pairs, None),
            Verdict::WithinNoise
        );
        // Too few pairs: no verdict at all, whatever the interval says.
        assert_eq!(
            verdict(188.3, [188.3, 188.3], 1, Some(n.ci_pct)),
            Verdict::TooFewPairs
        );
    }

    /// The build level ([`crate::stats::builds`]) on simulated three-level
    /// sessions.
    mod builds {
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
}
