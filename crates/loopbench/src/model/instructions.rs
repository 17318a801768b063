//! Time from the engine's own instructions: `model --instructions-from`.
//!
//! The op-class fit prices what the wasm does; this prices what the engine
//! does with it. Each shape's exact host instructions per iteration come
//! from a callgrind session of the same engines (they do not move with the
//! layout or the machine's load), its mispredictions from the counting run,
//! and the time from the timed session:
//!
//! `ns/iter = ns_per_instruction * instructions + ns_per_mispredict * mispredicts`
//!
//! Where this reproduces a shape that the op-class fit misses, the engine
//! executes a different number of instructions per op there (fusion,
//! superinstructions) and the op classes cannot see it; where both miss,
//! the time is the CPU's (mispredictions the simulated predictor does not
//! see, stalls).

use super::{
    epochs_of, feature_index, features, interval, loo_median_abs, mean_of_epoch_medians,
    missing_counter, nnls, replicates, twin_difference, Anchor, Kind, ANCHORS, BOOTSTRAP,
};
use crate::results::model::{EngineModel, InstructionModel, Residual};
use crate::results::Session;

/// The counter the instructions are read from.
pub const COUNTER: &str = crate::measure::callgrind::NAME;

/// Why bulk-memory shapes are outside this fit.
const BULK: &str = "bulk memory: the host's memcpy/memset move many bytes per instruction (a `rep movs` counts once), so their instructions do not measure their work";

/// One shape of one arm: instructions and mispredictions per iteration,
/// the time and its bootstrap replicates.
struct Row<'a> {
    shape: &'a str,
    kind: Kind,
    instructions: f64,
    mispredicts: f64,
    measured: f64,
    replicates: Vec<f64>,
}

/// Add `from_instructions` to every model whose arm the instruction session
/// measured. An instruction session without the counter is an error that
/// says how to make one.
pub fn add(report: &Session, ir: &Session, models: &mut [EngineModel]) -> Result<(), String> {
    if let Some(what) = missing_counter(ir, COUNTER) {
        return Err(format!("the instruction session has no `{COUNTER}` {what}"));
    }
    for m in models.iter_mut() {
        m.from_instructions = arm(report, ir, &m.arm);
    }
    Ok(())
}

fn arm(report: &Session, ir: &Session, arm: &str) -> Option<InstructionModel> {
    let m = feature_index("mispredict")?;
    let bulk = [feature_index("bulk_byte")?, feature_index("fill_byte")?];
    let rows: Vec<Row> = report
        .results
        .iter()
        .filter_map(|r| {
            let epochs = epochs_of(r, arm, None)?;
            let counted = ir.results.iter().find(|i| i.shape == r.shape)?;
            let instructions = mean_of_epoch_medians(&epochs_of(counted, arm, Some(COUNTER))?);
            let x = features(r);
            let kind = match &x {
                Some(x) if bulk.iter().any(|&j| x[j] > 0.0) => Kind::NotFitted(BULK),
                _ => Kind::of(&r.shape),
            };
            Some(Row {
                shape: r.shape.as_str(),
                kind,
                instructions,
                mispredicts: x.map_or(0.0, |x| x[m]),
                measured: mean_of_epoch_medians(&epochs),
                replicates: replicates(&r.shape, arm, &epochs),
            })
        })
        .collect();
    let fitted: Vec<bool> = rows.iter().map(|r| r.kind == Kind::Fit).collect();
    if !fitted.iter().any(|f| *f) {
        return None;
    }
    let y: Vec<f64> = rows.iter().map(|r| r.measured).collect();
    let (price, twins) = fit(&rows, &y, &fitted);
    let boots: Vec<[f64; 2]> = (0..BOOTSTRAP)
        .map(|k| {
            let yk: Vec<f64> = rows.iter().map(|r| r.replicates[k]).collect();
            fit(&rows, &yk, &fitted).0
        })
        .collect();
    let residuals: Vec<Residual> = rows
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let reproduced = predict(r, price);
            Residual {
                shape: r.shape.to_string(),
                measured_ns: r.measured,
                reproduced_ns: reproduced,
                residual_pct: (reproduced - r.measured) / r.measured * 100.0,
                ci_pct: Some(interval(
                    boots
                        .iter()
                        .zip(0..)
                        .map(|(p, k)| (predict(r, *p) - r.replicates[k]) / r.replicates[k] * 100.0)
                        .collect(),
                )),
                loo_pct: fitted[i].then(|| {
                    let mut used = fitted.clone();
                    used[i] = false;
                    (predict(r, fit(&rows, &y, &used).0) - r.measured) / r.measured * 100.0
                }),
                kind: r.kind.name().to_string(),
                note: r.kind.note(),
            }
        })
        .collect();
    let loo_median_abs_pct = loo_median_abs(&residuals);
    Some(InstructionModel {
        counter: COUNTER.to_string(),
        ns_per_instruction: price[0],
        ns_per_instruction_ci: interval(boots.iter().map(|p| p[0]).collect()),
        ns_per_mispredict: price[1],
        ns_per_mispredict_ci: interval(boots.iter().map(|p| p[1]).collect()),
        mispredict_from_pair: twins.map(|t| format!("({} - {}) / extra mispredicts", t.a, t.b)),
        residuals,
        loo_median_abs_pct,
    })
}

fn predict(r: &Row, price: [f64; 2]) -> f64 {
    time(price, r.instructions, r.mispredicts)
}

/// The time `[ns per instruction, ns per misprediction]` gives a program
/// (a shape's iteration or an app's rep) that executes these.
pub fn time(price: [f64; 2], instructions: f64, mispredicts: f64) -> f64 {
    price[0] * instructions + price[1] * mispredicts
}

/// `[ns per instruction, ns per misprediction]` over the rows in `used`,
/// weighted by 1/time (relative error, as the op-class fit). The
/// misprediction is priced by the op-class fit's twins when both are used
/// and execute the same instructions (the fit would trade it against the
/// instructions otherwise); the anchor used, if any, comes back with it.
fn fit(rows: &[Row], y: &[f64], used: &[bool]) -> ([f64; 2], Option<&'static Anchor>) {
    let find = |name: &str| (0..rows.len()).find(|&i| used[i] && rows[i].shape == name);
    let x = |i: usize| [rows[i].instructions, rows[i].mispredicts];
    let twins = ANCHORS
        .iter()
        .find(|t| t.feature == "mispredict")
        .and_then(|t| {
            let (a, b) = (find(t.a)?, find(t.b)?);
            let dx = twin_difference(&x(a), &x(b), 1, &[])?;
            Some((t, ((y[a] - y[b]) / dx).max(0.0)))
        });
    let picked = || (0..rows.len()).filter(|&i| used[i]);
    match twins {
        Some((t, pm)) => {
            let a: Vec<Vec<f64>> = picked()
                .map(|i| vec![rows[i].instructions / y[i]])
                .collect();
            let b: Vec<f64> = picked()
                .map(|i| (y[i] - pm * rows[i].mispredicts) / y[i])
                .collect();
            ([nnls(&a, &b)[0], pm], Some(t))
        }
        None => {
            let a: Vec<Vec<f64>> = picked()
                .map(|i| x(i).iter().map(|v| v / y[i]).collect())
                .collect();
            let b: Vec<f64> = picked().map(|_| 1.0).collect();
            let p = nnls(&a, &b);
            ([p[0], p[1]], None)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(
        shape: &'static str,
        instructions: f64,
        mispredicts: f64,
        truth: [f64; 2],
    ) -> Row<'static> {
        let y = truth[0] * instructions + truth[1] * mispredicts;
        Row {
            shape,
            kind: Kind::of(shape),
            instructions,
            mispredicts,
            measured: y,
            replicates: vec![y; BOOTSTRAP],
        }
    }

    #[test]
    fn the_twins_price_a_misprediction_and_the_rest_prices_an_instruction() {
        let truth = [0.1, 6.0];
        let rows = vec![
            row("branch_periodic", 330.0, 0.0, truth),
            row("branch_random", 330.0, 1.75, truth),
            row("add_run", 74.0, 0.0, truth),
            row("random_ops", 2822.0, 0.0, truth),
        ];
        let y: Vec<f64> = rows.iter().map(|r| r.measured).collect();
        let fitted: Vec<bool> = rows.iter().map(|r| r.kind == Kind::Fit).collect();
        let (p, twins) = fit(&rows, &y, &fitted);
        assert!(twins.is_some());
        assert!((p[1] - 6.0).abs() < 1e-9, "{p:?}");
        assert!((p[0] - 0.1).abs() < 1e-9, "{p:?}");
        // The held-out shape is predicted, exactly on noiseless data.
        assert!((predict(&rows[3], p) - y[3]).abs() < 1e-6);
    }

    #[test]
    fn twins_that_execute_different_instructions_are_not_an_anchor() {
        let truth = [0.1, 6.0];
        let rows = vec![
            row("branch_periodic", 330.0, 0.0, truth),
            row("branch_random", 360.0, 1.75, truth),
            row("add_run", 74.0, 0.0, truth),
        ];
        let y: Vec<f64> = rows.iter().map(|r| r.measured).collect();
        let (p, twins) = fit(&rows, &y, &[true; 3]);
        assert!(twins.is_none());
        // Still recovered, by the fit over both columns.
        assert!(
            (p[0] - 0.1).abs() < 1e-6 && (p[1] - 6.0).abs() < 1e-6,
            "{p:?}"
        );
    }
}
