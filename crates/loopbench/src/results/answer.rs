//! What to run when a comparison of two sessions answers nothing (every row
//! unsure): commands built from what the two sessions measured, so the
//! reader is never left with "no change" where nothing was decided.

use super::compare::{Basis, CompareRow, SessionComparison};
use super::session::shell_quote;
use super::EngineInfo;
use crate::stats::outcome::Outcome;

/// The ways to an answer, most direct first; empty when some row has one.
/// `rerun` is the command that made A, to be given a reference.
pub fn ways(c: &SessionComparison, rerun: Option<&str>) -> Vec<String> {
    let unsure = |r: &CompareRow| r.outcome == Some(Outcome::Unsure);
    if c.rows.is_empty() || !c.rows.iter().all(unsure) {
        return Vec::new();
    }
    let mut ways = Vec::new();
    let unanchored = c.rows.iter().any(|r| r.basis == Some(Basis::None));
    let arms = distinct(c.rows.iter().map(|r| r.arm.as_str()));
    if unanchored && c.reference.is_none() {
        // An arm measured in both, in one build, anchors every other arm.
        let shared =
            c.a.engines
                .iter()
                .find(|e| same_build(e, &c.b.engines) && arms.iter().any(|a| *a != e.arm));
        match (shared, rerun) {
            (Some(r), _) => ways.push(format!(
                "anchor on {} (one build, measured in both): loopbench compare {} {} --reference {}",
                r.arm,
                shell_quote(&c.a.label),
                shell_quote(&c.b.label),
                shell_quote(&r.arm)
            )),
            (None, Some(cmd)) => ways.push(format!(
                "run both sessions again with a reference arm, a build that stays put: {cmd} --reference ENGINE@=VERSION"
            )),
            (None, None) => ways.push(
                "run both sessions again with --reference ENGINE@=VERSION, a build that stays put"
                    .to_string(),
            ),
        }
        let shapes = distinct(c.rows.iter().map(|r| r.shape.as_str()));
        for arm in &arms {
            if let Some(one) = one_session(arm, c, &shapes) {
                ways.push(one);
            }
        }
        if c.rows.iter().any(|r| {
            r.reason
                .as_deref()
                .is_some_and(|w| w.contains("in the history"))
        }) {
            ways.push(
                "or keep both in the history (no --no-history): from 3 sessions of a shape and \
                 arm on this machine, compare learns how far sessions drift"
                    .to_string(),
            );
        }
    }
    let decided = |r: &&CompareRow| r.basis != Some(Basis::None) && !r.counted_out;
    let reach = c
        .rows
        .iter()
        .filter(decided)
        .map(|r| r.ci_pct[0].abs().max(r.ci_pct[1].abs()))
        .fold(f64::NAN, f64::max);
    if reach.is_finite() {
        ways.push(format!(
            "narrow the intervals (they reach ±{reach:.1}%): a longer --budget for both \
             sessions, or judge at --precision {}",
            reach.ceil()
        ));
    }
    if c.rows.iter().any(|r| r.counted_out) {
        ways.push(
            "a row that changed alone but not among all rows is decided by measuring both \
             builds as arms of one session"
                .to_string(),
        );
    }
    ways
}

/// In first-seen order, once each.
pub fn distinct<'a>(items: impl Iterator<Item = &'a str>) -> Vec<&'a str> {
    let mut seen: Vec<&str> = Vec::new();
    for i in items {
        if !seen.contains(&i) {
            seen.push(i);
        }
    }
    seen
}

/// `e` ran as the same build in the other session (its version names the
/// build, and for a compiled-in engine the loopbench binary).
fn same_build(e: &EngineInfo, other: &[EngineInfo]) -> bool {
    other
        .iter()
        .any(|o| o.arm == e.arm && o.version == e.version && o.git == e.git)
}

/// When `arm` is another build in B, the session that measures both builds
/// side by side: runnable as it is for two registry versions.
fn one_session(arm: &str, c: &SessionComparison, shapes: &[&str]) -> Option<String> {
    let a = c.a.engines.iter().find(|e| e.arm == arm)?;
    let b = c.b.engines.iter().find(|e| e.arm == arm)?;
    if same_build(a, &c.b.engines) {
        return None;
    }
    let release = |e: &EngineInfo| {
        let mut words = e.version.split_whitespace();
        let (engine, version) = (words.next()?, words.next()?);
        semver::Version::parse(version).ok()?;
        Some((engine.to_string(), version.to_string()))
    };
    Some(match (release(a), release(b)) {
        (Some((ea, va)), Some((eb, vb))) if ea == eb && va != vb => format!(
            "measure both builds of {arm} in one session: loopbench run --engines {ea}@={va},{eb}@={vb} --shapes {}",
            shell_quote(&shapes.join(","))
        ),
        _ => format!(
            "measure both builds of {arm} as two arms of one session (e.g. --engines \
             ENGINE=path:OLD,ENGINE=path:NEW)"
        ),
    })
}
