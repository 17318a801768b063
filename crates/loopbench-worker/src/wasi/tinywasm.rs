//! tinywasm's routing of a WASI module's imports to the [`Host`]: one host
//! function per import, made per instance (tinywasm's functions live in
//! its store), the host lent to them for the run. tinywasm lends no slice
//! of its memory, so the host reads and writes through copies.

use super::preview1::{Memory, Slice, Stopped};
use super::{Func, Host, Runner, Started, Ty};
use crate::engines::EngineError;
use std::cell::RefCell;
use std::rc::Rc;
use tinywasm::types::{FuncType, WasmType, WasmValue};
use tinywasm::{FuncContext, Function, Imports, Module, ModuleInstance, Store};

/// What the host functions share with the instance: the host during a
/// run, and the module's memory.
#[derive(Default)]
struct State {
    host: Host,
    memory: Option<tinywasm::Memory>,
}

/// A WASI module parsed by tinywasm.
pub fn runner(
    _options: &[String],
    _version: &str,
    wasm: &[u8],
) -> Result<Box<dyn Runner>, EngineError> {
    let module = tinywasm::parse_bytes(wasm).map_err(|e| EngineError::Compile(e.to_string()))?;
    let funcs = super::imports(wasm).map_err(|e| EngineError::Compile(e.to_string()))?;
    Ok(Box::new(TinywasmRunner { module, funcs }))
}

struct TinywasmRunner {
    module: Module,
    funcs: Vec<Func>,
}

fn wasm_type(t: &Ty) -> WasmType {
    match t {
        Ty::I32 => WasmType::I32,
        Ty::I64 => WasmType::I64,
    }
}

impl Runner for TinywasmRunner {
    fn instantiate(&self) -> Result<Box<dyn Started>, EngineError> {
        let state = Rc::new(RefCell::new(State::default()));
        let mut store = Store::default();
        let mut imports = Imports::new();
        for &func in &self.funcs {
            let params: Vec<WasmType> = func.params().iter().map(wasm_type).collect();
            let results: Vec<WasmType> = func.results().iter().map(wasm_type).collect();
            let shared = state.clone();
            let f = tinywasm::HostFunction::from_untyped(
                &mut store,
                &FuncType::new(&params, &results),
                move |mut ctx, args| serve(func, &shared, &mut ctx, args),
            );
            imports.define(func.module(), func.name(), f);
        }
        let instance = ModuleInstance::instantiate(&mut store, &self.module, Some(imports))
            .map_err(|e| EngineError::Instantiate(e.to_string()))?;
        state.borrow_mut().memory = instance.memory("memory").ok();
        let start = instance
            .func_untyped(&store, "_start")
            .map_err(|_| EngineError::MissingExport("_start".into()))?;
        Ok(Box::new(TinywasmStarted {
            store,
            start,
            state,
        }))
    }
}

/// tinywasm's memory, read and written through its copying calls.
struct Copying<'a> {
    memory: &'a tinywasm::Memory,
    store: &'a mut Store,
}

impl Memory for Copying<'_> {
    fn size(&self) -> usize {
        self.memory.len(self.store).unwrap_or(0)
    }
    fn read(&self, at: u32, into: &mut [u8]) -> bool {
        self.memory
            .read_exact(self.store, at as usize, into)
            .is_ok()
    }
    fn write(&mut self, at: u32, data: &[u8]) -> bool {
        let fits = self.memory.len(self.store).is_ok_and(|len| {
            (at as usize)
                .checked_add(data.len())
                .is_some_and(|end| end <= len)
        });
        fits && self.memory.write(self.store, at as usize, data).ok() == Some(data.len())
    }
}

fn serve(
    func: Func,
    state: &RefCell<State>,
    ctx: &mut FuncContext<'_>,
    params: &[WasmValue],
) -> tinywasm::Result<Vec<WasmValue>> {
    let mut args = [0u64; 9];
    for (slot, v) in args.iter_mut().zip(params) {
        *slot = match v {
            WasmValue::I32(x) => *x as u32 as u64,
            WasmValue::I64(x) => *x as u64,
            _ => 0,
        };
    }
    let args = &args[..params.len().min(9)];
    let mut state = state.borrow_mut();
    let State { host, memory } = &mut *state;
    let outcome = match memory {
        Some(memory) => host.call(
            func,
            args,
            &mut Copying {
                memory,
                store: ctx.store_mut(),
            },
        ),
        None => host.call(func, args, &mut Slice(&mut [])),
    };
    match outcome {
        Ok(Some(v)) => Ok(vec![WasmValue::I32(v)]),
        Ok(None) => Ok(Vec::new()),
        Err(Stopped) => Err(tinywasm::Error::Other("the WASI process stopped".into())),
    }
}

struct TinywasmStarted {
    store: Store,
    start: Function,
    state: Rc<RefCell<State>>,
}

impl Started for TinywasmStarted {
    fn start(&mut self, host: &mut Host) -> Result<(), EngineError> {
        std::mem::swap(&mut self.state.borrow_mut().host, host);
        self.state.borrow_mut().host.enter();
        let outcome = self.start.call(&mut self.store, &[]);
        self.state.borrow_mut().host.leave();
        std::mem::swap(&mut self.state.borrow_mut().host, host);
        outcome.map(|_| ()).map_err(EngineError::trap)
    }
}
