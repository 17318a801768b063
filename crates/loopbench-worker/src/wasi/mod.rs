//! The WASI host a user's own workload runs against: the same on every
//! engine, because it is this one piece of Rust and the engines only route
//! their imports to it.
//!
//! A workload is a WASI command module (`_start`). Sightglass's protocol
//! marks the timed region inside it: the module imports `bench.start` and
//! `bench.end` and calls each once; the meter runs between them, so the
//! module's setup and its checks stay untimed. A module without them is
//! timed over the whole `_start`.
//!
//! What the module sees is fixed by its [`Setup`]: arguments, environment,
//! one read-only preopened directory (the module's own, loaded into memory
//! before any timing, so no disk read is ever timed), stdout and stderr
//! captured up to a cap, a clock that starts at a fixed instant and moves
//! one microsecond per reading, and random bytes from a fixed seed. So
//! every rep of every engine sees the same process and must print the same
//! output; the workload's shape checks that.
//!
//! | part | module |
//! |---|---|
//! | what the module sees, and what a run leaves | here |
//! | the imports served, their types, and what each does | [`preview1`] |
//! | one run as an engine instance: fresh per rep, the meter inside | [`process`] |
//! | each engine's routing of the imports to the host | [`wasmi`], `tinywasm`, `wasm3` |

pub mod preview1;
pub mod process;
#[cfg(feature = "tinywasm")]
pub mod tinywasm;
#[cfg(feature = "wasm3")]
pub mod wasm3;
pub mod wasmi;

/// The routing files a generated worker compiles against its own build of
/// the engine (as `src/wasi/<engine>.rs` beside a shim that makes its
/// `super::` and `crate::engines` paths resolve there as they do here).
pub mod source {
    pub const WASMI: &str = include_str!("wasmi.rs");
    pub const TINYWASM: &str = include_str!("tinywasm.rs");
    pub const WASM3: &str = include_str!("wasm3.rs");
}

pub use preview1::{Func, Ty};
pub use process::{Process, Runner, Started};

use crate::measure::Meter;
use std::collections::BTreeMap;
use std::sync::Arc;

/// What a workload's process sees; the same for every rep and every engine.
#[derive(Clone, Debug, Default)]
pub struct Setup {
    /// `argv`, the program name first.
    pub args: Vec<String>,
    /// The environment, `NAME=value`.
    pub env: Vec<String>,
    /// The preopened directory's files by relative path (`a/b.txt`).
    pub files: BTreeMap<String, Arc<Vec<u8>>>,
    /// The most bytes stdout and stderr may hold together.
    pub output_cap: usize,
    /// Where the meter runs.
    pub region: Region,
}

/// The timed region of a run, from the markers the module imports.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Region {
    /// No markers: the whole `_start`.
    #[default]
    Whole,
    /// `bench.start` only: from it to the end of `_start`.
    FromStart,
    /// From `bench.start` to `bench.end`.
    Between,
}

impl Region {
    /// The region of a module that imports these functions.
    pub fn of(imports: &[Func]) -> Region {
        match (
            imports.contains(&Func::BenchStart),
            imports.contains(&Func::BenchEnd),
        ) {
            (true, true) => Region::Between,
            (true, false) => Region::FromStart,
            _ => Region::Whole,
        }
    }
}

/// The preopened directory's name as the module sees it (its working
/// directory: inputs are read by relative path).
pub const PREOPEN: &str = ".";

/// Why a run stopped before `_start` returned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Stop {
    /// `proc_exit(code)`.
    Exit(i32),
    /// The module broke the protocol or a limit, in one line.
    Fault(String),
}

/// An open descriptor.
#[derive(Clone, Debug)]
enum Fd {
    Stdin,
    Stdout,
    Stderr,
    /// A directory: `""` is the preopened one, else a relative path.
    Dir(String),
    /// A read-only file and the position in it.
    File {
        data: Arc<Vec<u8>>,
        pos: u64,
    },
}

/// The state of one run: its descriptors, clock and random stream, what
/// it printed, how it used the markers, and the meter while it runs.
pub struct Host {
    setup: Arc<Setup>,
    fds: Vec<Option<Fd>>,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    /// Calls of `bench.start` and `bench.end` so far.
    pub starts: u32,
    pub ends: u32,
    /// Calls of WASI functions while the meter ran (the host's share of
    /// the timed region).
    pub timed_calls: u64,
    pub stop: Option<Stop>,
    /// The paths of the directory the run looked up (opened or stat'ed),
    /// so a workload's identity covers the files it reads and no other.
    pub looked_up: std::collections::BTreeSet<String>,
    clock_ns: u64,
    random: u64,
    meter: Option<Meter>,
    running: bool,
}

/// The clock's reading at the start of every run: 2020-01-01T00:00:00Z.
const EPOCH_NS: u64 = 1_577_836_800_000_000_000;
/// How far the clock moves per reading: a program that waits for time to
/// pass still ends, and every run reads the same times.
const TICK_NS: u64 = 1_000;
const RANDOM_SEED: u64 = 0x5eed_0f10_0be4_c4c4;

/// A placeholder an engine's store holds between runs.
impl Default for Host {
    fn default() -> Self {
        Host::new(Arc::default(), None)
    }
}

impl Host {
    /// A fresh process: stdin empty, stdout, stderr, the directory at fd 3.
    pub fn new(setup: Arc<Setup>, meter: Option<Meter>) -> Self {
        Host {
            setup,
            fds: vec![
                Some(Fd::Stdin),
                Some(Fd::Stdout),
                Some(Fd::Stderr),
                Some(Fd::Dir(String::new())),
            ],
            stdout: Vec::new(),
            stderr: Vec::new(),
            starts: 0,
            ends: 0,
            timed_calls: 0,
            stop: None,
            looked_up: Default::default(),
            clock_ns: EPOCH_NS,
            random: RANDOM_SEED,
            meter,
            running: false,
        }
    }

    /// Right before the engine calls `_start`: a module without markers
    /// is timed from here. Every engine's routing brackets its one call of
    /// `_start` with this and [`Host::leave`], as adapters do with
    /// [`crate::measure::timed`].
    #[inline(always)]
    pub fn enter(&mut self) {
        if self.setup.region == Region::Whole {
            self.start_meter();
        }
    }

    /// Right after `_start` returned or trapped: the meter stops if it
    /// still runs (no markers, or no `bench.end`).
    #[inline(always)]
    pub fn leave(&mut self) {
        if self.running {
            self.stop_meter();
        }
    }

    /// Start the meter (at `bench.start`, or at [`Host::enter`]).
    fn start_meter(&mut self) {
        self.running = true;
        if let Some(m) = self.meter.as_mut() {
            m.start();
        }
    }

    /// Stop the meter (at `bench.end`, at the import that ends the run, or
    /// at [`Host::leave`]).
    fn stop_meter(&mut self) {
        if let Some(m) = self.meter.as_mut() {
            m.stop();
        }
        self.running = false;
    }

    /// The meter back, once the run is over.
    pub fn take_meter(&mut self) -> Option<Meter> {
        self.meter.take()
    }

    /// Record why the run stops; the engine then unwinds with a trap.
    fn halt(&mut self, stop: Stop) {
        if self.running {
            // The process ends here: how the engine unwinds is not its time.
            self.stop_meter();
        }
        if self.stop.is_none() {
            self.stop = Some(stop);
        }
    }

    fn fault(&mut self, why: String) {
        self.halt(Stop::Fault(why));
    }
}

/// Why a module cannot run as a WASI command here; found before any timing.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum ModuleError {
    #[error("is not a wasm module loopbench can read: {0}")]
    Parse(String),
    #[error("imports what the WASI host cannot serve: {}", .0.join(", "))]
    Unserved(Vec<String>),
    #[error("exports no `_start` function (not a WASI command)")]
    NoStart,
    #[error("is a WebAssembly component, not a core module (the WASI host runs core modules)")]
    Component,
}

/// The imports of a WASI command, each one the host serves at its type;
/// or every import it does not, named in one line.
pub fn imports(wasm: &[u8]) -> Result<Vec<Func>, ModuleError> {
    use wasmparser::{Payload, TypeRef, ValType};
    if !wasm.starts_with(b"\0asm") {
        return Err(ModuleError::Parse(
            "it does not start with the wasm magic bytes \\0asm".into(),
        ));
    }
    let parse = |e: wasmparser::BinaryReaderError| {
        ModuleError::Parse(crate::text::one_line(&e.to_string()))
    };
    let mut types: Vec<Option<(Vec<Ty>, Vec<Ty>)>> = Vec::new();
    let mut served = Vec::new();
    let mut unserved = Vec::new();
    let mut has_start = false;
    let ty = |v: &ValType| match v {
        ValType::I32 => Some(Ty::I32),
        ValType::I64 => Some(Ty::I64),
        _ => None,
    };
    for payload in wasmparser::Parser::new(0).parse_all(wasm) {
        match payload.map_err(parse)? {
            Payload::Version {
                encoding: wasmparser::Encoding::Component,
                ..
            } => return Err(ModuleError::Component),
            Payload::TypeSection(reader) => {
                for group in reader.into_iter_err_on_gc_types() {
                    let f = group.map_err(parse)?;
                    let params: Option<Vec<Ty>> = f.params().iter().map(ty).collect();
                    let results: Option<Vec<Ty>> = f.results().iter().map(ty).collect();
                    types.push(params.zip(results));
                }
            }
            Payload::ImportSection(reader) => {
                for import in reader.into_imports() {
                    let import = import.map_err(parse)?;
                    let name = format!("{}.{}", import.module, import.name);
                    let want = Func::find(import.module, import.name);
                    let fits = match (import.ty, want) {
                        (TypeRef::Func(i), Some(f)) => types
                            .get(i as usize)
                            .and_then(Option::as_ref)
                            .is_some_and(|(p, r)| p == f.params() && r == f.results()),
                        _ => false,
                    };
                    match want {
                        Some(f) if fits => served.push(f),
                        Some(_) => unserved.push(format!("{name} (at another type)")),
                        None => unserved.push(name),
                    }
                }
            }
            Payload::ExportSection(reader) => {
                for export in reader {
                    let export = export.map_err(parse)?;
                    has_start |=
                        export.name == "_start" && export.kind == wasmparser::ExternalKind::Func;
                }
            }
            _ => {}
        }
    }
    if !unserved.is_empty() {
        return Err(ModuleError::Unserved(unserved));
    }
    if !has_start {
        return Err(ModuleError::NoStart);
    }
    Ok(served)
}
