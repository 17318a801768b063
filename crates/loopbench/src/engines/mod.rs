//! Engine adapters: one file per engine, one small trait.
//!
//! An adapter compiles a module, instantiates it, calls one export with the
//! shapes' ABI (`(i32?) -> i32?`) and reads or writes linear memory. The
//! timed region is opened and closed by the adapter itself, immediately
//! around the engine's call, after the export has been looked up, so lookup
//! and argument marshalling stay outside it (see [`Instance::call`]).
//!
//! Each engine sits behind a Cargo feature. An engine that is compiled out
//! still parses on the command line and answers with the feature to enable.

use crate::error::EngineError;
use crate::measure::Meter;
use crate::proposals::{Proposal, Proposals};
use std::fmt;
use std::str::FromStr;

pub mod mock;
#[cfg(feature = "tinywasm")]
mod tinywasm;
#[cfg(feature = "wasm3")]
mod wasm3;
#[cfg(feature = "wasmer")]
mod wasmer;
pub mod wasmi;
#[cfg(feature = "wasmtime")]
mod wasmtime;

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

/// The engines loopbench knows, compiled in or not.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum EngineKind {
    Wasmi,
    Tinywasm,
    Wasm3,
    Wasmtime,
    Wasmer,
    /// Synthetic costs over wasmi, for exact tests (never a default arm).
    Mock,
}

impl EngineKind {
    pub const ALL: [EngineKind; 6] = [
        EngineKind::Wasmi,
        EngineKind::Tinywasm,
        EngineKind::Wasm3,
        EngineKind::Wasmtime,
        EngineKind::Wasmer,
        EngineKind::Mock,
    ];

    pub fn name(self) -> &'static str {
        match self {
            EngineKind::Wasmi => "wasmi",
            EngineKind::Tinywasm => "tinywasm",
            EngineKind::Wasm3 => "wasm3",
            EngineKind::Wasmtime => "wasmtime",
            EngineKind::Wasmer => "wasmer",
            EngineKind::Mock => "mock",
        }
    }

    /// The Cargo feature that compiles this engine in.
    pub fn feature(self) -> &'static str {
        self.name()
    }

    pub fn compiled_in(self) -> bool {
        match self {
            EngineKind::Wasmi | EngineKind::Mock => true,
            EngineKind::Tinywasm => cfg!(feature = "tinywasm"),
            EngineKind::Wasm3 => cfg!(feature = "wasm3"),
            EngineKind::Wasmtime => cfg!(feature = "wasmtime"),
            EngineKind::Wasmer => cfg!(feature = "wasmer"),
        }
    }

    /// Configuration options this engine accepts after `:`.
    pub fn options(self) -> &'static [(&'static str, &'static str)] {
        match self {
            EngineKind::Wasmi => &[
                (
                    "fuel",
                    "fuel metering on (only adds work: a known-sign toggle)",
                ),
                (
                    "eager",
                    "translate every function at compile time (default: lazy, on first call)",
                ),
            ],
            EngineKind::Tinywasm => &[],
            EngineKind::Wasm3 => &[],
            EngineKind::Wasmtime => &[
                ("cranelift", "the optimising compiler (default)"),
                ("winch", "the baseline compiler"),
                ("pulley", "the Pulley interpreter (target pulley64)"),
            ],
            EngineKind::Wasmer => &[
                ("singlepass", "the baseline compiler (default)"),
                ("cranelift", "the optimising compiler"),
            ],
            EngineKind::Mock => mock::OPTIONS,
        }
    }

    /// The arms `--engines` uses when none are named.
    pub fn defaults() -> Vec<ArmSpec> {
        [EngineKind::Wasmi, EngineKind::Tinywasm, EngineKind::Wasm3]
            .into_iter()
            .filter(|k| k.compiled_in())
            .map(ArmSpec::new)
            .collect()
    }
}

impl fmt::Display for EngineKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// An engine plus its configuration, as written on the command line:
/// `engine[:option[,option...]]`, e.g. `wasmi`, `wasmi:fuel`,
/// `wasmtime:pulley`; with a build (`wasmi@0.31`, `tinywasm=path:DIR`, see
/// [`crate::build::spec`]) the engine runs from that build in a worker.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ArmSpec {
    pub engine: EngineKind,
    pub options: Vec<String>,
    /// `None`: the engine compiled into this binary; `Some`: a worker
    /// process built from this source and settings.
    pub worker: Option<crate::build::spec::BuildSpec>,
}

impl ArmSpec {
    /// The compiled-in engine with default options.
    pub fn new(engine: EngineKind) -> Self {
        ArmSpec {
            engine,
            options: Vec::new(),
            worker: None,
        }
    }
}

impl fmt::Display for ArmSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.engine.name())?;
        if let Some(b) = &self.worker {
            write!(f, "{b}")?;
        }
        if !self.options.is_empty() {
            write!(f, ":{}", self.options.join(","))?;
        }
        Ok(())
    }
}

impl FromStr for ArmSpec {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let crate::build::spec::Parsed {
            engine: name,
            build: worker,
            options,
        } = crate::build::spec::parse(s)?;
        let engine = crate::build::engine_kind(name)?;
        if worker.is_some() {
            if !crate::build::family::buildable(engine) {
                return Err(format!(
                    "arm `{s}`: {name} cannot run from a build (buildable engines: {})",
                    crate::build::family::buildable_names()
                ));
            }
            if let Some(o) = options
                .iter()
                .find(|o| !crate::build::any_family_accepts(engine, o))
            {
                return Err(format!("arm `{s}`: no {name} adapter takes option `{o}`"));
            }
            return Ok(ArmSpec {
                engine,
                options,
                worker,
            });
        }
        if engine == EngineKind::Mock {
            mock::MockConfig::parse(&options).map_err(|e| format!("arm `{s}`: {e}"))?;
            return Ok(ArmSpec {
                engine,
                options,
                worker: None,
            });
        }
        for o in &options {
            if !engine.options().iter().any(|(n, _)| n == o) {
                let valid: Vec<_> = engine.options().iter().map(|(n, _)| *n).collect();
                return Err(if valid.is_empty() {
                    format!("engine {name} takes no options, got `{o}`")
                } else {
                    format!(
                        "unknown option `{o}` for {name} (valid: {})",
                        valid.join(", ")
                    )
                });
            }
        }
        Ok(ArmSpec {
            engine,
            options,
            worker: None,
        })
    }
}

impl ArmSpec {
    pub fn has(&self, option: &str) -> bool {
        self.options.iter().any(|o| o == option)
    }

    /// Build the engine, or say which feature is missing.
    pub fn build(&self) -> Result<Box<dyn Engine>, EngineError> {
        if self.worker.is_some() {
            return Err(EngineError::Config(format!(
                "{self} runs in a worker process, not in this binary"
            )));
        }
        if !self.engine.compiled_in() {
            return Err(EngineError::NotCompiled {
                engine: self.engine.name(),
                feature: self.engine.feature(),
            });
        }
        match self.engine {
            EngineKind::Wasmi => Ok(Box::new(wasmi::WasmiEngine::new(self))),
            EngineKind::Mock => Ok(Box::new(mock::MockEngine::new(self)?)),
            #[cfg(feature = "tinywasm")]
            EngineKind::Tinywasm => Ok(Box::new(tinywasm::TinywasmEngine::new(self))),
            #[cfg(feature = "wasm3")]
            EngineKind::Wasm3 => Ok(Box::new(wasm3::Wasm3Engine::new(self))),
            #[cfg(feature = "wasmtime")]
            EngineKind::Wasmtime => Ok(Box::new(wasmtime::WasmtimeEngine::new(self)?)),
            #[cfg(feature = "wasmer")]
            EngineKind::Wasmer => Ok(Box::new(wasmer::WasmerEngine::new(self)?)),
            #[allow(unreachable_patterns)]
            _ => Err(EngineError::NotCompiled {
                engine: self.engine.name(),
                feature: self.engine.feature(),
            }),
        }
    }
}

/// Proposal support sets used by the adapters.
pub fn support(list: &[Proposal]) -> Proposals {
    Proposals::from_iter(list.iter().copied())
}
