//! What an engine adapter can fail with. A leaf: the adapters, the shapes'
//! hooks and the worker protocol all name it, so it depends on nothing of
//! the crate (and a worker template that includes an adapter verbatim finds
//! it at `loopbench_worker::engines::EngineError`).

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
    /// A WASI command that failed as a process: exit code, broken protocol.
    #[error("{0}")]
    Process(String),
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
