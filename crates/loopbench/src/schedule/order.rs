//! Carryover-balanced run orders (methodology rule 1).
//!
//! A cyclic Latin square gives every arm every slot equally often, but it
//! also hands each arm a fixed predecessor: with arms `[a, b, c, d]` arm `b`
//! always runs right after `a`, so whatever `a` leaves in caches and branch
//! predictors lands on `b` every time. Two designs fix that:
//!
//! - **Williams** (E. J. Williams, "Experimental designs balanced for the
//!   estimation of residual effects of treatments", Aust. J. Sci. Res. 2,
//!   1949): a Latin square in which every ordered pair `(a, b)`, `a != b`,
//!   occurs as "`a` immediately followed by `b`" equally often. For an even
//!   number of arms `n` one square of `n` rounds does it (each pair once);
//!   for odd `n` no single square can, and the square is followed by its
//!   mirror image (each row reversed), `2n` rounds, each pair twice. The
//!   first row is `0, 1, n-1, 2, n-2, 3, ...`; row `i` adds `i` to every
//!   entry modulo `n`.
//! - **Random**: an independent, uniformly random permutation per round from
//!   a seeded generator. Balanced only in expectation, but with no fixed
//!   pattern at all; the seed reproduces it.
//!
//! Balance is exact only over whole periods ([`Design::period`]): a session
//! should count its rounds so that the measured rounds are a whole number of
//! periods ([`complete_rounds`]), numbered from 0 at the first measured
//! round (warm-up rounds may use any order).
//!
//! Within a design the pattern of predecessors is still fixed per square: in
//! a 4-arm Williams square the letter `1` always follows `0` in row 0. A
//! session that runs several epochs (fresh processes) can relabel which arm
//! plays which letter in each epoch ([`relabel`], [`EpochOrder`]), so the
//! same arm does not meet the same row pattern in every process. Relabelling
//! is a bijection on arms, so it keeps every balance property.
//!
//! Randomness comes from [`rand::rngs::StdRng`] seeded from the recorded seed
//! together with the round or epoch number (`SeedableRng::from_seed` over the
//! concatenated bytes, so `(seed, round)` pairs never collide). The sequences
//! are reproducible for a given `rand` version (pinned in `Cargo.lock`).

use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::SeedableRng;
use serde::{Deserialize, Serialize};

// The design is recorded in every session, so its data lives with the
// results model; what it does (the order of each round) is here.
pub use crate::results::Design;

impl Design {
    /// The design's name as recorded in JSON.
    pub fn name(&self) -> &'static str {
        match self {
            Design::Williams => "williams",
            Design::Random { .. } => "random",
        }
    }

    /// The order of arm indices in round `round` for `arms` arms.
    pub fn order(&self, round: usize, arms: usize) -> Vec<usize> {
        match *self {
            Design::Williams => williams_order(round, arms),
            Design::Random { seed } => random_order(seed, round, arms),
        }
    }

    /// Rounds after which the design's balance is complete: the Williams
    /// period (`n` for even `n`, `2n` for odd `n`); for the random design,
    /// balanced only in expectation, the same period is used so sessions
    /// round their counts alike.
    pub fn period(&self, arms: usize) -> usize {
        williams_period(arms)
    }
}

/// The number of rounds in one complete Williams design for `arms` arms:
/// `arms` when it is even (one square), `2 * arms` when it is odd (a square
/// and its mirror image); 1 for zero or one arm.
pub fn williams_period(arms: usize) -> usize {
    match arms {
        0 | 1 => 1,
        n if n % 2 == 0 => n,
        n => 2 * n,
    }
}

/// `requested` rounded up (at least one) to a whole number of design periods.
pub fn complete_rounds(requested: usize, arms: usize) -> usize {
    let p = williams_period(arms);
    requested.max(1).div_ceil(p) * p
}

/// The letter in slot `slot` of the first row: `0, 1, n-1, 2, n-2, ...`.
fn first_row(slot: usize, n: usize) -> usize {
    if slot == 0 {
        0
    } else if slot % 2 == 1 {
        slot.div_ceil(2)
    } else {
        n - slot / 2
    }
}

/// The order of arm indices in round `round` of the Williams design for
/// `arms` arms (rounds beyond one period repeat the design).
pub fn williams_order(round: usize, arms: usize) -> Vec<usize> {
    let n = arms;
    if n == 0 {
        return Vec::new();
    }
    let r = round % williams_period(n);
    let shift = r % n;
    let row: Vec<usize> = (0..n).map(|s| (first_row(s, n) + shift) % n).collect();
    if r >= n {
        // Odd n, second square: the mirror image of the first.
        row.into_iter().rev().collect()
    } else {
        row
    }
}

/// A generator seeded from `seed`, a domain tag and an index, without
/// collisions between different `(seed, index)` pairs.
fn rng_for(seed: u64, domain: u64, index: u64) -> StdRng {
    let mut bytes = [0u8; 32];
    bytes[..8].copy_from_slice(&seed.to_le_bytes());
    bytes[8..16].copy_from_slice(&domain.to_le_bytes());
    bytes[16..24].copy_from_slice(&index.to_le_bytes());
    StdRng::from_seed(bytes)
}

const DOMAIN_ROUND: u64 = 0x0072_6f75_6e64; // "round"
const DOMAIN_EPOCH: u64 = 0x0065_706f_6368; // "epoch"
const DOMAIN_SPAWN: u64 = 0x0073_7061_776e; // "spawn"

/// A uniformly random permutation of `0..arms` for round `round`, a pure
/// function of `(seed, round)`, so any round can be recomputed alone.
pub fn random_order(seed: u64, round: usize, arms: usize) -> Vec<usize> {
    let mut v: Vec<usize> = (0..arms).collect();
    v.shuffle(&mut rng_for(seed, DOMAIN_ROUND, round as u64));
    v
}

/// A seeded random relabelling for epoch `epoch`: `map[letter]` is the arm
/// index that plays `letter` of the design in that epoch. A pure function of
/// `(seed, epoch)`.
pub fn relabel(seed: u64, epoch: usize, arms: usize) -> Vec<usize> {
    let mut v: Vec<usize> = (0..arms).collect();
    v.shuffle(&mut rng_for(seed, DOMAIN_EPOCH, epoch as u64));
    v
}

/// The order in which epoch `epoch` starts its arms' processes: a seeded
/// permutation of `0..arms`, independent of the order's relabelling. The
/// process started first is not like the others (measured: on a Xeon VM
/// the null, always started last, ran wasm3's call_indirect 0.3% faster
/// than the baseline, started first, in 35 of 40 sessions), so which arm
/// that is is drawn per epoch like everything else about a process.
pub fn spawn_order(seed: u64, epoch: usize, arms: usize) -> Vec<usize> {
    let mut v: Vec<usize> = (0..arms).collect();
    v.shuffle(&mut rng_for(seed, DOMAIN_SPAWN, epoch as u64));
    v
}

/// The order for one epoch: a design plus that epoch's relabelling of arms
/// to letters. Serialisable so the JSON can record exactly what ran.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct EpochOrder {
    pub design: Design,
    pub epoch: usize,
    /// `None`: identity (letters are arm indices).
    pub relabel_seed: Option<u64>,
    /// `map[letter]` = arm index.
    pub map: Vec<usize>,
}

impl EpochOrder {
    /// The order for `epoch` with `arms` arms; `relabel_seed` `Some` draws a
    /// fresh arm-to-letter map for this epoch, `None` keeps the identity.
    pub fn new(design: Design, arms: usize, epoch: usize, relabel_seed: Option<u64>) -> Self {
        let map = match relabel_seed {
            Some(seed) => relabel(seed, epoch, arms),
            None => (0..arms).collect(),
        };
        EpochOrder {
            design,
            epoch,
            relabel_seed,
            map,
        }
    }

    pub fn arms(&self) -> usize {
        self.map.len()
    }

    /// Arm indices in the order they run in round `round` of this epoch.
    pub fn round(&self, round: usize) -> Vec<usize> {
        self.design
            .order(round, self.arms())
            .into_iter()
            .map(|letter| self.map[letter])
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Count slot occupancy and immediate predecessors over `rounds` rounds.
    fn tally(
        order: impl Fn(usize) -> Vec<usize>,
        arms: usize,
        rounds: usize,
    ) -> (Vec<Vec<usize>>, Vec<Vec<usize>>) {
        let mut slots = vec![vec![0usize; arms]; arms];
        let mut pairs = vec![vec![0usize; arms]; arms];
        for r in 0..rounds {
            let o = order(r);
            let mut seen = o.clone();
            seen.sort();
            assert_eq!(seen, (0..arms).collect::<Vec<_>>(), "round {r}: {o:?}");
            for (slot, &a) in o.iter().enumerate() {
                slots[a][slot] += 1;
            }
            for w in o.windows(2) {
                pairs[w[0]][w[1]] += 1;
            }
        }
        (slots, pairs)
    }

    fn assert_williams(order: impl Fn(usize) -> Vec<usize>, n: usize, periods: usize) {
        let p = williams_period(n);
        let rounds = p * periods;
        let (slots, pairs) = tally(order, n, rounds);
        for row in &slots {
            assert!(row.iter().all(|&c| c == rounds / n), "{n} arms: {slots:?}");
        }
        // n - 1 adjacent pairs per round, spread over n (n - 1) ordered pairs.
        let each = rounds / n;
        for (a, row) in pairs.iter().enumerate() {
            for (b, &c) in row.iter().enumerate() {
                let want = if a == b { 0 } else { each };
                assert_eq!(c, want, "{n} arms, pair ({a},{b}): {pairs:?}");
            }
        }
    }

    #[test]
    fn williams_balances_slots_and_predecessors() {
        for n in 2..=9 {
            assert_williams(|r| williams_order(r, n), n, 1);
            assert_williams(|r| williams_order(r, n), n, 3);
        }
    }

    #[test]
    fn every_arm_is_started_first_in_some_epoch() {
        let orders: Vec<Vec<usize>> = (0..40).map(|e| spawn_order(7, e, 3)).collect();
        for o in &orders {
            let mut sorted = o.clone();
            sorted.sort_unstable();
            assert_eq!(sorted, vec![0, 1, 2], "a permutation: {o:?}");
        }
        for arm in 0..3 {
            assert!(orders.iter().any(|o| o[0] == arm), "{arm} never first");
        }
        // Reproducible, and not the order's relabelling.
        assert_eq!(spawn_order(7, 5, 3), orders[5]);
        assert!((0..40).any(|e| spawn_order(7, e, 3) != relabel(7, e, 3)));
    }

    #[test]
    fn relabelled_epochs_stay_balanced() {
        for n in 2..=9 {
            for epoch in 0..4 {
                let eo = EpochOrder::new(Design::Williams, n, epoch, Some(7));
                assert_williams(|r| eo.round(r), n, 1);
            }
        }
        // Relabelling actually changes the map between epochs.
        let maps: Vec<_> = (0..8).map(|e| relabel(7, e, 5)).collect();
        assert!(maps.iter().any(|m| m != &maps[0]));
        assert_eq!(relabel(7, 3, 5), relabel(7, 3, 5));
    }

    #[test]
    fn williams_first_rows() {
        assert_eq!(williams_order(0, 4), vec![0, 1, 3, 2]);
        assert_eq!(williams_order(1, 4), vec![1, 2, 0, 3]);
        assert_eq!(williams_order(0, 3), vec![0, 1, 2]);
        assert_eq!(williams_order(3, 3), vec![2, 1, 0]);
        assert_eq!(williams_order(5, 1), vec![0]);
        assert!(williams_order(0, 0).is_empty());
    }

    #[test]
    fn periods_and_complete_rounds() {
        assert_eq!(williams_period(4), 4);
        assert_eq!(williams_period(5), 10);
        assert_eq!(williams_period(1), 1);
        assert_eq!(complete_rounds(15, 4), 16);
        assert_eq!(complete_rounds(15, 3), 18);
        assert_eq!(complete_rounds(0, 3), 6);
        assert_eq!(Design::Williams.period(3), 6);
    }

    #[test]
    fn random_design_is_a_reproducible_permutation() {
        let d = Design::Random { seed: 42 };
        for n in 1..=9 {
            // tally() asserts each round is a permutation.
            let (slots, _) = tally(|r| d.order(r, n), n, 200);
            assert!(slots.iter().flatten().sum::<usize>() == 200 * n);
        }
        let a: Vec<_> = (0..50).map(|r| d.order(r, 6)).collect();
        let b: Vec<_> = (0..50).map(|r| random_order(42, r, 6)).collect();
        assert_eq!(a, b);
        let c: Vec<_> = (0..50).map(|r| random_order(43, r, 6)).collect();
        assert_ne!(a, c);
        // Not one fixed order: many distinct permutations appear.
        let mut distinct = a.clone();
        distinct.sort();
        distinct.dedup();
        assert!(distinct.len() > 30, "{}", distinct.len());
    }

    #[test]
    fn design_serialises_with_name_and_parameters() {
        let j = serde_json::to_string(&Design::Williams).unwrap();
        assert_eq!(j, r#"{"name":"williams"}"#);
        let j = serde_json::to_string(&Design::Random { seed: 42 }).unwrap();
        assert_eq!(j, r#"{"name":"random","seed":42}"#);
        let back: Design = serde_json::from_str(&j).unwrap();
        assert_eq!(back, Design::Random { seed: 42 });
        assert_eq!(back.name(), "random");
        let eo = EpochOrder::new(Design::Williams, 3, 2, Some(9));
        let back: EpochOrder = serde_json::from_str(&serde_json::to_string(&eo).unwrap()).unwrap();
        assert_eq!(back, eo);
    }
}
