//! Markdown: a report to paste into a pull request. Per shape a table of
//! each arm's ns/op and its change against the baseline (interval and
//! verdict) with the null floor under it; the counter lines in the style
//! engine developers quote ("tinywasm against wasmi, per op: load_stream
//! -3.2% instructions, ..."); the machine fingerprint in one line; and the
//! exact command that reproduces the session.

use super::markup::{self, Column, Markup};
use super::{Exporter, ReportError};
use crate::results::calibration::Calibration;
use crate::results::compare::SessionComparison;
use crate::results::{Document, Role, Session, ShapeResult};
use crate::units::{interval, percent as pct, significant as num};
use std::fmt::Write;

pub struct Markdown;

impl Exporter for Markdown {
    fn render(&self, doc: &Document) -> Result<Vec<u8>, ReportError> {
        let text = match doc {
            Document::Session(s) => session(s),
            Document::Model(m) => {
                session(&m.session)
                    + "\n"
                    + &MD.code_block("text", &super::model::render(&m.models))
            }
            Document::Calibration(c) => calibration(c),
            Document::Compare(c) => comparison(c),
            // Counts and app documents are tables of fixed-width text.
            Document::Counts(_)
            | Document::AppProfile(_)
            | Document::AppProject(_)
            | Document::AppWarm(_)
            | Document::Noise(_) => MD.code_block(
                "text",
                &String::from_utf8_lossy(&super::table::Table::default().render(doc)?),
            ),
        };
        Ok(text.into_bytes())
    }
}

/// A gate's result, ready for a pull request comment: the summary in bold,
/// then each failing comparison as a bullet.
fn gate(o: &mut String, g: &crate::results::gate::Gate) {
    let _ = writeln!(o, "**{}**\n", cell(&g.summary()));
    for f in &g.failing {
        let _ = writeln!(o, "- {}", cell(f));
    }
    if !g.failing.is_empty() {
        let _ = writeln!(o);
    }
}

/// The Markdown syntax of the shared markup layer.
const MD: markup::Markdown = markup::Markdown;

/// Text from a results value (an arm, a version, an error, a warning) made
/// safe for Markdown.
fn cell(s: &str) -> String {
    MD.escape(s)
}

/// The whole session.
pub fn session(s: &Session) -> String {
    let mut o = String::new();
    let shapes: Vec<&str> = s.results.iter().map(|r| r.shape.as_str()).collect();
    o.push_str(&MD.heading(3, &format!("loopbench: {}", shapes.join(", "))));
    if let Some(g) = &s.gate {
        gate(&mut o, g);
    }
    let level = s.session.confidence_level * 100.0;
    let epochs = s.epochs.len().max(1);
    let _ = writeln!(
        o,
        "Baseline **{}**; null control {} (a second, separately started copy of the baseline). \
Up to {epochs} epochs (fresh processes) x {} rounds, {}; intervals are {level:.0}% and include the spread between processes.\n",
        cell(&s.session.baseline),
        cell(&s.session.null_arm),
        s.session.rounds,
        s.session.metric.name(),
    );
    if let Some(note) = s.session.schedule.and_then(|d| d.note()) {
        let _ = writeln!(o, "{}.\n", cell(&note));
    }
    let _ = writeln!(o, "Builds: {}.\n", cell(&super::table::builds_line(s)));
    for r in &s.results {
        shape(&mut o, r, level);
    }
    let suite = super::app::suite(&s.results);
    if s.results.iter().any(|r| r.app_steps.is_some()) && !suite.rows.is_empty() {
        let _ = writeln!(
            o,
            "{}",
            MD.code_block("text", &super::app::render_suite(&suite))
        );
    }
    let lines = super::counters::summaries(s);
    if !lines.is_empty() {
        let _ = writeln!(o, "Counters:\n");
        for l in lines {
            let _ = writeln!(o, "- {}", cell(&l));
        }
        let _ = writeln!(o);
    }
    let _ = writeln!(o, "Machine: {}", cell(&s.machine.fingerprint()));
    let versions: Vec<String> = s
        .session
        .engines
        .iter()
        .filter(|e| !crate::results::is_null_label(&e.arm))
        .map(|e| match &e.git {
            Some(g) => format!("{} (git {g})", e.version),
            None => e.version.clone(),
        })
        .collect();
    let _ = writeln!(
        o,
        "\nEngines: {}; build {}.",
        cell(&versions.join(", ")),
        cell(&s.session.build_profile)
    );
    if let Some(id) = &s.id {
        let _ = writeln!(o, "\nSession {}.", MD.code_span(id));
    }
    if !s.complete {
        let _ = writeln!(
            o,
            "\n**Incomplete session** (interrupted or stopped early)."
        );
    }
    for e in &s.errors {
        let _ = writeln!(o, "\nError: {}", cell(e));
    }
    match s.command_line() {
        Some(cmd) => {
            let _ = writeln!(o, "\nReproduce:\n\n{}", MD.code_block("sh", &cmd));
        }
        None => {
            let _ = writeln!(o, "\n(The command line was not recorded in this file.)");
        }
    }
    o
}

fn shape(o: &mut String, r: &ShapeResult, level: f64) {
    let ops = r.counts_per_iter.as_ref().map(|c| c.ops);
    if r.arms.iter().all(|a| a.ns_per_iter.is_none()) {
        // Nothing measured: one line with the reasons, not an empty table.
        let mut reasons: Vec<String> = r
            .arms
            .iter()
            .filter(|a| !a.role.is_null())
            .filter_map(|a| a.skipped.clone().or_else(|| a.error.clone()))
            .map(|r| r.trim_start_matches("skipped: ").to_string())
            .collect();
        reasons.dedup();
        o.push_str(&MD.heading(4, &r.shape));
        let _ = writeln!(o, "Not measured: {}.\n", cell(&reasons.join("; ")));
        return;
    }
    let ops = ops
        .map(|n| format!(" ({n} wasm ops per iteration)"))
        .unwrap_or_default();
    o.push_str(&MD.heading(4, &format!("{}{ops}", r.shape)));
    let base = r
        .arms
        .iter()
        .find(|a| a.role == Role::Baseline)
        .map(|a| a.arm.as_str())
        .unwrap_or("baseline");
    let columns = [
        Column::left("arm", 0),
        Column::right("ns/op", 0),
        Column::right("ns/iter", 0),
        Column::left(format!("change vs {base} [{level:.0}% CI]"), 0),
        Column::left("verdict", 0),
    ];
    o.push_str(&MD.table_start(&columns));
    for a in r.arms.iter().filter(|a| !a.role.is_null()) {
        let (per_op, per_iter) = match &a.ns_per_iter {
            Some(t) => (
                a.ns_per_op.map(num).unwrap_or_else(|| "-".into()),
                num(t.median),
            ),
            None => ("-".into(), "-".into()),
        };
        let (change, verdict) = match r.comparisons.iter().find(|c| c.arm == a.arm) {
            Some(c) if a.role == Role::Reference => {
                (interval(c.median_pct, c.ci_pct), "reference".into())
            }
            Some(c) => (interval(c.median_pct, c.ci_pct), c.verdict_text()),
            None if a.role == Role::Baseline => (
                "(baseline)".into(),
                a.skipped
                    .clone()
                    .or_else(|| a.error.clone())
                    .unwrap_or_default(),
            ),
            None => (
                "-".into(),
                a.skipped
                    .clone()
                    .or_else(|| a.error.clone())
                    .unwrap_or_default(),
            ),
        };
        o.push_str(&MD.table_row(&columns, &[&a.arm, &per_op, &per_iter, &change, &verdict]));
    }
    o.push_str(&MD.table_end());
    if let Some(note) = super::table::spread_note(r) {
        let _ = writeln!(o, "\nThe {}.", cell(&note));
    }
    if let Some((reference, ratios)) = super::anchored_ratios(r) {
        let _ = writeln!(
            o,
            "\nAgainst the reference {}: {}.",
            cell(reference),
            cell(&ratios)
        );
    }
    match (&r.null_control, r.floor_pct()) {
        (Some(n), Some(floor)) => {
            let build = r
                .build_null
                .as_ref()
                .map(|b| {
                    format!(
                        ", the build-layout null (the baseline's layout variants against each other) {}",
                        interval(b.median_pct, b.ci_pct)
                    )
                })
                .unwrap_or_default();
            let _ = writeln!(
                o,
                "\nNull floor: the null control moved {}{build}; changes inside ±{floor:.1}% are noise here.{}\n",
                interval(n.median_pct, n.ci_pct),
                stopped(r)
            );
        }
        _ => {
            let _ = writeln!(
                o,
                "\nNull floor: unavailable (the null control did not run).\n"
            );
        }
    }
}

/// How many epochs the shape took and why it stopped.
fn stopped(r: &ShapeResult) -> String {
    r.stopped
        .as_ref()
        .map(|s| format!(" {} epochs ({}).", s.epochs, cell(&s.reason)))
        .unwrap_or_default()
}

fn calibration(c: &Calibration) -> String {
    let mut o = String::new();
    let s = &c.settings;
    o.push_str(&MD.heading(
        3,
        &format!(
            "loopbench calibrate: {} on {} ({})",
            s.shape, s.engine, s.version
        ),
    ));
    let columns = [
        Column::right("true effect", 0),
        Column::right(
            format!("measured (median over {} repetitions)", s.repeat),
            0,
        ),
        Column::right("coverage", 0),
        Column::right("detected", 0),
    ];
    let rows: Vec<Vec<String>> = c
        .effects
        .iter()
        .map(|e| {
            vec![
                pct(e.true_pct),
                pct(e.median_pct),
                format!("{}/{}", e.covered, e.repetitions),
                format!("{}/{}", e.detected, e.repetitions),
            ]
        })
        .collect();
    o.push_str(&MD.table(&columns, &rows));
    match &c.smallest_reliable {
        Some(r) => {
            let _ = writeln!(
                o,
                "\nSmallest effect detected in 9 of 10: {} ({} of {}).",
                pct(r.true_pct),
                r.detected,
                r.repetitions
            );
        }
        None => {
            let _ = writeln!(o, "\nNo effect was reliably detected.");
        }
    }
    if let Some(note) = super::calibration::incomplete(c) {
        let _ = writeln!(o, "\n**{}**", cell(&note));
    }
    let _ = writeln!(o, "\nMachine: {}", cell(&c.machine.fingerprint()));
    o
}

fn comparison(c: &SessionComparison) -> String {
    let mut o = String::new();
    o.push_str(&MD.heading(
        3,
        &format!("loopbench compare: {} against {}", c.b.label, c.a.label),
    ));
    if let Some(g) = &c.gate {
        gate(&mut o, g);
    }
    if let Some(r) = &c.reference {
        let _ = writeln!(
            o,
            "Anchored: every arm as a ratio to {}, measured in both sessions.\n",
            cell(r)
        );
    }
    for w in &c.warnings {
        let _ = writeln!(o, "> **Warning:** {}\n", cell(w));
    }
    let (columns, rows) = super::compare::table(c, false);
    o.push_str(&MD.table(&columns, &rows));
    for line in super::compare::notes(c) {
        let _ = writeln!(o, "\n{}", cell(&line));
    }
    let _ = writeln!(o, "\n{}", cell(&super::compare::outcomes_line(c)));
    for line in super::compare::answer_lines(c) {
        let _ = writeln!(o, "\n{}", cell(line.trim_start()));
    }
    for line in super::compare::calibration_lines(c) {
        let _ = writeln!(o, "\n{}", cell(&line));
    }
    if !c.unmatched.is_empty() {
        let _ = writeln!(o, "\nNot compared:\n");
        for u in &c.unmatched {
            let _ = writeln!(o, "- {}", cell(u));
        }
    }
    let _ = writeln!(o, "\nMethod: {}.", cell(&c.method));
    let _ = writeln!(o, "\nA: {}", cell(&c.a.machine.fingerprint()));
    let _ = writeln!(o, "\nB: {}", cell(&c.b.machine.fingerprint()));
    o
}
