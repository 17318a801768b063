//! Where a session's time goes (`loopbench run --phases`): compile,
//! instantiate, setup, the timed run, verify, the counting run and the
//! report, per arm. Users see at once when setup or verify, not the engine,
//! dominates a session.
//!
//! Accounting is per thread and keyed by the arm the scheduler is driving
//! (set with [`set_arm`]), so adapters and arms record their phases without
//! passing a context through every call. Recording reads the monotonic clock
//! only outside the timed region; the timed run's own figure is the meter's.
//!
//! Arms in worker processes record in the worker; with `--phases` the
//! session asks each worker for its totals ([`take_own`]) before the epoch
//! ends it and adds them to the arm's ([`add`]). What the worker did during
//! the pilot is the pilot's: those totals are asked for and dropped, since
//! the pilot's own wall time already holds them. Spawning a worker (process
//! start, `init`/`ready`) is its own phase: it is what a fresh layout costs.

use serde::{Deserialize, Serialize};
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::fmt::Write;
use std::time::{Duration, Instant};

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// Starting a worker process, up to its `ready`.
    Spawn,
    /// Sizing the iteration count (first epoch of a shape): its preparing
    /// and calls, wherever they ran.
    Pilot,
    /// A worker regenerating the shape's module from the catalog (and
    /// checking its hash) before compiling it.
    Module,
    Compile,
    Instantiate,
    Setup,
    TimedRun,
    Verify,
    /// Rep and prepare time not covered by the phases above: the harness.
    Harness,
    CountingRun,
    Report,
}

impl Phase {
    pub const ALL: [Phase; 11] = [
        Phase::Spawn,
        Phase::Pilot,
        Phase::Module,
        Phase::Compile,
        Phase::Instantiate,
        Phase::Setup,
        Phase::TimedRun,
        Phase::Verify,
        Phase::Harness,
        Phase::CountingRun,
        Phase::Report,
    ];
    pub fn name(self) -> &'static str {
        match self {
            Phase::Spawn => "spawn",
            Phase::Pilot => "pilot",
            Phase::Module => "module",
            Phase::Compile => "compile",
            Phase::Instantiate => "instantiate",
            Phase::Setup => "setup",
            Phase::TimedRun => "timed run",
            Phase::Verify => "verify",
            Phase::Harness => "harness",
            Phase::CountingRun => "counting run",
            Phase::Report => "report",
        }
    }
}

/// Work not attributed to an arm (counting run, report).
pub const SESSION: &str = "(session)";

thread_local! {
    static CURRENT: RefCell<String> = const { RefCell::new(String::new()) };
    static TOTALS: RefCell<BTreeMap<String, BTreeMap<Phase, Duration>>> = const { RefCell::new(BTreeMap::new()) };
}

/// The arm whose work is recorded next.
pub fn set_arm(label: &str) {
    CURRENT.with(|c| label.clone_into(&mut c.borrow_mut()));
}

pub fn record(phase: Phase, d: Duration) {
    let arm = CURRENT.with(|c| c.borrow().clone());
    let arm = if arm.is_empty() {
        SESSION.to_string()
    } else {
        arm
    };
    record_for(&arm, phase, d);
}

pub fn record_for(arm: &str, phase: Phase, d: Duration) {
    TOTALS.with(|t| {
        *t.borrow_mut()
            .entry(arm.to_string())
            .or_default()
            .entry(phase)
            .or_default() += d
    });
}

/// This thread's totals, taken (a worker's, asked for by the session),
/// merged over the arms they were recorded for.
pub fn take_own() -> BTreeMap<Phase, f64> {
    let totals = TOTALS.with(|t| std::mem::take(&mut *t.borrow_mut()));
    let mut out = BTreeMap::new();
    for d in totals.into_values().flat_map(BTreeMap::into_iter) {
        *out.entry(d.0).or_default() += d.1.as_secs_f64();
    }
    out
}

/// Add a worker's totals to `arm`'s.
pub fn add(arm: &str, seconds: &BTreeMap<Phase, f64>) {
    for (p, s) in seconds {
        if s.is_finite() && *s >= 0.0 {
            record_for(arm, *p, Duration::from_secs_f64(*s));
        }
    }
}

/// Run `f` and record its whole wall time as `arm`'s `phase`; whatever
/// `f` recorded on this thread (an in-process engine's compile, say) is
/// part of that and is dropped, so nothing counts twice.
pub fn time_whole<R>(arm: &str, phase: Phase, f: impl FnOnce() -> R) -> R {
    let saved = TOTALS.with(|t| std::mem::take(&mut *t.borrow_mut()));
    let start = Instant::now();
    let r = f();
    TOTALS.with(|t| *t.borrow_mut() = saved);
    record_for(arm, phase, start.elapsed());
    r
}

/// Run `f` and record its wall time under `phase`.
pub fn time<R>(phase: Phase, f: impl FnOnce() -> R) -> R {
    let start = Instant::now();
    let r = f();
    record(phase, start.elapsed());
    r
}

/// Per arm, seconds per phase.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Breakdown {
    pub arms: BTreeMap<String, BTreeMap<Phase, f64>>,
    pub wall_seconds: f64,
}

/// Take everything recorded on this thread so far. Harness time is the
/// remainder of what the scheduler measured around prepare and rep calls
/// (recorded under `Harness` as a total) after the named phases.
pub fn take(wall: Duration) -> Breakdown {
    let totals = TOTALS.with(|t| std::mem::take(&mut *t.borrow_mut()));
    let mut arms = BTreeMap::new();
    for (arm, phases) in totals {
        let mut secs: BTreeMap<Phase, f64> =
            phases.iter().map(|(p, d)| (*p, d.as_secs_f64())).collect();
        if let Some(outer) = secs.get(&Phase::Harness).copied() {
            let inner: f64 = [
                Phase::Module,
                Phase::Compile,
                Phase::Instantiate,
                Phase::Setup,
                Phase::TimedRun,
                Phase::Verify,
            ]
            .iter()
            .filter_map(|p| secs.get(p))
            .sum();
            secs.insert(Phase::Harness, (outer - inner).max(0.0));
        }
        arms.insert(arm, secs);
    }
    Breakdown {
        arms,
        wall_seconds: wall.as_secs_f64(),
    }
}

impl Breakdown {
    pub fn render(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "\nwhere the session's {:.1} s went (seconds, share of the session):",
            self.wall_seconds
        );
        let mut head = format!("  {:<22}", "arm");
        for p in Phase::ALL {
            head += &format!(" {:>14}", p.name());
        }
        let _ = writeln!(out, "{head}");
        let wall = self.wall_seconds.max(1e-9);
        for (arm, phases) in &self.arms {
            let mut line = format!("  {arm:<22}");
            for p in Phase::ALL {
                line += &match phases.get(&p) {
                    Some(s) => format!(" {:>7.2} {:>5.1}%", s, 100.0 * s / wall),
                    None => format!(" {:>14}", "-"),
                };
            }
            let _ = writeln!(out, "{line}");
        }
        let total_timed: f64 = self
            .arms
            .values()
            .filter_map(|p| p.get(&Phase::TimedRun))
            .sum();
        let _ = writeln!(
            out,
            "  timed runs are {:.1}% of the session; the rest is setup, verification, compilation and bookkeeping.",
            100.0 * total_timed / wall
        );
        out
    }
}
