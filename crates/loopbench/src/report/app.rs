//! Apps in the terminal: whole-app A/B, an app's profile, the projection
//! of primitive prices onto apps, and warm mode.

use crate::results::app::{
    AppProfile, AppProjected, AppProjection, AppWarm, Coverage, WarmResult, HOT_SHARE, SHAPE_SHARE,
};
use crate::results::{Comparison, ShapeResult};
use crate::stats;
use std::fmt::Write;

/// One arm's line of a suite: its geometric mean over the suite's shared
/// modules.
pub struct SuiteRow {
    pub arm: String,
    pub vs: String,
    pub mean: stats::suite::SuiteMean,
}

/// A suite's means: every arm over the same modules, those every arm has a
/// comparison for, so that two arms' means compare (one that skipped
/// SIMD shapes is not set beside one that ran them).
pub struct Suite {
    pub rows: Vec<SuiteRow>,
    /// The modules in every mean, in the session's order.
    pub modules: Vec<String>,
    /// The modules of the session left out: some arm has a comparison for
    /// them and another has none (it skipped or failed them).
    pub left_out: Vec<String>,
    /// Modules in the session.
    pub of: usize,
}

impl Suite {
    /// What the means are over, when some module is left out: one line.
    pub fn left_out_line(&self, what: &str) -> Option<String> {
        (!self.left_out.is_empty()).then(|| {
            format!(
                "every arm over the same {} {what} (those every arm ran); left out, as some arm skipped or failed them: {}",
                self.modules.len(),
                self.left_out.join(", ")
            )
        })
    }
}

/// For a session of two or more workloads: each arm's geometric mean
/// against the baseline (arms in the order of their first comparison) over
/// the workloads every arm has a comparison for.
pub fn suite(results: &[ShapeResult]) -> Suite {
    let mut arms: Vec<(String, String)> = Vec::new();
    for c in results.iter().flat_map(|r| &r.comparisons) {
        if !arms.iter().any(|(a, v)| a == &c.arm && v == &c.vs) {
            arms.push((c.arm.clone(), c.vs.clone()));
        }
    }
    fn compared<'r>(r: &'r ShapeResult, (arm, vs): &(String, String)) -> Option<&'r Comparison> {
        r.comparisons.iter().find(|c| &c.arm == arm && &c.vs == vs)
    }
    let (shared, left_out): (Vec<&ShapeResult>, Vec<&ShapeResult>) = results
        .iter()
        .partition(|r| arms.iter().all(|a| compared(r, a).is_some()));
    let rows = if shared.len() < 2 {
        Vec::new()
    } else {
        arms.iter()
            .filter_map(|pair| {
                let modules: Vec<_> = shared
                    .iter()
                    .filter_map(|r| compared(r, pair))
                    .map(|c| stats::suite::ModuleChange {
                        check: c.check(),
                        epoch_pct: &c.layout.epoch_median_pct,
                        epoch_ids: &c.layout.epoch_ids,
                        epoch_clusters: &c.layout.epoch_clusters,
                    })
                    .collect();
                let mean = stats::suite::geometric_mean(&modules, stats::LEVEL)?;
                Some(SuiteRow {
                    arm: pair.0.clone(),
                    vs: pair.1.clone(),
                    mean,
                })
            })
            .collect()
    };
    Suite {
        rows,
        modules: shared.iter().map(|r| r.shape.clone()).collect(),
        // A module no arm has a comparison for (skipped by every arm) is
        // no arm's to leave out.
        left_out: left_out
            .iter()
            .filter(|r| !r.comparisons.is_empty())
            .map(|r| r.shape.clone())
            .collect(),
        of: results.len(),
    }
}

/// The suite's lines under its modules' tables.
pub fn render_suite(suite: &Suite) -> String {
    let mut out = String::new();
    let Some(first) = suite.rows.first() else {
        return out;
    };
    let _ = writeln!(
        out,
        "suite of {} modules: geometric mean of each arm's time over {}'s ({:.0}% CI)",
        suite.of,
        first.vs,
        first.mean.level * 100.0
    );
    for r in &suite.rows {
        let m = &r.mean;
        let _ = writeln!(
            out,
            "  {} vs {}: x{:.3} [{:.3}, {:.3}] over {} of {} modules, {}",
            r.arm, r.vs, m.ratio, m.ci[0], m.ci[1], m.modules, suite.of, m.basis
        );
    }
    if let Some(line) = suite.left_out_line("modules") {
        let _ = writeln!(out, "  {line}");
    }
    out
}

pub fn render_app(r: &ShapeResult, steps: u64) -> String {
    let mut out = String::new();
    // A rep is timed only once verified; an arm that failed has none.
    let verified = if r.arms.iter().any(|a| a.error.is_some()) {
        "every timed rep verified"
    } else {
        "every rep verified"
    };
    let _ = writeln!(out, "app {} (run({steps}) per rep; {verified})", r.shape);
    let _ = writeln!(
        out,
        "  {:<16} {:>12} {:>12} {:>6}  ",
        "arm", "median ms", "min ms", "reps"
    );
    for a in &r.arms {
        let t = a
            .ns_per_iter
            .as_ref()
            .map(|t| {
                format!(
                    "{:>12.3} {:>12.3}",
                    t.median * steps as f64 / 1e6,
                    t.min * steps as f64 / 1e6
                )
            })
            .unwrap_or_else(|| format!("{:>12} {:>12}", "-", "-"));
        let note = a
            .skipped
            .clone()
            .or_else(|| a.error.clone())
            .unwrap_or_default();
        let _ = writeln!(out, "  {:<16} {t} {:>6}  {note}", a.arm, a.verified_reps);
    }
    for c in &r.comparisons {
        let _ = writeln!(
            out,
            "  {} vs {}: {:+.1}% [{:+.1}%, {:+.1}%] ({:.0}% CI), {}",
            c.arm,
            c.vs,
            c.median_pct,
            c.ci_pct[0],
            c.ci_pct[1],
            c.confidence * 100.0,
            c.verdict
        );
    }
    match &r.null_control {
        Some(n) => {
            let _ = writeln!(
                out,
                "  null control (second {} instance): {:+.1}% [{:+.1}%, {:+.1}%]",
                r.arms.first().map(|a| a.arm.as_str()).unwrap_or("baseline"),
                n.median_pct,
                n.ci_pct[0],
                n.ci_pct[1]
            );
        }
        None => {
            let _ = writeln!(
                out,
                "  null control: unavailable (the baseline or its copy did not run)"
            );
        }
    }
    // Counters (`--counters`), per step of the app: for a WASI command,
    // one step is one run.
    super::counters::render_shape(&mut out, r);
    out
}

/// `app warm`: every engine's comparison.
pub fn render_warm_doc(w: &AppWarm) -> String {
    w.results
        .iter()
        .map(|r| render_warm(r, &w.app, w.after))
        .collect()
}

pub fn render_warm(r: &WarmResult, app: &str, after: u64) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "warm mode: shape {} ({} iterations) inside app {app}, {}; a fresh instance per rep",
        r.shape, r.iters, r.engine
    );
    for ((label, s, note), n) in r.arms.iter().zip(&r.instances) {
        let t = if s.is_empty() {
            format!("{:>10} {:>10}", "-", "-")
        } else {
            format!("{:>10.3} {:>10.3}", stats::median(s), stats::min(s))
        };
        let _ = writeln!(
            out,
            "  {label:<24} {t} ns/iter  {} reps, {n} instances  {}",
            s.len(),
            note.clone().unwrap_or_default()
        );
    }
    match (&r.change, &r.verdict) {
        (Some(c), Some(v)) => {
            let _ = writeln!(
                out,
                "  warm({after}) vs cold: {:+.1}% [{:+.1}%, {:+.1}%] ({:.0}% CI), {v}",
                c.median_pct,
                c.ci_pct[0],
                c.ci_pct[1],
                c.confidence * 100.0
            );
        }
        _ => {
            let _ = writeln!(out, "  warm vs cold: unavailable");
        }
    }
    if let Some(n) = &r.null {
        let _ = writeln!(
            out,
            "  null control (second cold instance): {:+.1}% [{:+.1}%, {:+.1}%]",
            n.median_pct, n.ci_pct[0], n.ci_pct[1]
        );
    }
    out
}

/// The profile as text: the exact mix, then the shapes that price the hot
/// classes.
pub fn render_profile(p: &AppProfile) -> String {
    let (steps, counts) = (p.steps, &p.counts);
    let title = match &p.about {
        Some(about) => format!(
            "app {} ({about}): exact counts of run({steps}), setup excluded",
            p.app
        ),
        None => format!(
            "app {}: exact counts of run({steps}), setup excluded",
            p.app
        ),
    };
    let mut out = super::counts::render(&title, counts, Some(steps));
    let per_op = |x: u64| x as f64 / counts.total_ops.max(1) as f64;
    let _ = writeln!(
        out,
        "\n  per executed op: {:.3} taken branches, {:.3} calls, {:.3} transfers, {:.3} bytes loaded, {:.3} bytes stored",
        per_op(counts.taken_branches),
        per_op(counts.calls),
        per_op(counts.transfers),
        per_op(counts.bytes_loaded),
        per_op(counts.bytes_stored)
    );
    if let Some(calls) = p.host_calls {
        let _ = writeln!(
            out,
            "  WASI calls inside the timed region: {calls} (the host's work is part of the time)"
        );
    }
    let _ = writeln!(
        out,
        "\n  hot classes (>= {:.0}% of the app) and the shapes that price them:",
        HOT_SHARE * 100.0
    );
    for h in &p.hot_classes {
        let list = h
            .priced_by
            .iter()
            .map(|(s, v)| format!("{s} ({:.0}% of its ops)", v * 100.0))
            .collect::<Vec<_>>();
        let by = match h.priced_by.first() {
            None => "no built-in shape executes this class".to_string(),
            Some((_, best)) if *best < SHAPE_SHARE => {
                format!(
                    "weakly (no shape has it as {:.0}% of its ops): {}",
                    SHAPE_SHARE * 100.0,
                    list.join(", ")
                )
            }
            Some(_) => list.join(", "),
        };
        let _ = writeln!(
            out,
            "    {:<14} {:>5.1}% of the app   priced by: {by}",
            h.class.name(),
            h.app_share * 100.0
        );
    }
    if !p.skipped.is_empty() {
        let _ = writeln!(out, "    (shapes not counted: {})", p.skipped.join(", "));
    }
    out
}

/// Below this share of an app's time, the prices do not explain the app,
/// and the projection says where the time is missing.
const EXPLAINED: f64 = 0.8;

/// A per-rep amount in the projection's unit: ms of time, or millions of
/// the counter's units.
fn amount(v: f64, counter: Option<&str>) -> String {
    match counter {
        None => format!("{:.3} ms", v / 1e6),
        Some(c) => format!("{:.3}M {c}", v / 1e6),
    }
}

fn signed(v: f64, counter: Option<&str>) -> String {
    let a = amount(v, counter);
    if v >= 0.0 {
        format!("+{a}")
    } else {
        a
    }
}

/// `app project`: the prices (when the document has them), then per app
/// what they reproduce and project beside what was measured.
pub fn render_projection(d: &AppProjection) -> String {
    let counter = d.counter();
    let arms = d.arms();
    let mut out = String::new();
    if !d.prices.is_empty() {
        let _ = writeln!(
            out,
            "prices ({} per unit; least-squares fit over the shapes, this session):",
            counter.unwrap_or("ns")
        );
        let mut head = format!("  {:<14}", "feature");
        for l in &arms {
            head += &format!(" {l:>12}");
        }
        let _ = writeln!(out, "{head}");
        for f in crate::model::FEATURES {
            let mut row = format!("  {f:<14}");
            for p in &d.prices {
                row += &match p.ns.get(*f) {
                    Some(v) => format!(" {v:>12.3}"),
                    None => format!(" {:>12}", "-"),
                };
            }
            let _ = writeln!(out, "{row}");
        }
        for l in arms.iter().filter(|l| crate::model::is_compiler(l)) {
            let _ = writeln!(out, "  caveat ({l}): {}", crate::model::JIT_CAVEAT);
        }
    }
    for p in &d.projections {
        let _ = writeln!(out);
        let measured = d.app_session.results.iter().find(|r| r.shape == p.app);
        out += &render_projected(p, measured, &arms, counter, d.from_instructions);
    }
    out
}

/// One app of a projection; `r` is its result in the app session.
fn render_projected(
    p: &AppProjected,
    r: Option<&ShapeResult>,
    arms: &[&str],
    counter: Option<&str>,
    from_instructions: bool,
) -> String {
    let mut out = String::new();
    let branches = match &p.predictor {
        Some(t) => format!(
            "{} simulated mispredictions of {} decisions",
            t.mispredicts,
            t.conditional + t.multiway
        ),
        None => "branches not traced: no misprediction term".to_string(),
    };
    let _ = writeln!(
        out,
        "app {} (one rep = run({}), {} wasm ops, {branches})",
        p.app,
        p.steps,
        p.total_ops(),
    );
    let _ = writeln!(
        out,
        "  share of the app's {} the prices reproduce:",
        counter.unwrap_or("time")
    );
    for arm in arms {
        match p.coverage.iter().find(|c| c.arm == *arm) {
            Some(c) => render_coverage(&mut out, c, counter),
            None => {
                let _ = writeln!(
                    out,
                    "    {arm:<18} not measured (the arm did not run the app)"
                );
            }
        }
    }
    if from_instructions || !p.from_instructions.is_empty() {
        let _ = writeln!(
            out,
            "  share of the app's time its host instructions reproduce (ns per instruction and per misprediction from the shapes):"
        );
        for l in arms {
            let Some(row) = p.from_instructions.iter().find(|i| i.arm == *l) else {
                let _ = writeln!(
                    out,
                    "    {l:<18} unavailable (no time, no instruction fit or no instruction count for this arm)"
                );
                continue;
            };
            let _ = writeln!(
                out,
                "    {l:<18} {:>5.0}%  ({} of {} per rep: {:.1}M instructions x {:.4} ns, {} mispredictions x {:.2} ns)",
                100.0 * row.reproduced_ns / row.measured_ns,
                amount(row.reproduced_ns, None),
                amount(row.measured_ns, None),
                row.instructions / 1e6,
                row.ns_per_instruction,
                row.mispredicts,
                row.ns_per_mispredict
            );
        }
    }
    let _ = writeln!(out, "  projected vs measured change, every pair (B vs A):");
    for pair in &p.pairs {
        let shown = match (pair.measured_pct, pair.measured_ci_pct) {
            (Some(v), Some(ci)) => format!("{v:+7.1}% [{:+.1}%, {:+.1}%]", ci[0], ci[1]),
            (Some(v), None) => format!("{v:+7.1}% (ratio of medians)"),
            (None, _) => "unavailable".to_string(),
        };
        let top: Vec<String> = pair
            .projection
            .terms
            .iter()
            .take(3)
            .map(|t| format!("{} {}", t.feature, signed(t.delta_ns, counter)))
            .collect();
        let projected = match pair.projected_ci_pct {
            Some([lo, hi]) => format!("{:+7.1}% [{lo:+.1}%, {hi:+.1}%]", pair.projected_pct),
            None => format!("{:+7.1}%", pair.projected_pct),
        };
        let _ = writeln!(
            out,
            "    {:>18} vs {:<18} projected {projected}  measured {shown}  (largest terms: {})",
            pair.b,
            pair.a,
            top.join(", ")
        );
    }
    // The null control of what was priced: the time, or the counter.
    let null = r.and_then(|r| match counter {
        None => r.null_control.as_ref(),
        Some(c) => r.counter_null_control.get(c),
    });
    if let Some(n) = null {
        let _ = writeln!(
            out,
            "  null control ({}): {:+.1}% [{:+.1}%, {:+.1}%]",
            counter.unwrap_or("time"),
            n.median_pct,
            n.ci_pct[0],
            n.ci_pct[1]
        );
    }
    out
}

fn render_coverage(out: &mut String, c: &Coverage, counter: Option<&str>) {
    let m = c.measured_ns;
    let _ = writeln!(
        out,
        "    {:<18} {:>5.0}%  ({} of {} per rep)",
        c.arm,
        100.0 * c.share,
        amount(c.reproduced_ns, counter),
        amount(m, counter)
    );
    if c.share < EXPLAINED {
        let classes: Vec<String> = c
            .unpriced
            .iter()
            .take(5)
            .map(|(f, s)| format!("{f} {:.1}%", s * 100.0))
            .collect();
        let _ = writeln!(
            out,
            "      unexplained {} ({:+.2} {} per op if spread evenly); ops with no time in the model: {}",
            amount(m - c.reproduced_ns, counter),
            c.gap_ns_per_op,
            counter.unwrap_or("ns"),
            if classes.is_empty() { "none".to_string() } else { classes.join(", ") }
        );
    }
}
