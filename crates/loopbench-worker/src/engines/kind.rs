//! The engines loopbench knows, compiled in or not: their names, Cargo
//! features, the versions this binary carries and the options each takes
//! after `:`. Everything that names an engine (arms, worker builds, the
//! history) starts from [`EngineKind`], so it sits with the adapters.

use std::fmt;
use std::str::FromStr;
use thiserror::Error;

/// A name that is no engine loopbench knows.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
#[error("unknown engine `{name}` (known: {known})")]
pub struct UnknownEngine {
    pub name: String,
    /// The engine names, comma-separated.
    pub known: String,
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

    /// The version of this engine's crate compiled into this binary (or
    /// locked for it, when compiled out).
    pub fn version(self) -> &'static str {
        match self {
            EngineKind::Wasmi => crate::versions::WASMI,
            EngineKind::Tinywasm => crate::versions::TINYWASM,
            EngineKind::Wasm3 => crate::versions::WASM3,
            EngineKind::Wasmtime => crate::versions::WASMTIME,
            EngineKind::Wasmer => crate::versions::WASMER,
            EngineKind::Mock => crate::versions::WASMI,
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
            EngineKind::Mock => super::mock::OPTIONS,
        }
    }
}

impl fmt::Display for EngineKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for EngineKind {
    type Err = UnknownEngine;
    /// The engine named `name`, or an error listing the names.
    fn from_str(name: &str) -> Result<Self, UnknownEngine> {
        EngineKind::ALL
            .into_iter()
            .find(|k| k.name() == name)
            .ok_or_else(|| {
                let known: Vec<_> = EngineKind::ALL.iter().map(|k| k.name()).collect();
                UnknownEngine {
                    name: name.to_string(),
                    known: known.join(", "),
                }
            })
    }
}
