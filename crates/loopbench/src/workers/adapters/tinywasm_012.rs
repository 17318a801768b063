//! Worker adapter for tinywasm 0.12.x (the first with the threads proposal).
//!
//! Compiled only inside a generated worker project, where `tinywasm` is the
//! requested version (default features off, `std` and `parser` on: the
//! default `archive` feature does not build). From 0.11 `Function::call`
//! writes into a result slice sized from the function's type, and
//! instantiation takes imports by reference. 0.12 keeps shared memories
//! apart from plain ones (`memory_shared`, accessed under a lock), so the
//! host-side hooks try both.

use loopbench_worker::engines::{check_options, Compiled, Engine, Instance};
use loopbench_worker::engines::EngineError;
use loopbench_worker::measure::{timed, Meter};
use loopbench_worker::proposals::{Proposal, Proposals};
use tinywasm::WasmValue;
use tinywasm::{Module, ModuleInstance, Store};

pub fn engine(options: &[String], version: &str) -> Result<Box<dyn Engine>, String> {
    check_options("tinywasm", version, options, &[])?;
    Ok(Box::new(Tinywasm012 { version: version.to_string() }))
}

struct Tinywasm012 {
    version: String,
}

impl Engine for Tinywasm012 {
    fn version(&self) -> String {
        format!("tinywasm {}", self.version)
    }
    fn supports(&self) -> Proposals {
        [Proposal::BulkMemory, Proposal::Simd, Proposal::TailCall, Proposal::Threads].into_iter().collect()
    }
    fn compile(&self, wasm: &[u8]) -> Result<Box<dyn Compiled>, EngineError> {
        let module = tinywasm::parse_bytes(wasm).map_err(|e| EngineError::Compile(e.to_string()))?;
        Ok(Box::new(Module012 { module }))
    }
}

struct Module012 {
    module: Module,
}

impl Compiled for Module012 {
    fn instantiate(&self) -> Result<Box<dyn Instance>, EngineError> {
        let mut store = Store::default();
        let instance = ModuleInstance::instantiate(&mut store, &self.module, None)
            .map_err(|e| EngineError::Instantiate(e.to_string()))?;
        Ok(Box::new(Instance012 { store, instance }))
    }
}

struct Instance012 {
    store: Store,
    instance: ModuleInstance,
}

impl Instance for Instance012 {
    fn call(&mut self, export: &str, arg: Option<i32>, meter: Option<&mut Meter>) -> Result<Option<i32>, EngineError> {
        let func = self
            .instance
            .func_untyped(&self.store, export)
            .map_err(|_| EngineError::MissingExport(export.to_string()))?;
        let args: Vec<WasmValue> = arg.into_iter().map(WasmValue::I32).collect();
        let n = func.ty(&self.store).map_err(|e| EngineError::Trap(e.to_string()))?.results().len();
        let mut results = vec![WasmValue::I32(0); n];
        let outcome = timed(meter, || func.call(&mut self.store, &args, &mut results));
        outcome.map_err(|e| EngineError::Trap(e.to_string()))?;
        Ok(match results.first() {
            Some(WasmValue::I32(v)) => Some(*v),
            _ => None,
        })
    }
    fn write_memory(&mut self, offset: u64, data: &[u8]) -> Result<(), EngineError> {
        let mem_err = |e: tinywasm::Error| EngineError::Memory(e.to_string());
        match self.instance.memory("memory") {
            Ok(mem) => mem.copy_from_slice(&mut self.store, offset as usize, data).map_err(mem_err),
            Err(_) => {
                let shared = self.instance.memory_shared("memory").map_err(|_| EngineError::NoMemory)?;
                let mut guard = shared.lock();
                guard.copy_from_slice(offset as usize, data).map_err(mem_err)
            }
        }
    }
    fn read_memory(&mut self, offset: u64, len: usize) -> Result<Vec<u8>, EngineError> {
        let mem_err = |e: tinywasm::Error| EngineError::Memory(e.to_string());
        match self.instance.memory("memory") {
            Ok(mem) => mem.read_vec(&self.store, offset as usize, len).map_err(mem_err),
            Err(_) => {
                let shared = self.instance.memory_shared("memory").map_err(|_| EngineError::NoMemory)?;
                let guard = shared.lock();
                guard.read_vec(offset as usize, len).map_err(mem_err)
            }
        }
    }
}
