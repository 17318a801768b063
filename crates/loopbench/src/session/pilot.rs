//! The pilot: the iteration count that makes one rep of a shape's slowest
//! arm take about the target rep length, found by growing calls that each
//! reset and verify like a rep.

use crate::arm::Arm;
use crate::error::Error;
use crate::shapes::ShapeModule;
use std::time::Duration;

/// Each pilot call runs this many times the iterations of the one before.
const PILOT_GROWTH: u64 = 8;
/// The most a pilot step grows the count by: a step projects the count
/// that would take a quarter of the target from the call before (per
/// iteration, a small call is dearer than a large one, so the projection
/// falls short, never over), at least `PILOT_GROWTH` times and at most this.
const PILOT_LEAP: u64 = 1024;

/// Settle a shape's iteration count so that one rep of its slowest arm
/// takes about `target`. Each arm that runs the shape is called at a
/// growing count, from one iteration group up, until a call takes a
/// `PILOT_GROWTH`th of `target` (or the shape's own count is reached);
/// three calls per count, the first of which may pay lazy compilation.
/// The slowest arm's time per iteration sets the count every arm then
/// runs. Growing from small counts means a loop that ends only for small
/// counts is caught by a pilot call's deadline (set from the call before
/// it), not by a call of unknown length. Each call resets and verifies
/// the working set like a rep, which is most of a pilot's cost, so a step
/// leaps to the projected count (`PILOT_LEAP`) rather than by a fixed
/// factor. Returns each arm's pilot failure: that arm does not run the
/// shape.
pub(super) fn pilot(
    module: &mut ShapeModule,
    arms: &[&dyn Arm],
    skips: &[Option<String>],
    target: Duration,
    timing: &crate::workers::Timing,
) -> Result<Vec<Option<String>>, Error> {
    let per = module.shape.declared(&module.params).per.max(1);
    let own = module.iters;
    let most = (i32::MAX as u64 / per * per).min(own.max(per));
    let target_ns = target.as_secs_f64() * 1e9;
    let mut slowest = 0.0f64;
    let mut failed = vec![None; arms.len()];
    for (i, (arm, skip)) in arms.iter().zip(skips).enumerate() {
        if skip.is_some() {
            continue;
        }
        // The first call's deadline is the one of a rep nothing has timed;
        // each later call's follows the call before.
        timing.expect(None);
        timing.within(None);
        match pilot_arm(module, *arm, (per, most), target_ns, timing) {
            Ok(ns_per_iter) => slowest = slowest.max(ns_per_iter),
            Err((n, e)) => failed[i] = Some(format!("pilot at {n} iterations: {e}")),
        }
    }
    let n = if slowest > 0.0 {
        (target_ns / slowest) as u64 / per * per
    } else {
        own
    };
    module.set_iters(n.clamp(per, i32::MAX as u64 / per * per))?;
    Ok(failed)
}

/// One arm's pilot: calls at `per`, then `PILOT_GROWTH` times more each
/// step, until a call takes a `PILOT_GROWTH`th of the target (or `most`);
/// its ns per iteration. One instance serves every step (it is resized;
/// an arm that cannot resize is prepared anew), so the pilot costs one
/// compile and one setup per arm, not one per step. The caller sets the
/// module's count afterwards.
fn pilot_arm(
    module: &mut ShapeModule,
    arm: &dyn Arm,
    (per, most): (u64, u64),
    target_ns: f64,
    timing: &crate::workers::Timing,
) -> Result<f64, (u64, crate::arm::RunError)> {
    let mut n = per;
    let mut rep = 0;
    loop {
        module.set_iters(n).map_err(|e| (n, e.into()))?;
        let mut p = arm.prepare(module).map_err(|e| (n, e))?;
        loop {
            let ns = pilot_calls(p.as_mut(), &mut rep).map_err(|e| (n, e))?;
            if ns * PILOT_GROWTH as f64 >= target_ns || n >= most {
                return Ok(ns / n as f64);
            }
            let leap = ((target_ns / 4.0 / ns.max(1.0)) as u64).clamp(PILOT_GROWTH, PILOT_LEAP);
            let next = (n.saturating_mul(leap) / per * per).min(most);
            timing.expect(Some(ns * (next as f64 / n as f64)));
            n = next;
            if !p.resize(n).map_err(|e| (n, e))? {
                break;
            }
        }
    }
}

/// Three calls at the prepared count; the faster of the last two (the
/// first warms the instance up, or takes it to the new count). Contention
/// only adds time, and one disturbed call taken at face value sized a
/// whole session's reps 30 times too short on a noisy VM (a 0.2 ms target
/// measured 0.006 ms).
fn pilot_calls(
    p: &mut dyn crate::arm::PreparedArm,
    rep: &mut usize,
) -> Result<f64, crate::arm::RunError> {
    let mut next = || {
        *rep += 1;
        *rep - 1
    };
    p.rep(next())?;
    let a = p.rep(next())?.reading.ns;
    let b = p.rep(next())?.reading.ns;
    Ok(a.min(b))
}
