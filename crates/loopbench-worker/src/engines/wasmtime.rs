//! wasmtime (feature `wasmtime`): one adapter, three arms that share the
//! runtime and differ only in how wasm becomes machine code:
//!
//! - `wasmtime:cranelift` (the default) - the optimising compiler;
//! - `wasmtime:winch` - the single-pass baseline compiler;
//! - `wasmtime:pulley` - Cranelift compiling to Pulley bytecode, run by
//!   wasmtime's portable interpreter (`Config::target("pulley64")`).
//!
//! Putting the three side by side separates what the code generator costs
//! from what the runtime around it costs, on identical embedding code.
//!
//! Proposal support is declared from what each arm was seen to run (the
//! `optional_engines` integration test checks every claim both ways):
//! Pulley refuses the threads proposal (its interpreter cannot implement
//! loads and stores that race safely), Winch refuses tail calls. Shared
//! memories additionally need `Config::shared_memory(true)`, which wasmtime
//! leaves off by default.
//!
//! The crate is pinned to `=48.0.0`: wasmer 7.4.2 pins cranelift-codegen
//! `=0.135.0` and later 48.0.x releases need a newer 0.135, so this is the
//! one wasmtime 48 that shares a Cargo.lock with wasmer.

use super::{support, Compiled, Engine, Instance};
use crate::engines::EngineError;
use crate::measure::{timed, Meter};
use crate::proposals::{Proposal, Proposals};
use std::cell::UnsafeCell;
use wasmtime::{Config, Func, Memory, Module, SharedMemory, Store, Strategy, Val};

/// How wasmtime turns wasm into something it can run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Backend {
    Cranelift,
    Winch,
    Pulley,
}

impl Backend {
    const ALL: [Backend; 3] = [Backend::Cranelift, Backend::Winch, Backend::Pulley];

    fn name(self) -> &'static str {
        match self {
            Backend::Cranelift => "cranelift",
            Backend::Winch => "winch",
            Backend::Pulley => "pulley",
        }
    }

    /// The backend an arm names; cranelift when it names none.
    fn from_options(options: &[String]) -> Result<Self, EngineError> {
        let named: Vec<Backend> = Self::ALL
            .into_iter()
            .filter(|b| options.iter().any(|o| o == b.name()))
            .collect();
        match named.as_slice() {
            [] => Ok(Backend::Cranelift),
            [one] => Ok(*one),
            _ => Err(EngineError::Config(format!(
                "{}: choose one wasmtime backend (cranelift, winch or pulley), not several",
                arm(options)
            ))),
        }
    }

    /// Whether this backend runs the threads proposal (shared memory and
    /// atomics). Pulley does not: wasmtime rejects the combination.
    fn threads(self) -> bool {
        self != Backend::Pulley
    }
}

/// The Pulley target matching the host's pointer width and byte order.
fn pulley_target() -> &'static str {
    match (
        cfg!(target_pointer_width = "64"),
        cfg!(target_endian = "big"),
    ) {
        (true, false) => "pulley64",
        (true, true) => "pulley64be",
        (false, false) => "pulley32",
        (false, true) => "pulley32be",
    }
}

/// The arm as written, for messages (`wasmtime:winch`).
fn arm(options: &[String]) -> String {
    if options.is_empty() {
        "wasmtime".to_string()
    } else {
        format!("wasmtime:{}", options.join(","))
    }
}

pub struct WasmtimeEngine {
    engine: wasmtime::Engine,
    backend: Backend,
}

impl WasmtimeEngine {
    pub fn new(options: &[String]) -> Result<Self, EngineError> {
        let backend = Backend::from_options(options)?;
        let spec = arm(options);
        let mut config = Config::new();
        match backend {
            Backend::Cranelift => {
                config.strategy(Strategy::Cranelift);
                config.wasm_tail_call(true);
            }
            Backend::Winch => {
                config.strategy(Strategy::Winch);
            }
            Backend::Pulley => {
                config.strategy(Strategy::Cranelift);
                config
                    .target(pulley_target())
                    .map_err(|e| EngineError::Config(format!("{spec}: {}", one_line(&e))))?;
                config.wasm_tail_call(true);
            }
        }
        if backend.threads() {
            config.wasm_threads(true);
            config.shared_memory(true);
        }
        config.wasm_simd(true);
        config.wasm_bulk_memory(true);
        let engine = wasmtime::Engine::new(&config)
            .map_err(|e| EngineError::Config(format!("{spec}: {}", one_line(&e))))?;
        Ok(WasmtimeEngine { engine, backend })
    }
}

impl Engine for WasmtimeEngine {
    fn version(&self) -> String {
        format!(
            "wasmtime {} ({})",
            crate::versions::WASMTIME,
            self.backend.name()
        )
    }
    fn supports(&self) -> Proposals {
        match self.backend {
            Backend::Cranelift => support(&[
                Proposal::Threads,
                Proposal::Simd,
                Proposal::BulkMemory,
                Proposal::TailCall,
            ]),
            Backend::Winch => support(&[Proposal::Threads, Proposal::Simd, Proposal::BulkMemory]),
            Backend::Pulley => support(&[Proposal::Simd, Proposal::BulkMemory, Proposal::TailCall]),
        }
    }
    fn compile(&self, wasm: &[u8]) -> Result<Box<dyn Compiled>, EngineError> {
        let module =
            Module::new(&self.engine, wasm).map_err(|e| EngineError::Compile(one_line(&e)))?;
        Ok(Box::new(WasmtimeModule {
            engine: self.engine.clone(),
            module,
        }))
    }
}

/// wasmtime errors carry a cause chain and, for traps, a multi-line wasm
/// backtrace; loopbench reports one line, so keep the trap or the causes.
fn one_line(e: &wasmtime::Error) -> String {
    if let Some(trap) = e.downcast_ref::<wasmtime::Trap>() {
        return trap.to_string();
    }
    let parts: Vec<String> = e
        .chain()
        .map(|c| c.to_string())
        .filter(|s| !s.starts_with("error while executing at wasm backtrace"))
        .map(|s| crate::text::one_line(&s))
        .collect();
    parts.join(": ")
}

struct WasmtimeModule {
    engine: wasmtime::Engine,
    module: Module,
}

impl Compiled for WasmtimeModule {
    fn instantiate(&self) -> Result<Box<dyn Instance>, EngineError> {
        let mut store = Store::new(&self.engine, ());
        let instance = wasmtime::Instance::new(&mut store, &self.module, &[])
            .map_err(|e| EngineError::Instantiate(one_line(&e)))?;
        let memory = match instance.get_memory(&mut store, "memory") {
            Some(m) => Some(LinearMemory::Plain(m)),
            None => instance
                .get_shared_memory(&mut store, "memory")
                .map(LinearMemory::Shared),
        };
        Ok(Box::new(WasmtimeInstance {
            store,
            instance,
            memory,
        }))
    }
}

/// The exported `memory`: wasmtime hands out ordinary and shared memories
/// through different types.
enum LinearMemory {
    Plain(Memory),
    Shared(SharedMemory),
}

struct WasmtimeInstance {
    store: Store<()>,
    instance: wasmtime::Instance,
    memory: Option<LinearMemory>,
}

/// The byte range `offset..offset + len` of a memory `size` bytes long.
fn range(offset: u64, len: usize, size: usize) -> Result<std::ops::Range<usize>, EngineError> {
    usize::try_from(offset)
        .ok()
        .and_then(|start| Some(start..start.checked_add(len)?))
        .filter(|r| r.end <= size)
        .ok_or_else(|| {
            EngineError::Memory(format!(
                "{len} bytes at offset {offset} lie outside a memory of {size} bytes"
            ))
        })
}

impl Instance for WasmtimeInstance {
    fn call(
        &mut self,
        export: &str,
        arg: Option<i32>,
        meter: Option<&mut Meter>,
    ) -> Result<Option<i32>, EngineError> {
        let func: Func = self
            .instance
            .get_func(&mut self.store, export)
            .ok_or_else(|| EngineError::MissingExport(export.to_string()))?;
        let store = &mut self.store;
        // The shapes' `run(i32) -> i32` goes through a TypedFunc (no Val
        // boxing); any other signature through the untyped call.
        if let (Some(a), Ok(typed)) = (arg, func.typed::<i32, i32>(&*store)) {
            let r = timed(meter, || typed.call(&mut *store, a));
            return r.map(Some).map_err(|e| EngineError::trap(one_line(&e)));
        }
        let args: Vec<Val> = arg.into_iter().map(Val::I32).collect();
        let mut results = vec![Val::I32(0); func.ty(&*store).results().len()];
        timed(meter, || func.call(&mut *store, &args, &mut results))
            .map_err(|e| EngineError::trap(one_line(&e)))?;
        Ok(results.first().and_then(Val::i32))
    }

    fn write_memory(&mut self, offset: u64, data: &[u8]) -> Result<(), EngineError> {
        match self.memory.as_ref().ok_or(EngineError::NoMemory)? {
            LinearMemory::Plain(m) => {
                let bytes = m.data_mut(&mut self.store);
                let r = range(offset, data.len(), bytes.len())?;
                bytes[r].copy_from_slice(data);
            }
            LinearMemory::Shared(m) => {
                let cells = m.data();
                let r = range(offset, data.len(), cells.len())?;
                let dst = UnsafeCell::raw_get(cells[r].as_ptr());
                // SAFETY: `dst` points at `data.len()` bytes inside the shared
                // memory (bounds checked above) and `data` is host memory, so
                // the two do not overlap. UnsafeCell<u8> has u8's layout and
                // allows writes through a shared reference. No wasm runs
                // while the host writes: loopbench never spawns wasm threads
                // and this instance is used by one thread at a time (`&mut
                // self`), so nothing else reads or writes these bytes now.
                unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), dst, data.len()) };
            }
        }
        Ok(())
    }

    fn read_memory(&mut self, offset: u64, len: usize) -> Result<Vec<u8>, EngineError> {
        match self.memory.as_ref().ok_or(EngineError::NoMemory)? {
            LinearMemory::Plain(m) => {
                let bytes = m.data(&self.store);
                Ok(bytes[range(offset, len, bytes.len())?].to_vec())
            }
            LinearMemory::Shared(m) => {
                let cells = m.data();
                let r = range(offset, len, cells.len())?;
                let src = UnsafeCell::raw_get(cells[r].as_ptr()).cast_const();
                let mut buf = vec![0u8; len];
                // SAFETY: `src` points at `len` in-bounds bytes of the shared
                // memory and `buf` is a fresh host allocation of `len` bytes.
                // No wasm runs concurrently (see `write_memory`), so the bytes
                // are not being written while they are copied.
                unsafe { std::ptr::copy_nonoverlapping(src, buf.as_mut_ptr(), len) };
                Ok(buf)
            }
        }
    }
}
