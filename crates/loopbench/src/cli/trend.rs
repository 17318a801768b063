//! `loopbench trend`: one series per machine, shape, arm and metric, each
//! step judged against the series' own recent changes.

use super::DbArg;
use crate::error::Error;
use crate::history::{sessions, trend};
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
        let series: Vec<_> =
            sessions::series(db.as_mut(), Some(&self.shape), Some(&self.arm), metric)?
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
        for (k, points) in &series {
            let values: Vec<f64> = points.iter().map(|p| p.median_ns).collect();
            let steps = trend::steps(&values);
            crate::outln!(
                "\n{} / {} / {} / {}: {} sessions (median ns/iter)",
                Text.escape(&k.machine),
                Text.escape(&k.shape),
                Text.escape(&k.arm),
                Text.escape(&k.metric),
                points.len()
            );
            crate::outln!(
                "  {:>7}  {:<19}  {:>10}  {:>9}  {:>9}  {:<16}",
                "session",
                "recorded (UTC)",
                "ns/iter",
                "change",
                "threshold",
                "build"
            );
            for (i, p) in points.iter().enumerate() {
                let step = i.checked_sub(1).map(|j| &steps[j]);
                let (change, threshold, flag) = match step {
                    Some(s) => (
                        format!("{:+.2}%", s.change_pct),
                        format!("{:.2}%", s.threshold_pct),
                        if s.flagged {
                            if s.change_pct > 0.0 {
                                "  << slower (regression)"
                            } else {
                                "  << faster (improvement)"
                            }
                        } else {
                            ""
                        },
                    ),
                    None => (String::new(), String::new(), ""),
                };
                let build = sessions::build_label(&p.version, p.commit.as_deref());
                crate::outln!(
                    "  {:>7}  {:<19}  {:>10.3}  {:>9}  {:>9}  {:<16}{}",
                    p.session_id,
                    p.recorded,
                    p.median_ns,
                    change,
                    threshold,
                    Text.escape(&build),
                    flag
                );
            }
            let flagged = steps.iter().filter(|s| s.flagged).count();
            crate::outln!("  {flagged} flagged change(s)");
        }
        Ok(true)
    }
}
