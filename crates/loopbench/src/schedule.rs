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

pub mod duet;
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
    /// In a duet: the arm (index) that ran at the same moment.
    pub partner: Option<usize>,
    /// In a duet: the core the rep was pinned to.
    pub core: Option<usize>,
    /// In a duet: this rep's release from the barrier minus its partner's.
    pub skew_ns: Option<i64>,
}

impl Timed {
    pub fn plain(rep: Rep, round: usize, slot: usize) -> Self {
        Timed {
            rep,
            round,
            slot,
            partner: None,
            core: None,
            skew_ns: None,
        }
    }
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
    /// Asked before every rep: a signal asked the session to stop, so the
    /// epoch ends where it is (the session drops it unfinished).
    fn stop_asked(&self) -> bool {
        false
    }
}

impl Progress for () {}

/// Run one shape on every arm for one epoch: prepare (untimed), then
/// `warmup + rounds` rounds in `order`. `skips[i]` is `Some(reason)` for
/// arms that do not run the shape. With `duet`, every round is a duet of
/// the baseline (`arms[0]`) with each other arm in turn, and `order` is
/// over those partners ([`duet::run_rounds`]).
#[allow(clippy::too_many_arguments)]
pub fn run_shape(
    shape: &ShapeModule,
    arms: &[&dyn Arm],
    skips: &[Option<String>],
    warmup: usize,
    rounds: usize,
    order: &EpochOrder,
    duet: Option<&duet::DuetPlan>,
    progress: &mut dyn Progress,
) -> Vec<ArmOutcome> {
    // Sequentially, arms are prepared in the epoch's first round's order,
    // which the relabelling changes per epoch: the arm prepared last starts
    // with its working set warm (wasmi's pointer_chase null, always
    // prepared last, ran 6-15% faster than its baseline in every session).
    let preparation = match duet {
        Some(_) => (0..arms.len()).collect(),
        None => sequence(order, warmup, 0),
    };
    let mut epoch = EpochRun::prepare(shape, arms, skips, warmup, &preparation);
    match duet {
        Some(plan) => duet::run_rounds(&mut epoch, rounds, order, plan, progress),
        None => {
            let period = order.design.period(order.arms()).max(1);
            for_rounds(warmup, rounds, period, progress, |round, progress| {
                for (slot, i) in sequence(order, warmup, round).into_iter().enumerate() {
                    if progress.stop_asked() {
                        return;
                    }
                    let Some(p) = epoch.prepared[i].as_mut() else {
                        continue;
                    };
                    crate::phases::set_arm(arms[i].label());
                    let result =
                        crate::phases::time(crate::phases::Phase::Harness, || p.rep(round));
                    progress.rep_done();
                    match result {
                        Ok(rep) => epoch.keep(i, round, slot, rep),
                        Err(error) => epoch.fail(i, error),
                    }
                }
            });
        }
    }
    crate::phases::set_arm(crate::phases::SESSION);
    epoch.outcomes
}

/// One shape's epoch in progress: every arm's prepared instance (gone once
/// it failed) and its outcome so far.
pub struct EpochRun<'a> {
    pub arms: &'a [&'a dyn Arm],
    pub prepared: Vec<Option<Box<dyn PreparedArm + 'a>>>,
    pub outcomes: Vec<ArmOutcome>,
    pub warmup: usize,
}

impl<'a> EpochRun<'a> {
    /// Prepare every arm that runs the shape (untimed), in the order of
    /// `preparation` (arm indices; any it leaves out come after).
    fn prepare(
        shape: &'a ShapeModule,
        arms: &'a [&'a dyn Arm],
        skips: &[Option<String>],
        warmup: usize,
        preparation: &[usize],
    ) -> Self {
        let mut prepared: Vec<Option<Box<dyn PreparedArm + 'a>>> =
            (0..arms.len()).map(|_| None).collect();
        let mut outcomes: Vec<ArmOutcome> = (0..arms.len())
            .map(|_| ArmOutcome::Ran(Vec::new()))
            .collect();
        let rest = (0..arms.len()).filter(|i| !preparation.contains(i));
        for i in preparation
            .iter()
            .copied()
            .filter(|&i| i < arms.len())
            .chain(rest)
        {
            let arm = arms[i];
            match &skips[i] {
                Some(reason) => outcomes[i] = ArmOutcome::Skipped(reason.clone()),
                None => {
                    crate::phases::set_arm(arm.label());
                    match crate::phases::time(crate::phases::Phase::Harness, || arm.prepare(shape))
                    {
                        Ok(p) => prepared[i] = Some(p),
                        Err(error) => {
                            outcomes[i] = ArmOutcome::Failed {
                                error,
                                completed: Vec::new(),
                            }
                        }
                    }
                }
            }
        }
        EpochRun {
            arms,
            prepared,
            outcomes,
            warmup,
        }
    }

    /// Keep arm `i`'s verified rep of `round` (warm-up rounds are dropped).
    pub fn keep(&mut self, i: usize, round: usize, slot: usize, rep: Rep) {
        self.keep_timed(i, round, Timed::plain(rep, 0, slot));
    }

    /// [`EpochRun::keep`] of a rep with its duet marks; `timed.round` is
    /// set here.
    pub fn keep_timed(&mut self, i: usize, round: usize, mut timed: Timed) {
        if round < self.warmup {
            return;
        }
        timed.round = round - self.warmup;
        if let ArmOutcome::Ran(reps) = &mut self.outcomes[i] {
            reps.push(timed);
        }
    }

    /// Arm `i` failed: it runs no more reps this epoch; those it completed
    /// are kept.
    pub fn fail(&mut self, i: usize, error: RunError) {
        self.prepared[i] = None;
        let completed =
            match std::mem::replace(&mut self.outcomes[i], ArmOutcome::Skipped(String::new())) {
                ArmOutcome::Ran(reps) => reps,
                _ => Vec::new(),
            };
        self.outcomes[i] = ArmOutcome::Failed { error, completed };
    }
}

/// Call `round_fn` for each of `warmup + rounds` rounds while the budget
/// allows: once it is spent, no further warm-up round starts, and no
/// further measured round after the first whole design of `period` rounds
/// (the order stays balanced). An interrupt starts no further round.
pub fn for_rounds(
    warmup: usize,
    rounds: usize,
    period: usize,
    progress: &mut dyn Progress,
    mut round_fn: impl FnMut(usize, &mut dyn Progress),
) {
    let mut round = 0;
    while round < warmup + rounds && !progress.stop_asked() {
        let whole_design = round >= warmup + period && (round - warmup).is_multiple_of(period);
        if (round < warmup || whole_design) && progress.out_of_time() {
            if round < warmup {
                round = warmup;
                continue;
            }
            break;
        }
        round_fn(round, progress);
        round += 1;
    }
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
