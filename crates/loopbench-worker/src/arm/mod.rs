//! Arms: the things a session compares.
//!
//! The scheduler sees an arm only through [`Arm`] and [`PreparedArm`]: it
//! prepares each arm for a shape (compile and instantiate a fresh instance,
//! untimed) and then asks for one rep at a time. A rep is reset (untimed),
//! the timed call, and verify (untimed), all done by the arm itself. That is
//! the seam for arms that live in another process (a different build of an
//! engine): such an arm performs the same rep remotely and returns the same
//! [`Rep`], and the scheduler does not change.
//!
//! What an arm is on the command line is [`spec`] ([`ArmSpec`]) and, for a
//! build arm, [`build`] (the build part); what arms fail with is [`error`].

pub mod build;
pub mod error;
pub mod spec;

pub use error::{ArmError, RequirementError, RunError, SpecError};
pub use spec::{parse_arms, ArmSpec};
// Re-exported: the arm syntax names engines, and callers reach both here.
pub use crate::engines::EngineKind;

use crate::engines::{Compiled, Engine, EngineError, Instance};
use crate::measure::{Meter, Reading};
use crate::proposals::{self, Proposals};
use crate::shapes::{HookError, ShapeError, ShapeModule};

/// What the scheduler asks of every arm.
pub trait Arm {
    /// The name shown in reports, unique in the session (`wasmi`,
    /// `wasmi:fuel`, `wasmi#null`).
    fn label(&self) -> &str;
    /// Engine and version, e.g. `wasmi 2.0.0`.
    fn version(&self) -> String;
    fn supports(&self) -> Proposals;
    /// Compile and instantiate a fresh instance for `shape`, untimed.
    fn prepare<'s>(&self, shape: &'s ShapeModule) -> Result<Box<dyn PreparedArm + 's>, RunError>;
    /// The process the arm runs in, when it is not this one.
    fn pid(&self) -> Option<u32> {
        None
    }
    /// The phase totals its process recorded since it was last asked, for
    /// an arm in another process (`--phases`); `None` for an arm in this
    /// one, whose phases are recorded here already.
    fn take_phases(&self) -> Option<std::collections::BTreeMap<crate::phases::Phase, f64>> {
        None
    }
}

/// One arm, ready to run one shape.
pub trait PreparedArm {
    /// Reset, timed call, verify. `rep` numbers reps for error messages.
    fn rep(&mut self, rep: usize) -> Result<Rep, RunError>;
    /// Start one rep of a duet and return without waiting for it: the arm
    /// and its partner meet at the duet barrier before their timed calls
    /// ([`crate::workers::barrier`]). Only arms in worker processes can.
    fn start_duet(&mut self, rep: usize, duet: Duet) -> Result<(), RunError> {
        let _ = (rep, duet);
        Err(RunError::NoDuet)
    }
    /// Run `shape_iters` (the shape's count; the arm scales it as it
    /// scales the shape's) from the next rep on, on the same instance:
    /// the pilot sizes reps without compiling and filling a fresh instance
    /// for every count it tries. `Ok(false)`: this arm cannot, prepare
    /// anew.
    fn resize(&mut self, shape_iters: u64) -> Result<bool, RunError> {
        let _ = shape_iters;
        Ok(false)
    }
    /// The reading of the rep [`PreparedArm::start_duet`] started, if it
    /// arrives within `wait` (`Ok(None)`: not yet; the arm's own deadline
    /// still applies across polls). The scheduler polls both arms of a
    /// duet in turn, so a partner that died is noticed while the other
    /// still waits for it at the barrier.
    fn poll_duet(
        &mut self,
        rep: usize,
        wait: std::time::Duration,
    ) -> Result<Option<Rep>, RunError> {
        let _ = (rep, wait);
        Err(RunError::NoDuet)
    }
}

/// One arm's part in a duet rep: where it waits, for whom, and on which
/// core it runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Duet {
    /// This arm's slot in the barrier page (its index in the session).
    pub slot: usize,
    /// The partner's slot.
    pub partner: usize,
    /// The duet's number, the same for both arms, new for every duet.
    pub generation: u64,
    /// The core to run the timed call on.
    pub core: usize,
}

/// How a duet rep met its partner, as the worker saw it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct DuetMet {
    pub generation: u64,
    /// CLOCK_MONOTONIC nanoseconds when the barrier let it go.
    pub released_ns: u64,
    /// The core it ran on (as the kernel reported after the call).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<usize>,
}

/// The outcome of one verified rep.
#[derive(Clone, Debug, PartialEq)]
pub struct Rep {
    pub reading: Reading,
    /// Set for a duet rep.
    pub duet: Option<DuetMet>,
}

/// Why an arm does not run a shape.
pub fn skip_reason(arm: &dyn Arm, shape: &ShapeModule) -> Result<Option<String>, ShapeError> {
    let needed = proposals::required(&shape.wasm).map_err(|e| ShapeError::Proposals {
        shape: shape.name().to_string(),
        detail: e.to_string(),
    })?;
    Ok(proposals::first_missing(&needed, &arm.supports())
        .map(|p| format!("{} lacks {p}", arm.label())))
}

/// Why an arm's iteration override gives no count for a shape.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum ItersError {
    #[error("{base} iterations do not scale exactly by {num}/{den}: use a multiple of {multiple}")]
    Inexact {
        base: u64,
        num: u64,
        den: u64,
        /// The least base count that scales exactly.
        multiple: u64,
    },
    #[error("{base} x {num}/{den} iterations overflow")]
    Overflow { base: u64, num: u64, den: u64 },
    #[error("{0} iterations do not fit run(i32)")]
    OutOfRange(u64),
}

/// How many loop iterations each rep of an arm runs.
///
/// Every arm of a comparison normally runs the shape's own count; an
/// override is how a known effect is built by construction (calibration:
/// exactly x% more iterations) or a fixed cost is priced (one group).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Iters {
    /// The shape's count.
    #[default]
    Shape,
    /// The shape's count times `num / den`, refused unless exact.
    Ratio { num: u64, den: u64 },
    /// This count, whatever the shape's.
    Fixed(u64),
}

impl Iters {
    /// The count for a shape whose own count is `base`, or why there is none.
    pub fn resolve(self, base: u64) -> Result<u64, ItersError> {
        let n = match self {
            Iters::Shape => base,
            Iters::Fixed(n) => n,
            Iters::Ratio { num, den } => {
                let scaled = u128::from(base) * u128::from(num);
                if den == 0 || scaled % u128::from(den) != 0 {
                    let (mut a, mut b) = (num, den.max(1));
                    while b != 0 {
                        (a, b) = (b, a % b);
                    }
                    return Err(ItersError::Inexact {
                        base,
                        num,
                        den,
                        multiple: den.max(1) / a,
                    });
                }
                u64::try_from(scaled / u128::from(den)).map_err(|_| ItersError::Overflow {
                    base,
                    num,
                    den,
                })?
            }
        };
        if n == 0 || n > i32::MAX as u64 {
            return Err(ItersError::OutOfRange(n));
        }
        Ok(n)
    }
}

/// An engine compiled into this binary.
pub struct InProcessArm {
    label: String,
    engine: Box<dyn Engine>,
    /// Routes a WASI command's imports to the host on this arm's engine;
    /// `None` where the engine has no routing (a build's adapter without).
    wasi: Option<WasiRouting>,
    /// Makes the extra counters for each prepared instance.
    counters: CounterFactory,
    iters: Iters,
}

/// Compiles a WASI command on an arm's engine with its imports routed to
/// the one host ([`crate::wasi`]).
pub type WasiRouting = std::sync::Arc<
    dyn Fn(&[u8]) -> Result<Box<dyn crate::wasi::Runner>, EngineError> + Send + Sync,
>;

/// The routing of an engine compiled into this binary.
pub fn routing_of(spec: ArmSpec) -> WasiRouting {
    std::sync::Arc::new(move |wasm: &[u8]| spec.wasi(wasm))
}

/// Makes the extra counters of one prepared arm (they may hold configuration,
/// e.g. the TSC calibration).
pub type CounterFactory =
    std::sync::Arc<dyn Fn() -> Vec<Box<dyn crate::measure::Counter>> + Send + Sync>;

impl InProcessArm {
    pub fn new(spec: &ArmSpec, label: String) -> Result<Self, EngineError> {
        Ok(InProcessArm {
            label,
            engine: spec.build()?,
            wasi: Some(routing_of(spec.clone())),
            counters: std::sync::Arc::new(Vec::new),
            iters: Iters::Shape,
        })
    }

    /// An arm around an engine made elsewhere (a worker's adapter).
    pub fn from_engine(engine: Box<dyn Engine>, label: String) -> Self {
        InProcessArm {
            label,
            engine,
            wasi: None,
            counters: std::sync::Arc::new(Vec::new),
            iters: Iters::Shape,
        }
    }

    /// Run WASI commands too, their imports routed by `routing`.
    pub fn with_wasi(mut self, routing: WasiRouting) -> Self {
        self.wasi = Some(routing);
        self
    }

    pub fn with_counters(mut self, counters: CounterFactory) -> Self {
        self.counters = counters;
        self
    }

    /// Run another iteration count than the shape's (see [`Iters`]).
    pub fn with_iters(mut self, iters: Iters) -> Self {
        self.iters = iters;
        self
    }

    /// The count each rep of this arm runs on `shape`, checked: it fits
    /// `run(i32)` and keeps the shape's iteration group whole.
    pub fn iters_for(&self, shape: &ShapeModule) -> Result<u64, RunError> {
        let usage = |detail: String| RunError::Iters {
            arm: self.label.clone(),
            detail,
        };
        let n = self
            .iters
            .resolve(shape.iters)
            .map_err(|e| usage(e.to_string()))?;
        let per = shape.shape.declared(&shape.params).per.max(1);
        if n % per != 0 {
            return Err(usage(format!(
                "{n} iterations are not a multiple of shape {}'s group of {per}",
                shape.name()
            )));
        }
        Ok(n)
    }

    /// Compile, instantiate and initialise a fresh instance (untimed); the
    /// concrete type, for callers that look at the instance after a rep.
    pub fn prepare_local<'s>(
        &self,
        shape: &'s ShapeModule,
    ) -> Result<InProcessPrepared<'s>, RunError> {
        let iters = self.iters_for(shape)?;
        let engine_err = |source| RunError::Engine {
            shape: shape.name().to_string(),
            arm: self.label.clone(),
            source,
        };
        use crate::phases::{time, Phase};
        let (compiled, mut instance) = match shape.shape.command() {
            Some(command) => {
                let runner = time(Phase::Compile, || match &self.wasi {
                    Some(routing) => routing(&shape.wasm),
                    None => Err(EngineError::Config(format!(
                        "{}: this build's adapter has no routing of WASI imports (builds of wasmi 1.x and 2.x, tinywasm 0.10 and wasm3 0.3 have one, as have the engines built into loopbench)",
                        self.label
                    ))),
                })
                .map_err(engine_err)?;
                let process = crate::wasi::Process::new(runner, command.setup().clone());
                (None, Box::new(process) as Box<dyn Instance>)
            }
            None => {
                let compiled = time(Phase::Compile, || self.engine.compile(&shape.wasm))
                    .map_err(engine_err)?;
                let instance =
                    time(Phase::Instantiate, || compiled.instantiate()).map_err(engine_err)?;
                (Some(compiled), instance)
            }
        };
        time(Phase::Setup, || {
            shape.shape.init(&shape.params, instance.as_mut())
        })
        .map_err(|e| hook_error(shape.name(), &self.label, 0, e))?;
        Ok(InProcessPrepared {
            arm: self.label.clone(),
            shape: shape.shape_ref(),
            iters,
            arm_iters: self.iters,
            per: shape.shape.declared(&shape.params).per.max(1),
            _compiled: compiled,
            instance,
            meter: Meter::new((self.counters)()),
            last_return: None,
        })
    }
}

impl Arm for InProcessArm {
    fn label(&self) -> &str {
        &self.label
    }
    fn version(&self) -> String {
        // Compiled into this binary: the binary is part of the build.
        format!(
            "{} [in process, loopbench {}]",
            self.engine.version(),
            crate::versions::binary_id()
        )
    }
    fn supports(&self) -> Proposals {
        self.engine.supports()
    }
    fn prepare<'s>(&self, shape: &'s ShapeModule) -> Result<Box<dyn PreparedArm + 's>, RunError> {
        Ok(Box::new(self.prepare_local(shape)?))
    }
}

pub fn hook_error(shape: &str, arm: &str, rep: usize, e: HookError) -> RunError {
    match e {
        HookError::Engine(source) => RunError::Engine {
            shape: shape.to_string(),
            arm: arm.to_string(),
            source,
        },
        HookError::Mismatch(m) => RunError::Verify {
            shape: shape.to_string(),
            arm: arm.to_string(),
            rep,
            detail: m.to_string(),
        },
    }
}

/// An [`InProcessArm`] ready to run one shape.
pub struct InProcessPrepared<'a> {
    arm: String,
    shape: crate::shapes::ShapeRef<'a>,
    iters: u64,
    /// How the arm scales a shape's count, and the shape's group size.
    arm_iters: Iters,
    per: u64,
    /// Kept alive with its instance (none for a WASI command, whose
    /// process holds its own).
    _compiled: Option<Box<dyn Compiled>>,
    instance: Box<dyn Instance>,
    meter: Meter,
    last_return: Option<i32>,
}

impl InProcessPrepared<'_> {
    /// The iteration count every rep runs and verifies.
    pub fn iters(&self) -> u64 {
        self.iters
    }
    /// What `run` returned in the last rep.
    pub fn last_return(&self) -> Option<i32> {
        self.last_return
    }
    /// The instance, for checks after a rep.
    pub fn instance(&mut self) -> &mut dyn Instance {
        self.instance.as_mut()
    }
}

impl PreparedArm for InProcessPrepared<'_> {
    fn resize(&mut self, shape_iters: u64) -> Result<bool, RunError> {
        let usage = |detail: String| RunError::Iters {
            arm: self.arm.clone(),
            detail,
        };
        let n = self
            .arm_iters
            .resolve(shape_iters)
            .map_err(|e| usage(e.to_string()))?;
        if n % self.per != 0 {
            return Err(usage(format!(
                "{n} iterations are not a multiple of shape {}'s group of {}",
                self.shape.name, self.per
            )));
        }
        self.iters = n;
        Ok(true)
    }

    fn rep(&mut self, rep: usize) -> Result<Rep, RunError> {
        let s = self.shape;
        let explain = |inst: &mut dyn Instance| s.shape.explain_failure(inst);
        let (reading, ret) = timed_rep(
            &s,
            &self.arm,
            rep,
            (s.shape.entry(), self.iters),
            self.instance.as_mut(),
            &mut self.meter,
            &explain,
        )?;
        self.last_return = ret;
        Ok(Rep {
            reading,
            duet: None,
        })
    }
}

/// One rep on a ready instance, shared by every in-process arm: the
/// shape's reset (untimed), the one timed call `entry.0(entry.1)`, the
/// shape's verify of that count (untimed). `explain` says why a failed
/// call failed, when the module can tell. Returns the reading and what the
/// call returned.
pub fn timed_rep(
    s: &crate::shapes::ShapeRef,
    arm: &str,
    rep: usize,
    (entry, n): (&str, u64),
    inst: &mut dyn Instance,
    meter: &mut Meter,
    explain: &dyn Fn(&mut dyn Instance) -> Option<String>,
) -> Result<(Reading, Option<i32>), RunError> {
    let err = |e| hook_error(s.name, arm, rep, e);
    use crate::phases::{record, time, Phase};
    time(Phase::Setup, || s.shape.reset(s.params, n, inst)).map_err(err)?;
    meter.context(s.name, arm, rep);
    let call = crate::children::Unstoppable::enter();
    let ret = inst.call(entry, Some(n as i32), Some(meter));
    drop(call);
    let ret = ret.map_err(|e| match explain(&mut *inst) {
        Some(why) => err(HookError::Engine(EngineError::Trap(format!("{e}; {why}")))),
        None => err(HookError::Engine(e)),
    })?;
    let reading = meter.take();
    record(
        Phase::TimedRun,
        std::time::Duration::from_nanos(reading.ns as u64),
    );
    time(Phase::Verify, || s.shape.verify(s.params, n, ret, inst)).map_err(err)?;
    Ok((reading, ret))
}
