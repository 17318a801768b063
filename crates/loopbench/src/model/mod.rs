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

pub mod instructions;

use crate::measure::counters::CounterKind;
pub use crate::results::model::{EngineModel, Pair, Price, Residual};
use crate::results::{Role, Session, ShapeResult};
use crate::stats;

/// The features of the fit: every instruction class the counting pass
/// knows (with `local` and `const` split into what a register machine
/// executes and the `operand`s it folds), plus dynamic quantities that
/// cost more than their instruction count says (taken branches, bytes
/// copied and bytes filled by bulk operators, and the simulated
/// predictor's mispredictions, so a data-dependent ladder or switch is
/// priced from data instead of being left as residual).
pub const FEATURES: &[&str] = &[
    "control",
    "branch",
    "local",
    "global",
    "const",
    "operand",
    "int",
    "int_shift",
    "int_mul",
    "float",
    "conversion",
    "load",
    "store",
    "call",
    "call_indirect",
    "return",
    "tail_call",
    "simd",
    "other",
    "atomic",
    "taken_branch",
    "block_entry",
    "bulk_byte",
    "fill_byte",
    "mispredict",
];

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

/// A shape's feature vector from its counted per-iteration counts.
pub fn features(r: &ShapeResult) -> Option<Vec<f64>> {
    feature_vector(r.counts_per_iter.as_ref()?)
}

/// The feature vector of counted per-iteration counts, in [`FEATURES`]
/// order; `None` for declared counts, which have no class split.
pub fn feature_vector(c: &crate::results::IterCounts) -> Option<Vec<f64>> {
    if c.classes.is_empty() {
        return None;
    }
    let class = |k: &str| c.classes.get(k).copied().unwrap_or(0.0);
    // Files from before `bulk_bytes` was recorded: a bulk shape's bytes are
    // its bulk bytes.
    let bulk = c.bulk_bytes.unwrap_or(if class("bulk_memory") > 0.0 {
        c.bytes
    } else {
        0.0
    });
    // Files from before fills were told apart: every bulk byte a copy's.
    let fill = c.bulk_fill_bytes.unwrap_or(0.0);
    let dynamic = Dynamic {
        taken_branches: c.taken_branches,
        // Files from before block entries were counted: none, so the
        // feature is reported as not identifiable rather than priced.
        block_entries: c.block_entries.unwrap_or(0.0),
        copied: bulk - fill,
        filled: fill,
        mispredicts: c.mispredicts.unwrap_or(0.0),
    };
    Some(
        FEATURES
            .iter()
            .map(|f| {
                feature_value(
                    f,
                    &class,
                    &|k| c.folded.get(k).copied().unwrap_or(0.0),
                    &dynamic,
                )
            })
            .collect(),
    )
}

/// Features that are not instructions but dynamic quantities on top of
/// them (every other feature counts executed instructions).
pub const EXTRA: &[&str] = &[
    "taken_branch",
    "block_entry",
    "bulk_byte",
    "fill_byte",
    "mispredict",
];

/// The dynamic quantities of [`EXTRA`], counted for a shape (per
/// iteration) or an app (per rep).
#[derive(Clone, Copy, Debug, Default)]
pub struct Dynamic {
    pub taken_branches: f64,
    /// Function entries, loop header executions and `if`s: where an engine
    /// that meters blocks (wasmi's fuel) pays once per block.
    pub block_entries: f64,
    /// Bytes copied and bytes filled by bulk operators.
    pub copied: f64,
    pub filled: f64,
    /// The simulated predictor's mispredictions.
    pub mispredicts: f64,
}

/// One feature's value from counted quantities: the one definition for
/// shapes (per iteration) and apps (per rep). `local` and `const` count
/// only the instructions a register machine must execute (moves and
/// constants it cannot fold); the folded ones are `operand`.
pub fn feature_value(
    feature: &str,
    class: &dyn Fn(&str) -> f64,
    folded: &dyn Fn(&str) -> f64,
    d: &Dynamic,
) -> f64 {
    match feature {
        "taken_branch" => d.taken_branches,
        "block_entry" => d.block_entries,
        "mispredict" => d.mispredicts,
        "bulk_byte" => d.copied,
        "fill_byte" => d.filled,
        "operand" => folded("local") + folded("const"),
        "local" | "const" => class(feature) - folded(feature),
        other => class(other),
    }
}

/// Non-negative least squares, `min |A x - b|` with `x >= 0`, by
/// Lawson and Hanson's active-set method (*Solving Least Squares
/// Problems*, 1974, ch. 23). `a` is row-major, `rows x cols`.
pub fn nnls(a: &[Vec<f64>], b: &[f64]) -> Vec<f64> {
    let n = a.first().map(|r| r.len()).unwrap_or(0);
    let mut x = vec![0.0; n];
    let mut passive = vec![false; n];
    let tol = 1e-10;
    let grad = |x: &[f64]| -> Vec<f64> {
        // w = A^T (b - A x)
        let r: Vec<f64> = a.iter().zip(b).map(|(row, bi)| bi - dot(row, x)).collect();
        (0..n)
            .map(|j| a.iter().zip(&r).map(|(row, ri)| row[j] * ri).sum())
            .collect()
    };
    for _ in 0..3 * n + 10 {
        let w = grad(&x);
        let candidate = (0..n)
            .filter(|&j| !passive[j] && w[j] > tol)
            .max_by(|&i, &j| w[i].total_cmp(&w[j]));
        let Some(j) = candidate else { break };
        passive[j] = true;
        loop {
            let z = restricted_lstsq(a, b, &passive);
            if (0..n).all(|k| !passive[k] || z[k] > tol) {
                x = z;
                break;
            }
            // Step towards z until a passive variable hits zero.
            let mut alpha = f64::INFINITY;
            for k in 0..n {
                if passive[k] && z[k] <= tol {
                    let denom = x[k] - z[k];
                    if denom > 0.0 {
                        alpha = alpha.min(x[k] / denom);
                    }
                }
            }
            if !alpha.is_finite() {
                alpha = 0.0;
            }
            for k in 0..n {
                x[k] += alpha * (z[k] - x[k]);
                if passive[k] && x[k] <= tol {
                    passive[k] = false;
                    x[k] = 0.0;
                }
            }
        }
    }
    x
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// Least squares on the passive columns only (normal equations with a
/// tiny ridge for numerical safety), zeros elsewhere.
fn restricted_lstsq(a: &[Vec<f64>], b: &[f64], passive: &[bool]) -> Vec<f64> {
    let cols: Vec<usize> = (0..passive.len()).filter(|&j| passive[j]).collect();
    let m = cols.len();
    let mut ata = vec![vec![0.0; m]; m];
    let mut atb = vec![0.0; m];
    for (row, bi) in a.iter().zip(b) {
        for (p, &i) in cols.iter().enumerate() {
            atb[p] += row[i] * bi;
            for (q, &j) in cols.iter().enumerate() {
                ata[p][q] += row[i] * row[j];
            }
        }
    }
    for (p, row) in ata.iter_mut().enumerate() {
        row[p] += 1e-12 * (1.0 + row[p]);
    }
    let sol = solve(ata, atb);
    let mut x = vec![0.0; passive.len()];
    for (p, &j) in cols.iter().enumerate() {
        x[j] = sol[p];
    }
    x
}

/// Gaussian elimination with partial pivoting.
fn solve(mut m: Vec<Vec<f64>>, mut v: Vec<f64>) -> Vec<f64> {
    let n = v.len();
    for c in 0..n {
        let p = (c..n)
            .max_by(|&i, &j| m[i][c].abs().total_cmp(&m[j][c].abs()))
            .unwrap_or(c);
        m.swap(c, p);
        v.swap(c, p);
        let d = m[c][c];
        if d.abs() < 1e-300 {
            continue;
        }
        let (top, rest) = m.split_at_mut(c + 1);
        let pivot = &top[c];
        for (r, row) in rest.iter_mut().enumerate() {
            let f = row[c] / d;
            for (x, p) in row[c..].iter_mut().zip(&pivot[c..]) {
                *x -= f * p;
            }
            v[c + 1 + r] -= f * v[c];
        }
    }
    let mut x = vec![0.0; n];
    for c in (0..n).rev() {
        let s: f64 = (c + 1..n).map(|k| m[c][k] * x[k]).sum();
        x[c] = if m[c][c].abs() < 1e-300 {
            0.0
        } else {
            (v[c] - s) / m[c][c]
        };
    }
    x
}

/// The order in which features claim the shapes' variation when columns
/// are collinear: the machinery a shape isolates first, the loop's glue last.
const PRIORITY: &[&str] = &[
    "mispredict",
    "int_mul",
    "int_shift",
    "int",
    "float",
    "conversion",
    "simd",
    "load",
    "store",
    "atomic",
    "call",
    "call_indirect",
    "tail_call",
    "return",
    "global",
    "other",
    "bulk_byte",
    "fill_byte",
    "taken_branch",
    "block_entry",
    "local",
    "const",
    "operand",
    "branch",
    "control",
];

/// Features that the fitted shapes cannot determine: never exercised, or a
/// linear combination of features taken before them in [`PRIORITY`] order
/// (Gram-Schmidt on the columns; counts are exact, so collinearity is exact
/// up to rounding).
pub fn not_identifiable(a: &[Vec<f64>]) -> Vec<usize> {
    let n = a.first().map(|r| r.len()).unwrap_or(0);
    let mut basis: Vec<Vec<f64>> = Vec::new();
    let mut out = Vec::new();
    let order: Vec<usize> = PRIORITY
        .iter()
        .filter_map(|p| FEATURES.iter().position(|f| f == p))
        .filter(|&j| j < n)
        .chain((0..n).filter(|j| !PRIORITY.iter().any(|p| FEATURES.get(*j) == Some(p))))
        .collect();
    for j in order {
        let mut v: Vec<f64> = a.iter().map(|r| r[j]).collect();
        let norm0 = v.iter().map(|x| x * x).sum::<f64>().sqrt();
        for q in &basis {
            let d = dot(&v, q);
            for (vi, qi) in v.iter_mut().zip(q) {
                *vi -= d * qi;
            }
        }
        let norm = v.iter().map(|x| x * x).sum::<f64>().sqrt();
        if norm0 == 0.0 || norm <= 1e-9 * norm0 {
            out.push(j);
        } else {
            basis.push(v.iter().map(|x| x / norm).collect());
        }
    }
    out.sort();
    out
}

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

/// A price taken from a subtraction pair rather than from the joint fit.
pub struct Anchor {
    pub feature: &'static str,
    /// The shape with more of `feature`...
    pub a: &'static str,
    /// ...and its twin, identical in every other counted feature.
    pub b: &'static str,
    /// Only when pricing a counter: instruction counts add up exactly, so
    /// the twins' difference is the price anywhere; a time does not when
    /// the twin chains the feature into a latency no other code has.
    pub counts_only: bool,
}

/// Features priced by a pair of twin shapes instead of the fit, in order.
/// The twins' counted vectors differ in this feature only, or also in
/// features anchored before it (checked on the counts each time), so
/// `(a - b - earlier anchors' share) / (x_a - x_b)` prices it with nothing
/// to trade against; in the joint fit NNLS shifts part of it onto the
/// compares and taken branches that ride with it, and prices it low.
///
/// One misprediction feature for every kind: the counts split wrong
/// directions from wrong targets, but the catalog has no twins that price
/// a `br_table`'s wrong target apart (the call twins `call_indirect_poly`
/// and `call_indirect_fixed` price a `call_indirect`'s, shown as a pair,
/// and it is near zero where the callees share one code shape).
///
/// `control` is anchored too: in every other shape `block`/`end` ride with
/// the adds and branches inside them, so the fit priced them at whatever
/// made those shapes add up (0.4 ns on wasmi, which resolves blocks when
/// it compiles) and took as much off `int`, which straight-line code then
/// missed by a third.
///
/// `block_entry` is anchored after it when a counter is priced, from a
/// `loop` that is only fallen into against a `block` (the same ops): with
/// the fit alone it rode with the loop header every shape has once per
/// iteration, and wasmi's fuel, exactly 12 host instructions per block
/// entry, was priced at 7.4 and the rest spread over `int`, `load` and
/// `branch`, which over-projected fuel on apps two-fold. In time the twin
/// is not a price: its eight fuel checks in a row form a chain through the
/// fuel counter (2.4 ns per entry on wasmi:fuel here, against 0.4-0.9 ns in
/// the other shapes, and apps run 12 to 1100 ops per block entry, the twin
/// 6), so the fit prices it there.
pub const ANCHORS: &[Anchor] = &[
    Anchor {
        feature: "control",
        a: "add_blocks",
        b: "add_run",
        counts_only: false,
    },
    Anchor {
        feature: "block_entry",
        a: "add_loops",
        b: "add_blocks",
        counts_only: true,
    },
    Anchor {
        feature: "mispredict",
        a: "branch_random",
        b: "branch_periodic",
        counts_only: false,
    },
];

/// Shapes outside the fit because no instruction count explains their
/// time; they are shown with what the prices make of them, and why.
pub const NOT_FITTED: &[(&str, &str)] = &[(
    "pointer_chase",
    "memory-bound: its time is the cache and TLB misses of a dependent chase, which no instruction count sees",
)];

/// Prices fitted to measured times `y` (one per row) over the rows in
/// `used`: anchored features from their twins, then NNLS of what is left
/// over the other identifiable features, weighted by 1/measured so a 3 us
/// shape does not drown a 10 ns one (relative error is minimised).
/// Returns the prices and which of them are anchored.
fn fit(
    rows: &[Row],
    y: &[f64],
    used: &[bool],
    identifiable: &[bool],
    counted: bool,
) -> (Vec<f64>, Vec<bool>) {
    let n = FEATURES.len();
    let mut price = vec![0.0; n];
    let mut anchored = vec![false; n];
    for anchor in ANCHORS.iter().filter(|a| counted || !a.counts_only) {
        let Some(j) = feature_index(anchor.feature) else {
            continue;
        };
        let find = |name: &str| (0..rows.len()).find(|&i| used[i] && rows[i].shape == name);
        let (Some(ia), Some(ib)) = (find(anchor.a), find(anchor.b)) else {
            continue;
        };
        let (xa, xb) = (row_x(&rows[ia]), row_x(&rows[ib]));
        if let Some(dx) = twin_difference(xa, xb, j, &anchored) {
            let earlier: f64 = (0..n)
                .filter(|&k| anchored[k])
                .map(|k| (xa[k] - xb[k]) * price[k])
                .sum();
            price[j] = ((y[ia] - y[ib] - earlier) / dx).max(0.0);
            anchored[j] = true;
        }
    }
    let free: Vec<usize> = (0..n)
        .filter(|&j| identifiable[j] && !anchored[j])
        .collect();
    let (a_w, b_w): (Vec<Vec<f64>>, Vec<f64>) = rows
        .iter()
        .zip(y)
        .zip(used)
        .filter(|(_, &u)| u)
        .map(|((r, &yi), _)| {
            let x = row_x(r);
            let fixed = dot(x, &price);
            (free.iter().map(|&j| x[j] / yi).collect(), (yi - fixed) / yi)
        })
        .unzip();
    if !free.is_empty() && !a_w.is_empty() {
        for (&j, v) in free.iter().zip(nnls(&a_w, &b_w)) {
            price[j] = v;
        }
    }
    (price, anchored)
}

fn row_x<'r>(r: &'r Row) -> &'r [f64] {
    r.x.as_deref().unwrap_or(&[])
}

/// `x_a[j] - x_b[j]` when the two counted vectors differ in feature `j`
/// (`a` having more of it) and otherwise only in `known` features;
/// `None` when they are not twins.
pub fn twin_difference(xa: &[f64], xb: &[f64], j: usize, known: &[bool]) -> Option<f64> {
    let others_equal = xa.iter().zip(xb).enumerate().all(|(k, (p, q))| {
        k == j || known.get(k) == Some(&true) || (p - q).abs() <= 1e-9 * (1.0 + p.abs())
    });
    let dx = xa[j] - xb[j];
    (others_equal && dx > 1e-9).then_some(dx)
}

/// Build the model of every non-null arm in a session report, priced in
/// ns, or in `counter`'s units per iteration (e.g. `callgrind_ir`).
pub fn build(report: &Session, counter: Option<&str>) -> Result<Vec<EngineModel>, String> {
    let arms: Vec<String> = report
        .results
        .iter()
        .flat_map(|r| {
            r.arms
                .iter()
                .filter(|a| a.role != Role::Null)
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
    let seed = crate::workers::protocol::fnv1a(&[shape.as_bytes(), arm.as_bytes()]);
    stats::bootstrap::hierarchical_bootstrap(epochs, BOOTSTRAP, seed)
}

/// A feature's column in [`FEATURES`].
fn feature_index(name: &str) -> Option<usize> {
    FEATURES.iter().position(|f| *f == name)
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

/// "Expected error on an unseen shape": the median |leave-one-out error|.
fn loo_median_abs(residuals: &[Residual]) -> Option<f64> {
    let loo: Vec<f64> = residuals
        .iter()
        .filter_map(|r| r.loo_pct.map(f64::abs))
        .collect();
    (!loo.is_empty()).then(|| stats::median(&loo))
}

/// The error of predicting fitted shape `i` from a fit without it: the
/// accuracy to expect on a shape the fit has not seen. `None` when the
/// shape is the only one that prices one of its features.
fn leave_one_out(
    rows: &[Row],
    y: &[f64],
    fitted: &[bool],
    i: usize,
    identifiable_in: &dyn Fn(&[bool]) -> Vec<bool>,
    counted: bool,
) -> Option<f64> {
    let mut used = fitted.to_vec();
    used[i] = false;
    let identifiable = identifiable_in(&used);
    let (p, anchored) = fit(rows, y, &used, &identifiable, counted);
    let priced = row_x(&rows[i])
        .iter()
        .enumerate()
        .all(|(j, v)| *v == 0.0 || identifiable[j] || anchored[j]);
    priced.then(|| (dot(row_x(&rows[i]), &p) - y[i]) / y[i] * 100.0)
}

/// The explicit subtraction pairs, with the same two-stage bootstrap over
/// epochs and rounds as the prices.
/// `ns` is what the differences are in: ns, or the counter's units.
fn pairs(rows: &[Row], k: f64, ns: &str) -> Vec<Pair> {
    let find = |name: &str| rows.iter().find(|r| r.shape == name);
    let mut out = Vec::new();
    let mut add = |name: &str, unit: &str, f: &dyn Fn(f64, f64) -> f64, a: &str, b: &str| {
        if let (Some(x), Some(y)) = (find(a), find(b)) {
            out.push(Pair {
                name: name.to_string(),
                value: f(x.measured, y.measured),
                ci: interval(
                    x.replicates
                        .iter()
                        .zip(&y.replicates)
                        .map(|(p, q)| f(*p, *q))
                        .collect(),
                ),
                unit: unit.to_string(),
            });
        }
    };
    add(
        "taken branch = (br_chain - add_chain) / K",
        ns,
        &|br, add| (br - add) / k,
        "br_chain",
        "add_chain",
    );
    add(
        "shared store / plain store (per iteration)",
        "ratio",
        &|s, p| s / p,
        "shared_store_stream",
        "store_stream",
    );
    add(
        "shared load / plain load (per iteration)",
        "ratio",
        &|s, p| s / p,
        "shared_load_stream",
        "load_stream",
    );
    add(
        "chain through a local vs on the stack = (add_run - add_stack) / K",
        ns,
        &|run, stack| (run - stack) / k,
        "add_run",
        "add_stack",
    );
    add(
        "return vs end = call_return - call_direct",
        ns,
        &|r, d| r - d,
        "call_return",
        "call_direct",
    );
    let misses = |r: &Row| {
        feature_index("mispredict")
            .and_then(|j| row_x(r).get(j).copied())
            .unwrap_or(0.0)
    };
    for (name, a, b) in [
        (
            "misprediction = (branch_random - branch_periodic) / extra mispredicts",
            "branch_random",
            "branch_periodic",
        ),
        (
            "wrong target = (call_indirect_poly - call_indirect_fixed) / extra mispredicts",
            "call_indirect_poly",
            "call_indirect_fixed",
        ),
    ] {
        if let (Some(r), Some(p)) = (find(a), find(b)) {
            let extra = misses(r) - misses(p);
            if extra > 0.0 {
                add(name, ns, &|r, p| (r - p) / extra, a, b);
            }
        }
    }
    let per_byte = |name: &str| find(name).and_then(|r| r.bytes_per_iter).unwrap_or(1.0);
    let (sb, cb) = (per_byte("store_stream"), per_byte("memory_copy"));
    add(
        "store path / memory.copy, per byte",
        "ratio",
        &|s, c| (s / sb) / (c / cb),
        "store_stream",
        "memory_copy",
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nnls_recovers_known_prices() {
        let truth = [2.0, 0.5, 0.0, 3.0];
        let a: Vec<Vec<f64>> = vec![
            vec![1.0, 4.0, 0.0, 0.0],
            vec![2.0, 1.0, 1.0, 0.0],
            vec![0.0, 3.0, 2.0, 1.0],
            vec![1.0, 0.0, 5.0, 2.0],
            vec![3.0, 2.0, 1.0, 1.0],
        ];
        let b: Vec<f64> = a.iter().map(|r| dot(r, &truth)).collect();
        let x = nnls(&a, &b);
        for (got, want) in x.iter().zip(truth) {
            assert!((got - want).abs() < 1e-6, "{x:?}");
        }
    }

    #[test]
    fn nnls_clamps_negative_solutions() {
        // The unconstrained solution has a negative second price.
        let a = vec![vec![1.0, 1.0], vec![1.0, 2.0], vec![1.0, 3.0]];
        let b = vec![3.0, 2.0, 1.0];
        let x = nnls(&a, &b);
        assert!(x.iter().all(|v| *v >= 0.0), "{x:?}");
        assert!((x[0] - 2.0).abs() < 1e-6 && x[1] == 0.0, "{x:?}");
    }

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

    #[test]
    fn every_counted_class_is_a_feature() {
        for c in loopbench_count::OpClass::ALL {
            let name = c.name();
            assert!(
                FEATURES.contains(&name) || name == "bulk_memory",
                "{name} is neither a feature nor priced per byte"
            );
        }
        assert!(FEATURES.contains(&"mispredict"));
    }

    /// A feature vector from (feature, value) pairs.
    fn fv(values: &[(&str, f64)]) -> Vec<f64> {
        FEATURES
            .iter()
            .map(|f| values.iter().find(|(k, _)| k == f).map_or(0.0, |(_, v)| *v))
            .collect()
    }

    fn row(shape: &'static str, x: Vec<f64>, truth: &[f64]) -> Row<'static> {
        let y = dot(&x, truth);
        Row {
            shape,
            x: Some(x),
            bytes_per_iter: None,
            kind: Kind::of(shape),
            measured: y,
            replicates: vec![y; BOOTSTRAP],
        }
    }

    /// Noiseless times from known prices: a catalog where the twins differ
    /// only in mispredictions, plus shapes that pin the other prices.
    fn catalog(random_extra_int: f64) -> (Vec<Row<'static>>, Vec<f64>) {
        catalog_with(random_extra_int, 0.0)
    }

    /// The same, with `random_extra_control` more `control` in
    /// branch_random than in its twin (priced by the control twins first).
    fn catalog_with(
        random_extra_int: f64,
        random_extra_control: f64,
    ) -> (Vec<Row<'static>>, Vec<f64>) {
        let truth = fv(&[
            ("int", 1.0),
            ("branch", 0.5),
            ("control", 0.2),
            ("operand", 0.1),
            ("mispredict", 5.0),
        ]);
        let twin = [("int", 4.0), ("branch", 4.0), ("control", 2.0)];
        let mut random = twin.to_vec();
        random.push(("mispredict", 2.0));
        random[0].1 += random_extra_int;
        random[2].1 += random_extra_control;
        let rows = vec![
            row("branch_periodic", fv(&twin), &truth),
            row("branch_random", fv(&random), &truth),
            row("add_run", fv(&[("int", 4.0), ("operand", 8.0)]), &truth),
            row(
                "add_blocks",
                fv(&[("int", 4.0), ("operand", 8.0), ("control", 8.0)]),
                &truth,
            ),
            row("a", fv(&[("int", 3.0), ("branch", 1.0)]), &truth),
            row(
                "b",
                fv(&[("int", 1.0), ("branch", 2.0), ("control", 1.0)]),
                &truth,
            ),
            row("c", fv(&[("int", 1.0), ("control", 3.0)]), &truth),
            row(
                "d",
                fv(&[("int", 2.0), ("branch", 1.0), ("control", 2.0)]),
                &truth,
            ),
        ];
        (rows, truth)
    }

    #[test]
    fn block_entries_are_anchored_only_when_a_counter_is_priced() {
        let (mut rows, mut truth) = catalog(0.0);
        truth[feature_index("block_entry").unwrap()] = 3.0;
        // add_loops: add_blocks' ops with its 8 blocks turned into loops.
        let mut loops = fv(&[("int", 4.0), ("operand", 8.0), ("control", 8.0)]);
        loops[feature_index("block_entry").unwrap()] = 8.0;
        rows.push(row("add_loops", loops, &truth));
        let y: Vec<f64> = rows.iter().map(|r| r.measured).collect();
        let all = vec![true; rows.len()];
        let identifiable = vec![true; FEATURES.len()];
        let j = feature_index("block_entry").unwrap();
        let (p, anchored) = fit(&rows, &y, &all, &identifiable, true);
        assert!(anchored[j]);
        assert!((p[j] - 3.0).abs() < 1e-12, "(add_loops - add_blocks) / 8");
        let (_, anchored) = fit(&rows, &y, &all, &identifiable, false);
        assert!(!anchored[j], "in time the fit prices block entries");
        assert!(anchored[feature_index("control").unwrap()]);
    }

    #[test]
    fn twins_anchor_their_feature_and_the_fit_recovers_the_rest() {
        let (rows, truth) = catalog(0.0);
        let y: Vec<f64> = rows.iter().map(|r| r.measured).collect();
        let used = vec![true; rows.len()];
        let a: Vec<Vec<f64>> = rows.iter().map(|r| row_x(r).to_vec()).collect();
        let not = not_identifiable(&a);
        let identifiable: Vec<bool> = (0..FEATURES.len()).map(|j| !not.contains(&j)).collect();
        let (p, anchored) = fit(&rows, &y, &used, &identifiable, false);
        let m = feature_index("mispredict").unwrap();
        let c = feature_index("control").unwrap();
        assert!(anchored[m] && anchored[c] && anchored.iter().filter(|a| **a).count() == 2);
        assert!(
            (p[m] - 5.0).abs() < 1e-12,
            "(y_random - y_periodic) / 2 extra mispredictions"
        );
        assert!(
            (p[c] - 0.2).abs() < 1e-12,
            "(y_blocks - y_run) / 8 blocks and ends"
        );
        for (j, f) in FEATURES.iter().enumerate() {
            assert!(
                (p[j] - truth[j]).abs() < 1e-6,
                "{f}: {} vs {}",
                p[j],
                truth[j]
            );
        }
        // Noiseless data: every shape is predicted exactly without itself
        // (each keeps the others able to price its features).
        for i in 0..rows.len() {
            let loo = leave_one_out(
                &rows,
                &y,
                &used,
                i,
                &|u: &[bool]| {
                    let a: Vec<Vec<f64>> = rows
                        .iter()
                        .zip(u)
                        .filter(|(_, &k)| k)
                        .map(|(r, _)| row_x(r).to_vec())
                        .collect();
                    let not = not_identifiable(&a);
                    (0..FEATURES.len()).map(|j| !not.contains(&j)).collect()
                },
                false,
            );
            if let Some(e) = loo {
                assert!(e.abs() < 1e-6, "{}: {e}", rows[i].shape);
            }
        }
    }

    #[test]
    fn twins_may_also_differ_in_a_feature_anchored_before_them() {
        // branch_random runs 3 more blocks/ends than branch_periodic: alone
        // that is not a twin, but control is anchored first, so its share
        // comes off before the misprediction is priced.
        let (rows, _) = catalog_with(0.0, 3.0);
        let m = feature_index("mispredict").unwrap();
        let c = feature_index("control").unwrap();
        assert_eq!(
            twin_difference(row_x(&rows[1]), row_x(&rows[0]), m, &[]),
            None
        );
        let y: Vec<f64> = rows.iter().map(|r| r.measured).collect();
        let (p, anchored) = fit(
            &rows,
            &y,
            &vec![true; rows.len()],
            &vec![true; FEATURES.len()],
            false,
        );
        assert!(anchored[c] && anchored[m]);
        assert!((p[c] - 0.2).abs() < 1e-12, "control {}", p[c]);
        assert!((p[m] - 5.0).abs() < 1e-12, "mispredict {}", p[m]);
    }

    #[test]
    fn shapes_that_differ_in_more_than_one_feature_are_not_twins() {
        let (rows, _) = catalog(1.0);
        let m = feature_index("mispredict").unwrap();
        assert_eq!(
            twin_difference(row_x(&rows[1]), row_x(&rows[0]), m, &[]),
            None
        );
        let y: Vec<f64> = rows.iter().map(|r| r.measured).collect();
        let (_, anchored) = fit(
            &rows,
            &y,
            &vec![true; rows.len()],
            &vec![true; FEATURES.len()],
            false,
        );
        assert!(!anchored[m], "no anchor from shapes that are not twins");
        // Twins the other way round (b has more) are not an anchor either.
        let (rows, _) = catalog(0.0);
        assert_eq!(
            twin_difference(row_x(&rows[0]), row_x(&rows[1]), m, &[]),
            None
        );
        assert_eq!(
            twin_difference(row_x(&rows[1]), row_x(&rows[0]), m, &[]),
            Some(2.0)
        );
    }

    #[test]
    fn folded_operands_are_their_own_feature_and_bulk_bytes_only_count_for_bulk_ops() {
        let class = |k: &str| match k {
            "local" => 10.0,
            "const" => 3.0,
            "int" => 4.0,
            _ => 0.0,
        };
        let folded = |k: &str| match k {
            "local" => 8.0,
            "const" => 2.0,
            _ => 0.0,
        };
        let dynamic = Dynamic {
            taken_branches: 1.0,
            block_entries: 2.0,
            mispredicts: 0.75,
            ..Dynamic::default()
        };
        let v = |f: &str| feature_value(f, &class, &folded, &dynamic);
        assert_eq!((v("local"), v("const"), v("operand")), (2.0, 1.0, 10.0));
        assert_eq!(
            (
                v("int"),
                v("taken_branch"),
                v("block_entry"),
                v("mispredict")
            ),
            (4.0, 1.0, 2.0, 0.75)
        );
        // Every instruction is counted once: classes == non-extra features.
        let ops: f64 = FEATURES
            .iter()
            .filter(|f| !EXTRA.contains(f))
            .map(|f| v(f))
            .sum();
        assert_eq!(ops, 17.0);
        // A shape that only loads and stores has no bulk bytes.
        let mut c = crate::results::IterCounts {
            ops: 3.0,
            taken_branches: 1.0,
            loads: 1.0,
            stores: 0.0,
            calls: 0.0,
            bytes: 4.0,
            bulk_bytes: None,
            bulk_fill_bytes: None,
            transfers: None,
            block_entries: None,
            mispredicts: None,
            multiway_mispredicts: None,
            classes: [("load".to_string(), 1.0), ("bulk_memory".to_string(), 0.0)].into(),
            folded: Default::default(),
            source: "counted".into(),
            note: None,
        };
        let bulk = feature_index("bulk_byte").unwrap();
        assert_eq!(feature_vector(&c).unwrap()[bulk], 0.0);
        c.classes.insert("bulk_memory".into(), 1.0);
        c.bytes = 4096.0;
        assert_eq!(feature_vector(&c).unwrap()[bulk], 4096.0);
        // A fill's bytes are written only: a feature of their own.
        let fill = feature_index("fill_byte").unwrap();
        (c.bulk_bytes, c.bulk_fill_bytes) = (Some(4096.0), Some(4096.0));
        let x = feature_vector(&c).unwrap();
        assert_eq!((x[bulk], x[fill]), (0.0, 4096.0));
    }

    #[test]
    fn unused_and_collinear_features_are_flagged() {
        // Column 2 is never used; column 0 = column 3 - column 1 is taken
        // after local/const in priority order, so it is the one flagged;
        // column 1 (branch) stays independent of const.
        let a = vec![
            vec![1.0, 0.0, 0.0, 1.0],
            vec![0.0, 1.0, 0.0, 1.0],
            vec![1.0, 1.0, 0.0, 2.0],
            vec![2.0, 1.0, 0.0, 3.0],
        ];
        // In FEATURES order, columns 0..4 are control, branch, local, const:
        // priority takes local (2) and const (3) before branch (1) and control (0).
        let ni = not_identifiable(&a);
        assert_eq!(ni, vec![0, 2], "{ni:?}");
    }
}
