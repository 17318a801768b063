//! `loopbench jobs`: the fleet's queue: queued, running (which agent, how
//! old its heartbeat), done and failed; `--events` for the timeline. Every
//! text a submitter or an agent wrote (labels, names, arguments, errors)
//! is shown with its control characters escaped.

use super::DbArg;
use crate::error::Error;
use crate::history::queue;
use crate::report::markup::{Markup, Text};
use clap::Args;

#[derive(Args, Debug)]
pub struct JobsArgs {
    #[command(flatten)]
    pub db: DbArg,
    /// Also print every job's events in order (submitted, claimed, re-queued, done...).
    #[arg(long)]
    pub events: bool,
}

impl JobsArgs {
    pub fn execute(&self) -> Result<bool, Error> {
        let location = self.db.location()?;
        let mut db = location.open_read()?;
        let jobs = queue::list(db.as_mut())?;
        let count = |s: &str| jobs.iter().filter(|j| j.state == s).count();
        crate::outln!(
            "{location}: {} queued, {} running, {} done, {} failed",
            count("queued"),
            count("running"),
            count("done"),
            count("failed")
        );
        for j in &jobs {
            let detail = match j.state.as_str() {
                "running" => format!(
                    "by {}, heartbeat {:.1} s ago",
                    Text.escape(j.agent.as_deref().unwrap_or("?")),
                    j.heartbeat_age.unwrap_or(f64::NAN)
                ),
                "done" => format!(
                    "by {}, session {}",
                    Text.escape(j.agent.as_deref().unwrap_or("?")),
                    j.session_id.map(|s| s.to_string()).unwrap_or_default()
                ),
                "failed" => format!(
                    "by {}: {}",
                    Text.escape(j.agent.as_deref().unwrap_or("?")),
                    Text.escape(j.error.as_deref().unwrap_or(""))
                ),
                _ => String::new(),
            };
            let args = queue::Work::decode(&j.args)
                .map(|w| w.args)
                .unwrap_or_else(|e| vec![format!("(unreadable arguments: {e})")]);
            crate::outln!(
                "  job {:>4}  {:<12} {:<8} attempts {}  submitted {}  {}\n            loopbench {}",
                j.id,
                Text.escape(&j.label),
                Text.escape(&j.state),
                j.attempts,
                j.submitted,
                detail,
                Text.escape(&args.join(" "))
            );
        }
        if self.events {
            crate::outln!("events (seconds from the first):");
            for e in queue::events(db.as_mut())? {
                crate::outln!(
                    "  {:>8.2}  job {:>4}  {:<28} {}",
                    e.at,
                    e.job_id,
                    Text.escape(e.agent.as_deref().unwrap_or("-")),
                    Text.escape(&e.event)
                );
            }
        }
        Ok(true)
    }
}
