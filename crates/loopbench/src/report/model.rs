//! The price table and residuals of `loopbench model`.

use crate::model::{EngineModel, UNEXERCISED};
use crate::results::model::{InstructionModel, Residual};
use std::fmt::Write;

pub fn render(models: &[EngineModel]) -> String {
    let mut out = String::new();
    for m in models {
        let _ = writeln!(
            out,
            "\nprices for {} ({} per unit, 95% bootstrap interval over epochs and their rounds):",
            m.arm,
            m.unit()
        );
        if let Some(c) = &m.caveat {
            let _ = writeln!(out, "  caveat: {c}");
        }
        for p in &m.prices {
            if p.identifiable {
                let source = match &p.from_pair {
                    Some(pair) => format!("  from the twins {pair}"),
                    None => String::new(),
                };
                let _ = writeln!(
                    out,
                    "  {:<16} {:>9.3}  [{:.3}, {:.3}]{source}",
                    p.feature, p.ns, p.ci[0], p.ci[1]
                );
            } else {
                let _ = writeln!(
                    out,
                    "  {:<16} {:>9}  not identifiable from the shapes that ran",
                    p.feature, "-"
                );
            }
        }
        let _ = writeln!(
            out,
            "  (never exercised by the catalog: {})",
            UNEXERCISED.join(", ")
        );
        let _ = writeln!(out, "  subtraction pairs:");
        for p in &m.pairs {
            let _ = writeln!(
                out,
                "    {:<46} {:>9.3} {:<5} [{:.3}, {:.3}]",
                p.name, p.value, p.unit, p.ci[0], p.ci[1]
            );
        }
        let _ = writeln!(
            out,
            "  residuals (reproduced - measured; leave-one-out: predicted by a fit without the shape):"
        );
        for r in &m.residuals {
            residual(&mut out, r, m.unit());
        }
        if let Some(loo) = m.loo_median_abs_pct {
            let _ = writeln!(
                out,
                "  expected error on an unseen shape: {loo:.1}% (median |leave-one-out error| over the fitted shapes)"
            );
        }
        if let Some(fi) = &m.from_instructions {
            instructions(&mut out, fi);
        }
    }
    out
}

/// The time-from-instructions section of one arm.
fn instructions(out: &mut String, fi: &InstructionModel) {
    let [lo, hi] = fi.ns_per_instruction_ci;
    let [mlo, mhi] = fi.ns_per_mispredict_ci;
    let _ = writeln!(
        out,
        "  time from the engine's instructions ({}):\n    {:.4} ns per instruction [{lo:.4}, {hi:.4}], {:.3} ns per misprediction [{mlo:.3}, {mhi:.3}]{}",
        fi.counter,
        fi.ns_per_instruction,
        fi.ns_per_mispredict,
        fi.mispredict_from_pair
            .as_ref()
            .map(|p| format!(" from the twins {p}"))
            .unwrap_or_default()
    );
    for r in &fi.residuals {
        residual(out, r, "ns");
    }
    if let Some(loo) = fi.loo_median_abs_pct {
        let _ = writeln!(
            out,
            "    expected error on an unseen shape: {loo:.1}% (median |leave-one-out error|)"
        );
    }
}

/// One shape's line: measured, reproduced, residual with its interval, and
/// how it took part in the fit.
fn residual(out: &mut String, r: &Residual, unit: &str) {
    let ci = r
        .ci_pct
        .map(|[lo, hi]| format!("[{lo:+.1}, {hi:+.1}]"))
        .unwrap_or_default();
    let tag = match (r.kind.as_str(), r.loo_pct) {
        ("held_out", _) => "  <- predicted, not fitted".to_string(),
        ("not_fitted", _) => format!(
            "  <- not fitted: {}",
            r.note.as_deref().unwrap_or("outside the model")
        ),
        (_, Some(loo)) => format!("  leave-one-out {loo:+.1}%"),
        _ => "  leave-one-out: the only shape pricing one of its features".to_string(),
    };
    let _ = writeln!(
        out,
        "    {:<20} measured {:>9.2} {unit}/iter  reproduced {:>9.2}  {:>+7.1}% {:<16}{tag}",
        r.shape, r.measured_ns, r.reproduced_ns, r.residual_pct, ci
    );
}
