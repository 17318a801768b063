//! A simulated branch predictor for the counting run's branch trace.
//!
//! The model needs to know how many of a program's data-dependent branches
//! a CPU would mispredict: an interpreter turns every wasm `br_if`,
//! `br_table` and `call_indirect` decided by data into a host branch decided
//! by the same data, so a ladder over a random stream costs far more than
//! its instruction count says. This is the textbook tournament: a global-
//! history predictor (gshare: 2-bit saturating counters indexed by the
//! branch site hashed with the outcomes of the last [`HISTORY_BITS`]
//! branches) beside a per-site one (bimodal), and a per-site chooser that
//! learns which of the two to trust; multi-way sites (`br_table`,
//! `call_indirect`) do the same with last-seen targets. The per-site side
//! keeps a loop's back-edge predicted beside random branches, whose noise
//! in the history would otherwise leave gshare's entries for it cold. It is
//! not any particular CPU; it separates "learnable" (short periods, fixed
//! targets) from "unpredictable".

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
    /// Of `mispredicts`, the multi-way ones: a wrong target, which a CPU
    /// pays differently from a wrong direction.
    #[serde(default)]
    pub multiway_mispredicts: u64,
}

impl PredictorStats {
    /// What happened between `before` and `self` (one run of a longer trace).
    pub fn since(&self, before: &PredictorStats) -> PredictorStats {
        PredictorStats {
            conditional: self.conditional.saturating_sub(before.conditional),
            multiway: self.multiway.saturating_sub(before.multiway),
            mispredicts: self.mispredicts.saturating_sub(before.mispredicts),
            multiway_mispredicts: self
                .multiway_mispredicts
                .saturating_sub(before.multiway_mispredicts),
        }
    }
}

/// A tournament of a per-site predictor and a gshare predictor, for
/// two-way and multi-way sites alike.
pub struct Predictor {
    history: u32,
    /// gshare: 2-bit counters indexed by site and history.
    counters: Vec<u8>,
    /// Per site only (bimodal): 2-bit counters.
    local_counters: Vec<u8>,
    /// Last target + 1, indexed by site and history (0: never seen).
    targets: Vec<u64>,
    /// Last target + 1, per site only.
    local_targets: Vec<u64>,
    /// Per site, 2-bit: at 2 or more the history-indexed side is trusted.
    chooser: Vec<u8>,
    /// What it saw so far.
    pub stats: PredictorStats,
}

impl Default for Predictor {
    fn default() -> Self {
        let n = 1 << TABLE_BITS;
        Predictor {
            history: 0,
            // Weakly not-taken.
            counters: vec![1; n],
            local_counters: vec![1; n],
            targets: vec![0; n],
            local_targets: vec![0; n],
            // Weakly trust the per-site side: it learns in a few visits,
            // while a branch whose history is noise (a loop's back-edge
            // beside random branches) would take thousands to warm every
            // history context.
            chooser: vec![1; n],
            stats: PredictorStats::default(),
        }
    }
}

fn bump(c: &mut u8, up: bool) {
    *c = if up {
        (*c + 1).min(3)
    } else {
        c.saturating_sub(1)
    };
}

impl Predictor {
    fn site_index(site: u32) -> usize {
        (u64::from(site).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - TABLE_BITS)) as usize
    }

    fn index(&self, site: u32) -> usize {
        (Self::site_index(site) ^ self.history as usize) & ((1 << TABLE_BITS) - 1)
    }

    fn push_history(&mut self, bits: u32, width: u32) {
        self.history = ((self.history << width) ^ bits) & ((1 << HISTORY_BITS) - 1);
    }

    /// Pick a side by the site's chooser, and train the chooser towards the
    /// side that was right when the two disagree.
    fn choose(&mut self, site: usize, global_right: bool, local_right: bool) -> bool {
        let use_global = self.chooser[site] >= 2;
        if global_right != local_right {
            bump(&mut self.chooser[site], global_right);
        }
        if use_global {
            global_right
        } else {
            local_right
        }
    }

    /// A two-way decision at `site`; returns whether it was mispredicted.
    pub fn conditional(&mut self, site: u32, taken: bool) -> bool {
        let (g, l) = (self.index(site), Self::site_index(site));
        let global_right = (self.counters[g] >= 2) == taken;
        let local_right = (self.local_counters[l] >= 2) == taken;
        let miss = !self.choose(l, global_right, local_right);
        bump(&mut self.counters[g], taken);
        bump(&mut self.local_counters[l], taken);
        self.stats.conditional += 1;
        self.stats.mispredicts += u64::from(miss);
        self.push_history(u32::from(taken), 1);
        miss
    }

    /// A multi-way decision at `site` that went to `target`; returns whether
    /// the predicted target (the last seen in this context, or at this
    /// site, as the chooser says) was another.
    pub fn multiway(&mut self, site: u32, target: u32) -> bool {
        let (g, l) = (self.index(site), Self::site_index(site));
        let seen = u64::from(target) + 1;
        let global_right = self.targets[g] == seen;
        let local_right = self.local_targets[l] == seen;
        let miss = !self.choose(l, global_right, local_right);
        self.targets[g] = seen;
        self.local_targets[l] = seen;
        self.stats.multiway += 1;
        self.stats.mispredicts += u64::from(miss);
        self.stats.multiway_mispredicts += u64::from(miss);
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
    fn a_back_edge_beside_random_targets_is_predicted_from_the_start() {
        // call_indirect over four random targets, then the loop's back-edge:
        // the random targets fill the history with noise, but after a few
        // iterations the back-edge misses only at its exit.
        let mut next = bits(0xA11);
        let mut p = Predictor::default();
        let mut back_edge_misses = 0;
        for i in 0..200 {
            p.multiway(5, (next() % 4) as u32);
            let m = p.conditional(6, i != 199);
            if i >= 4 {
                back_edge_misses += m as u32;
            }
        }
        assert!(back_edge_misses <= 1, "{back_edge_misses}");
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
