//! `loopbench trend`: one series per machine, shape, arm and metric, in
//! up to three kinds (absolute time, the ratio to the session's
//! reference, exact instruction counts), each step judged against the
//! series' own noise and, for the anchored series, the session's own
//! interval ([`trend::RULE`]).

use super::DbArg;
use crate::error::Error;
use crate::history::trend::Kind;
use crate::history::{builds, series, trend};
use crate::report::markup::{Markup, Text};
use clap::Args;

/// The rule is in `--help` (the long about) and in the output.
#[derive(Args, Debug)]
#[command(after_help = trend::RULE)]
pub struct TrendArgs {
    /// The shape.
    #[arg(long)]
    pub shape: String,
    /// The arm, as written in the sessions (e.g. wasmi, wasmi@0.31).
    #[arg(long)]
    pub arm: String,
    /// Only this metric (default: every metric stored).
    #[arg(long, value_enum)]
    pub metric: Option<super::run::MetricArg>,
    /// Only this machine: its label for fleet sessions, else `hostname (cpu)` as printed.
    #[arg(long)]
    pub machine: Option<String>,
    /// Also write the series as an HTML page of plots to FILE: each
    /// session's value in order, the anchored ones with their 95%
    /// intervals, flagged steps coloured.
    #[arg(long, value_name = "FILE")]
    pub html: Option<std::path::PathBuf>,
    #[command(flatten)]
    pub db: DbArg,
}

impl TrendArgs {
    pub fn execute(&self) -> Result<bool, Error> {
        let location = self.db.location()?;
        let mut db = location.open_read()?;
        let metric = self.metric.map(|m| match m {
            super::run::MetricArg::Wall => "wall",
            super::run::MetricArg::Cpu => "thread_cpu",
        });
        let series: Vec<_> = series::read(db.as_mut(), Some(&self.shape), Some(&self.arm), metric)?
            .into_iter()
            .filter(|(k, _)| self.machine.as_ref().is_none_or(|m| *m == k.machine))
            .collect();
        if series.is_empty() {
            return Err(Error::Usage(format!(
                "no stored results of shape {} on arm {} in {location} (see `loopbench history`)",
                self.shape, self.arm
            )));
        }
        crate::outln!("rule: {}", trend::RULE);
        let mut body = format!(
            "<p class=\"meta\">{}</p>\n",
            crate::report::svg::esc(trend::RULE)
        );
        for (k, points) in &series {
            for s in kinds(points) {
                // One judgement for the table and the chart.
                let v: Vec<trend::Value> = s.values.iter().map(|(_, v)| *v).collect();
                let steps = trend::steps(&v, s.kind);
                print_series(k, &s, &steps)?;
                body.push_str(&chart(k, &s, &steps));
            }
        }
        if let Some(p) = &self.html {
            let title = format!("loopbench trend: {} on {}", self.shape, self.arm);
            crate::report::write_atomic(p, crate::report::html::page(&title, &body).as_bytes())?;
            crate::diag!("trend: {}", p.display());
        }
        Ok(true)
    }
}

/// The series a stored series holds, each with the values of the sessions
/// that have it: absolute time always; the ratio to the reference, one
/// series per reference build (a new yardstick starts a new series); exact
/// instructions per iteration where callgrind counted them. Only the
/// anchored values carry the session's own interval: the history stores
/// none for a session's absolute time, and instruction counts are exact.
fn kinds(points: &[series::Point]) -> Vec<KindSeries<'_>> {
    let mut out = vec![KindSeries {
        kind: Kind::Time,
        label: "median ns/iter".to_string(),
        values: points.iter().map(|p| (p, p.median_ns.into())).collect(),
    }];
    let mut anchors: Vec<(String, Vec<(&series::Point, trend::Value)>)> = Vec::new();
    for p in points {
        let Some(a) = &p.anchored else { continue };
        let yardstick = format!("ratio to {} ({})", a.reference, a.reference_version);
        let value = trend::Value::anchored(a.change_pct, Some(a.ci_pct));
        match anchors.iter_mut().find(|(y, _)| *y == yardstick) {
            Some((_, v)) => v.push((p, value)),
            None => anchors.push((yardstick, vec![(p, value)])),
        }
    }
    out.extend(anchors.into_iter().map(|(label, values)| KindSeries {
        kind: Kind::Anchored,
        label,
        values,
    }));
    let counted: Vec<(&series::Point, trend::Value)> = points
        .iter()
        .filter_map(|p| Some((p, p.instructions_per_iter?.into())))
        .collect();
    if !counted.is_empty() {
        out.push(KindSeries {
            kind: Kind::Instructions,
            label: "instructions/iter (callgrind)".to_string(),
            values: counted,
        });
    }
    for s in &mut out {
        mark_new_builds(&mut s.values);
    }
    out
}

/// Mark each value whose session measured another build (version or
/// commit) than the session before it in the series, or the same
/// ([`builds::new_build`]: unknown for versions recorded before they
/// named the loopbench binary).
fn mark_new_builds(values: &mut [(&series::Point, trend::Value)]) {
    for k in 1..values.len() {
        if let Some(changed) = builds::new_build(values[k - 1].0.build(), values[k].0.build()) {
            values[k].1 = values[k].1.with_new_build(changed);
        }
    }
}

/// One kind of a series as a chart: a row per session in recording order.
/// Anchored values are the change against the reference with its 95%
/// interval across epochs (on a log-ratio axis); time and instruction
/// counts their value. A flagged step's session is coloured by direction,
/// a pending one orange, one the values alone would flag but its own
/// interval does not support grey.
fn chart(k: &series::SeriesKey, s: &KindSeries<'_>, steps: &[trend::Step]) -> String {
    use crate::report::svg::{self, DotChart, Row};
    let rows: Vec<Row> = s
        .values
        .iter()
        .enumerate()
        .map(|(i, (p, v))| {
            let step = i.checked_sub(1).map(|j| &steps[j]);
            let color = match step {
                Some(st) if st.flagged && st.change_pct > 0.0 => svg::VERMILLION,
                Some(st) if st.flagged => svg::GREEN,
                Some(st) if st.pending => svg::ORANGE,
                Some(st) if st.inside_own_ci => svg::GREY,
                Some(st) if st.same_build => svg::PURPLE,
                _ => svg::BLUE,
            };
            let commit = p
                .commit
                .as_deref()
                .map(|c| format!(" {}", builds::short_commit(c)))
                .unwrap_or_default();
            let (point, interval) = match (s.kind, &p.anchored) {
                (Kind::Anchored, Some(a)) => (
                    Some(a.change_pct),
                    Some(a.ci_pct).filter(|c| c.iter().all(|x| x.is_finite())),
                ),
                _ => (Some(v.value), None),
            };
            Row {
                label: format!("#{} {}{commit}", p.session_id, p.recorded),
                point,
                interval,
                color,
                ..Default::default()
            }
        })
        .collect();
    let (x_label, reference, log_ratio) = match s.kind {
        Kind::Anchored => (
            "change against the reference (%), 95% interval across epochs",
            Some(0.0),
            true,
        ),
        Kind::Time => ("median ns per iteration", None, false),
        Kind::Instructions => ("instructions per iteration (callgrind)", None, false),
    };
    let mut legend = vec![
        ("flagged: slower".into(), svg::VERMILLION),
        ("flagged: faster".into(), svg::GREEN),
        ("pending the next session".into(), svg::ORANGE),
    ];
    if steps.iter().any(|s| s.inside_own_ci) {
        legend.push((
            "not flagged: inside the session's own interval".into(),
            svg::GREY,
        ));
    }
    if steps.iter().any(|s| s.same_build) {
        legend.push((
            "not flagged: the same build as the session before (the machine's)".into(),
            svg::PURPLE,
        ));
    }
    let heading = format!(
        "<h2>{}</h2>\n",
        svg::esc(&format!(
            "{} / {} / {} / {}: {}",
            k.machine,
            k.shape_label(),
            k.arm,
            k.metric,
            s.label
        ))
    );
    heading
        + &DotChart {
            title: format!("{}, {}", s.kind.name(), k.metric),
            x_label: x_label.into(),
            rows,
            reference,
            log_ratio,
            legend,
            ..Default::default()
        }
        .svg()
}

/// One kind of a stored series: the sessions that have it, with its value.
struct KindSeries<'a> {
    kind: Kind,
    label: String,
    values: Vec<(&'a series::Point, trend::Value)>,
}

fn print_series(
    k: &series::SeriesKey,
    s: &KindSeries<'_>,
    steps: &[trend::Step],
) -> Result<(), Error> {
    let (kind, label) = (s.kind, s.label.as_str());
    crate::outln!(
        "\n{} / {} / {} / {}: {}, {} sessions ({})",
        Text.escape(&k.machine),
        Text.escape(&k.shape_label()),
        Text.escape(&k.arm),
        Text.escape(&k.metric),
        kind.name(),
        s.values.len(),
        Text.escape(label)
    );
    // A build description repeated on every row hides the one part that
    // moves (the commit): said once when every session shares it.
    let shared_version = shared_build(s.values.iter().map(|(p, _)| *p));
    if let Some(version) = &shared_version {
        crate::outln!("  build of every session: {}", Text.escape(version));
    }
    // The step is not the change from the session before: it is what a
    // lasting shift would look like at this point, judged against the
    // noise of the sessions before.
    let after = match trend::AFTER {
        2 => "the next".to_string(),
        n => format!("the next {}", n - 1),
    };
    crate::outln!(
        "  step: this session with {after} against up to {} before it (geometric means); \
         flagged beyond the threshold",
        trend::BEFORE
    );
    crate::outln!(
        "  {:>7}  {:<19}  {:>12}  {:>9}  {:>9}  {:<16}",
        "session",
        "recorded (UTC)",
        "value",
        "step",
        "threshold",
        if shared_version.is_some() {
            "commit"
        } else {
            "build"
        }
    );
    for (i, (p, v)) in s.values.iter().enumerate() {
        let step = i.checked_sub(1).map(|j| &steps[j]);
        let (change, threshold, flag) = match step {
            Some(s) if s.threshold_pct.is_nan() => (
                format!("{:+.2}%", s.change_pct),
                "-".to_string(),
                String::new(),
            ),
            Some(s) => (
                format!("{:+.2}%", s.change_pct),
                format!("{:.2}%", s.threshold_pct),
                match (s.flagged, s.pending, s.change_pct > 0.0) {
                    (true, _, true) => "  << slower (regression)".to_string(),
                    (true, _, false) => "  << faster (improvement)".to_string(),
                    (false, true, _) => {
                        "  ? beyond the bound: pending the next session".to_string()
                    }
                    _ if s.inside_own_ci => format!(
                        "  ~ beyond the bound, not flagged: inside the session's own interval{}",
                        own_interval(kind, v)
                    ),
                    _ if s.same_build => "  ~ beyond the bound, not flagged: the same build as \
                                          the session before (a change of the machine)"
                        .to_string(),
                    _ => String::new(),
                },
            ),
            None => (String::new(), String::new(), String::new()),
        };
        let build = match (&shared_version, p.commit.as_deref()) {
            (Some(_), Some(c)) => builds::short_commit(c),
            (Some(_), None) => String::new(),
            (None, commit) => builds::build_label(&p.version, commit),
        };
        crate::outln!(
            "  {:>7}  {:<19}  {:>12}  {:>9}  {:>9}  {:<16}{}",
            p.session_id,
            p.recorded,
            crate::units::significant(v.value),
            change,
            threshold,
            Text.escape(&build),
            flag
        );
    }
    let flagged = steps.iter().filter(|s| s.flagged).count();
    let inside = steps.iter().filter(|s| s.inside_own_ci).count();
    let inside = match inside {
        0 => String::new(),
        n => format!(", {n} not flagged inside the session's own interval"),
    };
    let machine = match steps.iter().filter(|s| s.same_build).count() {
        0 => String::new(),
        n => format!(", {n} not flagged at the same build (the machine's)"),
    };
    crate::outln!(
        "  {flagged} flagged change(s){inside}{machine} ({})",
        kind.name()
    );
    Ok(())
}

/// The build description every point shares, with its commit (which moves
/// along a tracked branch, and is printed per row) written `<commit>`;
/// `None` when the descriptions differ otherwise.
fn shared_build<'p>(mut points: impl Iterator<Item = &'p series::Point>) -> Option<String> {
    let template = |p: &series::Point| match p.commit.as_deref() {
        Some(c) if !c.is_empty() => p.version.replace(c, "<commit>"),
        _ => p.version.clone(),
    };
    let first = template(points.next()?);
    points.all(|p| template(p) == first).then_some(first)
}

/// A session's own interval as printed, ` [lo%, hi%]` against the
/// reference for an anchored value; else nothing.
fn own_interval(kind: Kind, v: &trend::Value) -> String {
    match (kind, v.own_ci) {
        (Kind::Anchored, Some([lo, hi])) => format!(
            " [{:+.2}%, {:+.2}%]",
            (lo - 1.0) * 100.0,
            (hi - 1.0) * 100.0
        ),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::shared_build;
    use crate::history::series::Point;

    fn point(version: &str, commit: Option<&str>) -> Point {
        Point {
            session_id: 1,
            uid: None,
            fingerprint: String::new(),
            recorded: String::new(),
            median_ns: 1.0,
            min_ns: None,
            version: version.into(),
            commit: commit.map(Into::into),
            anchored: None,
            instructions_per_iter: None,
            epochs: None,
        }
    }

    #[test]
    fn a_build_shared_but_for_its_commit_is_said_once() {
        let worker =
            |c: &str| format!("wasmi 2.0.0 [worker: git /w#main commit {c}, profile release]");
        let along_a_branch = [
            point(&worker("aaaa"), Some("aaaa")),
            point(&worker("bbbb"), Some("bbbb")),
        ];
        assert_eq!(
            shared_build(along_a_branch.iter()).as_deref(),
            Some("wasmi 2.0.0 [worker: git /w#main commit <commit>, profile release]")
        );
        let one_version = [point("wasmi 2.0.0", None), point("wasmi 2.0.0", None)];
        assert_eq!(
            shared_build(one_version.iter()).as_deref(),
            Some("wasmi 2.0.0")
        );
        // Another version, or another profile: each row says its build.
        let upgraded = [point("wasmi 2.0.0", None), point("wasmi 2.0.1", None)];
        assert_eq!(shared_build(upgraded.iter()), None);
        let reprofiled = [
            point(&worker("aaaa"), Some("aaaa")),
            point(&worker("bbbb").replace("release", "lto"), Some("bbbb")),
        ];
        assert_eq!(shared_build(reprofiled.iter()), None);
        assert_eq!(shared_build([].iter()), None);
    }
}
