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
//! fuel metering can only do more work than wasmi without, so its change must
//! be positive; it runs as an ordinary session ([`session::run`]) with its null
//! control beside it.
//!
//! The machine's load average is recorded at the start and end of every
//! repetition; `--load N` spins N busy threads for the whole calibration to
//! show how the floor follows contention. Each rep also reads the thread's
//! CPU time around the same call, and the calibration is summarised by that
//! metric too: on a machine with more runnable threads than cores, most of
//! the wall clock's noise is time spent waiting for a core, which CPU time
//! leaves out. The wall clock stays the headline: it is what sessions report.

use crate::arm::ArmSpec;
use crate::arm::{hook_error, skip_reason, Arm, PreparedArm, Rep};
use crate::cli::ShapeParams;
use crate::engines::{Compiled, Engine, Instance};
use crate::error::Error;
use crate::machine::{self, Machine};
use crate::measure::Meter;
use crate::proposals::Proposals;
use crate::report::{self, JsonTarget};
use crate::schedule::{self, ArmOutcome};
use crate::session::{self, Role, LEVEL};
use crate::shapes::{self, HookError, Params, ShapeModule, ShapeRef};
use crate::stats::{self, Verdict};
use clap::Args;
use serde::Serialize;
use std::fmt::{self, Write as _};
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

pub const SCHEMA: &str = "loopbench-calibrate/1";

/// Effects are exact in hundredths of a percent: `BP` of them make 100%.
const BP: u64 = 10_000;
/// The largest effect accepted (1000%, i.e. 11 times the work).
const MAX_BP: u32 = 100_000;

/// A known effect: `bp` hundredths of a percent more loop iterations.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Effect {
    bp: u32,
}

impl Effect {
    pub const NULL: Effect = Effect { bp: 0 };

    pub fn from_bp(bp: u32) -> Self {
        Effect { bp }
    }
    pub fn bp(self) -> u32 {
        self.bp
    }
    pub fn pct(self) -> f64 {
        f64::from(self.bp) / 100.0
    }
    pub fn is_null(self) -> bool {
        self.bp == 0
    }

    /// The smallest base count whose scaled count is exact and, like the
    /// base, a multiple of `per` (the shape's iteration group).
    pub fn unit(self, per: u64) -> u64 {
        let per = per.max(1);
        let step = BP / gcd(u64::from(self.bp), BP);
        lcm(per, per * step)
    }

    /// `base * (1 + x/100)`, or `None` when that is not an integer.
    pub fn scale(self, base: u64) -> Option<u64> {
        let extra = u128::from(base) * u128::from(self.bp);
        (extra % u128::from(BP) == 0).then(|| base + (extra / u128::from(BP)) as u64)
    }
}

impl FromStr for Effect {
    type Err = String;
    /// `0`, `0.5`, `1`, `2.25`, `5%`: a percentage with at most two decimals.
    fn from_str(s: &str) -> Result<Self, String> {
        let t = s.trim().trim_end_matches('%').trim_start_matches('+');
        let bad = || {
            format!("bad effect `{s}`: expected a percentage with at most two decimals, e.g. 0.5, 1 or 2.25")
        };
        let (int, frac) = t.split_once('.').unwrap_or((t, ""));
        if int.is_empty() && frac.is_empty()
            || frac.len() > 2
            || !int.chars().all(|c| c.is_ascii_digit())
            || !frac.chars().all(|c| c.is_ascii_digit())
        {
            return Err(bad());
        }
        let int: u64 = if int.is_empty() {
            0
        } else {
            int.parse().map_err(|_| bad())?
        };
        let frac: u64 = format!("{frac:0<2}").parse().map_err(|_| bad())?;
        let bp = int
            .checked_mul(100)
            .and_then(|i| i.checked_add(frac))
            .ok_or_else(bad)?;
        if bp > u64::from(MAX_BP) {
            return Err(format!("bad effect `{s}`: at most {}%", MAX_BP / 100));
        }
        Ok(Effect { bp: bp as u32 })
    }
}

impl fmt::Display for Effect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (i, r) = (self.bp / 100, self.bp % 100);
        match r {
            0 => write!(f, "+{i}%"),
            r if r % 10 == 0 => write!(f, "+{i}.{}%", r / 10),
            r => write!(f, "+{i}.{r:02}%"),
        }
    }
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

fn lcm(a: u64, b: u64) -> u64 {
    a / gcd(a, b) * b
}

/// How many iterations a [`ScaledArm`] runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Work {
    /// The shape's count scaled by `1 + x/100`, exactly.
    Scaled(Effect),
    /// A fixed count, whatever the shape's (used to price the fixed per-call cost).
    Fixed(u64),
}

/// An in-process engine arm that runs the shape with a scaled iteration
/// count: the calibration's arm of known effect.
pub struct ScaledArm {
    label: String,
    engine: Box<dyn Engine>,
    work: Work,
}

impl ScaledArm {
    pub fn new(spec: &ArmSpec, label: String, work: Work) -> Result<Self, Error> {
        let engine = spec.build().map_err(|e| Error::Usage(e.to_string()))?;
        Ok(ScaledArm {
            label,
            engine,
            work,
        })
    }

    pub fn work(&self) -> Work {
        self.work
    }

    /// The count this arm runs for a shape whose own count is `base`.
    pub fn iters_for(&self, base: u64) -> Result<u64, Error> {
        let n = match self.work {
            Work::Scaled(e) => e.scale(base).ok_or_else(|| {
                Error::Usage(format!(
                    "{base} iterations do not scale exactly by {e}: use a multiple of {}",
                    e.unit(1)
                ))
            })?,
            Work::Fixed(n) => n,
        };
        if n == 0 || n > i32::MAX as u64 {
            return Err(Error::Usage(format!(
                "arm {}: {n} iterations do not fit run(i32)",
                self.label
            )));
        }
        Ok(n)
    }

    /// Compile, instantiate and initialise a fresh instance (untimed).
    pub fn prepare_scaled<'s>(&self, shape: &'s ShapeModule) -> Result<ScaledPrepared<'s>, Error> {
        let iters = self.iters_for(shape.iters)?;
        let per = shape.shape.declared(&shape.params).per.max(1);
        if iters % per != 0 {
            return Err(Error::Usage(format!(
                "arm {}: {iters} iterations are not a multiple of shape {}'s group of {per}",
                self.label,
                shape.name()
            )));
        }
        let engine_err = |source| Error::Engine {
            shape: shape.name().to_string(),
            arm: self.label.clone(),
            source,
        };
        let compiled = self.engine.compile(&shape.wasm).map_err(engine_err)?;
        let mut instance = compiled.instantiate().map_err(engine_err)?;
        shape
            .shape
            .init(&shape.params, instance.as_mut())
            .map_err(|e| hook_error(shape.name(), &self.label, 0, e))?;
        Ok(ScaledPrepared {
            arm: self.label.clone(),
            shape: shape.shape_ref(),
            iters,
            _compiled: compiled,
            instance,
            meter: Meter::new(calibration_counters()),
            last_return: None,
        })
    }
}

impl Arm for ScaledArm {
    fn label(&self) -> &str {
        &self.label
    }
    fn version(&self) -> String {
        self.engine.version()
    }
    fn supports(&self) -> Proposals {
        self.engine.supports()
    }
    fn prepare<'s>(&self, shape: &'s ShapeModule) -> Result<Box<dyn PreparedArm + 's>, Error> {
        Ok(Box::new(self.prepare_scaled(shape)?))
    }
}

/// A [`ScaledArm`] ready to run one shape.
pub struct ScaledPrepared<'a> {
    arm: String,
    shape: ShapeRef<'a>,
    iters: u64,
    _compiled: Box<dyn Compiled>,
    instance: Box<dyn Instance>,
    meter: Meter,
    last_return: Option<i32>,
}

impl ScaledPrepared<'_> {
    /// The iteration count every rep runs and verifies.
    pub fn iters(&self) -> u64 {
        self.iters
    }
    /// What `run` returned in the last rep.
    pub fn last_return(&self) -> Option<i32> {
        self.last_return
    }
    /// The instance, for checks after a rep.
    pub fn instance(&mut self) -> &mut dyn Instance {
        self.instance.as_mut()
    }
}

impl PreparedArm for ScaledPrepared<'_> {
    fn rep(&mut self, rep: usize) -> Result<Rep, Error> {
        let s = self.shape;
        let n = self.iters;
        let inst = self.instance.as_mut();
        let err = |e| hook_error(s.name, &self.arm, rep, e);
        s.shape.reset(s.params, n, inst).map_err(err)?;
        self.meter.context(s.name, &self.arm, rep);
        let ret = inst
            .call("run", Some(n as i32), Some(&mut self.meter))
            .map_err(|e| err(HookError::Engine(e)))?;
        let reading = self.meter.take();
        self.last_return = ret;
        s.shape.verify(s.params, n, ret, inst).map_err(err)?;
        Ok(Rep { reading })
    }
}

/// Busy threads that spin until dropped: a deliberate background load.
pub struct BusyLoad {
    stop: Arc<AtomicBool>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl BusyLoad {
    pub fn start(n: usize) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let threads = (0..n)
            .map(|i| {
                let stop = Arc::clone(&stop);
                std::thread::spawn(move || {
                    let mut x = 0x9E37_79B9_7F4A_7C15u64 ^ i as u64;
                    while !stop.load(Ordering::Relaxed) {
                        for _ in 0..4096 {
                            x = std::hint::black_box(
                                x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1),
                            );
                        }
                    }
                })
            })
            .collect();
        BusyLoad { stop, threads }
    }
}

impl Drop for BusyLoad {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// Reading name of [`ThreadCpu`].
pub const THREAD_CPU: &str = "thread_cpu_ns";

/// CPU time of the calling thread around the timed call
/// (`CLOCK_THREAD_CPUTIME_ID`). Time the thread spends waiting for a core
/// is not in it, so a busy machine inflates it far less than the wall clock;
/// what remains is interference while running (caches, the sibling
/// hyperthread, frequency). Read outside the wall-clock window: the meter
/// starts counters before the clock and stops them after it.
#[cfg(target_os = "linux")]
#[derive(Default)]
pub struct ThreadCpu {
    start: Option<f64>,
}

#[cfg(target_os = "linux")]
impl ThreadCpu {
    fn now() -> Option<f64> {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: clock_gettime writes one timespec through a valid pointer.
        let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
        (rc == 0).then_some(ts.tv_sec as f64 * 1e9 + ts.tv_nsec as f64)
    }
}

#[cfg(target_os = "linux")]
impl crate::measure::Counter for ThreadCpu {
    fn name(&self) -> &'static str {
        THREAD_CPU
    }
    fn start(&mut self) {
        self.start = Self::now();
    }
    fn stop(&mut self) -> f64 {
        match (self.start.take(), Self::now()) {
            (Some(a), Some(b)) => b - a,
            _ => f64::NAN,
        }
    }
    fn stop_into(&mut self, out: &mut std::collections::BTreeMap<String, f64>) {
        let v = self.stop();
        // A clock that failed records nothing, never a zero.
        if v.is_finite() {
            out.insert(THREAD_CPU.to_string(), v);
        }
    }
}

fn calibration_counters() -> Vec<Box<dyn crate::measure::Counter>> {
    #[cfg(target_os = "linux")]
    {
        vec![Box::new(ThreadCpu::default())]
    }
    #[cfg(not(target_os = "linux"))]
    {
        Vec::new()
    }
}

/// What a calibration row measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    /// The monotonic clock around the call: what every session reports.
    Wall,
    /// The thread's CPU time around the same call ([`ThreadCpu`]).
    ThreadCpu,
}

impl Metric {
    pub const ALL: [Metric; 2] = [Metric::Wall, Metric::ThreadCpu];

    pub fn name(self) -> &'static str {
        match self {
            Metric::Wall => "wall clock",
            Metric::ThreadCpu => "thread CPU time",
        }
    }

    fn value(self, r: &Rep) -> Option<f64> {
        match self {
            Metric::Wall => Some(r.reading.ns),
            Metric::ThreadCpu => r.reading.counters.get(THREAD_CPU).copied(),
        }
    }

    /// Per arm, the metric of every rep; `None` if any rep lacks it.
    fn samples(self, reps: &[Vec<Rep>]) -> Option<Vec<Vec<f64>>> {
        reps.iter()
            .map(|arm| arm.iter().map(|r| self.value(r)).collect())
            .collect()
    }
}

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
    pub rounds: usize,
    pub warmup: usize,
    pub load_threads: usize,
    /// Shapes of the wasmi vs wasmi:fuel toggle (none: skipped).
    pub toggle_shapes: Vec<String>,
}

/// The base iteration count: `requested` if it scales exactly by every
/// effect, else an error naming the unit; without a request, the shape's
/// default rounded to the nearest multiple of the unit.
pub fn base_iters(shape: &dyn shapes::Shape, p: &Params, effects: &[Effect]) -> Result<u64, Error> {
    let per = shape.declared(p).per.max(1);
    let unit = effects.iter().fold(per, |u, e| lcm(u, e.unit(per)));
    match p.iters {
        Some(n) if n % unit == 0 && n > 0 => Ok(n),
        Some(n) => Err(Error::Usage(format!(
            "--iters {n} does not scale exactly by every effect on shape {}: use a multiple of {unit}",
            shape.name()
        ))),
        None => {
            let d = shape.default_iters(p);
            Ok((((d + unit / 2) / unit) * unit).max(unit))
        }
    }
}

/// One effect in one repetition.
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    pub repetition: usize,
    pub metric: Metric,
    pub arm: String,
    /// The true effect in loop iterations, exact: `(scaled / base - 1) * 100`.
    pub true_pct: f64,
    /// The true effect in time, after the fixed per-call cost: `true_pct * (1 - c/T)`.
    pub true_time_pct: f64,
    pub base_iters: u64,
    pub iters: u64,
    pub median_pct: f64,
    pub ci_pct: [f64; 2],
    pub confidence: f64,
    pub pairs: usize,
    /// The change of the minima, `min(candidate) / min(baseline) - 1`:
    /// contention only adds time, so the least disturbed reps may agree
    /// better than the medians (no interval: this is a point estimate).
    pub min_pct: f64,
    /// The interval holds `true_pct`.
    pub covered: bool,
    /// The interval excludes zero with the sign of the truth (for the null:
    /// excludes zero at all, a false alarm).
    pub detected: bool,
    /// The session's verdict against the concurrent null control.
    pub verdict: Verdict,
    pub session_seconds: f64,
    pub load_start: Option<[f64; 3]>,
    pub load_end: Option<[f64; 3]>,
}

/// One repetition of the whole calibration.
#[derive(Clone, Debug, Serialize)]
pub struct Repetition {
    pub repetition: usize,
    pub session_seconds: f64,
    pub rounds: usize,
    pub reps: usize,
    /// Median time of one baseline call, ns.
    pub base_call_ns: f64,
    pub load_start: Option<[f64; 3]>,
    pub load_end: Option<[f64; 3]>,
}

/// One effect over all repetitions.
#[derive(Clone, Debug, Serialize)]
pub struct EffectSummary {
    pub true_pct: f64,
    pub repetitions: usize,
    pub covered: usize,
    /// Fraction of repetitions whose interval held the truth.
    pub coverage: f64,
    pub detected: usize,
    pub detection_rate: f64,
    /// Detected in at least 90% of repetitions (never for the null).
    pub reliably_detected: bool,
    /// Median over repetitions of the measured median change.
    pub median_pct: f64,
    pub mean_abs_error_pct: f64,
    /// Median over repetitions of the change of the minima, and its mean
    /// absolute error against the truth.
    pub min_pct: f64,
    pub mean_abs_error_min_pct: f64,
    /// Median over repetitions of the interval's width.
    pub median_ci_width_pct: f64,
    /// `true_pct - true_time_pct`: what the fixed per-call cost takes off.
    pub overhead_bias_pct: f64,
}

#[derive(Clone, Debug, Serialize)]
pub struct Reliable {
    pub true_pct: f64,
    pub detected: usize,
    pub repetitions: usize,
    pub median_session_seconds: f64,
    pub total_session_seconds: f64,
}

/// wasmi:fuel against wasmi on one shape, with its null control.
#[derive(Clone, Debug, Serialize)]
pub struct ToggleRow {
    pub shape: String,
    pub arm: String,
    pub vs: String,
    pub median_pct: f64,
    pub ci_pct: [f64; 2],
    /// The interval lies above zero: the known sign (fuel only adds work).
    pub sign_ok: bool,
    pub verdict: Verdict,
    pub null_median_pct: Option<f64>,
    pub null_ci_pct: Option<[f64; 2]>,
    pub rounds: usize,
    pub wall_seconds: f64,
    pub load_start: Option<[f64; 3]>,
    pub load_end: Option<[f64; 3]>,
}

#[derive(Clone, Debug, Serialize)]
pub struct SettingsInfo {
    pub shape: String,
    pub engine: String,
    pub version: String,
    pub bytes: u64,
    pub k: u32,
    pub base_iters: u64,
    pub effects_pct: Vec<f64>,
    pub repeat: usize,
    pub rounds: usize,
    pub warmup: usize,
    pub load_threads: usize,
    pub confidence_level: f64,
    pub build_profile: &'static str,
    pub rotation: &'static str,
}

/// The whole calibration as reported and saved.
#[derive(Clone, Debug, Serialize)]
pub struct Calibration {
    pub schema: &'static str,
    pub machine: Machine,
    pub settings: SettingsInfo,
    /// Median time of a one-iteration call: an upper bound on the fixed cost `c`.
    pub call_overhead_ns: f64,
    /// Median baseline call over all repetitions, `T`.
    pub base_call_ns: f64,
    pub repetitions: Vec<Repetition>,
    pub rows: Vec<Row>,
    pub effects: Vec<EffectSummary>,
    /// The smallest effect detected in at least 90% of repetitions, with
    /// every larger effect also so detected.
    pub smallest_reliable: Option<Reliable>,
    /// The same reps by thread CPU time (absent where that clock is not
    /// available): the floor without the time spent waiting for a core.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thread_cpu: Option<MetricSummary>,
    pub toggle: Vec<ToggleRow>,
    pub wall_seconds: f64,
}

/// The calibration by a metric other than the wall clock.
#[derive(Clone, Debug, Serialize)]
pub struct MetricSummary {
    pub metric: Metric,
    pub call_overhead_ns: f64,
    pub base_call_ns: f64,
    pub effects: Vec<EffectSummary>,
    pub smallest_reliable: Option<Reliable>,
}

/// Where calibration reports progress (stderr in the binary).
pub trait Progress {
    fn note(&mut self, _line: &str) {}
}

impl Progress for () {}

fn arm_reps(outcomes: Vec<ArmOutcome>) -> Result<Vec<Vec<Rep>>, Error> {
    outcomes
        .into_iter()
        .map(|o| match o {
            ArmOutcome::Ran(reps) => Ok(reps),
            ArmOutcome::Skipped(reason) => {
                Err(Error::Usage(format!("calibration arm skipped: {reason}")))
            }
            ArmOutcome::Failed { error, .. } => Err(error),
        })
        .collect()
}

/// Fraction of `rows` whose interval holds `truth`: the coverage figure.
pub fn coverage(intervals: &[[f64; 2]], truth: f64) -> f64 {
    if intervals.is_empty() {
        return f64::NAN;
    }
    intervals
        .iter()
        .filter(|[lo, hi]| *lo <= truth && truth <= *hi)
        .count() as f64
        / intervals.len() as f64
}

/// Whether an interval resolves an effect of sign `truth` (for `truth == 0`,
/// whether it wrongly excludes zero).
pub fn detects(ci: [f64; 2], truth: f64) -> bool {
    if truth > 0.0 {
        ci[0] > 0.0
    } else if truth < 0.0 {
        ci[1] < 0.0
    } else {
        ci[0] > 0.0 || ci[1] < 0.0
    }
}

/// Repetitions needed for "reliably": at least 90% of them.
pub fn reliable_threshold(repetitions: usize) -> usize {
    (repetitions * 9).div_ceil(10)
}

/// Summaries per effect from the rows, and the smallest reliable effect.
pub fn summarise(
    effects: &[Effect],
    rows: &[Row],
    reps: &[Repetition],
) -> (Vec<EffectSummary>, Option<Reliable>) {
    let mut out = Vec::new();
    for e in effects {
        let mine: Vec<&Row> = rows.iter().filter(|r| r.true_pct == e.pct()).collect();
        let n = mine.len();
        let intervals: Vec<[f64; 2]> = mine.iter().map(|r| r.ci_pct).collect();
        let detected = mine.iter().filter(|r| r.detected).count();
        let medians: Vec<f64> = mine.iter().map(|r| r.median_pct).collect();
        let mins: Vec<f64> = mine.iter().map(|r| r.min_pct).collect();
        let widths: Vec<f64> = mine.iter().map(|r| r.ci_pct[1] - r.ci_pct[0]).collect();
        let bias: Vec<f64> = mine.iter().map(|r| r.true_pct - r.true_time_pct).collect();
        out.push(EffectSummary {
            true_pct: e.pct(),
            repetitions: n,
            covered: mine.iter().filter(|r| r.covered).count(),
            coverage: coverage(&intervals, e.pct()),
            detected,
            detection_rate: if n == 0 {
                f64::NAN
            } else {
                detected as f64 / n as f64
            },
            reliably_detected: !e.is_null() && n > 0 && detected >= reliable_threshold(n),
            median_pct: stats::median(&medians),
            mean_abs_error_pct: medians.iter().map(|m| (m - e.pct()).abs()).sum::<f64>()
                / n.max(1) as f64,
            min_pct: stats::median(&mins),
            mean_abs_error_min_pct: mins.iter().map(|m| (m - e.pct()).abs()).sum::<f64>()
                / n.max(1) as f64,
            median_ci_width_pct: stats::median(&widths),
            overhead_bias_pct: stats::median(&bias),
        });
    }
    // The smallest effect that is reliable with every larger one reliable too.
    let mut smallest = None;
    for s in out.iter().rev().filter(|s| s.true_pct > 0.0) {
        if !s.reliably_detected {
            break;
        }
        smallest = Some(s);
    }
    let secs: Vec<f64> = reps.iter().map(|r| r.session_seconds).collect();
    let reliable = smallest.map(|s| Reliable {
        true_pct: s.true_pct,
        detected: s.detected,
        repetitions: s.repetitions,
        median_session_seconds: stats::median(&secs),
        total_session_seconds: secs.iter().sum(),
    });
    (out, reliable)
}

/// The median time of a one-group call (one iteration for most shapes),
/// through the same scheduler: an upper bound on the fixed per-call cost.
/// Returns it per metric (NaN where a metric has no readings).
fn call_overhead(module: &ShapeModule, spec: &ArmSpec, warmup: usize) -> Result<[f64; 2], Error> {
    let per = module.shape.declared(&module.params).per.max(1);
    let arm = ScaledArm::new(spec, format!("{spec}@{per}"), Work::Fixed(per))?;
    let arms: [&dyn Arm; 1] = [&arm];
    let outcomes = schedule::run_shape(module, &arms, &[None], warmup.max(1), 31, &mut ());
    let reps = arm_reps(outcomes)?;
    Ok(Metric::ALL.map(|m| {
        m.samples(&reps)
            .map(|s| stats::median(&s[0]))
            .unwrap_or(f64::NAN)
    }))
}

/// Run the calibration: overhead, `repeat` interleaved sessions of all
/// effects, and the known-sign toggle.
pub fn run(s: &Settings, progress: &mut dyn Progress) -> Result<Calibration, Error> {
    let started = Instant::now();
    let mut machine = Machine::read();
    let shape = shapes::find(&s.shape).ok_or_else(|| unknown_shape(&s.shape))?;
    let module = ShapeModule::build(shape, &s.params)?;
    let base = module.iters;

    let mut arms: Vec<ScaledArm> = vec![
        ScaledArm::new(&s.engine, s.engine.to_string(), Work::Scaled(Effect::NULL))?,
        ScaledArm::new(
            &s.engine,
            session::null_label(&s.engine),
            Work::Scaled(Effect::NULL),
        )?,
    ];
    for e in &s.effects {
        arms.push(ScaledArm::new(
            &s.engine,
            format!("{}{e}", s.engine),
            Work::Scaled(*e),
        )?);
    }
    let refs: Vec<&dyn Arm> = arms.iter().map(|a| a as &dyn Arm).collect();
    let mut iters = Vec::new();
    for a in &arms {
        if let Some(reason) = skip_reason(a, &module)? {
            return Err(Error::Usage(format!(
                "cannot calibrate on shape {}: {reason}",
                s.shape
            )));
        }
        iters.push(a.iters_for(base)?);
    }
    let skips = vec![None; arms.len()];
    let rounds = schedule::balanced_rounds(s.rounds, arms.len());
    let version = arms[0].version();

    let _load = (s.load_threads > 0).then(|| BusyLoad::start(s.load_threads));
    progress.note(&format!(
        "calibrate: {} on {} ({version}), {base} iterations, {} arms x {rounds} rounds x {} repetitions{}",
        s.shape,
        s.engine,
        arms.len(),
        s.repeat,
        if s.load_threads > 0 { format!(", {} busy threads", s.load_threads) } else { String::new() }
    ));
    let overhead = call_overhead(&module, &s.engine, s.warmup)?;

    let mut rows = Vec::new();
    let mut repetitions = Vec::new();
    let mut base_calls: [Vec<f64>; 2] = [Vec::new(), Vec::new()];
    for rep in 1..=s.repeat {
        let load_start = machine::load_average();
        let t0 = Instant::now();
        let outcomes = schedule::run_shape(&module, &refs, &skips, s.warmup, rounds, &mut ());
        let secs = t0.elapsed().as_secs_f64();
        let load_end = machine::load_average();
        let reps = arm_reps(outcomes)?;
        let mut t_wall = f64::NAN;
        for (m, metric) in Metric::ALL.into_iter().enumerate() {
            let Some(samples) = metric.samples(&reps) else {
                continue;
            };
            let base_ns = &samples[0];
            let t_base = stats::median(base_ns);
            if metric == Metric::Wall {
                t_wall = t_base;
            }
            base_calls[m].extend_from_slice(base_ns);
            let null_change = stats::paired_change(&samples[1], base_ns, LEVEL);
            for (i, arm) in arms.iter().enumerate().skip(1) {
                let Work::Scaled(e) = arm.work() else {
                    continue;
                };
                let Some(c) = stats::paired_change(&samples[i], base_ns, LEVEL) else {
                    continue;
                };
                // Exact by construction: iters * 10000 == base * (10000 + bp).
                debug_assert_eq!(
                    u128::from(iters[i]) * u128::from(BP),
                    u128::from(base) * u128::from(BP + u64::from(e.bp()))
                );
                let true_pct = e.pct();
                rows.push(Row {
                    repetition: rep,
                    metric,
                    arm: arm.label().to_string(),
                    true_pct,
                    true_time_pct: true_pct * (1.0 - (overhead[m] / t_base).clamp(0.0, 1.0)),
                    base_iters: base,
                    iters: iters[i],
                    median_pct: c.median_pct,
                    ci_pct: c.ci_pct,
                    confidence: c.confidence,
                    pairs: c.pairs,
                    min_pct: (stats::min(&samples[i]) / stats::min(base_ns) - 1.0) * 100.0,
                    covered: c.ci_pct[0] <= e.pct() && e.pct() <= c.ci_pct[1],
                    detected: detects(c.ci_pct, e.pct()),
                    verdict: stats::verdict(&c, null_change.as_ref()),
                    session_seconds: secs,
                    load_start,
                    load_end,
                });
            }
        }
        repetitions.push(Repetition {
            repetition: rep,
            session_seconds: secs,
            rounds,
            reps: arms.len() * (rounds + s.warmup),
            base_call_ns: t_wall,
            load_start,
            load_end,
        });
        let load = load_end
            .map(|l| format!("{:.2}", l[0]))
            .unwrap_or_else(|| "?".into());
        progress.note(&format!(
            "calibrate: repetition {rep}/{} took {secs:.1} s (load {load})",
            s.repeat
        ));
    }

    let mut all_effects = vec![Effect::NULL];
    all_effects.extend(&s.effects);
    let of = |m: Metric| {
        rows.iter()
            .filter(|r| r.metric == m)
            .cloned()
            .collect::<Vec<Row>>()
    };
    let (effects, smallest_reliable) = summarise(&all_effects, &of(Metric::Wall), &repetitions);
    let cpu_rows = of(Metric::ThreadCpu);
    let thread_cpu = (!cpu_rows.is_empty()).then(|| {
        let (effects, smallest_reliable) = summarise(&all_effects, &cpu_rows, &repetitions);
        MetricSummary {
            metric: Metric::ThreadCpu,
            call_overhead_ns: overhead[1],
            base_call_ns: stats::median(&base_calls[1]),
            effects,
            smallest_reliable,
        }
    });

    let mut toggle = Vec::new();
    for name in &s.toggle_shapes {
        progress.note(&format!(
            "calibrate: known-sign toggle wasmi vs wasmi:fuel on {name}"
        ));
        toggle.push(fuel_toggle(name, s)?);
    }
    machine.finish();
    Ok(Calibration {
        schema: SCHEMA,
        machine,
        settings: SettingsInfo {
            shape: s.shape.clone(),
            engine: s.engine.to_string(),
            version,
            bytes: s.params.bytes,
            k: s.params.k,
            base_iters: base,
            effects_pct: all_effects.iter().map(|e| e.pct()).collect(),
            repeat: s.repeat,
            rounds,
            warmup: s.warmup,
            load_threads: s.load_threads,
            confidence_level: LEVEL,
            build_profile: crate::versions::BUILD_PROFILE,
            rotation: "cyclic Latin square over all arms, null control included",
        },
        call_overhead_ns: overhead[0],
        base_call_ns: stats::median(&base_calls[0]),
        repetitions,
        rows,
        effects,
        smallest_reliable,
        thread_cpu,
        toggle,
        wall_seconds: started.elapsed().as_secs_f64(),
    })
}

struct QuietSink;
impl schedule::Progress for QuietSink {}
impl session::Sink for QuietSink {}

/// wasmi vs wasmi:fuel on one shape: an ordinary session.
fn fuel_toggle(name: &str, s: &Settings) -> Result<ToggleRow, Error> {
    let shape = shapes::find(name).ok_or_else(|| unknown_shape(name))?;
    let base: ArmSpec = "wasmi".parse().map_err(Error::Usage)?;
    let fuel: ArmSpec = "wasmi:fuel".parse().map_err(Error::Usage)?;
    let plan = session::Plan {
        shapes: vec![shape],
        arms: vec![base, fuel.clone()],
        params: Params {
            iters: None,
            ..s.params.clone()
        },
        rounds: s.rounds,
        warmup: s.warmup,
        counters: Default::default(),
    };
    let report = session::run(plan, &mut QuietSink)?;
    if let Some(e) = report.errors.first() {
        return Err(Error::Usage(format!("known-sign toggle on {name}: {e}")));
    }
    let result = report
        .results
        .first()
        .ok_or_else(|| Error::Usage(format!("toggle on {name} produced no result")))?;
    let c = result
        .comparisons
        .iter()
        .find(|c| c.arm == fuel.to_string())
        .ok_or_else(|| Error::Usage(format!("toggle on {name}: wasmi:fuel did not run")))?;
    debug_assert!(result.arms.iter().any(|a| a.role == Role::Null));
    Ok(ToggleRow {
        shape: name.to_string(),
        arm: c.arm.clone(),
        vs: c.vs.clone(),
        median_pct: c.median_pct,
        ci_pct: c.ci_pct,
        sign_ok: c.ci_pct[0] > 0.0,
        verdict: c.verdict,
        null_median_pct: result.null_control.as_ref().map(|n| n.median_pct),
        null_ci_pct: result.null_control.as_ref().map(|n| n.ci_pct),
        rounds: report.session.rounds,
        wall_seconds: report.wall_seconds,
        load_start: report.machine.load_start,
        load_end: report.machine.load_end,
    })
}

fn unknown_shape(name: &str) -> Error {
    Error::Usage(format!(
        "unknown shape `{name}` (valid: {})",
        shapes::names().join(", ")
    ))
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
    let shape = shapes::find(shape).ok_or_else(|| unknown_shape(shape))?;
    let module = ShapeModule::build(shape, params)?;
    let arm = ScaledArm::new(spec, format!("{spec}{effect}"), Work::Scaled(effect))?;
    if let Some(reason) = skip_reason(&arm, &module)? {
        return Err(Error::Usage(reason));
    }
    let mut p = arm.prepare_scaled(&module)?;
    for i in 0..calls {
        p.rep(i)?;
    }
    Ok(p.iters() * calls as u64)
}

fn pct(x: f64) -> String {
    format!("{x:+.2}")
}

fn load1(l: Option<[f64; 3]>) -> String {
    l.map(|l| format!("{:.2}", l[0]))
        .unwrap_or_else(|| "?".into())
}

/// The terminal report.
pub fn render(c: &Calibration) -> String {
    let mut o = String::new();
    let s = &c.settings;
    let _ = writeln!(o, "machine: {}", c.machine.summary());
    let _ = writeln!(
        o,
        "calibrate: shape {} on {} ({}), base {} iterations, working set {}, K = {}, {} rounds (+{} warm-up) x {} repetitions, {} busy threads, build {}",
        s.shape,
        s.engine,
        s.version,
        s.base_iters,
        crate::units::format_bytes(s.bytes),
        s.k,
        s.rounds,
        s.warmup,
        s.repeat,
        s.load_threads,
        s.build_profile
    );
    let bias = c.call_overhead_ns / c.base_call_ns;
    let _ = writeln!(
        o,
        "fixed per-call cost c <= {:.0} ns (one-iteration call), baseline call T = {:.3} ms: the true time effect is x * (1 - c/T) = x * {:.6}",
        c.call_overhead_ns,
        c.base_call_ns / 1e6,
        1.0 - bias
    );
    let _ = writeln!(o);
    let _ =
        writeln!(o, "per repetition: measured median change % [95% CI]; `!` marks an interval that misses the truth");
    let mut head = format!("{:>4} {:>7} {:>8}", "rep", "load1m", "secs");
    for e in &s.effects_pct {
        let _ = write!(head, "  {:<22}", format!("{:+}%", e));
    }
    let _ = writeln!(o, "{head}");
    for r in &c.repetitions {
        let mut line = format!(
            "{:>4} {:>7} {:>8.1}",
            r.repetition,
            load1(r.load_start),
            r.session_seconds
        );
        for e in &s.effects_pct {
            match c.rows.iter().find(|x| {
                x.metric == Metric::Wall && x.repetition == r.repetition && x.true_pct == *e
            }) {
                Some(x) => {
                    let cell = format!(
                        "{} [{},{}]{}",
                        pct(x.median_pct),
                        pct(x.ci_pct[0]),
                        pct(x.ci_pct[1]),
                        if x.covered { "" } else { "!" }
                    );
                    let _ = write!(line, "  {cell:<22}");
                }
                None => {
                    let _ = write!(line, "  {:<22}", "-");
                }
            }
        }
        let _ = writeln!(o, "{line}");
    }
    let _ = writeln!(o);
    let _ = writeln!(o, "by the wall clock (what sessions report):");
    render_effects(&mut o, &c.effects, c.smallest_reliable.as_ref());
    if let Some(t) = &c.thread_cpu {
        let _ = writeln!(o);
        let _ = writeln!(
            o,
            "by thread CPU time, same reps (waiting for a core not counted; c <= {:.0} ns, T = {:.3} ms):",
            t.call_overhead_ns,
            t.base_call_ns / 1e6
        );
        render_effects(&mut o, &t.effects, t.smallest_reliable.as_ref());
    }
    if !c.toggle.is_empty() {
        let _ = writeln!(o);
        let _ = writeln!(
            o,
            "known-sign toggle: wasmi:fuel vs wasmi (fuel metering only adds work, so the change must be > 0)"
        );
        let _ = writeln!(
            o,
            "{:<14} {:<28} {:<10} {:<13} {:<28} {:>6} {:>7}",
            "shape",
            "change % [95% CI]",
            "sign",
            "verdict",
            "null control % [95% CI]",
            "secs",
            "load1m"
        );
        for t in &c.toggle {
            let null = match (t.null_median_pct, t.null_ci_pct) {
                (Some(m), Some(ci)) => format!("{} [{},{}]", pct(m), pct(ci[0]), pct(ci[1])),
                _ => "-".into(),
            };
            let _ = writeln!(
                o,
                "{:<14} {:<28} {:<10} {:<13} {:<28} {:>6.1} {:>7}",
                t.shape,
                format!(
                    "{} [{},{}]",
                    pct(t.median_pct),
                    pct(t.ci_pct[0]),
                    pct(t.ci_pct[1])
                ),
                if t.sign_ok { "+ (ok)" } else { "NOT > 0" },
                t.verdict.to_string(),
                null,
                t.wall_seconds,
                load1(t.load_end)
            );
        }
    }
    let _ = writeln!(o);
    let _ = writeln!(o, "calibration took {:.1} s", c.wall_seconds);
    o
}

fn render_effects(o: &mut String, effects: &[EffectSummary], smallest: Option<&Reliable>) {
    let _ = writeln!(
        o,
        "{:>8} {:>10} {:>10} {:>10} {:>14} {:>22} {:>9} {:>10}",
        "true %",
        "median %",
        "mean |err|",
        "CI width",
        "coverage",
        "detected (CI excl. 0)",
        "min %",
        "min |err|"
    );
    for e in effects {
        let det = if e.true_pct == 0.0 {
            format!("{}/{} false alarms", e.detected, e.repetitions)
        } else {
            format!(
                "{}/{}{}",
                e.detected,
                e.repetitions,
                if e.reliably_detected { " reliable" } else { "" }
            )
        };
        let _ = writeln!(
            o,
            "{:>8} {:>10} {:>10.3} {:>10.3} {:>14} {:>22} {:>9} {:>10.3}",
            format!("{:+.2}", e.true_pct),
            pct(e.median_pct),
            e.mean_abs_error_pct,
            e.median_ci_width_pct,
            format!("{}/{} {:.0}%", e.covered, e.repetitions, e.coverage * 100.0),
            det,
            pct(e.min_pct),
            e.mean_abs_error_min_pct
        );
    }
    let _ = writeln!(o);
    match smallest {
        Some(r) => {
            let _ = writeln!(
                o,
                "smallest effect detected in >= 90% of repetitions: {:+}% ({}/{}), each repetition took {:.1} s (median; {:.0} s in all)",
                r.true_pct, r.detected, r.repetitions, r.median_session_seconds, r.total_session_seconds
            );
        }
        None => {
            let _ = writeln!(
                o,
                "no effect tried was detected in >= 90% of repetitions: the floor is above the largest effect"
            );
        }
    }
}

/// Prove the harness measures known effects, and find the smallest it resolves.
///
/// Arms run the same shape on the same engine; the arm for effect x runs
/// exactly x% more loop iterations (verified every rep). Reports, per effect,
/// the measured change, its 95% interval, whether it covers the truth, and
/// over --repeat repetitions the coverage and the smallest effect detected in
/// at least 9 of 10. Ends with wasmi vs wasmi:fuel, whose sign is known.
///
/// Example: loopbench calibrate --repeat 10 --load 1 --json cal.json
#[derive(Args, Debug)]
pub struct CalibrateArgs {
    /// Shape to calibrate on (see `loopbench list`).
    #[arg(long, default_value = "add_chain")]
    pub shape: String,
    /// Arm to calibrate: engine[:option,...].
    #[arg(long, default_value = "wasmi")]
    pub engine: String,
    /// Known effects in percent (at most two decimals), comma-separated; the
    /// null (0) is always included.
    #[arg(long, value_delimiter = ',', default_value = "0.5,1,2,5")]
    pub effects: Vec<String>,
    /// Repetitions of the whole calibration.
    #[arg(long, default_value_t = 10)]
    pub repeat: usize,
    /// Measured rounds per repetition (rounded up to a multiple of the arm count).
    #[arg(long, default_value_t = 30)]
    pub rounds: usize,
    /// Warm-up rounds per repetition, run and verified but discarded.
    #[arg(long, default_value_t = 1)]
    pub warmup: usize,
    #[command(flatten)]
    pub params: ShapeParams,
    /// Start N busy threads (spinning) for the whole calibration.
    #[arg(long, default_value_t = 0)]
    pub load: usize,
    /// Shapes of the wasmi vs wasmi:fuel known-sign toggle, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "add_chain,load_stream")]
    pub toggle_shapes: Vec<String>,
    /// Skip the known-sign toggle.
    #[arg(long)]
    pub no_toggle: bool,
    /// Write every row and the per-effect coverage as JSON to FILE (`-` for stdout).
    #[arg(long)]
    pub json: Option<String>,
    /// No progress lines on stderr.
    #[arg(long, short)]
    pub quiet: bool,
    /// Run one arm at this effect in this process and exit (for tools that
    /// time whole processes, such as hyperfine).
    #[arg(long, hide = true)]
    pub one_shot: Option<String>,
    /// Verified calls of the one-shot run (0: setup only).
    #[arg(long, hide = true, default_value_t = 10)]
    pub calls: usize,
}

struct Stderr;
impl Progress for Stderr {
    fn note(&mut self, line: &str) {
        eprintln!("{line}");
    }
}

impl CalibrateArgs {
    fn shape_params(&self) -> Params {
        Params {
            bytes: self.params.bytes,
            iters: self.params.iters,
            k: self.params.k,
        }
    }

    pub fn settings(&self) -> Result<Settings, Error> {
        let engine: ArmSpec = self.engine.parse().map_err(Error::Usage)?;
        if !engine.engine.compiled_in() {
            return Err(Error::Usage(format!(
                "{} is not compiled into this binary; rebuild with --features {}",
                engine.engine,
                engine.engine.feature()
            )));
        }
        let mut effects: Vec<Effect> = self
            .effects
            .iter()
            .map(|e| e.parse::<Effect>())
            .collect::<Result<_, _>>()
            .map_err(Error::Usage)?;
        effects.retain(|e| !e.is_null());
        effects.sort();
        effects.dedup();
        if self.repeat == 0 {
            return Err(Error::Usage("--repeat must be at least 1".into()));
        }
        if self.rounds == 0 {
            return Err(Error::Usage("--rounds must be at least 1".into()));
        }
        let shape = shapes::find(&self.shape).ok_or_else(|| unknown_shape(&self.shape))?;
        let mut params = self.shape_params();
        params.iters = Some(base_iters(shape.as_ref(), &params, &effects)?);
        let toggle_shapes = if self.no_toggle {
            Vec::new()
        } else {
            self.toggle_shapes.clone()
        };
        for t in &toggle_shapes {
            shapes::find(t).ok_or_else(|| unknown_shape(t))?;
        }
        Ok(Settings {
            shape: self.shape.clone(),
            engine,
            params,
            effects,
            repeat: self.repeat,
            rounds: self.rounds,
            warmup: self.warmup,
            load_threads: self.load,
            toggle_shapes,
        })
    }

    pub fn execute(&self) -> Result<bool, Error> {
        if let Some(x) = &self.one_shot {
            let effect: Effect = x.parse().map_err(Error::Usage)?;
            let engine: ArmSpec = self.engine.parse().map_err(Error::Usage)?;
            let shape = shapes::find(&self.shape).ok_or_else(|| unknown_shape(&self.shape))?;
            let mut params = self.shape_params();
            params.iters = Some(base_iters(shape.as_ref(), &params, &[effect])?);
            let done = one_shot(&self.shape, &engine, &params, effect, self.calls)?;
            crate::outln!("{done} iterations verified");
            return Ok(true);
        }
        let settings = self.settings()?;
        let json = self.json.as_deref().map(JsonTarget::parse);
        if let Some(j) = &json {
            j.check()?;
        }
        let cal = if self.quiet {
            run(&settings, &mut ())?
        } else {
            run(&settings, &mut Stderr)?
        };
        match &json {
            Some(JsonTarget::Stdout) => {
                crate::out!("{}", String::from_utf8_lossy(&report::json::to_json(&cal)?))
            }
            Some(JsonTarget::File(p)) => {
                report::write_atomic(p, &report::json::to_json(&cal)?)?;
                crate::out!("{}", render(&cal));
            }
            None => crate::out!("{}", render(&cal)),
        }
        let sign_ok = cal.toggle.iter().all(|t| t.sign_ok);
        if !sign_ok {
            eprintln!("warning: the known-sign toggle did not come out positive on every shape");
        }
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn effects_parse_exactly() {
        assert_eq!("0.5".parse::<Effect>().unwrap().bp(), 50);
        assert_eq!("1".parse::<Effect>().unwrap().bp(), 100);
        assert_eq!("+2.25%".parse::<Effect>().unwrap().bp(), 225);
        assert_eq!(".5".parse::<Effect>().unwrap().bp(), 50);
        assert_eq!("0".parse::<Effect>().unwrap(), Effect::NULL);
        for bad in ["", "x", "0.125", "-1", "1.2.3", "2000", "."] {
            assert!(bad.parse::<Effect>().is_err(), "{bad}");
        }
        assert_eq!(Effect::from_bp(50).to_string(), "+0.5%");
        assert_eq!(Effect::from_bp(225).to_string(), "+2.25%");
        assert_eq!(Effect::from_bp(500).to_string(), "+5%");
    }

    #[test]
    fn scaling_is_exact_or_refused() {
        let half = Effect::from_bp(50);
        assert_eq!(half.unit(1), 200);
        assert_eq!(half.scale(200), Some(201));
        assert_eq!(half.scale(100), None);
        assert_eq!(Effect::from_bp(100).scale(524_200), Some(529_442));
        assert_eq!(Effect::NULL.scale(7), Some(7));
        // A shape whose counts repeat every 8 iterations: both counts stay multiples of 8.
        let u = Effect::from_bp(100).unit(8);
        assert_eq!(u % 8, 0);
        assert_eq!(Effect::from_bp(100).scale(u).unwrap() % 8, 0);
    }

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

    /// Synthetic samples with a known shift: the baseline drifts by 30%
    /// over the session, and each pair's ratio is the shift times a noise
    /// factor drawn without replacement from a symmetric set, so the true
    /// median ratio is exactly the shift. Intervals computed the way the
    /// calibration computes them cover the shift and detect it, and the
    /// null's intervals cover zero.
    #[test]
    fn coverage_on_synthetic_shift() {
        let n = 31;
        let noise = |i: usize, rep: usize| 1.0 + 0.001 * (((i * 7 + rep) % n) as f64 - 15.0);
        let mut shifted = Vec::new();
        let mut null = Vec::new();
        for rep in 0..10 {
            let base: Vec<f64> = (0..n).map(|i| 1e6 * (1.0 + 0.01 * i as f64)).collect();
            let cand: Vec<f64> = base
                .iter()
                .enumerate()
                .map(|(i, b)| b * 1.02 * noise(i, rep))
                .collect();
            let same: Vec<f64> = base
                .iter()
                .enumerate()
                .map(|(i, b)| b * noise(i, rep + 3))
                .collect();
            shifted.push(stats::paired_change(&cand, &base, LEVEL).unwrap().ci_pct);
            null.push(stats::paired_change(&same, &base, LEVEL).unwrap().ci_pct);
        }
        assert_eq!(coverage(&shifted, 2.0), 1.0);
        assert_eq!(coverage(&null, 0.0), 1.0);
        assert!(shifted.iter().all(|ci| detects(*ci, 2.0)));
        assert!(null.iter().all(|ci| !detects(*ci, 0.0)));
        // A truth outside every interval has zero coverage; a wrong sign is never a detection.
        assert_eq!(coverage(&shifted, 3.0), 0.0);
        assert!(!detects([1.0, 3.0], -2.0));
        assert_eq!(
            coverage(&[[0.0, 1.0], [2.0, 3.0], [0.5, 2.5], [-1.0, -0.5]], 0.75),
            0.5
        );
    }

    fn row(rep: usize, truth: f64, ci: [f64; 2]) -> Row {
        Row {
            repetition: rep,
            metric: Metric::Wall,
            arm: String::new(),
            true_pct: truth,
            true_time_pct: truth,
            base_iters: 0,
            iters: 0,
            median_pct: (ci[0] + ci[1]) / 2.0,
            ci_pct: ci,
            confidence: 0.95,
            pairs: 30,
            min_pct: truth,
            covered: ci[0] <= truth && truth <= ci[1],
            detected: detects(ci, truth),
            verdict: Verdict::WithinNoise,
            session_seconds: 1.0,
            load_start: None,
            load_end: None,
        }
    }

    #[test]
    fn smallest_reliable_needs_nine_of_ten_and_every_larger() {
        let effects = [0, 50, 100, 200].map(Effect::from_bp);
        let mut rows = Vec::new();
        for rep in 1..=10 {
            rows.push(row(rep, 0.0, [-0.2, 0.2]));
            // 0.5%: detected in 8 of 10 only.
            rows.push(row(
                rep,
                0.5,
                if rep <= 8 { [0.1, 0.9] } else { [-0.1, 0.9] },
            ));
            // 1%: detected in 9 of 10, and covered in 9.
            rows.push(row(
                rep,
                1.0,
                if rep == 1 { [-0.1, 0.9] } else { [0.5, 1.5] },
            ));
            rows.push(row(rep, 2.0, [1.5, 2.5]));
        }
        let reps: Vec<Repetition> = (1..=10)
            .map(|r| Repetition {
                repetition: r,
                session_seconds: 2.0,
                rounds: 30,
                reps: 0,
                base_call_ns: 1.0,
                load_start: None,
                load_end: None,
            })
            .collect();
        let (sum, rel) = summarise(&effects, &rows, &reps);
        assert_eq!(sum[0].detected, 0);
        assert_eq!(sum[0].coverage, 1.0);
        assert!(!sum[1].reliably_detected);
        assert!(sum[2].reliably_detected);
        assert_eq!(sum[2].coverage, 0.9);
        let rel = rel.unwrap();
        assert_eq!(rel.true_pct, 1.0);
        assert_eq!(rel.total_session_seconds, 20.0);
        assert_eq!(reliable_threshold(10), 9);
        assert_eq!(reliable_threshold(2), 2);
    }
}
