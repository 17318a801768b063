//! Simulated sessions for the statistics' tests: epochs of round ratios
//! with a known true change, a layout component between epochs and noise
//! within them, the model under which every interval here was measured.

use rand::rngs::Xoshiro256PlusPlus;
use rand::RngExt;

/// A standard normal draw (Box-Muller; `rand` alone has no normal
/// distribution).
pub fn normal(rng: &mut Xoshiro256PlusPlus) -> f64 {
    let u1: f64 = rng.random::<f64>().max(1e-300);
    let u2: f64 = rng.random();
    (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
}

/// One simulated session: `e` epochs of `r` round ratios
/// `exp(truth + b_e + w)`, `b_e ~ N(0, sd_b)` (or +-sd_b when `bimodal`),
/// `w ~ N(0, sd_w)`.
pub fn session(
    rng: &mut Xoshiro256PlusPlus,
    truth: f64,
    e: usize,
    r: usize,
    sd_b: f64,
    bimodal: bool,
    sd_w: f64,
) -> Vec<Vec<f64>> {
    (0..e)
        .map(|_| {
            let b = if bimodal {
                if rng.random::<bool>() {
                    sd_b
                } else {
                    -sd_b
                }
            } else {
                sd_b * normal(rng)
            };
            (0..r)
                .map(|_| (truth + b + sd_w * normal(rng)).exp())
                .collect()
        })
        .collect()
}
