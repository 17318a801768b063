//! Apps in the terminal: whole-app A/B and warm mode.

use crate::apps::warm::WarmResult;
use crate::results::ShapeResult;
use crate::stats;
use std::fmt::Write;

pub fn render_app(r: &ShapeResult, steps: u64) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "app {} (run({steps}) per rep; every rep verified)",
        r.shape
    );
    let _ = writeln!(
        out,
        "  {:<16} {:>12} {:>12} {:>6}  ",
        "arm", "median ms", "min ms", "reps"
    );
    for a in &r.arms {
        let t = a
            .ns_per_iter
            .as_ref()
            .map(|t| {
                format!(
                    "{:>12.3} {:>12.3}",
                    t.median * steps as f64 / 1e6,
                    t.min * steps as f64 / 1e6
                )
            })
            .unwrap_or_else(|| format!("{:>12} {:>12}", "-", "-"));
        let note = a
            .skipped
            .clone()
            .or_else(|| a.error.clone())
            .unwrap_or_default();
        let _ = writeln!(out, "  {:<16} {t} {:>6}  {note}", a.arm, a.verified_reps);
    }
    for c in &r.comparisons {
        let _ = writeln!(
            out,
            "  {} vs {}: {:+.1}% [{:+.1}%, {:+.1}%] ({:.0}% CI), {}",
            c.arm,
            c.vs,
            c.median_pct,
            c.ci_pct[0],
            c.ci_pct[1],
            c.confidence * 100.0,
            c.verdict
        );
    }
    match &r.null_control {
        Some(n) => {
            let _ = writeln!(
                out,
                "  null control (second {} instance): {:+.1}% [{:+.1}%, {:+.1}%]",
                r.arms.first().map(|a| a.arm.as_str()).unwrap_or("baseline"),
                n.median_pct,
                n.ci_pct[0],
                n.ci_pct[1]
            );
        }
        None => {
            let _ = writeln!(
                out,
                "  null control: unavailable (the baseline or its copy did not run)"
            );
        }
    }
    out
}

pub fn render_warm(r: &WarmResult, app: &str, after: u64) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "warm mode: shape {} ({} iterations) inside app {app}, {}; a fresh instance per rep",
        r.shape, r.iters, r.engine
    );
    for ((label, s, note), n) in r.arms.iter().zip(&r.instances) {
        let t = if s.is_empty() {
            format!("{:>10} {:>10}", "-", "-")
        } else {
            format!("{:>10.3} {:>10.3}", stats::median(s), stats::min(s))
        };
        let _ = writeln!(
            out,
            "  {label:<24} {t} ns/iter  {} reps, {n} instances  {}",
            s.len(),
            note.clone().unwrap_or_default()
        );
    }
    match (&r.change, &r.verdict) {
        (Some(c), Some(v)) => {
            let _ = writeln!(
                out,
                "  warm({after}) vs cold: {:+.1}% [{:+.1}%, {:+.1}%] ({:.0}% CI), {v}",
                c.median_pct,
                c.ci_pct[0],
                c.ci_pct[1],
                c.confidence * 100.0
            );
        }
        _ => {
            let _ = writeln!(out, "  warm vs cold: unavailable");
        }
    }
    if let Some(n) = &r.null {
        let _ = writeln!(
            out,
            "  null control (second cold instance): {:+.1}% [{:+.1}%, {:+.1}%]",
            n.median_pct, n.ci_pct[0], n.ci_pct[1]
        );
    }
    out
}
