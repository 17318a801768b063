//! The fixed cost of a call: the median time of a one-group call (one
//! iteration for most shapes), through the same scheduler as everything
//! else. It is an upper bound on the part of a call that does not scale
//! with iterations, so `x * c/T` bounds how far a time effect falls short of
//! the iteration effect `x` (see the module doc of [`super`]).

use super::{calibration_arm, CalibrateError, Metric};
use crate::arm::{Arm, ArmSpec, Iters, Rep};
use crate::error::Error;
use crate::measure::cpu::THREAD_CPU;
use crate::schedule::{self, ArmOutcome};
use crate::shapes::ShapeModule;
use crate::stats;

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

fn arm_reps(outcomes: Vec<ArmOutcome>) -> Result<Vec<Vec<Rep>>, Error> {
    outcomes
        .into_iter()
        .map(|o| match o {
            ArmOutcome::Ran(reps) => Ok(reps.into_iter().map(|t| t.rep).collect()),
            ArmOutcome::Skipped(reason) => Err(CalibrateError::ArmSkipped { reason }.into()),
            ArmOutcome::Failed { error, .. } => Err(error.into()),
        })
        .collect()
}

/// The median one-group call per metric, in [`Metric::ALL`] order (NaN
/// where a metric has no readings).
pub(super) fn call_overhead(
    module: &ShapeModule,
    spec: &ArmSpec,
    warmup: usize,
) -> Result<[f64; 2], Error> {
    let per = module.shape.declared(&module.params).per.max(1);
    let arm = calibration_arm(spec, format!("{spec}@{per}"), Iters::Fixed(per))?;
    let arms: [&dyn Arm; 1] = [&arm];
    let order = schedule::EpochOrder::new(Default::default(), 1, 0, None);
    let outcomes = schedule::run_shape(
        module,
        &arms,
        &[None],
        warmup.max(1),
        31,
        &order,
        None,
        &mut (),
    );
    let reps = arm_reps(outcomes)?;
    Ok(Metric::ALL.map(|m| {
        metric_samples(m, &reps)
            .map(|s| stats::median(&s[0]))
            .unwrap_or(f64::NAN)
    }))
}
