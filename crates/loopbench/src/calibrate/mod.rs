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

pub mod effect;

pub use effect::Effect;

use crate::arm::ArmSpec;
use crate::arm::{skip_reason, Arm, InProcessArm, Iters, PreparedArm, Rep};
use crate::error::Error;
use crate::machine::{self, Machine};
use crate::measure::cpu::THREAD_CPU;
use crate::measure::load::BusyLoad;
use crate::results::Role;
use crate::results::StopSettings;
use crate::schedule::{self, ArmOutcome};
use crate::session;
use crate::shapes::{self, Params, ShapeModule};
use crate::stats;
use crate::stats::LEVEL;
use std::collections::BTreeMap;
use std::time::Instant;

pub use crate::results::calibration::*;

/// A rep's value of `metric`.
fn metric_value(metric: Metric, r: &Rep) -> Option<f64> {
    match metric {
        Metric::Wall => Some(r.reading.ns),
        Metric::ThreadCpu => r.reading.counters.get(THREAD_CPU).copied(),
    }
}

/// Per arm, the metric of every rep; `None` if any rep lacks it.
fn metric_samples(metric: Metric, reps: &[Vec<Rep>]) -> Option<Vec<Vec<f64>>> {
    reps.iter()
        .map(|arm| arm.iter().map(|r| metric_value(metric, r)).collect())
        .collect()
}

fn calibration_counters() -> Vec<Box<dyn crate::measure::Counter>> {
    #[cfg(target_os = "linux")]
    {
        vec![Box::new(crate::measure::cpu::ThreadCpu::default())]
    }
    #[cfg(not(target_os = "linux"))]
    {
        Vec::new()
    }
}

/// An in-process arm of the calibration: the engine, an iteration
/// override, and the thread's CPU time read beside the clock.
pub fn calibration_arm(spec: &ArmSpec, label: String, iters: Iters) -> Result<InProcessArm, Error> {
    Ok(InProcessArm::new(spec, label)
        .map_err(|e| Error::Usage(e.to_string()))?
        .with_counters(std::sync::Arc::new(calibration_counters))
        .with_iters(iters))
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
pub fn base_iters(shape: &dyn shapes::Shape, p: &Params, effects: &[Effect]) -> Result<u64, Error> {
    let per = shape.declared(p).per.max(1);
    let unit = effects.iter().fold(per, |u, e| effect::lcm(u, e.unit(per)));
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

/// Where calibration reports progress (stderr in the binary).
pub trait Progress {
    fn note(&mut self, _line: &str) {}
}

impl Progress for () {}

fn arm_reps(outcomes: Vec<ArmOutcome>) -> Result<Vec<Vec<Rep>>, Error> {
    outcomes
        .into_iter()
        .map(|o| match o {
            ArmOutcome::Ran(reps) => Ok(reps.into_iter().map(|t| t.rep).collect()),
            ArmOutcome::Skipped(reason) => {
                Err(Error::Usage(format!("calibration arm skipped: {reason}")))
            }
            ArmOutcome::Failed { error, .. } => Err(error.into()),
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
    let arm = calibration_arm(spec, format!("{spec}@{per}"), Iters::Fixed(per))?;
    let arms: [&dyn Arm; 1] = [&arm];
    let order = schedule::EpochOrder::new(Default::default(), 1, 0, None);
    let outcomes = schedule::run_shape(module, &arms, &[None], warmup.max(1), 31, &order, &mut ());
    let reps = arm_reps(outcomes)?;
    Ok(Metric::ALL.map(|m| {
        metric_samples(m, &reps)
            .map(|s| stats::median(&s[0]))
            .unwrap_or(f64::NAN)
    }))
}

/// Run the calibration: overhead, `repeat` interleaved sessions of all
/// effects, and the known-sign toggle.
pub fn run(s: &Settings, progress: &mut dyn Progress) -> Result<Calibration, Error> {
    let started = Instant::now();
    let mut machine = Machine::read();
    let shape = shapes::lookup(&s.shape)?;
    let module = ShapeModule::build(shape, &s.params)?;
    let base = module.iters;

    // Arm i runs effect `effects[i]`: the baseline and its null control
    // run the shape's own count.
    let mut effects = vec![Effect::NULL, Effect::NULL];
    effects.extend(s.effects.iter().copied());
    let mut arms: Vec<InProcessArm> = vec![
        calibration_arm(&s.engine, s.engine.to_string(), Iters::Shape)?,
        calibration_arm(
            &s.engine,
            session::null_label(&s.engine.to_string()),
            Iters::Shape,
        )?,
    ];
    for e in &s.effects {
        arms.push(calibration_arm(
            &s.engine,
            format!("{}{e}", s.engine),
            e.iters(),
        )?);
    }
    let mut iters = Vec::new();
    for a in &arms {
        if let Some(reason) = skip_reason(a, &module)? {
            return Err(Error::Usage(format!(
                "cannot calibrate on shape {}: {reason}",
                s.shape
            )));
        }
        iters.push(a.iters_for(&module)?);
    }
    let rounds = schedule::complete_rounds(s.rounds, arms.len());
    let version = arms[0].version();

    let _load = (s.load_threads > 0).then(|| BusyLoad::start(s.load_threads));
    progress.note(&format!(
        "calibrate: {} on {} ({version}), {base} iterations, {} arms x {rounds} rounds x {} epochs x {} repetitions{}",
        s.shape,
        s.engine,
        arms.len(),
        s.epochs,
        s.repeat,
        if s.load_threads > 0 { format!(", {} busy threads", s.load_threads) } else { String::new() }
    ));
    let overhead = call_overhead(&module, &s.engine, s.warmup)?;

    let mut rows = Vec::new();
    let mut repetitions = Vec::new();
    let mut base_calls: [Vec<f64>; 2] = [Vec::new(), Vec::new()];
    let labels: Vec<String> = arms.iter().map(|a| a.label().to_string()).collect();
    for rep in 1..=s.repeat {
        let load_start = machine::load_average();
        // One repetition is one session: epochs of fresh worker processes,
        // the same machinery (order, null control, intervals) as `run`.
        let mut session_labels = vec![labels[0].clone()];
        session_labels.extend(labels[2..].iter().cloned());
        let mut arm_iters = vec![Iters::Shape];
        arm_iters.extend(s.effects.iter().map(|e| e.iters()));
        let plan = session::Plan {
            shapes: vec![shapes::lookup(&s.shape)?],
            arms: vec![s.engine.clone(); session_labels.len()],
            labels: session_labels,
            arm_iters,
            params: s.params.clone(),
            rounds: s.rounds,
            warmup: s.warmup,
            stop: StopSettings {
                min_epochs: s.epochs,
                max_epochs: s.epochs,
                precision_pct: 0.0,
                budget_s: f64::INFINITY,
            },
            rep_target: None,
            seed: rep as u64,
            ..Default::default()
        };
        let session = session::run(plan, &mut QuietSink)?;
        if let Some(e) = session.errors.first() {
            return Err(Error::Usage(format!("calibration repetition {rep}: {e}")));
        }
        let result = session
            .results
            .first()
            .ok_or_else(|| Error::Usage(format!("calibration repetition {rep}: no result")))?;
        let secs = session.wall_seconds;
        let load_end = machine::load_average();
        // Per arm (in `labels` order: baseline, null, effects), per epoch, the
        // metric of each call.
        let arm_of = |label: &str| result.arms.iter().find(|a| a.arm == label);
        let mut t_wall = f64::NAN;
        for (m, metric) in Metric::ALL.into_iter().enumerate() {
            let per_call = |label: &str| -> Option<BTreeMap<u32, Vec<f64>>> {
                let a = arm_of(label)?;
                let values: Option<Vec<f64>> = a
                    .reps
                    .iter()
                    .map(|r| match metric {
                        Metric::Wall => Some(r.ns),
                        Metric::ThreadCpu => r.cpu_ns,
                    })
                    .collect();
                Some(crate::results::group_by_epoch(&values?, &a.reps))
            };
            let Some(base_ns) = per_call(&labels[0]) else {
                continue;
            };
            let base_flat: Vec<f64> = base_ns.values().flatten().copied().collect();
            if base_flat.is_empty() {
                continue;
            }
            let t_base = stats::median(&base_flat);
            if metric == Metric::Wall {
                t_wall = t_base;
            }
            base_calls[m].extend_from_slice(&base_flat);
            let compare = |label: &str, null: Option<&stats::EpochChange>| {
                let (c, b) = crate::results::paired_epochs(&per_call(label)?, &base_ns);
                stats::compare(&c, &b, null, LEVEL)
            };
            let null_change = compare(&labels[1], None).map(|c| c.change);
            for (i, label) in labels.iter().enumerate().skip(1) {
                let e = effects[i];
                let Some(stats::Compared { change: c, verdict }) =
                    compare(label, null_change.as_ref())
                else {
                    continue;
                };
                let cand_flat: Vec<f64> = per_call(label)
                    .map(|v| v.values().flatten().copied().collect())
                    .unwrap_or_default();
                // Exact by construction: the arm's count resolves e.iters().
                debug_assert_eq!(Ok(iters[i]), e.iters().resolve(base));
                let true_pct = e.pct();
                rows.push(Row {
                    repetition: rep,
                    metric,
                    arm: label.clone(),
                    true_pct,
                    true_time_pct: true_pct * (1.0 - (overhead[m] / t_base).clamp(0.0, 1.0)),
                    base_iters: base,
                    iters: iters[i],
                    median_pct: c.median_pct,
                    ci_pct: c.ci_pct,
                    confidence: c.confidence,
                    pairs: c.pairs,
                    min_pct: (stats::min(&cand_flat) / stats::min(&base_flat) - 1.0) * 100.0,
                    covered: c.ci_pct[0] <= e.pct() && e.pct() <= c.ci_pct[1],
                    detected: detects(c.ci_pct, e.pct()),
                    verdict,
                    session_seconds: secs,
                    load_start,
                    load_end,
                });
            }
        }
        repetitions.push(Repetition {
            repetition: rep,
            session_seconds: secs,
            rounds: session.session.rounds * session.epochs.len(),
            reps: result.arms.iter().map(|a| a.verified_reps).sum(),
            base_call_ns: t_wall,
            load_start,
            load_end,
        });
        let load = load_end
            .map(|l| format!("{:.2}", l[0]))
            .unwrap_or_else(|| "?".into());
        progress.note(&format!(
            "calibrate: repetition {rep}/{} took {secs:.1} s ({} epochs, load {load})",
            s.repeat,
            session.epochs.len()
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
        schema: SCHEMA.to_string(),
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
            build_profile: crate::versions::BUILD_PROFILE.to_string(),
            rotation: "cyclic Latin square over all arms, null control included".to_string(),
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
    let shape = shapes::lookup(name)?;
    let base: ArmSpec = "wasmi".parse()?;
    let fuel: ArmSpec = "wasmi:fuel".parse()?;
    let plan = session::Plan {
        shapes: vec![shape],
        arms: vec![base, fuel.clone()],
        // Executed instructions where the machine counts them: the sign
        // that is known.
        counters: crate::measure::counters::CounterSet::resolve(
            &crate::measure::counters::CounterChoice::Auto,
        ),
        params: Params {
            iters: None,
            ..s.params.clone()
        },
        rounds: s.rounds,
        warmup: s.warmup,
        ..Default::default()
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
    let check = crate::measure::summary::sign_check(result, &c.arm);
    Ok(ToggleRow {
        shape: name.to_string(),
        arm: c.arm.clone(),
        vs: c.vs.clone(),
        median_pct: c.median_pct,
        ci_pct: c.ci_pct,
        verdict: c.verdict,
        instructions_pct: check.as_ref().map(|k| k.instructions_pct),
        instructions_counter: check.as_ref().map(|k| k.counter.clone()),
        time_agrees: check.and_then(|k| k.agrees),
        null_median_pct: result.null_control.as_ref().map(|n| n.median_pct),
        null_ci_pct: result.null_control.as_ref().map(|n| n.ci_pct),
        rounds: report.session.rounds,
        wall_seconds: report.wall_seconds,
        load_start: report.machine.load_start,
        load_end: report.machine.load_end,
    })
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
    let shape = shapes::lookup(shape)?;
    let module = ShapeModule::build(shape, params)?;
    let arm = calibration_arm(spec, format!("{spec}{effect}"), effect.iters())?;
    if let Some(reason) = skip_reason(&arm, &module)? {
        return Err(Error::Usage(reason));
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
            verdict: stats::Verdict::WithinNoise,
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
