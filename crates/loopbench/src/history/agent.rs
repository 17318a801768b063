//! The agent: on each machine of a fleet, it takes jobs for its label from
//! the queue, runs each as a `loopbench run` of this same binary, and
//! stores the session in the transaction that marks the job done.
//!
//! While a job runs, a thread with its own connection refreshes the job's
//! heartbeat; an agent that dies stops the heartbeat, and after the timeout
//! any other agent puts the job back in the queue. The run is a child
//! process that dies with the agent (`PR_SET_PDEATHSIG`), so a killed agent
//! leaves nothing measuring behind. On SIGTERM or SIGINT the agent stops
//! its run and releases the job to the queue at once.

use super::queue::{self, Job};
use super::store::{Sql, StoreError};
use super::Location;
use crate::error::Error;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How an agent runs.
#[derive(Clone, Debug)]
pub struct Options {
    pub location: Location,
    /// The machine label jobs are submitted for.
    pub label: String,
    /// This agent's name in the queue (who holds a job).
    pub name: String,
    /// How often a running job's heartbeat is refreshed.
    pub heartbeat: Duration,
    /// A running job whose heartbeat is older than this goes back to the queue.
    pub timeout: Duration,
    /// How long to wait before looking at an empty queue again.
    pub poll: Duration,
    /// Stop once no job for this label is queued or running.
    pub exit_when_idle: bool,
    /// The loopbench binary that runs the jobs.
    pub exe: PathBuf,
}

/// What an agent did.
#[derive(Clone, Debug, Default)]
pub struct Summary {
    pub done: Vec<i64>,
    pub failed: Vec<i64>,
    pub released: Vec<i64>,
    /// Jobs taken away while running (their heartbeat had expired).
    pub lost: Vec<i64>,
}

/// How one job ended.
enum Outcome {
    Done(i64),
    Failed(String),
    Released,
    Lost,
}

fn db_error(e: StoreError) -> Error {
    Error::Store(e)
}

/// Take and run jobs until `stop` is set (or the queue is empty, with
/// `exit_when_idle`). `log` receives one line per event.
pub fn run(opts: &Options, stop: &Arc<AtomicBool>, log: &dyn Fn(&str)) -> Result<Summary, Error> {
    let mut db = opts.location.open()?;
    let mut summary = Summary::default();
    while !stop.load(Ordering::SeqCst) {
        for id in queue::requeue_stale(db.as_mut(), opts.timeout.as_secs_f64()).map_err(db_error)? {
            log(&format!("job {id}: heartbeat expired, back in the queue"));
        }
        let Some(job) = queue::claim(db.as_mut(), &opts.label, &opts.name).map_err(db_error)?
        else {
            // Idle means nothing left for this label: a job still running
            // elsewhere may yet come back to the queue.
            if opts.exit_when_idle
                && queue::pending(db.as_mut(), &opts.label).map_err(db_error)? == 0
            {
                break;
            }
            sleep_unless(stop, opts.poll);
            continue;
        };
        log(&format!(
            "job {}: claimed (attempt {}): loopbench {}",
            job.id,
            job.attempts,
            job.args.join(" ")
        ));
        match run_job(opts, db.as_mut(), &job, stop)? {
            Outcome::Done(session) => {
                log(&format!("job {}: done, session {session}", job.id));
                summary.done.push(job.id);
            }
            Outcome::Failed(e) => {
                log(&format!("job {}: failed: {e}", job.id));
                summary.failed.push(job.id);
            }
            Outcome::Released => {
                log(&format!("job {}: released to the queue", job.id));
                summary.released.push(job.id);
            }
            Outcome::Lost => {
                log(&format!(
                    "job {}: re-queued while running (heartbeat expired); result discarded",
                    job.id
                ));
                summary.lost.push(job.id);
            }
        }
    }
    Ok(summary)
}

fn sleep_unless(stop: &AtomicBool, d: Duration) {
    let end = Instant::now() + d;
    while !stop.load(Ordering::SeqCst) && Instant::now() < end {
        std::thread::sleep(Duration::from_millis(50).min(d));
    }
}

/// Refreshes a job's heartbeat from its own connection until told to stop;
/// sets `lost` if the job was taken away.
fn heartbeat_thread(
    opts: &Options,
    job: i64,
    done: Arc<AtomicBool>,
    lost: Arc<AtomicBool>,
) -> Result<std::thread::JoinHandle<()>, Error> {
    let mut db = opts.location.connect()?;
    let agent = opts.name.clone();
    let every = opts.heartbeat;
    Ok(std::thread::spawn(move || {
        while !done.load(Ordering::SeqCst) {
            sleep_unless(&done, every);
            if done.load(Ordering::SeqCst) {
                break;
            }
            match queue::heartbeat(db.as_mut(), job, &agent) {
                Ok(true) => {}
                Ok(false) => {
                    lost.store(true, Ordering::SeqCst);
                    break;
                }
                // A passing database error: the next beat may get through,
                // and a lasting one lets the timeout re-queue the job.
                Err(e) => crate::diag!("agent {agent}: job {job}: heartbeat failed: {e}"),
            }
        }
    }))
}

fn run_job(
    opts: &Options,
    db: &mut dyn Sql,
    job: &Job,
    stop: &Arc<AtomicBool>,
) -> Result<Outcome, Error> {
    if job.args.first().map(String::as_str) != Some("run") {
        let e = format!("not a run job: loopbench {}", job.args.join(" "));
        queue::fail(db, job.id, &opts.name, &e).map_err(db_error)?;
        return Ok(Outcome::Failed(e));
    }
    let dir =
        tempfile::tempdir().map_err(|e| Error::io("cannot create a temporary directory", e))?;
    let json = dir.path().join("session.json");
    let stderr_path = dir.path().join("stderr");
    let stderr = std::fs::File::create(&stderr_path)
        .map_err(|e| Error::io(format!("cannot create {}", stderr_path.display()), e))?;
    let mut cmd = Command::new(&opts.exe);
    cmd.args(&job.args)
        .arg("--json")
        .arg(&json)
        .arg("--no-history")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(stderr);
    die_with_parent(&mut cmd);
    let mut child = cmd
        .spawn()
        .map_err(|e| Error::io(format!("cannot start {}", opts.exe.display()), e))?;
    let done = Arc::new(AtomicBool::new(false));
    let lost = Arc::new(AtomicBool::new(false));
    let beat = heartbeat_thread(opts, job.id, done.clone(), lost.clone())?;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) => {}
            Err(e) => {
                let _ = child.kill();
                let _ = child.wait();
                done.store(true, Ordering::SeqCst);
                let _ = beat.join();
                return Err(Error::io("cannot wait for the job's run", e));
            }
        }
        if stop.load(Ordering::SeqCst) || lost.load(Ordering::SeqCst) {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    done.store(true, Ordering::SeqCst);
    let _ = beat.join();
    if lost.load(Ordering::SeqCst) {
        return Ok(Outcome::Lost);
    }
    let Some(status) = status else {
        queue::release(db, job.id, &opts.name).map_err(db_error)?;
        return Ok(Outcome::Released);
    };
    // A session that ran to its end is a result even if some arm failed
    // (its errors are in it); anything else is a failed job.
    let session = crate::results::read(&json)
        .ok()
        .and_then(|d| d.session().cloned())
        .filter(|s| s.complete);
    match session {
        Some(session) => match queue::complete(db, job, &opts.name, &session).map_err(db_error)? {
            Some(id) => Ok(Outcome::Done(id)),
            None => Ok(Outcome::Lost),
        },
        None => {
            let text = std::fs::read_to_string(&stderr_path).unwrap_or_default();
            // The run's own error line, else its last words.
            let last = text
                .lines()
                .rev()
                .find(|l| l.starts_with("error:"))
                .or_else(|| text.lines().rev().find(|l| !l.trim().is_empty()))
                .unwrap_or("no output");
            let e = format!("{status}: {last}");
            if queue::fail(db, job.id, &opts.name, &e).map_err(db_error)? {
                Ok(Outcome::Failed(e))
            } else {
                Ok(Outcome::Lost)
            }
        }
    }
}

/// The run is killed when the agent dies, even by SIGKILL.
#[cfg(target_os = "linux")]
fn die_with_parent(cmd: &mut Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: prctl is async-signal-safe; nothing else runs between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

#[cfg(not(target_os = "linux"))]
fn die_with_parent(_: &mut Command) {}
