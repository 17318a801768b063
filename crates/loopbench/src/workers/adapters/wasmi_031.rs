//! Worker adapter for wasmi 0.31.x (the stack-machine interpreter).
//!
//! Compiled only inside a generated worker project, where `wasmi` is the
//! requested version, which [`engine`] is given as `version`. The
//! timed region is the engine's call alone, as in the in-process adapters.
//! 0.31 translates eagerly (there is no lazy mode) and needs tail calls
//! switched on in its `Config`.

use loopbench_worker::engines::{check_options, Compiled, Engine, Instance};
use loopbench_worker::engines::EngineError;
use loopbench_worker::measure::{timed, Meter};
use loopbench_worker::proposals::{Proposal, Proposals};
use wasmi::{Config, Linker, Module, Store, Value};

pub fn engine(options: &[String], version: &str) -> Result<Box<dyn Engine>, String> {
    check_options("wasmi", version, options, &["fuel"])?;
    let fuel = options.iter().any(|o| o == "fuel");
    let mut config = Config::default();
    config.consume_fuel(fuel);
    config.wasm_tail_call(true);
    Ok(Box::new(Wasmi031 { engine: wasmi::Engine::new(&config), fuel, version: version.to_string() }))
}

/// Fuel for a metered store: far more than any shape uses.
const FUEL: u64 = u64::MAX / 2;

struct Wasmi031 {
    version: String,
    engine: wasmi::Engine,
    fuel: bool,
}

impl Engine for Wasmi031 {
    fn version(&self) -> String {
        format!("wasmi {}", self.version)
    }
    fn supports(&self) -> Proposals {
        [Proposal::BulkMemory, Proposal::TailCall].into_iter().collect()
    }
    fn compile(&self, wasm: &[u8]) -> Result<Box<dyn Compiled>, EngineError> {
        let module = Module::new(&self.engine, wasm).map_err(|e| EngineError::Compile(e.to_string()))?;
        Ok(Box::new(Module031 { engine: self.engine.clone(), module, fuel: self.fuel }))
    }
}

struct Module031 {
    engine: wasmi::Engine,
    module: Module,
    fuel: bool,
}

impl Compiled for Module031 {
    fn instantiate(&self) -> Result<Box<dyn Instance>, EngineError> {
        let mut store = Store::new(&self.engine, ());
        if self.fuel {
            store.add_fuel(FUEL).map_err(|e| EngineError::Instantiate(e.to_string()))?;
        }
        let linker = Linker::<()>::new(&self.engine);
        let instance = linker
            .instantiate(&mut store, &self.module)
            .and_then(|pre| pre.start(&mut store))
            .map_err(|e| EngineError::Instantiate(e.to_string()))?;
        Ok(Box::new(Instance031 { store, instance }))
    }
}

struct Instance031 {
    store: Store<()>,
    instance: wasmi::Instance,
}

impl Instance031 {
    fn memory(&self) -> Result<wasmi::Memory, EngineError> {
        self.instance.get_memory(&self.store, "memory").ok_or(EngineError::NoMemory)
    }
}

impl Instance for Instance031 {
    fn call(&mut self, export: &str, arg: Option<i32>, meter: Option<&mut Meter>) -> Result<Option<i32>, EngineError> {
        let func = self
            .instance
            .get_func(&self.store, export)
            .ok_or_else(|| EngineError::MissingExport(export.to_string()))?;
        let args: Vec<Value> = arg.into_iter().map(Value::I32).collect();
        let mut results = vec![Value::I32(0); func.ty(&self.store).results().len()];
        let outcome = timed(meter, || func.call(&mut self.store, &args, &mut results));
        outcome.map_err(|e| EngineError::Trap(e.to_string()))?;
        Ok(results.first().and_then(Value::i32))
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
