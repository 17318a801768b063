//! Micro-to-app projection: what the per-primitive prices predict for a
//! whole app, beside what the app measures.
//!
//! For arms A (baseline) and B, with prices `p_A(f)`, `p_B(f)` in ns per
//! unit of feature `f` (an op class, a taken branch, a bulk byte; from the
//! cost model's fit, [`crate::model`]) and the app's exact count `x(f)` for
//! one rep (from its counting run):
//!
//! ```text
//! predicted delta (ns) = sum_f (p_B(f) - p_A(f)) * x(f)
//! predicted change     = predicted delta / measured time of A on the app
//! ```
//!
//! That is the reference harness's rule made arithmetic: a micro effect
//! counts in proportion to the app's use of that machinery, never as the
//! app's change. The measured change (paired, with its interval and the
//! null control) stands beside it, with the difference. Features the model
//! could not price, and op classes no shape exercises, are listed with
//! their share of the app: the prediction says nothing about them.

use loopbench_count::{Counts, OpClass};
use serde::Serialize;
use std::collections::BTreeMap;

/// Per-unit prices of one arm, by feature name (see [`crate::model::FEATURES`]).
#[derive(Clone, Debug, Default, Serialize)]
pub struct Prices {
    pub arm: String,
    /// ns per unit, for identifiable features only.
    pub ns: BTreeMap<String, f64>,
    /// Bootstrap replicates of `ns` (same features), for the projection's
    /// interval; empty when the prices came without them.
    #[serde(skip)]
    pub replicates: Vec<BTreeMap<String, f64>>,
}

impl Prices {
    /// The identifiable prices of a model fit.
    pub fn from_model(m: &crate::model::EngineModel) -> Self {
        let priced = |values: &dyn Fn(usize) -> f64| -> BTreeMap<String, f64> {
            m.prices
                .iter()
                .enumerate()
                .filter(|(_, p)| p.identifiable)
                .map(|(j, p)| (p.feature.to_string(), values(j)))
                .collect()
        };
        Prices {
            arm: m.arm.clone(),
            ns: priced(&|j| m.prices[j].ns),
            replicates: m
                .price_replicates
                .iter()
                .map(|r| priced(&|j| r.get(j).copied().unwrap_or(f64::NAN)))
                .collect(),
        }
    }
}

/// The app's feature counts for one rep, named like the model's features
/// (`mispredicts`: the simulated predictor's count for the same rep).
pub fn app_features(
    c: &Counts,
    predictor: Option<&loopbench_count::PredictorStats>,
) -> BTreeMap<String, f64> {
    let class = |k: &str| k.parse().map(|k| c.class(k) as f64).unwrap_or(0.0);
    let folded = |k: &str| k.parse().map(|k| c.folded(k) as f64).unwrap_or(0.0);
    // Every class (bulk_memory included, for the op total) and every feature.
    let mut x: BTreeMap<String, f64> = OpClass::ALL
        .into_iter()
        .map(|k| (k.name().to_string(), class(k.name())))
        .collect();
    let dynamic = crate::model::Dynamic {
        taken_branches: c.taken_branches as f64,
        block_entries: c.block_entries as f64,
        copied: (c.bulk_bytes - c.bulk_fill_bytes) as f64,
        filled: c.bulk_fill_bytes as f64,
        mispredicts: predictor.map_or(0.0, |p| p.mispredicts as f64),
    };
    for f in crate::model::FEATURES {
        if *f == "mispredict" && predictor.is_none() {
            continue;
        }
        x.insert(
            f.to_string(),
            crate::model::feature_value(f, &class, &folded, &dynamic),
        );
    }
    x
}

/// Where an arm's prices fall short of an app's measured time: the share
/// they reproduce, and the op classes that carry no time in the model
/// (unpriced, or priced at zero by the fit) ranked by their share of the
/// app's ops. When the share is low, the missing time is in those classes
/// or in effects no feature has (cache misses, dispatch the catalog's loops
/// predict better than the app's code).
#[derive(Clone, Debug, Serialize)]
pub struct Coverage {
    pub arm: String,
    pub measured_ns: f64,
    pub reproduced_ns: f64,
    /// `reproduced / measured`.
    pub share: f64,
    /// (class, share of the app's ops) with no price or a zero price.
    pub unpriced: Vec<(String, f64)>,
    /// What every op would have to cost on top of its price to close the
    /// gap, if the gap were spread evenly: ns per op.
    pub gap_ns_per_op: f64,
}

pub fn coverage(p: &Prices, x: &BTreeMap<String, f64>, measured_ns: f64) -> Coverage {
    let total_ops: f64 = x.iter().filter(|(f, _)| is_class(f)).map(|(_, v)| *v).sum();
    let reproduced: f64 = x
        .iter()
        .filter_map(|(f, n)| p.ns.get(f).map(|v| v * n))
        .sum();
    let mut unpriced: Vec<(String, f64)> = x
        .iter()
        .filter(|(f, n)| is_class(f) && **n > 0.0 && p.ns.get(*f).is_none_or(|v| *v <= 0.0))
        .map(|(f, n)| (f.clone(), n / total_ops.max(1.0)))
        .collect();
    unpriced.sort_by(|a, b| b.1.total_cmp(&a.1));
    Coverage {
        arm: p.arm.clone(),
        measured_ns,
        reproduced_ns: reproduced,
        share: reproduced / measured_ns,
        unpriced,
        gap_ns_per_op: (measured_ns - reproduced) / total_ops.max(1.0),
    }
}

/// One feature's part of the prediction.
#[derive(Clone, Debug, Serialize)]
pub struct Term {
    pub feature: String,
    pub count: f64,
    pub price_a: f64,
    pub price_b: f64,
    pub delta_ns: f64,
}

#[derive(Clone, Debug, Serialize)]
pub struct Projection {
    /// Sum of the terms, ns per rep.
    pub predicted_delta_ns: f64,
    /// The model's reproduction of A's time on the app, ns per rep.
    pub predicted_a_ns: f64,
    /// Measured median time of A on the app, ns per rep.
    pub measured_a_ns: f64,
    /// `predicted_delta_ns / measured_a_ns`, in percent.
    pub predicted_pct: f64,
    /// 95% interval of `predicted_pct` over the prices' bootstrap
    /// replicates (epochs and rounds of the pricing session), when both
    /// arms carry them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub predicted_ci_pct: Option<[f64; 2]>,
    /// Terms, largest |delta| first.
    pub terms: Vec<Term>,
    /// Op classes with ops in the app and no price in one of the arms,
    /// with their share of the app's ops.
    pub unpriced: Vec<(String, f64)>,
}

/// Instructions are ops (`operand` included); taken branches, bulk bytes
/// and mispredictions are extra dynamic quantities on top of them.
fn is_class(feature: &str) -> bool {
    !crate::model::EXTRA.contains(&feature)
}

/// The projection arithmetic (see the module docs).
pub fn project(
    a: &Prices,
    b: &Prices,
    x: &BTreeMap<String, f64>,
    measured_a_ns: f64,
) -> Projection {
    let total_ops: f64 = x.iter().filter(|(f, _)| is_class(f)).map(|(_, v)| *v).sum();
    let mut terms = Vec::new();
    let mut unpriced = Vec::new();
    let (mut delta, mut pa_total) = (0.0, 0.0);
    for (f, &count) in x {
        if count == 0.0 {
            continue;
        }
        match (a.ns.get(f), b.ns.get(f)) {
            (Some(&pa), Some(&pb)) => {
                let d = (pb - pa) * count;
                delta += d;
                pa_total += pa * count;
                terms.push(Term {
                    feature: f.clone(),
                    count,
                    price_a: pa,
                    price_b: pb,
                    delta_ns: d,
                });
            }
            _ if is_class(f) => unpriced.push((f.clone(), count / total_ops.max(1.0))),
            _ => unpriced.push((f.clone(), f64::NAN)),
        }
    }
    terms.sort_by(|p, q| q.delta_ns.abs().total_cmp(&p.delta_ns.abs()));
    // The same sum over each pair of replicates: how far the prices'
    // own uncertainty moves the projection.
    let replicated: Vec<f64> = a
        .replicates
        .iter()
        .zip(&b.replicates)
        .map(|(ra, rb)| {
            terms
                .iter()
                .map(|t| {
                    let pa = ra.get(&t.feature).copied().unwrap_or(t.price_a);
                    let pb = rb.get(&t.feature).copied().unwrap_or(t.price_b);
                    (pb - pa) * t.count
                })
                .sum::<f64>()
                * 100.0
                / measured_a_ns
        })
        .collect();
    Projection {
        predicted_delta_ns: delta,
        predicted_a_ns: pa_total,
        measured_a_ns,
        predicted_pct: 100.0 * delta / measured_a_ns,
        predicted_ci_pct: (replicated.len() >= 2).then(|| {
            let (lo, hi) = crate::stats::epochs::percentile_interval(replicated, 0.95);
            [lo, hi]
        }),
        terms,
        unpriced,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prices(arm: &str, v: &[(&str, f64)]) -> Prices {
        Prices {
            arm: arm.into(),
            ns: v.iter().map(|(k, p)| (k.to_string(), *p)).collect(),
            replicates: Vec::new(),
        }
    }

    #[test]
    fn the_projection_interval_comes_from_the_price_replicates() {
        let mut a = prices("a", &[("int", 1.0)]);
        let mut b = prices("b", &[("int", 2.0)]);
        let x: BTreeMap<String, f64> = [("int".to_string(), 10.0)].into();
        // Without replicates, no interval is claimed.
        assert_eq!(project(&a, &b, &x, 100.0).predicted_ci_pct, None);
        // B's int price replicated over 1.5..2.5 ns: the change is 5..15%.
        a.replicates = (0..=100).map(|_| a.ns.clone()).collect();
        b.replicates = (0..=100)
            .map(|k| [("int".to_string(), 1.5 + k as f64 / 100.0)].into())
            .collect();
        let p = project(&a, &b, &x, 100.0);
        assert_eq!(p.predicted_pct, 10.0);
        let [lo, hi] = p.predicted_ci_pct.unwrap();
        assert!(
            (lo - 5.25).abs() < 1e-9 && (hi - 14.75).abs() < 1e-9,
            "{lo} {hi}"
        );
    }

    #[test]
    fn synthetic_projection_adds_up() {
        // A: int 1 ns, load 2 ns, taken branch 0.5 ns. B: int 1.5, load 2, taken 1.
        let a = prices("a", &[("int", 1.0), ("load", 2.0), ("taken_branch", 0.5)]);
        let b = prices("b", &[("int", 1.5), ("load", 2.0), ("taken_branch", 1.0)]);
        let x: BTreeMap<String, f64> = [
            ("int", 1000.0),
            ("load", 500.0),
            ("float", 500.0),
            ("taken_branch", 200.0),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), *v))
        .collect();
        // delta = 0.5*1000 + 0*500 + 0.5*200 = 600 ns; A reproduces 1000 + 1000 + 100.
        let p = project(&a, &b, &x, 4000.0);
        assert_eq!(p.predicted_delta_ns, 600.0);
        assert_eq!(p.predicted_a_ns, 2100.0);
        assert_eq!(p.predicted_pct, 15.0);
        assert_eq!(p.terms[0].feature, "int");
        assert_eq!(p.terms[0].delta_ns, 500.0);
        // float: 500 of the 2000 ops carries no price.
        assert_eq!(p.unpriced, vec![("float".to_string(), 0.25)]);
    }

    #[test]
    fn a_micro_change_is_scaled_by_the_app_share() {
        // A 100% slower int price moves an app that is 10% int ops by far less than 100%.
        let a = prices("a", &[("int", 1.0), ("load", 1.0)]);
        let b = prices("b", &[("int", 2.0), ("load", 1.0)]);
        let x: BTreeMap<String, f64> = [("int", 10.0), ("load", 90.0)]
            .iter()
            .map(|(k, v)| (k.to_string(), *v))
            .collect();
        let p = project(&a, &b, &x, 100.0);
        assert_eq!(p.predicted_pct, 10.0);
    }

    #[test]
    fn coverage_names_the_classes_without_time() {
        let a = prices("a", &[("int", 1.0), ("load", 0.0), ("mispredict", 10.0)]);
        let x: BTreeMap<String, f64> = [
            ("int", 60.0),
            ("load", 30.0),
            ("float", 10.0),
            ("mispredict", 2.0),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), *v))
        .collect();
        let c = coverage(&a, &x, 160.0);
        assert_eq!(c.reproduced_ns, 80.0);
        assert_eq!(c.share, 0.5);
        assert_eq!(
            c.unpriced,
            vec![("load".to_string(), 0.3), ("float".to_string(), 0.1)]
        );
        assert_eq!(c.gap_ns_per_op, 0.8);
    }
}
