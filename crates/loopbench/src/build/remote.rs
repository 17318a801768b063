//! The session's side of a worker: an [`Arm`] whose reps run in another
//! process.
//!
//! The scheduler cannot tell it from an in-process arm: `prepare` sends the
//! shape and waits for the fresh instance, `rep` asks for one rep and waits
//! for its reading; the worker does nothing in between, so one arm runs at a
//! time. What is new is failure: a worker that exits, stops answering
//! (every rep has a deadline set from the baseline's timing) or never built
//! is reported for its arm with the tail of its stderr, the process is
//! killed, and the other arms go on. The next shape starts a new process.

use super::project::{indent, Built};
use super::protocol::{fnv1a, Request, Response, ShapeSource, WireParams, PROTOCOL};
use super::ArmContext;
use crate::arm::{Arm, PreparedArm, Rep};
use crate::engines::ArmSpec;
use crate::error::Error;
use crate::measure::Reading;
use crate::proposals::{Proposal, Proposals};
use crate::shapes::{self, ShapeModule};
use std::cell::RefCell;
use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Stdio};
use std::rc::Rc;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// A rep's deadline is this many times the reference rep time...
pub const DEADLINE_FACTOR: f64 = 20.0;
/// ...and never below this (reset and verify run in the rep too).
pub const DEADLINE_FLOOR: Duration = Duration::from_secs(10);
/// Deadline for a rep with no timing yet, for startup and for `prepare`.
pub const FIRST_DEADLINE: Duration = Duration::from_secs(120);
/// Lines of a worker's stderr kept for error reports.
const STDERR_TAIL: usize = 12;

/// Rep times of the current shape, shared by the baseline (which records)
/// and the worker arms (which set their deadlines from it).
#[derive(Clone, Default)]
pub struct Timing(Rc<RefCell<Vec<f64>>>);

impl Timing {
    fn reset(&self) {
        self.0.borrow_mut().clear();
    }
    fn record(&self, ns: f64) {
        self.0.borrow_mut().push(ns);
    }
    /// `DEADLINE_FACTOR` times the larger of the baseline's and this arm's
    /// median rep, at least the floor; `FIRST_DEADLINE` with no timing yet.
    pub fn deadline(&self, own: &[f64]) -> Duration {
        let floor = floor();
        let medians = [median(&self.0.borrow()), median(own)];
        match medians.into_iter().flatten().reduce(f64::max) {
            Some(ns) => floor.max(Duration::from_secs_f64(ns * DEADLINE_FACTOR / 1e9)),
            None => floor.max(FIRST_DEADLINE),
        }
    }
}

/// The deadline floor; tests lower it with `LOOPBENCH_WORKER_DEADLINE_FLOOR_MS`.
fn floor() -> Duration {
    std::env::var("LOOPBENCH_WORKER_DEADLINE_FLOOR_MS")
        .ok()
        .and_then(|v| v.parse().ok())
        .map(Duration::from_millis)
        .unwrap_or(DEADLINE_FLOOR)
}

fn median(v: &[f64]) -> Option<f64> {
    (!v.is_empty()).then(|| crate::stats::median(v))
}

/// Wraps the baseline arm so its rep times reach [`Timing`].
pub struct Recorded {
    pub inner: Box<dyn Arm>,
    pub timing: Timing,
}

impl Arm for Recorded {
    fn label(&self) -> &str {
        self.inner.label()
    }
    fn version(&self) -> String {
        self.inner.version()
    }
    fn supports(&self) -> Proposals {
        self.inner.supports()
    }
    fn prepare<'s>(&self, shape: &'s ShapeModule) -> Result<Box<dyn PreparedArm + 's>, Error> {
        self.timing.reset();
        let inner = self.inner.prepare(shape)?;
        Ok(Box::new(RecordedPrepared {
            inner,
            timing: self.timing.clone(),
        }))
    }
}

struct RecordedPrepared<'s> {
    inner: Box<dyn PreparedArm + 's>,
    timing: Timing,
}

impl PreparedArm for RecordedPrepared<'_> {
    fn rep(&mut self, rep: usize) -> Result<Rep, Error> {
        let r = self.inner.rep(rep)?;
        self.timing.record(r.reading.ns);
        Ok(r)
    }
}

/// A build arm: one worker process of one build.
pub struct WorkerArm {
    label: String,
    /// The arm as written, e.g. `wasmi@0.31:fuel`.
    spec: String,
    options: Vec<String>,
    counters: Vec<String>,
    /// How the build is described next to its version.
    described: String,
    built: Result<Built, String>,
    state: Rc<RefCell<State>>,
    timing: Timing,
    /// Whether a build or startup failure was reported in full already.
    told: std::cell::Cell<bool>,
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or_default()
}

struct State {
    version: Option<String>,
    proposals: Proposals,
    process: Option<Process>,
    /// Why the worker cannot run at all (build or startup failure).
    broken: Option<String>,
}

impl WorkerArm {
    /// Start the worker of `built` for arm `label`. Never fails: a build or
    /// startup failure makes an arm whose every shape reports it.
    pub fn start(
        label: String,
        spec: &ArmSpec,
        described: String,
        built: Result<Built, String>,
        ctx: &ArmContext,
    ) -> Self {
        let state = State {
            version: None,
            proposals: Proposals::new(),
            process: None,
            broken: None,
        };
        let arm = WorkerArm {
            label,
            spec: spec.to_string(),
            options: spec.options.clone(),
            counters: ctx.worker_counters.clone(),
            described,
            built,
            state: Rc::new(RefCell::new(state)),
            timing: ctx.timing.clone(),
            told: std::cell::Cell::new(false),
        };
        if let Err(e) = &arm.built {
            arm.state.borrow_mut().broken = Some(e.clone());
        } else if let Err(e) = arm.spawn() {
            arm.state.borrow_mut().broken = Some(e);
        }
        arm
    }

    /// Start a process and exchange `init`/`ready`.
    fn spawn(&self) -> Result<(), String> {
        let built = self.built.as_ref().map_err(Clone::clone)?;
        let mut process = Process::spawn(&built.bin)?;
        let init = Request::Init {
            label: self.label.clone(),
            options: self.options.clone(),
            counters: self.counters.clone(),
        };
        match process.ask(&init, FIRST_DEADLINE) {
            Ok(Response::Ready { protocol, version, proposals }) if protocol == PROTOCOL => {
                let mut s = self.state.borrow_mut();
                s.version = Some(version);
                s.proposals = proposals.into_iter().collect();
                s.process = Some(process);
                Ok(())
            }
            Ok(Response::Ready { protocol, .. }) => Err(format!(
                "the worker speaks protocol {protocol}, this loopbench {PROTOCOL}: a stale worker binary ({})",
                built.bin.display()
            )),
            Ok(Response::Failed { error }) => Err(error.into_error("-", &self.label).to_string()),
            Ok(other) => Err(format!("the worker answered `init` with {other:?}")),
            Err(failure) => Err(failure.describe("startup", &mut process)),
        }
    }

    fn error(&self, shape: &str, detail: String) -> Error {
        Error::Worker {
            shape: shape.to_string(),
            arm: self.label.clone(),
            detail,
        }
    }
}

impl Arm for WorkerArm {
    fn label(&self) -> &str {
        &self.label
    }
    fn version(&self) -> String {
        let s = self.state.borrow();
        match (&s.version, &s.broken) {
            (Some(v), _) => format!("{v} [worker: {}]", self.described),
            (None, _) => format!("{} [worker unavailable: {}]", self.spec, self.described),
        }
    }
    fn supports(&self) -> Proposals {
        let s = self.state.borrow();
        if s.broken.is_some() {
            // Run every shape so each reports why this arm cannot.
            [
                Proposal::Threads,
                Proposal::Simd,
                Proposal::BulkMemory,
                Proposal::TailCall,
            ]
            .into_iter()
            .collect()
        } else {
            s.proposals.clone()
        }
    }
    fn prepare<'s>(&self, shape: &'s ShapeModule) -> Result<Box<dyn PreparedArm + 's>, Error> {
        if let Some(b) = self.state.borrow().broken.clone() {
            // The whole story once; later shapes point back to it.
            let first = !self.told.replace(true);
            let detail = if first {
                b
            } else {
                format!(
                    "the worker is unavailable (see this arm's first error): {}",
                    first_line(&b)
                )
            };
            return Err(self.error(shape.name(), detail));
        }
        if self.state.borrow().process.is_none() {
            self.spawn()
                .map_err(|e| self.error(shape.name(), format!("restarting the worker: {e}")))?;
        }
        let request = Request::Prepare {
            shape: source_of(shape),
            params: WireParams::from(&shape.params),
            iters: shape.iters,
            wasm_hash: fnv1a(&[&shape.wasm]),
        };
        match ask(&self.state, &request, FIRST_DEADLINE, "prepare") {
            Ok(Response::Prepared) => Ok(Box::new(WorkerPrepared {
                label: self.label.clone(),
                shape: shape.name(),
                state: Rc::clone(&self.state),
                timing: self.timing.clone(),
                own: Vec::new(),
            })),
            Ok(Response::Failed { error }) => Err(error.into_error(shape.name(), &self.label)),
            Ok(other) => Err(self.error(
                shape.name(),
                format!("the worker answered `prepare` with {other:?}"),
            )),
            Err(detail) => Err(self.error(shape.name(), detail)),
        }
    }
}

/// Built-in shapes travel by name; anything else (a user shape, or a user
/// file that shares a built-in's name) as its bytes.
fn source_of(shape: &ShapeModule) -> ShapeSource {
    let builtin = shapes::find(shape.name())
        .and_then(|s| s.wasm(&shape.params).ok())
        .is_some_and(|w| w == shape.wasm);
    if builtin {
        ShapeSource::Catalog(shape.name().to_string())
    } else {
        ShapeSource::Module {
            name: shape.name().to_string(),
            wasm: shape.wasm.clone(),
        }
    }
}

/// Ask the live process; on a crash or a missed deadline the process is
/// killed and dropped, and the error says what happened.
fn ask(
    state: &Rc<RefCell<State>>,
    request: &Request,
    deadline: Duration,
    what: &str,
) -> Result<Response, String> {
    let mut s = state.borrow_mut();
    let process = s.process.as_mut().ok_or("the worker is not running")?;
    match process.ask(request, deadline) {
        Ok(r) => Ok(r),
        Err(failure) => {
            let detail = failure.describe(what, process);
            s.process = None;
            Err(detail)
        }
    }
}

struct WorkerPrepared<'s> {
    label: String,
    shape: &'s str,
    state: Rc<RefCell<State>>,
    timing: Timing,
    own: Vec<f64>,
}

impl PreparedArm for WorkerPrepared<'_> {
    fn rep(&mut self, rep: usize) -> Result<Rep, Error> {
        let deadline = self.timing.deadline(&self.own);
        let error = |detail| Error::Worker {
            shape: self.shape.to_string(),
            arm: self.label.clone(),
            detail,
        };
        match ask(
            &self.state,
            &Request::Rep { rep },
            deadline,
            &format!("rep {rep}"),
        ) {
            Ok(Response::Rep { ns, counters }) => {
                self.own.push(ns);
                Ok(Rep {
                    reading: Reading { ns, counters },
                })
            }
            Ok(Response::Failed { error }) => Err(error.into_error(self.shape, &self.label)),
            Ok(other) => Err(error(format!("the worker answered `rep` with {other:?}"))),
            Err(detail) => Err(error(detail)),
        }
    }
}

/// A running worker process and the threads draining its output.
struct Process {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    stderr: Arc<Mutex<VecDeque<String>>>,
    stderr_thread: Option<JoinHandle<()>>,
}

enum Failure {
    /// The worker closed its stdout (exited or crashed).
    Gone,
    Timeout(Duration),
    Garbled(String),
    Io(String),
}

impl Failure {
    /// Kill the process if needed and describe what happened, with the tail
    /// of its stderr.
    fn describe(&self, during: &str, process: &mut Process) -> String {
        let head = match self {
            Failure::Gone => {
                let status = process.wait_briefly();
                format!("the worker exited during {during} ({status})")
            }
            Failure::Timeout(d) => {
                let _ = process.child.kill();
                let _ = process.child.wait();
                format!(
                    "the worker did not answer {during} within {:.1} s ({DEADLINE_FACTOR:.0}x the baseline's median rep, at least {:.0} s); killed it",
                    d.as_secs_f64(),
                    floor().as_secs_f64()
                )
            }
            Failure::Garbled(line) => {
                let _ = process.child.kill();
                let _ = process.child.wait();
                format!("the worker sent a malformed answer during {during}: {line}")
            }
            Failure::Io(e) => {
                let status = process.wait_briefly();
                format!("talking to the worker failed during {during}: {e} ({status})")
            }
        };
        let tail = process.stderr_tail();
        if tail.is_empty() {
            format!("{head}; it wrote nothing on stderr")
        } else {
            format!("{head}; last lines of its stderr:\n{}", indent(&tail))
        }
    }
}

impl Process {
    fn spawn(bin: &std::path::Path) -> Result<Process, String> {
        let mut child = crate::measure::callgrind::worker_command(bin)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot start worker {}: {e}", bin.display()))?;
        let stdout = child.stdout.take().ok_or("worker without stdout")?;
        let stderr = child.stderr.take().ok_or("worker without stderr")?;
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let kept: Arc<Mutex<VecDeque<String>>> = Arc::default();
        let stderr_thread = {
            let kept = Arc::clone(&kept);
            std::thread::spawn(move || {
                for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                    if let Ok(mut k) = kept.lock() {
                        if k.len() == STDERR_TAIL {
                            k.pop_front();
                        }
                        k.push_back(line);
                    }
                }
            })
        };
        Ok(Process {
            stdin: child.stdin.take(),
            child,
            lines,
            stderr: kept,
            stderr_thread: Some(stderr_thread),
        })
    }

    fn ask(&mut self, request: &Request, deadline: Duration) -> Result<Response, Failure> {
        let line = serde_json::to_string(request).map_err(|e| Failure::Io(e.to_string()))?;
        let stdin = self.stdin.as_mut().ok_or(Failure::Gone)?;
        if writeln!(stdin, "{line}")
            .and_then(|_| stdin.flush())
            .is_err()
        {
            return Err(Failure::Gone);
        }
        match self.lines.recv_timeout(deadline) {
            Ok(answer) => serde_json::from_str(&answer).map_err(|_| Failure::Garbled(answer)),
            Err(RecvTimeoutError::Timeout) => Err(Failure::Timeout(deadline)),
            Err(RecvTimeoutError::Disconnected) => Err(Failure::Gone),
        }
    }

    /// The exit status, waiting up to two seconds before killing.
    fn wait_briefly(&mut self) -> String {
        let until = Instant::now() + Duration::from_secs(2);
        loop {
            match self.child.try_wait() {
                Ok(Some(status)) => return describe_status(status),
                Ok(None) if Instant::now() < until => std::thread::sleep(Duration::from_millis(20)),
                _ => {
                    let _ = self.child.kill();
                    return self
                        .child
                        .wait()
                        .map(describe_status)
                        .unwrap_or_else(|e| e.to_string());
                }
            }
        }
    }

    fn stderr_tail(&mut self) -> Vec<String> {
        // The process is gone, so its stderr ends: let the thread finish.
        if let Some(t) = self.stderr_thread.take() {
            let _ = t.join();
        }
        self.stderr
            .lock()
            .map(|k| k.iter().cloned().collect())
            .unwrap_or_default()
    }
}

fn describe_status(status: std::process::ExitStatus) -> String {
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(sig) = status.signal() {
            let name = match sig {
                6 => " (SIGABRT)",
                9 => " (SIGKILL)",
                11 => " (SIGSEGV)",
                _ => "",
            };
            return format!("killed by signal {sig}{name}");
        }
    }
    status.to_string()
}

impl Drop for Process {
    fn drop(&mut self) {
        if let Some(mut stdin) = self.stdin.take() {
            let _ = serde_json::to_string(&Request::Quit).map(|l| writeln!(stdin, "{l}"));
        }
        let until = Instant::now() + Duration::from_secs(1);
        while Instant::now() < until {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deadlines_follow_the_baseline() {
        let t = Timing::default();
        assert_eq!(t.deadline(&[]), FIRST_DEADLINE);
        t.record(1e9); // 1 s reps
        t.record(3e9);
        t.record(2e9);
        assert_eq!(t.deadline(&[]), Duration::from_secs(40));
        // The arm's own slower reps raise it.
        assert_eq!(t.deadline(&[5e9]), Duration::from_secs(100));
        t.reset();
        t.record(1e6);
        assert_eq!(t.deadline(&[]), floor());
    }
}
