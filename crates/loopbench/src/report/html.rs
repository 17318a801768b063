//! HTML: one self-contained page (inline CSS and SVG, one inline script
//! that counts the charts; nothing is fetched) that shows the distribution
//! behind every interval.
//!
//! For a session: first the answer ([`super::glance`]: per arm the
//! summary, and a shape x arm matrix of ratios linking to each shape), then
//! one forest plot of every comparison across shapes (the change and its
//! interval, coloured by verdict, each row over its shape's null floor;
//! its axis labelled above the rows too when long), then per shape a strip
//! plot of the per-round changes of every arm against the baseline on the
//! log-ratio axis (outlier rounds marked at its edge and counted) with the
//! null band shaded, the table, and the counters per op. Apps get their op-class profile as bars and
//! predicted against measured change; calibrations the true effect against
//! each measured interval; comparisons of two sessions a forest plot.
//!
//! [`sessions_page`] builds the page for one or more sessions, for any
//! page that lists sessions side by side.

use super::markup::{escape_html as esc, Column, Html as Syntax, Markup};
use super::svg::{self, Bars, DotChart, Row};
use super::{Exporter, ReportError};
use crate::results::app::{AppProfile, AppProjection};
use crate::results::calibration::Calibration;
use crate::results::compare::SessionComparison;
use crate::results::{paired_epochs, Document, Role, Session, ShapeResult};
use crate::session::counters::{metric, METRICS};
use crate::stats::outcome::Outcome;
use crate::stats::Verdict;
use crate::units::{interval, significant as num};
use std::fmt::Write;

pub struct Html;

impl Exporter for Html {
    fn render(&self, doc: &Document) -> Result<Vec<u8>, ReportError> {
        let text = match doc {
            Document::Session(s) => sessions_page(&[("session", s)]),
            Document::Model(m) => {
                let body = session_section("session", &m.session)
                    + &Syntax.heading(2, "Prices per primitive")
                    + &format!("<pre>{}</pre>", esc(&super::model::render(&m.models)));
                page("loopbench model", &body)
            }
            Document::Calibration(c) => page("loopbench calibrate", &calibration_section(c)),
            Document::Compare(c) => page("loopbench compare", &compare_section(c)),
            Document::Counts(c) => {
                let classes = serde_json::to_value(&c.counts.classes).unwrap_or_default();
                let body = profile_bars(&c.target, &classes, c.counts.total_ops as f64)
                    + &text_block(doc)?;
                page("loopbench count", &body)
            }
            Document::AppProfile(p) => page("loopbench app", &app_profile_section(p, doc)?),
            Document::AppProject(p) => page("loopbench app", &app_projection_section(p, doc)?),
            Document::AppWarm(_) => page("loopbench app", &text_block(doc)?),
            Document::Noise(n) => page(
                "loopbench noise",
                &(super::noise::chart(n) + &text_block(doc)?),
            ),
        };
        Ok(text.into_bytes())
    }
}

const CSS: &str = "body{font-family:sans-serif;max-width:1280px;margin:1.5em auto;color:#111;line-height:1.4}\
table{border-collapse:collapse;margin:.6em 0;font-size:13px}td,th{border-bottom:1px solid #ddd;padding:2px 8px;text-align:right}\
td:first-child,th:first-child{text-align:left}pre{background:#f6f6f6;padding:.6em;white-space:pre-wrap;font-size:12px}\
.warn{background:#fff3cd;border-left:4px solid #E69F00;padding:.4em .8em}.loud{background:#fde2d4;border-left:6px solid #D55E00;padding:.5em .8em;font-weight:bold}\
.meta{color:#444;font-size:13px}svg.chart{display:block;margin:.5em 0;max-width:100%;height:auto}";

/// A whole page around `body`. The inline script writes the number of
/// charts into the page, so a headless browser's DOM shows that every
/// chart was parsed as SVG.
pub fn page(title: &str, body: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{t}</title>\
<style>{CSS}{glance}</style></head><body>\n<h1>{t}</h1>\n{body}\n\
<p class=\"meta\">Charts: <span id=\"chart-count\">not counted (scripts off)</span>. \
Colours: Okabe-Ito (colour-blind safe).</p>\n\
<script>document.getElementById(\"chart-count\").textContent=String(document.querySelectorAll(\"svg.chart\").length);</script>\n\
</body></html>\n",
        t = esc(title),
        glance = super::glance::CSS
    )
}

/// The page of one or more sessions, each under its label.
pub fn sessions_page(sessions: &[(&str, &Session)]) -> String {
    let title = match sessions {
        [(_, s)] if s.results.len() <= 4 => format!(
            "loopbench: {}",
            s.results
                .iter()
                .map(|r| r.shape.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ),
        [(_, s)] => format!("loopbench: {} shapes", s.results.len()),
        _ => format!("loopbench: {} sessions", sessions.len()),
    };
    let body: String = sessions
        .iter()
        .map(|(label, s)| session_section(label, s))
        .collect();
    page(&title, &body)
}

pub(crate) fn verdict_color(v: Verdict) -> &'static str {
    match v {
        Verdict::Faster => svg::GREEN,
        Verdict::Slower => svg::VERMILLION,
        Verdict::WithinNoise => svg::GREY,
        Verdict::TooFewPairs => svg::PURPLE,
    }
}

pub(crate) fn verdict_legend() -> Vec<(String, &'static str)> {
    [Verdict::Faster, Verdict::Slower, Verdict::WithinNoise]
        .into_iter()
        .map(|v| (v.to_string(), verdict_color(v)))
        .collect()
}

/// One session: what it ran on, the forest plot, every shape.
pub fn session_section(label: &str, s: &Session) -> String {
    let mut o = String::new();
    o.push_str("<section>");
    o.push_str(&Syntax.heading(2, label));
    let _ = write!(
        o,
        "<p class=\"meta\">Machine: {}<br>Baseline {}, null control {}; {} epochs x {} rounds, {}; build {}{}</p>",
        esc(&s.machine.fingerprint()),
        esc(&s.session.baseline),
        esc(&s.session.null_arm),
        s.epochs.len().max(1),
        s.session.rounds,
        esc(s.session.metric.name()),
        esc(&s.session.build_profile),
        s.id.as_ref()
            .map(|i| format!("; session {}", esc(i)))
            .unwrap_or_default()
    );
    if !s.complete {
        o.push_str("<p class=\"warn\">Incomplete session (interrupted or stopped early).</p>");
    }
    // The answer first: the summary and the matrix fill the first screen.
    o.push_str(&super::glance::first_screen(s));
    if let Some(note) = s.session.schedule.and_then(|d| d.note()) {
        let _ = write!(o, "<p class=\"meta\">{}</p>", esc(&note));
    }
    let _ = write!(
        o,
        "<p class=\"meta\">Builds: {}</p>",
        esc(&super::table::builds_line(s))
    );
    if let Some(cmd) = s.command_line() {
        let _ = write!(o, "<pre>{}</pre>", esc(&cmd));
    }
    for e in &s.errors {
        let _ = write!(o, "<p class=\"warn\">Error: {}</p>", esc(e));
    }
    let forest_rows: Vec<Row> = s
        .results
        .iter()
        .flat_map(|r| {
            r.comparisons.iter().map(move |c| Row {
                label: format!("{}: {}", r.shape, c.arm),
                point: Some(c.median_pct),
                interval: Some(c.ci_pct),
                band: r.null_control.as_ref().map(|n| n.ci_pct),
                color: verdict_color(c.verdict),
                ..Default::default()
            })
        })
        .collect();
    if !forest_rows.is_empty() {
        let chart = DotChart {
            title: "Every comparison: change against the baseline".into(),
            x_label: format!(
                "change in {} per iteration vs {} (%, log-ratio axis), {:.0}% interval",
                s.session.metric.name(),
                s.session.baseline,
                s.session.confidence_level * 100.0
            ),
            rows: forest_rows,
            reference: Some(0.0),
            legend: verdict_legend(),
            log_ratio: true,
            band_label: "that shape's null floor".into(),
            ..Default::default()
        };
        o.push_str(&chart.svg());
    }
    suite_section(&mut o, s);
    for r in &s.results {
        shape_section(&mut o, s, r);
    }
    o.push_str("</section>\n");
    o
}

/// For a suite of workloads (two or more apps): each arm's geometric mean
/// over the modules, as a table and on the log-ratio axis, before the
/// modules' own sections.
fn suite_section(o: &mut String, s: &Session) {
    if !s.results.iter().any(|r| r.app_steps.is_some()) {
        return;
    }
    let suite = super::app::suite(&s.results);
    let rows = &suite.rows;
    let Some(first) = rows.first() else {
        return;
    };
    let level = first.mean.level * 100.0;
    let _ = write!(
        o,
        "<h3 id=\"suite\">Suite of {} modules: geometric mean of each arm's time over {}'s</h3>",
        suite.of,
        esc(&first.vs)
    );
    let columns = [
        Column::left("arm", 0),
        Column::right("geometric mean ratio", 0),
        Column::left(format!("{level:.0}% interval"), 0),
        Column::left("modules", 0),
        Column::left("interval built", 0),
    ];
    o.push_str(&Syntax.table_start(&columns));
    for r in rows {
        let m = &r.mean;
        o.push_str(&Syntax.table_row(
            &columns,
            &[
                &r.arm,
                &format!("x{:.3}", m.ratio),
                &format!("[{:.3}, {:.3}]", m.ci[0], m.ci[1]),
                &format!("{} of {}", m.modules, suite.of),
                &m.basis.to_string(),
            ],
        ));
    }
    o.push_str(&Syntax.table_end());
    if let Some(line) = suite.left_out_line("modules") {
        let _ = write!(o, "<p class=\"meta\">{}</p>", esc(&line));
    }
    let pct = |x: f64| 100.0 * (x - 1.0);
    let chart = DotChart {
        title: "The suite: geometric mean change against the baseline".into(),
        x_label: format!(
            "geometric mean over the modules of candidate / {} - 1 (%, log-ratio axis), {level:.0}% interval",
            first.vs
        ),
        rows: rows
            .iter()
            .enumerate()
            .map(|(i, r)| Row {
                label: format!("{} ({} of {} modules)", r.arm, r.mean.modules, suite.of),
                point: Some(pct(r.mean.ratio)),
                interval: Some([pct(r.mean.ci[0]), pct(r.mean.ci[1])]),
                color: svg::SERIES[i % svg::SERIES.len()],
                ..Default::default()
            })
            .collect(),
        reference: Some(0.0),
        log_ratio: true,
        ..Default::default()
    };
    o.push_str(&chart.svg());
    let _ = write!(
        o,
        "<p class=\"meta\">An interval for this suite as measured, not for programs in general: across epochs (or pairs of layout variants), the units whose layouts the modules share, every unit any module ran in (a module that stopped early does not cut the others' units). Means over different modules do not compare.</p>"
    );
}

/// Per-round changes of `arm` against the baseline, epoch by epoch.
fn round_changes(r: &ShapeResult, arm: &crate::results::ArmResult) -> Vec<f64> {
    let Some(base) = r.arms.iter().find(|a| a.role == Role::Baseline) else {
        return Vec::new();
    };
    let (c, b) = paired_epochs(
        &arm.samples_against(&base.arm),
        &base.samples_against(&arm.arm),
    );
    c.iter()
        .zip(&b)
        .flat_map(|(c, b)| c.iter().zip(b).map(|(x, y)| (x / y - 1.0) * 100.0))
        .filter(|v| v.is_finite())
        .collect()
}

fn shape_section(o: &mut String, s: &Session, r: &ShapeResult) {
    let _ = write!(
        o,
        "<h3 id=\"{}\">{}</h3>",
        esc(&super::glance::shape_anchor(&r.shape)),
        esc(&r.shape)
    );
    let base = r
        .arms
        .iter()
        .find(|a| a.role == Role::Baseline)
        .map(|a| a.arm.clone())
        .unwrap_or_else(|| s.session.baseline.clone());
    let mut rows = Vec::new();
    for (i, a) in r
        .arms
        .iter()
        .filter(|a| a.role != Role::Baseline)
        .enumerate()
    {
        let dots = round_changes(r, a);
        let (point, interval, color) = if a.role.is_null() {
            (
                r.null_of(a.role).map(|n| n.median_pct),
                r.null_of(a.role).map(|n| n.ci_pct),
                svg::BLACK,
            )
        } else {
            let c = r.comparisons.iter().find(|c| c.arm == a.arm);
            (
                c.map(|c| c.median_pct),
                c.map(|c| c.ci_pct),
                svg::SERIES[i % svg::SERIES.len()],
            )
        };
        if dots.is_empty() && point.is_none() {
            continue;
        }
        rows.push(Row {
            label: if a.role == Role::Null {
                format!("{} (null control)", a.arm)
            } else if a.role == Role::BuildNull {
                format!("{} (build-layout null)", a.arm)
            } else {
                a.arm.clone()
            },
            dots,
            point,
            interval,
            color,
            ..Default::default()
        });
    }
    if !rows.is_empty() {
        let chart = DotChart {
            title: format!("{}: per-round change against {base}", r.shape),
            x_label: format!(
                "{} per iteration vs {base} (%, log-ratio axis); dots: rounds (far ones counted at the edge); bar: interval",
                s.session.metric.name()
            ),
            rows,
            band: r.null_control.as_ref().map(|n| n.ci_pct),
            band_label: "null floor (null control's interval)".into(),
            reference: Some(0.0),
            log_ratio: true,
            clip_outliers: true,
            ..Default::default()
        };
        o.push_str(&chart.svg());
    }
    let app = r.app_steps;
    let columns = [
        Column::left("arm", 0),
        Column::right(if app.is_some() { "ms/rep" } else { "ns/iter" }, 0),
        Column::right("min", 0),
        Column::right("ns/op", 0),
        Column::right("reps", 0),
        Column::left(format!("change vs {base}"), 0),
        Column::left("verdict", 0),
    ];
    o.push_str(&Syntax.table_start(&columns));
    let scale = app.map(|n| n as f64 / 1e6).unwrap_or(1.0);
    for a in &r.arms {
        let (med, min) = a
            .ns_per_iter
            .as_ref()
            .map(|t| (num(t.median * scale), num(t.min * scale)))
            .unwrap_or(("-".into(), "-".into()));
        let (change, verdict) = if a.role.is_null() {
            match r.null_of(a.role) {
                Some(n) => (
                    interval(n.median_pct, n.ci_pct),
                    a.role.floor_name().to_string(),
                ),
                None => ("-".into(), String::new()),
            }
        } else {
            match r.comparisons.iter().find(|c| c.arm == a.arm) {
                Some(c) => (interval(c.median_pct, c.ci_pct), c.verdict_text()),
                None => (
                    "-".into(),
                    a.skipped
                        .clone()
                        .or_else(|| a.error.clone())
                        .unwrap_or_default(),
                ),
            }
        };
        o.push_str(&Syntax.table_row(
            &columns,
            &[
                &a.arm,
                &med,
                &min,
                &a.ns_per_op.map(num).unwrap_or_else(|| "-".into()),
                &a.verified_reps.to_string(),
                &change,
                &verdict,
            ],
        ));
    }
    o.push_str(&Syntax.table_end());
    if let Some(note) = super::table::spread_note(r) {
        let _ = write!(o, "<p class=\"meta\">The {}.</p>", esc(&note));
    }
    counters_table(o, r);
}

/// Counters per op (per iteration where the ops are unknown), with each
/// candidate's change.
fn counters_table(o: &mut String, r: &ShapeResult) {
    let keys: Vec<&str> = METRICS
        .iter()
        .map(|m| m.key)
        .filter(|k| r.arms.iter().any(|a| a.counters.values.contains_key(*k)))
        .collect();
    if keys.is_empty() {
        return;
    }
    let per_op = r
        .arms
        .iter()
        .flat_map(|a| a.counters.values.values())
        .all(|s| s.per_op.is_some());
    let mut columns = vec![Column::left(
        format!("counters, per {}", if per_op { "op" } else { "iteration" }),
        0,
    )];
    columns.extend(
        keys.iter()
            .map(|k| Column::right(metric(k).map(|m| m.word).unwrap_or(k), 0)),
    );
    o.push_str(&Syntax.table_start(&columns));
    for a in r.arms.iter().filter(|a| !a.counters.is_empty()) {
        let mut cells = vec![a.arm.clone()];
        for k in &keys {
            let cell = a.counters.values.get(*k).map(|s| {
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
                    Some(c) if a.role == Role::Candidate => {
                        format!("{} ({:+.1}%)", num(v), c.median_pct)
                    }
                    _ => num(v),
                }
            });
            cells.push(cell.unwrap_or_else(|| "-".into()));
        }
        let cells: Vec<&str> = cells.iter().map(String::as_str).collect();
        o.push_str(&Syntax.table_row(&columns, &cells));
    }
    o.push_str(&Syntax.table_end());
}

/// True effect against every measured interval, per repetition.
pub fn calibration_section(c: &Calibration) -> String {
    let mut o = String::new();
    let s = &c.settings;
    let _ = write!(
        o,
        "<p class=\"meta\">Machine: {}<br>Shape {} on {} ({}), {} repetitions x {} rounds</p>",
        esc(&c.machine.fingerprint()),
        esc(&s.shape),
        esc(&s.engine),
        esc(&s.version),
        s.repeat,
        s.rounds
    );
    if let Some(note) = super::calibration::incomplete(c) {
        let _ = write!(o, "<p class=\"warn\">{}</p>", esc(&note));
    }
    let rows: Vec<Row> = c
        .rows
        .iter()
        .filter(|r| r.metric == crate::results::Metric::Wall)
        .map(|r| Row {
            label: format!("{:+}% (repetition {})", r.true_pct, r.repetition),
            point: Some(r.median_pct),
            interval: Some(r.ci_pct),
            marker: Some(r.true_time_pct),
            color: if r.covered {
                svg::BLUE
            } else {
                svg::VERMILLION
            },
            ..Default::default()
        })
        .collect();
    if !rows.is_empty() {
        o.push_str(
            &DotChart {
                title: "Known effects: true against measured".into(),
                x_label: "change in wall-clock time per call (%)".into(),
                rows,
                reference: Some(0.0),
                legend: vec![
                    ("interval holds the truth".into(), svg::BLUE),
                    ("interval misses it".into(), svg::VERMILLION),
                ],
                marker_label: Some("true effect (after the fixed per-call cost)".into()),
                ..Default::default()
            }
            .svg(),
        );
    }
    let columns = [
        Column::right("true effect", 0),
        Column::right("median measured", 0),
        Column::right("coverage", 0),
        Column::right("detected", 0),
    ];
    let rows: Vec<Vec<String>> = c
        .effects
        .iter()
        .map(|e| {
            vec![
                format!("{:+}%", e.true_pct),
                format!("{:+.2}%", e.median_pct),
                format!("{}/{}", e.covered, e.repetitions),
                format!("{}/{}", e.detected, e.repetitions),
            ]
        })
        .collect();
    o.push_str(&Syntax.table(&columns, &rows));
    o
}

/// B against A, loud where the machines differ.
pub fn compare_section(c: &SessionComparison) -> String {
    let mut o = String::new();
    if let Some(g) = &c.gate {
        let class = if g.failed { "loud" } else { "meta" };
        let _ = write!(o, "<p class=\"{class}\">{}</p>", esc(&g.summary()));
    }
    let _ = write!(
        o,
        "<p class=\"meta\">A: {} ({})<br>B: {} ({})</p>",
        esc(&c.a.label),
        esc(&c.a.machine.fingerprint()),
        esc(&c.b.label),
        esc(&c.b.machine.fingerprint())
    );
    for w in &c.warnings {
        let class = if w.starts_with("MACHINE") {
            "loud"
        } else {
            "warn"
        };
        let _ = write!(o, "<p class=\"{class}\">{}</p>", esc(w));
    }
    let rows: Vec<Row> = c
        .rows
        .iter()
        .map(|r| Row {
            label: format!("{}: {}", r.shape, r.arm),
            point: Some(r.median_pct),
            interval: Some(r.ci_pct),
            color: match r.outcome {
                Some(Outcome::Unsure) => svg::PURPLE,
                Some(Outcome::Unchanged) => svg::GREY,
                _ => verdict_color(r.verdict),
            },
            ..Default::default()
        })
        .collect();
    if !rows.is_empty() {
        let legend = vec![
            ("faster".to_string(), svg::GREEN),
            ("slower".to_string(), svg::VERMILLION),
            ("unchanged".to_string(), svg::GREY),
            ("unsure".to_string(), svg::PURPLE),
        ];
        o.push_str(
            &DotChart {
                title: "B against A".into(),
                x_label: format!(
                    "change in ns per iteration, B / A - 1 (%, log-ratio axis), {:.0}% interval",
                    c.confidence * 100.0
                ),
                rows,
                reference: Some(0.0),
                legend,
                log_ratio: true,
                ..Default::default()
            }
            .svg(),
        );
    }
    let (columns, rows) = super::compare::table(c, true);
    o.push_str(&Syntax.table(&columns, &rows));
    for u in &c.unmatched {
        let _ = write!(o, "<p class=\"meta\">Not compared: {}</p>", esc(u));
    }
    let notes = super::compare::notes(c);
    for line in notes.iter().chain(&super::compare::calibration_lines(c)) {
        let _ = write!(o, "<p class=\"meta\">{}</p>", esc(line));
    }
    let _ = write!(
        o,
        "<p class=\"meta\">{}<br>Method: {}.</p>",
        esc(&super::compare::outcomes_line(c)),
        esc(&c.method)
    );
    for line in super::compare::answer_lines(c) {
        let _ = write!(o, "<p class=\"answer\">{}</p>", esc(line.trim_start()));
    }
    o
}

/// Executed instructions per class as a share of all ops.
fn profile_bars(name: &str, classes: &serde_json::Value, total: f64) -> String {
    let mut rows: Vec<(String, f64, &'static str)> = classes
        .as_object()
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| Some((k.clone(), v.as_f64()? / total.max(1.0) * 100.0)))
                .filter(|(_, v)| *v > 0.0)
                .map(|(k, v)| (k, v, svg::BLUE))
                .collect()
        })
        .unwrap_or_default();
    rows.sort_by(|a, b| b.1.total_cmp(&a.1));
    if rows.is_empty() {
        return String::new();
    }
    Bars {
        title: format!("{name}: executed wasm ops by class"),
        x_label: "share of executed ops (%)".into(),
        rows,
    }
    .svg()
}

fn text_block(doc: &Document) -> Result<String, ReportError> {
    Ok(format!(
        "<pre>{}</pre>",
        esc(&String::from_utf8_lossy(
            &super::table::Table::default().render(doc)?
        ))
    ))
}

/// An app's profile: its op classes as bars, then its text.
fn app_profile_section(p: &AppProfile, doc: &Document) -> Result<String, ReportError> {
    let classes = serde_json::to_value(&p.counts.classes).unwrap_or_default();
    Ok(profile_bars(&p.app, &classes, p.counts.total_ops as f64) + &text_block(doc)?)
}

/// A projection: predicted against measured change for every app and
/// pair of arms, the measured app session, then the text.
fn app_projection_section(d: &AppProjection, doc: &Document) -> Result<String, ReportError> {
    let what = d.counter().unwrap_or("time");
    let mut o = String::new();
    // One row per app and pair of arms: measured change (with the
    // session's interval where it has one) and the projection.
    let rows: Vec<Row> = d
        .projections
        .iter()
        .flat_map(|app| {
            app.pairs.iter().map(move |p| Row {
                label: format!("{}: {} vs {}", app.app, p.b, p.a),
                point: p.measured_pct,
                interval: p.measured_ci_pct,
                marker: Some(p.projected_pct).filter(|v| v.is_finite()),
                color: svg::BLUE,
                ..Default::default()
            })
        })
        .collect();
    if !rows.is_empty() {
        o.push_str(
            &DotChart {
                title: "App change: predicted from primitive prices against measured".into(),
                x_label: format!("change in {what} per rep (%)"),
                rows,
                reference: Some(0.0),
                legend: vec![("measured (with interval)".into(), svg::BLUE)],
                marker_label: Some("predicted".into()),
                ..Default::default()
            }
            .svg(),
        );
    }
    o.push_str(&session_section("apps, measured", &d.app_session));
    o.push_str(&text_block(doc)?);
    Ok(o)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::app::{tests::projection, AppProfile};

    fn render(doc: &Document) -> String {
        String::from_utf8(Html.render(doc).unwrap()).unwrap()
    }

    #[test]
    fn an_app_profile_is_bars_of_its_op_classes() {
        let mut counts = loopbench_count::Counts {
            total_ops: 200,
            ..Default::default()
        };
        for (class, n) in [("load", 50), ("int", 150), ("call", 0)] {
            counts.classes.insert(class.parse().unwrap(), n);
        }
        let page = render(&Document::AppProfile(AppProfile {
            schema: crate::results::app::PROFILE_SCHEMA.into(),
            app: "zlib".into(),
            steps: 2,
            counts,
            hot_classes: Vec::new(),
            about: Some("the about text".into()),
            skipped: Vec::new(),
            host_calls: None,
        }));
        assert_eq!(page.matches("<svg class=\"chart\"").count(), 1);
        // Shares of all ops, largest first; a class that never ran is left out.
        assert!(
            page.contains("<title>int: 75</title>") && page.contains("<title>load: 25</title>")
        );
        assert!(page.find("int: 75") < page.find("load: 25"));
        assert!(!page.contains("call:"));
        assert!(page.contains("the about text"));
    }

    #[test]
    fn an_app_projection_plots_predicted_against_measured() {
        let mut doc = projection();
        let page = render(&Document::AppProject(Box::new(doc.clone())));
        // The chart, then the measured session's own charts.
        assert!(page.matches("<svg class=\"chart\"").count() >= 1);
        assert!(
            page.contains(">zlib: wasm3 vs wasmi</text>")
                && page.contains(">lua: wasm3 vs wasmi</text>")
        );
        assert!(page.contains(">predicted</text>"));
        assert!(page.contains("change in time per rep (%)"));
        // Under --price-in: the same chart, in the counter's unit.
        doc.unit = "callgrind_ir".into();
        let page = render(&Document::AppProject(Box::new(doc)));
        assert!(page.contains("change in callgrind_ir per rep (%)"));
    }
}
