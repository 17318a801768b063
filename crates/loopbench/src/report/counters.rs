//! The counters in the terminal report: a block under each shape with one
//! column per counter that ran (per op where the shape's ops are known, else
//! per iteration), each candidate's paired change and the null floor per
//! counter; after the table, each counter's availability and a one-line
//! summary per candidate in the style engine developers quote in a pull
//! request ("load_stream -3.2% instructions, +1.9% TSC cycles; ...").

use super::markup::{Column, Markup, Text};
use crate::results::CounterComparison;
use crate::results::{Role, Session, ShapeResult};
use crate::session::counters::{metric, METRICS};
use crate::stats::Verdict;
use crate::units::{percent, significant as num};
use std::fmt::Write;

/// Metrics that have a value for at least one arm of this shape, in
/// display order.
fn present(r: &ShapeResult) -> Vec<&'static str> {
    METRICS
        .iter()
        .map(|m| m.key)
        .filter(|k| r.arms.iter().any(|a| a.counters.values.contains_key(*k)))
        .collect()
}

/// A change in percent; small non-zero changes (exact counts) keep enough
/// digits not to read as zero.
fn pct(x: f64) -> String {
    if x != 0.0 && x.abs() < 0.05 {
        format!("{x:+.3}%")
    } else {
        percent(x)
    }
}

fn change(c: &CounterComparison) -> String {
    let mark = if c.verdict == Verdict::WithinNoise {
        "~"
    } else {
        ""
    };
    format!("({mark}{})", pct(c.median_pct))
}

/// The counters block of one shape; nothing when no counter ran.
pub fn render_shape(out: &mut String, r: &ShapeResult) {
    let keys = present(r);
    if keys.is_empty() {
        return;
    }
    let per_op = r
        .arms
        .iter()
        .flat_map(|a| a.counters.values.values())
        .all(|s| s.per_op.is_some());
    let ipc = r.arms.iter().any(|a| a.counters.ipc.is_some());
    // The table's first two columns (shape, arm), then one per counter.
    let mut columns = vec![
        Column::left("", 20),
        Column::left(
            if per_op {
                "counters, per op"
            } else {
                "counters, per iter"
            },
            18,
        ),
    ];
    for k in &keys {
        let col = metric(k).map(|m| m.column).unwrap_or(k);
        let col = if per_op {
            col.to_string()
        } else {
            col.replace("/op", "/iter")
        };
        columns.push(Column::right(col, 22));
    }
    if ipc {
        columns.push(Column::right("IPC", 6));
    }
    // Right-aligned last columns pad their cells; the block's lines do not
    // end in spaces.
    let line = |out: &mut String, text: String| {
        let _ = writeln!(out, "{}", text.trim_end());
    };
    line(out, Text.table_start(&columns));
    for a in r.arms.iter().filter(|a| !a.counters.is_empty()) {
        let mut cells = vec![String::new(), a.arm.clone()];
        for k in &keys {
            cells.push(match a.counters.values.get(*k) {
                None => "-".to_string(),
                Some(s) => {
                    let v = if per_op {
                        s.per_op.map(|p| p.median).unwrap_or(f64::NAN)
                    } else {
                        s.per_iter.median
                    };
                    match r
                        .counter_comparisons
                        .iter()
                        .find(|c| c.arm == a.arm && c.counter == *k)
                    {
                        Some(c) if a.role != Role::Baseline => format!("{} {}", num(v), change(c)),
                        _ => num(v),
                    }
                }
            });
        }
        if ipc {
            cells.push(
                a.counters
                    .ipc
                    .map(|x| format!("{x:.2}"))
                    .unwrap_or_else(|| "-".into()),
            );
        }
        let cells: Vec<&str> = cells.iter().map(String::as_str).collect();
        line(out, Text.table_row(&columns, &cells));
    }
    if !r.counter_null_control.is_empty() {
        let floors: Vec<String> = keys
            .iter()
            .filter_map(|k| {
                let n = r.counter_null_control.get(*k)?;
                let floor = n.ci_pct[0].abs().max(n.ci_pct[1].abs());
                Some(format!(
                    "{} ±{floor:.1}%",
                    metric(k).map(|m| m.word).unwrap_or(k)
                ))
            })
            .collect();
        let _ = writeln!(
            out,
            "{:<20} counter null floor: {} (~ marks changes within it)",
            "",
            floors.join(", ")
        );
    }
    let multiplexed: Vec<String> = r
        .arms
        .iter()
        .filter(|a| a.counters.multiplexed())
        .map(|a| {
            format!(
                "{} {:.0}%",
                a.arm,
                a.counters.perf_running_fraction_min.unwrap_or(1.0) * 100.0
            )
        })
        .collect();
    if !multiplexed.is_empty() {
        let _ = writeln!(
            out,
            "{:<20} perf events multiplexed (least time on the PMU: {}): values are scaled estimates",
            "",
            multiplexed.join(", ")
        );
    }
}

/// Counter availability and the one-line summaries, after the table.
pub fn render_footer(out: &mut String, report: &Session) {
    if report.counters.is_empty() {
        return;
    }
    for s in &report.counters {
        match (&s.detail, &s.reason) {
            (Some(d), _) if s.available => {
                let _ = writeln!(out, "counter {}: {d}", s.counter);
            }
            (_, Some(r)) => {
                let _ = writeln!(out, "counter {}: unavailable: {r}", s.counter);
            }
            _ => {}
        }
    }
    if report
        .counters
        .iter()
        .any(|s| s.available && s.counter == "callgrind")
    {
        let _ = writeln!(
            out,
            "callgrind: the session ran under valgrind, so ns columns describe the simulator; Ir counts are exact"
        );
    }
    for line in summaries(report) {
        let _ = writeln!(out, "{line}");
    }
    for r in &report.results {
        for c in &r.comparisons {
            let Some(check) = crate::session::counters::sign_check(r, &c.arm) else {
                continue;
            };
            if check.agrees == Some(false) {
                let _ = writeln!(
                    out,
                    "sign disagreement on {} for {}: time {} but {} {}: an alignment or prediction effect of the change, not its own cost",
                    r.shape,
                    c.arm,
                    pct(check.time_pct),
                    check.counter,
                    pct(check.instructions_pct)
                );
            }
        }
    }
}

/// One line per candidate arm: per counter, its change in % for each shape.
pub fn summaries(report: &Session) -> Vec<String> {
    let mut candidates: Vec<(String, String)> = Vec::new();
    for r in &report.results {
        for c in &r.counter_comparisons {
            let is_candidate = r
                .arms
                .iter()
                .any(|a| a.arm == c.arm && a.role == Role::Candidate);
            if is_candidate && !candidates.iter().any(|(a, _)| *a == c.arm) {
                candidates.push((c.arm.clone(), c.vs.clone()));
            }
        }
    }
    let mut lines = Vec::new();
    for (arm, vs) in candidates {
        let mut parts = Vec::new();
        for r in &report.results {
            let cells: Vec<String> = METRICS
                .iter()
                .filter_map(|m| {
                    let c = r
                        .counter_comparisons
                        .iter()
                        .find(|c| c.arm == arm && c.counter == m.key)?;
                    let noise = if c.verdict == Verdict::WithinNoise {
                        " (within noise)"
                    } else {
                        ""
                    };
                    Some(format!("{} {}{noise}", pct(c.median_pct), m.word))
                })
                .collect();
            if !cells.is_empty() {
                parts.push(format!("{} {}", r.shape, cells.join(", ")));
            }
        }
        if !parts.is_empty() {
            lines.push(format!("{arm} against {vs}, per op: {}.", parts.join("; ")));
        }
    }
    lines
}
