//! The leaderboard: for every machine and shape, each arm's latest stored
//! result (ns per iteration, and its change against that session's
//! baseline with the interval and verdict), fastest first.

use super::store::{Sql, StoreError};
use crate::report::html::{page, verdict_color, verdict_legend};
use crate::report::svg::{self, DotChart, Row};
use crate::stats::builds::LayoutSpread;
use crate::stats::Verdict;
use std::fmt::Write;

/// One cell of the board: an arm on a shape on a machine.
#[derive(Clone, Debug, PartialEq)]
pub struct Entry {
    pub machine: String,
    pub shape: String,
    pub arm: String,
    pub version: String,
    pub commit: Option<String>,
    pub median_ns: f64,
    pub min_ns: Option<f64>,
    /// Against `vs` in the same session: median change, interval, verdict.
    pub vs: Option<String>,
    pub change_pct: Option<f64>,
    pub ci_pct: Option<[f64; 2]>,
    pub verdict: Option<String>,
    pub epochs: Option<i64>,
    pub session_id: i64,
    pub recorded: String,
    /// The session's reference arm and this arm's ratio to it (anchored
    /// sessions): change and interval, percent.
    pub reference: Option<String>,
    pub ref_change_pct: Option<f64>,
    pub ref_ci_pct: Option<[f64; 2]>,
    /// Its spread across code layouts (an arm run in layout variants).
    pub layout_spread: Option<LayoutSpread>,
    /// Its change moves less than its own or the baseline's layout spread.
    pub inside_layout_spread: bool,
}

/// The latest result of every (machine, shape, arm), by machine, shape and
/// speed.
pub fn entries(db: &mut dyn Sql) -> Result<Vec<Entry>, StoreError> {
    let d = db.dialect();
    // Read-only commands never migrate: a database from before anchored
    // sessions (schema 3) has none of their columns.
    let anchored = if super::store::version(db)? >= 4 {
        "s.reference_arm, x.ref_change_pct, x.ref_ci_low_pct, x.ref_ci_high_pct"
    } else {
        "NULL, NULL, NULL, NULL"
    };
    let layouts = if super::store::version(db)? >= 9 {
        "x.layout_variants, x.layout_sd_pct, x.layout_sd_low_pct, x.layout_sd_high_pct, \
         x.inside_layout_spread"
    } else {
        "NULL, NULL, NULL, NULL, NULL"
    };
    let rows = db.query(
        &d.sql(&format!(
            "SELECT COALESCE(s.label, m.hostname || ' (' || m.cpu || ')') AS machine, h.name, a.label, a.version, a.commit_id,
                    x.median_ns, x.min_ns, x.vs_arm, x.change_pct, x.ci_low_pct, x.ci_high_pct,
                    x.verdict, x.epochs, s.id, {}, {anchored}, {layouts}
             FROM summaries x
             JOIN sessions s ON s.id = x.session_id
             JOIN machines m ON m.id = s.machine_id
             JOIN shapes h ON h.id = x.shape_id
             JOIN arms a ON a.id = x.arm_id
             WHERE x.median_ns IS NOT NULL AND x.role NOT IN ('null', 'build_null')
               AND s.id = (SELECT max(s2.id) FROM summaries x2
                           JOIN sessions s2 ON s2.id = x2.session_id
                           JOIN machines m2 ON m2.id = s2.machine_id
                           JOIN arms a2 ON a2.id = x2.arm_id
                           WHERE x2.shape_id = x.shape_id AND a2.label = a.label
                             AND COALESCE(s2.label, m2.hostname || ' (' || m2.cpu || ')') = COALESCE(s.label, m.hostname || ' (' || m.cpu || ')')
                             AND x2.median_ns IS NOT NULL)
             ORDER BY 1, 2, x.median_ns",
            d.datetime("s.recorded_at")
        )),
        &[],
    )?;
    rows.iter()
        .map(|r| {
            let lo = r.opt_real(9)?;
            let hi = r.opt_real(10)?;
            Ok(Entry {
                machine: r.text(0)?,
                shape: r.text(1)?,
                arm: r.text(2)?,
                version: r.text(3)?,
                commit: r.opt_text(4)?,
                median_ns: r.real(5)?,
                min_ns: r.opt_real(6)?,
                vs: r.opt_text(7)?,
                change_pct: r.opt_real(8)?,
                ci_pct: lo.zip(hi).map(|(l, h)| [l, h]),
                verdict: r.opt_text(11)?,
                epochs: r.opt_int(12)?,
                session_id: r.int(13)?,
                recorded: r.text(14)?,
                reference: r.opt_text(15)?,
                ref_change_pct: r.opt_real(16)?,
                ref_ci_pct: r.opt_real(17)?.zip(r.opt_real(18)?).map(|(l, h)| [l, h]),
                layout_spread: match (r.opt_int(19)?, r.opt_real(20)?) {
                    (Some(variants), Some(sd_pct)) => Some(LayoutSpread {
                        variants: variants.max(0) as usize,
                        sd_pct,
                        ci_pct: [
                            r.opt_real(21)?.unwrap_or(f64::NAN),
                            r.opt_real(22)?.unwrap_or(f64::NAN),
                        ],
                    }),
                    _ => None,
                },
                inside_layout_spread: r.opt_int(23)? == Some(1),
            })
        })
        .collect()
}

fn change(e: &Entry) -> String {
    match (&e.vs, e.change_pct, e.ci_pct) {
        (Some(vs), Some(c), Some([lo, hi])) => {
            format!("{c:+.2}% [{lo:+.2}, {hi:+.2}] vs {vs}")
        }
        _ => "baseline".to_string(),
    }
}

/// The arm's ratio to its session's reference, as a change with its
/// interval; empty for the reference itself and unanchored sessions.
fn anchored(e: &Entry) -> String {
    match (&e.reference, e.ref_change_pct, e.ref_ci_pct) {
        (Some(r), Some(c), Some([lo, hi])) if *r != e.arm => {
            format!("{c:+.2}% [{lo:+.2}, {hi:+.2}] vs {r}")
        }
        _ => String::new(),
    }
}

/// The arm's SD across code layouts with its interval and how many ran.
fn spread(e: &Entry) -> String {
    e.layout_spread
        .as_ref()
        .map(|l| {
            format!(
                "±{:.1}% [{:.1}, {:.1}] over {}",
                l.sd_pct, l.ci_pct[0], l.ci_pct[1], l.variants
            )
        })
        .unwrap_or_default()
}

/// The stored verdict, and when the change is smaller than what a
/// relink alone moves either arm, that no ranking follows from it.
fn verdict_cell(e: &Entry) -> String {
    let v = e.verdict.clone().unwrap_or_default();
    if e.inside_layout_spread {
        format!("{v}, inside layout spread")
    } else {
        v
    }
}

fn build(e: &Entry) -> String {
    super::builds::build_label(&e.version, e.commit.as_deref())
}

const HEADER: [&str; 11] = [
    "machine",
    "shape",
    "arm",
    "build",
    "ns/iter (median)",
    "ns/iter (min)",
    "change (95% interval)",
    "verdict",
    "spread across code layouts (95% interval)",
    "ratio to reference (95% interval)",
    "session",
];

fn cells(e: &Entry) -> [String; 11] {
    [
        e.machine.clone(),
        e.shape.clone(),
        e.arm.clone(),
        build(e),
        format!("{:.3}", e.median_ns),
        e.min_ns.map(|m| format!("{m:.3}")).unwrap_or_default(),
        change(e),
        verdict_cell(e),
        spread(e),
        anchored(e),
        format!("{} ({})", e.session_id, e.recorded),
    ]
}

/// The board as a Markdown table, every cell escaped by the markup layer
/// (a stored name may hold `|`, a line break or an escape sequence).
pub fn markdown(entries: &[Entry]) -> String {
    use crate::report::markup::{Column, Markdown, Markup};
    let mut out = Markdown.heading(1, "loopbench leaderboard");
    out.push_str(
        "Each arm's latest session per machine and shape; the change is against that \
         session's baseline, with its interval across epochs. The spread across code \
         layouts is how much relinking the arm's engine alone moves it (SD of time \
         between its layout variants); a change smaller than either arm's spread is \
         marked, and ranks nothing.\n\n",
    );
    let columns: Vec<Column> = HEADER
        .iter()
        .enumerate()
        .map(|(i, h)| match i {
            4 | 5 => Column::right(*h, 0),
            _ => Column::left(*h, 0),
        })
        .collect();
    let rows: Vec<Vec<String>> = entries.iter().map(|e| cells(e).to_vec()).collect();
    out.push_str(&Markdown.table(&columns, &rows));
    out
}

fn verdict(text: &str) -> Option<Verdict> {
    [
        Verdict::Faster,
        Verdict::Slower,
        Verdict::WithinNoise,
        Verdict::TooFewPairs,
    ]
    .into_iter()
    .find(|v| v.to_string() == text)
}

/// The board as an HTML page, built with the report's page and charts: per
/// shape, each machine's arms by ns/iter (minimum as a diamond), and every
/// change against its session's baseline with its interval, coloured by
/// verdict; then the table.
pub fn html(entries: &[Entry]) -> String {
    let mut body = String::from(
        "<p class=\"meta\">Each arm's latest session per machine and shape; the change is \
         against that session's baseline, with its interval across epochs. The shaded band \
         is ±1 SD of the arm's time across code layouts (how much relinking its engine \
         alone moves it); a change smaller than either arm's spread is marked, and ranks \
         nothing.</p>\n",
    );
    let mut shapes: Vec<&str> = entries.iter().map(|e| e.shape.as_str()).collect();
    shapes.dedup();
    shapes.sort_unstable();
    shapes.dedup();
    for shape in shapes {
        let of: Vec<&Entry> = entries.iter().filter(|e| e.shape == shape).collect();
        let _ = write!(body, "<h2 id=\"{0}\">{0}</h2>", svg::esc(shape));
        let rows: Vec<Row> = of
            .iter()
            .map(|e| Row {
                label: format!("{} / {}", e.machine, e.arm),
                point: Some(e.median_ns),
                marker: e.min_ns,
                // How far a relink alone moves it: +-1 SD of log time.
                band: e.layout_spread.as_ref().map(|l| {
                    let f = (l.sd_pct / 100.0).exp();
                    [e.median_ns / f, e.median_ns * f]
                }),
                color: svg::BLUE,
                ..Default::default()
            })
            .collect();
        body.push_str(
            &DotChart {
                title: format!("{shape}: ns per iteration (median)"),
                x_label: "ns per iteration".into(),
                rows,
                marker_label: Some("minimum".into()),
                band_label: "±1 SD across code layouts".into(),
                ..Default::default()
            }
            .svg(),
        );
        let changes: Vec<Row> = of
            .iter()
            .filter_map(|e| {
                Some(Row {
                    label: format!("{} / {} vs {}", e.machine, e.arm, e.vs.as_deref()?),
                    point: e.change_pct,
                    interval: e.ci_pct,
                    color: e
                        .verdict
                        .as_deref()
                        .and_then(verdict)
                        .map_or(svg::GREY, verdict_color),
                    ..Default::default()
                })
            })
            .collect();
        if !changes.is_empty() {
            body.push_str(
                &DotChart {
                    title: format!("{shape}: change against each session's baseline"),
                    x_label: "change per iteration (%), 95% interval across epochs".into(),
                    rows: changes,
                    reference: Some(0.0),
                    legend: verdict_legend(),
                    ..Default::default()
                }
                .svg(),
            );
        }
        // The anchored series: each arm's ratio to its session's
        // reference, the number that carries across sessions and machines'
        // drift, with its interval across epochs.
        let ratios: Vec<Row> = of
            .iter()
            .filter(|e| !anchored(e).is_empty())
            .map(|e| Row {
                label: format!(
                    "{} / {} vs {}",
                    e.machine,
                    e.arm,
                    e.reference.as_deref().unwrap_or("")
                ),
                point: e.ref_change_pct,
                interval: e.ref_ci_pct,
                color: svg::BLUE,
                ..Default::default()
            })
            .collect();
        if !ratios.is_empty() {
            body.push_str(
                &DotChart {
                    title: format!("{shape}: ratio to each session's reference (anchored)"),
                    x_label: "change against the reference (%), 95% interval across epochs".into(),
                    rows: ratios,
                    reference: Some(0.0),
                    log_ratio: true,
                    ..Default::default()
                }
                .svg(),
            );
        }
    }
    body.push_str("<h2>All entries</h2>\n<table><tr>");
    for h in HEADER {
        let _ = write!(body, "<th>{}</th>", svg::esc(h));
    }
    body.push_str("</tr>\n");
    for e in entries {
        body.push_str("<tr>");
        for c in cells(e) {
            let _ = write!(body, "<td>{}</td>", svg::esc(&c));
        }
        body.push_str("</tr>\n");
    }
    body.push_str("</table>\n");
    page("loopbench leaderboard", &body)
}
