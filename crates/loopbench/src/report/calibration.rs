//! The calibration as a terminal report.

use crate::calibrate::{Calibration, EffectSummary, Metric, Reliable};
use std::fmt::Write as _;

fn pct(x: f64) -> String {
    format!("{x:+.2}")
}

fn load1(l: Option<[f64; 3]>) -> String {
    l.map(|l| format!("{:.2}", l[0]))
        .unwrap_or_else(|| "?".into())
}

/// The terminal report.
pub fn render(c: &Calibration) -> String {
    let mut o = String::new();
    let s = &c.settings;
    let _ = writeln!(o, "machine: {}", c.machine.summary());
    let _ = writeln!(
        o,
        "calibrate: shape {} on {} ({}), base {} iterations, working set {}, K = {}, {} rounds (+{} warm-up) x {} repetitions, {} busy threads, build {}",
        s.shape,
        s.engine,
        s.version,
        s.base_iters,
        crate::units::format_bytes(s.bytes),
        s.k,
        s.rounds,
        s.warmup,
        s.repeat,
        s.load_threads,
        s.build_profile
    );
    let bias = c.call_overhead_ns / c.base_call_ns;
    let _ = writeln!(
        o,
        "fixed per-call cost c <= {:.0} ns (one-iteration call), baseline call T = {:.3} ms: the true time effect is x * (1 - c/T) = x * {:.6}",
        c.call_overhead_ns,
        c.base_call_ns / 1e6,
        1.0 - bias
    );
    let _ = writeln!(o);
    let _ =
        writeln!(o, "per repetition: measured median change % [95% CI]; `!` marks an interval that misses the truth");
    let mut head = format!("{:>4} {:>7} {:>8}", "rep", "load1m", "secs");
    for e in &s.effects_pct {
        let _ = write!(head, "  {:<22}", format!("{:+}%", e));
    }
    let _ = writeln!(o, "{head}");
    for r in &c.repetitions {
        let mut line = format!(
            "{:>4} {:>7} {:>8.1}",
            r.repetition,
            load1(r.load_start),
            r.session_seconds
        );
        for e in &s.effects_pct {
            match c.rows.iter().find(|x| {
                x.metric == Metric::Wall && x.repetition == r.repetition && x.true_pct == *e
            }) {
                Some(x) => {
                    let cell = format!(
                        "{} [{},{}]{}",
                        pct(x.median_pct),
                        pct(x.ci_pct[0]),
                        pct(x.ci_pct[1]),
                        if x.covered { "" } else { "!" }
                    );
                    let _ = write!(line, "  {cell:<22}");
                }
                None => {
                    let _ = write!(line, "  {:<22}", "-");
                }
            }
        }
        let _ = writeln!(o, "{line}");
    }
    let _ = writeln!(o);
    let _ = writeln!(o, "by the wall clock (what sessions report):");
    render_effects(&mut o, &c.effects, c.smallest_reliable.as_ref());
    if let Some(t) = &c.thread_cpu {
        let _ = writeln!(o);
        let _ = writeln!(
            o,
            "by thread CPU time, same reps (waiting for a core not counted; c <= {:.0} ns, T = {:.3} ms):",
            t.call_overhead_ns,
            t.base_call_ns / 1e6
        );
        render_effects(&mut o, &t.effects, t.smallest_reliable.as_ref());
    }
    if !c.toggle.is_empty() {
        let _ = writeln!(o);
        let _ = writeln!(
            o,
            "known-sign toggle: wasmi:fuel vs wasmi (fuel metering only adds executed instructions; time may move either way, by alignment or prediction)"
        );
        let _ = writeln!(
            o,
            "{:<14} {:<28} {:<10} {:<13} {:<28} {:>6} {:>7}",
            "shape",
            "change % [95% CI]",
            "instructions",
            "verdict",
            "null control % [95% CI]",
            "secs",
            "load1m"
        );
        for t in &c.toggle {
            let null = match (t.null_median_pct, t.null_ci_pct) {
                (Some(m), Some(ci)) => format!("{} [{},{}]", pct(m), pct(ci[0]), pct(ci[1])),
                _ => "-".into(),
            };
            let _ = writeln!(
                o,
                "{:<14} {:<28} {:<10} {:<13} {:<28} {:>6.1} {:>7}",
                t.shape,
                format!(
                    "{} [{},{}]",
                    pct(t.median_pct),
                    pct(t.ci_pct[0]),
                    pct(t.ci_pct[1])
                ),
                match (t.instructions_pct, t.time_agrees) {
                    (None, _) => "instr ?".to_string(),
                    (Some(i), Some(false)) => format!("{} DISAGREE", pct(i)),
                    (Some(i), _) => pct(i),
                },
                t.verdict.to_string(),
                null,
                t.wall_seconds,
                load1(t.load_end)
            );
        }
    }
    let _ = writeln!(o);
    if let Some(note) = incomplete(c) {
        let _ = writeln!(o, "{note}");
    }
    let _ = writeln!(o, "calibration took {:.1} s", c.wall_seconds);
    o
}

/// What an interrupted calibration covers, for every format (`None` when
/// it is complete).
pub fn incomplete(c: &Calibration) -> Option<String> {
    (!c.complete).then(|| {
        format!(
            "calibration incomplete (interrupted): {} of {} repetitions completed, {} known-sign toggles",
            c.repetitions.len(),
            c.settings.repeat,
            c.toggle.len()
        )
    })
}

fn render_effects(o: &mut String, effects: &[EffectSummary], smallest: Option<&Reliable>) {
    let _ = writeln!(
        o,
        "{:>8} {:>10} {:>10} {:>10} {:>14} {:>22} {:>9} {:>10}",
        "true %",
        "median %",
        "mean |err|",
        "CI width",
        "coverage",
        "detected (CI excl. 0)",
        "min %",
        "min |err|"
    );
    for e in effects {
        let det = if e.true_pct == 0.0 {
            format!("{}/{} false alarms", e.detected, e.repetitions)
        } else {
            format!(
                "{}/{}{}",
                e.detected,
                e.repetitions,
                if e.reliably_detected { " reliable" } else { "" }
            )
        };
        let _ = writeln!(
            o,
            "{:>8} {:>10} {:>10.3} {:>10.3} {:>14} {:>22} {:>9} {:>10.3}",
            format!("{:+.2}", e.true_pct),
            pct(e.median_pct),
            e.mean_abs_error_pct,
            e.median_ci_width_pct,
            format!("{}/{} {:.0}%", e.covered, e.repetitions, e.coverage * 100.0),
            det,
            pct(e.min_pct),
            e.mean_abs_error_min_pct
        );
    }
    let _ = writeln!(o);
    match smallest {
        Some(r) => {
            let _ = writeln!(
                o,
                "smallest effect detected in >= 90% of repetitions: {:+}% ({}/{}), each repetition took {:.1} s (median; {:.0} s in all)",
                r.true_pct, r.detected, r.repetitions, r.median_session_seconds, r.total_session_seconds
            );
        }
        None => {
            let _ = writeln!(
                o,
                "no effect tried was detected in >= 90% of repetitions: the floor is above the largest effect"
            );
        }
    }
}
