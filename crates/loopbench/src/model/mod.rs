//! The cost model: what one unit of each primitive costs in an engine.
//!
//! Two ways, reported side by side:
//!
//! * **Subtraction pairs**, shapes built to differ in one thing only:
//!   `(br_chain - add_chain) / K` is a taken branch over a not-taken one
//!   (same instructions, only the branch outcome differs); the shared/plain
//!   stream pairs price a shared access; store_stream against memory_copy
//!   prices the per-op store path against the bulk path for the same bytes.
//! * **A least-squares fit over all shapes** of one engine:
//!   `ns/iter(shape) = sum_f price_f * x_f(shape)`, where `x_f` are the exact
//!   per-iteration counts from the counting run (instructions per class,
//!   taken branches, bulk bytes, simulated mispredictions). Prices are
//!   constrained non-negative (Lawson-Hanson NNLS); a feature with twin
//!   shapes that differ in it alone is priced by the twins instead
//!   ([`ANCHORS`]). Every shape's time is the mean of its epoch medians,
//!   and intervals come from a two-stage bootstrap (epochs, then rounds
//!   within them), so they include the layout each fresh process draws.
//!   Every shape's residual shows what the linear model misses, and its
//!   leave-one-out error what to expect on a shape the fit has not seen.
//!   br_if_ladder, br_table_switch and random_ops are left out of the fit
//!   and predicted from it, the reference harness's reproduction check;
//!   memory-bound shapes are left out with the reason ([`NOT_FITTED`]).
//!
//! A feature that no shape exercises, or whose column is a linear
//! combination of the others in this catalog, is *not identifiable*: the
//! fit cannot separate it, and it is reported as such rather than priced.

//!
//! The files, in the order a price is made: [`mod@features`] turns counts
//! into the fit's columns, [`mod@nnls`] holds the non-negative least squares
//! and the identifiability test, [`anchors`] the twins that price a feature
//! alone, [`mod@fit`] the fit and its leave-one-out check, [`pairs`] the
//! subtraction pairs; this file gathers a session's shapes into rows and an
//! [`EngineModel`]. [`instructions`] turns prices into app projections.

mod anchors;
mod features;
mod fit;
pub mod instructions;
mod nnls;
mod pairs;

pub use anchors::{twin_difference, Anchor, ANCHORS};
pub use features::{feature_value, feature_vector, features, Dynamic, EXTRA, FEATURES};
pub use nnls::{nnls, not_identifiable};

use crate::measure::counters::CounterKind;
pub use crate::results::model::{EngineModel, Pair, Price, Residual};
use crate::results::{Session, ShapeResult};
use crate::stats;
use features::feature_index;
use fit::{fit, leave_one_out, loo_median_abs};
use nnls::dot;
use pairs::pairs;

/// Shapes predicted from the fit instead of fitted.
pub const HELD_OUT: &[&str] = &["br_if_ladder", "br_table_switch", "random_ops"];

/// Classes the counting run can report that no built-in shape prices
/// (bulk operators are priced per byte, not per op).
pub const UNEXERCISED: &[&str] = &["bulk_memory (per op)"];

/// The caveat printed beside a compiling engine's prices.
pub const JIT_CAVEAT: &str = "a compiler's price is not per instruction: it fuses, hoists and \
     removes instructions, so these prices describe the catalog's loops, not any other code";

/// Whether an arm label names a compiling engine (wasmtime's cranelift or
/// winch, wasmer's compilers). Pulley is wasmtime's interpreter.
pub fn is_compiler(arm: &str) -> bool {
    let engine = arm.split([':', '@', '#']).next().unwrap_or(arm);
    match engine {
        "wasmtime" => !arm.contains("pulley"),
        "wasmer" => true,
        _ => false,
    }
}

const BOOTSTRAP: usize = 200;

/// `None` when some arm of the session read `counter`; otherwise what the
/// session has instead and how to measure it, for a one-line error.
pub fn missing_counter(session: &Session, counter: &str) -> Option<String> {
    let found: std::collections::BTreeSet<&str> = session
        .results
        .iter()
        .flat_map(|r| &r.arms)
        .flat_map(|a| a.counters.values.keys().map(String::as_str))
        .collect();
    if found.contains(counter) {
        return None;
    }
    let has = if found.is_empty() {
        "none".to_string()
    } else {
        found.into_iter().collect::<Vec<_>>().join(", ")
    };
    let how = CounterKind::of_metric(counter)
        .map(|k| format!("; measure with --counters {k}"))
        .unwrap_or_default();
    Some(format!("(it has: {has}){how}"))
}

/// One shape's measurements of one arm, grouped by epoch: each epoch is a
/// fresh set of worker processes, hence a fresh memory layout (DESIGN rules
/// 11-13), so prices vary with it and their intervals must too.
/// With `counter`, the counter's values per iteration instead of the time
/// (reps where it gave none are left out).
fn epochs_of(r: &ShapeResult, arm: &str, counter: Option<&str>) -> Option<Vec<Vec<f64>>> {
    let a = r
        .arms
        .iter()
        .find(|a| a.arm == arm && !a.samples_ns_per_iter.is_empty())?;
    let Some(c) = counter else {
        return Some(a.samples_by_epoch().into_values().collect());
    };
    let values = &a.counters.values.get(c)?.samples_per_iter;
    let epochs: Vec<Vec<f64>> = crate::results::group_by_epoch(values, &a.reps)
        .into_values()
        .map(|e| e.into_iter().flatten().collect::<Vec<f64>>())
        .filter(|e| !e.is_empty())
        .collect();
    (!epochs.is_empty()).then_some(epochs)
}

/// The statistic every price is fitted to: the mean of the epoch medians
/// (the estimator whose two-stage bootstrap gives the intervals).
fn mean_of_epoch_medians(epochs: &[Vec<f64>]) -> f64 {
    epochs.iter().map(|e| stats::median(e)).sum::<f64>() / epochs.len() as f64
}

/// How a shape takes part in an engine's model.
#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Fit,
    HeldOut,
    NotFitted(&'static str),
}

impl Kind {
    fn of(shape: &str) -> Kind {
        if HELD_OUT.contains(&shape) {
            Kind::HeldOut
        } else if let Some((_, why)) = NOT_FITTED.iter().find(|(s, _)| *s == shape) {
            Kind::NotFitted(why)
        } else {
            Kind::Fit
        }
    }
    /// Why a shape is outside the fit, for its residual.
    fn note(self) -> Option<String> {
        match self {
            Kind::NotFitted(why) => Some(why.to_string()),
            _ => None,
        }
    }
    fn name(self) -> &'static str {
        match self {
            Kind::Fit => "fit",
            Kind::HeldOut => "held_out",
            Kind::NotFitted(_) => "not_fitted",
        }
    }
}

/// One shape in one engine's model: its counted features, its measured
/// time and that time's bootstrap replicates.
struct Row<'a> {
    shape: &'a str,
    /// Counted features; `None` for shapes with declared counts only
    /// (they still serve the subtraction pairs).
    x: Option<Vec<f64>>,
    bytes_per_iter: Option<f64>,
    kind: Kind,
    measured: f64,
    replicates: Vec<f64>,
}

fn row_x<'r>(r: &'r Row) -> &'r [f64] {
    r.x.as_deref().unwrap_or(&[])
}

/// Shapes outside the fit because no instruction count explains their
/// time; they are shown with what the prices make of them, and why.
pub const NOT_FITTED: &[(&str, &str)] = &[(
    "pointer_chase",
    "memory-bound: its time is the cache and TLB misses of a dependent chase, which no instruction count sees",
)];

/// Build the model of every non-null arm in a session report, priced in
/// ns, or in `counter`'s units per iteration (e.g. `callgrind_ir`).
pub fn build(report: &Session, counter: Option<&str>) -> Result<Vec<EngineModel>, String> {
    let arms: Vec<String> = report
        .results
        .iter()
        .flat_map(|r| {
            r.arms
                .iter()
                .filter(|a| !a.role.is_null())
                .map(|a| a.arm.clone())
        })
        .fold(Vec::new(), |mut v, a| {
            if !v.contains(&a) {
                v.push(a);
            }
            v
        });
    if let Some(c) = counter {
        if let Some(what) = missing_counter(report, c) {
            return Err(format!("the session has no counter `{c}` to price {what}"));
        }
    }
    Ok(arms
        .iter()
        .map(|arm| model_arm(report, arm, counter))
        .collect())
}

/// The bootstrap replicates of one arm's statistic on one shape, seeded by
/// both names: a refit of the same session draws the same replicates, and
/// the prices and the pairs of an arm share them.
fn replicates(shape: &str, arm: &str, epochs: &[Vec<f64>]) -> Vec<f64> {
    let seed = crate::hash::fnv1a(&[shape.as_bytes(), arm.as_bytes()]);
    stats::bootstrap::hierarchical_bootstrap(epochs, BOOTSTRAP, seed)
}

fn interval(reps: Vec<f64>) -> [f64; 2] {
    let (lo, hi) = stats::bootstrap::percentile_interval(reps, 0.95);
    [lo, hi]
}

fn model_arm(report: &Session, arm: &str, counter: Option<&str>) -> EngineModel {
    let rows: Vec<Row> = report
        .results
        .iter()
        .filter_map(|r| {
            let epochs = epochs_of(r, arm, counter)?;
            Some(Row {
                shape: r.shape.as_str(),
                x: features(r),
                bytes_per_iter: r.bytes_per_iter,
                kind: Kind::of(&r.shape),
                measured: mean_of_epoch_medians(&epochs),
                replicates: replicates(&r.shape, arm, &epochs),
            })
        })
        .collect();
    let fitted: Vec<bool> = rows
        .iter()
        .map(|r| r.kind == Kind::Fit && r.x.is_some())
        .collect();
    let identifiable_in = |used: &[bool]| -> Vec<bool> {
        let a: Vec<Vec<f64>> = rows
            .iter()
            .zip(used)
            .filter(|(_, &u)| u)
            .map(|(r, _)| row_x(r).to_vec())
            .collect();
        let not = not_identifiable(&a);
        (0..FEATURES.len()).map(|j| !not.contains(&j)).collect()
    };
    let identifiable = identifiable_in(&fitted);
    let y: Vec<f64> = rows.iter().map(|r| r.measured).collect();
    let counted = counter.is_some();
    let (x, anchored) = fit(&rows, &y, &fitted, &identifiable, counted);
    let boots: Vec<(Vec<f64>, Vec<f64>)> = (0..BOOTSTRAP)
        .map(|k| {
            let yk: Vec<f64> = rows.iter().map(|r| r.replicates[k]).collect();
            let (p, _) = fit(&rows, &yk, &fitted, &identifiable, counted);
            let resid = rows
                .iter()
                .zip(&yk)
                .map(|(r, m)| (dot(row_x(r), &p) - m) / m * 100.0)
                .collect();
            (p, resid)
        })
        .collect();
    let prices = FEATURES
        .iter()
        .enumerate()
        .map(|(j, f)| Price {
            feature: f.to_string(),
            ns: x[j],
            ci: interval(boots.iter().map(|(p, _)| p[j]).collect()),
            identifiable: identifiable[j] || anchored[j],
            from_pair: anchored[j]
                .then(|| ANCHORS.iter().find(|a| a.feature == *f))
                .flatten()
                .map(|a| format!("({} - {}) / extra {f}", a.a, a.b)),
        })
        .collect();
    let residuals: Vec<Residual> = rows
        .iter()
        .enumerate()
        .filter(|(_, r)| r.x.is_some())
        .map(|(i, r)| {
            let reproduced = dot(row_x(r), &x);
            Residual {
                shape: r.shape.to_string(),
                measured_ns: r.measured,
                reproduced_ns: reproduced,
                residual_pct: (reproduced - r.measured) / r.measured * 100.0,
                ci_pct: Some(interval(boots.iter().map(|(_, e)| e[i]).collect())),
                loo_pct: fitted[i]
                    .then(|| leave_one_out(&rows, &y, &fitted, i, &identifiable_in, counted))
                    .flatten(),
                kind: r.kind.name().to_string(),
                note: r.kind.note(),
            }
        })
        .collect();
    let loo_median_abs_pct = loo_median_abs(&residuals);
    EngineModel {
        arm: arm.to_string(),
        prices,
        not_identifiable: (0..FEATURES.len())
            .filter(|&j| !identifiable[j] && !anchored[j])
            .map(|j| FEATURES[j].to_string())
            .collect(),
        residuals,
        pairs: pairs(&rows, report.session.k as f64, counter.unwrap_or("ns")),
        caveat: is_compiler(arm).then(|| JIT_CAVEAT.to_string()),
        loo_median_abs_pct,
        price_replicates: boots.into_iter().map(|(p, _)| p).collect(),
        counter: counter.map(str::to_string),
        from_instructions: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compilers_carry_the_caveat_interpreters_do_not() {
        for arm in [
            "wasmtime",
            "wasmtime:cranelift",
            "wasmtime:winch",
            "wasmer:singlepass",
        ] {
            assert!(is_compiler(arm), "{arm}");
        }
        for arm in [
            "wasmtime:pulley",
            "wasmi",
            "wasmi:fuel",
            "wasm3",
            "tinywasm",
        ] {
            assert!(!is_compiler(arm), "{arm}");
        }
    }
}
