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
//!   taken branches, bulk bytes). Prices are constrained non-negative
//!   (Lawson-Hanson NNLS), intervals come from resampling each shape's
//!   rounds (percentile bootstrap), and every shape's residual shows what
//!   the linear model misses. br_if_ladder and br_table_switch are left out
//!   of the fit and predicted from it, the reference harness's reproduction
//!   check.
//!
//! A feature that no shape exercises, or whose column is a linear
//! combination of the others in this catalog, is *not identifiable*: the
//! fit cannot separate it, and it is reported as such rather than priced.

pub use crate::results::model::{EngineModel, Pair, Price, Residual};
use crate::results::{Role, Session, ShapeResult};
use crate::stats;

/// The features of the fit: every instruction class the counting pass
/// knows, plus three dynamic quantities that cost more than their
/// instruction count says (taken branches, bulk bytes, and the simulated
/// predictor's mispredictions, so a data-dependent ladder or switch is
/// priced from data instead of being left as residual).
pub const FEATURES: &[&str] = &[
    "control",
    "branch",
    "local",
    "const",
    "int",
    "float",
    "conversion",
    "load",
    "store",
    "call",
    "call_indirect",
    "return",
    "simd",
    "other",
    "atomic",
    "taken_branch",
    "bulk_byte",
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
    Some(
        FEATURES
            .iter()
            .map(|f| match *f {
                "taken_branch" => c.taken_branches,
                "mispredict" => c.mispredicts.unwrap_or(0.0),
                "bulk_byte" => c.classes.get("bulk_memory").map(|_| c.bytes).unwrap_or(0.0),
                class => c.classes.get(class).copied().unwrap_or(0.0),
            })
            .collect(),
    )
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
    "int",
    "float",
    "conversion",
    "simd",
    "load",
    "store",
    "atomic",
    "call",
    "call_indirect",
    "return",
    "other",
    "bulk_byte",
    "taken_branch",
    "local",
    "const",
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

/// Samples (ns/iter per round) of one arm on one shape.
fn samples<'a>(r: &'a ShapeResult, arm: &str) -> Option<&'a [f64]> {
    r.arms
        .iter()
        .find(|a| a.arm == arm && !a.samples_ns_per_iter.is_empty())
        .map(|a| a.samples_ns_per_iter.as_slice())
}

/// A deterministic generator for the bootstrap (splitmix64).
struct Rng(u64);
impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        ((z ^ (z >> 31)) % n as u64) as usize
    }
    fn resampled_median(&mut self, xs: &[f64]) -> f64 {
        let v: Vec<f64> = (0..xs.len()).map(|_| xs[self.below(xs.len())]).collect();
        stats::median(&v)
    }
}

fn percentile(mut v: Vec<f64>, q: f64) -> f64 {
    v.sort_by(f64::total_cmp);
    if v.is_empty() {
        return f64::NAN;
    }
    v[((v.len() - 1) as f64 * q).round() as usize]
}

/// Build the model of every non-null arm in a session report.
pub fn build(report: &Session) -> Vec<EngineModel> {
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
    arms.iter().map(|arm| model_arm(report, arm)).collect()
}

fn model_arm(report: &Session, arm: &str) -> EngineModel {
    let mut rng = Rng(0x5EED);
    let rows: Vec<(&ShapeResult, Vec<f64>, &[f64])> = report
        .results
        .iter()
        .filter_map(|r| Some((r, features(r)?, samples(r, arm)?)))
        .collect();
    let fitted: Vec<&(&ShapeResult, Vec<f64>, &[f64])> = rows
        .iter()
        .filter(|(r, _, _)| !HELD_OUT.contains(&r.shape.as_str()))
        .collect();
    let a: Vec<Vec<f64>> = fitted.iter().map(|(_, x, _)| x.clone()).collect();
    let b: Vec<f64> = fitted.iter().map(|(_, _, s)| stats::median(s)).collect();
    let unidentifiable = not_identifiable(&a);
    let identifiable: Vec<bool> = (0..FEATURES.len())
        .map(|j| !unidentifiable.contains(&j))
        .collect();
    // Weighted by 1/measured: minimise relative error, so a 3 us shape does
    // not drown a 10 ns one.
    let fit_with = |b: &[f64]| -> Vec<f64> {
        let a_w: Vec<Vec<f64>> = a
            .iter()
            .zip(b)
            .map(|(r, y)| {
                r.iter()
                    .enumerate()
                    .map(|(j, v)| if identifiable[j] { v / y } else { 0.0 })
                    .collect()
            })
            .collect();
        nnls(&a_w, &vec![1.0; b.len()])
    };
    let x = fit_with(&b);
    let boots: Vec<Vec<f64>> = (0..BOOTSTRAP)
        .map(|_| {
            let bb: Vec<f64> = fitted
                .iter()
                .map(|(_, _, s)| rng.resampled_median(s))
                .collect();
            fit_with(&bb)
        })
        .collect();
    let prices = FEATURES
        .iter()
        .enumerate()
        .map(|(j, f)| {
            let col: Vec<f64> = boots.iter().map(|p| p[j]).collect();
            Price {
                feature: f.to_string(),
                ns: x[j],
                ci: [percentile(col.clone(), 0.025), percentile(col, 0.975)],
                identifiable: identifiable[j],
            }
        })
        .collect();
    let residuals = rows
        .iter()
        .map(|(r, feat, s)| {
            let measured = stats::median(s);
            let reproduced = dot(feat, &x);
            Residual {
                shape: r.shape.clone(),
                measured_ns: measured,
                reproduced_ns: reproduced,
                residual_pct: (reproduced - measured) / measured * 100.0,
                kind: if HELD_OUT.contains(&r.shape.as_str()) {
                    "held_out".to_string()
                } else {
                    "fit".to_string()
                },
            }
        })
        .collect();
    EngineModel {
        arm: arm.to_string(),
        prices,
        not_identifiable: unidentifiable
            .iter()
            .map(|&j| FEATURES[j].to_string())
            .collect(),
        residuals,
        pairs: pairs(report, arm, &mut rng),
        caveat: is_compiler(arm).then(|| JIT_CAVEAT.to_string()),
    }
}

/// The explicit subtraction pairs, with bootstrap intervals over rounds.
fn pairs(report: &Session, arm: &str, rng: &mut Rng) -> Vec<Pair> {
    let find = |name: &str| {
        report
            .results
            .iter()
            .find(|r| r.shape == name)
            .and_then(|r| Some((r, samples(r, arm)?)))
    };
    let mut out = Vec::new();
    let mut add = |name: &str,
                   unit: &str,
                   f: &dyn Fn(f64, f64) -> f64,
                   x: Option<(&ShapeResult, &[f64])>,
                   y: Option<(&ShapeResult, &[f64])>| {
        if let (Some((_, xs)), Some((_, ys))) = (x, y) {
            let value = f(stats::median(xs), stats::median(ys));
            let boots: Vec<f64> = (0..BOOTSTRAP)
                .map(|_| f(rng.resampled_median(xs), rng.resampled_median(ys)))
                .collect();
            out.push(Pair {
                name: name.to_string(),
                value,
                ci: [percentile(boots.clone(), 0.025), percentile(boots, 0.975)],
                unit: unit.to_string(),
            });
        }
    };
    let k = report.session.k as f64;
    add(
        "taken branch = (br_chain - add_chain) / K",
        "ns",
        &|br, add| (br - add) / k,
        find("br_chain"),
        find("add_chain"),
    );
    add(
        "shared store / plain store (per iteration)",
        "ratio",
        &|s, p| s / p,
        find("shared_store_stream"),
        find("store_stream"),
    );
    add(
        "shared load / plain load (per iteration)",
        "ratio",
        &|s, p| s / p,
        find("shared_load_stream"),
        find("load_stream"),
    );
    add(
        "return vs end = call_return - call_direct",
        "ns",
        &|r, d| r - d,
        find("call_return"),
        find("call_direct"),
    );
    let miss = |name: &str| {
        find(name)
            .and_then(|(r, _)| r.counts_per_iter.as_ref()?.mispredicts)
            .unwrap_or(0.0)
    };
    let extra_misses = miss("branch_random") - miss("branch_periodic");
    if extra_misses > 0.0 {
        add(
            "misprediction = (branch_random - branch_periodic) / extra mispredicts",
            "ns",
            &|r, p| (r - p) / extra_misses,
            find("branch_random"),
            find("branch_periodic"),
        );
    }
    let per_byte = |name: &str| {
        find(name)
            .and_then(|(r, _)| r.bytes_per_iter)
            .unwrap_or(1.0)
    };
    let (sb, cb) = (per_byte("store_stream"), per_byte("memory_copy"));
    add(
        "store path / memory.copy, ns per byte",
        "ratio",
        &|s, c| (s / sb) / (c / cb),
        find("store_stream"),
        find("memory_copy"),
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
