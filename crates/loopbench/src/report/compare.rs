//! `loopbench compare` in the terminal: the warnings first (they decide
//! how much the numbers mean), then one row per shape and arm, with what
//! makes its interval true and its three-way outcome.

use super::markup::{Column, Markup, Text};
use crate::results::compare::SessionComparison;
use crate::stats::outcome::Outcome;
use crate::stats::Verdict;
use crate::units::{interval, significant};
use std::fmt::Write;

/// The verdict of a between-session change, in words (files written
/// before three-way outcomes).
pub fn verdict_words(v: Verdict) -> &'static str {
    match v {
        Verdict::Faster => "faster",
        Verdict::Slower => "slower",
        Verdict::WithinNoise => "no change",
        Verdict::TooFewPairs => "too few values",
    }
}

/// The count of rows per outcome, in one line.
pub fn outcomes_line(c: &SessionComparison) -> String {
    format!(
        "outcomes: {} changed, {} unchanged, {} unsure (of {} rows; precision ±{}%)",
        c.count(Outcome::Changed),
        c.count(Outcome::Unchanged),
        c.count(Outcome::Unsure),
        c.rows.len(),
        c.precision_pct.unwrap_or(0.5)
    )
}

pub fn render(c: &SessionComparison) -> String {
    let mut out = String::new();
    let id = |r: &crate::results::compare::SessionRef| {
        r.id.as_ref().map(|i| format!(" [{i}]")).unwrap_or_default()
    };
    if let Some(g) = &c.gate {
        out.push_str(&super::gate_text(g));
    }
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
    if let Some(r) = &c.reference {
        let _ = writeln!(
            out,
            "anchored: every arm as a ratio to {r}, measured in both"
        );
    }
    for w in &c.warnings {
        let _ = writeln!(out, "warning: {w}");
    }
    let _ = writeln!(out);
    let (columns, rows) = table(c, true);
    out.push_str(&Text.table(&columns, &rows));
    for u in &c.unmatched {
        let _ = writeln!(out, "not compared: {u}");
    }
    for line in notes(c) {
        let _ = writeln!(out, "{line}");
    }
    for line in calibration_lines(c) {
        let _ = writeln!(out, "{line}");
    }
    let _ = writeln!(out, "{}", outcomes_line(c));
    let _ = writeln!(out, "method: {}", c.method);
    for line in answer_lines(c) {
        let _ = writeln!(out, "{line}");
    }
    out
}

/// The rows' reasons, once each, numbered as the rows cite them (`[1]`).
fn reasons(c: &SessionComparison) -> Vec<&str> {
    crate::results::answer::distinct(c.rows.iter().filter_map(|r| r.reason.as_deref()))
}

/// The notes the rows cite: `[k] reason`, for every format.
pub fn notes(c: &SessionComparison) -> Vec<String> {
    reasons(c)
        .iter()
        .enumerate()
        .map(|(k, r)| format!("[{}] {r}", k + 1))
        .collect()
}

/// What the comparison answers, in its last lines: changed rows are their
/// own answer; "no change" only when every row is unchanged; with every
/// row unsure, "no answer yet" and what to run for one.
pub fn answer_lines(c: &SessionComparison) -> Vec<String> {
    let (changed, unchanged, unsure) = (
        c.count(Outcome::Changed),
        c.count(Outcome::Unchanged),
        c.count(Outcome::Unsure),
    );
    if c.rows.is_empty() || changed > 0 {
        return Vec::new();
    }
    if unsure == 0 {
        return vec![format!(
            "no change: every row unchanged inside ±{}%",
            c.precision_pct.unwrap_or(0.5)
        )];
    }
    if unchanged > 0 {
        return vec![format!(
            "no change found: {unchanged} rows unchanged, {unsure} unsure"
        )];
    }
    let mut lines = vec![format!(
        "no answer yet: every row is unsure{}",
        if c.to_answer.is_empty() {
            ""
        } else {
            "; to get one:"
        }
    )];
    lines.extend(c.to_answer.iter().map(|w| format!("  {w}")));
    lines
}

/// What widened the intervals across sessions: one line per calibration
/// the rows used.
pub fn calibration_lines(c: &SessionComparison) -> Vec<String> {
    let mut seen: Vec<&crate::stats::sessions::Calibration> = Vec::new();
    for r in &c.rows {
        if let Some(k) = &r.calibration {
            if !seen.contains(&k) {
                seen.push(k);
            }
        }
    }
    seen.iter()
        .map(|k| {
            format!(
                "calibrated: standard errors widened ×{:.2}, the largest ratio of the tail \
                 quantiles (from {:.0}% to {:.1}%) of the z-scores of this machine's {} \
                 pairs of same-build sessions ({} series) to the half-normal's",
                k.factor,
                c.confidence * 100.0,
                k.tail_level * 100.0,
                k.pairs,
                k.series
            )
        })
        .collect()
}

/// The comparison as one table, for every format: a row per shape and arm.
/// The widths pad the terminal's columns only; `units` adds the column of
/// each interval's units (pairs of epochs or rounds), which Markdown leaves
/// out to stay narrow.
pub fn table(c: &SessionComparison, units: bool) -> (Vec<Column>, Vec<Vec<String>>) {
    let precision = c.precision_pct.unwrap_or(0.5);
    let mut columns = vec![
        Column::left("shape", 20),
        Column::left("arm", 18),
        Column::right("A ns/iter", 11),
        Column::right("B ns/iter", 11),
        Column::left(format!("B vs A [{:.0}% CI]", c.confidence * 100.0), 30).gap(2),
        Column::left("across sessions", 30),
        Column::right("units", 9),
        Column::left("outcome", 0).gap(2),
    ];
    let cited = reasons(c);
    let mut rows: Vec<Vec<String>> = c
        .rows
        .iter()
        .map(|r| {
            let note = match r.reason.as_deref() {
                Some(why) => cited
                    .iter()
                    .position(|c| *c == why)
                    .map(|k| format!(" [{}]", k + 1))
                    .unwrap_or_default(),
                None => String::new(),
            };
            vec![
                r.shape.clone(),
                r.arm.clone(),
                significant(r.a_ns_per_iter),
                significant(r.b_ns_per_iter),
                interval(r.median_pct, r.ci_pct),
                r.basis_text(),
                format!("{}+{} {}", r.a_units, r.b_units, r.units),
                match r.outcome {
                    Some(_) => r.verdict_text(precision),
                    None => verdict_words(r.verdict).to_string(),
                } + &note,
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
