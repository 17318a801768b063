//! Worker adapter for tinywasm 0.10.x.
//!
//! Compiled only inside a generated worker project, where `tinywasm` is the
//! requested version (default features off, `std` and `parser` on: the
//! default `archive` feature does not build). In 0.10 `Function::call`
//! returns its results as a `Vec`.

use loopbench::engines::{Compiled, Engine, Instance};
use loopbench::error::EngineError;
use loopbench::measure::{timed, Meter};
use loopbench::proposals::{Proposal, Proposals};
use tinywasm::types::WasmValue;
use tinywasm::{Module, ModuleInstance, Store};

pub fn engine(options: &[String]) -> Result<Box<dyn Engine>, String> {
    if let Some(o) = options.first() {
        return Err(format!("tinywasm {} takes no options, got `{o}`", crate::ENGINE_VERSION));
    }
    Ok(Box::new(Tinywasm010))
}

struct Tinywasm010;

impl Engine for Tinywasm010 {
    fn version(&self) -> String {
        format!("tinywasm {}", crate::ENGINE_VERSION)
    }
    fn supports(&self) -> Proposals {
        [Proposal::BulkMemory, Proposal::Simd, Proposal::TailCall].into_iter().collect()
    }
    fn compile(&self, wasm: &[u8]) -> Result<Box<dyn Compiled>, EngineError> {
        let module = tinywasm::parse_bytes(wasm).map_err(|e| EngineError::Compile(e.to_string()))?;
        Ok(Box::new(Module010 { module }))
    }
}

struct Module010 {
    module: Module,
}

impl Compiled for Module010 {
    fn instantiate(&self) -> Result<Box<dyn Instance>, EngineError> {
        let mut store = Store::default();
        let instance = ModuleInstance::instantiate(&mut store, &self.module, None)
            .map_err(|e| EngineError::Instantiate(e.to_string()))?;
        Ok(Box::new(Instance010 { store, instance }))
    }
}

struct Instance010 {
    store: Store,
    instance: ModuleInstance,
}

impl Instance for Instance010 {
    fn call(&mut self, export: &str, arg: Option<i32>, meter: Option<&mut Meter>) -> Result<Option<i32>, EngineError> {
        let func = self
            .instance
            .func_untyped(&self.store, export)
            .map_err(|_| EngineError::MissingExport(export.to_string()))?;
        let args: Vec<WasmValue> = arg.into_iter().map(WasmValue::I32).collect();
        let outcome = timed(meter, || func.call(&mut self.store, &args));
        let results = outcome.map_err(|e| EngineError::Trap(e.to_string()))?;
        Ok(match results.first() {
            Some(WasmValue::I32(v)) => Some(*v),
            _ => None,
        })
    }
    fn write_memory(&mut self, offset: u64, data: &[u8]) -> Result<(), EngineError> {
        let mem = self.instance.memory("memory").map_err(|_| EngineError::NoMemory)?;
        mem.copy_from_slice(&mut self.store, offset as usize, data).map_err(|e| EngineError::Memory(e.to_string()))
    }
    fn read_memory(&mut self, offset: u64, len: usize) -> Result<Vec<u8>, EngineError> {
        let mem = self.instance.memory("memory").map_err(|_| EngineError::NoMemory)?;
        mem.read_vec(&self.store, offset as usize, len).map_err(|e| EngineError::Memory(e.to_string()))
    }
}
