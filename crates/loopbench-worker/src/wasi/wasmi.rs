//! wasmi's routing of a WASI module's imports to the [`Host`]: one host
//! function per import, the host in the store, the module's memory looked
//! up once per instance.
//!
//! The same routing runs the untimed counting run of a WASI command
//! ([`count`]): its instrumented copy, with fuel so a module that never
//! ends is stopped, and the counter slots read at the markers, so the
//! counts are those of the timed region.

use super::preview1::{Slice, Stopped};
use super::{Func, Host, Region, Runner, Setup, Started, Ty};
use crate::engines::wasmi::{config, FUEL};
use crate::engines::EngineError;
use std::sync::Arc;
use wasmi::{Caller, Config, FuncType, Linker, Memory, Module, Store, TypedFunc, Val, ValType};

/// What a wasmi store holds: the host, the memory its calls use, and in
/// a counting run the counter reader with the slots read at each marker.
#[derive(Default)]
struct Data {
    host: Host,
    memory: Option<Memory>,
    probe: Option<Probe>,
}

struct Probe {
    reader: TypedFunc<i32, i64>,
    slots: u32,
    marks: Vec<Vec<i64>>,
}

/// A WASI module compiled by wasmi with the arm's `options`.
pub fn runner(
    options: &[String],
    version: &str,
    wasm: &[u8],
) -> Result<Box<dyn Runner>, EngineError> {
    let (config, fuel) = config(options, version).map_err(EngineError::Config)?;
    let (engine, module, linker) = link(&config, wasm)?;
    Ok(Box::new(WasmiRunner {
        engine,
        module,
        linker,
        fuel: fuel.then_some(FUEL),
    }))
}

fn link(
    config: &Config,
    wasm: &[u8],
) -> Result<(wasmi::Engine, Module, Linker<Data>), EngineError> {
    let engine = wasmi::Engine::new(config);
    let module = Module::new(&engine, wasm).map_err(|e| EngineError::Compile(e.to_string()))?;
    let mut linker = Linker::<Data>::new(&engine);
    for import in module.imports() {
        let Some(func) = Func::find(import.module(), import.name()) else {
            continue; // instantiation names what is missing
        };
        let ty = FuncType::new(
            func.params().iter().map(|t| val_type(*t)),
            func.results().iter().map(|t| val_type(*t)),
        );
        linker
            .func_new(
                func.module(),
                func.name(),
                ty,
                move |caller, params, results| serve(func, caller, params, results),
            )
            .map_err(|e| EngineError::Instantiate(e.to_string()))?;
    }
    Ok((engine, module, linker))
}

fn val_type(t: Ty) -> ValType {
    match t {
        Ty::I32 => ValType::I32,
        Ty::I64 => ValType::I64,
    }
}

fn serve(
    func: Func,
    mut caller: Caller<'_, Data>,
    params: &[Val],
    results: &mut [Val],
) -> Result<(), wasmi::Error> {
    let mut args = [0u64; 9];
    for (slot, v) in args.iter_mut().zip(params) {
        *slot = match v {
            Val::I32(x) => *x as u32 as u64,
            Val::I64(x) => *x as u64,
            _ => 0,
        };
    }
    let args = &args[..params.len().min(9)];
    let outcome = match caller.data().memory {
        Some(m) => {
            let (mem, data) = m.data_and_store_mut(&mut caller);
            data.host.call(func, args, &mut Slice(mem))
        }
        None => caller.data_mut().host.call(func, args, &mut Slice(&mut [])),
    };
    if matches!(func, Func::BenchStart | Func::BenchEnd) && outcome.is_ok() {
        mark(&mut caller)?;
    }
    match outcome {
        Ok(Some(v)) => {
            if let Some(r) = results.first_mut() {
                *r = Val::I32(v);
            }
            Ok(())
        }
        Ok(None) => Ok(()),
        Err(Stopped) => Err(wasmi::Error::new("the WASI process stopped")),
    }
}

/// In a counting run: read every counter slot now (at a marker).
fn mark(caller: &mut Caller<'_, Data>) -> Result<(), wasmi::Error> {
    let Some((reader, slots)) = caller.data().probe.as_ref().map(|p| (p.reader, p.slots)) else {
        return Ok(());
    };
    let values = (0..slots)
        .map(|slot| reader.call(&mut *caller, slot as i32))
        .collect::<Result<Vec<i64>, _>>()?;
    if let Some(p) = caller.data_mut().probe.as_mut() {
        p.marks.push(values);
    }
    Ok(())
}

struct WasmiRunner {
    engine: wasmi::Engine,
    module: Module,
    linker: Linker<Data>,
    fuel: Option<u64>,
}

impl WasmiRunner {
    fn instance(&self) -> Result<(Store<Data>, wasmi::Instance, wasmi::Func), EngineError> {
        let mut store = Store::new(&self.engine, Data::default());
        if let Some(fuel) = self.fuel {
            store
                .set_fuel(fuel)
                .map_err(|e| EngineError::Instantiate(e.to_string()))?;
        }
        let instance = self
            .linker
            .instantiate_and_start(&mut store, &self.module)
            .map_err(|e| EngineError::Instantiate(e.to_string()))?;
        store.data_mut().memory = instance.get_memory(&store, "memory");
        // Looked up here: a run without markers is timed from the call on.
        let start = instance
            .get_func(&store, "_start")
            .ok_or_else(|| EngineError::MissingExport("_start".into()))?;
        Ok((store, instance, start))
    }
}

impl Runner for WasmiRunner {
    fn instantiate(&self) -> Result<Box<dyn Started>, EngineError> {
        let (store, _, start) = self.instance()?;
        Ok(Box::new(WasmiStarted { store, start }))
    }
}

struct WasmiStarted {
    store: Store<Data>,
    start: wasmi::Func,
}

impl Started for WasmiStarted {
    fn start(&mut self, host: &mut Host) -> Result<(), EngineError> {
        std::mem::swap(&mut self.store.data_mut().host, host);
        self.store.data_mut().host.enter();
        let outcome = self.start.call(&mut self.store, &[], &mut []);
        self.store.data_mut().host.leave();
        std::mem::swap(&mut self.store.data_mut().host, host);
        outcome.map_err(EngineError::trap)
    }
}

/// What the counting run of a WASI command left: the process (its output
/// and how it ended) and the raw counter slots at the start and the end
/// of its timed region.
pub struct Counted {
    pub host: Host,
    pub start: Vec<i64>,
    pub end: Vec<i64>,
}

/// Why a counting run gave no counts. (Its traits are written out: this
/// file also compiles inside a generated worker, which has no thiserror.)
#[derive(Debug)]
pub enum CountStop {
    OutOfFuel(u64),
    Engine(EngineError),
}

impl std::fmt::Display for CountStop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CountStop::OutOfFuel(fuel) => write!(
                f,
                "did not finish within {fuel} units of fuel (a module that never ends?)"
            ),
            CountStop::Engine(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for CountStop {}

impl From<EngineError> for CountStop {
    fn from(e: EngineError) -> Self {
        CountStop::Engine(e)
    }
}

/// Run the instrumented copy of a WASI command once on wasmi, with `fuel`,
/// reading its `slots` counters (through the export `reader`) at the
/// edges of its timed region.
pub fn count(
    instrumented: &[u8],
    reader: &str,
    slots: u32,
    setup: Arc<Setup>,
    fuel: u64,
) -> Result<Counted, CountStop> {
    let mut config = Config::default();
    config.consume_fuel(true);
    let (engine, module, linker) = link(&config, instrumented)?;
    let runner = WasmiRunner {
        engine,
        module,
        linker,
        fuel: Some(fuel),
    };
    let (mut store, instance, start) = runner.instance()?;
    let reader = instance
        .get_typed_func::<i32, i64>(&store, reader)
        .map_err(|e| EngineError::MissingExport(format!("{reader}: {e}")))?;
    let region = setup.region;
    store.data_mut().host = Host::new(setup, None);
    store.data_mut().probe = Some(Probe {
        reader,
        slots,
        marks: Vec::new(),
    });
    let read_all = |store: &mut Store<Data>| -> Result<Vec<i64>, EngineError> {
        // The reads may come after the run spent its fuel.
        let _ = store.set_fuel(FUEL);
        (0..slots as i32)
            .map(|slot| reader.call(&mut *store, slot).map_err(EngineError::trap))
            .collect()
    };
    let before = read_all(&mut store)?;
    let _ = store.set_fuel(fuel);
    store.data_mut().host.enter();
    let outcome = start.call(&mut store, &[], &mut []);
    store.data_mut().host.leave();
    let out_of_fuel =
        matches!(&outcome, Err(e) if e.as_trap_code() == Some(wasmi::TrapCode::OutOfFuel));
    if out_of_fuel {
        return Err(CountStop::OutOfFuel(fuel));
    }
    let after = read_all(&mut store)?;
    let data = store.into_data();
    let host = data.host;
    let marks = data.probe.map(|p| p.marks).unwrap_or_default();
    let outcome = super::process::judge(&host, region, outcome.map_err(EngineError::trap));
    outcome?;
    let mut marks = marks.into_iter();
    let (start, end) = match region {
        Region::Whole => (before, after),
        Region::FromStart => (marks.next().unwrap_or_default(), after),
        Region::Between => (
            marks.next().unwrap_or_default(),
            marks.next().unwrap_or_default(),
        ),
    };
    Ok(Counted { host, start, end })
}
