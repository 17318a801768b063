//! The fit: prices from measured times, anchored features first (from
//! their twins), then NNLS over the rest weighted to minimise relative
//! error; and leave-one-out, the accuracy to expect on a shape the fit has
//! not seen.

use super::anchors::{twin_difference, ANCHORS};
use super::features::{feature_index, FEATURES};
use super::nnls::{dot, nnls};
use super::{row_x, Residual, Row};
use crate::stats;

/// Prices fitted to measured times `y` (one per row) over the rows in
/// `used`: anchored features from their twins, then NNLS of what is left
/// over the other identifiable features, weighted by 1/measured so a 3 us
/// shape does not drown a 10 ns one (relative error is minimised).
/// Returns the prices and which of them are anchored.
pub(super) fn fit(
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

/// "Expected error on an unseen shape": the median |leave-one-out error|.
pub(super) fn loo_median_abs(residuals: &[Residual]) -> Option<f64> {
    let loo: Vec<f64> = residuals
        .iter()
        .filter_map(|r| r.loo_pct.map(f64::abs))
        .collect();
    (!loo.is_empty()).then(|| stats::median(&loo))
}

/// The error of predicting fitted shape `i` from a fit without it: the
/// accuracy to expect on a shape the fit has not seen. `None` when the
/// shape is the only one that prices one of its features.
pub(super) fn leave_one_out(
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::nnls::not_identifiable;
    use crate::model::{Kind, BOOTSTRAP};

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
}
