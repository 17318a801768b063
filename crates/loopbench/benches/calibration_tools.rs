//! criterion's view of a known effect, for the side-by-side comparison in
//! `scripts/compare-tools.sh` (results in docs/calibration.md).
//!
//! This is criterion used the usual way: one arm per run, the candidate
//! compared against a saved baseline. It times exactly the region loopbench
//! times (one `run` call on a prepared instance; reset and verify stay
//! outside, through `iter_custom`), on the same shape, engine and iteration
//! count, so any difference between the tools is in the scheduling and the
//! statistics, not in what is timed.
//!
//! Settings come from the environment, so the benchmark id stays the same
//! across arms and criterion can compare them:
//!
//! - `LOOPBENCH_CAL_EFFECT`: extra loop iterations in percent (default 0)
//! - `LOOPBENCH_CAL_SHAPE` (add_chain), `LOOPBENCH_CAL_ENGINE` (wasmi),
//!   `LOOPBENCH_CAL_BYTES` (8m), `LOOPBENCH_CAL_ITERS` (the shape's default,
//!   rounded so every default effect scales exactly)
//!
//! ```text
//! LOOPBENCH_CAL_EFFECT=0 cargo bench --bench calibration_tools -- --save-baseline cal0
//! LOOPBENCH_CAL_EFFECT=1 cargo bench --bench calibration_tools -- --baseline cal0
//! ```

use criterion::Criterion;
use loopbench::arm::ArmSpec;
use loopbench::arm::PreparedArm;
use loopbench::calibrate::{base_iters, calibration_arm, Effect};
use loopbench::shapes::{self, Params, ShapeModule};
use std::time::Duration;

fn var(name: &str, default: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| default.to_string())
}

fn fail(e: impl std::fmt::Display) -> ! {
    eprintln!("error: {e}");
    std::process::exit(2)
}

fn main() {
    let shape_name = var("LOOPBENCH_CAL_SHAPE", "add_chain");
    let engine = var("LOOPBENCH_CAL_ENGINE", "wasmi");
    let effect: Effect = var("LOOPBENCH_CAL_EFFECT", "0")
        .parse()
        .unwrap_or_else(|e| fail(e));
    let spec: ArmSpec = engine.parse().unwrap_or_else(|e| fail(e));
    let bytes = loopbench::units::working_set(&var("LOOPBENCH_CAL_BYTES", "8m"))
        .unwrap_or_else(|e| fail(e));
    let iters = std::env::var("LOOPBENCH_CAL_ITERS").ok().map(|s| {
        s.parse::<u64>()
            .unwrap_or_else(|_| fail(format!("bad LOOPBENCH_CAL_ITERS `{s}`")))
    });
    let shape =
        shapes::find(&shape_name).unwrap_or_else(|| fail(format!("unknown shape `{shape_name}`")));
    let mut params = Params { bytes, iters, k: 8 };
    let mut effects: Vec<Effect> = [50, 100, 200, 500].map(Effect::from_bp).to_vec();
    effects.push(effect);
    params.iters = Some(base_iters(shape.as_ref(), &params, &effects).unwrap_or_else(|e| fail(e)));
    let module = ShapeModule::build(shape, &params).unwrap_or_else(|e| fail(e));
    let arm = calibration_arm(&spec, format!("{spec}{effect}"), effect.iters())
        .unwrap_or_else(|e| fail(e));
    let mut prepared = arm.prepare_local(&module).unwrap_or_else(|e| fail(e));
    eprintln!(
        "criterion arm: {shape_name} on {spec}, effect {effect}, {} iterations per call (base {})",
        prepared.iters(),
        module.iters
    );

    let mut c = Criterion::default().configure_from_args();
    let mut rep = 0usize;
    c.bench_function(&format!("calibration_{shape_name}_{engine}"), |b| {
        b.iter_custom(|n| {
            let mut total = Duration::ZERO;
            for _ in 0..n {
                let r = prepared.rep(rep).unwrap_or_else(|e| fail(e));
                rep += 1;
                total += Duration::from_nanos(r.reading.ns as u64);
            }
            total
        })
    });
    c.final_summary();
}
