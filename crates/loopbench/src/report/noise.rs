//! `loopbench noise` in the terminal and as a chart: one row per rep
//! length, the SD at each level, and what a session of the budget finds.

use super::markup::{Column, Markup, Text};
use super::svg::{self, DotChart, Row};
use crate::results::noise::Noise;
use std::fmt::Write;

pub fn render(n: &Noise) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "machine: {}", n.machine.summary());
    let _ = writeln!(
        out,
        "noise of {} ({}) on {} against its null control (a second process of the same build), {}",
        n.arm,
        n.version,
        n.shape,
        n.metric.name()
    );
    let _ = writeln!(out);
    let columns = [
        Column::right("rep ms", 7),
        Column::right("measured", 9),
        Column::left("schedule", 10).gap(2),
        Column::right("rep sd", 8),
        Column::right("round sd", 9),
        Column::right("epoch sd", 9),
        Column::right("E x R", 7),
        Column::right("s/epoch", 8),
        Column::right(format!("epochs in {} s", n.budget_s), 14),
        Column::right("±95%", 7),
        Column::right("finds", 7),
    ];
    let pct = |v: f64| format!("{v:.2}%");
    let rows: Vec<Vec<String>> = n
        .rows
        .iter()
        .map(|r| {
            let c = &r.components;
            vec![
                format!("{}", r.rep_ms),
                format!("{:.3}", r.measured_rep_ms),
                r.schedule.clone(),
                pct(c.rep_sd_pct),
                pct(c.round_sd_pct),
                pct(c.epoch_sd_pct),
                format!("{}x{}", c.epochs, c.rounds),
                format!("{:.2}", r.epoch_seconds),
                r.budget_epochs.to_string(),
                pct(r.half_width_pct),
                pct(r.smallest_change_pct),
            ]
        })
        .collect();
    out.push_str(&Text.table(&columns, &rows));
    let _ = writeln!(
        out,
        "rep sd: one call against the next of the same arm (unpaired); round sd: the paired \
         log ratio of the arm and its null control in one round; epoch sd: a whole pair of \
         processes beyond its rounds; finds: the smallest change found with 80% power at 95% \
         confidence in the budget"
    );
    match &n.session_level {
        Some(b) => {
            let _ = writeln!(
                out,
                "session sd: {:.1}% (absolute time of {} earlier sessions of {} on {} here, from \
                 the history): between sessions only ratios to a reference carry (run --reference)",
                b.sd_pct, b.sessions, n.shape, n.arm
            );
        }
        None => {
            let _ = writeln!(
                out,
                "session sd: unknown (fewer than 3 earlier sessions of {} on {} in the history)",
                n.shape, n.arm
            );
        }
    }
    if let Some(r) = n.chosen() {
        let _ = writeln!(
            out,
            "would use: --rep-ms {}{} (finds {:.2}% in {} s: {} epochs of {} rounds)",
            r.rep_ms,
            if r.schedule == "sequential" {
                String::new()
            } else {
                format!(" --schedule {}", r.schedule)
            },
            r.smallest_change_pct,
            n.budget_s,
            r.budget_epochs,
            r.components.rounds
        );
    }
    if let Some(s) = &n.estimators {
        out.push_str(&estimators(s));
    }
    if let Some(c) = &n.choice_estimator {
        let _ = writeln!(out, "would use: --estimator {} ({})", c.estimator, c.reason);
    }
    for note in &n.notes {
        let _ = writeln!(out, "note: {note}");
    }
    out
}

/// The estimators on the chosen row's own reps: A/A coverage and width,
/// and what a +1% injected into the null's reps gives.
fn estimators(s: &crate::replay::ShapeReplay) -> String {
    let mut out = format!(
        "\nestimators on the chosen row's own reps ({} epochs resampled {} times, roles swapped at random; `loopbench replay`):\n",
        s.epochs,
        s.rows.first().map(|r| r.sessions).unwrap_or(0)
    );
    let columns = [
        Column::left("estimator", 15),
        Column::right("A/A cover", 10),
        Column::right("±95%", 7),
        Column::right("+1% cover", 10),
        Column::right("+1% found", 10),
    ];
    // One recorded null per estimator, in the replay's order.
    let names: Vec<&str> = s.recorded.iter().map(|r| r.estimator.as_str()).collect();
    let pct = |v: f64| format!("{:.1}%", 100.0 * v);
    let rows: Vec<Vec<String>> = names
        .iter()
        .map(|name| {
            let at = |effect: f64| {
                s.rows
                    .iter()
                    .find(|r| r.estimator == *name && r.effect == effect)
            };
            let (aa, one) = (at(0.0), at(0.01));
            vec![
                name.to_string(),
                aa.map(|r| pct(r.coverage)).unwrap_or_default(),
                aa.map(|r| format!("{:.2}%", r.median_half_width_pct))
                    .unwrap_or_default(),
                one.map(|r| pct(r.coverage)).unwrap_or_default(),
                one.and_then(|r| r.detection).map(pct).unwrap_or_default(),
            ]
        })
        .collect();
    out.push_str(&Text.table(&columns, &rows));
    out
}

/// The SD per level against rep length, one row per rep length and level.
pub fn chart(n: &Noise) -> String {
    let mut rows = Vec::new();
    for r in &n.rows {
        let c = &r.components;
        for (level, value, color) in [
            ("rep", c.rep_sd_pct, svg::ORANGE),
            ("round", c.round_sd_pct, svg::BLUE),
            ("epoch", c.epoch_sd_pct, svg::VERMILLION),
        ] {
            rows.push(Row {
                label: format!("{} {} ms: {level}", r.schedule, r.rep_ms),
                point: Some(value),
                color,
                ..Default::default()
            });
        }
        rows.push(Row {
            label: format!("{} {} ms: finds", r.schedule, r.rep_ms),
            point: Some(r.smallest_change_pct),
            color: svg::BLACK,
            ..Default::default()
        });
    }
    DotChart {
        title: format!(
            "Noise of {} on {} by level, schedule and rep length",
            n.arm, n.shape
        ),
        x_label: "SD of the log ratio, and the smallest change found in the budget (%)".into(),
        rows,
        reference: Some(0.0),
        legend: vec![
            ("rep (unpaired)".into(), svg::ORANGE),
            ("round (paired)".into(), svg::BLUE),
            ("epoch (process pair)".into(), svg::VERMILLION),
            (format!("smallest change in {} s", n.budget_s), svg::BLACK),
        ],
        ..Default::default()
    }
    .svg()
}
