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

use super::profile::{count_app, trace_app};
use super::AppShape;
use crate::error::Error;
use crate::model::instructions::COUNTER as INSTRUCTIONS;
use crate::model::EngineModel;
use crate::results::app::is_class;
use crate::results::app::{AppProjected, FromInstructions, PairProjection};
pub use crate::results::app::{Coverage, Prices, Projection, Term};
use crate::results::{Session, ShapeResult};
use loopbench_count::{Counts, OpClass};
use std::collections::BTreeMap;

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

/// What `p` reproduces of `measured_ns`, the app's measured time per rep
/// (see [`Coverage`]).
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

/// An arm's median per iteration (per app step): the time, or `counter`.
pub fn median_of(r: &ShapeResult, arm: &str, counter: Option<&str>) -> Option<f64> {
    let a = r.arms.iter().find(|a| a.arm == arm)?;
    match counter {
        None => a.ns_per_iter.as_ref().map(|t| t.median),
        Some(c) => a.counters.values.get(c).map(|v| v.per_iter.median),
    }
}

/// What a projection is made onto: an app's exact counts for one rep and,
/// where its branches were traced, the simulated predictor over that rep.
#[derive(Clone, Debug)]
pub struct Subject {
    pub name: String,
    /// One rep is `run(steps)`; a WASI command's is one run, 1.
    pub steps: u64,
    pub counts: Counts,
    /// `None` for a WASI command: its branches are not traced, so its
    /// projection has no misprediction term.
    pub predictor: Option<loopbench_count::PredictorStats>,
}

impl Subject {
    /// A recipe, counted and traced over one rep (untimed).
    pub fn recipe(app: &AppShape) -> Result<Subject, Error> {
        let spec = app.spec;
        let (counts, _) = count_app(app, spec.steps)?;
        Ok(Subject {
            name: spec.name.to_string(),
            steps: spec.steps,
            counts,
            predictor: Some(trace_app(app, spec.steps)?),
        })
    }

    /// A WASI command, as its counting run counted its timed region.
    pub fn workload(w: &super::Workload) -> Subject {
        Subject {
            name: w.name().to_string(),
            steps: 1,
            counts: w.counts().clone(),
            predictor: None,
        }
    }
}

/// One app measured in `r` (the app session's result for it): what each
/// arm's prices reproduce of its measurement, optionally the time its host
/// instructions reproduce (the instruction session of the apps, and every
/// arm's model with its instruction fit), and for every pair of arms the
/// projected change beside the measured one. `prices` are in arm order,
/// the baseline first; `counter` is what was priced (`None`: time).
pub fn project_app(
    r: &ShapeResult,
    subject: &Subject,
    prices: &[Prices],
    counter: Option<&str>,
    by_instructions: Option<(&Session, &[&EngineModel])>,
) -> Result<AppProjected, Error> {
    let x = app_features(&subject.counts, subject.predictor.as_ref());
    let per_rep = |per_step: f64| per_step * subject.steps as f64;
    let measured: Vec<Option<f64>> = prices
        .iter()
        .map(|p| median_of(r, &p.arm, counter).map(per_rep))
        .collect();
    let coverage = prices
        .iter()
        .zip(&measured)
        .filter_map(|(p, m)| m.map(|m| self::coverage(p, &x, m)))
        .collect();
    let mut from_instructions = Vec::new();
    // The instructions' reproduction prices mispredictions too: it needs
    // the trace.
    if let (Some((apps_ir, models)), Some(predictor)) = (by_instructions, &subject.predictor) {
        let counted = apps_ir.results.iter().find(|i| i.shape == r.shape);
        for ((p, m), model) in prices.iter().zip(&measured).zip(models) {
            let fit = model.from_instructions.as_ref();
            let ir = counted.and_then(|c| median_of(c, &p.arm, Some(INSTRUCTIONS)));
            let (Some(m), Some(fit), Some(ir)) = (m, fit, ir) else {
                continue;
            };
            let instructions = per_rep(ir);
            let reproduced = crate::model::instructions::time(
                [fit.ns_per_instruction, fit.ns_per_mispredict],
                instructions,
                predictor.mispredicts as f64,
            );
            from_instructions.push(FromInstructions {
                arm: p.arm.clone(),
                measured_ns: *m,
                instructions,
                ns_per_instruction: fit.ns_per_instruction,
                mispredicts: predictor.mispredicts,
                ns_per_mispredict: fit.ns_per_mispredict,
                reproduced_ns: reproduced,
                share: reproduced / m,
            });
        }
    }
    let mut pairs = Vec::new();
    for i in 0..prices.len() {
        for j in i + 1..prices.len() {
            let Some(ma) = measured[i] else { continue };
            let (a, b) = (&prices[i], &prices[j]);
            let p = project(a, b, &x, ma);
            // Against the baseline, the session's paired comparison (with
            // its interval); between two candidates, the ratio of medians.
            let measured_pct = if i == 0 && counter.is_none() {
                r.comparisons
                    .iter()
                    .find(|c| c.arm == b.arm)
                    .map(|c| (c.median_pct, Some(c.ci_pct)))
            } else {
                measured[j].map(|mb| (100.0 * (mb / ma - 1.0), None))
            };
            pairs.push(PairProjection {
                a: a.arm.clone(),
                b: b.arm.clone(),
                projected_pct: p.predicted_pct,
                projected_ci_pct: p.predicted_ci_pct,
                measured_pct: measured_pct.map(|m| m.0),
                measured_ci_pct: measured_pct.and_then(|m| m.1),
                projection: p,
            });
        }
    }
    Ok(AppProjected {
        app: subject.name.clone(),
        steps: subject.steps,
        features: x,
        predictor: subject.predictor,
        coverage,
        from_instructions,
        pairs,
    })
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
