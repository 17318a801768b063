//! `loopbench compare` in the terminal: the warnings first (they decide
//! how much the numbers mean), then one row per shape and arm.

use super::markup::{Column, Markup, Text};
use crate::results::compare::SessionComparison;
use crate::stats::Verdict;
use crate::units::{interval, significant};
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
    let (columns, rows) = table(c, true);
    out.push_str(&Text.table(&columns, &rows));
    for u in &c.unmatched {
        let _ = writeln!(out, "not compared: {u}");
    }
    let _ = writeln!(out, "method: {}", c.method);
    if c.no_change() {
        let _ = writeln!(out, "no change: every interval holds zero");
    }
    out
}

/// The comparison as one table, for every format: a row per shape and arm.
/// The widths pad the terminal's columns only; `units` adds the column of
/// each interval's units (pairs of epochs or rounds), which Markdown leaves
/// out to stay narrow.
pub fn table(c: &SessionComparison, units: bool) -> (Vec<Column>, Vec<Vec<String>>) {
    let mut columns = vec![
        Column::left("shape", 20),
        Column::left("arm", 18),
        Column::right("A ns/iter", 11),
        Column::right("B ns/iter", 11),
        Column::left(format!("B vs A [{:.0}% CI]", c.confidence * 100.0), 30).gap(2),
        Column::right("units", 9),
        Column::left("verdict", 0).gap(2),
    ];
    let mut rows: Vec<Vec<String>> = c
        .rows
        .iter()
        .map(|r| {
            vec![
                r.shape.clone(),
                r.arm.clone(),
                significant(r.a_ns_per_iter),
                significant(r.b_ns_per_iter),
                interval(r.median_pct, r.ci_pct),
                format!("{}+{} {}", r.a_units, r.b_units, r.units),
                verdict_words(r.verdict).to_string(),
            ]
        })
        .collect();
    if !units {
        let at = columns.iter().position(|col| col.title == "units");
        if let Some(at) = at {
            columns.remove(at);
            for r in &mut rows {
                r.remove(at);
            }
        }
    }
    (columns, rows)
}
