//! The conversation between the session and a worker process: one JSON
//! object per line, the parent asks on the worker's stdin and the worker
//! answers each request with exactly one line on its stdout. The worker
//! never acts unasked, so only one arm runs at a time.
//!
//! ```text
//! parent: {"msg":"init","label":"wasmi@0.31","options":[],"counters":["tsc"]}
//! worker: {"msg":"ready","protocol":1,"version":"wasmi 0.31.2","proposals":["bulk_memory","tail_call"]}
//! parent: {"msg":"prepare","shape":{"catalog":"add_chain"},"params":{..},"iters":..,"wasm_hash":..}
//! worker: {"msg":"prepared"}                      (or "failed" with the error)
//! parent: {"msg":"rep","rep":0}
//! worker: {"msg":"rep","ns":1234.0,"counters":{}} (or "failed": verify runs in the worker)
//! parent: {"msg":"rep","rep":1,"duet":{"slot":0,"partner":2,"generation":7,"core":1}}
//! worker: {"msg":"rep","ns":1230.0,"counters":{},"duet":{"generation":7,"released_ns":..,"cpu":1}}
//! parent: {"msg":"phases"}                      (--phases: what the worker spent, per phase)
//! worker: {"msg":"phases","seconds":{"compile":0.01,"setup":0.2,..}}
//! parent: {"msg":"quit"}
//! ```
//!
//! Built-in shapes travel by name and parameters (the worker links the same
//! catalog and regenerates the module; a hash of the module bytes proves it
//! is identical); user shapes travel as their wasm bytes, and WASI commands
//! as their bytes, invocation and the path of their directory, which the
//! worker loads itself (a hash of its files proves they are the same); app
//! recipes as their prepared module, inputs and checksum.

use crate::arm::{Duet, DuetMet, Rep, RunError};
use crate::engines::EngineError;
use crate::proposals::Proposal;
use crate::shapes::command::CommandSource;
use crate::shapes::recipe::RecipeSource;
use crate::shapes::Params;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Bumped whenever a message changes; a worker answering with another
/// number is rebuilt.
pub const PROTOCOL: u32 = 5;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "msg", rename_all = "snake_case")]
pub enum Request {
    /// `counters`: the counters to read around each timed call, by name
    /// (the session's available ones; the worker probes them again).
    Init {
        label: String,
        options: Vec<String>,
        counters: Vec<String>,
        /// Pin the timing thread to this core.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pin: Option<usize>,
        /// Seeds the stack offset of the timed calls; `None`: none.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        layout_seed: Option<u64>,
        /// Seeds heap-block padding (where the worker's allocator pads);
        /// `None`: none.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        heap_seed: Option<u64>,
        /// The duet barrier's page ([`super::barrier`]), in a duet session.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        barrier: Option<std::path::PathBuf>,
        /// The session's TSC rate, so the worker does not spin 100 ms
        /// calibrating its own ([`crate::measure::tsc::adopt_rate`]).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tsc_hz: Option<f64>,
    },
    Prepare {
        shape: ShapeSource,
        params: WireParams,
        iters: u64,
        wasm_hash: u64,
    },
    Rep {
        rep: usize,
        /// Set in a duet: meet the partner at the barrier, on this core.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        duet: Option<Duet>,
    },
    /// Run this many iterations from the next rep on, on the prepared
    /// instance (the pilot); answered with `prepared`.
    Resize {
        iters: u64,
    },
    /// The worker's phase totals since it last said (`--phases`).
    Phases,
    Quit,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ShapeSource {
    /// A built-in shape, by name.
    Catalog(String),
    /// A user shape: its name and module bytes.
    Module { name: String, wasm: Vec<u8> },
    /// A WASI command: its module, directory, invocation and the output
    /// every run must print.
    Command(Box<CommandSource>),
    /// An app recipe: its prepared module, what its driver is fed, and the
    /// checksum every rep must return.
    Recipe(Box<RecipeSource>),
}

/// [`Params`] on the wire.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WireParams {
    pub bytes: u64,
    pub iters: Option<u64>,
    pub k: u32,
}

impl From<&Params> for WireParams {
    fn from(p: &Params) -> Self {
        WireParams {
            bytes: p.bytes,
            iters: p.iters,
            k: p.k,
        }
    }
}

impl From<&WireParams> for Params {
    fn from(p: &WireParams) -> Self {
        Params {
            bytes: p.bytes,
            iters: p.iters,
            k: p.k,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "msg", rename_all = "snake_case")]
pub enum Response {
    Ready {
        protocol: u32,
        version: String,
        proposals: Vec<Proposal>,
    },
    Prepared,
    Rep {
        ns: f64,
        counters: BTreeMap<String, f64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        duet: Option<DuetMet>,
    },
    Failed {
        error: WireError,
    },
    Phases {
        seconds: BTreeMap<crate::phases::Phase, f64>,
    },
}

impl Response {
    pub fn rep(r: Rep) -> Self {
        Response::Rep {
            ns: r.reading.ns,
            counters: r.reading.counters,
            duet: r.duet,
        }
    }
}

/// An [`Error`] on the wire; the parent rebuilds it with the arm's label.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum WireError {
    Verify {
        rep: usize,
        detail: String,
    },
    Engine {
        engine: WireEngineError,
        message: String,
    },
    Other {
        message: String,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WireEngineError {
    Compile,
    Instantiate,
    Trap,
    MissingExport,
    NoMemory,
    Memory,
    Other,
}

impl WireError {
    pub fn from_error(e: &RunError) -> Self {
        match e {
            RunError::Verify { rep, detail, .. } => WireError::Verify {
                rep: *rep,
                detail: detail.clone(),
            },
            RunError::Engine { source, .. } => {
                let (engine, message) = match source {
                    EngineError::Compile(m) => (WireEngineError::Compile, m.clone()),
                    EngineError::Instantiate(m) => (WireEngineError::Instantiate, m.clone()),
                    EngineError::Trap(m) => (WireEngineError::Trap, m.clone()),
                    EngineError::MissingExport(m) => (WireEngineError::MissingExport, m.clone()),
                    EngineError::NoMemory => (WireEngineError::NoMemory, String::new()),
                    EngineError::Memory(m) => (WireEngineError::Memory, m.clone()),
                    other => (WireEngineError::Other, other.to_string()),
                };
                WireError::Engine { engine, message }
            }
            other => WireError::Other {
                message: other.to_string(),
            },
        }
    }

    /// The error as the session reports it, naming `shape` and `arm`.
    pub fn into_error(self, shape: &str, arm: &str) -> RunError {
        match self {
            WireError::Verify { rep, detail } => RunError::Verify {
                shape: shape.to_string(),
                arm: arm.to_string(),
                rep,
                detail,
            },
            WireError::Engine { engine, message } => {
                let source = match engine {
                    WireEngineError::Compile => EngineError::Compile(message),
                    WireEngineError::Instantiate => EngineError::Instantiate(message),
                    WireEngineError::Trap => EngineError::Trap(message),
                    WireEngineError::MissingExport => EngineError::MissingExport(message),
                    WireEngineError::NoMemory => EngineError::NoMemory,
                    WireEngineError::Memory => EngineError::Memory(message),
                    WireEngineError::Other => EngineError::Config(message),
                };
                RunError::Engine {
                    shape: shape.to_string(),
                    arm: arm.to_string(),
                    source,
                }
            }
            WireError::Other { message } => RunError::Worker {
                arm: arm.to_string(),
                shape: shape.to_string(),
                detail: message,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_round_trip_as_single_lines() {
        let msgs = [
            Request::Init {
                label: "wasmi@0.31".into(),
                options: vec!["fuel".into()],
                counters: vec!["tsc".into()],
                pin: Some(1),
                layout_seed: Some(7),
                heap_seed: Some(8),
                barrier: None,
                tsc_hz: Some(2.6e9),
            },
            Request::Prepare {
                shape: ShapeSource::Catalog("add_chain".into()),
                params: WireParams {
                    bytes: 1 << 16,
                    iters: Some(8),
                    k: 8,
                },
                iters: 8,
                wasm_hash: 7,
            },
            Request::Prepare {
                shape: ShapeSource::Module {
                    name: "u".into(),
                    wasm: vec![0, 97, 115, 109],
                },
                params: WireParams {
                    bytes: 1 << 16,
                    iters: None,
                    k: 8,
                },
                iters: 8,
                wasm_hash: 7,
            },
            Request::Rep { rep: 3, duet: None },
            Request::Quit,
        ];
        for m in msgs {
            let line = serde_json::to_string(&m).unwrap();
            assert!(!line.contains('\n'));
            assert_eq!(serde_json::from_str::<Request>(&line).unwrap(), m);
        }
        let r = Response::Ready {
            protocol: PROTOCOL,
            version: "x".into(),
            proposals: vec![Proposal::Threads],
        };
        assert_eq!(
            serde_json::from_str::<Response>(&serde_json::to_string(&r).unwrap()).unwrap(),
            r
        );
    }

    #[test]
    fn errors_keep_their_kind() {
        let e = RunError::Verify {
            shape: "s".into(),
            arm: "w".into(),
            rep: 4,
            detail: "acc: expected 1, got 2".into(),
        };
        let back = WireError::from_error(&e).into_error("s", "wasmi@0.31");
        assert_eq!(
            back.to_string(),
            "verify failed: shape s, arm wasmi@0.31, rep 4: acc: expected 1, got 2"
        );
        let e = RunError::Engine {
            shape: "s".into(),
            arm: "w".into(),
            source: EngineError::Trap("unreachable".into()),
        };
        let back = WireError::from_error(&e).into_error("s", "a");
        assert!(
            matches!(back, RunError::Engine { source: EngineError::Trap(m), .. } if m == "unreachable")
        );
    }
}
