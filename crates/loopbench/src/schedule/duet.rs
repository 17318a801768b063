//! Duet rounds: the baseline and one other arm at the same moment.
//!
//! On a shared VM the machine's speed moves from one millisecond to the
//! next, so a rep of arm B timed after a rep of arm A does not see the
//! machine A saw. Duet benchmarking (Bulej et al., ICPE 2020) runs A and B
//! at once, one on each of two cores, so what the host does in that
//! millisecond lands on both, and pairs the two reps. Here:
//!
//! - every round is a sequence of duets, the baseline with each other arm
//!   (null control included) once, the partners in the epoch's order (a
//!   Williams design over the partners, so no partner always follows the
//!   same one);
//! - the two workers meet at the shared-memory barrier right before their
//!   timed calls ([`crate::workers::barrier`]), released together to within
//!   microseconds (each rep records the skew), not through the orchestrator;
//! - the baseline runs on `cores[r % 2]` in round `r` and its partner on
//!   the other core, so the cores' own difference cancels over two rounds.
//!
//! What a duet cannot remove: the two arms share caches and memory
//! bandwidth, so on memory-bound shapes each slows the other. The null
//! control's duet (the baseline beside a second copy of itself) measures
//! that for the baseline's own work, and the results say the session ran
//! in duets. Whether duets beat sequential pairing on a machine is measured
//! (`loopbench noise --schedules sequential,duet`), not assumed: where the
//! noise belongs to each core rather than to the machine, pairing across
//! cores can be worse.

use super::{for_rounds, sequence, EpochOrder, EpochRun, Progress, Timed};
use crate::arm::{Duet, Rep, RunError};
use crate::phases::{self, Phase};
use crate::workers::barrier::BarrierFile;
use std::time::Duration;

/// What a duet epoch needs besides the arms.
pub struct DuetPlan<'a> {
    pub barrier: &'a BarrierFile,
    /// The two cores the pair runs on.
    pub cores: [usize; 2],
}

/// Rounds of a duet design: whole designs over the partners, and an even
/// number, so each partner meets the baseline on each core equally often.
pub fn complete_rounds(requested: usize, arms: usize, design: &crate::results::Design) -> usize {
    let partners = arms.saturating_sub(1).max(1);
    let period = duet_period(design, partners);
    requested.max(1).div_ceil(period) * period
}

/// The period of a duet design over `partners`: the order's, made even.
pub fn duet_period(design: &crate::results::Design, partners: usize) -> usize {
    let p = design.period(partners).max(1);
    if p.is_multiple_of(2) {
        p
    } else {
        2 * p
    }
}

/// The rounds of one shape's epoch as duets. `order` is over the partners
/// (arms `1..`), arm 0 is the baseline.
pub fn run_rounds(
    epoch: &mut EpochRun<'_>,
    rounds: usize,
    order: &EpochOrder,
    plan: &DuetPlan<'_>,
    progress: &mut dyn Progress,
) {
    let period = duet_period(&order.design, order.arms());
    let warmup = epoch.warmup;
    for_rounds(warmup, rounds, period, progress, |round, progress| {
        let base_core = plan.cores[round % 2];
        let partner_core = plan.cores[(round + 1) % 2];
        for (slot, p) in sequence(order, warmup, round).into_iter().enumerate() {
            let partner = p + 1;
            if epoch.prepared[partner].is_none() {
                continue;
            }
            if epoch.prepared[0].is_none() {
                // No baseline to pair with: the partner runs alone, so its
                // own figures (and its errors) are still reported.
                solo(epoch, partner, round, slot, progress);
                continue;
            }
            let generation = plan.barrier.generation();
            let base = Duet {
                slot: 0,
                partner,
                generation,
                core: base_core,
            };
            let other = Duet {
                slot: partner,
                partner: 0,
                generation,
                core: partner_core,
            };
            phases::set_arm(epoch.arms[partner].label());
            let (b, o) = phases::time(Phase::Harness, || {
                duet(epoch, partner, round, (base, other), plan.barrier)
            });
            progress.rep_done();
            progress.rep_done();
            match (b, o) {
                (Ok(b), Ok(o)) => {
                    let skew = |a: &Rep, z: &Rep| match (a.duet, z.duet) {
                        (Some(a), Some(z)) => Some(a.released_ns as i64 - z.released_ns as i64),
                        _ => None,
                    };
                    let (sb, so) = (skew(&b, &o), skew(&o, &b));
                    let mark = |rep: Rep, partner: usize, core: usize, skew_ns| Timed {
                        rep,
                        round: 0,
                        slot,
                        partner: Some(partner),
                        core: Some(core),
                        skew_ns,
                    };
                    epoch.keep_timed(0, round, mark(b, partner, base_core, sb));
                    epoch.keep_timed(partner, round, mark(o, 0, partner_core, so));
                }
                // A rep without its partner's pairs with nothing: dropped.
                (b, o) => {
                    if let Err(e) = b {
                        epoch.fail(0, e);
                    }
                    if let Err(e) = o {
                        epoch.fail(partner, e);
                    }
                }
            }
        }
    });
}

/// A partner's rep with no baseline to meet.
fn solo(
    epoch: &mut EpochRun<'_>,
    i: usize,
    round: usize,
    slot: usize,
    progress: &mut dyn Progress,
) {
    let Some(p) = epoch.prepared[i].as_mut() else {
        return;
    };
    phases::set_arm(epoch.arms[i].label());
    let result = phases::time(Phase::Harness, || p.rep(round));
    progress.rep_done();
    match result {
        Ok(rep) => epoch.keep(i, round, slot, rep),
        Err(e) => epoch.fail(i, e),
    }
}

/// How long the scheduler blocks on one arm of a duet before it looks at
/// the other: a partner that died before the barrier is noticed this soon
/// (and the arm waiting for it released), while a rep that ends sooner
/// costs no extra wake-up.
const POLL: Duration = Duration::from_millis(20);

/// Start both reps (they meet at the barrier), then collect both answers.
/// A side whose request could not be sent, or that failed, is stood in for
/// at the barrier, so the other is not left waiting.
fn duet(
    epoch: &mut EpochRun<'_>,
    partner: usize,
    round: usize,
    sides: (Duet, Duet),
    barrier: &BarrierFile,
) -> (Result<Rep, RunError>, Result<Rep, RunError>) {
    let sides = [(0, sides.0), (partner, sides.1)];
    let mut done: [Option<Result<Rep, RunError>>; 2] = [None, None];
    for (k, (i, d)) in sides.into_iter().enumerate() {
        let started = match epoch.prepared[i].as_mut() {
            Some(p) => p.start_duet(round, d),
            None => Err(RunError::NoDuet),
        };
        if let Err(e) = started {
            barrier.arrive(d.slot, d.generation);
            done[k] = Some(Err(e));
        }
    }
    while done.iter().any(Option::is_none) {
        // Block on the first side still out, only look at the second.
        let mut wait = POLL;
        for (k, (i, d)) in sides.into_iter().enumerate() {
            if done[k].is_some() {
                continue;
            }
            let polled = match epoch.prepared[i].as_mut() {
                Some(p) => p.poll_duet(round, wait),
                None => Err(RunError::NoDuet),
            };
            wait = Duration::ZERO;
            match polled {
                Ok(None) => {}
                Ok(Some(rep)) => done[k] = Some(Ok(rep)),
                Err(e) => {
                    // It may have died before the barrier: let the other go.
                    barrier.arrive(d.slot, d.generation);
                    done[k] = Some(Err(e));
                }
            }
        }
    }
    let [b, o] = done.map(|r| r.unwrap_or(Err(RunError::NoDuet)));
    (b, o)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::Design;

    #[test]
    fn duet_rounds_are_whole_even_designs() {
        // Two arms (baseline and null): one partner, period 1 made even.
        assert_eq!(complete_rounds(5, 2, &Design::Williams), 6);
        // Four arms: three partners, Williams period 6 (odd n doubles).
        assert_eq!(duet_period(&Design::Williams, 3), 6);
        assert_eq!(complete_rounds(8, 4, &Design::Williams), 12);
        // Three arms: two partners, period 2.
        assert_eq!(complete_rounds(3, 3, &Design::Williams), 4);
    }
}
