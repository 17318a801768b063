//! Bootstrap replicates for intervals across epochs.
//!
//! Two resampling schemes (see [`super::epochs`] for why the t interval is
//! the default and these stay for comparison): the two-stage bootstrap of
//! hierarchical data (Davison and Hinkley 1997, §3.8; Ren et al. 2010),
//! epochs drawn with replacement and then rounds within each drawn epoch,
//! and the one-stage bootstrap that draws epochs only. Replicates become an
//! interval by percentiles, optionally at Hesterberg's expanded level
//! (2015), which corrects the plain percentile interval's under-coverage
//! with few top-level units. The generator is Xoshiro256++, seeded by the
//! caller, so every replicate set is reproducible from its recorded seed.

use rand::rngs::Xoshiro256PlusPlus;
use rand::{RngExt, SeedableRng};

use super::dist::{normal_cdf, t_quantile};

/// Hesterberg's expanded percentile level for `n` top-level units: the
/// level `1 - a'` with `z(1 - a'/2) = sqrt(n/(n-1)) t(n-1, 1 - a/2)`.
pub fn expanded_level(level: f64, n: usize) -> f64 {
    if n < 2 {
        return level;
    }
    let n = n as f64;
    let z = (n / (n - 1.0)).sqrt() * t_quantile(0.5 + level / 2.0, n - 1.0);
    2.0 * normal_cdf(z) - 1.0
}

/// `resamples` replicates of the two-stage bootstrap of the mean of epoch
/// medians of `logs` (each epoch non-empty): epochs drawn with replacement,
/// then rounds within each drawn epoch with replacement. Deterministic in
/// `seed`.
pub fn hierarchical_bootstrap<E: AsRef<[f64]>>(
    logs: &[E],
    resamples: usize,
    seed: u64,
) -> Vec<f64> {
    let sorted: Vec<Vec<f64>> = logs
        .iter()
        .map(|ys| {
            let mut v = ys.as_ref().to_vec();
            v.sort_by(f64::total_cmp);
            v
        })
        .collect();
    let e = sorted.len();
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let max_r = sorted.iter().map(Vec::len).max().unwrap_or(0);
    let mut counts = vec![0u32; max_r];
    let mut out = Vec::with_capacity(resamples);
    for _ in 0..resamples {
        let mut sum = 0.0;
        for _ in 0..e {
            let ys = &sorted[rng.random_range(0..e)];
            sum += resampled_median(ys, &mut counts[..ys.len()], &mut rng);
        }
        out.push(sum / e as f64);
    }
    out
}

/// `resamples` replicates of the one-stage bootstrap of the mean of the
/// epoch medians `meds` (epochs drawn with replacement, rounds kept).
pub fn epoch_bootstrap(meds: &[f64], resamples: usize, seed: u64) -> Vec<f64> {
    let e = meds.len();
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    (0..resamples)
        .map(|_| (0..e).map(|_| meds[rng.random_range(0..e)]).sum::<f64>() / e as f64)
        .collect()
}

/// The median of `sorted.len()` draws with replacement from `sorted`,
/// without sorting: count the draws per index, then walk the counts.
fn resampled_median(sorted: &[f64], counts: &mut [u32], rng: &mut Xoshiro256PlusPlus) -> f64 {
    let n = sorted.len();
    counts.iter_mut().for_each(|c| *c = 0);
    for _ in 0..n {
        counts[rng.random_range(0..n)] += 1;
    }
    // 1-based ranks of the middle order statistics.
    let (lo_rank, hi_rank) = if n % 2 == 1 {
        (n / 2 + 1, n / 2 + 1)
    } else {
        (n / 2, n / 2 + 1)
    };
    let mut cum = 0usize;
    let mut lo = f64::NAN;
    for (i, &c) in counts.iter().enumerate() {
        cum += c as usize;
        if lo.is_nan() && cum >= lo_rank {
            lo = sorted[i];
        }
        if cum >= hi_rank {
            return (lo + sorted[i]) / 2.0;
        }
    }
    lo
}

/// The percentile interval of bootstrap replicates at `level` (type-7
/// linear interpolation between order statistics).
pub fn percentile_interval(mut reps: Vec<f64>, level: f64) -> (f64, f64) {
    reps.sort_by(f64::total_cmp);
    let a = (1.0 - level) / 2.0;
    (quantile_sorted(&reps, a), quantile_sorted(&reps, 1.0 - a))
}

fn quantile_sorted(v: &[f64], q: f64) -> f64 {
    let n = v.len();
    if n == 0 {
        return f64::NAN;
    }
    let h = (n - 1) as f64 * q.clamp(0.0, 1.0);
    let i = h.floor() as usize;
    let j = (i + 1).min(n - 1);
    v[i] + (h - i as f64) * (v[j] - v[i])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::median;

    /// The counting shortcut gives the same median as sorting the draws.
    #[test]
    fn resampled_median_matches_sorting() {
        let mut data: Vec<f64> = (0..17).map(|i| ((i * 37) % 17) as f64).collect();
        data.sort_by(f64::total_cmp);
        for n in [data.len(), 16] {
            let sorted = &data[..n];
            let mut counts = vec![0u32; n];
            for seed in 0..50 {
                let mut a = Xoshiro256PlusPlus::seed_from_u64(seed);
                let mut b = a.clone();
                let got = resampled_median(sorted, &mut counts, &mut a);
                let draws: Vec<f64> = (0..n).map(|_| sorted[b.random_range(0..n)]).collect();
                assert_eq!(got, median(&draws));
            }
        }
    }

    #[test]
    fn expanded_level_for_ten_epochs() {
        // The expanded level for 10 epochs at 95%: z = sqrt(10/9) 2.2622.
        let l = expanded_level(0.95, 10);
        assert!((l - 0.9828).abs() < 1e-3, "{l}");
    }
}
