//! The orchestrator's end of the pipe: an [`Arm`] whose reps run in a
//! worker process ([`WorkerArm`]), and the wrapper that lends the baseline's
//! rep times to the workers' deadlines ([`Recorded`]).
//!
//! The scheduler cannot tell it from an in-process arm: `prepare` sends the
//! shape and waits for the fresh instance, `rep` asks for one rep and waits
//! for its reading; the worker does nothing in between, so one arm runs at a
//! time. What is new is failure: a worker that exits, stops answering
//! (every rep has a deadline set from the baseline's timing) or never built
//! is reported for its arm with the tail of its stderr, the process is
//! killed, and the other arms go on. The next shape starts a new process.
//! The process itself (spawn, deadlines, kill, stderr) is
//! [`super::supervise`]'s; this file speaks the protocol.

use super::error::WorkerError;
use super::project::Built;
use super::protocol::{Request, Response, ShapeSource, WireParams, PROTOCOL};
use super::supervise::{Deadline, Process, Timing};
use super::{ArmContext, Randomise};
use crate::arm::{Arm, ArmSpec, Duet, Iters, PreparedArm, Rep, RunError};
use crate::measure::Reading;
use crate::phases::Phase;
use crate::proposals::{Proposal, Proposals};
use crate::shapes::{self, ShapeModule};
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;
use std::time::{Duration, Instant};

/// Wraps the baseline arm so its rep times reach [`Timing`].
pub struct Recorded {
    pub inner: Box<dyn Arm>,
    pub timing: Timing,
}

impl Arm for Recorded {
    fn label(&self) -> &str {
        self.inner.label()
    }
    fn take_phases(&self) -> Option<BTreeMap<Phase, f64>> {
        self.inner.take_phases()
    }
    fn pid(&self) -> Option<u32> {
        self.inner.pid()
    }
    fn version(&self) -> String {
        self.inner.version()
    }
    fn supports(&self) -> Proposals {
        self.inner.supports()
    }
    fn prepare<'s>(&self, shape: &'s ShapeModule) -> Result<Box<dyn PreparedArm + 's>, RunError> {
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
    fn rep(&mut self, rep: usize) -> Result<Rep, RunError> {
        let asked = Instant::now();
        let r = self.inner.rep(rep)?;
        self.timing.answered(asked.elapsed());
        self.timing.record(r.reading.ns);
        Ok(r)
    }
    fn resize(&mut self, shape_iters: u64) -> Result<bool, RunError> {
        self.inner.resize(shape_iters)
    }
    fn start_duet(&mut self, rep: usize, duet: Duet) -> Result<(), RunError> {
        self.inner.start_duet(rep, duet)
    }
    fn poll_duet(&mut self, rep: usize, wait: Duration) -> Result<Option<Rep>, RunError> {
        let r = self.inner.poll_duet(rep, wait)?;
        if let Some(r) = &r {
            self.timing.record(r.reading.ns);
        }
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
    built: Result<Built, WorkerError>,
    state: Rc<RefCell<State>>,
    timing: Timing,
    /// Whether a build or startup failure was reported in full already.
    told: std::cell::Cell<bool>,
    pin: Option<usize>,
    /// This process's layout randomisation (environment size, stack offset,
    /// heap padding) and which of them are on.
    layout_seed: Option<u64>,
    layout: Randomise,
    /// The iteration count each rep runs, relative to the shape's.
    iters: Iters,
    /// The duet barrier's page, in a duet session.
    barrier: Option<std::path::PathBuf>,
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
        built: Result<Built, WorkerError>,
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
            pin: ctx.pin,
            layout_seed: ctx.next_layout_seed(),
            layout: ctx.layout,
            iters: Iters::Shape,
            barrier: ctx.barrier.clone(),
        };
        if let Err(e) = &arm.built {
            arm.state.borrow_mut().broken = Some(e.to_string());
        } else if let Err(e) = arm.spawn() {
            arm.state.borrow_mut().broken = Some(e);
        }
        arm
    }

    /// Start a process and exchange `init`/`ready` (its own phase).
    fn spawn(&self) -> Result<(), String> {
        let t0 = Instant::now();
        let r = self.spawn_untimed();
        crate::phases::record_for(&self.label, Phase::Spawn, t0.elapsed());
        r
    }

    fn spawn_untimed(&self) -> Result<(), String> {
        let built = self.built.as_ref().map_err(ToString::to_string)?;
        let layout = self.layout;
        let draw = |salt: u64| self.layout_seed.map(|s| s.rotate_left(salt as u32) ^ salt);
        let env_pad = if layout.env {
            draw(1).map_or(0, |s| (s % 4096) as usize)
        } else {
            0
        };
        let mut process =
            Process::spawn(&built.bin, &built.args, env_pad).map_err(|e| e.to_string())?;
        let init = Request::Init {
            label: self.label.clone(),
            options: self.options.clone(),
            counters: self.counters.clone(),
            pin: self.pin,
            layout_seed: draw(2).filter(|_| layout.stack),
            heap_seed: draw(3).filter(|_| layout.heap),
            barrier: self.barrier.clone(),
            tsc_hz: crate::measure::tsc::known_rate(),
        };
        match process.ask(&init, &Deadline::first()) {
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

    fn error(&self, shape: &str, detail: String) -> RunError {
        RunError::Worker {
            shape: shape.to_string(),
            arm: self.label.clone(),
            detail,
        }
    }
}

impl WorkerArm {
    /// Run another iteration count than the shape's (see [`Iters`]).
    pub fn with_iters(mut self, iters: Iters) -> Self {
        self.iters = iters;
        self
    }
}

impl Arm for WorkerArm {
    fn label(&self) -> &str {
        &self.label
    }
    fn take_phases(&self) -> Option<BTreeMap<Phase, f64>> {
        self.state.borrow().process.as_ref()?;
        match ask(&self.state, &Request::Phases, &Deadline::first(), "phases") {
            Ok(Response::Phases { seconds }) => Some(seconds),
            // A worker that cannot say has nothing to add; the session's
            // own figure for it stays.
            _ => None,
        }
    }
    fn pid(&self) -> Option<u32> {
        self.state.borrow().process.as_ref().map(|p| p.id())
    }
    fn version(&self) -> String {
        let s = self.state.borrow();
        match (&s.version, &s.broken) {
            (Some(v), _) => {
                // A worker build names what built it; this binary's own
                // engines (in process or relinked) name this binary.
                let by = match self.built.as_ref().ok().and_then(|b| b.identity.clone()) {
                    Some(identity) => identity,
                    None => format!("loopbench {}", crate::versions::binary_id()),
                };
                format!("{v} [worker: {}, {by}]", self.described)
            }
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
    fn prepare<'s>(&self, shape: &'s ShapeModule) -> Result<Box<dyn PreparedArm + 's>, RunError> {
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
        let iters = self
            .iters
            .resolve(shape.iters)
            .map_err(|e| self.error(shape.name(), e.to_string()))?;
        let request = Request::Prepare {
            shape: source_of(shape),
            params: WireParams::from(&shape.params),
            iters,
            wasm_hash: crate::hash::fnv1a(&[&shape.wasm]),
        };
        match ask(&self.state, &request, &Deadline::first(), "prepare") {
            Ok(Response::Prepared) => Ok(Box::new(WorkerPrepared {
                label: self.label.clone(),
                shape: shape.name(),
                state: Rc::clone(&self.state),
                timing: self.timing.clone(),
                own: Vec::new(),
                duet_since: None,
                arm_iters: self.iters,
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

/// Built-in shapes travel by name; a WASI command or an app recipe as
/// itself; anything else (a user shape, or a user file that shares a
/// built-in's name) as its bytes.
fn source_of(shape: &ShapeModule) -> ShapeSource {
    if let Some(command) = shape.shape.command() {
        return ShapeSource::Command(Box::new(command.source().clone()));
    }
    if let Some(recipe) = shape.shape.recipe() {
        return ShapeSource::Recipe(Box::new(recipe.source().clone()));
    }
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
    deadline: &Deadline,
    what: &str,
) -> Result<Response, String> {
    on_process(state, what, |p| p.ask(request, deadline))
}

/// `f` on the live process, which is dropped (killed) when `f` fails.
fn on_process<T>(
    state: &Rc<RefCell<State>>,
    what: &str,
    f: impl FnOnce(&mut Process) -> Result<T, super::supervise::Failure>,
) -> Result<T, String> {
    let mut s = state.borrow_mut();
    let process = s.process.as_mut().ok_or("the worker is not running")?;
    match f(process) {
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
    /// When the duet rep in flight was sent, and its deadline.
    duet_since: Option<(Instant, super::supervise::Deadline)>,
    /// How the arm scales a shape's count ([`PreparedArm::resize`]).
    arm_iters: Iters,
}

impl WorkerPrepared<'_> {
    fn error(&self, detail: String) -> RunError {
        RunError::Worker {
            shape: self.shape.to_string(),
            arm: self.label.clone(),
            detail,
        }
    }

    /// A worker's answer to `rep` as the rep, or the error it means.
    fn answer(&mut self, rep: usize, answer: Result<Response, String>) -> Result<Rep, RunError> {
        match answer {
            // A time no clock can give would become a wrong number.
            Ok(Response::Rep { ns, .. }) if !(ns.is_finite() && ns >= 0.0) => Err(self.error(
                format!("the worker reported an impossible time for rep {rep}: {ns} ns"),
            )),
            Ok(Response::Rep { ns, counters, duet }) => {
                self.own.push(ns);
                Ok(Rep {
                    reading: Reading { ns, counters },
                    duet,
                })
            }
            Ok(Response::Failed { error }) => Err(error.into_error(self.shape, &self.label)),
            Ok(other) => Err(self.error(format!("the worker answered `rep` with {other:?}"))),
            Err(detail) => Err(self.error(detail)),
        }
    }
}

impl PreparedArm for WorkerPrepared<'_> {
    fn resize(&mut self, shape_iters: u64) -> Result<bool, RunError> {
        let iters = self
            .arm_iters
            .resolve(shape_iters)
            .map_err(|e| self.error(e.to_string()))?;
        match ask(
            &self.state,
            &Request::Resize { iters },
            &Deadline::first(),
            "resize",
        ) {
            Ok(Response::Prepared) => Ok(true),
            Ok(Response::Failed { error }) => Err(error.into_error(self.shape, &self.label)),
            Ok(other) => Err(self.error(format!("the worker answered `resize` with {other:?}"))),
            Err(detail) => Err(self.error(detail)),
        }
    }

    fn rep(&mut self, rep: usize) -> Result<Rep, RunError> {
        let deadline = self.timing.deadline(&self.own);
        let asked = Instant::now();
        let answer = ask(
            &self.state,
            &Request::Rep { rep, duet: None },
            &deadline,
            &format!("rep {rep}"),
        );
        if answer.is_ok() {
            self.timing.answered(asked.elapsed());
        }
        self.answer(rep, answer)
    }

    fn start_duet(&mut self, rep: usize, duet: Duet) -> Result<(), RunError> {
        let request = Request::Rep {
            rep,
            duet: Some(duet),
        };
        on_process(&self.state, &format!("rep {rep}"), |p| p.send(&request))
            .map_err(|detail| self.error(detail))?;
        self.duet_since = Some((Instant::now(), self.timing.deadline(&self.own)));
        Ok(())
    }

    fn poll_duet(&mut self, rep: usize, wait: Duration) -> Result<Option<Rep>, RunError> {
        let during = format!("rep {rep}");
        let Some((since, deadline)) = self.duet_since.clone() else {
            return Err(self.error(format!("{during} was never started")));
        };
        let left = deadline.after.saturating_sub(since.elapsed());
        if left.is_zero() {
            self.duet_since = None;
            let mut s = self.state.borrow_mut();
            let detail = match s.process.take() {
                Some(mut p) => p.timed_out(deadline, &during),
                None => "the worker is not running".into(),
            };
            drop(s);
            return Err(self.error(detail));
        }
        match on_process(&self.state, &during, |p| p.poll(wait.min(left))) {
            Ok(None) => Ok(None),
            Ok(Some(answer)) => {
                self.duet_since = None;
                self.timing.answered(since.elapsed());
                self.answer(rep, Ok(answer)).map(Some)
            }
            Err(detail) => {
                self.duet_since = None;
                Err(self.error(detail))
            }
        }
    }
}
