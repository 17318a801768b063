//! A replay (`crate::replay`) as a terminal report, through the markup
//! layer and the units every report prints with.

use crate::replay::{Replay, Row};
use crate::report::markup::{Column, Markup, Text};
use crate::units::{interval, percent};

fn coverage(r: &Row) -> String {
    format!("{:.1}%", r.coverage * 100.0)
}

fn detection(r: &Row) -> String {
    r.detection
        .map(|d| format!("{:.1}%", d * 100.0))
        .unwrap_or_else(|| "-".into())
}

fn half_width(h: f64) -> String {
    format!("±{h:.2}%")
}

/// The report; with `per_shape`, each shape's rows after the summary.
pub fn render(r: &Replay, per_shape: bool) -> String {
    let t = Text;
    let mut o = String::new();
    let s = &r.settings;
    let mut arms: Vec<String> = Vec::new();
    for x in &r.shapes {
        let pair = format!("{} against {}", x.null, x.baseline);
        if !arms.contains(&pair) {
            arms.push(pair);
        }
    }
    let epochs = match s.epochs {
        Some(e) => format!("{e} epochs"),
        None => "as many epochs as recorded".into(),
    };
    o.push_str(&t.page(&format!(
        "replay of {} ({} session{}, metric {}): null {}\n",
        r.source,
        r.sessions.len(),
        if r.sessions.len() == 1 { "" } else { "s" },
        r.metric,
        arms.join("; "),
    )));
    o.push_str(&t.page(&format!(
        "{} resampled sessions per shape of {epochs} drawn with replacement, seed {}, {}; {:.0}% t interval across epochs; effect injected into the null's reps\n",
        s.resamples,
        s.seed,
        if s.swap {
            "baseline and null swapped per drawn epoch at random (the null's true effect is then exactly 0)"
        } else {
            "roles as recorded (the recorded null's offset stays in every resample)"
        },
        s.level * 100.0,
    )));
    if !r.skipped.is_empty() {
        let list: Vec<String> = r
            .skipped
            .iter()
            .map(|k| format!("{} ({})", k.shape, k.epochs))
            .collect();
        o.push_str(&t.page(&format!(
            "skipped, fewer than {} epochs: {}\n",
            s.min_epochs,
            list.join(", ")
        )));
    }
    o.push('\n');
    o.push_str(&t.heading(
        2,
        &format!(
            "over {} shapes: coverage of the true effect, median interval half-width, detection (interval excludes 0)",
            r.shapes.len()
        ),
    ));
    let columns = [
        Column::left("estimator", 15),
        Column::right("effect", 7),
        Column::right("coverage", 9),
        Column::right("half-width", 11),
        Column::right("detected", 9),
        Column::right("width vs median", 16),
        Column::right("narrowest on", 13),
        Column::left("recorded nulls excluding 0", 0).gap(3),
    ];
    o.push_str(&t.table_start(&columns));
    for row in &r.summary {
        let recorded = r
            .recorded_summary
            .iter()
            .find(|x| x.estimator == row.estimator && row.effect == s.effects[0])
            .map(|x| {
                format!(
                    "{}/{} (±{:.2}%)",
                    x.excluding_zero, x.shapes, x.median_half_width_pct
                )
            })
            .unwrap_or_default();
        o.push_str(
            &t.table_row(
                &columns,
                &[
                    &row.estimator,
                    &percent(row.effect * 100.0),
                    &coverage(row),
                    &half_width(row.median_half_width_pct),
                    &detection(row),
                    &row.width_vs_default
                        .map(|w| format!("{w:.3}x"))
                        .unwrap_or_else(|| "-".into()),
                    &row.narrowest_on
                        .map(|n| format!("{n}/{}", row.shapes))
                        .unwrap_or_default(),
                    &recorded,
                ],
            ),
        );
    }
    o.push_str(&t.table_end());
    o.push_str(&t.page(
        "width vs median: geometric mean over shapes of the half-width over the median estimator's; narrowest on: shapes where this estimator's half-width is the smallest\n\
         recorded nulls: each shape's null against its baseline on all its epochs, no resampling; about 5% should exclude 0 (median half-width in brackets)\n",
    ));
    if per_shape {
        o.push('\n');
        o.push_str(&t.heading(2, "per shape"));
        let columns = [
            Column::left("shape", 20),
            Column::right("epochs", 6),
            Column::left("estimator", 15),
            Column::right("effect", 7),
            Column::right("coverage", 9),
            Column::right("half-width", 11),
            Column::right("detected", 9),
            Column::left("recorded null [95% CI]", 0).gap(3),
        ];
        o.push_str(&t.table_start(&columns));
        for x in &r.shapes {
            for (i, row) in x.rows.iter().enumerate() {
                let k = i / s.effects.len();
                let first = i % s.effects.len() == 0;
                let rec = &x.recorded[k];
                let recorded = if first {
                    interval(rec.change_pct, rec.ci_pct)
                } else {
                    String::new()
                };
                let epochs = if i == 0 {
                    x.epochs.to_string()
                } else {
                    String::new()
                };
                o.push_str(&t.table_row(
                    &columns,
                    &[
                        if i == 0 { &x.shape } else { "" },
                        &epochs,
                        if first { &row.estimator } else { "" },
                        &percent(row.effect * 100.0),
                        &coverage(row),
                        &half_width(row.median_half_width_pct),
                        &detection(row),
                        &recorded,
                    ],
                ));
            }
        }
        o.push_str(&t.table_end());
    }
    o
}
