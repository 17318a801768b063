//! The error the library hands the binary. Each area owns its errors in a
//! leaf file of its own (`engines/error.rs`, `shapes/error.rs`,
//! `arm/error.rs`, `workers/error.rs`, `measure/error.rs`, ...); this type sits
//! above them all and only wraps them, keeping each cause (`#[source]`), so
//! no lower layer imports it. The binary prints one line and exits non-zero;
//! nothing here panics on bad input.

use thiserror::Error;

use crate::engines::error::EngineError;

/// Everything the library reports to the binary.
#[derive(Debug, Error)]
pub enum Error {
    /// Bad command-line usage (built in `cli/`): options that do not fit
    /// together, values out of range.
    #[error("{0}")]
    Usage(String),
    /// A shape cannot be chosen, built or loaded.
    #[error(transparent)]
    Shape(#[from] crate::shapes::error::ShapeError),
    /// A rep failed: verify, engine, worker (hard errors naming shape, arm
    /// and rep).
    #[error(transparent)]
    Run(#[from] crate::arm::error::RunError),
    /// The exact counting run failed or contradicts a declaration.
    #[error(transparent)]
    Count(#[from] crate::count::CountError),
    /// An engine could not be made or failed outside a shape.
    #[error(transparent)]
    Engine(#[from] EngineError),
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: std::io::Error,
    },
    /// An arm as written does not parse.
    #[error(transparent)]
    Arm(#[from] crate::arm::error::ArmError),
    /// A build arm is refused before the session (its build, its options),
    /// or the worker layout setting is bad.
    #[error(transparent)]
    Workers(#[from] crate::workers::error::WorkerError),
    #[error(transparent)]
    Effect(#[from] crate::calibrate::effect::EffectError),
    /// An app cannot be found, built, prepared or counted.
    #[error(transparent)]
    App(#[from] crate::apps::error::AppError),
    #[error(transparent)]
    Calibrate(#[from] crate::calibrate::error::CalibrateError),
    /// A replay of recorded reps cannot read its file or options.
    #[error(transparent)]
    Replay(#[from] crate::replay::ReplayError),
    #[error(transparent)]
    Size(#[from] crate::units::SizeError),
    /// Pinning failed, or `--counters callgrind` could not re-execute.
    #[error(transparent)]
    Measure(#[from] crate::measure::error::MeasureError),
    /// The history database failed (open, schema, query).
    #[cfg(feature = "history")]
    #[error(transparent)]
    Store(#[from] crate::history::store::StoreError),
    /// A format, an output target or an encoding refused by report/.
    #[error(transparent)]
    Report(#[from] crate::report::error::ReportError),
    /// A saved document does not read back.
    #[error(transparent)]
    Read(#[from] crate::results::ReadError),
    /// SIGINT or SIGTERM (`signal`) stopped the session (or calibration);
    /// what completed was reported. `units` names what was counted
    /// ("shapes", "repetitions"). The binary exits 128 + `signal`.
    #[error("interrupted: the results cover the {completed} of {planned} {units} that ran before the interrupt")]
    Interrupted {
        completed: usize,
        planned: usize,
        units: &'static str,
        signal: i32,
    },
}

impl Error {
    pub fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        Error::Io {
            context: context.into(),
            source,
        }
    }
}
