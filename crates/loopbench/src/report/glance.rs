//! The first screen of a session's HTML report: the answer before the
//! evidence. Per arm the closing summary the terminal ends with, then a
//! shape x arm matrix: each cell the arm's time ratio to the baseline with
//! its interval, coloured by its answer, linking to the shape's section
//! further down. A long session's matrix is laid out in panels side by
//! side, so both fit a 1400 x 900 window.

use super::brief::{arm_summaries, kind};
use super::markup::escape_html as esc;
use crate::results::{Role, Session, ShapeResult};
use std::fmt::Write;

/// Shapes per panel of the matrix, at most.
const PANEL_ROWS: usize = 22;

/// The styles of the first screen (added to the page's).
pub const CSS: &str = ".glance{font-size:12px;line-height:1.15}.glance td,.glance th{padding:1px 6px;white-space:nowrap}\
.matrix{display:flex;flex-wrap:wrap;gap:0 18px;align-items:flex-start}\
td.slower{background:#f6c9ad}td.faster{background:#b9e4d6}td.unchanged{background:#e8e8e8}\
td.unsure{background:#fff}td.floor{color:#555}td.none{color:#999}\
.swatch{display:inline-block;width:10px;height:10px;margin:0 3px 0 10px;border:1px solid #999}";

/// The summary and the matrix of `s`, or nothing for a session with no
/// comparison.
pub fn first_screen(s: &Session) -> String {
    let arms = columns(s);
    if arms.is_empty() {
        return String::new();
    }
    let mut o = String::from("<div class=\"glance\">");
    summary(&mut o, s);
    matrix(&mut o, s, &arms);
    o.push_str("</div>");
    o
}

/// Per arm: its geometric mean ratio over the shapes, and its shapes by
/// answer.
fn summary(o: &mut String, s: &Session) {
    let Some(super::brief::Summaries {
        vs,
        level,
        rows,
        left_out,
    }) = arm_summaries(s)
    else {
        return;
    };
    let _ = write!(
        o,
        "<table id=\"summary\"><tr><th>arm</th><th>time / {} (geometric mean over shapes)</th>\
<th>{:.0}% interval</th><th>shapes</th></tr>",
        esc(&vs),
        level * 100.0
    );
    for r in &rows {
        let _ = write!(
            o,
            "<tr><td>{}</td><td>x{:.3}</td><td>[{:.3}, {:.3}]</td><td style=\"text-align:left\">{}</td></tr>",
            esc(&r.arm),
            r.ratio,
            r.ci[0],
            r.ci[1],
            esc(&r.tally())
        );
    }
    o.push_str("</table>");
    if let Some(line) = left_out {
        let _ = write!(o, "<p class=\"meta\">{}</p>", esc(&line));
    }
}

/// The arms with a column: every arm measured against the baseline, and
/// the floors, in the order the session lists them.
fn columns(s: &Session) -> Vec<(String, Role)> {
    let mut arms: Vec<(String, Role)> = Vec::new();
    for r in &s.results {
        for a in r.arms.iter().filter(|a| a.role != Role::Baseline) {
            if !arms.iter().any(|(name, _)| *name == a.arm) {
                arms.push((a.arm.clone(), a.role));
            }
        }
    }
    arms
}

/// The matrix, in panels of at most [`PANEL_ROWS`] shapes (equal ones);
/// the shapes no arm ran are named in one line under it.
fn matrix(o: &mut String, s: &Session, arms: &[(String, Role)]) {
    let (ran, not_run): (Vec<&ShapeResult>, Vec<&ShapeResult>) = s
        .results
        .iter()
        .partition(|r| r.arms.iter().any(|a| a.skipped.is_none()));
    let panels = ran.len().div_ceil(PANEL_ROWS).max(1);
    let per_panel = ran.len().div_ceil(panels).max(1);
    let _ = write!(
        o,
        "<p class=\"meta\">Each shape's time against {} per arm: the ratio and its interval; \
a shape's name leads to its section.\
<span class=\"swatch\" style=\"background:#f6c9ad\"></span>slower\
<span class=\"swatch\" style=\"background:#b9e4d6\"></span>faster\
<span class=\"swatch\" style=\"background:#e8e8e8\"></span>unchanged\
<span class=\"swatch\" style=\"background:#fff\"></span>unsure</p><div class=\"matrix\" id=\"matrix\">",
        esc(&s.session.baseline_label())
    );
    for panel in ran.chunks(per_panel) {
        o.push_str("<table><tr><th>shape</th>");
        for (arm, _) in arms {
            let _ = write!(o, "<th>{}</th>", esc(arm));
        }
        o.push_str("</tr>");
        for r in panel {
            let _ = write!(
                o,
                "<tr><td><a href=\"#{}\">{}</a></td>",
                fragment(&shape_anchor(&r.shape)),
                esc(&r.shape)
            );
            for (arm, role) in arms {
                cell(o, r, arm, *role);
            }
            o.push_str("</tr>");
        }
        o.push_str("</table>");
    }
    o.push_str("</div>");
    if !not_run.is_empty() {
        let names: Vec<String> = not_run
            .iter()
            .map(|r| {
                format!(
                    "<a href=\"#{}\">{}</a>",
                    fragment(&shape_anchor(&r.shape)),
                    esc(&r.shape)
                )
            })
            .collect();
        let _ = write!(
            o,
            "<p class=\"meta\">Not run by any arm here (each section says why): {}</p>",
            names.join(", ")
        );
    }
}

/// One arm's cell of one shape.
fn cell(o: &mut String, r: &ShapeResult, arm: &str, role: Role) {
    let Some(a) = r.arms.iter().find(|a| a.arm == arm) else {
        o.push_str("<td class=\"none\"></td>");
        return;
    };
    let ratio = |pct: f64| 1.0 + pct / 100.0;
    let text = |m: f64, [lo, hi]: [f64; 2]| {
        format!(
            "x{} [{}, {}]",
            short(ratio(m)),
            short(ratio(lo)),
            short(ratio(hi))
        )
    };
    let (class, shown, title) = if let Some(why) = a.skipped.as_ref().or(a.error.as_ref()) {
        let word = if a.skipped.is_some() {
            "skipped"
        } else {
            "failed"
        };
        ("none", word.to_string(), why.clone())
    } else if role.is_null() {
        match r.null_of(role) {
            Some(n) => (
                "floor",
                text(n.median_pct, n.ci_pct),
                role.floor_name().to_string(),
            ),
            None => ("none", "-".into(), String::new()),
        }
    } else {
        match r.comparisons.iter().find(|c| c.arm == arm) {
            Some(c) => (
                kind(c).word(),
                text(c.median_pct, c.ci_pct),
                c.verdict_text(),
            ),
            None => ("none", "-".into(), String::new()),
        }
    };
    let _ = write!(
        o,
        "<td class=\"{class}\" title=\"{}\">{}</td>",
        esc(&title),
        esc(&shown)
    );
}

/// A ratio in three significant digits (two decimals below 10).
fn short(x: f64) -> String {
    match x.abs() {
        v if v >= 100.0 => format!("{x:.0}"),
        v if v >= 10.0 => format!("{x:.1}"),
        _ => format!("{x:.2}"),
    }
}

/// The id of a shape's section.
pub fn shape_anchor(shape: &str) -> String {
    format!("shape-{shape}")
}

/// `id` as a URL fragment: every byte but letters, digits and `-_.`
/// percent-encoded, so any shape's name links to its section.
fn fragment(id: &str) -> String {
    id.bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'_' | b'.' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}
