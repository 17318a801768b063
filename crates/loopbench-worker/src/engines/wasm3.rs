//! wasm3 0.3 (bundling the wasm3 0.4.7 C interpreter).
//!
//! wasm3 does no validation of its own: an unknown SIMD or atomic opcode
//! crashes the process. The session checks every module's proposals against
//! [`Engine::supports`] before it reaches this adapter, so wasm3 only ever
//! sees MVP modules plus the extensions listed here.
//!
//! This file is also the worker adapter of the `wasm3_03` family
//! ([`crate::workers::family`]): a generated worker project compiles it
//! verbatim against the requested wasm3 0.3.x (its C core compiled by cc
//! with one section per function, so layout variants move the op
//! handlers), so it names this library only as `loopbench_worker::...` and gets
//! the engine's version as an argument.

use loopbench_worker::engines::{check_options, support, Compiled, Engine, EngineError, Instance};
use loopbench_worker::measure::{timed, Meter};
use loopbench_worker::proposals::Proposals;
use wasm3::{Environment, Runtime};

/// Stack for the wasm3 runtime, in bytes.
const STACK: u32 = 1 << 20;

/// The engine (wasm3 takes no options); `version` is the wasm3 crate's,
/// for reports.
pub fn engine(options: &[String], version: &str) -> Result<Box<dyn Engine>, String> {
    check_options("wasm3", version, options, &[])?;
    Ok(Box::new(Wasm3Engine {
        version: version.to_string(),
    }))
}

struct Wasm3Engine {
    version: String,
}

impl Engine for Wasm3Engine {
    fn version(&self) -> String {
        format!("wasm3 {} (C wasm3 0.4.7)", self.version)
    }
    fn supports(&self) -> Proposals {
        support(&[])
    }
    fn compile(&self, wasm: &[u8]) -> Result<Box<dyn Compiled>, EngineError> {
        // wasm3 parses per environment; keep the bytes and parse at
        // instantiation so every instance owns its environment and runtime.
        Ok(Box::new(Wasm3Module {
            wasm: wasm.to_vec(),
        }))
    }
}

struct Wasm3Module {
    wasm: Vec<u8>,
}

impl Compiled for Wasm3Module {
    fn instantiate(&self) -> Result<Box<dyn Instance>, EngineError> {
        let env = Environment::new().map_err(|e| EngineError::Instantiate(e.to_string()))?;
        let runtime = env
            .create_runtime(STACK)
            .map_err(|e| EngineError::Instantiate(e.to_string()))?;
        let module = env
            .parse_module(self.wasm.clone())
            .map_err(|e| EngineError::Compile(e.to_string()))?;
        runtime
            .load_module(module)
            .map_err(|e| EngineError::Instantiate(e.to_string()))?;
        Ok(Box::new(Wasm3Instance { runtime, _env: env }))
    }
}

struct Wasm3Instance {
    runtime: Runtime,
    _env: Environment,
}

impl Instance for Wasm3Instance {
    fn call(
        &mut self,
        export: &str,
        arg: Option<i32>,
        meter: Option<&mut Meter>,
    ) -> Result<Option<i32>, EngineError> {
        let trap = |e: wasm3::error::Error| EngineError::trap(e);
        let missing = || EngineError::MissingExport(export.to_string());
        // wasm3 only offers typed calls: find the signature that matches.
        match arg {
            Some(a) => {
                if let Ok(f) = self.runtime.find_function::<i32, i32>(export) {
                    timed(meter, || f.call(a)).map(Some).map_err(trap)
                } else if let Ok(f) = self.runtime.find_function::<i32, ()>(export) {
                    timed(meter, || f.call(a)).map(|_| None).map_err(trap)
                } else {
                    Err(missing())
                }
            }
            None => {
                if let Ok(f) = self.runtime.find_function::<(), i32>(export) {
                    timed(meter, || f.call()).map(Some).map_err(trap)
                } else if let Ok(f) = self.runtime.find_function::<(), ()>(export) {
                    timed(meter, || f.call()).map(|_| None).map_err(trap)
                } else {
                    Err(missing())
                }
            }
        }
    }
    fn write_memory(&mut self, offset: u64, data: &[u8]) -> Result<(), EngineError> {
        // SAFETY: the runtime is alive and no wasm code runs during the
        // copy; the range is checked against the memory's current length.
        let mem = unsafe { &mut *self.runtime.memory_mut() };
        let range = offset as usize..offset as usize + data.len();
        mem.get_mut(range)
            .ok_or(EngineError::Memory("write outside linear memory".into()))?
            .copy_from_slice(data);
        Ok(())
    }
    fn read_memory(&mut self, offset: u64, len: usize) -> Result<Vec<u8>, EngineError> {
        // SAFETY: as in write_memory.
        let mem = unsafe { &*self.runtime.memory() };
        let range = offset as usize..offset as usize + len;
        Ok(mem
            .get(range)
            .ok_or(EngineError::Memory("read outside linear memory".into()))?
            .to_vec())
    }
}
