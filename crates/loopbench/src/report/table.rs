//! The terminal table, in the reference harness's spirit: one row per shape
//! and arm, the null floor beside every shape, verdicts in words.

use super::brief::{arm_width, change_text, inside_spread};
use super::markup::{Column, Markup, Text};
use super::{Exporter, ReportError};
use crate::results::{Document, Role, Session, ShapeResult};
use crate::units::{interval, significant as num};
use std::fmt::Write;

/// The terminal report of any document; of a session, at a glance
/// ([`super::brief`]) unless `verbose`.
#[derive(Clone, Copy, Debug, Default)]
pub struct Table {
    pub verbose: bool,
}

impl Exporter for Table {
    fn render(&self, doc: &Document) -> Result<Vec<u8>, ReportError> {
        let text = match doc {
            Document::Session(s) if s.results.iter().any(|r| r.app_steps.is_some()) => {
                let apps: String = s
                    .results
                    .iter()
                    .map(|r| super::app::render_app(r, r.app_steps.unwrap_or(0)))
                    .collect();
                apps + &super::app::render_suite(&super::app::suite(&s.results))
            }
            Document::Session(s) if self.verbose => render(s),
            Document::Session(s) => super::brief::render(s),
            Document::Model(m) => render(&m.session) + &super::model::render(&m.models),
            Document::Counts(c) => {
                let title = match (c.iters, &c.invoke) {
                    (Some(n), _) => {
                        format!("{}: {n} iterations (exact counting run in wasmi)", c.target)
                    }
                    (None, invoke) => format!(
                        "{} {}: exact counting run in wasmi",
                        c.target,
                        invoke.as_deref().unwrap_or("")
                    ),
                };
                super::counts::render(&title, &c.counts, c.iters)
            }
            Document::Calibration(c) => super::calibration::render(c),
            Document::Compare(c) => super::compare::render(c),
            Document::AppProfile(p) => super::app::render_profile(p),
            Document::AppProject(p) => super::app::render_projection(p),
            Document::AppWarm(w) => super::app::render_warm_doc(w),
            Document::Noise(n) => super::noise::render(n),
        };
        // Names and messages from files and databases go to a terminal.
        Ok(Text.page(&text).into_bytes())
    }
}

/// The table's columns: a shape's name on its first row only, then the
/// arm, its times and counts, its change and verdict. Notes under a shape
/// are rows of two cells (an empty shape cell, then the note).
/// The arm column fits the longest label (a build arm's null can be long).
fn columns(report: &Session) -> Vec<Column> {
    vec![
        Column::left("shape", 20),
        Column::left("arm", arm_width(report, 18)),
        Column::right("ns/iter", 11),
        Column::right("min", 11),
        Column::right("ns/op", 8),
        Column::right("ops/it", 7),
        Column::right("B/it", 6),
        Column::right("MB/s", 9),
        Column::right("ratio", 7),
        Column::left("change vs baseline [95% CI]", 28).gap(2),
        Column::left("verdict", 0),
    ]
}

/// Render the whole report.
pub fn render(report: &Session) -> String {
    let mut out = String::new();
    let s = &report.session;
    let _ = writeln!(out, "machine: {}", report.machine.summary());
    let _ = writeln!(
        out,
        "session: baseline {}, null control {}, {} rounds per epoch (+{} warm-up discarded), working set {}, build {}",
        s.baseline,
        s.null_arm,
        s.rounds,
        s.warmup,
        crate::units::format_bytes(s.bytes),
        s.build_profile
    );
    let epochs = report.epochs.len().max(1);
    let _ = writeln!(
        out,
        "epochs: {epochs} ({}), {}; verdicts on the {}{}",
        match s.isolation.as_deref() {
            Some("workers") => "each a fresh worker process per arm",
            Some(other) => other,
            None => "one process",
        },
        s.rotation,
        s.metric.name(),
        s.pinned_cpu
            .map(|c| format!(", timing threads pinned to core {c}"))
            .unwrap_or_default()
    );
    let versions: Vec<String> = s
        .engines
        .iter()
        .filter(|e| !crate::results::is_null_label(&e.arm))
        .map(|e| format!("{} = {}", e.arm, e.version))
        .collect();
    let _ = writeln!(out, "engines: {}", versions.join("; "));
    let _ = writeln!(out, "builds: {}", builds_line(report));
    if let Some(setting) = &s.setting {
        let _ = writeln!(out, "setting: {setting}");
    }
    if let Some(e) = s.estimator.as_deref().filter(|e| *e != "median") {
        let _ = writeln!(
            out,
            "estimator: {e} (each epoch's rounds reduced to one log ratio by it; the interval is across epochs)"
        );
    }
    if let Some(r) = &s.reference {
        let _ = writeln!(
            out,
            "reference: {r} (every result also as a ratio to it; `compare` of sessions that share it compares the ratios)"
        );
    }
    let _ = writeln!(out);
    let columns = columns(report);
    out.push_str(&Text.table_start(&columns));
    for r in &report.results {
        render_shape(&mut out, &columns, r);
    }
    out.push_str(&Text.table_end());
    let _ = writeln!(out);
    render_disturbances(&mut out, report);
    crate::report::counters::render_footer(&mut out, report);
    for line in crate::report::LIMITS {
        let _ = writeln!(out, "{line}");
    }
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
    out
}

/// Preempted reps per arm: on a shared machine, most wall-clock noise.
fn render_disturbances(out: &mut String, report: &Session) {
    let mut per_arm: Vec<(String, usize, usize)> = Vec::new();
    for r in &report.results {
        for a in &r.arms {
            let Some(p) = a.preempted_reps else { continue };
            match per_arm.iter_mut().find(|(n, _, _)| *n == a.arm) {
                Some(e) => {
                    e.1 += p;
                    e.2 += a.reps.len();
                }
                None => per_arm.push((a.arm.clone(), p, a.reps.len())),
            }
        }
    }
    if per_arm.is_empty() {
        return;
    }
    let parts: Vec<String> = per_arm
        .iter()
        .map(|(a, p, n)| format!("{a} {p}/{n}"))
        .collect();
    let _ = writeln!(
        out,
        "preempted reps (an involuntary context switch inside the timed call): {}",
        parts.join(", ")
    );
}

/// How the session sampled builds: in layout variants, one build per arm
/// by request, or the engines compiled into this binary (in one layout,
/// and why, when variants of them could not be made). Every report says it.
pub(super) fn builds_line(report: &Session) -> String {
    let s = &report.session;
    let varied: Vec<String> = s
        .engines
        .iter()
        .filter(|e| !crate::results::is_null_label(&e.arm))
        .filter_map(|e| {
            let l = e.layout.as_ref()?;
            Some(format!(
                "{} in {} ({} of its {} largest functions moved; {:.1} s to build or find)",
                e.arm,
                l.variants.len(),
                l.moved.moved,
                l.moved.compared,
                l.seconds
            ))
        })
        .collect();
    let one_layout = s.one_layout.as_ref().map(|why| {
        format!(
            "the engines compiled into this binary ran in one code layout ({why}): \
             their intervals have NO build component"
        )
    });
    // This binary's relinks grow from a pool; build arms cycle theirs.
    let ran = |relink: bool| {
        s.engines.iter().any(|e| {
            e.layout.as_ref().is_some_and(|l| {
                l.variants
                    .iter()
                    .any(|v| v.key.starts_with("own/") == relink)
            })
        })
    };
    let (own, builds) = (ran(true), ran(false));
    let grown = |k: usize| {
        format!(
            "this binary's engines a fresh variant per epoch from this machine's pool (up to {}) \
             while the session can link one ({k} before the first epoch), then in turns",
            crate::workers::own_build::POOL
        )
    };
    match s.layout_builds {
        Some(k) if k >= 2 && !varied.is_empty() => format!(
            "layout variants (function order shuffled at link time), {}: {}; intervals are across variants, \
             and the build-layout null {} shows what a relink alone moves{}",
            match (own, builds) {
                (true, false) => grown(k),
                (true, true) => format!("{}; build arms: epoch e runs variant e mod {k}", grown(k)),
                _ => format!("epoch e runs variant e mod {k}"),
            },
            varied.join("; "),
            crate::session::build_null_label(&s.baseline_label()),
            one_layout.map(|l| format!("; {l}")).unwrap_or_default()
        ),
        _ if one_layout.is_some() => one_layout.unwrap_or_default(),
        Some(1) => "one build per arm (--layout-builds 1): the intervals have NO build component, \
                    and a rebuild that only moved code can read as a change"
            .to_string(),
        _ if s.isolation.as_deref() == Some("in-process") => {
            "the engines compiled into this binary, in this process: intervals cover rounds, \
             not processes or builds"
                .to_string()
        }
        _ => "the engines compiled into this binary, one fixed build each: intervals cover \
              processes, not builds"
            .to_string(),
    }
}

/// Each arm's spread across code layouts, in one line (every report).
pub(super) fn spread_note(r: &ShapeResult) -> Option<String> {
    let spreads = r.layout_spreads();
    let each: Vec<String> = spreads
        .iter()
        .map(|(arm, s)| {
            format!(
                "{arm} ±{:.1}% [{:.1}%, {:.1}%]",
                s.sd_pct, s.ci_pct[0], s.ci_pct[1]
            )
        })
        .collect();
    let pairs: Vec<String> = r
        .comparisons
        .iter()
        .filter_map(|c| {
            let p = c.layout.paired_layouts.as_ref()?;
            let ci = p
                .ci
                .map(|[lo, hi]| format!(" [{lo:.2}, {hi:.2}]"))
                .unwrap_or_default();
            Some(format!(
                "{} and {} ran one link order per epoch, their times correlating at r = {:.2}{ci} over {} orders",
                c.arm, c.vs, p.correlation, p.seeds
            ))
        })
        .collect();
    let paired = if pairs.is_empty() {
        String::new()
    } else {
        format!("; {}", pairs.join("; "))
    };
    Some(format!(
        "layout spread (SD of time across {} code layouts, 95% CI): {}{paired}",
        spreads.first()?.1.variants,
        each.join(", ")
    ))
}

/// How a shape's intervals were made and why it stopped.
fn interval_note(r: &ShapeResult) -> String {
    let l = r
        .null_control
        .as_ref()
        .map(|n| &n.layout)
        .or_else(|| r.comparisons.first().map(|c| &c.layout));
    let how = match l {
        Some(l) if l.includes_layout => {
            let mut how = format!(
                "intervals across {} epochs ({} pairs, {})",
                l.epochs,
                l.pairs,
                l.interval.replace('_', " ")
            );
            if let Some(b) = &l.build {
                how.push_str(&format!(" over {} pairs of layout variants", b.clusters));
            }
            how
        }
        Some(l) if l.epochs == 1 => format!(
            "intervals from {} rounds of ONE process: no layout component, a rerun may differ by more",
            l.pairs
        ),
        _ => "intervals from rounds of one process (schema 1)".to_string(),
    };
    let how = match crate::results::median_skew_ns(&r.arms) {
        Some(ns) => format!(
            "{how}; duets left the barrier {:.1} µs apart (median)",
            ns / 1e3
        ),
        None => how,
    };
    match &r.stopped {
        Some(s) => format!(
            "{how}; stopped: {} after {} epochs, {:.1} s{}",
            s.reason,
            s.epochs,
            s.seconds,
            s.half_width_pct
                .map(|h| format!(", widest half-width ±{h:.2}%"))
                .unwrap_or_default()
        ),
        None => how,
    }
}

fn render_shape(out: &mut String, columns: &[Column], r: &ShapeResult) {
    let row = |out: &mut String, cells: &[&str]| out.push_str(&Text.table_row(columns, cells));
    let counts = r.counts_per_iter.as_ref();
    for (i, a) in r.arms.iter().enumerate() {
        let name = if i == 0 { r.shape.as_str() } else { "" };
        let cmp = r.comparisons.iter().find(|c| c.arm == a.arm);
        if let Some(reason) = &a.skipped {
            row(out, &[name, &a.arm, reason]);
            continue;
        }
        let Some(t) = &a.ns_per_iter else {
            let failed = format!("failed: {}", a.error.clone().unwrap_or_default());
            row(out, &[name, &a.arm, &failed]);
            continue;
        };
        let ops = counts.map(|c| num(c.ops)).unwrap_or_else(|| "?".into());
        let bytes = counts
            .filter(|c| c.bytes > 0.0)
            .map(|c| num(c.bytes))
            .unwrap_or_else(|| "-".into());
        let (ratio, change, verdict) = match (a.role, cmp) {
            (Role::Baseline, _) => ("1".to_string(), "baseline".to_string(), String::new()),
            (Role::Null | Role::BuildNull, Some(c)) => (
                format!("{:.3}", c.ratio),
                change_text(r, c, a.role),
                a.role.floor_name().into(),
            ),
            (Role::Reference, Some(c)) => (
                format!("{:.3}", c.ratio),
                change_text(r, c, a.role),
                "reference".into(),
            ),
            (_, Some(c)) => (
                format!("{:.3}", c.ratio),
                change_text(r, c, a.role),
                c.verdict_text(),
            ),
            (_, None) => ("-".into(), "-".into(), String::new()),
        };
        let failed = a
            .error
            .as_ref()
            .map(|e| format!("  (failed after {} reps: {e})", a.verified_reps))
            .unwrap_or_default();
        row(
            out,
            &[
                name,
                &a.arm,
                &num(t.median),
                &num(t.min),
                &a.ns_per_op.map(num).unwrap_or_else(|| "-".into()),
                &ops,
                &bytes,
                &a.mb_per_s
                    .map(|m| format!("{m:.0}"))
                    .unwrap_or_else(|| "-".into()),
                &ratio,
                &change,
                &format!("{verdict}{failed}"),
            ],
        );
    }
    if let (Some(n), Some(floor)) = (&r.null_control, r.floor_pct()) {
        let note = format!(
            "null floor: {}, changes inside ±{floor:.1}% are within noise",
            interval(n.median_pct, n.ci_pct)
        );
        row(out, &["", &note]);
    }
    if let Some(n) = &r.build_null {
        let spread = n
            .layout
            .build
            .as_ref()
            .and_then(|b| b.build_sd_pct)
            .map(|sd| format!("build-layout spread ±{sd:.1}% per variant"))
            .unwrap_or_else(|| "build-layout spread not yet separable from epoch noise".into());
        let note = format!(
            "build null: {} (the baseline's variants against each other; {spread}): what a relink alone moves, inside every interval across variants",
            interval(n.median_pct, n.ci_pct)
        );
        row(out, &["", &note]);
    }
    if let Some((reference, ratios)) = super::anchored_ratios(r) {
        row(out, &["", &format!("vs reference {reference}: {ratios}")]);
    }
    row(out, &["", &interval_note(r)]);
    let sensitive: Vec<String> = r
        .comparisons
        .iter()
        .filter(|c| c.layout.layout_sensitive)
        .map(|c| {
            format!(
                "{} (±{:.1}% between epochs, ±{:.1}% within one)",
                c.arm,
                c.layout.between_epoch_sd_pct.unwrap_or(f64::NAN),
                c.layout.within_epoch_half_width_pct.unwrap_or(f64::NAN)
            )
        })
        .collect();
    if let Some(note) = spread_note(r) {
        row(out, &["", &note]);
    }
    let inside: Vec<String> = r
        .comparisons
        .iter()
        .filter(|c| !crate::results::is_null_label(&c.arm))
        .filter(|c| inside_spread(r, c))
        .map(|c| c.arm.clone())
        .collect();
    if !inside.is_empty() {
        let note = format!(
            "B inside the layout spread (a link that only moves code moves this much, \
             or either engine's own spread is wider): {}",
            inside.join(", ")
        );
        row(out, &["", &note]);
    }
    if !sensitive.is_empty() {
        let note = format!(
            "L layout-sensitive: {}; a single process would have misled",
            sensitive.join(", ")
        );
        row(out, &["", &note]);
    }
    crate::report::counters::render_shape(out, r);
}
