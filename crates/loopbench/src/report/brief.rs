//! A session at a glance, the terminal's default: a short header, one line
//! per shape and arm, the shapes no arm could run folded into one line,
//! and a closing summary per engine in hyperfine's spirit (its geometric
//! mean time over the shapes against the baseline, with its interval, and
//! how many shapes it is faster, slower, unchanged and unsure on). What
//! each line rests on (stop rules, floors, layout spreads, counters per op)
//! is in `--verbose`, the full report of [`super::table`].

use super::markup::{Column, Markup, Text};
use crate::results::{Comparison, Layout, Role, Session, ShapeResult};
use crate::stats::outcome::Outcome;
use crate::stats::Verdict;
use crate::units::{interval, significant as num};
use std::collections::BTreeMap;
use std::fmt::Write;

/// The session in at most 100 columns (arm labels longer than 16
/// characters widen the table).
pub fn render(report: &Session) -> String {
    let mut out = header(report);
    let _ = writeln!(out);
    let columns = columns(report);
    out.push_str(&Text.table_start(&columns));
    let mut not_run: Vec<&str> = Vec::new();
    let mut skipped: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for r in &report.results {
        if !r.arms.is_empty() && r.arms.iter().all(|a| a.skipped.is_some()) {
            not_run.push(&r.shape);
            continue;
        }
        for a in &r.arms {
            if let Some(why) = a.skipped.as_deref() {
                skipped.entry(reason(why)).or_default().push(&r.shape);
            }
        }
        out.push_str(&rows(&columns, r));
    }
    out.push_str(&Text.table_end());
    let marks = report.results.iter().flat_map(|r| &r.comparisons);
    if marks.clone().any(|c| c.layout.layout_sensitive) {
        out.push_str("L: layout-sensitive, a single process would have misled\n");
    }
    if report
        .results
        .iter()
        .any(|r| r.comparisons.iter().any(|c| inside_spread(r, c)))
    {
        out.push_str("B: inside the spread that moving code alone makes\n");
    }
    for (why, shapes) in &skipped {
        out.push_str(&listed(&format!("{why}:"), shapes));
    }
    if !not_run.is_empty() {
        let reason = report
            .results
            .iter()
            .find(|r| r.shape == not_run[0])
            .and_then(|r| r.arms.first())
            .and_then(|a| a.skipped.as_deref())
            .map(reason)
            .unwrap_or_default();
        out.push_str(&listed(
            &format!("not run by any arm ({reason}, ...):"),
            &not_run,
        ));
    }
    let _ = writeln!(out);
    out.push_str(&summary(report));
    if let Some(g) = &report.gate {
        out.push_str(&super::gate_text(g));
    }
    if !report.complete {
        let _ = writeln!(
            out,
            "session incomplete (interrupted or stopped early): {} shapes have results, after {} epochs",
            report.results.len(),
            report.epochs.len()
        );
    }
    let _ = writeln!(
        out,
        "{}\nWhat each line rests on (floors, layouts, stop rules, counters per op): --verbose",
        super::LIMITS.last().copied().unwrap_or_default()
    );
    out
}

/// Machine, session, engines and builds, a line each.
fn header(report: &Session) -> String {
    let s = &report.session;
    let mut out = format!("machine: {}\n", report.machine.summary());
    // Shapes whose layouts dominate run fewer rounds (session::rounds).
    let fewest = report
        .results
        .iter()
        .flat_map(|r| &r.comparisons)
        .filter(|c| c.layout.epochs > 0)
        .map(|c| c.layout.pairs / c.layout.epochs)
        .filter(|&r| r > 0)
        .min()
        .filter(|&r| r < s.rounds);
    let _ = writeln!(
        out,
        "session: {} epochs of {} rounds, working set {}",
        report.epochs.len().max(1),
        match fewest {
            Some(r) => format!("{r}-{}", s.rounds),
            None => s.rounds.to_string(),
        },
        crate::units::format_bytes(s.bytes)
    );
    let _ = writeln!(out, "baseline: {}, null control {}", s.baseline, s.null_arm);
    let engines: Vec<String> = s
        .engines
        .iter()
        .filter(|e| !crate::results::is_null_label(&e.arm))
        .map(|e| {
            // The version without where its worker came from.
            let version = e.version.split(" [").next().unwrap_or_default();
            if version.starts_with(&e.arm) {
                version.to_string()
            } else {
                format!("{} = {version}", e.arm)
            }
        })
        .collect();
    let engines: Vec<&str> = engines.iter().map(String::as_str).collect();
    out.push_str(&listed("engines:", &engines));
    let _ = writeln!(out, "builds: {}", builds(report));
    if let Some(setting) = &s.setting {
        out.push_str(&wrap(&format!("setting: {setting}")));
    }
    if let Some(e) = s.estimator.as_deref().filter(|e| *e != "median") {
        out.push_str(&wrap(&format!(
            "estimator: {e} (each epoch's rounds reduced to one log ratio by it)"
        )));
    }
    if let Some(r) = &s.reference {
        let _ = writeln!(out, "reference: {r} (ratios to it carry across sessions)");
    }
    out
}

/// What the intervals cover, in one short line.
fn builds(report: &Session) -> String {
    let s = &report.session;
    let most = s
        .engines
        .iter()
        .filter_map(|e| Some(e.layout.as_ref()?.variants.len()))
        .max();
    match (s.layout_builds, most) {
        _ if s.one_layout.is_some() => {
            "the engines compiled into this binary ran in one code layout: intervals have NO build component".into()
        }
        (Some(k), Some(n)) if k >= 2 => {
            format!("{n} code layouts per arm: intervals include what moving code alone moves")
        }
        (Some(1), _) => "one build per arm (--layout-builds 1): the intervals have NO build component".into(),
        _ if s.isolation.as_deref() == Some("in-process") => {
            "one process: intervals cover rounds, not processes or builds".into()
        }
        _ => "one fixed build each: intervals cover processes, not builds".into(),
    }
}

/// The width of an arm column: the longest label (a build arm's null can
/// be long), at least `least`.
pub(super) fn arm_width(report: &Session, least: usize) -> usize {
    report
        .results
        .iter()
        .flat_map(|r| r.arms.iter().map(|a| a.arm.chars().count()))
        .max()
        .unwrap_or(0)
        .max(least)
}

fn columns(report: &Session) -> Vec<Column> {
    vec![
        Column::left("shape", 20),
        Column::left("arm", arm_width(report, 16)),
        Column::right("ns/iter", 9),
        Column::right("layout", 6),
        Column::left("change vs baseline [95% CI]", 29).gap(2),
        Column::left("verdict", 0),
    ]
}

/// A shape's lines: one per arm, with its time's spread across code
/// layouts (SD) where it ran in several.
fn rows(columns: &[Column], r: &ShapeResult) -> String {
    let mut out = String::new();
    for (i, a) in r.arms.iter().enumerate() {
        let name = if i == 0 { r.shape.as_str() } else { "" };
        let cmp = r.comparisons.iter().find(|c| c.arm == a.arm);
        let spread = a
            .layout_spread
            .as_ref()
            .map(|s| format!("±{:.1}%", s.sd_pct))
            .unwrap_or_default();
        let cells: [String; 3] = match (&a.ns_per_iter, &a.skipped, cmp) {
            (_, Some(_), _) => ["-".into(), "-".into(), "skipped".into()],
            (None, _, _) => [
                "-".into(),
                "-".into(),
                format!("failed: {}", a.error.as_deref().unwrap_or_default()),
            ],
            (Some(t), _, _) if a.role == Role::Baseline => {
                [num(t.median), "baseline".into(), String::new()]
            }
            (Some(t), _, Some(c)) => [
                num(t.median),
                change_text(r, c, a.role),
                verdict(a.role, c).to_string(),
            ],
            (Some(t), _, None) => [num(t.median), "-".into(), String::new()],
        };
        let [time, change, verdict] = &cells;
        out.push_str(&Text.table_row(columns, &[name, &a.arm, time, &spread, change, verdict]));
    }
    out
}

/// One word: the floors by name, a candidate by its outcome.
fn verdict(role: Role, c: &Comparison) -> &'static str {
    match role {
        Role::Null | Role::BuildNull => role.floor_name(),
        Role::Reference => "reference",
        _ => kind(c).word(),
    }
}

/// A comparison's answer, in a word.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Faster,
    Slower,
    Unchanged,
    Unsure,
}

impl Kind {
    pub(super) fn word(self) -> &'static str {
        match self {
            Kind::Faster => "faster",
            Kind::Slower => "slower",
            Kind::Unchanged => "unchanged",
            Kind::Unsure => "unsure",
        }
    }
}

/// A comparison's answer: its three-way outcome where it has one, else its
/// verdict against the null floor (files written before outcomes).
pub(super) fn kind(c: &Comparison) -> Kind {
    match (c.outcome, c.verdict) {
        (Some(Outcome::Unchanged), _) | (None, Verdict::WithinNoise) => Kind::Unchanged,
        (Some(Outcome::Unsure), _) | (_, Verdict::TooFewPairs) => Kind::Unsure,
        (_, Verdict::Faster) => Kind::Faster,
        (_, Verdict::Slower) => Kind::Slower,
        (Some(Outcome::Changed), Verdict::WithinNoise) => Kind::Unsure,
    }
}

/// One arm's line of the closing summary.
pub(super) struct ArmSummary {
    pub arm: String,
    /// Geometric mean time ratio over the shapes, with its interval.
    pub ratio: f64,
    pub ci: [f64; 2],
    /// Shapes in the mean.
    pub shapes: usize,
    /// A floor (an arm against itself), not a candidate.
    pub floor: bool,
    /// Its shapes by answer: slower, faster, unchanged, unsure.
    pub slower: usize,
    pub faster: usize,
    pub unchanged: usize,
    pub unsure: usize,
}

/// The closing summary's figures: per arm, against `vs` at `level`.
pub(super) struct Summaries {
    pub vs: String,
    pub level: f64,
    pub rows: Vec<ArmSummary>,
    /// What the means are over, when some shape is left out.
    pub left_out: Option<String>,
}

/// Per arm, its geometric mean time over the shapes against the baseline
/// (the suite's interval: across the epochs or layout pairs the shapes
/// ran in) and its shapes by answer, over the shapes every arm ran.
pub(super) fn arm_summaries(report: &Session) -> Option<Summaries> {
    let suite = super::app::suite(&report.results);
    let first = suite.rows.first()?;
    let (vs, level) = (first.vs.clone(), first.mean.level);
    let rows = suite
        .rows
        .iter()
        .map(|row| {
            let shapes: Vec<&Comparison> = report
                .results
                .iter()
                .filter(|r| suite.modules.contains(&r.shape))
                .flat_map(|r| &r.comparisons)
                .filter(|c| c.arm == row.arm && c.vs == row.vs)
                .collect();
            let count = |k: Kind| shapes.iter().filter(|c| kind(c) == k).count();
            ArmSummary {
                arm: row.arm.clone(),
                ratio: row.mean.ratio,
                ci: row.mean.ci,
                shapes: row.mean.modules,
                floor: crate::results::is_null_label(&row.arm),
                slower: count(Kind::Slower),
                faster: count(Kind::Faster),
                unchanged: count(Kind::Unchanged),
                unsure: count(Kind::Unsure),
            }
        })
        .collect();
    Some(Summaries {
        vs,
        level,
        rows,
        left_out: suite.left_out_line("shapes"),
    })
}

impl ArmSummary {
    /// Its shapes by answer, in words.
    pub(super) fn tally(&self) -> String {
        if self.floor {
            format!("a null (an arm against itself) over {}", self.shapes)
        } else {
            format!(
                "{} slower, {} faster, {} unchanged, {} unsure of {}",
                self.slower, self.faster, self.unchanged, self.unsure, self.shapes
            )
        }
    }
}

/// The closing summary: a line per arm.
fn summary(report: &Session) -> String {
    let Some(Summaries {
        vs,
        level,
        rows,
        left_out,
    }) = arm_summaries(report)
    else {
        return String::new();
    };
    let mut out = format!(
        "summary vs {vs}: time ratio, geometric mean over shapes [{:.0}% CI]; shapes by verdict\n",
        level * 100.0
    );
    let width = rows
        .iter()
        .map(|r| r.arm.chars().count())
        .max()
        .unwrap_or(0);
    for row in &rows {
        let _ = writeln!(
            out,
            "  {:<width$}  x{:.3} [{:.3}, {:.3}]  {}",
            row.arm,
            row.ratio,
            row.ci[0],
            row.ci[1],
            row.tally()
        );
    }
    if let Some(line) = left_out {
        let _ = writeln!(out, "{}", wrap(&line));
    }
    out
}

/// `title` and the names after it, wrapped at 100 columns.
fn listed(title: &str, names: &[&str]) -> String {
    wrap(&format!("{title} {}", names.join(", ")))
}

/// `line` wrapped at spaces to 100 columns, the continuation lines
/// indented by two.
fn wrap(line: &str) -> String {
    let mut out = String::new();
    let mut width = 0;
    for word in line.split(' ') {
        let len = word.chars().count();
        if width > 0 && width + 1 + len > 100 {
            out.push_str("\n  ");
            width = 2;
        } else if width > 0 {
            out.push(' ');
            width += 1;
        }
        out.push_str(word);
        width += len;
    }
    out.push('\n');
    out
}

/// A skipped arm's reason as its row stores it, without the word.
fn reason(skipped: &str) -> &str {
    skipped.strip_prefix("skipped: ").unwrap_or(skipped)
}

/// A change with its interval, and the layout spread when it has one
/// (`L`), and for a candidate whether it is inside the spread that moving
/// code alone makes (`B`).
pub(super) fn change_text(r: &ShapeResult, c: &Comparison, role: Role) -> String {
    let mut t = interval(c.median_pct, c.ci_pct);
    if c.layout.layout_sensitive {
        t.push_str(" L");
    }
    if role == Role::Candidate && inside_spread(r, c) {
        t.push_str(" B");
    }
    t
}

/// `B`: the change is inside the build-layout spread of its interval or
/// either engine's own spread across code layouts.
pub(super) fn inside_spread(r: &ShapeResult, c: &Comparison) -> bool {
    inside_build_spread(c.median_pct, &c.layout) || r.inside_layout_spread(c)
}

/// The change is no larger than what the build layout alone moves (twice
/// the build component of its interval).
fn inside_build_spread(median: f64, l: &Layout) -> bool {
    l.build
        .as_ref()
        .and_then(|b| b.build_sd_pct)
        .is_some_and(|sd| sd > 0.0 && median.abs() <= 2.0 * sd)
}
