//! wasmi 2: a register-machine interpreter. Always compiled in: it is also
//! the engine of the exact counting run.
//!
//! wasmi translates lazily by default, so the first call of a function pays
//! its translation; the session's warm-up rounds absorb that.

use super::{support, ArmSpec, Compiled, Engine, Instance};
use crate::error::EngineError;
use crate::measure::Meter;
use crate::proposals::{Proposal, Proposals};
use wasmi::{CompilationMode, Config, Linker, Module, Store, Val};

pub struct WasmiEngine {
    engine: wasmi::Engine,
    fuel: bool,
}

/// Fuel given to a fuel-metered store: far more than any shape uses, so the
/// metering cost is paid but never ends a run.
const FUEL: u64 = u64::MAX / 2;

impl WasmiEngine {
    pub fn new(spec: &ArmSpec) -> Self {
        let mut config = Config::default();
        let fuel = spec.has("fuel");
        config.consume_fuel(fuel);
        if spec.has("eager") {
            config.compilation_mode(CompilationMode::Eager);
        }
        WasmiEngine { engine: wasmi::Engine::new(&config), fuel }
    }
}

impl Engine for WasmiEngine {
    fn version(&self) -> String {
        format!("wasmi {}", crate::versions::WASMI)
    }
    fn supports(&self) -> Proposals {
        support(&[Proposal::BulkMemory, Proposal::Simd, Proposal::TailCall])
    }
    fn compile(&self, wasm: &[u8]) -> Result<Box<dyn Compiled>, EngineError> {
        let module = Module::new(&self.engine, wasm).map_err(|e| EngineError::Compile(e.to_string()))?;
        Ok(Box::new(WasmiModule { engine: self.engine.clone(), module, fuel: self.fuel }))
    }
}

struct WasmiModule {
    engine: wasmi::Engine,
    module: Module,
    fuel: bool,
}

impl Compiled for WasmiModule {
    fn instantiate(&self) -> Result<Box<dyn Instance>, EngineError> {
        let mut store = Store::new(&self.engine, ());
        if self.fuel {
            store.set_fuel(FUEL).map_err(|e| EngineError::Instantiate(e.to_string()))?;
        }
        let linker = Linker::<()>::new(&self.engine);
        let instance = linker
            .instantiate_and_start(&mut store, &self.module)
            .map_err(|e| EngineError::Instantiate(e.to_string()))?;
        Ok(Box::new(WasmiInstance { store, instance }))
    }
}

struct WasmiInstance {
    store: Store<()>,
    instance: wasmi::Instance,
}

impl WasmiInstance {
    fn memory(&self) -> Result<wasmi::Memory, EngineError> {
        self.instance.get_memory(&self.store, "memory").ok_or(EngineError::NoMemory)
    }
}

impl Instance for WasmiInstance {
    fn call(&mut self, export: &str, arg: Option<i32>, meter: Option<&mut Meter>) -> Result<Option<i32>, EngineError> {
        let func = self
            .instance
            .get_func(&self.store, export)
            .ok_or_else(|| EngineError::MissingExport(export.to_string()))?;
        let args: Vec<Val> = arg.into_iter().map(Val::I32).collect();
        let mut results = vec![Val::I32(0); func.ty(&self.store).results().len()];
        let outcome = match meter {
            Some(m) => {
                m.start();
                let r = func.call(&mut self.store, &args, &mut results);
                m.stop();
                r
            }
            None => func.call(&mut self.store, &args, &mut results),
        };
        outcome.map_err(|e| EngineError::Trap(e.to_string()))?;
        Ok(results.first().and_then(Val::i32))
    }
    fn write_memory(&mut self, offset: u64, data: &[u8]) -> Result<(), EngineError> {
        let mem = self.memory()?;
        mem.write(&mut self.store, offset as usize, data).map_err(|e| EngineError::Memory(e.to_string()))
    }
    fn read_memory(&mut self, offset: u64, len: usize) -> Result<Vec<u8>, EngineError> {
        let mem = self.memory()?;
        let mut buf = vec![0; len];
        mem.read(&self.store, offset as usize, &mut buf).map_err(|e| EngineError::Memory(e.to_string()))?;
        Ok(buf)
    }
}
