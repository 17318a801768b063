//! `loopbench agent`: run the fleet's jobs for one machine label until
//! stopped (SIGTERM or Ctrl-C releases the running job to the queue).

use super::DbArg;
use crate::error::Error;
use crate::history::agent::{self, Options};
use clap::Args;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

#[derive(Args, Debug)]
pub struct AgentArgs {
    #[command(flatten)]
    pub db: DbArg,
    /// This machine's label: the agent takes jobs submitted for it.
    #[arg(long)]
    pub label: String,
    /// This agent's name in the queue (default: LABEL@HOSTNAME:PID).
    #[arg(long)]
    pub name: Option<String>,
    /// Seconds between heartbeats of a running job.
    #[arg(long, default_value_t = 5.0, value_name = "SECONDS")]
    pub heartbeat: f64,
    /// A running job whose heartbeat is older than this many seconds goes
    /// back to the queue (its agent is taken as dead).
    #[arg(long, default_value_t = 60.0, value_name = "SECONDS")]
    pub timeout: f64,
    /// Seconds between looks at an empty queue.
    #[arg(long, default_value_t = 5.0, value_name = "SECONDS")]
    pub poll: f64,
    /// Stop when no job for this label is queued or running (anywhere).
    #[arg(long)]
    pub exit_when_idle: bool,
    /// A job still running after this many seconds (builds included) is
    /// stopped and failed with that reason, and the agent goes on: an
    /// operator's limit on what one submitted job may take. Default: none.
    #[arg(long, value_name = "SECONDS")]
    pub max_job_seconds: Option<f64>,
    /// Build arms this agent may build (building runs the source's build
    /// scripts): directories (`=path:` and `=git:` arms inside them) and
    /// `crates.io` (`@VERSION` and `+profile:`/`+feature:` arms). Default: none.
    #[arg(long, value_delimiter = ',', value_name = "DIR|crates.io")]
    pub allow_builds: Vec<String>,
}

fn seconds(name: &str, v: f64) -> Result<Duration, Error> {
    if v > 0.0 && v.is_finite() {
        Ok(Duration::from_secs_f64(v))
    } else {
        Err(Error::Usage(format!(
            "--{name} must be a positive number of seconds"
        )))
    }
}

impl AgentArgs {
    pub fn execute(&self) -> Result<bool, Error> {
        let heartbeat = seconds("heartbeat", self.heartbeat)?;
        let timeout = seconds("timeout", self.timeout)?;
        if timeout <= heartbeat * 2 {
            return Err(Error::Usage(format!(
                "--timeout {} must exceed two heartbeats (--heartbeat {}), or live jobs are re-queued",
                self.timeout, self.heartbeat
            )));
        }
        super::job::check_name("--label", &self.label)?;
        if let Some(name) = &self.name {
            super::job::check_name("--name", name)?;
        }
        let allow = super::job::Allow::parse(&self.allow_builds)?;
        let hostname = crate::machine::Machine::read().hostname;
        let opts = Options {
            location: self.db.location()?,
            label: self.label.clone(),
            name: self
                .name
                .clone()
                .unwrap_or_else(|| format!("{}@{hostname}:{}", self.label, std::process::id())),
            heartbeat,
            timeout,
            poll: seconds("poll", self.poll)?,
            exit_when_idle: self.exit_when_idle,
            max_job: self
                .max_job_seconds
                .map(|s| seconds("max-job-seconds", s))
                .transpose()?,
            exe: std::env::current_exe()
                .map_err(|e| Error::io("cannot find this loopbench binary", e))?,
        };
        let stop = Arc::new(AtomicBool::new(false));
        for sig in [signal_hook::consts::SIGTERM, signal_hook::consts::SIGINT] {
            signal_hook::flag::register(sig, stop.clone())
                .map_err(|e| Error::io("cannot handle SIGTERM", e))?;
        }
        let name = opts.name.clone();
        crate::diag!(
            "agent {name}: taking jobs for {} from {}",
            opts.label,
            opts.location
        );
        let vet = |work: &crate::history::queue::Work, dir: &std::path::Path| {
            super::job::unpack(work, dir, &allow)
        };
        let summary = agent::run(&opts, &vet, &stop, &|line| {
            crate::diag!("agent {name}: {line}")
        })?;
        crate::diag!(
            "agent {name}: stopped; {} done, {} failed, {} released, {} lost",
            summary.done.len(),
            summary.failed.len(),
            summary.released.len(),
            summary.lost.len()
        );
        Ok(true)
    }
}
