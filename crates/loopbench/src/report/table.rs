//! The terminal table, in the reference harness's spirit: one row per shape
//! and arm, the null floor beside every shape, verdicts in words.

use super::Exporter;
use crate::error::Error;
use crate::results::{Document, Role, Session, ShapeResult};
use std::fmt::Write;

/// The terminal table of any document.
pub struct Table;

impl Exporter for Table {
    fn render(&self, doc: &Document) -> Result<Vec<u8>, Error> {
        let text = match doc {
            Document::Session(s) if s.results.iter().any(|r| r.app_steps.is_some()) => s
                .results
                .iter()
                .map(|r| super::app::render_app(r, r.app_steps.unwrap_or(0)))
                .collect(),
            Document::Session(s) => render(s),
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
            Document::Text { text, .. } => text.clone(),
        };
        Ok(text.into_bytes())
    }
}

fn num(x: f64) -> String {
    if !x.is_finite() {
        "-".into()
    } else if x >= 1000.0 {
        format!("{x:.0}")
    } else if x >= 100.0 {
        format!("{x:.1}")
    } else if x >= 10.0 {
        format!("{x:.2}")
    } else {
        format!("{x:.3}")
    }
}

fn pct(x: f64) -> String {
    format!("{x:+.1}%")
}

/// Render the whole report.
pub fn render(report: &Session) -> String {
    let mut out = String::new();
    let s = &report.session;
    let _ = writeln!(out, "machine: {}", report.machine.summary());
    let _ = writeln!(
        out,
        "session: baseline {}, null control {}, {} rounds (+{} warm-up discarded), working set {}, build {}",
        s.baseline,
        s.null_arm,
        s.rounds,
        s.warmup,
        crate::units::format_bytes(s.bytes),
        s.build_profile
    );
    let versions: Vec<String> = s
        .engines
        .iter()
        .filter(|e| !e.arm.ends_with("#null"))
        .map(|e| format!("{} = {}", e.arm, e.version))
        .collect();
    let _ = writeln!(out, "engines: {}", versions.join("; "));
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "{:<20} {:<18} {:>11} {:>11} {:>8} {:>7} {:>6} {:>9} {:>7}  {:<28} verdict",
        "shape",
        "arm",
        "ns/iter",
        "min",
        "ns/op",
        "ops/it",
        "B/it",
        "MB/s",
        "ratio",
        "change vs baseline [95% CI]"
    );
    for r in &report.results {
        render_shape(&mut out, r);
    }
    let _ = writeln!(out);
    crate::report::counters::render_footer(&mut out, report);
    for line in crate::report::LIMITS {
        let _ = writeln!(out, "{line}");
    }
    if !report.complete {
        let _ = writeln!(
            out,
            "session incomplete: {} of the planned shapes finished",
            report.results.len()
        );
    }
    out
}

fn render_shape(out: &mut String, r: &ShapeResult) {
    let counts = r.counts_per_iter.as_ref();
    for (i, a) in r.arms.iter().enumerate() {
        let name = if i == 0 { r.shape.as_str() } else { "" };
        let cmp = r.comparisons.iter().find(|c| c.arm == a.arm);
        if let Some(reason) = &a.skipped {
            let _ = writeln!(out, "{name:<20} {:<18} {reason}", a.arm);
            continue;
        }
        let Some(t) = &a.ns_per_iter else {
            let _ = writeln!(
                out,
                "{name:<20} {:<18} failed: {}",
                a.arm,
                a.error.clone().unwrap_or_default()
            );
            continue;
        };
        let ops = counts.map(|c| num(c.ops)).unwrap_or_else(|| "?".into());
        let bytes = counts
            .filter(|c| c.bytes > 0.0)
            .map(|c| num(c.bytes))
            .unwrap_or_else(|| "-".into());
        let (ratio, change, verdict) = match (a.role, cmp) {
            (Role::Baseline, _) => ("1".to_string(), "baseline".to_string(), String::new()),
            (Role::Null, Some(c)) => (
                format!("{:.3}", c.ratio),
                format!(
                    "{} [{}, {}]",
                    pct(c.median_pct),
                    pct(c.ci_pct[0]),
                    pct(c.ci_pct[1])
                ),
                "null floor".into(),
            ),
            (_, Some(c)) => (
                format!("{:.3}", c.ratio),
                format!(
                    "{} [{}, {}]",
                    pct(c.median_pct),
                    pct(c.ci_pct[0]),
                    pct(c.ci_pct[1])
                ),
                c.verdict.to_string(),
            ),
            (_, None) => ("-".into(), "-".into(), String::new()),
        };
        let failed = a
            .error
            .as_ref()
            .map(|e| format!("  (failed after {} reps: {e})", a.verified_reps))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "{name:<20} {:<18} {:>11} {:>11} {:>8} {:>7} {:>6} {:>9} {:>7}  {:<28} {verdict}{failed}",
            a.arm,
            num(t.median),
            num(t.min),
            a.ns_per_op.map(num).unwrap_or_else(|| "-".into()),
            ops,
            bytes,
            a.mb_per_s.map(|m| format!("{m:.0}")).unwrap_or_else(|| "-".into()),
            ratio,
            change,
        );
    }
    if let Some(n) = &r.null_control {
        let floor = n.ci_pct[0].abs().max(n.ci_pct[1].abs());
        let _ = writeln!(
            out,
            "{:<20} null floor: {} [{}, {}], changes inside ±{floor:.1}% are within noise",
            "",
            pct(n.median_pct),
            pct(n.ci_pct[0]),
            pct(n.ci_pct[1])
        );
    }
    crate::report::counters::render_shape(out, r);
}
