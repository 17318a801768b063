//! Alerts: the flagged steps of a track's anchored series, one row each.
//!
//! A track's series is one machine, one shape, the track's arm and one
//! reference build (a new yardstick starts a new series, as in `trend`),
//! in the order its sessions were recorded. Its steps are judged by the
//! one rule of [`super::trend`], each session's own interval of its ratio
//! to the reference included, exactly as `trend` judges them; a flagged
//! step becomes an alert: the session it arrives at, the session before
//! it, their commits (the range a bisect searches) and the change with its
//! 95% interval.
//!
//! Alerts are raised in the transaction that stores a session, and the
//! table's UNIQUE key (track, machine, shape, arm, series, session) makes
//! raising them again (a job re-run, a session re-evaluated) write nothing.
//! The rule's "clearest of its neighbours" may move a step's flag by one
//! session as the next session arrives; a flag next to a session that
//! already has an alert in the same series is the same step, and raises
//! nothing new.

use super::store::{Sql, StoreError};
use super::trend::{self, Kind};
use crate::arm::ArmSpec;
use crate::report::markup::{Column, Markdown, Markup, Text};

/// One session's point of a track's series.
struct Point {
    session: i64,
    commit: Option<String>,
    /// The arm's build as the session described it (with the loopbench
    /// binary that built it).
    version: String,
    /// Its ratio to the reference, with that session's own interval.
    value: trend::Value,
}

impl Point {
    fn build(&self) -> (&str, Option<&str>) {
        (&self.version, self.commit.as_deref())
    }
}

/// The series label of an anchored series (the yardstick), as `trend`
/// prints it.
pub fn series_label(reference: &str, version: &str) -> String {
    format!("ratio to {reference} ({version})")
}

/// Raise the alerts of track `track`'s series of `arm` on machine `machine`
/// (inside the caller's transaction); the ids of alerts written now.
pub fn evaluate(
    db: &mut dyn Sql,
    track: i64,
    arm: &str,
    machine: i64,
) -> Result<Vec<i64>, StoreError> {
    let d = db.dialect();
    let rows = db.query(
        &d.sql(
            "SELECT h.name, s.metric, s.reference_arm, COALESCE(r.version, ''), s.id, a.commit_id,
                    x.ref_change_pct, x.ref_ci_low_pct, x.ref_ci_high_pct, a.version
             FROM summaries x
             JOIN sessions s ON s.id = x.session_id
             JOIN shapes h ON h.id = x.shape_id
             JOIN arms a ON a.id = x.arm_id
             LEFT JOIN arms r ON r.session_id = s.id AND r.label = s.reference_arm
             WHERE s.track_id = $1 AND s.machine_id = $2 AND a.label = $3
               AND x.role NOT IN ('null', 'build_null') AND x.ref_change_pct IS NOT NULL
               AND s.reference_arm IS NOT NULL
             ORDER BY h.name, s.metric, s.reference_arm, 4, s.recorded_at, s.id",
        ),
        &[track.into(), machine.into(), arm.into()],
    )?;
    let mut series: Vec<((String, String), Vec<Point>)> = Vec::new();
    for r in &rows {
        let shape = r.text(0)?;
        let label = series_label(&r.text(2)?, &r.text(3)?);
        let label = match r.text(1)?.as_str() {
            "wall" => label,
            metric => format!("{label}, {metric}"),
        };
        let point = Point {
            session: r.int(4)?,
            commit: r.opt_text(5)?,
            version: crate::results::build_identity(&r.text(9)?),
            value: trend::Value::anchored(
                r.real(6)?,
                r.opt_real(7)?.zip(r.opt_real(8)?).map(|(l, h)| [l, h]),
            ),
        };
        match series.last_mut() {
            Some((k, points)) if k.0 == shape && k.1 == label => points.push(point),
            _ => series.push(((shape, label), vec![point])),
        }
    }
    let mut raised = Vec::new();
    for ((shape, label), points) in series {
        let values: Vec<trend::Value> = points
            .iter()
            .enumerate()
            .map(|(k, p)| {
                let before = points[k.saturating_sub(1)].build();
                match super::builds::new_build(before, p.build()) {
                    Some(changed) if k > 0 => p.value.with_new_build(changed),
                    _ => p.value,
                }
            })
            .collect();
        for step in trend::steps(&values, Kind::Anchored) {
            if !step.flagged {
                continue;
            }
            let (at, before) = (&points[step.index], &points[step.index - 1]);
            let neighbours: Vec<i64> = [step.index - 1, step.index + 1]
                .iter()
                .filter_map(|&i| points.get(i).map(|p| p.session))
                .collect();
            let taken = db.query(
                &d.sql(
                    "SELECT count(*) FROM alerts
                     WHERE track_id = $1 AND machine_id = $2 AND shape = $3 AND arm = $4
                       AND series = $5 AND session_id IN ($6, $7)",
                ),
                &[
                    track.into(),
                    machine.into(),
                    shape.as_str().into(),
                    arm.into(),
                    label.as_str().into(),
                    neighbours[0].into(),
                    neighbours.get(1).copied().unwrap_or(-1).into(),
                ],
            )?;
            if taken.first().map(|r| r.int(0)).transpose()?.unwrap_or(0) > 0 {
                continue;
            }
            let rows = db.query(
                &d.sql(
                    "INSERT INTO alerts (track_id, machine_id, shape, arm, series, session_id,
                        before_session_id, before_commit, after_commit, change_pct, ci_low_pct,
                        ci_high_pct, created_at)
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, {now})
                     ON CONFLICT DO NOTHING RETURNING id",
                ),
                &[
                    track.into(),
                    machine.into(),
                    shape.as_str().into(),
                    arm.into(),
                    label.as_str().into(),
                    at.session.into(),
                    before.session.into(),
                    before.commit.clone().into(),
                    at.commit.clone().into(),
                    step.change_pct.into(),
                    step.ci_pct[0].into(),
                    step.ci_pct[1].into(),
                ],
            )?;
            if let Some(r) = rows.first() {
                raised.push(r.int(0)?);
            }
        }
    }
    Ok(raised)
}

/// An alert as listed.
#[derive(Clone, Debug, PartialEq)]
pub struct Alert {
    pub id: i64,
    pub track: String,
    /// The track's reference arm (for the reproduction commands).
    pub reference: String,
    /// The agent's label for fleet sessions, else `hostname (cpu)`.
    pub machine: String,
    pub shape: String,
    pub arm: String,
    pub series: String,
    /// The session the step arrives at, and the one before it.
    pub session_id: i64,
    pub before_session_id: i64,
    pub before_commit: Option<String>,
    pub after_commit: Option<String>,
    pub change_pct: f64,
    pub ci_pct: [f64; 2],
    /// When the step's session was recorded (UTC).
    pub recorded: String,
}

/// Every alert (of the track named `track`), oldest first.
pub fn list(db: &mut dyn Sql, track: Option<&str>) -> Result<Vec<Alert>, StoreError> {
    let d = db.dialect();
    if super::store::version(db)? < 6 {
        return Ok(Vec::new());
    }
    let rows = db.query(
        &d.sql(&format!(
            "SELECT al.id, t.name, t.reference, COALESCE(s.label, m.hostname || ' (' || m.cpu || ')'),
                    al.shape, al.arm, al.series, al.session_id, al.before_session_id,
                    al.before_commit, al.after_commit, al.change_pct, al.ci_low_pct, al.ci_high_pct,
                    {}
             FROM alerts al
             JOIN tracks t ON t.id = al.track_id
             JOIN sessions s ON s.id = al.session_id
             JOIN machines m ON m.id = al.machine_id
             WHERE ($1 = '' OR t.name = $1)
             ORDER BY al.id",
            d.datetime("s.recorded_at")
        )),
        &[track.unwrap_or("").into()],
    )?;
    rows.iter()
        .map(|r| {
            Ok(Alert {
                id: r.int(0)?,
                track: r.text(1)?,
                reference: r.text(2)?,
                machine: r.text(3)?,
                shape: r.text(4)?,
                arm: r.text(5)?,
                series: r.text(6)?,
                session_id: r.int(7)?,
                before_session_id: r.int(8)?,
                before_commit: r.opt_text(9)?,
                after_commit: r.opt_text(10)?,
                change_pct: r.real(11)?,
                ci_pct: [r.real(12)?, r.real(13)?],
                recorded: r.text(14)?,
            })
        })
        .collect()
}

impl Alert {
    pub fn direction(&self) -> &'static str {
        if self.change_pct > 0.0 {
            "slower (regression)"
        } else {
            "faster (improvement)"
        }
    }

    /// `before..after`, short commits; `-` where a session has none.
    pub fn range(&self) -> String {
        let short = |c: &Option<String>| {
            c.as_deref()
                .map_or("-".to_string(), |c| c.chars().take(12).collect())
        };
        format!(
            "{}..{}",
            short(&self.before_commit),
            short(&self.after_commit)
        )
    }

    fn change(&self) -> String {
        format!(
            "{:+.2}% [{:+.2}%, {:+.2}%]",
            self.change_pct, self.ci_pct[0], self.ci_pct[1]
        )
    }

    /// The commands that reproduce the step: a bisect of the commit range
    /// and an in-session A/B of its two ends (git arms), else the track's
    /// session again.
    pub fn reproduce(&self) -> Vec<String> {
        let q = |s: &str| sh_quote(s);
        // The stored arm was parsed when its track was added. Its build
        // settings come along, or the commands would build another engine.
        let arm = self.arm.parse::<ArmSpec>().ok();
        let at = |rev: Option<&str>| arm.as_ref().and_then(|a| a.at_revision(rev));
        match (at(None), &self.before_commit, &self.after_commit) {
            (Some(repo), Some(good), Some(bad)) if good != bad => vec![
                format!(
                    "loopbench bisect --engine {} --good {} --bad {} --shapes {}",
                    q(&repo),
                    q(good),
                    q(bad),
                    q(&self.shape)
                ),
                format!(
                    "loopbench run --engines {} --reference {} --shapes {}",
                    q(&[at(Some(good)), at(Some(bad))]
                        .map(Option::unwrap_or_default)
                        .join(",")),
                    q(&self.reference),
                    q(&self.shape)
                ),
            ],
            _ => vec![format!(
                "loopbench run --engines {} --reference {} --shapes {}",
                q(&self.arm),
                q(&self.reference),
                q(&self.shape)
            )],
        }
    }
}

/// `s` as one shell word: as it is when it holds only characters no shell
/// treats specially, else in single quotes.
fn sh_quote(s: &str) -> String {
    let plain = !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.,:=/#@+%".contains(c));
    if plain {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

/// The alerts as a terminal table.
pub fn text(alerts: &[Alert]) -> String {
    let header = [
        "alert",
        "track",
        "machine",
        "shape",
        "series",
        "commits",
        "change [95%]",
        "",
        "sessions",
    ];
    let rows: Vec<Vec<String>> = alerts
        .iter()
        .map(|a| {
            vec![
                a.id.to_string(),
                a.track.clone(),
                a.machine.clone(),
                a.shape.clone(),
                a.series.clone(),
                a.range(),
                a.change(),
                a.direction().to_string(),
                format!(
                    "{} -> {} ({})",
                    a.before_session_id, a.session_id, a.recorded
                ),
            ]
        })
        .collect();
    let columns: Vec<Column> = header
        .iter()
        .enumerate()
        .map(|(i, h)| {
            let width = rows
                .iter()
                .map(|r| Text.escape(&r[i]).chars().count())
                .chain([h.chars().count()])
                .max()
                .unwrap_or(0);
            if i == 0 {
                Column::right(*h, width)
            } else {
                Column::left(*h, width).gap(2)
            }
        })
        .collect();
    Text.table(&columns, &rows)
}

/// The alerts as Markdown, one section each, ready to paste into an
/// engine's issue tracker: what changed and where, the commit range, the
/// change with its interval, the sessions, and how to reproduce it. Every
/// stored text is escaped (a label or an arm may hold any character).
pub fn markdown(alerts: &[Alert]) -> String {
    let mut out = String::new();
    for a in alerts {
        let title = format!(
            "{} {:+.1}% on {} ({}, track {})",
            if a.change_pct > 0.0 {
                "Regression:"
            } else {
                "Improvement:"
            },
            a.change_pct,
            a.shape,
            a.arm,
            a.track
        );
        out.push_str(&Markdown.heading(2, &title));
        out.push_str(&format!(
            "loopbench's tracking of {} flagged a step: {} is **{}** by {} \
             (95% interval) in its {}.\n\n",
            Markdown.code_span(&a.arm),
            Markdown.escape(&a.shape),
            a.direction(),
            Markdown.escape(&a.change()),
            Markdown.escape(&a.series),
        ));
        // Table cells are escaped, never code spans: a `|` ends a cell
        // even inside one.
        let commits = match (&a.before_commit, &a.after_commit) {
            (Some(b), Some(c)) => Markdown.escape(&format!("{b}..{c}")),
            _ => "not recorded (the arm is not a git arm)".to_string(),
        };
        let rows = [
            ("machine", Markdown.escape(&a.machine)),
            ("shape", Markdown.escape(&a.shape)),
            ("arm", Markdown.escape(&a.arm)),
            ("series", Markdown.escape(&a.series)),
            ("commit range (last good..first flagged)", commits),
            ("change (95% interval)", Markdown.escape(&a.change())),
            (
                "sessions",
                format!(
                    "{} (before) -> {} (recorded {})",
                    a.before_session_id,
                    a.session_id,
                    Markdown.escape(&a.recorded)
                ),
            ),
        ];
        out.push_str("| | |\n|---|---|\n");
        for (k, v) in rows {
            out.push_str(&format!("| {k} | {v} |\n"));
        }
        out.push_str(&format!(
            "\nThe rule: {}.\n\nTo reproduce:\n\n",
            Markdown.escape(trend::RULE)
        ));
        out.push_str(&Markdown.code_block("sh", &a.reproduce().join("\n")));
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn alert(arm: &str, machine: &str) -> Alert {
        Alert {
            id: 1,
            track: "wasmi-main".into(),
            reference: "wasmi@=2.0.0".into(),
            machine: machine.into(),
            shape: "load_stream".into(),
            arm: arm.into(),
            series: "ratio to wasmi@=2.0.0 (2.0.0)".into(),
            session_id: 9,
            before_session_id: 8,
            before_commit: Some("a".repeat(40)),
            after_commit: Some("b".repeat(40)),
            change_pct: 3.21,
            ci_pct: [2.5, 3.9],
            recorded: "2026-06-01 00:00:00".into(),
        }
    }

    #[test]
    fn a_git_arm_s_alert_says_how_to_bisect_it() {
        let md = markdown(&[alert("wasmi=git:/src/wasmi#main", "epyc-2c")]);
        assert!(
            md.starts_with("## Regression: +3.2% on load_stream (wasmi=git:/src/wasmi#main, track wasmi-main)\n"),
            "{md}"
        );
        let (a, b) = ("a".repeat(40), "b".repeat(40));
        assert!(md.contains(&format!(
            "loopbench bisect --engine wasmi=git:/src/wasmi --good {a} --bad {b} --shapes load_stream\n"
        )), "{md}");
        assert!(md.contains(&format!(
            "loopbench run --engines wasmi=git:/src/wasmi#{a},wasmi=git:/src/wasmi#{b} --reference wasmi@=2.0.0"
        )), "{md}");
        assert!(
            md.contains("| change (95% interval) | +3.21% [+2.50%, +3.90%] |"),
            "{md}"
        );
    }

    #[test]
    fn the_commands_keep_the_arm_s_build_settings() {
        let md = markdown(&[alert("wasmi=git:/src/wasmi#main+feature:simd", "epyc-2c")]);
        let (a, b) = ("a".repeat(40), "b".repeat(40));
        assert!(
            md.contains(&format!(
                "loopbench bisect --engine wasmi=git:/src/wasmi+feature:simd --good {a} --bad {b} "
            )),
            "{md}"
        );
        assert!(
            md.contains(&format!(
            "--engines wasmi=git:/src/wasmi#{a}+feature:simd,wasmi=git:/src/wasmi#{b}+feature:simd "
        )),
            "{md}"
        );
    }

    #[test]
    fn stored_text_cannot_break_the_markdown_or_the_commands() {
        let md = markdown(&[alert("wasmi=git:/a dir/x'y#main", "m|<b>\n# x")]);
        assert!(md.contains("| machine | m\\|&lt;b&gt;<br># x |"), "{md}");
        assert!(
            md.contains("--engine 'wasmi=git:/a dir/x'\\''y' --good"),
            "{md}"
        );
    }
}
