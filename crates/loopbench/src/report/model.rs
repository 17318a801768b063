//! The price table and residuals of `loopbench model`.

use crate::model::{EngineModel, UNEXERCISED};
use std::fmt::Write;

pub fn render(models: &[EngineModel]) -> String {
    let mut out = String::new();
    for m in models {
        let _ = writeln!(
            out,
            "\nprices for {} (ns per unit, 95% bootstrap interval over rounds):",
            m.arm
        );
        if let Some(c) = &m.caveat {
            let _ = writeln!(out, "  caveat: {c}");
        }
        for p in &m.prices {
            if p.identifiable {
                let _ = writeln!(
                    out,
                    "  {:<16} {:>9.3}  [{:.3}, {:.3}]",
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
        let _ = writeln!(out, "  residuals (reproduced - measured):");
        for r in &m.residuals {
            let tag = if r.kind == "held_out" {
                "  <- predicted, not fitted"
            } else {
                ""
            };
            let _ = writeln!(
                out,
                "    {:<20} measured {:>9.2} ns/iter  reproduced {:>9.2}  {:>+7.1}%{tag}",
                r.shape, r.measured_ns, r.reproduced_ns, r.residual_pct
            );
        }
    }
    out
}
