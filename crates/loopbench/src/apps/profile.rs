//! Where an app spends its ops: one exact counting run of the app's
//! workload, and, for each of its hottest op classes, the shapes that price
//! that class. That second part is the "does this shape occur in real code"
//! answer: a shape whose dominant class is 1% of every app prices machinery
//! that real programs barely use.
//!
//! The app is counted over exactly one `run(steps)` on a fresh instance: the
//! counters are read after the untimed setup and again after the run, and
//! the difference is the workload (setup and allocation excluded).

use super::workload::WORKLOAD_FUEL;
use super::{AppError, AppShape};
use crate::arm::RunError;
use crate::count::instrumented;
use crate::engines::counting::{CountingInstance, Stopped};
use crate::engines::EngineError;
use crate::error::Error;
pub use crate::results::app::HotClass;
use crate::results::app::{AppProfile, PROFILE_SCHEMA};
pub use crate::results::app::{HOT_SHARE, SHAPE_SHARE};
use crate::shapes::{self, Params, ShapeModule};
use loopbench_count::{Counts, Instrumented, OpClass};
use serde::Serialize;

fn ce(e: EngineError) -> Error {
    AppError::CountingRun(e).into()
}

/// The profile of one `run(spec.steps)` of the app: its exact counts and,
/// for its hot classes, the built-in shapes that price them.
pub fn profile(app: &AppShape) -> Result<AppProfile, Error> {
    let steps = app.spec.steps;
    let (counts, _) = count_app(app, steps)?;
    let (mixes, skipped) = shape_mixes();
    let hot_classes = hot_classes(&counts, &mixes);
    Ok(AppProfile {
        schema: PROFILE_SCHEMA.to_string(),
        app: app.spec.name.to_string(),
        steps,
        counts,
        hot_classes,
        about: Some(app.spec.about.to_string()),
        skipped,
        host_calls: None,
    })
}

/// The profile of a WASI command's timed region: the counts its counting
/// run read at the markers, and the shapes that price its hot classes.
pub fn profile_workload(workload: &super::Workload) -> AppProfile {
    let (mixes, skipped) = shape_mixes();
    AppProfile {
        schema: PROFILE_SCHEMA.to_string(),
        app: workload.name().to_string(),
        steps: 1,
        counts: workload.counts().clone(),
        hot_classes: hot_classes(workload.counts(), &mixes),
        about: Some(workload.about().to_string()),
        skipped,
        host_calls: Some(workload.host_calls()),
    }
}

/// Exact counts of one `run(steps)` of the app, verified like a rep.
pub fn count_app(app: &AppShape, steps: u64) -> Result<(Counts, i32), Error> {
    let hook = |e| crate::arm::hook_error(app.spec.name, "counting run (wasmi)", 0, e);
    let (counts, ret, mut ci) = counting_run(app, steps)?;
    app.recipe.check(steps, ret, &mut ci).map_err(hook)?;
    Ok((counts, ret.unwrap_or(0)))
}

/// Whether the app's `run(steps)` ends within the counting run's fuel (warm
/// mode's prefix, whose checksum no recipe knows, before any timing: the
/// prefix runs in this process, where only fuel can stop it).
pub fn check_ends(app: &AppShape, steps: u64) -> Result<(), Error> {
    counting_run(app, steps).map(|_| ())
}

/// One `run(steps)` of the app in the counting engine, under fuel: its
/// counts, its return and the instance, for a check.
fn counting_run(
    app: &AppShape,
    steps: u64,
) -> Result<(Counts, Option<i32>, CountingInstance), Error> {
    let name = app.spec.name;
    let hook = |e| crate::arm::hook_error(name, "counting run (wasmi)", 0, e);
    let inst = instrumented(&app.prepared.wasm)?;
    let mut ci = CountingInstance::new(&inst.wasm, Some(WORKLOAD_FUEL)).map_err(ce)?;
    app.recipe.setup(&mut ci).map_err(hook)?;
    app.recipe.before_rep(&mut ci).map_err(hook)?;
    let read = |ci: &mut CountingInstance| {
        inst.decode(|slot| ci.read_counter(Instrumented::COUNTER_EXPORT, slot))
    };
    let before = read(&mut ci).map_err(ce)?;
    let ret = match ci
        .call_values("run", &[wasmi::Val::I32(steps as i32)])
        .map_err(ce)?
    {
        Ok(v) => v.first().and_then(wasmi::Val::i32),
        Err(Stopped::OutOfFuel) => {
            return Err(AppError::OutOfFuel {
                app: name,
                steps,
                fuel: WORKLOAD_FUEL,
            }
            .into())
        }
        Err(Stopped::Trap(m)) => {
            let why = app
                .recipe
                .explain(&mut ci)
                .map(|w| format!("; {w}"))
                .unwrap_or_default();
            return Err(RunError::Engine {
                shape: name.into(),
                arm: "counting run (wasmi)".into(),
                source: EngineError::Trap(format!("{m}{why}")),
            }
            .into());
        }
    };
    let after = read(&mut ci).map_err(ce)?;
    Ok((after.delta(&before), ret, ci))
}

/// The simulated predictor over one app rep (`run(steps)` after setup),
/// from the branch-traced copy of the app in wasmi: untimed, like
/// [`count_app`].
pub fn trace_app(app: &AppShape, steps: u64) -> Result<loopbench_count::PredictorStats, Error> {
    use crate::engines::counting::TracingInstance;
    let name = app.spec.name;
    let hook = |e| crate::arm::hook_error(name, "branch trace (wasmi)", 0, e);
    let traced = loopbench_count::trace_branches(&app.prepared.wasm)
        .map_err(|source| AppError::Trace { app: name, source })?;
    let mut ti = TracingInstance::new(traced, WORKLOAD_FUEL).map_err(ce)?;
    app.recipe.setup(&mut ti).map_err(hook)?;
    app.recipe.before_rep(&mut ti).map_err(hook)?;
    let before = ti.stats();
    let ret =
        crate::engines::Instance::call(&mut ti, "run", Some(steps as i32), None).map_err(|e| {
            RunError::Engine {
                shape: name.into(),
                arm: "branch trace (wasmi)".into(),
                source: e,
            }
        })?;
    app.recipe.check(steps, ret, &mut ti).map_err(hook)?;
    Ok(ti.stats().since(&before))
}

/// One shape's class shares (per iteration, from its counting run).
#[derive(Clone, Debug, Serialize)]
pub struct ShapeMix {
    pub shape: String,
    pub shares: Vec<(OpClass, f64)>,
}

/// Count every built-in shape the counting engine runs, at a small working set.
pub fn shape_mixes() -> (Vec<ShapeMix>, Vec<String>) {
    let params = Params {
        bytes: 64 << 10,
        iters: None,
        k: 8,
    };
    let mut mixes = Vec::new();
    let mut skipped = Vec::new();
    let counting = crate::arm::ArmSpec::new(crate::arm::EngineKind::Wasmi);
    let supported = counting.build().map(|e| e.supports()).unwrap_or_default();
    for s in shapes::catalog() {
        let name = s.name().to_string();
        let module = match ShapeModule::build(s, &params) {
            Ok(m) => m,
            Err(e) => {
                skipped.push(format!("{name} ({e})"));
                continue;
            }
        };
        let needed = crate::proposals::required(&module.wasm).unwrap_or_default();
        if let Some(p) = crate::proposals::first_missing(&needed, &supported) {
            skipped.push(format!("{name} (the counting engine lacks {p})"));
            continue;
        }
        let counted = crate::count::count_shape(&module);
        match counted {
            Ok(c) => {
                let total = c.delta.total_ops.max(1) as f64;
                let shares = OpClass::ALL
                    .into_iter()
                    .map(|k| (k, c.delta.class(k) as f64 / total))
                    .filter(|(_, v)| *v > 0.0)
                    .collect();
                mixes.push(ShapeMix {
                    shape: name,
                    shares,
                });
            }
            Err(e) => skipped.push(format!("{name} ({e})")),
        }
    }
    (mixes, skipped)
}

/// For every class with at least [`HOT_SHARE`] of the app, the three shapes
/// in which that class has the largest share of the ops.
pub fn hot_classes(app: &Counts, mixes: &[ShapeMix]) -> Vec<HotClass> {
    let total = app.total_ops.max(1) as f64;
    let mut hot: Vec<HotClass> = OpClass::ALL
        .into_iter()
        .map(|class| (class, app.class(class) as f64 / total))
        .filter(|(_, s)| *s >= HOT_SHARE)
        .map(|(class, app_share)| {
            let mut priced_by: Vec<(String, f64)> = mixes
                .iter()
                .filter_map(|m| {
                    m.shares
                        .iter()
                        .find(|(c, _)| *c == class)
                        .map(|(_, s)| (m.shape.clone(), *s))
                })
                .collect();
            priced_by.sort_by(|a, b| b.1.total_cmp(&a.1));
            priced_by.truncate(3);
            HotClass {
                class,
                app_share,
                priced_by,
            }
        })
        .collect();
    hot.sort_by(|a, b| b.app_share.total_cmp(&a.app_share));
    hot
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn hot_classes_pick_dominant_shapes() {
        let mut classes: BTreeMap<OpClass, u64> =
            OpClass::ALL.into_iter().map(|c| (c, 0)).collect();
        classes.insert(OpClass::Load, 60);
        classes.insert(OpClass::Int, 38);
        classes.insert(OpClass::Float, 2);
        let app = Counts {
            total_ops: 100,
            classes,
            ..Counts::default()
        };
        let mixes = vec![
            ShapeMix {
                shape: "load_stream".into(),
                shares: vec![(OpClass::Load, 0.3), (OpClass::Int, 0.1)],
            },
            ShapeMix {
                shape: "add_chain".into(),
                shares: vec![(OpClass::Int, 0.8)],
            },
        ];
        let hot = hot_classes(&app, &mixes);
        assert_eq!(hot.len(), 2, "float at 2% is not hot");
        assert_eq!(hot[0].class, OpClass::Load);
        assert_eq!(hot[0].priced_by, vec![("load_stream".to_string(), 0.3)]);
        assert_eq!(
            hot[1].priced_by,
            vec![
                ("add_chain".to_string(), 0.8),
                ("load_stream".to_string(), 0.1)
            ]
        );
    }
}
