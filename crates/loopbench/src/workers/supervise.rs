//! Supervising a worker process: spawning it, one request and its answer
//! under a deadline, and what to say when it dies, hangs or garbles.
//!
//! Kept apart from the protocol logic of [`super::client`]: this file knows
//! processes, pipes, deadlines, kill and the stderr tail, not arms or shapes.
//! A rep's deadline follows the baseline's timing ([`Timing`]), so a slow
//! build is given time and a hung one is killed in seconds, not minutes.

use super::error::WorkerError;
use super::protocol::{Request, Response};
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
/// How often a wait for a worker looks whether a signal asked to stop.
const INTERRUPT_POLL: Duration = Duration::from_millis(50);

/// Rep times of the current shape, shared by the baseline (which records)
/// and the worker arms (which set their deadlines from it), and the rep
/// time the session expects before any rep is timed (the pilot's).
#[derive(Clone, Default)]
pub struct Timing(Rc<RefCell<TimingState>>);

#[derive(Default)]
struct TimingState {
    reps: Vec<f64>,
    /// The longest wall time any rep of the shape took, its untimed reset
    /// and verify included (a setup that grows memory to 4 GiB spends
    /// seconds there on every fresh instance, and none in the timed call).
    longest: Option<Duration>,
    expected: Option<f64>,
    /// The time a shape's epoch may take (`--budget`): with no timing at
    /// all, a rep may take this long (at least the floor), not
    /// `FIRST_DEADLINE`.
    budget: Option<Duration>,
}

impl Timing {
    /// A new shape: its reps are not yet timed (the expectation stays).
    pub fn reset(&self) {
        let mut state = self.0.borrow_mut();
        state.reps.clear();
        state.longest = None;
    }
    pub fn record(&self, ns: f64) {
        self.0.borrow_mut().reps.push(ns);
    }
    /// A rep of the shape took `wall` from request to answer, on any arm.
    pub fn answered(&self, wall: Duration) {
        let mut state = self.0.borrow_mut();
        state.longest = state.longest.max(Some(wall));
    }
    /// The rep time the next reps should take, in ns, when the pilot knows
    /// it: a call that never ends is then killed at the floor, not after
    /// `FIRST_DEADLINE`. `None`: unknown.
    pub fn expect(&self, ns: Option<f64>) {
        self.0.borrow_mut().expected = ns;
    }
    /// The time an epoch of the shape may take (`None`: unbounded). A rep
    /// that nothing has timed (`--iters`, no pilot) gets this long.
    pub fn within(&self, budget: Option<Duration>) {
        self.0.borrow_mut().budget = budget;
    }
    /// `DEADLINE_FACTOR` times the larger of the baseline's and this arm's
    /// median rep (or the expected rep time before either has one), at
    /// least the floor; with no timing at all, the budget or
    /// `FIRST_DEADLINE`, whichever is shorter, at least the floor. Never
    /// below `DEADLINE_FACTOR` times the longest whole rep of the shape so
    /// far: a fresh instance's setup costs every arm alike.
    pub fn deadline(&self, own: &[f64]) -> Deadline {
        let (after, basis) = self.deadline_and_basis(own);
        match self.0.borrow().longest.map(|l| l.mul_f64(DEADLINE_FACTOR)) {
            Some(whole) if whole > after => Deadline {
                after: whole,
                basis: format!(
                    "{DEADLINE_FACTOR:.0}x the longest rep of this shape so far, its untimed reset and verify included"
                ),
            },
            _ => Deadline { after, basis },
        }
    }

    fn deadline_and_basis(&self, own: &[f64]) -> (Duration, String) {
        let floor = floor();
        let state = self.0.borrow();
        let medians = [median(&state.reps), median(own)];
        let at_least = format!("at least {} s", floor.as_secs_f64());
        let timed = medians.into_iter().flatten().reduce(f64::max);
        match (timed, state.expected, state.budget) {
            (Some(ns), ..) => (
                floor.max(Duration::from_secs_f64(ns * DEADLINE_FACTOR / 1e9)),
                format!("{DEADLINE_FACTOR:.0}x the baseline's or the arm's median rep, {at_least}"),
            ),
            (None, Some(ns), _) => (
                floor.max(Duration::from_secs_f64(ns * DEADLINE_FACTOR / 1e9)),
                format!("{DEADLINE_FACTOR:.0}x the pilot's expected rep, {at_least}"),
            ),
            (None, None, Some(budget)) if budget < FIRST_DEADLINE => (
                floor.max(budget),
                format!(
                    "no pilot sized the rep, as for an app's own workload or --iters: it gets the shape's --budget of {} s, {at_least}; raise --budget (or lower --iters) for a longer rep",
                    budget.as_secs_f64()
                ),
            ),
            (None, None, _) => (
                floor.max(FIRST_DEADLINE),
                "the deadline of a rep nothing has timed yet".to_string(),
            ),
        }
    }
}

/// How long a worker may take to answer, and what that was set from (the
/// message of a kill says it).
#[derive(Clone, Debug, PartialEq)]
pub struct Deadline {
    pub after: Duration,
    pub basis: String,
}

impl Deadline {
    /// Startup and `prepare`: compiling and instantiating have no rep time
    /// to follow.
    pub fn first() -> Self {
        Deadline {
            after: FIRST_DEADLINE,
            basis: "the deadline of startup and prepare".to_string(),
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

/// A running worker process and the threads draining its output.
/// The environment variable whose random length moves a worker's stack.
pub const ENV_PAD: &str = "LOOPBENCH_ENV_PAD";

pub struct Process {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    stderr: Arc<Mutex<VecDeque<String>>>,
    stderr_thread: Option<JoinHandle<()>>,
    /// The private copy of the binary it runs, removed once it has ended
    /// (fields drop after [`Process::drop`] waited for it).
    _private: Option<tempfile::TempPath>,
}

/// A copy of `bin` that no other process runs: each worker process
/// executes code pages of its own.
///
/// Two processes that run one file share its page-cache pages, so the
/// caches that are physically tagged hold their code for both: a rep
/// right after another arm's rep from the same file starts warm. In a
/// session the baseline, its null and every other compiled-in engine ran
/// one relink per epoch, and the build-layout null alone another; over 10
/// default sessions (2-core EPYC) every arm was 0.1-0.3% slower right
/// after the build-layout null than after an arm of its own file, and
/// the build-layout null itself 0.3-0.9% slower than the baseline on
/// call_return and f64_chain (call_return's build-null interval excluded
/// no change in 5 of 10 sessions, all above zero). A build arm beside
/// compiled-in engines was at the same disadvantage. A copy per process
/// puts every arm on the same footing.
fn private_copy(bin: &std::path::Path) -> std::io::Result<tempfile::TempPath> {
    use std::os::unix::fs::PermissionsExt;
    let (mut file, path) = tempfile::Builder::new()
        .prefix(".loopbench-worker-")
        .tempfile()?
        .into_parts();
    std::io::copy(&mut std::fs::File::open(bin)?, &mut file)?;
    file.set_permissions(std::fs::Permissions::from_mode(0o700))?;
    // Closed before it is run: a file open for writing cannot be executed.
    drop(file);
    Ok(path)
}

/// Said once per process: private copies could not be made.
static NO_PRIVATE_COPY: std::sync::Once = std::sync::Once::new();

pub enum Failure {
    /// The worker closed its stdout (exited or crashed).
    Gone,
    /// The deadline missed, with what it was set from.
    Timeout(Deadline),
    Garbled(String),
    Io(String),
    /// SIGINT or SIGTERM asked this process to stop while it waited: the
    /// worker is killed rather than waited for (its rep may never end).
    Interrupted,
}

/// At most 200 characters of what a worker sent, control characters
/// escaped: a garbage answer must not flood or break the report's line.
fn excerpt(line: &str) -> String {
    let mut out: String = line
        .chars()
        .take(200)
        .flat_map(char::escape_debug)
        .collect();
    if line.chars().count() > 200 {
        out.push_str("...");
    }
    out
}

impl Failure {
    /// Kill the process if needed and describe what happened, with the tail
    /// of its stderr.
    pub fn describe(&self, during: &str, process: &mut Process) -> String {
        let head = match self {
            Failure::Gone => {
                let status = process.wait_briefly();
                format!("the worker exited during {during} ({status})")
            }
            Failure::Timeout(d) => {
                let _ = process.child.kill();
                let _ = process.child.wait();
                format!(
                    "the worker did not answer {during} within {:.1} s ({}); killed it",
                    d.after.as_secs_f64(),
                    d.basis
                )
            }
            Failure::Garbled(line) => {
                let _ = process.child.kill();
                let _ = process.child.wait();
                format!(
                    "the worker sent a malformed answer during {during}: `{}`",
                    excerpt(line)
                )
            }
            Failure::Io(e) => {
                let status = process.wait_briefly();
                format!("talking to the worker failed during {during}: {e} ({status})")
            }
            Failure::Interrupted => {
                let _ = process.child.kill();
                let _ = process.child.wait();
                format!(
                    "stopped during {during} by signal {}; killed the worker",
                    crate::children::stop_signal()
                )
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
    /// Start `bin args`; `env_pad` bytes of an extra environment variable
    /// shift where the worker's stack starts (layout randomisation).
    pub fn spawn(
        bin: &std::path::Path,
        args: &[String],
        env_pad: usize,
    ) -> Result<Process, WorkerError> {
        let private = private_copy(bin)
            .inspect_err(|e| {
                NO_PRIVATE_COPY.call_once(|| {
                    crate::diag!(
                        "warning: no private copy of {} for its worker processes ({e}): \
                         they share its code pages, and an arm right after another of the same file starts warm",
                        bin.display()
                    )
                })
            })
            .ok();
        let run = private.as_deref().unwrap_or(bin);
        let start = || {
            crate::measure::callgrind::worker_command(run, args)
                .env(ENV_PAD, "x".repeat(env_pad))
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
        };
        // ETXTBSY: a process forked elsewhere in this program may hold the
        // copy's write descriptor for a moment before its own exec.
        let mut child = start();
        for _ in 0..20 {
            match &child {
                Err(e) if e.raw_os_error() == Some(libc::ETXTBSY) => {
                    std::thread::sleep(Duration::from_millis(5));
                    child = start();
                }
                _ => break,
            }
        }
        let mut child = child.map_err(|e| WorkerError::Spawn {
            bin: bin.to_path_buf(),
            source: Arc::new(e),
        })?;
        let stdout = child.stdout.take().ok_or(WorkerError::NoPipe("stdout"))?;
        let stderr = child.stderr.take().ok_or(WorkerError::NoPipe("stderr"))?;
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let (kept, stderr_thread) = drain_lines(stderr, STDERR_TAIL);
        Ok(Process {
            stdin: child.stdin.take(),
            child,
            lines,
            stderr: kept,
            stderr_thread: Some(stderr_thread),
            _private: private,
        })
    }

    /// The worker's process id.
    pub fn id(&self) -> u32 {
        self.child.id()
    }

    pub fn ask(&mut self, request: &Request, deadline: &Deadline) -> Result<Response, Failure> {
        self.send(request)?;
        self.receive(deadline)
    }

    /// Write one request and return at once (a duet sends both arms'
    /// requests before waiting for either answer).
    pub fn send(&mut self, request: &Request) -> Result<(), Failure> {
        let line = serde_json::to_string(request).map_err(|e| Failure::Io(e.to_string()))?;
        let stdin = self.stdin.as_mut().ok_or(Failure::Gone)?;
        if writeln!(stdin, "{line}")
            .and_then(|_| stdin.flush())
            .is_err()
        {
            // A worker that wrote something and exited before reading the
            // request: what it wrote says more than the broken pipe.
            return Err(match self.lines.recv_timeout(Duration::from_secs(1)) {
                Ok(said) if serde_json::from_str::<Response>(&said).is_err() => {
                    Failure::Garbled(said)
                }
                _ => Failure::Gone,
            });
        }
        Ok(())
    }

    /// The answer to the request sent last, if it comes within `wait`.
    pub fn poll(&mut self, wait: Duration) -> Result<Option<Response>, Failure> {
        match self.line_within(wait)? {
            Some(answer) => serde_json::from_str(&answer)
                .map(Some)
                .map_err(|_| Failure::Garbled(answer)),
            None => Ok(None),
        }
    }

    /// The next line the worker writes, if it comes within `wait`. The
    /// wait looks at the interrupt flag every [`INTERRUPT_POLL`], so one
    /// SIGINT or SIGTERM ends it at once, not at the deadline.
    fn line_within(&mut self, wait: Duration) -> Result<Option<String>, Failure> {
        let until = Instant::now().checked_add(wait);
        loop {
            if crate::children::signalled() {
                return Err(Failure::Interrupted);
            }
            let left = until.map_or(Duration::MAX, |u| {
                u.saturating_duration_since(Instant::now())
            });
            match self.lines.recv_timeout(left.min(INTERRUPT_POLL)) {
                Ok(line) => return Ok(Some(line)),
                Err(RecvTimeoutError::Timeout) if left <= INTERRUPT_POLL => return Ok(None),
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => return Err(Failure::Gone),
            }
        }
    }

    /// Kill the process for a missed deadline and say so.
    pub fn timed_out(&mut self, deadline: Deadline, during: &str) -> String {
        Failure::Timeout(deadline).describe(during, self)
    }

    /// The answer to the request sent last, within `deadline`.
    pub fn receive(&mut self, deadline: &Deadline) -> Result<Response, Failure> {
        match self.line_within(deadline.after)? {
            Some(answer) => serde_json::from_str(&answer).map_err(|_| Failure::Garbled(answer)),
            None => Err(Failure::Timeout(deadline.clone())),
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

/// Read `reader` line by line on a thread until it ends, keeping the last
/// `keep` lines (a child's stderr: it must be drained or the child blocks).
pub fn drain_lines(
    reader: impl std::io::Read + Send + 'static,
    keep: usize,
) -> (Arc<Mutex<VecDeque<String>>>, JoinHandle<()>) {
    let kept: Arc<Mutex<VecDeque<String>>> = Arc::default();
    let thread = {
        let kept = Arc::clone(&kept);
        std::thread::spawn(move || {
            for line in BufReader::new(reader).lines().map_while(Result::ok) {
                if let Ok(mut k) = kept.lock() {
                    if k.len() == keep {
                        k.pop_front();
                    }
                    k.push_back(line);
                }
            }
        })
    };
    (kept, thread)
}

/// The last `n` non-empty lines of `text`.
pub fn tail(text: &str, n: usize) -> Vec<String> {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(n)..]
        .iter()
        .map(|l| l.to_string())
        .collect()
}

pub fn indent(lines: &[String]) -> String {
    lines
        .iter()
        .map(|l| format!("    {l}"))
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deadlines_follow_the_baseline() {
        let t = Timing::default();
        assert_eq!(t.deadline(&[]).after, FIRST_DEADLINE);
        t.record(1e9); // 1 s reps
        t.record(3e9);
        t.record(2e9);
        assert_eq!(t.deadline(&[]).after, Duration::from_secs(40));
        // The arm's own slower reps raise it.
        assert_eq!(t.deadline(&[5e9]).after, Duration::from_secs(100));
        t.reset();
        t.record(1e6);
        assert_eq!(t.deadline(&[]).after, floor());
        // Before any rep, the pilot's expectation stands in for them.
        t.reset();
        t.expect(Some(1e9));
        assert_eq!(t.deadline(&[]).after, Duration::from_secs(20));
        // With nothing timed (--iters, no pilot), the budget bounds a rep,
        // at least the floor, and the message says so.
        let t = Timing::default();
        t.within(Some(Duration::from_millis(500)));
        let d = t.deadline(&[]);
        assert_eq!(d.after, floor());
        assert!(d.basis.contains("--budget of 0.5 s"), "{}", d.basis);
        t.within(Some(Duration::from_secs(30)));
        assert_eq!(t.deadline(&[]).after, Duration::from_secs(30).max(floor()));
        t.within(Some(Duration::from_secs(1000)));
        assert_eq!(t.deadline(&[]).after, FIRST_DEADLINE);
        // Once a rep is timed, its time sets the deadline, not the budget.
        t.within(Some(Duration::from_millis(500)));
        t.record(1e9);
        assert_eq!(t.deadline(&[]).after, Duration::from_secs(20));
    }

    /// Issue 53.13: a setup that grows memory to 4 GiB took one arm's first
    /// rep 4 s, all untimed, and the next arm was killed at the floor of
    /// 10 s set by a 1 us timed call.
    #[test]
    fn a_slow_untimed_rep_raises_every_arms_deadline() {
        let t = Timing::default();
        t.record(1e3);
        assert_eq!(t.deadline(&[]).after, floor());
        t.answered(Duration::from_secs(4));
        t.answered(Duration::from_millis(1));
        let d = t.deadline(&[1e3]);
        assert_eq!(d.after, Duration::from_secs(80));
        assert!(d.basis.contains("untimed reset and verify"), "{}", d.basis);
        // A slow timed rep still sets it where it is the longer.
        t.record(1e10);
        t.record(1e10);
        assert_eq!(t.deadline(&[]).after, Duration::from_secs(200));
        // The next shape starts afresh.
        t.reset();
        assert_eq!(t.deadline(&[]).after, FIRST_DEADLINE);
    }
}
