//! When a shape stops taking epochs: the three-way outcomes of its
//! candidates at planned looks, or, for a baseline and its null alone, the
//! null's precision; the budget and whole rotations of layout variants in
//! either case ([`crate::stats::stop`] holds the rule's numbers).

use super::{ShapeRun, LEVEL};
use crate::results::{Layout, ShapeResult, Stopped};
use crate::stats::stop::{Decision, StopReason, StopRule};

/// Whether a shape stops after the epoch that gave `result`, and why.
/// `rotation`: the most layout variants any arm cycles through; precision
/// counts only after whole rotations, so every variant weighs alike.
pub(super) fn stopped_after(
    rule: &StopRule,
    rotation: usize,
    run: &ShapeRun,
    result: &ShapeResult,
) -> Option<(StopReason, Stopped)> {
    let hw = widest_half_width(result);
    let decision = if result.comparisons.is_empty() && result.null_control.is_none() {
        // Only one arm (or none) ran: its time is reported, and no
        // interval exists to narrow.
        Decision::Stop(StopReason::NothingToCompare)
    } else {
        // Candidates are decided three ways (rule 16); a session of the
        // baseline and its null alone narrows the null to the precision.
        // Each look judges the outcomes at a stricter level, so that
        // stopping at the first decided look finds no change that is not
        // there (see StopRule::is_look).
        let candidates: Vec<&crate::results::Comparison> = result
            .comparisons
            .iter()
            .filter(|c| c.outcome.is_some())
            .collect();
        let spent = run.spent.as_secs_f64();
        // A shape narrowing with the session's time left was decided
        // before: now only precision and its budget end it.
        let decision = if candidates.is_empty() || run.decided.is_some() {
            rule.decide(hw, run.epochs, spent)
        } else {
            let floor = result.null_control.as_ref().map(|n| n.ci_pct);
            let strict = rule.look_level(LEVEL);
            let decided = candidates.iter().all(|c| {
                crate::stats::outcome::outcome_at(&c.check(), floor, rule.precision_pct, strict)
                    .decided()
            });
            rule.decide_outcomes(decided, run.epochs, spent)
        };
        match decision {
            Decision::Stop(StopReason::PrecisionReached | StopReason::Decided)
                if rotation >= 2
                    && (run.epochs < rotation || !run.epochs.is_multiple_of(rotation)) =>
            {
                Decision::Continue
            }
            d => d,
        }
    };
    let Decision::Stop(reason) = decision else {
        return None;
    };
    let has_width = hw.is_finite() && reason != StopReason::NothingToCompare;
    let mut said = match &run.decided {
        Some(d) => narrowed(d.epochs, &reason.to_string()),
        None => reason.to_string(),
    };
    if run.cut_epochs > 0 {
        said.push_str(&format!(
            "; --budget cut {} of {} epochs short of their warm-up and rounds",
            run.cut_epochs, run.epochs
        ));
    }
    Some((reason, run.stopped_now(said, has_width.then_some(hw))))
}

/// Why a shape stopped that was decided after `decided_epochs` and then
/// narrowed with the session's time left until `why`.
pub(super) fn narrowed(decided_epochs: usize, why: &str) -> String {
    format!("every comparison decided after {decided_epochs} epochs, then narrowed with the session's time: {why}")
}

/// The widest half-width of a shape's comparisons and null control, in
/// percent of the ratio each estimates (so "+236% [+212, +262]" is a
/// ratio known to about ±7%, not ±26 points); infinite while any of them
/// lacks the layout component.
pub(super) fn widest_half_width(r: &ShapeResult) -> f64 {
    let hw = |m: f64, ci: [f64; 2], l: &Layout| {
        if !l.includes_layout {
            return f64::INFINITY;
        }
        let ratio = 1.0 + m / 100.0;
        let (lo, hi) = (1.0 + ci[0] / 100.0, 1.0 + ci[1] / 100.0);
        ((hi / ratio - 1.0).max(1.0 - lo / ratio)) * 100.0
    };
    r.comparisons
        .iter()
        .map(|c| hw(c.median_pct, c.ci_pct, &c.layout))
        .chain(
            r.null_control
                .iter()
                .map(|n| hw(n.median_pct, n.ci_pct, &n.layout)),
        )
        .fold(0.0, f64::max)
}
