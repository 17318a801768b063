//! What a saved session may hold. A file edited by hand or written by
//! another tool is read back only if every time is one a clock could give
//! (finite, from 0 to [`MAX_NS`]) and every change has its interval's low
//! end at or below its high end, above -100%: a report never prints a
//! 310-digit time, a negative one or `[+50.0%, -50.0%]`.

use super::shape::{Comparison, NullControl, ShapeResult};
use super::Session;

use crate::units::MAX_NS;

/// The precision a stop rule or a comparison may ask for, in percent: down
/// to a rule only the budget ends, and every line that shows it stays a
/// line (1e-300 printed 300 zeros).
pub const PRECISION_PCT: std::ops::RangeInclusive<f64> = 1e-6..=1000.0;

/// The first value of `s` no measurement can have, in words.
pub fn check(s: &Session) -> Result<(), String> {
    if let Some(rule) = &s.session.stop_rule {
        if !PRECISION_PCT.contains(&rule.precision_pct) {
            return Err(format!(
                "the stop rule's precision {}% is outside {}% to {}%",
                shown(rule.precision_pct),
                PRECISION_PCT.start(),
                PRECISION_PCT.end()
            ));
        }
    }
    s.results.iter().try_for_each(check_shape)
}

fn check_shape(r: &ShapeResult) -> Result<(), String> {
    for a in &r.arms {
        let at = |what: &str| format!("shape {}, arm {}: {what}", r.shape, a.arm);
        if let Some(m) = &a.ns_per_iter {
            time(&at("ns_per_iter.median"), m.median)?;
            time(&at("ns_per_iter.min"), m.min)?;
        }
        if let Some(v) = a.ns_per_op {
            time(&at("ns_per_op"), v)?;
        }
        for v in &a.samples_ns_per_iter {
            time(&at("samples_ns_per_iter"), *v)?;
        }
        for rep in &a.reps {
            time(&at("reps[].ns"), rep.ns)?;
            if let Some(cpu) = rep.cpu_ns {
                time(&at("reps[].cpu_ns"), cpu)?;
            }
        }
    }
    let changes = r
        .comparisons
        .iter()
        .chain(&r.anchored)
        .chain(r.counter_comparisons.iter().map(|c| &c.comparison));
    for c in changes {
        let at = format!("shape {}, {} vs {}", r.shape, c.arm, c.vs);
        comparison(&at, c)?;
    }
    let nulls = r
        .null_control
        .iter()
        .map(|n| ("null_control", n))
        .chain(r.build_null.iter().map(|n| ("build_null", n)))
        .chain(
            r.counter_null_control
                .values()
                .map(|n| ("counter_null_control", n)),
        );
    for (what, n) in nulls {
        null(&format!("shape {}, {what}", r.shape), n)?;
    }
    Ok(())
}

fn time(at: &str, ns: f64) -> Result<(), String> {
    if ns.is_finite() && (0.0..=MAX_NS).contains(&ns) {
        Ok(())
    } else {
        Err(format!(
            "{at} is {}, which no clock gives (a time is from 0 to {MAX_NS:e} ns)",
            shown(ns)
        ))
    }
}

fn comparison(at: &str, c: &Comparison) -> Result<(), String> {
    if !(c.ratio.is_finite() && c.ratio > 0.0) {
        return Err(format!(
            "{at}: ratio {} is not a ratio of two times",
            shown(c.ratio)
        ));
    }
    change(at, c.median_pct, c.ci_pct)
}

fn null(at: &str, n: &NullControl) -> Result<(), String> {
    change(at, n.median_pct, n.ci_pct)
}

/// A change in percent of a time: finite, above -100% (no time is
/// negative), its interval in order.
fn change(at: &str, median: f64, [lo, hi]: [f64; 2]) -> Result<(), String> {
    let possible = |v: f64| v.is_finite() && v > -100.0;
    if !(possible(median) && possible(lo) && possible(hi)) {
        return Err(format!(
            "{at}: change {}% [{}%, {}%] is not a change of a time (finite, above -100%)",
            shown(median),
            shown(lo),
            shown(hi)
        ));
    }
    if lo > hi {
        return Err(format!(
            "{at}: interval [{}%, {}%] has its low end above its high end",
            shown(lo),
            shown(hi)
        ));
    }
    Ok(())
}

/// A number as a message shows it: a huge or tiny one in exponent form,
/// not as its 309 digits or 300 zeros.
pub fn shown(v: f64) -> String {
    if !v.is_finite() || v == 0.0 || (1e-4..1e9).contains(&v.abs()) {
        format!("{v}")
    } else {
        format!("{v:e}")
    }
}
