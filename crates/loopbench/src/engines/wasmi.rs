//! wasmi 2: a register-machine interpreter. Always compiled in: it is also
//! the engine of the exact counting run.
//!
//! wasmi translates lazily by default, so the first call of a function pays
//! its translation; the session's warm-up rounds absorb that.

use super::{support, ArmSpec, Compiled, Engine, Instance};
use crate::error::EngineError;
use crate::measure::{timed, Meter};
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
        WasmiEngine {
            engine: wasmi::Engine::new(&config),
            fuel,
        }
    }
}

impl Engine for WasmiEngine {
    fn version(&self) -> String {
        format!("wasmi {}", crate::versions::WASMI)
    }
    fn supports(&self) -> Proposals {
        support(&[Proposal::BulkMemory, Proposal::TailCall])
    }
    fn compile(&self, wasm: &[u8]) -> Result<Box<dyn Compiled>, EngineError> {
        let module =
            Module::new(&self.engine, wasm).map_err(|e| EngineError::Compile(e.to_string()))?;
        Ok(Box::new(WasmiModule {
            engine: self.engine.clone(),
            module,
            fuel: self.fuel,
        }))
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
            store
                .set_fuel(FUEL)
                .map_err(|e| EngineError::Instantiate(e.to_string()))?;
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
        self.instance
            .get_memory(&self.store, "memory")
            .ok_or(EngineError::NoMemory)
    }
}

impl Instance for WasmiInstance {
    fn call(
        &mut self,
        export: &str,
        arg: Option<i32>,
        meter: Option<&mut Meter>,
    ) -> Result<Option<i32>, EngineError> {
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
        mem.write(&mut self.store, offset as usize, data)
            .map_err(|e| EngineError::Memory(e.to_string()))
    }
    fn read_memory(&mut self, offset: u64, len: usize) -> Result<Vec<u8>, EngineError> {
        let mem = self.memory()?;
        let mut buf = vec![0; len];
        mem.read(&self.store, offset as usize, &mut buf)
            .map_err(|e| EngineError::Memory(e.to_string()))?;
        Ok(buf)
    }
}

/// A wasmi instance for the untimed counting run: optional fuel (so a
/// module that never ends is stopped) and calls with any value types.
pub struct CountingInstance {
    inner: WasmiInstance,
}

/// Why a counting call stopped early.
pub enum Stopped {
    Trap(String),
    OutOfFuel,
}

impl CountingInstance {
    pub fn new(wasm: &[u8], fuel: Option<u64>) -> Result<Self, EngineError> {
        let mut config = Config::default();
        config.consume_fuel(fuel.is_some());
        let engine = wasmi::Engine::new(&config);
        let module = Module::new(&engine, wasm).map_err(|e| EngineError::Compile(e.to_string()))?;
        let mut store = Store::new(&engine, ());
        if let Some(f) = fuel {
            store
                .set_fuel(f)
                .map_err(|e| EngineError::Instantiate(e.to_string()))?;
        }
        let instance = Linker::<()>::new(&engine)
            .instantiate_and_start(&mut store, &module)
            .map_err(|e| EngineError::Instantiate(e.to_string()))?;
        Ok(CountingInstance {
            inner: WasmiInstance { store, instance },
        })
    }

    /// Parameter and result types of an export.
    pub fn signature(&self, export: &str) -> Result<(Vec<wasmi::ValType>, usize), EngineError> {
        let f = self
            .inner
            .instance
            .get_func(&self.inner.store, export)
            .ok_or_else(|| EngineError::MissingExport(export.to_string()))?;
        let ty = f.ty(&self.inner.store);
        Ok((ty.params().to_vec(), ty.results().len()))
    }

    /// Call with arbitrary values; a trap or exhausted fuel is reported as
    /// [`Stopped`] so the caller can still read what was counted.
    pub fn call_values(
        &mut self,
        export: &str,
        args: &[Val],
    ) -> Result<Result<Vec<Val>, Stopped>, EngineError> {
        let (_, results) = self.signature(export)?;
        let f = self
            .inner
            .instance
            .get_func(&self.inner.store, export)
            .ok_or(EngineError::NoMemory)?;
        let mut out = vec![Val::I32(0); results];
        match f.call(&mut self.inner.store, args, &mut out) {
            Ok(()) => Ok(Ok(out)),
            Err(e) => {
                let out_of_fuel = e.as_trap_code() == Some(wasmi::TrapCode::OutOfFuel);
                Ok(Err(if out_of_fuel {
                    Stopped::OutOfFuel
                } else {
                    Stopped::Trap(e.to_string())
                }))
            }
        }
    }

    /// Read counter slot `slot` through the instrumented module's export.
    pub fn read_counter(&mut self, export: &str, slot: u32) -> Result<i64, EngineError> {
        let f = self
            .inner
            .instance
            .get_typed_func::<i32, i64>(&self.inner.store, export)
            .map_err(|_| EngineError::MissingExport(export.to_string()))?;
        // Counting runs may have exhausted their fuel: refuel the reader.
        if self.inner.store.get_fuel().is_ok() {
            let _ = self.inner.store.set_fuel(u64::MAX / 4);
        }
        f.call(&mut self.inner.store, slot as i32)
            .map_err(|e| EngineError::Trap(e.to_string()))
    }
}

impl Instance for CountingInstance {
    fn call(
        &mut self,
        export: &str,
        arg: Option<i32>,
        meter: Option<&mut Meter>,
    ) -> Result<Option<i32>, EngineError> {
        self.inner.call(export, arg, meter)
    }
    fn write_memory(&mut self, offset: u64, data: &[u8]) -> Result<(), EngineError> {
        self.inner.write_memory(offset, data)
    }
    fn read_memory(&mut self, offset: u64, len: usize) -> Result<Vec<u8>, EngineError> {
        self.inner.read_memory(offset, len)
    }
}
