//! Calibration: does the instrument measure an effect whose size is known,
//! and how small an effect does it resolve on this machine, right now?
//!
//! A harness that reports "+0.8% [+0.3, +1.3]" asks to be believed about the
//! interval. The only way to earn that is to feed it effects whose truth is
//! known by construction and count how often it gets them right. Here the
//! known effect is *more of the same loop*: every arm runs the same shape on
//! the same engine, and the arm for effect `x` calls `run(n * (1 + x/100))`
//! where the baseline calls `run(n)`. The base count `n` is chosen so that the
//! scaled count is an exact integer (effects are read in hundredths of a
//! percent), so the true effect is exactly `x`% of loop iterations. Every rep
//! still resets and verifies, with the scaled count, so an arm cannot claim
//! work it did not do.
//!
//! Iterations are not quite time: a call also pays a fixed cost `c` (the
//! engine's entry and exit, the loop's prologue and epilogue) that does not
//! scale. With `T` the baseline call's time, the true time effect is
//! `x * (1 - c/T)`. Calibration measures `c` as the median time of a
//! one-iteration call (an upper bound on the fixed part) and reports the
//! bias `x * c/T` beside every effect; with calls of milliseconds it is a few
//! millionths of `x`, far below any interval.
//!
//! The arms run through [`schedule::run_shape`], the same rotation the
//! sessions use, with the baseline's second instance as the null control
//! (effect 0): the point is to calibrate the real instrument, not a private
//! loop. Per effect and repetition we record the paired median change and its
//! order-statistics interval ([`stats::paired_change`]), whether the interval
//! covers the truth, and whether it excludes zero with the right sign
//! ("detected"). Over `R` repetitions:
//!
//! - coverage = (repetitions whose interval holds the truth) / R; for a 95%
//!   interval it should be near 0.95 (lower means the interval is too narrow
//!   for this machine's drift);
//! - the smallest reliably detected effect is the smallest `x` such that it
//!   and every larger effect tried were detected in at least 90% of the
//!   repetitions (9 of 10);
//! - for the null control, "detected" is a false alarm.
//!
//! A known-sign toggle on a real engine completes the picture: wasmi with
//! fuel metering executes more instructions than wasmi without. That sign is
//! known for instructions only: measured here, fuel ran 12-19% *faster* on
//! add_chain in four processes of five while executing 8.4% more
//! instructions (an alignment effect). So the toggle runs as an ordinary
//! session ([`session::run`], epochs and null control included), reports the
//! time change, and judges only whether it agrees in sign with the executed
//! instructions, where a counter reads them.
//!
//! The machine's load average is recorded at the start and end of every
//! repetition; `--load N` spins N busy threads for the whole calibration to
//! show how the floor follows contention. Each rep also reads the thread's
//! CPU time around the same call, and the calibration is summarised by that
//! metric too: on a machine with more runnable threads than cores, most of
//! the wall clock's noise is time spent waiting for a core, which CPU time
//! leaves out. The wall clock stays the headline: it is what sessions report.

//! The steps live one per file, in the order `run` takes them: the arms
//! ([`arms`]), the fixed cost of a call ([`overhead`]), the repetitions
//! ([`repetition`]), their summary ([`summary`]) and the toggle
//! ([`toggle`]).

mod arms;
pub mod effect;
pub mod error;
mod overhead;
mod repetition;
mod summary;
mod toggle;

pub use arms::calibration_arm;
pub use effect::Effect;
pub use error::CalibrateError;
pub use summary::{coverage, detects, reliable_threshold, summarise};

use crate::arm::{skip_reason, ArmSpec, PreparedArm};
use crate::error::Error;
use crate::machine::Machine;
use crate::measure::load::BusyLoad;
use crate::schedule;
use crate::shapes::{self, Params, ShapeModule};
use crate::stats::{self, LEVEL};
use arms::Arms;
use repetition::Repetitions;
use std::time::Instant;

pub use crate::results::calibration::*;

/// Everything a calibration needs, validated.
#[derive(Clone, Debug)]
pub struct Settings {
    pub shape: String,
    pub engine: ArmSpec,
    /// Shape parameters; `iters` is the resolved base count.
    pub params: Params,
    /// Effects other than the null, ascending, distinct.
    pub effects: Vec<Effect>,
    pub repeat: usize,
    /// Measured rounds per epoch.
    pub rounds: usize,
    pub warmup: usize,
    /// Epochs (fresh worker processes) per repetition.
    pub epochs: usize,
    pub load_threads: usize,
    /// Shapes of the wasmi vs wasmi:fuel toggle (none: skipped).
    pub toggle_shapes: Vec<String>,
}

/// The base iteration count: `requested` if it scales exactly by every
/// effect, else an error naming the unit; without a request, the shape's
/// default rounded to the nearest multiple of the unit.
pub fn base_iters(
    shape: &dyn shapes::Shape,
    p: &Params,
    effects: &[Effect],
) -> Result<u64, CalibrateError> {
    let per = shape.declared(p).per.max(1);
    let unit = effects.iter().fold(per, |u, e| effect::lcm(u, e.unit(per)));
    match p.iters {
        Some(n) if n % unit == 0 && n > 0 => Ok(n),
        Some(iters) => Err(CalibrateError::InexactIters {
            iters,
            shape: shape.name().to_string(),
            unit,
        }),
        None => {
            let d = shape.default_iters(p);
            Ok((((d + unit / 2) / unit) * unit).max(unit))
        }
    }
}

/// Where calibration reports progress (stderr in the binary), and who may
/// stop it.
pub trait Progress {
    fn note(&mut self, _line: &str) {}
    /// After every repetition, with the calibration so far (`complete:
    /// false`): the binary rewrites its files, so a stop loses nothing.
    fn update(&mut self, _so_far: &Calibration) -> Result<(), Error> {
        Ok(())
    }
    /// Asked between repetitions, toggle shapes and epochs: stop, keeping
    /// the repetitions that completed (an interrupt). A repetition cut
    /// short is dropped whole, as its intervals would be a shorter design.
    fn interrupted(&self) -> bool {
        false
    }
}

impl Progress for () {}

/// A [`Progress`] as a session's sink: it stops the session when the
/// calibration is asked to stop, and reports nothing else.
pub(crate) struct StopWith<'a>(pub &'a dyn Progress);

impl crate::schedule::Progress for StopWith<'_> {}

impl crate::session::Sink for StopWith<'_> {
    fn interrupted(&self) -> bool {
        self.0.interrupted()
    }
}

/// Run the calibration: overhead, `repeat` interleaved sessions of all
/// effects, and the known-sign toggle. An interrupt ends it early with
/// what completed (`complete: false`).
pub fn run(s: &Settings, progress: &mut dyn Progress) -> Result<Calibration, Error> {
    let started = Instant::now();
    let machine = Machine::read();
    let module = ShapeModule::build(shapes::lookup(&s.shape)?, &s.params)?;
    let base = module.iters;
    let arms = Arms::new(s, &module)?;
    let rounds = schedule::complete_rounds(s.rounds, arms.len());
    let _load = (s.load_threads > 0).then(|| BusyLoad::start(s.load_threads));
    progress.note(&announce(s, &arms, base, rounds));
    let mut so_far = Parts {
        s,
        machine,
        arms: &arms,
        base,
        rounds,
        overhead: overhead::call_overhead(&module, &s.engine, s.warmup)?,
        measured: Repetitions::default(),
        toggle: Vec::new(),
        started,
    };
    for rep in 1..=s.repeat {
        let Some(one) = repetition::run(s, &arms, base, so_far.overhead, rep, &*progress)? else {
            break;
        };
        progress.note(&one.note(s.repeat));
        so_far.measured.push(one);
        progress.update(&so_far.calibration())?;
    }
    if so_far.measured.repetitions.len() == s.repeat {
        so_far.toggle = toggle::run_all(s, progress)?;
    }
    so_far.machine.finish();
    Ok(so_far.calibration())
}

/// What a calibration has measured so far, and what it was asked to.
struct Parts<'a> {
    s: &'a Settings,
    machine: Machine,
    arms: &'a Arms,
    base: u64,
    rounds: usize,
    overhead: [f64; 2],
    measured: Repetitions,
    toggle: Vec<ToggleRow>,
    started: Instant,
}

impl Parts<'_> {
    /// The document of what was measured; complete when every repetition
    /// and every toggle shape ran.
    fn calibration(&self) -> Calibration {
        let s = self.s;
        let measured = &self.measured;
        let mut all_effects = vec![Effect::NULL];
        all_effects.extend(&s.effects);
        let wall_rows = measured.rows_of(Metric::Wall);
        let (effects, smallest_reliable) =
            summarise(&all_effects, &wall_rows, &measured.repetitions);
        Calibration {
            schema: SCHEMA.to_string(),
            machine: self.machine.clone(),
            settings: settings_info(s, self.arms, self.base, self.rounds, &all_effects),
            call_overhead_ns: self.overhead[0],
            base_call_ns: stats::median(&measured.base_calls[0]),
            repetitions: measured.repetitions.clone(),
            rows: measured.rows.clone(),
            effects,
            smallest_reliable,
            thread_cpu: summary::thread_cpu(&all_effects, measured, self.overhead[1]),
            toggle: self.toggle.clone(),
            complete: measured.repetitions.len() == s.repeat
                && self.toggle.len() == s.toggle_shapes.len(),
            wall_seconds: self.started.elapsed().as_secs_f64(),
        }
    }
}

/// The line that opens a calibration: what runs, and how much of it.
fn announce(s: &Settings, arms: &Arms, base: u64, rounds: usize) -> String {
    format!(
        "calibrate: {} on {} ({}), {base} iterations, {} arms x {rounds} rounds x {} epochs x {} repetitions{}",
        s.shape,
        s.engine,
        arms.version,
        arms.len(),
        s.epochs,
        s.repeat,
        if s.load_threads > 0 { format!(", {} busy threads", s.load_threads) } else { String::new() }
    )
}

/// The settings as the results record them.
fn settings_info(
    s: &Settings,
    arms: &Arms,
    base: u64,
    rounds: usize,
    all_effects: &[Effect],
) -> SettingsInfo {
    SettingsInfo {
        shape: s.shape.clone(),
        engine: s.engine.to_string(),
        version: arms.version.clone(),
        bytes: s.params.bytes,
        k: s.params.k,
        base_iters: base,
        effects_pct: all_effects.iter().map(|e| e.pct()).collect(),
        repeat: s.repeat,
        rounds,
        warmup: s.warmup,
        load_threads: s.load_threads,
        confidence_level: LEVEL,
        build_profile: crate::versions::BUILD_PROFILE.to_string(),
        rotation: "cyclic Latin square over all arms, null control included".to_string(),
    }
}

/// One process's worth of work for tools that time whole processes
/// (hyperfine): compile, instantiate and initialise, then `calls` verified
/// calls at effect `effect`. `calls == 0` prices the process and setup alone.
pub fn one_shot(
    shape: &str,
    spec: &ArmSpec,
    params: &Params,
    effect: Effect,
    calls: usize,
) -> Result<u64, Error> {
    let module = ShapeModule::build(shapes::lookup(shape)?, params)?;
    let arm = calibration_arm(spec, format!("{spec}{effect}"), effect.iters())?;
    if let Some(reason) = skip_reason(&arm, &module)? {
        return Err(CalibrateError::OneShotUnsupported {
            shape: shape.to_string(),
            reason,
        }
        .into());
    }
    let mut p = arm.prepare_local(&module)?;
    for i in 0..calls {
        p.rep(i)?;
    }
    Ok(p.iters() * calls as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_iters_are_a_common_unit() {
        let shape = shapes::find("add_chain").unwrap();
        let effects: Vec<Effect> = [50, 100, 200, 500].map(Effect::from_bp).to_vec();
        let p = Params {
            bytes: 8 << 20,
            iters: None,
            k: 8,
        };
        let n = base_iters(shape.as_ref(), &p, &effects).unwrap();
        assert_eq!(n % 200, 0);
        assert!(n.abs_diff(shape.default_iters(&p)) <= 100);
        for e in &effects {
            assert!(e.scale(n).is_some());
        }
        let bad = Params {
            iters: Some(1000 + 1),
            ..p.clone()
        };
        assert!(base_iters(shape.as_ref(), &bad, &effects).is_err());
        let small = Params {
            bytes: 64 << 10,
            iters: None,
            k: 8,
        };
        assert_eq!(base_iters(shape.as_ref(), &small, &effects).unwrap(), 4000);
    }
}
