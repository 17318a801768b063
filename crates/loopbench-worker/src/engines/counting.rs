//! wasmi for the untimed counting run: optional fuel (so a module that never
//! ends is stopped), calls with any value types, and reads of the counter
//! slots an instrumented module exports. Always wasmi 2, compiled in; it
//! wraps the in-process adapter's instance ([`super::wasmi`]) and is kept
//! apart from it because that file is also a worker template, compiled
//! against other wasmi versions.

use super::wasmi::WasmiInstance;
use super::Instance;
use crate::engines::EngineError;
use crate::measure::Meter;
use wasmi::{Config, Linker, Module, Store, Val};

/// A wasmi instance for the untimed counting run: optional fuel (so a
/// module that never ends is stopped) and calls with any value types.
pub struct CountingInstance {
    inner: WasmiInstance,
}

/// The proposals the counting engine runs: this binary's wasmi, whose
/// in-process adapter states them.
pub fn supports() -> Result<crate::proposals::Proposals, EngineError> {
    let wasmi = super::wasmi::engine(&[], crate::versions::WASMI).map_err(EngineError::Config)?;
    Ok(wasmi.supports())
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
            .map_err(|e| {
                // A trap here can only come from the start function.
                EngineError::Instantiate(match e.as_trap_code() {
                    Some(_) => format!("the start function trapped: {e}"),
                    None => e.to_string(),
                })
            })?;
        Ok(CountingInstance {
            inner: WasmiInstance { store, instance },
        })
    }

    /// Parameter and result types of an export.
    pub fn signature(&self, export: &str) -> Result<(Vec<wasmi::ValType>, usize), EngineError> {
        let instance = &self.inner.instance;
        let f = match instance.get_export(&self.inner.store, export) {
            Some(wasmi::Extern::Func(f)) => f,
            Some(other) => {
                let kind = match other {
                    wasmi::Extern::Memory(_) => "a memory",
                    wasmi::Extern::Table(_) => "a table",
                    wasmi::Extern::Global(_) => "a global",
                    _ => "no function",
                };
                return Err(EngineError::Config(format!(
                    "the module's export `{export}` is {kind}, not a function"
                )));
            }
            None => return Err(EngineError::MissingExport(export.to_string())),
        };
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
        let _call = crate::children::Unstoppable::enter();
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
        // Counting runs may have exhausted their fuel: the reader gets its
        // own, and the run's is given back after (read before a run, the
        // reader's fuel would otherwise become the run's, without bound).
        let left = self.inner.store.get_fuel().ok();
        if left.is_some() {
            let _ = self.inner.store.set_fuel(u64::MAX / 4);
        }
        let read = f
            .call(&mut self.inner.store, slot as i32)
            .map_err(|e| EngineError::Trap(e.to_string()));
        if let Some(left) = left {
            let _ = self.inner.store.set_fuel(left);
        }
        read
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

/// What the trace hook keeps: the site table and the predictor fed with it.
pub struct TraceState {
    traced: loopbench_count::Traced,
    pub predictor: loopbench_count::Predictor,
}

/// wasmi running a branch-traced module ([`loopbench_count::trace_branches`]):
/// every decision goes through the import into the simulated predictor.
/// Untimed, like the counting run, and with fuel for the same reason.
pub struct TracingInstance {
    store: Store<TraceState>,
    instance: wasmi::Instance,
}

impl TracingInstance {
    pub fn new(traced: loopbench_count::Traced, fuel: u64) -> Result<Self, EngineError> {
        let mut config = Config::default();
        config.consume_fuel(true);
        let engine = wasmi::Engine::new(&config);
        let module = Module::new(&engine, &traced.wasm[..])
            .map_err(|e| EngineError::Compile(e.to_string()))?;
        let mut store = Store::new(
            &engine,
            TraceState {
                traced,
                predictor: Default::default(),
            },
        );
        store
            .set_fuel(fuel)
            .map_err(|e| EngineError::Instantiate(e.to_string()))?;
        let mut linker = Linker::<TraceState>::new(&engine);
        let (m, f) = loopbench_count::TRACE_IMPORT;
        linker
            .func_wrap(
                m,
                f,
                |mut caller: wasmi::Caller<'_, TraceState>, value: i32, site: i32| -> i32 {
                    let s = caller.data_mut();
                    match s.traced.decision(value, site as u32) {
                        Some(Ok(taken)) => {
                            s.predictor.conditional(site as u32, taken);
                        }
                        Some(Err(target)) => {
                            s.predictor.multiway(site as u32, target);
                        }
                        None => {}
                    }
                    value
                },
            )
            .map_err(|e| EngineError::Instantiate(e.to_string()))?;
        let instance = linker
            .instantiate_and_start(&mut store, &module)
            .map_err(|e| EngineError::Instantiate(e.to_string()))?;
        Ok(TracingInstance { store, instance })
    }

    pub fn stats(&self) -> loopbench_count::PredictorStats {
        self.store.data().predictor.stats
    }

    fn memory(&self) -> Result<wasmi::Memory, EngineError> {
        self.instance
            .get_memory(&self.store, "memory")
            .ok_or(EngineError::NoMemory)
    }
}

impl Instance for TracingInstance {
    fn call(
        &mut self,
        export: &str,
        arg: Option<i32>,
        _meter: Option<&mut Meter>,
    ) -> Result<Option<i32>, EngineError> {
        let f = self
            .instance
            .get_func(&self.store, export)
            .ok_or_else(|| EngineError::MissingExport(export.to_string()))?;
        let results = f.ty(&self.store).results().len();
        let args: Vec<Val> = arg.map(Val::I32).into_iter().collect();
        let mut out = vec![Val::I32(0); results];
        let _call = crate::children::Unstoppable::enter();
        f.call(&mut self.store, &args, &mut out)
            .map_err(|e| EngineError::Trap(e.to_string()))?;
        Ok(out.first().and_then(Val::i32))
    }
    fn write_memory(&mut self, offset: u64, data: &[u8]) -> Result<(), EngineError> {
        let m = self.memory()?;
        m.write(&mut self.store, offset as usize, data)
            .map_err(|e| EngineError::Memory(e.to_string()))
    }
    fn read_memory(&mut self, offset: u64, len: usize) -> Result<Vec<u8>, EngineError> {
        let m = self.memory()?;
        let mut buf = vec![0u8; len];
        m.read(&self.store, offset as usize, &mut buf)
            .map_err(|e| EngineError::Memory(e.to_string()))?;
        Ok(buf)
    }
}
