//! A simulated branch predictor for the counting run's branch trace.
//!
//! The model needs to know how many of a program's data-dependent branches
//! a CPU would mispredict: an interpreter turns every wasm `br_if`,
//! `br_table` and `call_indirect` decided by data into a host branch decided
//! by the same data, so a ladder over a random stream costs far more than
//! its instruction count says. This is the textbook global-history scheme
//! (gshare): a table of 2-bit saturating counters indexed by the branch site
//! hashed with the outcomes of the last [`HISTORY_BITS`] branches, and for
//! multi-way sites (`br_table`, `call_indirect`) a table of last-seen
//! targets indexed the same way. It is not any particular CPU; it separates
//! "learnable" (short periods, fixed targets) from "unpredictable".

use serde::{Deserialize, Serialize};

/// Outcomes of recent branches folded into the table index.
pub const HISTORY_BITS: u32 = 12;
const TABLE_BITS: u32 = 16;

/// Totals of a predictor's run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PredictorStats {
    /// Two-way decisions seen (`br_if`, `if`).
    pub conditional: u64,
    /// Multi-way decisions seen (`br_table`, `call_indirect`).
    pub multiway: u64,
    /// Decisions the predictor got wrong (both kinds).
    pub mispredicts: u64,
}

/// A gshare predictor with a target table for multi-way sites.
pub struct Predictor {
    history: u32,
    counters: Vec<u8>,
    /// Last target + 1 per entry (0: never seen).
    targets: Vec<u64>,
    /// What it saw so far.
    pub stats: PredictorStats,
}

impl Default for Predictor {
    fn default() -> Self {
        Predictor {
            history: 0,
            // Weakly not-taken.
            counters: vec![1; 1 << TABLE_BITS],
            targets: vec![0; 1 << TABLE_BITS],
            stats: PredictorStats::default(),
        }
    }
}

impl Predictor {
    fn index(&self, site: u32) -> usize {
        let h = (u64::from(site).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - TABLE_BITS)) as u32;
        ((h ^ self.history) & ((1 << TABLE_BITS) - 1)) as usize
    }

    fn push_history(&mut self, bits: u32, width: u32) {
        self.history = ((self.history << width) ^ bits) & ((1 << HISTORY_BITS) - 1);
    }

    /// A two-way decision at `site`; returns whether it was mispredicted.
    pub fn conditional(&mut self, site: u32, taken: bool) -> bool {
        let i = self.index(site);
        let c = &mut self.counters[i];
        let miss = (*c >= 2) != taken;
        *c = if taken {
            (*c + 1).min(3)
        } else {
            c.saturating_sub(1)
        };
        self.stats.conditional += 1;
        self.stats.mispredicts += u64::from(miss);
        self.push_history(u32::from(taken), 1);
        miss
    }

    /// A multi-way decision at `site` that went to `target`; returns whether
    /// the predicted (last seen in this context) target was another.
    pub fn multiway(&mut self, site: u32, target: u32) -> bool {
        let i = self.index(site);
        let miss = self.targets[i] != u64::from(target) + 1;
        self.targets[i] = u64::from(target) + 1;
        self.stats.multiway += 1;
        self.stats.mispredicts += u64::from(miss);
        self.push_history(target & 3, 2);
        miss
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A deterministic pseudo-random bit source (xorshift64*).
    fn bits(seed: u64) -> impl FnMut() -> u64 {
        let mut x = seed | 1;
        move || {
            x ^= x >> 12;
            x ^= x << 25;
            x ^= x >> 27;
            x.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 32
        }
    }

    fn miss_rate(
        p: &mut Predictor,
        warm: usize,
        n: usize,
        mut f: impl FnMut(&mut Predictor, usize) -> bool,
    ) -> f64 {
        for i in 0..warm {
            f(p, i);
        }
        let misses = (warm..warm + n).filter(|&i| f(p, i)).count();
        misses as f64 / n as f64
    }

    #[test]
    fn a_periodic_sequence_is_learned() {
        let pattern = [true, true, false, true, false, false, false, true];
        let mut p = Predictor::default();
        let rate = miss_rate(&mut p, 2000, 10_000, |p, i| {
            p.conditional(7, pattern[i % 8])
        });
        assert!(rate < 0.01, "{rate}");
    }

    #[test]
    fn a_random_sequence_misses_about_half() {
        let mut next = bits(0xBEEF);
        let mut p = Predictor::default();
        let rate = miss_rate(&mut p, 2000, 20_000, |p, _| {
            p.conditional(7, next() & 1 == 1)
        });
        assert!((0.4..0.6).contains(&rate), "{rate}");
    }

    #[test]
    fn a_loop_branch_beside_random_ones_stays_predicted() {
        // A back-edge taken 15 times then not, interleaved with random
        // branches: the misses are the random ones' (about half of them).
        let mut next = bits(0xF00D);
        let mut p = Predictor::default();
        let mut random_misses = 0;
        let mut loop_misses = 0;
        for i in 0..40_000 {
            random_misses += p.conditional(1, next() & 1 == 1) as u32;
            let m = p.conditional(2, i % 16 != 15) as u32;
            if i > 4000 {
                loop_misses += m;
            }
        }
        assert!((16_000..24_000).contains(&random_misses), "{random_misses}");
        // Only the exit, whose position the random history hides, misses.
        assert!(loop_misses < 36_000 / 16 + 500, "{loop_misses}");
    }

    #[test]
    fn multiway_targets_periodic_vs_random() {
        let mut p = Predictor::default();
        let periodic = miss_rate(&mut p, 2000, 8000, |p, i| {
            p.multiway(3, [0, 5, 2, 7, 1, 3][i % 6])
        });
        assert!(periodic < 0.01, "{periodic}");
        let mut next = bits(0xCAFE);
        let mut p = Predictor::default();
        let random = miss_rate(&mut p, 2000, 20_000, |p, _| {
            p.multiway(3, (next() % 4) as u32)
        });
        // Four equally likely targets: the last one seen is right a quarter
        // of the time.
        assert!((0.65..0.85).contains(&random), "{random}");
    }

    #[test]
    fn one_fixed_target_never_misses_after_the_first() {
        let mut p = Predictor::default();
        let misses = (0..1000).filter(|_| p.multiway(9, 4)).count();
        assert!(misses <= 1 + HISTORY_BITS as usize / 2, "{misses}");
    }
}
