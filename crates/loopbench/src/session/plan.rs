//! What a session is asked to do: the [`Plan`] and its defaults (seed,
//! rep length, rounds per epoch), and which arm is the reference.

use crate::arm::{ArmSpec, Iters};
use crate::measure::counters::CounterSet;
use crate::results::{Metric, Schedule};
use crate::schedule::Design;
use crate::shapes::{Params, Shape};
use crate::stats::estimators::Estimator;
use crate::stats::stop::StopRule;
use crate::workers::Isolation;
use std::time::Duration;

/// Everything a session needs, validated.
pub struct Plan {
    pub shapes: Vec<Box<dyn Shape>>,
    /// Arms in order; `arms[0]` is the baseline.
    pub arms: Vec<ArmSpec>,
    /// Labels of the arms, when not their spec (empty: the specs). Arms
    /// that share a spec (calibration's effects) need them.
    pub labels: Vec<String>,
    /// Iteration counts of the arms relative to the shape's (empty: all run
    /// the shape's count; see [`crate::arm::Iters`]).
    pub arm_iters: Vec<Iters>,
    pub params: Params,
    /// Measured rounds per epoch (rounded up to whole order designs).
    pub rounds: usize,
    /// The rounds were not asked for: with layouts sampled, each shape may
    /// run fewer per epoch where its layout component dominates
    /// ([`crate::session::rounds`]).
    pub adapt_rounds: bool,
    /// Warm-up rounds per epoch and shape, run and verified, discarded.
    pub warmup: usize,
    /// Extra counters read around every timed call (`--counters`).
    pub counters: CounterSet,
    /// When shapes stop taking epochs.
    pub stop: StopRule,
    /// The order of arms in a round.
    pub order: Design,
    /// One arm at a time, or the baseline beside each arm in duets.
    pub schedule: Schedule,
    /// Account where the time goes (`--phases`): workers are asked for
    /// their phase totals.
    pub phases: bool,
    /// Seeds the per-epoch relabelling of the order, the start order of
    /// each epoch's processes and their layout draws. The command line
    /// draws a fresh one per session unless `--seed` is given: sessions
    /// that share it share their layouts, epoch by epoch, and are not
    /// independent samples of them.
    pub seed: u64,
    /// Seeds build arms' layout variants: fixed unless `--seed` is given,
    /// so that they are linked once per machine and reused.
    pub variant_seed: u64,
    /// Every arm in a fresh worker process per epoch, or all in this one.
    pub isolation: Isolation,
    /// Pin every timing thread to this core.
    pub pin: Option<usize>,
    /// What verdicts are taken on.
    pub metric: Metric,
    /// Target duration of one rep of the slowest arm; `None`: the shape's
    /// own iteration count (or `--iters`).
    pub rep_target: Option<Duration>,
    /// Layout variants of every build arm, sampled across epochs
    /// (`--layout-builds`; 1: the plain build only, no build level).
    pub layout_builds: usize,
    /// The arm every result is also given as a ratio to (`--reference`).
    pub reference: Option<Reference>,
    /// The machine's recorded setting the plan took, described.
    pub setting: Option<String>,
    /// Seconds the whole session may take (`--session-budget`): no epoch
    /// starts that would end past them (the second always runs). Shapes
    /// whose comparisons are decided wait while others are unsure, so the
    /// time goes to the unsure ones first; once none is, the time left
    /// narrows the decided ones' intervals (the null's included) towards
    /// `--precision`, each within its own `--budget`.
    pub session_budget_s: Option<f64>,
    /// How each epoch's rounds become one log ratio (the interval is
    /// across epochs whichever it is).
    pub estimator: Estimator,
}

/// The library's seed (and the command line's for build variants): "loop".
pub const DEFAULT_SEED: u64 = 0x6c6f_6f70;

/// The rep length of a session when neither `--rep-ms` nor a setting
/// recorded for the machine says otherwise, milliseconds. Half a
/// millisecond, not two: on a 2-vCPU Xeon VM the per-rep noise barely fell
/// with rep length (tinywasm's `br_table_switch` 9-13% at every length from
/// 0.05 to 10 ms), so an epoch's rounds resolve as much in a quarter of the
/// time and the session affords more epochs, which is what narrows
/// layout-dominated shapes (docs/measured/2026-12-04-shorter-reps/).
pub const DEFAULT_REP_MS: f64 = 0.5;

/// Milliseconds of the slowest arm's timed reps an epoch takes by default,
/// and the fewest rounds it takes to get them.
const EPOCH_TIMED_MS: f64 = 8.0;
const MIN_DEFAULT_ROUNDS: usize = 8;

/// Measured rounds per epoch when `--rounds` is not given: enough reps of
/// `rep_ms` for [`EPOCH_TIMED_MS`], at least [`MIN_DEFAULT_ROUNDS`] (16 at
/// the default 0.5 ms, 8 from 1 ms up; 8 with a fixed `--iters`).
pub fn default_rounds(rep_ms: Option<f64>) -> usize {
    match rep_ms {
        Some(ms) if ms > 0.0 => {
            ((EPOCH_TIMED_MS / ms).ceil() as usize).clamp(MIN_DEFAULT_ROUNDS, 1000)
        }
        _ => MIN_DEFAULT_ROUNDS,
    }
}

/// A seed no earlier session had: the session's own, recorded in its
/// results (`--seed` reruns it).
pub fn fresh_seed() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    // std's RandomState is keyed from the OS's randomness per process;
    // the clock and the pid separate two seeds drawn in one process.
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    h.write_u32(std::process::id());
    h.finish()
}

/// Which arm of a plan is the session's reference.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Reference {
    /// Its index in [`Plan::arms`].
    pub index: usize,
    /// Added by `--reference` rather than asked for as an arm: then it is
    /// a yardstick only ([`Role::Reference`]), not a candidate to decide.
    pub added: bool,
}

impl Default for Plan {
    /// An empty plan with the defaults the command line uses.
    fn default() -> Self {
        Plan {
            shapes: Vec::new(),
            arms: Vec::new(),
            labels: Vec::new(),
            arm_iters: Vec::new(),
            params: Params::default(),
            rounds: default_rounds(Some(DEFAULT_REP_MS)),
            adapt_rounds: false,
            warmup: 1,
            counters: CounterSet::none(),
            stop: StopRule::default(),
            order: Design::Williams,
            schedule: Schedule::Sequential,
            phases: false,
            seed: DEFAULT_SEED,
            variant_seed: DEFAULT_SEED,
            isolation: Isolation::Workers,
            pin: None,
            metric: Metric::Wall,
            rep_target: Some(Duration::from_secs_f64(DEFAULT_REP_MS / 1e3)),
            layout_builds: crate::workers::layout::DEFAULT_LAYOUT_BUILDS,
            reference: None,
            setting: None,
            session_budget_s: None,
            estimator: crate::stats::estimators::DEFAULT,
        }
    }
}

/// What `noise --record` stored for this machine, as a session takes it.
pub struct Recorded {
    pub rep_ms: f64,
    /// `sequential` or `duet` (`None`: recorded before schedules were).
    pub schedule: Option<String>,
    /// The per-epoch estimator's name (`None`: recorded before estimators
    /// were).
    pub estimator: Option<String>,
    /// How the session says it took it.
    pub said: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_rounds_fill_the_epoch_time_with_at_least_eight() {
        // 8 ms of reps of the slowest arm per epoch, never fewer than 8.
        assert_eq!(default_rounds(Some(DEFAULT_REP_MS)), 16);
        assert_eq!(default_rounds(Some(0.25)), 32);
        assert_eq!(default_rounds(Some(0.3)), 27);
        assert_eq!(default_rounds(Some(1.0)), 8);
        assert_eq!(default_rounds(Some(10.0)), 8);
        // A fixed --iters has no rep length: the old default.
        assert_eq!(default_rounds(None), 8);
        // Tiny reps are capped where --rounds is.
        assert_eq!(default_rounds(Some(0.001)), 1000);
        assert_eq!(Plan::default().rounds, 16);
    }
}
