//! Rounds and rotation: the order in which arms run.
//!
//! A session runs each shape for `warmup + rounds` rounds. In every round
//! each arm runs once; round `r` starts at arm `r mod A` and proceeds
//! cyclically. That cyclic Latin square gives every arm every slot exactly
//! once per `A` rounds, so position in the round (cache state left by the
//! previous arm, frequency ramps) is common to all arms, and drift on the
//! machine lands on every arm alike. Measured rounds are rounded up to a
//! multiple of `A` so the balance is exact.

pub mod order;

use crate::arm::{Arm, PreparedArm, Rep};
use crate::error::Error;
use crate::shapes::ShapeModule;

/// The order of arm indices in round `round` for `arms` arms.
pub fn rotation(round: usize, arms: usize) -> Vec<usize> {
    (0..arms).map(|slot| (round + slot) % arms).collect()
}

/// Measured rounds, rounded up so every arm takes every slot equally often.
pub fn balanced_rounds(requested: usize, arms: usize) -> usize {
    let a = arms.max(1);
    requested.max(1).div_ceil(a) * a
}

/// How one arm fared on one shape.
pub enum ArmOutcome {
    /// Verified reps in round order (warm-up excluded).
    Ran(Vec<Rep>),
    Skipped(String),
    /// The arm failed; the reps it completed before are kept.
    Failed {
        error: Error,
        completed: Vec<Rep>,
    },
}

/// Per-rep notification for progress displays.
pub trait Progress {
    fn rep_done(&mut self) {}
}

impl Progress for () {}

/// Run one shape on every arm: prepare (untimed), then rounds in rotation.
/// `skips[i]` is `Some(reason)` for arms that cannot run the shape.
pub fn run_shape(
    shape: &ShapeModule,
    arms: &[&dyn Arm],
    skips: &[Option<String>],
    warmup: usize,
    rounds: usize,
    progress: &mut dyn Progress,
) -> Vec<ArmOutcome> {
    let mut prepared: Vec<Option<Box<dyn PreparedArm + '_>>> = Vec::new();
    let mut outcomes: Vec<ArmOutcome> = Vec::new();
    for (arm, skip) in arms.iter().zip(skips) {
        match skip {
            Some(reason) => {
                prepared.push(None);
                outcomes.push(ArmOutcome::Skipped(reason.clone()));
            }
            None => {
                crate::phases::set_arm(arm.label());
                match crate::phases::time(crate::phases::Phase::Harness, || arm.prepare(shape)) {
                    Ok(p) => {
                        prepared.push(Some(p));
                        outcomes.push(ArmOutcome::Ran(Vec::new()));
                    }
                    Err(error) => {
                        prepared.push(None);
                        outcomes.push(ArmOutcome::Failed {
                            error,
                            completed: Vec::new(),
                        });
                    }
                }
            }
        }
    }
    let n = arms.len();
    for round in 0..warmup + rounds {
        for i in rotation(round, n) {
            let Some(p) = prepared[i].as_mut() else {
                continue;
            };
            crate::phases::set_arm(arms[i].label());
            let result = crate::phases::time(crate::phases::Phase::Harness, || p.rep(round));
            progress.rep_done();
            match result {
                Ok(rep) => {
                    if round >= warmup {
                        if let ArmOutcome::Ran(reps) = &mut outcomes[i] {
                            reps.push(rep);
                        }
                    }
                }
                Err(error) => {
                    prepared[i] = None;
                    let completed = match std::mem::replace(
                        &mut outcomes[i],
                        ArmOutcome::Skipped(String::new()),
                    ) {
                        ArmOutcome::Ran(reps) => reps,
                        _ => Vec::new(),
                    };
                    outcomes[i] = ArmOutcome::Failed { error, completed };
                }
            }
        }
    }
    crate::phases::set_arm(crate::phases::SESSION);
    outcomes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_arm_takes_every_slot_equally() {
        for arms in 1..7 {
            let rounds = balanced_rounds(10, arms);
            assert_eq!(rounds % arms, 0);
            let mut slots = vec![vec![0usize; arms]; arms];
            for r in 0..rounds {
                let order = rotation(r, arms);
                let mut seen = order.clone();
                seen.sort();
                assert_eq!(
                    seen,
                    (0..arms).collect::<Vec<_>>(),
                    "each arm once per round"
                );
                for (slot, &arm) in order.iter().enumerate() {
                    slots[arm][slot] += 1;
                }
            }
            for row in &slots {
                assert!(
                    row.iter().all(|&c| c == rounds / arms),
                    "{arms} arms: {slots:?}"
                );
            }
        }
    }

    #[test]
    fn rounds_round_up() {
        assert_eq!(balanced_rounds(15, 4), 16);
        assert_eq!(balanced_rounds(12, 4), 12);
        assert_eq!(balanced_rounds(0, 3), 3);
    }
}
