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
//! What an arm is on the command line ([`ArmSpec`], [`EngineKind`]) is in
//! [`spec`].

pub mod spec;

pub use spec::{parse_arms, ArmSpec, EngineKind};

use crate::engines::{Compiled, Engine, Instance};
use crate::error::{EngineError, Error};
use crate::measure::{Meter, Reading};
use crate::proposals::{self, Proposals};
use crate::shapes::{HookError, ShapeModule};

/// What the scheduler asks of every arm.
pub trait Arm {
    /// The name shown in reports, unique in the session (`wasmi`,
    /// `wasmi:fuel`, `wasmi#null`).
    fn label(&self) -> &str;
    /// Engine and version, e.g. `wasmi 2.0.0`.
    fn version(&self) -> String;
    fn supports(&self) -> Proposals;
    /// Compile and instantiate a fresh instance for `shape`, untimed.
    fn prepare<'s>(&self, shape: &'s ShapeModule) -> Result<Box<dyn PreparedArm + 's>, Error>;
}

/// One arm, ready to run one shape.
pub trait PreparedArm {
    /// Reset, timed call, verify. `rep` numbers reps for error messages.
    fn rep(&mut self, rep: usize) -> Result<Rep, Error>;
}

/// The outcome of one verified rep.
#[derive(Clone, Debug, PartialEq)]
pub struct Rep {
    pub reading: Reading,
}

/// Why an arm does not run a shape.
pub fn skip_reason(arm: &dyn Arm, shape: &ShapeModule) -> Result<Option<String>, Error> {
    let needed = proposals::required(&shape.wasm)
        .map_err(|e| Error::Usage(format!("shape {}: {e}", shape.name())))?;
    Ok(proposals::first_missing(&needed, &arm.supports())
        .map(|p| format!("{} lacks {p}", arm.label())))
}

/// An engine compiled into this binary.
pub struct InProcessArm {
    label: String,
    engine: Box<dyn Engine>,
    /// Makes the extra counters for each prepared instance.
    counters: CounterFactory,
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
            counters: std::sync::Arc::new(Vec::new),
        })
    }

    /// An arm around an engine made elsewhere (a worker's adapter).
    pub fn from_engine(engine: Box<dyn Engine>, label: String) -> Self {
        InProcessArm {
            label,
            engine,
            counters: std::sync::Arc::new(Vec::new),
        }
    }

    pub fn with_counters(mut self, counters: CounterFactory) -> Self {
        self.counters = counters;
        self
    }
}

impl Arm for InProcessArm {
    fn label(&self) -> &str {
        &self.label
    }
    fn version(&self) -> String {
        self.engine.version()
    }
    fn supports(&self) -> Proposals {
        self.engine.supports()
    }
    fn prepare<'s>(&self, shape: &'s ShapeModule) -> Result<Box<dyn PreparedArm + 's>, Error> {
        let engine_err = |source| Error::Engine {
            shape: shape.name().to_string(),
            arm: self.label.clone(),
            source,
        };
        use crate::phases::{time, Phase};
        let compiled =
            time(Phase::Compile, || self.engine.compile(&shape.wasm)).map_err(engine_err)?;
        let mut instance =
            time(Phase::Instantiate, || compiled.instantiate()).map_err(engine_err)?;
        time(Phase::Setup, || {
            shape.shape.init(&shape.params, instance.as_mut())
        })
        .map_err(|e| self.hook_error(shape, 0, e))?;
        Ok(Box::new(InProcessPrepared {
            arm: self.label.clone(),
            shape: shape.shape_ref(),
            _compiled: compiled,
            instance,
            meter: Meter::new((self.counters)()),
        }))
    }
}

impl InProcessArm {
    fn hook_error(&self, shape: &ShapeModule, rep: usize, e: HookError) -> Error {
        hook_error(shape.name(), &self.label, rep, e)
    }
}

pub fn hook_error(shape: &str, arm: &str, rep: usize, e: HookError) -> Error {
    match e {
        HookError::Engine(source) => Error::Engine {
            shape: shape.to_string(),
            arm: arm.to_string(),
            source,
        },
        HookError::Mismatch(m) => Error::Verify {
            shape: shape.to_string(),
            arm: arm.to_string(),
            rep,
            detail: m.to_string(),
        },
    }
}

struct InProcessPrepared<'a> {
    arm: String,
    shape: crate::shapes::ShapeRef<'a>,
    _compiled: Box<dyn Compiled>,
    instance: Box<dyn Instance>,
    meter: Meter,
}

impl PreparedArm for InProcessPrepared<'_> {
    fn rep(&mut self, rep: usize) -> Result<Rep, Error> {
        let s = &self.shape;
        let inst = self.instance.as_mut();
        let err = |e| hook_error(s.name, &self.arm, rep, e);
        use crate::phases::{record, time, Phase};
        time(Phase::Setup, || s.shape.reset(s.params, s.iters, inst)).map_err(err)?;
        self.meter.context(s.name, &self.arm, rep);
        let ret = inst
            .call("run", Some(s.iters as i32), Some(&mut self.meter))
            .map_err(|e| match s.shape.explain_failure(&mut *inst) {
                Some(why) => err(HookError::Engine(EngineError::Trap(format!("{e}; {why}")))),
                None => err(HookError::Engine(e)),
            })?;
        let reading = self.meter.take();
        record(
            Phase::TimedRun,
            std::time::Duration::from_nanos(reading.ns as u64),
        );
        time(Phase::Verify, || {
            s.shape.verify(s.params, s.iters, ret, inst)
        })
        .map_err(err)?;
        Ok(Rep { reading })
    }
}
