//! Where the noise is: the variance of the null control's paired log ratio
//! split by level (Kalibera and Jones, "Rigorous benchmarking in reasonable
//! time", ISMM 2013: measure the components in a pilot, then plan the
//! repetitions), and the smallest change a session of a given size can
//! find.
//!
//! Levels, for one arm against its null control (the same build, a second
//! process, so every difference is noise):
//!
//! - **rep**: one timed call against the next of the same arm in the same
//!   process (the unpaired SD of log rep times inside an epoch): what a
//!   harness that does not pair sees;
//! - **round**: the paired log ratio of the two arms' reps in one round,
//!   inside an epoch (robust SD, 1.4826 x MAD): what pairing leaves;
//! - **epoch**: the shift of a whole process pair (layout, slow drift)
//!   beyond what its rounds explain:
//!   `sqrt(max(0, var(epoch medians) - (pi/2) sd_round^2 / R))`, `pi/2`
//!   being the variance of a median against a mean for normal noise.
//!
//! A session of `E` epochs of `R` rounds then has a standard error of its
//! estimate of `sqrt((sd_epoch^2 + (pi/2) sd_round^2 / R) / E)`, and the
//! smallest change it finds with 80% power at 95% confidence is
//! `(t(0.975, E-1) + t(0.8, E-1))` of those.

use super::dist::{mean, t_quantile, variance};
use super::median;
use serde::{Deserialize, Serialize};
use std::f64::consts::FRAC_PI_2;

/// The noise of an arm against its null control, per level, percent
/// (100 x SD on the log scale).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Components {
    pub rep_sd_pct: f64,
    pub round_sd_pct: f64,
    pub epoch_sd_pct: f64,
    /// Epochs and rounds per epoch they were measured on.
    pub epochs: usize,
    pub rounds: usize,
}

fn robust_sd(xs: &[f64]) -> f64 {
    let m = median(xs);
    let dev: Vec<f64> = xs.iter().map(|x| (x - m).abs()).collect();
    1.4826 * median(&dev)
}

/// Pooled over epochs: the root of the mean per-epoch variance.
fn pooled(per_epoch: impl Iterator<Item = f64>) -> f64 {
    let v: Vec<f64> = per_epoch.filter(|v| v.is_finite()).collect();
    if v.is_empty() {
        f64::NAN
    } else {
        mean(&v).sqrt()
    }
}

impl Components {
    /// From paired samples: `base[e]` and `null[e]` are epoch `e`'s times
    /// of the arm and its null control, round by round. `None` with fewer
    /// than two epochs of at least two rounds.
    pub fn of(base: &[Vec<f64>], null: &[Vec<f64>]) -> Option<Components> {
        let mut ratios: Vec<Vec<f64>> = Vec::new();
        let mut times: Vec<Vec<f64>> = Vec::new();
        for (b, n) in base.iter().zip(null) {
            let k = b.len().min(n.len());
            let y = super::epochs::log_ratios(&n[..k], &b[..k]);
            if y.len() >= 2 {
                ratios.push(y);
                times.push(b.iter().filter(|t| **t > 0.0).map(|t| t.ln()).collect());
            }
        }
        if ratios.len() < 2 {
            return None;
        }
        let rounds = ratios.iter().map(Vec::len).min().unwrap_or(0);
        let rep = pooled(times.iter().map(|t| robust_sd(t).powi(2)));
        let round = pooled(ratios.iter().map(|y| robust_sd(y).powi(2)));
        let medians: Vec<f64> = ratios.iter().map(|y| median(y)).collect();
        let epoch = (variance(&medians) - FRAC_PI_2 * round * round / rounds as f64)
            .max(0.0)
            .sqrt();
        Some(Components {
            rep_sd_pct: rep * 100.0,
            round_sd_pct: round * 100.0,
            epoch_sd_pct: epoch * 100.0,
            epochs: ratios.len(),
            rounds,
        })
    }

    /// The standard error (log scale) of a session of `epochs` x `rounds`.
    pub fn standard_error(&self, epochs: usize, rounds: usize) -> f64 {
        let (e, r) = (self.epoch_sd_pct / 100.0, self.round_sd_pct / 100.0);
        ((e * e + FRAC_PI_2 * r * r / rounds.max(1) as f64) / epochs.max(1) as f64).sqrt()
    }

    /// The interval half-width (95%) and the smallest change found with 80%
    /// power, percent, for a session of `epochs` x `rounds` (at least two
    /// epochs).
    pub fn predict(&self, epochs: usize, rounds: usize) -> (f64, f64) {
        let e = epochs.max(2);
        let se = self.standard_error(e, rounds);
        let df = (e - 1) as f64;
        let half = t_quantile(0.975, df) * se;
        let mde = (t_quantile(0.975, df) + t_quantile(0.8, df)) * se;
        (half.exp_m1() * 100.0, mde.exp_m1() * 100.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::simulate::normal;
    use rand::rngs::Xoshiro256PlusPlus;
    use rand::SeedableRng;

    /// Epochs with a known shift per epoch (sd `epoch`) and known paired
    /// noise per round (sd `round`): the components come back.
    #[test]
    fn known_components_are_recovered() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(7);
        let (epoch_sd, round_sd, rep_sd) = (0.03, 0.02, 0.10);
        let (mut base, mut null) = (Vec::new(), Vec::new());
        for _ in 0..400 {
            let shift = epoch_sd * normal(&mut rng);
            let (mut b, mut n) = (Vec::new(), Vec::new());
            for _ in 0..40 {
                // Both reps of a round share the machine's speed of the
                // moment (rep_sd); the pair differs by round_sd.
                let speed = rep_sd * normal(&mut rng);
                b.push((1.0 + speed).max(0.1) * 10.0);
                let y = shift + round_sd * normal(&mut rng);
                n.push(b.last().unwrap() * y.exp());
            }
            base.push(b);
            null.push(n);
        }
        let c = Components::of(&base, &null).unwrap();
        assert_eq!((c.epochs, c.rounds), (400, 40));
        assert!((c.round_sd_pct - 2.0).abs() < 0.15, "{c:?}");
        assert!((c.epoch_sd_pct - 3.0).abs() < 0.35, "{c:?}");
        assert!((c.rep_sd_pct - 10.0).abs() < 0.8, "{c:?}");
        // More epochs halve the error as the square root says.
        let (h10, m10) = c.predict(10, 40);
        let (h40, _) = c.predict(40, 40);
        assert!(h40 < h10 / 1.9 && m10 > h10, "{h10} {h40} {m10}");
        // Too little to split: no components.
        assert!(Components::of(&base[..1], &null[..1]).is_none());
    }
}
