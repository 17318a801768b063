//! The error the library hands the binary. Each area owns its errors in a
//! leaf file of its own (`engines/error.rs`, `shapes/error.rs`,
//! `arm/error.rs`, `workers/error.rs`, `measure/error.rs`, ...). This type
//! wraps those of the areas below a session, keeping each cause
//! (`#[source]`), so no area below it imports it. The areas above it
//! (calibration, apps, reports, history) return it too, so it cannot name
//! their errors without a circle: each of them converts its own into
//! [`Error::Above`] with a `From` beside its error type, and the cause is
//! kept whole. The binary prints one line and exits non-zero; nothing here
//! panics on bad input.

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
    /// A replay of recorded reps cannot read its file or options.
    #[error(transparent)]
    Replay(#[from] crate::replay::ReplayError),
    #[error(transparent)]
    Size(#[from] crate::units::SizeError),
    /// Pinning failed, or `--counters callgrind` could not re-execute.
    #[error(transparent)]
    Measure(#[from] crate::measure::error::MeasureError),
    /// A saved document does not read back.
    #[error(transparent)]
    Read(#[from] crate::results::ReadError),
    /// An area above this file failed (calibration and its effects, an
    /// app, an export, the history database): its own error, whole. Those
    /// areas convert into it with `From`, so `?` works as for the rest.
    #[error(transparent)]
    Above(Box<dyn std::error::Error + Send + Sync + 'static>),
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

/// Makes an area's own error convert into [`Error::Above`]: written beside
/// that error (`crate::converts_above!(CalibrateError);`), so this file
/// names nothing above it.
#[macro_export]
macro_rules! converts_above {
    ($area_error:ty) => {
        impl From<$area_error> for $crate::error::Error {
            fn from(e: $area_error) -> Self {
                $crate::error::Error::Above(Box::new(e))
            }
        }
    };
}

impl Error {
    /// [`Error::Interrupted`] for work that stopped early at the signal
    /// that asked it to, with `completed` of `planned` `units` (shapes,
    /// repetitions, steps) done.
    pub fn interrupted(completed: usize, planned: usize, units: &'static str) -> Self {
        Error::Interrupted {
            completed,
            planned,
            units,
            signal: crate::children::stop_signal(),
        }
    }

    pub fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        Error::Io {
            context: context.into(),
            source,
        }
    }
}

/// `print!` for results: a closed stdout (e.g. `| head`) becomes an I/O
/// error that the binary turns into a quiet exit, instead of a panic.
#[macro_export]
macro_rules! out {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        write!(std::io::stdout().lock(), $($arg)*).map_err(|e| $crate::error::Error::io("cannot write to stdout", e))?
    }};
}

/// `println!` for results; see [`out!`].
#[macro_export]
macro_rules! outln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        writeln!(std::io::stdout().lock(), $($arg)*).map_err(|e| $crate::error::Error::io("cannot write to stdout", e))?
    }};
}
