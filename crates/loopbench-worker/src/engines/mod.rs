//! Engine adapters: one file per engine, one small trait.
//!
//! An adapter compiles a module, instantiates it, calls one export with the
//! shapes' ABI (`(i32?) -> i32?`) and reads or writes linear memory. The
//! timed region is opened and closed by the adapter itself, immediately
//! around the engine's call, after the export has been looked up, so lookup
//! and argument marshalling stay outside it (see [`Instance::call`]).
//!
//! Each engine sits behind a Cargo feature. An engine that is compiled out
//! still parses on the command line and answers with the feature to enable
//! (the names, options and arm syntax are [`crate::arm::spec`]'s; an adapter
//! takes only its list of options).
//!
//! The wasmi (1.x and 2.x), tinywasm 0.10 and wasm3 0.3 adapters are also the source of
//! the worker of the same API family (the host's `workers::family`): the
//! file is included verbatim into the generated worker project, so it names
//! this crate as `loopbench_worker::...` (which `extern crate self as
//! loopbench_worker` makes valid here too), takes the engine's version as
//! an argument, and uses nothing private to this crate.

pub mod error;
mod kind;
use crate::measure::Meter;
use crate::proposals::{Proposal, Proposals};
pub use error::EngineError;
pub use kind::{EngineKind, UnknownEngine};

pub mod counting;
pub mod mock;
#[cfg(feature = "tinywasm")]
pub mod tinywasm;
#[cfg(feature = "wasm3")]
pub mod wasm3;
#[cfg(feature = "wasmer")]
pub mod wasmer;
pub mod wasmi;
#[cfg(feature = "wasmtime")]
pub mod wasmtime;

/// The in-process adapters' own text, which a worker project of the same
/// API family compiles as its adapter (the host's `workers::family`).
pub mod source {
    pub const WASMI: &str = include_str!("wasmi.rs");
    pub const TINYWASM: &str = include_str!("tinywasm.rs");
    pub const WASM3: &str = include_str!("wasm3.rs");
}

/// A compiled module, ready to be instantiated any number of times.
pub trait Compiled {
    /// A fresh instance with its own memory and globals.
    fn instantiate(&self) -> Result<Box<dyn Instance>, EngineError>;
}

/// A live instance.
pub trait Instance {
    /// Call `export` with an optional i32 argument. When `meter` is given,
    /// the adapter starts it right before the engine's call and stops it right
    /// after, so only the call is measured.
    fn call(
        &mut self,
        export: &str,
        arg: Option<i32>,
        meter: Option<&mut Meter>,
    ) -> Result<Option<i32>, EngineError>;
    fn write_memory(&mut self, offset: u64, data: &[u8]) -> Result<(), EngineError>;
    fn read_memory(&mut self, offset: u64, len: usize) -> Result<Vec<u8>, EngineError>;
    /// For a WASI command: its last run's host (output, markers, exit).
    fn wasi_host(&self) -> Option<&crate::wasi::Host> {
        None
    }
}

/// One engine with one configuration.
pub trait Engine: Send + Sync {
    /// The engine crate's name and version, e.g. `wasmi 2.0.0`.
    fn version(&self) -> String;
    /// The proposals this engine and configuration run (measured, not
    /// advertised: see the README's support table).
    fn supports(&self) -> Proposals;
    fn compile(&self, wasm: &[u8]) -> Result<Box<dyn Compiled>, EngineError>;
}

/// Why an engine's options are refused: an adapter's fixed set
/// ([`check_options`]) or the mock engine's `key=value` options.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum OptionError {
    #[error("{engine} {version} takes no options, got `{option}`")]
    NoOptions {
        engine: String,
        version: String,
        option: String,
    },
    #[error("{engine} {version} takes no option `{option}` (valid: {valid})")]
    NotValid {
        engine: String,
        version: String,
        option: String,
        /// The valid options, comma-separated.
        valid: String,
    },
    #[error("mock option `{option}` needs a value: {form}")]
    NeedsValue { option: String, form: &'static str },
    #[error("unknown option `{option}` for mock (valid: {valid})")]
    UnknownMock {
        option: String,
        /// The mock's option forms, comma-separated.
        valid: String,
    },
    #[error("mock option `{key}` given twice")]
    Twice { key: String },
    #[error("mock option `{option}`: expected {expected} ({form})")]
    BadValue {
        option: String,
        expected: &'static str,
        form: &'static str,
    },
}

/// Worker adapters (and the [`Factory`](crate::workers::server::Factory)
/// they implement) report failures as strings: `?` keeps working there.
impl From<OptionError> for String {
    fn from(e: OptionError) -> String {
        e.to_string()
    }
}

/// Refuse any option outside `valid` for an adapter of `engine` at
/// `version`, naming the valid ones. In-process arms are checked earlier,
/// by the arm syntax; a worker's adapter gets its options over the pipe.
pub fn check_options(
    engine: &str,
    version: &str,
    options: &[String],
    valid: &[&str],
) -> Result<(), OptionError> {
    match options.iter().find(|o| !valid.contains(&o.as_str())) {
        None => Ok(()),
        Some(o) if valid.is_empty() => Err(OptionError::NoOptions {
            engine: engine.to_string(),
            version: version.to_string(),
            option: o.clone(),
        }),
        Some(o) => Err(OptionError::NotValid {
            engine: engine.to_string(),
            version: version.to_string(),
            option: o.clone(),
            valid: valid.join(", "),
        }),
    }
}

/// Proposal support sets used by the adapters.
pub fn support(list: &[Proposal]) -> Proposals {
    Proposals::from_iter(list.iter().copied())
}
