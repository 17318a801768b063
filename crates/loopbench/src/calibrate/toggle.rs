//! The known-sign toggle: wasmi with fuel metering executes more
//! instructions than wasmi without, on any shape. The sign is known for
//! instructions only (fuel has run faster in time, an alignment effect), so
//! each toggle is an ordinary session, null control included, and its time
//! change is judged only for agreeing in sign with the executed
//! instructions, where a counter reads them.

use super::{CalibrateError, Progress, Settings, StopWith, ToggleRow};
use crate::arm::ArmSpec;
use crate::error::Error;
use crate::measure::counters::{CounterChoice, CounterSet};
use crate::results::Role;
use crate::session;
use crate::shapes::{self, Params};

/// The toggle on every shape of [`Settings::toggle_shapes`], in order.
pub(super) fn run_all(s: &Settings, progress: &mut dyn Progress) -> Result<Vec<ToggleRow>, Error> {
    let mut toggle = Vec::new();
    for name in &s.toggle_shapes {
        if progress.interrupted() {
            break;
        }
        progress.note(&format!(
            "calibrate: known-sign toggle wasmi vs wasmi:fuel on {name}"
        ));
        match fuel_toggle(name, s, &*progress)? {
            Some(row) => toggle.push(row),
            None => break,
        }
    }
    Ok(toggle)
}

/// wasmi vs wasmi:fuel on one shape: an ordinary session (`None`: it was
/// interrupted).
fn fuel_toggle(
    name: &str,
    s: &Settings,
    progress: &dyn Progress,
) -> Result<Option<ToggleRow>, Error> {
    let shape = shapes::lookup(name)?;
    let base: ArmSpec = "wasmi".parse()?;
    let fuel: ArmSpec = "wasmi:fuel".parse()?;
    let plan = session::Plan {
        shapes: vec![shape],
        arms: vec![base, fuel.clone()],
        // Executed instructions where the machine counts them: the sign
        // that is known.
        counters: CounterSet::resolve(&CounterChoice::Auto),
        params: Params {
            iters: None,
            ..s.params.clone()
        },
        rounds: s.rounds,
        warmup: s.warmup,
        ..Default::default()
    };
    let report = session::run(plan, &mut StopWith(progress))?;
    if !report.complete {
        return Ok(None);
    }
    if let Some(e) = report.errors.first() {
        return Err(CalibrateError::Toggle {
            shape: name.to_string(),
            detail: e.clone(),
        }
        .into());
    }
    let result = report
        .results
        .first()
        .ok_or_else(|| CalibrateError::ToggleWithoutResult {
            shape: name.to_string(),
        })?;
    let c = result
        .comparisons
        .iter()
        .find(|c| c.arm == fuel.to_string())
        .ok_or_else(|| CalibrateError::ToggleArmMissing {
            shape: name.to_string(),
            arm: fuel.to_string(),
        })?;
    debug_assert!(result.arms.iter().any(|a| a.role == Role::Null));
    let check = crate::session::counters::sign_check(result, &c.arm);
    Ok(Some(ToggleRow {
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
    }))
}
