//! Rounds and order: in which order arms run.
//!
//! A session runs each shape in epochs (fresh processes, see
//! [`crate::session`]); inside an epoch, `warmup + rounds` rounds, each arm
//! once per round. The order of a round comes from [`order::EpochOrder`]: a
//! Williams design by default, so every arm takes every slot equally often
//! *and* follows every other arm equally often (a cyclic square would hand
//! each arm a fixed predecessor, whose cache and predictor state would land
//! on it every time); the arms are relabelled per epoch from the session's
//! seed. Measured rounds are rounded up to whole designs so the balance is
//! exact.

pub mod order;

use crate::arm::RunError;
use crate::arm::{Arm, PreparedArm, Rep};
use crate::shapes::ShapeModule;

pub use order::{complete_rounds, Design, EpochOrder};

/// A verified rep and where it ran.
#[derive(Clone, Debug)]
pub struct Timed {
    pub rep: Rep,
    /// Measured round (warm-up excluded) of its epoch.
    pub round: usize,
    /// Position in the round.
    pub slot: usize,
}

/// The arms of round `round` (warm-up rounds first) in the order they run.
/// Warm-up rounds take the design's order too, the measured rounds start
/// where a whole design starts.
pub fn sequence(order: &EpochOrder, warmup: usize, round: usize) -> Vec<usize> {
    let period = order.design.period(order.arms()).max(1);
    order.round(round.wrapping_sub(warmup) % period)
}

/// How one arm fared on one shape.
pub enum ArmOutcome {
    /// Verified reps in round order (warm-up excluded).
    Ran(Vec<Timed>),
    Skipped(String),
    /// The arm failed; the reps it completed before are kept.
    Failed {
        error: RunError,
        completed: Vec<Timed>,
    },
}

/// Per-rep notification for progress displays, and the budget's word.
pub trait Progress {
    fn rep_done(&mut self) {}
    /// Asked between rounds: the time for this shape's epoch is spent, so
    /// no further warm-up round starts, and no further measured round
    /// after the first whole design (the order stays balanced).
    fn out_of_time(&mut self) -> bool {
        false
    }
}

impl Progress for () {}

/// Run one shape on every arm for one epoch: prepare (untimed), then
/// `warmup + rounds` rounds in `order`. `skips[i]` is `Some(reason)` for
/// arms that do not run the shape.
pub fn run_shape(
    shape: &ShapeModule,
    arms: &[&dyn Arm],
    skips: &[Option<String>],
    warmup: usize,
    rounds: usize,
    order: &EpochOrder,
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
    let period = order.design.period(order.arms()).max(1);
    let mut round = 0;
    while round < warmup + rounds {
        let whole_design = round >= warmup + period && (round - warmup).is_multiple_of(period);
        if (round < warmup || whole_design) && progress.out_of_time() {
            if round < warmup {
                round = warmup;
                continue;
            }
            break;
        }
        for (slot, i) in sequence(order, warmup, round).into_iter().enumerate() {
            let Some(p) = prepared[i].as_mut() else {
                continue;
            };
            crate::phases::set_arm(arms[i].label());
            let result = crate::phases::time(crate::phases::Phase::Harness, || p.rep(round));
            progress.rep_done();
            match result {
                Ok(rep) => {
                    let rep = Timed {
                        rep,
                        round: round - warmup.min(round),
                        slot,
                    };
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
        round += 1;
    }
    crate::phases::set_arm(crate::phases::SESSION);
    outcomes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounds_round_up_to_whole_designs() {
        assert_eq!(complete_rounds(15, 4), 16);
        assert_eq!(complete_rounds(12, 4), 12);
        // Odd arm counts need two squares.
        assert_eq!(complete_rounds(4, 3), 6);
    }
}
