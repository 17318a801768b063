//! Non-negative least squares and identifiability: the linear algebra of
//! the fit. Prices are constrained non-negative (Lawson-Hanson active set),
//! and a feature whose column the fitted shapes cannot tell apart from the
//! others (never exercised, or an exact linear combination of features
//! taken before it) is reported as not identifiable instead of priced.

use super::FEATURES;

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

pub(super) fn dot(a: &[f64], b: &[f64]) -> f64 {
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
