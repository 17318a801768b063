//! `loopbench compare` in the terminal: the warnings first (they decide
//! how much the numbers mean), then one row per shape and arm.

use crate::results::compare::SessionComparison;
use crate::stats::Verdict;
use std::fmt::Write;

/// The verdict of a between-session change, in words.
pub fn verdict_words(v: Verdict) -> &'static str {
    match v {
        Verdict::Faster => "faster",
        Verdict::Slower => "slower",
        Verdict::WithinNoise => "no change",
        Verdict::TooFewPairs => "too few values",
    }
}

pub fn render(c: &SessionComparison) -> String {
    let mut out = String::new();
    let id = |r: &crate::results::compare::SessionRef| {
        r.id.as_ref().map(|i| format!(" [{i}]")).unwrap_or_default()
    };
    let _ = writeln!(
        out,
        "A: {}{}  ({})",
        c.a.label,
        id(&c.a),
        c.a.machine.fingerprint()
    );
    let _ = writeln!(
        out,
        "B: {}{}  ({})",
        c.b.label,
        id(&c.b),
        c.b.machine.fingerprint()
    );
    for w in &c.warnings {
        let _ = writeln!(out, "warning: {w}");
    }
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "{:<20} {:<18} {:>11} {:>11}  {:<30} {:>9}  verdict",
        "shape",
        "arm",
        "A ns/iter",
        "B ns/iter",
        format!("B vs A [{:.0}% CI]", c.confidence * 100.0),
        "units"
    );
    for r in &c.rows {
        let _ = writeln!(
            out,
            "{:<20} {:<18} {:>11.3} {:>11.3}  {:<30} {:>9}  {}",
            r.shape,
            r.arm,
            r.a_ns_per_iter,
            r.b_ns_per_iter,
            format!(
                "{:+.1}% [{:+.1}%, {:+.1}%]",
                r.median_pct, r.ci_pct[0], r.ci_pct[1]
            ),
            format!("{}+{} {}", r.a_units, r.b_units, r.units),
            verdict_words(r.verdict)
        );
    }
    for u in &c.unmatched {
        let _ = writeln!(out, "not compared: {u}");
    }
    let _ = writeln!(out, "method: {}", c.method);
    if c.no_change() {
        let _ = writeln!(out, "no change: every interval holds zero");
    }
    out
}
