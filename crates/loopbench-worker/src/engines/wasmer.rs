//! wasmer (feature `wasmer`), sys backend, two arms:
//!
//! - `wasmer:singlepass` (the default) - the single-pass baseline compiler;
//! - `wasmer:cranelift` - the optimising compiler.
//!
//! Set beside `wasmtime:winch` and `wasmtime:cranelift` they compare two
//! runtimes with (nearly) the same code generators.
//!
//! Each compiler keeps wasmer's own default proposal set for the host. What
//! that runs was measured with the `optional_engines` integration test, which
//! checks every claim both ways: shared memory and atomics in both arms, SIMD
//! only in cranelift, tail calls in neither.
//!
//! The crate is held to `~7.4`: wasmer 7.5 declares rustc 1.96, newer than the
//! workspace's pinned toolchain.

use super::{support, Compiled, Engine, Instance};
use crate::engines::EngineError;
use crate::measure::{timed, Meter};
use crate::proposals::{Proposal, Proposals};
use wasmer::sys::{Cranelift, Singlepass};
use wasmer::{Function, Imports, Memory, Module, Store, Value};

/// The compiler behind an arm.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Compiler {
    Singlepass,
    Cranelift,
}

impl Compiler {
    const ALL: [Compiler; 2] = [Compiler::Singlepass, Compiler::Cranelift];

    fn name(self) -> &'static str {
        match self {
            Compiler::Singlepass => "singlepass",
            Compiler::Cranelift => "cranelift",
        }
    }

    /// The compiler an arm names; singlepass when it names none.
    fn from_options(options: &[String]) -> Result<Self, EngineError> {
        let named: Vec<Compiler> = Self::ALL
            .into_iter()
            .filter(|c| options.iter().any(|o| o == c.name()))
            .collect();
        match named.as_slice() {
            [] => Ok(Compiler::Singlepass),
            [one] => Ok(*one),
            _ => Err(EngineError::Config(format!(
                "{}: choose one wasmer compiler (singlepass or cranelift), not both",
                arm(options)
            ))),
        }
    }
}

/// The arm as written, for messages (`wasmer:cranelift`).
fn arm(options: &[String]) -> String {
    if options.is_empty() {
        "wasmer".to_string()
    } else {
        format!("wasmer:{}", options.join(","))
    }
}

pub struct WasmerEngine {
    engine: wasmer::Engine,
    compiler: Compiler,
}

impl WasmerEngine {
    pub fn new(options: &[String]) -> Result<Self, EngineError> {
        let compiler = Compiler::from_options(options)?;
        let engine: wasmer::Engine = match compiler {
            Compiler::Singlepass => Singlepass::default().into(),
            Compiler::Cranelift => Cranelift::default().into(),
        };
        Ok(WasmerEngine { engine, compiler })
    }
}

impl Engine for WasmerEngine {
    fn version(&self) -> String {
        format!(
            "wasmer {} ({})",
            crate::versions::WASMER,
            self.compiler.name()
        )
    }
    fn supports(&self) -> Proposals {
        match self.compiler {
            Compiler::Singlepass => support(&[Proposal::Threads, Proposal::BulkMemory]),
            Compiler::Cranelift => {
                support(&[Proposal::Threads, Proposal::Simd, Proposal::BulkMemory])
            }
        }
    }
    fn compile(&self, wasm: &[u8]) -> Result<Box<dyn Compiled>, EngineError> {
        let module =
            Module::new(&self.engine, wasm).map_err(|e| EngineError::Compile(one_line(&e)))?;
        Ok(Box::new(WasmerModule {
            engine: self.engine.clone(),
            module,
        }))
    }
}

/// wasmer's messages may span lines; loopbench reports one.
fn one_line(e: &dyn std::fmt::Display) -> String {
    crate::text::one_line(&e.to_string())
}

struct WasmerModule {
    engine: wasmer::Engine,
    module: Module,
}

impl Compiled for WasmerModule {
    fn instantiate(&self) -> Result<Box<dyn Instance>, EngineError> {
        let mut store = Store::new(self.engine.clone());
        let instance = wasmer::Instance::new(&mut store, &self.module, &Imports::new())
            .map_err(|e| EngineError::Instantiate(one_line(&e)))?;
        // One handle type covers ordinary and shared memories; its view
        // copies bytes with accesses that are safe even against concurrent
        // wasm (there is none here).
        let memory = instance.exports.get_memory("memory").ok().cloned();
        Ok(Box::new(WasmerInstance {
            store,
            instance,
            memory,
        }))
    }
}

struct WasmerInstance {
    store: Store,
    instance: wasmer::Instance,
    memory: Option<Memory>,
}

impl Instance for WasmerInstance {
    fn call(
        &mut self,
        export: &str,
        arg: Option<i32>,
        meter: Option<&mut Meter>,
    ) -> Result<Option<i32>, EngineError> {
        let func: Function = self
            .instance
            .exports
            .get_function(export)
            .map_err(|_| EngineError::MissingExport(export.to_string()))?
            .clone();
        let store = &mut self.store;
        // The shapes' `run(i32) -> i32` goes through a TypedFunction; any
        // other signature through the untyped call.
        if let (Some(a), Ok(typed)) = (arg, func.typed::<i32, i32>(&*store)) {
            let r = timed(meter, || typed.call(&mut *store, a));
            return r.map(Some).map_err(|e| EngineError::trap(one_line(&e)));
        }
        let args: Vec<Value> = arg.into_iter().map(Value::I32).collect();
        let results = timed(meter, || func.call(&mut *store, &args))
            .map_err(|e| EngineError::trap(one_line(&e)))?;
        Ok(results.first().and_then(Value::i32))
    }

    fn write_memory(&mut self, offset: u64, data: &[u8]) -> Result<(), EngineError> {
        let mem = self.memory.as_ref().ok_or(EngineError::NoMemory)?;
        mem.view(&self.store)
            .write(offset, data)
            .map_err(|e| memory_error(e, offset, data.len()))
    }

    fn read_memory(&mut self, offset: u64, len: usize) -> Result<Vec<u8>, EngineError> {
        let mem = self.memory.as_ref().ok_or(EngineError::NoMemory)?;
        let mut buf = vec![0; len];
        mem.view(&self.store)
            .read(offset, &mut buf)
            .map_err(|e| memory_error(e, offset, len))?;
        Ok(buf)
    }
}

fn memory_error(e: wasmer::MemoryAccessError, offset: u64, len: usize) -> EngineError {
    EngineError::Memory(format!("{len} bytes at offset {offset}: {}", one_line(&e)))
}
