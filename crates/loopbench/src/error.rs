//! Errors, one enum per area. The binary prints them as one line and exits
//! non-zero; nothing here panics on bad input.

use thiserror::Error;

/// What an engine adapter can fail with.
#[derive(Debug, Error, Clone)]
pub enum EngineError {
    #[error("{engine} is not compiled into this binary; rebuild with --features {feature}")]
    NotCompiled {
        engine: &'static str,
        feature: &'static str,
    },
    #[error("compile failed: {0}")]
    Compile(String),
    #[error("instantiation failed: {0}")]
    Instantiate(String),
    #[error("trap: {0}")]
    Trap(String),
    #[error("module has no export `{0}`")]
    MissingExport(String),
    #[error("module exports no memory named `memory`")]
    NoMemory,
    #[error("memory access failed: {0}")]
    Memory(String),
    #[error("{0}")]
    Config(String),
}

impl EngineError {
    /// A trap with the engine's message, less the `trap: ` (or `[trap] `,
    /// `wasm trap: `) some engines start it with: the variant says it.
    pub fn trap(message: impl std::fmt::Display) -> Self {
        let m = message.to_string();
        let mut m = m.trim();
        for prefix in ["trap: ", "Trap: ", "[trap] ", "wasm trap: "] {
            m = m.strip_prefix(prefix).unwrap_or(m);
        }
        EngineError::Trap(m.split_whitespace().collect::<Vec<_>>().join(" "))
    }
}

/// Everything the library reports to the binary.
#[derive(Debug, Error)]
pub enum Error {
    /// Bad input from the user: shapes, engines, sizes, files.
    #[error("{0}")]
    Usage(String),
    /// A rep produced the wrong result: a hard error.
    #[error("verify failed: shape {shape}, arm {arm}, rep {rep}: {detail}")]
    Verify {
        shape: String,
        arm: String,
        rep: usize,
        detail: String,
    },
    /// The engine trapped or failed while running a shape.
    #[error("shape {shape}, arm {arm}: {source}")]
    Engine {
        shape: String,
        arm: String,
        #[source]
        source: EngineError,
    },
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: std::io::Error,
    },
    /// The counting run disagrees with the shape's declared counts.
    #[error("counts for shape {shape} differ from its declaration: {detail}")]
    Counts { shape: String, detail: String },
    /// An arm as written does not parse.
    #[error(transparent)]
    Arm(#[from] crate::arm::ArmError),
    /// A build arm is refused before the session (its build, its options),
    /// or the worker layout setting is bad.
    #[error(transparent)]
    Workers(#[from] crate::workers::WorkerError),
    #[error(transparent)]
    Effect(#[from] crate::calibrate::effect::EffectError),
    /// An app cannot be found, built, prepared or counted.
    #[error(transparent)]
    App(#[from] crate::apps::AppError),
    #[error(transparent)]
    Size(#[from] crate::units::SizeError),
    /// Pinning failed, or `--counters callgrind` could not re-execute.
    #[error(transparent)]
    Measure(#[from] crate::measure::MeasureError),
    /// SIGINT stopped the session; what completed was reported.
    #[error("interrupted: the results cover the {completed} of {planned} shapes that ran before the interrupt")]
    Interrupted { completed: usize, planned: usize },
    /// A build arm's worker failed to build, crashed, hung or misbehaved.
    #[error("shape {shape}, arm {arm}: {detail}")]
    Worker {
        shape: String,
        arm: String,
        detail: String,
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
