//! The agent: on each machine of a fleet, it takes jobs for its label from
//! the queue, runs each as a `loopbench run` of this same binary, and
//! stores the session in the transaction that marks the job done.
//!
//! A job is whatever someone with insert rights on `jobs` wrote, so the
//! agent trusts none of it: before running, each job goes through the
//! caller's `vet` (the command line's own parser and the operator's allowed
//! build sources), which also writes the job's shape files into the job's
//! private temporary directory and returns the arguments to run.
//!
//! While a job runs, a thread with its own connection refreshes the job's
//! heartbeat; an agent that dies stops the heartbeat, and after the timeout
//! any other agent puts the job back in the queue. The run is a child
//! process that dies with the agent (`PR_SET_PDEATHSIG`), so a killed agent
//! leaves nothing measuring behind. On SIGTERM or SIGINT the agent stops
//! its run and releases the job to the queue at once.
//!
//! A lost database connection (a server restart) is not the end of the
//! agent: every use of the database reconnects with backoff until it gets
//! through, so a run that finished while the server was away is stored once
//! it is back. Stopped before that, the agent keeps the session's file and
//! says where.

use super::queue::{self, Job, Work};
use super::store::{Sql, StoreError};
use super::Location;
use crate::error::Error;
use std::path::{Path, PathBuf};
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
    /// A job running longer than this is stopped and failed.
    pub max_job: Option<Duration>,
    /// The loopbench binary that runs the jobs.
    pub exe: PathBuf,
}

/// Checks a job and prepares it in its private directory: the arguments to
/// run, or why the job is refused (a message that quotes no file).
pub type Vet<'a> = dyn Fn(&Work, &Path) -> Result<Vec<String>, Error> + 'a;

/// What an agent did.
#[derive(Clone, Debug, Default)]
pub struct Summary {
    pub done: Vec<i64>,
    pub failed: Vec<i64>,
    pub released: Vec<i64>,
    /// Jobs taken away while running (their heartbeat had expired), or
    /// whose result could not be stored before the agent was stopped.
    pub lost: Vec<i64>,
}

/// How one job ended.
enum Outcome {
    Done(i64),
    Failed(String),
    Released,
    Lost,
    /// Stopped while the database was unreachable; the session is kept here.
    Kept(Option<PathBuf>),
}

/// Longest wait between two tries to reach the database.
const MAX_BACKOFF: Duration = Duration::from_secs(10);

/// A connection that outlives the server's restarts: [`Conn::with`] runs a
/// statement on it, reconnecting with backoff while the connection is lost.
struct Conn {
    location: Location,
    db: Option<Box<dyn Sql>>,
}

impl Conn {
    fn new(location: &Location, db: Box<dyn Sql>) -> Self {
        Conn {
            location: location.clone(),
            db: Some(db),
        }
    }

    /// `f` on a live connection; `None` if `stop` was set before the
    /// database came back. Errors other than a lost connection are returned.
    fn with<T>(
        &mut self,
        stop: &AtomicBool,
        log: &dyn Fn(&str),
        mut f: impl FnMut(&mut dyn Sql) -> Result<T, StoreError>,
    ) -> Result<Option<T>, StoreError> {
        let mut wait = Duration::from_millis(250);
        let mut retried = false;
        loop {
            let result = match self.db.as_mut() {
                Some(db) => f(db.as_mut()),
                None => self.location.connect().and_then(|db| {
                    let db = self.db.insert(db);
                    f(db.as_mut())
                }),
            };
            match result {
                Ok(v) => {
                    if retried {
                        log("database reachable again");
                    }
                    return Ok(Some(v));
                }
                Err(e @ (StoreError::Connection(_) | StoreError::Open { .. })) => {
                    self.db = None;
                    retried = true;
                    log(&format!("{e}; retrying in {:.2} s", wait.as_secs_f64()));
                    sleep_unless(stop, wait);
                    if stop.load(Ordering::SeqCst) {
                        return Ok(None);
                    }
                    wait = (wait * 2).min(MAX_BACKOFF);
                }
                Err(e) => return Err(e),
            }
        }
    }
}

/// Take and run jobs until `stop` is set (or the queue is empty, with
/// `exit_when_idle`). Each job goes through `vet` first. `log` receives
/// one line per event.
pub fn run(
    opts: &Options,
    vet: &Vet<'_>,
    stop: &Arc<AtomicBool>,
    log: &dyn Fn(&str),
) -> Result<Summary, Error> {
    let mut db = Conn::new(&opts.location, opts.location.open()?);
    let mut summary = Summary::default();
    let mut refused = None;
    while !stop.load(Ordering::SeqCst) {
        let timeout = opts.timeout.as_secs_f64();
        let Some(stale) = db.with(stop, log, |db| queue::requeue_stale(db, timeout))? else {
            break;
        };
        for id in stale {
            log(&format!("job {id}: heartbeat expired, back in the queue"));
        }
        schedule(&mut db, opts, stop, log, &mut refused);
        let Some(claimed) = db.with(stop, log, |db| queue::claim(db, &opts.label, &opts.name))?
        else {
            break;
        };
        let Some(job) = claimed else {
            // Idle means nothing left for this label: a job still running
            // elsewhere may yet come back to the queue.
            if opts.exit_when_idle
                && db.with(stop, log, |db| queue::pending(db, &opts.label))? == Some(0)
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
            job.work.args.join(" ")
        ));
        match run_job(opts, vet, &mut db, &job, stop, log)? {
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
            Outcome::Kept(path) => {
                let kept = match path {
                    Some(p) => format!(
                        "its session is kept in {} (`loopbench history import` stores it)",
                        p.display()
                    ),
                    None => "it had no session to keep".to_string(),
                };
                log(&format!(
                    "job {}: stopped while the database was unreachable; the job goes back \
                     to the queue when its heartbeat expires; {kept}",
                    job.id
                ));
                summary.lost.push(job.id);
            }
        }
    }
    Ok(summary)
}

/// Queue the jobs of the tracks scheduled for this label whose period has
/// none yet ([`super::track::schedule`]). A failure (a role without the
/// rights to queue) is said once, and the agent goes on taking jobs.
fn schedule(
    db: &mut Conn,
    opts: &Options,
    stop: &AtomicBool,
    log: &dyn Fn(&str),
    refused: &mut Option<String>,
) {
    match db.with(stop, log, |db| super::track::schedule(db, &opts.label)) {
        Ok(Some(queued)) => {
            for q in queued {
                log(&format!(
                    "job {}: queued by the schedule of track {} (period {})",
                    q.job_id, q.track, q.period
                ));
            }
            *refused = None;
        }
        Ok(None) => {}
        Err(e) => {
            let e = e.to_string();
            if refused.as_deref() != Some(e.as_str()) {
                log(&format!("cannot queue the tracks' schedule: {e}"));
                *refused = Some(e);
            }
        }
    }
}

fn sleep_unless(stop: &AtomicBool, d: Duration) {
    let end = Instant::now() + d;
    while !stop.load(Ordering::SeqCst) && Instant::now() < end {
        std::thread::sleep(Duration::from_millis(50).min(d));
    }
}

/// Refreshes a job's heartbeat from its own connection until told to stop,
/// reconnecting when the connection is lost; sets `lost` if the job was
/// taken away.
fn heartbeat_thread(
    opts: &Options,
    job: i64,
    done: Arc<AtomicBool>,
    lost: Arc<AtomicBool>,
) -> Result<std::thread::JoinHandle<()>, Error> {
    let mut db = Conn::new(&opts.location, opts.location.connect()?);
    let agent = opts.name.clone();
    let every = opts.heartbeat;
    Ok(std::thread::spawn(move || {
        let log = |line: &str| crate::diag!("agent {agent}: job {job}: heartbeat: {line}");
        while !done.load(Ordering::SeqCst) {
            sleep_unless(&done, every);
            if done.load(Ordering::SeqCst) {
                break;
            }
            match db.with(&done, &log, |db| queue::heartbeat(db, job, &agent)) {
                Ok(Some(true)) | Ok(None) => {}
                Ok(Some(false)) => {
                    lost.store(true, Ordering::SeqCst);
                    break;
                }
                // The server answered with an error: the next beat may get
                // through, and a lasting one lets the timeout re-queue the job.
                Err(e) => log(&format!("failed: {e}")),
            }
        }
    }))
}

fn run_job(
    opts: &Options,
    vet: &Vet<'_>,
    db: &mut Conn,
    job: &Job,
    stop: &Arc<AtomicBool>,
    log: &dyn Fn(&str),
) -> Result<Outcome, Error> {
    let dir =
        tempfile::tempdir().map_err(|e| Error::io("cannot create a temporary directory", e))?;
    let args = match vet(&job.work, dir.path()) {
        Ok(args) => args,
        Err(e) => {
            let e = format!("refused: {e}");
            let failed = db.with(stop, log, |db| queue::fail(db, job.id, &opts.name, &e))?;
            return Ok(match failed {
                Some(true) => Outcome::Failed(e),
                Some(false) => Outcome::Lost,
                None => Outcome::Kept(None),
            });
        }
    };
    let json = dir.path().join("session.json");
    let stderr_path = dir.path().join("stderr");
    let stderr = std::fs::File::create(&stderr_path)
        .map_err(|e| Error::io(format!("cannot create {}", stderr_path.display()), e))?;
    let mut cmd = Command::new(&opts.exe);
    cmd.args(&args)
        .arg("--json")
        .arg(&json)
        .arg("--no-history")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(stderr);
    crate::children::die_with_parent(&mut cmd);
    own_group(&mut cmd);
    let mut child = cmd
        .spawn()
        .map_err(|e| Error::io(format!("cannot start {}", opts.exe.display()), e))?;
    let done = Arc::new(AtomicBool::new(false));
    let lost = Arc::new(AtomicBool::new(false));
    let beat = heartbeat_thread(opts, job.id, done.clone(), lost.clone())?;
    let started = std::time::Instant::now();
    let mut over_time = false;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) => {}
            Err(e) => {
                kill_run(&mut child);
                done.store(true, Ordering::SeqCst);
                let _ = beat.join();
                return Err(Error::io("cannot wait for the job's run", e));
            }
        }
        if stop.load(Ordering::SeqCst) || lost.load(Ordering::SeqCst) {
            kill_run(&mut child);
            break None;
        }
        if opts.max_job.is_some_and(|m| started.elapsed() > m) {
            kill_run(&mut child);
            over_time = true;
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    done.store(true, Ordering::SeqCst);
    let _ = beat.join();
    if lost.load(Ordering::SeqCst) {
        return Ok(Outcome::Lost);
    }
    if let Some(limit) = opts.max_job.filter(|_| over_time) {
        let e = format!(
            "stopped after {:.0} s: longer than this agent's --max-job-seconds {}",
            started.elapsed().as_secs_f64(),
            limit.as_secs_f64()
        );
        return Ok(
            match db.with(stop, log, |db| queue::fail(db, job.id, &opts.name, &e))? {
                Some(true) => Outcome::Failed(e),
                Some(false) => Outcome::Lost,
                None => Outcome::Kept(None),
            },
        );
    }
    let Some(status) = status else {
        // Stopping: one try to give the job back (`stop` is set, so no
        // retries); the heartbeat timeout re-queues it if the database is away.
        let released = db.with(stop, log, |db| queue::release(db, job.id, &opts.name));
        return Ok(match released {
            Ok(Some(true)) => Outcome::Released,
            Ok(Some(false)) => Outcome::Lost,
            Ok(None) | Err(_) => Outcome::Kept(None),
        });
    };
    // A session that ran to its end is a result even if some arm failed
    // (its errors are in it); anything else is a failed job.
    let session = crate::results::read(&json)
        .ok()
        .and_then(|d| d.session().cloned())
        .filter(|s| s.complete);
    match session {
        Some(session) => {
            match db.with(stop, log, |db| {
                queue::complete(db, job, &opts.name, &session, &super::track::after_job)
            })? {
                Some(Some(id)) => Ok(Outcome::Done(id)),
                Some(None) => Ok(Outcome::Lost),
                None => Ok(Outcome::Kept(Some(keep(dir, &json)))),
            }
        }
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
            match db.with(stop, log, |db| queue::fail(db, job.id, &opts.name, &e))? {
                Some(true) => Ok(Outcome::Failed(e)),
                Some(false) => Ok(Outcome::Lost),
                None => Ok(Outcome::Kept(None)),
            }
        }
    }
}

/// Keep the job's directory (it holds the session file); the file's path.
fn keep(dir: tempfile::TempDir, json: &Path) -> PathBuf {
    let _ = dir.keep();
    json.to_path_buf()
}

/// The run in a process group of its own, so that stopping it stops what
/// it started too (cargo and its rustc, a valgrind child's workers).
#[cfg(unix)]
fn own_group(cmd: &mut Command) {
    use std::os::unix::process::CommandExt;
    cmd.process_group(0);
}

#[cfg(not(unix))]
fn own_group(_: &mut Command) {}

/// SIGKILL to the run and everything in its process group.
fn kill_run(child: &mut std::process::Child) {
    #[cfg(unix)]
    // SAFETY: signals the process group this agent created for the run.
    unsafe {
        libc::kill(-(child.id() as libc::pid_t), libc::SIGKILL);
    }
    let _ = child.kill();
    let _ = child.wait();
}
