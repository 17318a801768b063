//! wasmi's routing of a WASI module's imports to the [`Host`]: one host
//! function per import, the host in the store, the module's memory looked
//! up once per instance.

use super::preview1::{Slice, Stopped};
use super::{Func, Host, Runner, Started, Ty};
use crate::engines::wasmi::{config, FUEL};
use crate::engines::EngineError;
use wasmi::{Caller, FuncType, Linker, Memory, Module, Store, Val, ValType};

/// What a wasmi store holds: the host, and the memory its calls use.
type Data = (Host, Option<Memory>);

/// A WASI module compiled by wasmi with the arm's `options`.
pub fn runner(
    options: &[String],
    version: &str,
    wasm: &[u8],
) -> Result<Box<dyn Runner>, EngineError> {
    let (config, fuel) = config(options, version).map_err(EngineError::Config)?;
    let engine = wasmi::Engine::new(&config);
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
    Ok(Box::new(WasmiRunner {
        engine,
        module,
        linker,
        fuel,
    }))
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
    let memory = caller.data().1;
    let outcome = match memory {
        Some(m) => {
            let (mem, data) = m.data_and_store_mut(&mut caller);
            data.0.call(func, &args[..params.len()], &mut Slice(mem))
        }
        None => caller
            .data_mut()
            .0
            .call(func, &args[..params.len()], &mut Slice(&mut [])),
    };
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

struct WasmiRunner {
    engine: wasmi::Engine,
    module: Module,
    linker: Linker<Data>,
    fuel: bool,
}

impl Runner for WasmiRunner {
    fn instantiate(&self) -> Result<Box<dyn Started>, EngineError> {
        let mut store = Store::new(&self.engine, Data::default());
        if self.fuel {
            store
                .set_fuel(FUEL)
                .map_err(|e| EngineError::Instantiate(e.to_string()))?;
        }
        let instance = self
            .linker
            .instantiate_and_start(&mut store, &self.module)
            .map_err(|e| EngineError::Instantiate(e.to_string()))?;
        store.data_mut().1 = instance.get_memory(&store, "memory");
        // Looked up here: a run without markers is timed from the call on.
        let start = instance
            .get_func(&store, "_start")
            .ok_or_else(|| EngineError::MissingExport("_start".into()))?;
        Ok(Box::new(WasmiStarted { store, start }))
    }
}

struct WasmiStarted {
    store: Store<Data>,
    start: wasmi::Func,
}

impl Started for WasmiStarted {
    fn start(&mut self, host: &mut Host) -> Result<(), EngineError> {
        std::mem::swap(&mut self.store.data_mut().0, host);
        self.store.data_mut().0.enter();
        let outcome = self.start.call(&mut self.store, &[], &mut []);
        self.store.data_mut().0.leave();
        std::mem::swap(&mut self.store.data_mut().0, host);
        outcome.map_err(EngineError::trap)
    }
}
