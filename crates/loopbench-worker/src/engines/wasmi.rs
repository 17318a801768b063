//! wasmi 1.x and 2.x: the register-machine interpreter. Version 2 is always
//! compiled in: it is also the engine of the exact counting run
//! ([`crate::engines::counting`]).
//!
//! This file is also the worker adapter of the `wasmi_1x` family
//! ([`crate::workers::family`]): a generated worker project compiles it
//! verbatim against the requested wasmi 1.x or 2.x, so it names this library
//! only as `loopbench_worker::...` and gets the engine's version as an argument.
//!
//! wasmi translates lazily by default, so the first call of a function pays
//! its translation; the session's warm-up rounds absorb that. `eager`
//! translates at compile time. SIMD exists only with the crate's `simd`
//! feature: whether this build has it is asked of the engine itself (a tiny
//! SIMD module must compile), and a worker's startup probe runs it too.

use loopbench_worker::engines::EngineError;
use loopbench_worker::engines::{check_options, Compiled, Engine, Instance};
use loopbench_worker::measure::{timed, Meter};
use loopbench_worker::proposals::{Proposal, Proposals};
use wasmi::{CompilationMode, Config, Linker, Module, Store, Val};

/// The engine for the arm's `options` (`fuel`, `eager`); `version` is the
/// wasmi crate's, for reports.
pub fn engine(options: &[String], version: &str) -> Result<Box<dyn Engine>, String> {
    let (config, fuel) = config(options, version)?;
    let engine = wasmi::Engine::new(&config);
    let simd = Module::new(&engine, SIMD_PROBE).is_ok();
    Ok(Box::new(WasmiEngine {
        engine,
        fuel,
        simd,
        version: version.to_string(),
    }))
}

/// The engine configuration of the arm's `options`, and whether it meters
/// fuel (the store then needs some).
pub fn config(options: &[String], version: &str) -> Result<(Config, bool), String> {
    check_options("wasmi", version, options, &["fuel", "eager"])?;
    let has = |name: &str| options.iter().any(|o| o == name);
    let mut config = Config::default();
    let fuel = has("fuel");
    config.consume_fuel(fuel);
    if has("eager") {
        config.compilation_mode(CompilationMode::Eager);
    }
    Ok((config, fuel))
}

/// `(module (func (result i32) v128.const i32x4 1 2 3 4 i32x4.extract_lane 0))`:
/// compiles only where this wasmi was built with SIMD.
const SIMD_PROBE: &[u8] = &[
    0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, // magic, version
    0x01, 0x05, 0x01, 0x60, 0x00, 0x01, 0x7f, // type: () -> i32
    0x03, 0x02, 0x01, 0x00, // function 0 has type 0
    0x0a, 0x19, 0x01, 0x17, 0x00, // code: one body, no locals
    0xfd, 0x0c, 1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 4, 0, 0, 0, // v128.const
    0xfd, 0x1b, 0x00, // i32x4.extract_lane 0
    0x0b, // end
];

/// Fuel given to a fuel-metered store: far more than any shape uses, so the
/// metering cost is paid but never ends a run.
pub const FUEL: u64 = u64::MAX / 2;

struct WasmiEngine {
    engine: wasmi::Engine,
    fuel: bool,
    simd: bool,
    version: String,
}

impl Engine for WasmiEngine {
    fn version(&self) -> String {
        format!("wasmi {}", self.version)
    }
    fn supports(&self) -> Proposals {
        let mut p: Proposals = [Proposal::BulkMemory, Proposal::TailCall]
            .into_iter()
            .collect();
        if self.simd {
            p.insert(Proposal::Simd);
        }
        p
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
            .map_err(|e| {
                // A trap here can only come from the start function.
                EngineError::Instantiate(match e.as_trap_code() {
                    Some(_) => format!("the start function trapped: {e}"),
                    None => e.to_string(),
                })
            })?;
        Ok(Box::new(WasmiInstance { store, instance }))
    }
}

/// A live instance (also the core of the counting run's instance).
pub struct WasmiInstance {
    pub store: Store<()>,
    pub instance: wasmi::Instance,
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
        outcome.map_err(EngineError::trap)?;
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

#[cfg(test)]
mod tests {
    #[test]
    fn the_simd_probe_is_the_module_it_says() {
        let wat = "(module (func (result i32) v128.const i32x4 1 2 3 4 i32x4.extract_lane 0))";
        assert_eq!(super::SIMD_PROBE, wat::parse_str(wat).unwrap().as_slice());
    }
}
