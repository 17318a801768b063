//! tinywasm 0.10: a small, portable interpreter (built with
//! default-features = false plus std and parser; its default `archive`
//! feature does not build). In 0.10 `Function::call` returns its results as
//! a `Vec`.
//!
//! This file is also the worker adapter of the `tinywasm_010` family
//! ([`crate::workers::family`]): a generated worker project compiles it
//! verbatim against the requested tinywasm 0.10.x, so it names this library
//! only as `loopbench_worker::...` and gets the engine's version as an argument.

use loopbench_worker::engines::EngineError;
use loopbench_worker::engines::{check_options, Compiled, Engine, Instance};
use loopbench_worker::measure::{timed, Meter};
use loopbench_worker::proposals::{Proposal, Proposals};
use tinywasm::types::WasmValue;
use tinywasm::{Module, ModuleInstance, Store};

/// The engine (tinywasm takes no options); `version` is the tinywasm
/// crate's, for reports.
pub fn engine(options: &[String], version: &str) -> Result<Box<dyn Engine>, String> {
    check_options("tinywasm", version, options, &[])?;
    Ok(Box::new(TinywasmEngine {
        version: version.to_string(),
    }))
}

struct TinywasmEngine {
    version: String,
}

impl Engine for TinywasmEngine {
    fn version(&self) -> String {
        format!("tinywasm {}", self.version)
    }
    fn supports(&self) -> Proposals {
        [Proposal::BulkMemory, Proposal::Simd, Proposal::TailCall]
            .into_iter()
            .collect()
    }
    fn compile(&self, wasm: &[u8]) -> Result<Box<dyn Compiled>, EngineError> {
        let module =
            tinywasm::parse_bytes(wasm).map_err(|e| EngineError::Compile(e.to_string()))?;
        Ok(Box::new(TinywasmModule { module }))
    }
}

struct TinywasmModule {
    module: Module,
}

impl Compiled for TinywasmModule {
    fn instantiate(&self) -> Result<Box<dyn Instance>, EngineError> {
        let mut store = Store::default();
        let instance = ModuleInstance::instantiate(&mut store, &self.module, None)
            .map_err(|e| EngineError::Instantiate(e.to_string()))?;
        Ok(Box::new(TinywasmInstance { store, instance }))
    }
}

struct TinywasmInstance {
    store: Store,
    instance: ModuleInstance,
}

impl Instance for TinywasmInstance {
    fn call(
        &mut self,
        export: &str,
        arg: Option<i32>,
        meter: Option<&mut Meter>,
    ) -> Result<Option<i32>, EngineError> {
        let func = self
            .instance
            .func_untyped(&self.store, export)
            .map_err(|_| EngineError::MissingExport(export.to_string()))?;
        let args: Vec<WasmValue> = arg.into_iter().map(WasmValue::I32).collect();
        let outcome = timed(meter, || func.call(&mut self.store, &args));
        let results = outcome.map_err(EngineError::trap)?;
        Ok(match results.first() {
            Some(WasmValue::I32(v)) => Some(*v),
            _ => None,
        })
    }
    fn write_memory(&mut self, offset: u64, data: &[u8]) -> Result<(), EngineError> {
        let mem = self
            .instance
            .memory("memory")
            .map_err(|_| EngineError::NoMemory)?;
        mem.copy_from_slice(&mut self.store, offset as usize, data)
            .map_err(|e| EngineError::Memory(e.to_string()))
    }
    fn read_memory(&mut self, offset: u64, len: usize) -> Result<Vec<u8>, EngineError> {
        let mem = self
            .instance
            .memory("memory")
            .map_err(|_| EngineError::NoMemory)?;
        mem.read_vec(&self.store, offset as usize, len)
            .map_err(|e| EngineError::Memory(e.to_string()))
    }
}
