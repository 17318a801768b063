//! Worker adapter for wasmi 1.x and 2.x (the register-machine interpreter).
//!
//! Compiled only inside a generated worker project, where `wasmi` is the
//! requested version; `crate::ENGINE_VERSION` is the resolved version. Both
//! majors translate lazily by default (compilation lands in the first call,
//! which the warm-up rounds absorb); `eager` translates at compile time.
//! SIMD exists only with the crate's `simd` feature in 1.x: the worker's
//! startup probe finds out which proposals really run.

use loopbench::engines::{Compiled, Engine, Instance};
use loopbench::error::EngineError;
use loopbench::measure::{timed, Meter};
use loopbench::proposals::{Proposal, Proposals};
use wasmi::{CompilationMode, Config, Linker, Module, Store, Val};

pub fn engine(options: &[String]) -> Result<Box<dyn Engine>, String> {
    let mut config = Config::default();
    let mut fuel = false;
    for o in options {
        match o.as_str() {
            "fuel" => fuel = true,
            "eager" => {
                config.compilation_mode(CompilationMode::Eager);
            }
            other => {
                return Err(format!("wasmi {} takes no option `{other}` (valid: fuel, eager)", crate::ENGINE_VERSION))
            }
        }
    }
    config.consume_fuel(fuel);
    Ok(Box::new(Wasmi1x { engine: wasmi::Engine::new(&config), fuel }))
}

/// Fuel for a metered store: far more than any shape uses.
const FUEL: u64 = u64::MAX / 2;

struct Wasmi1x {
    engine: wasmi::Engine,
    fuel: bool,
}

impl Engine for Wasmi1x {
    fn version(&self) -> String {
        format!("wasmi {}", crate::ENGINE_VERSION)
    }
    fn supports(&self) -> Proposals {
        [Proposal::BulkMemory, Proposal::Simd, Proposal::TailCall].into_iter().collect()
    }
    fn compile(&self, wasm: &[u8]) -> Result<Box<dyn Compiled>, EngineError> {
        let module = Module::new(&self.engine, wasm).map_err(|e| EngineError::Compile(e.to_string()))?;
        Ok(Box::new(Module1x { engine: self.engine.clone(), module, fuel: self.fuel }))
    }
}

struct Module1x {
    engine: wasmi::Engine,
    module: Module,
    fuel: bool,
}

impl Compiled for Module1x {
    fn instantiate(&self) -> Result<Box<dyn Instance>, EngineError> {
        let mut store = Store::new(&self.engine, ());
        if self.fuel {
            store.set_fuel(FUEL).map_err(|e| EngineError::Instantiate(e.to_string()))?;
        }
        let linker = Linker::<()>::new(&self.engine);
        let instance = linker
            .instantiate_and_start(&mut store, &self.module)
            .map_err(|e| EngineError::Instantiate(e.to_string()))?;
        Ok(Box::new(Instance1x { store, instance }))
    }
}

struct Instance1x {
    store: Store<()>,
    instance: wasmi::Instance,
}

impl Instance1x {
    fn memory(&self) -> Result<wasmi::Memory, EngineError> {
        self.instance.get_memory(&self.store, "memory").ok_or(EngineError::NoMemory)
    }
}

impl Instance for Instance1x {
    fn call(&mut self, export: &str, arg: Option<i32>, meter: Option<&mut Meter>) -> Result<Option<i32>, EngineError> {
        let func = self
            .instance
            .get_func(&self.store, export)
            .ok_or_else(|| EngineError::MissingExport(export.to_string()))?;
        let args: Vec<Val> = arg.into_iter().map(Val::I32).collect();
        let mut results = vec![Val::I32(0); func.ty(&self.store).results().len()];
        let outcome = timed(meter, || func.call(&mut self.store, &args, &mut results));
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
