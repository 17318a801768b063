//! wasm3's routing of a WASI module's imports to the [`Host`]: a typed
//! closure per import (wasm3 links only typed host functions, so each of
//! the host's signatures is spelled out once here), the host shared with
//! them for the run, the memory lent as a slice during each call.

use super::preview1::{Slice, Stopped};
use super::{Func, Host, Runner, Started, Ty};
use crate::engines::EngineError;
use std::cell::RefCell;
use std::rc::Rc;
use wasm3::error::Trap;
use wasm3::{CallContext, Environment, Runtime};

/// Stack for the wasm3 runtime, in bytes (as the shapes' adapter).
const STACK: u32 = 1 << 20;

/// A WASI module for wasm3: parsed per instance, as wasm3 requires.
pub fn runner(
    _options: &[String],
    _version: &str,
    wasm: &[u8],
) -> Result<Box<dyn Runner>, EngineError> {
    let funcs = super::imports(wasm).map_err(|e| EngineError::Compile(e.to_string()))?;
    Ok(Box::new(Wasm3Runner {
        wasm: wasm.to_vec(),
        funcs,
    }))
}

struct Wasm3Runner {
    wasm: Vec<u8>,
    funcs: Vec<Func>,
}

impl Runner for Wasm3Runner {
    fn instantiate(&self) -> Result<Box<dyn Started>, EngineError> {
        let instantiate = |e: wasm3::error::Error| EngineError::Instantiate(e.to_string());
        let env = Environment::new().map_err(instantiate)?;
        let runtime = env.create_runtime(STACK).map_err(instantiate)?;
        let parsed = env
            .parse_module(self.wasm.clone())
            .map_err(|e| EngineError::Compile(e.to_string()))?;
        let host = Rc::new(RefCell::new(Host::default()));
        {
            let mut module = runtime.load_module(parsed).map_err(instantiate)?;
            for &func in &self.funcs {
                link(&mut module, func, host.clone())?;
            }
        }
        Ok(Box::new(Wasm3Started {
            runtime,
            _env: env,
            host,
        }))
    }
}

/// An i32 or i64 argument as the host's raw bits.
trait Raw {
    fn raw(self) -> u64;
}
impl Raw for i32 {
    fn raw(self) -> u64 {
        self as u32 as u64
    }
}
impl Raw for i64 {
    fn raw(self) -> u64 {
        self as u64
    }
}

/// The host's result as a typed closure returns it.
trait Ret: Sized {
    fn from(v: Option<i32>) -> Self;
}
impl Ret for () {
    fn from(_: Option<i32>) -> Self {}
}
impl Ret for i32 {
    fn from(v: Option<i32>) -> Self {
        v.unwrap_or(0)
    }
}

fn serve(
    func: Func,
    host: &RefCell<Host>,
    ctx: &CallContext<'_>,
    args: &[u64],
) -> Result<Option<i32>, Trap> {
    // SAFETY: wasm3 runs no wasm code while a host function runs, so the
    // slice of its memory is the only view of it until this call returns,
    // and the memory cannot grow under it.
    let memory = unsafe { &mut *ctx.memory_mut() };
    match host.borrow_mut().call(func, args, &mut Slice(memory)) {
        Ok(v) => Ok(v),
        Err(Stopped) => Err(Trap::Exit),
    }
}

/// Link `func` into `module` at its type.
fn link(
    module: &mut wasm3::Module<'_>,
    func: Func,
    host: Rc<RefCell<Host>>,
) -> Result<(), EngineError> {
    let (m, n) = (func.module(), func.name());
    macro_rules! typed {
        ($($a:ident: $t:ty),* => $r:ty) => {
            module.link_closure(m, n, move |ctx: CallContext<'_>, ($($a,)*): ($($t,)*)| -> Result<$r, Trap> {
                let args = [$(Raw::raw($a)),*];
                serve(func, &host, &ctx, &args).map(<$r as Ret>::from)
            })
        };
    }
    use Ty::{I32, I64};
    let linked = match (func.params(), func.results()) {
        ([], []) => typed!(=> ()),
        ([], [I32]) => typed!(=> i32),
        ([I32], []) => typed!(a: i32 => ()),
        ([I32], [I32]) => typed!(a: i32 => i32),
        ([I32, I32], [I32]) => typed!(a: i32, b: i32 => i32),
        ([I32, I32, I32], [I32]) => typed!(a: i32, b: i32, c: i32 => i32),
        ([I32, I64, I32], [I32]) => typed!(a: i32, b: i64, c: i32 => i32),
        ([I32, I32, I32, I32], [I32]) => typed!(a: i32, b: i32, c: i32, d: i32 => i32),
        ([I32, I64, I32, I32], [I32]) => typed!(a: i32, b: i64, c: i32, d: i32 => i32),
        ([I32, I32, I32, I32, I32], [I32]) => {
            typed!(a: i32, b: i32, c: i32, d: i32, e: i32 => i32)
        }
        ([I32, I32, I32, I64, I32], [I32]) => {
            typed!(a: i32, b: i32, c: i32, d: i64, e: i32 => i32)
        }
        ([I32, I32, I32, I32, I32, I64, I64, I32, I32], [I32]) => {
            typed!(a: i32, b: i32, c: i32, d: i32, e: i32, f: i64, g: i64, h: i32, i: i32 => i32)
        }
        (params, results) => {
            return Err(EngineError::Instantiate(format!(
                "{m}.{n}: no wasm3 link for {params:?} -> {results:?}"
            )))
        }
    };
    linked.map_err(|e| EngineError::Instantiate(format!("{m}.{n}: {e}")))
}

struct Wasm3Started {
    runtime: Runtime,
    _env: Environment,
    host: Rc<RefCell<Host>>,
}

impl Started for Wasm3Started {
    fn start(&mut self, host: &mut Host) -> Result<(), EngineError> {
        // wasm3's functions borrow the runtime: found here, before the
        // timed region opens.
        let start = self
            .runtime
            .find_function::<(), ()>("_start")
            .map_err(|_| EngineError::MissingExport("_start".into()))?;
        std::mem::swap(&mut *self.host.borrow_mut(), host);
        self.host.borrow_mut().enter();
        let outcome = start.call();
        self.host.borrow_mut().leave();
        std::mem::swap(&mut *self.host.borrow_mut(), host);
        outcome.map_err(EngineError::trap)
    }
}
