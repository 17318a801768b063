//! The stub host: what an app's imports do once loopbench has turned them
//! into defined functions (see [`super::rewrite`]).
//!
//! Engines here run import-free modules, and an app must compute the same
//! thing on every engine, so the stubs are deterministic and tiny. They model
//! a WASI process with no files, no arguments, no environment, a clock stuck
//! at zero and an all-zero random source:
//!
//! | import | behaviour |
//! |---|---|
//! | `wasi*.fd_*`, `path_*`, `poll_oneoff`, `sock_*` | return `EBADF` (8): no file descriptors exist, output is dropped |
//! | `wasi*.fd_prestat_get` | `EBADF`: no preopened directories (ends libc's preopen scan) |
//! | `wasi*.clock_time_get(id, precision, *out)` | stores 0 at `out`, returns 0 |
//! | `wasi*.clock_res_get(id, *out)` | stores 1 at `out`, returns 0 |
//! | `wasi*.random_get(buf, len)` | fills `buf` with zero bytes, returns 0 |
//! | `wasi*.args_sizes_get` / `environ_sizes_get(*n, *bytes)` | store 0 in both, return 0 |
//! | `wasi*.args_get` / `environ_get` | return 0 (nothing to write) |
//! | `wasi*.sched_yield` | returns 0 |
//! | `wasi*.proc_exit(code)`, `proc_raise` | fail: the app wanted to exit |
//! | `env.emscripten_notify_memory_growth` | no-op (a JS-side cache refresh) |
//! | anything else | fails |
//!
//! "Fails" means: the stub stores a code in a dedicated global, readable
//! through the exported [`ERROR_EXPORT`] function, and executes
//! `unreachable`. The host turns the code back into the import's name
//! ([`crate::shapes::recipe::stub_failure`]), so the user reads "the app called env.foo, which the stub
//! host cannot serve" instead of a bare trap. A stub whose import has a
//! signature other than the one documented above fails the same way.

use super::rewrite::{Import, ImportKind, Sig};
use wasm_encoder::{Function, Instruction, MemArg, ValType};

/// Exported `() -> i32`: 0, or `1 + import index` of the stub that failed.
pub use crate::shapes::recipe::STUB_ERROR_EXPORT as ERROR_EXPORT;

const EBADF: i32 = 8;

fn is_wasi(module: &str) -> bool {
    module.starts_with("wasi")
}

fn mem(offset: u64, align: u32) -> MemArg {
    MemArg {
        offset,
        align,
        target: wasm_encoder::MemArgTarget::Memory(0),
        ordering: None,
    }
}

/// What a stub does; decided from the import's name and signature.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Behaviour {
    Return(i32),
    Nothing,
    ClockZero,
    ClockRes,
    RandomZero,
    SizesZero,
    Fail,
}

pub fn behaviour(imp: &Import, has_memory: bool) -> Behaviour {
    let ImportKind::Func(sig) = &imp.kind else {
        return Behaviour::Fail;
    };
    let i32s = |n: usize| Sig::new(&vec![ValType::I32; n], &[ValType::I32]);
    let name = imp.name.as_str();
    if imp.module == "env"
        && name == "emscripten_notify_memory_growth"
        && *sig == Sig::new(&[ValType::I32], &[])
    {
        return Behaviour::Nothing;
    }
    if !is_wasi(&imp.module) {
        return Behaviour::Fail;
    }
    let needs_mem = |b: Behaviour| if has_memory { b } else { Behaviour::Fail };
    match name {
        "clock_time_get"
            if *sig == Sig::new(&[ValType::I32, ValType::I64, ValType::I32], &[ValType::I32]) =>
        {
            needs_mem(Behaviour::ClockZero)
        }
        "clock_res_get" if *sig == i32s(2) => needs_mem(Behaviour::ClockRes),
        "random_get" if *sig == i32s(2) => needs_mem(Behaviour::RandomZero),
        "args_sizes_get" | "environ_sizes_get" if *sig == i32s(2) => {
            needs_mem(Behaviour::SizesZero)
        }
        "args_get" | "environ_get" if *sig == i32s(2) => Behaviour::Return(0),
        "sched_yield" if *sig == i32s(0) => Behaviour::Return(0),
        "proc_exit" | "proc_raise" => Behaviour::Fail,
        n if (n.starts_with("fd_")
            || n.starts_with("path_")
            || n.starts_with("sock_")
            || n == "poll_oneoff")
            && sig.results == [ValType::I32] =>
        {
            Behaviour::Return(EBADF)
        }
        _ => Behaviour::Fail,
    }
}

/// The body of the stub for import number `index` (among function imports;
/// the caller passes function imports only).
/// `err_global` is the index of the mutable i32 error global.
pub fn body(imp: &Import, index: u32, err_global: u32, has_memory: bool) -> Function {
    let b = behaviour(imp, has_memory);
    // random_get needs a counter local.
    let locals: Vec<(u32, ValType)> = if b == Behaviour::RandomZero {
        vec![(1, ValType::I32)]
    } else {
        vec![]
    };
    let mut f = Function::new(locals);
    {
        let mut ins = f.instructions();
        match b {
            Behaviour::Return(v) => {
                ins.i32_const(v);
            }
            Behaviour::Nothing => {}
            Behaviour::ClockZero => {
                ins.local_get(2)
                    .i64_const(0)
                    .i64_store(mem(0, 0))
                    .i32_const(0);
            }
            Behaviour::ClockRes => {
                ins.local_get(1)
                    .i64_const(1)
                    .i64_store(mem(0, 0))
                    .i32_const(0);
            }
            Behaviour::SizesZero => {
                ins.local_get(0).i32_const(0).i32_store(mem(0, 0));
                ins.local_get(1)
                    .i32_const(0)
                    .i32_store(mem(0, 0))
                    .i32_const(0);
            }
            Behaviour::RandomZero => {
                // for (i = 0; i < len; i++) buf[i] = 0;
                ins.block(wasm_encoder::BlockType::Empty)
                    .loop_(wasm_encoder::BlockType::Empty);
                ins.local_get(2).local_get(1).i32_ge_u().br_if(1);
                ins.local_get(0)
                    .local_get(2)
                    .i32_add()
                    .i32_const(0)
                    .i32_store8(mem(0, 0));
                ins.local_get(2).i32_const(1).i32_add().local_set(2).br(0);
                ins.end().end().i32_const(0);
            }
            Behaviour::Fail => {
                ins.i32_const(index as i32 + 1)
                    .global_set(err_global)
                    .unreachable();
            }
        }
        ins.end();
    }
    f
}

/// The exported reader of the error global.
pub fn error_reader(err_global: u32) -> Function {
    let mut f = Function::new([]);
    f.instruction(&Instruction::GlobalGet(err_global));
    f.instruction(&Instruction::End);
    f
}

/// The function imports a stub error code counts (`1 + index` among them),
/// by qualified name, as [`crate::shapes::recipe::stub_failure`] reads them.
pub fn stubbed(imports: &[Import]) -> Vec<String> {
    imports
        .iter()
        .filter(|i| matches!(i.kind, ImportKind::Func(_)))
        .map(Import::qualified)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shapes::recipe::stub_failure;

    fn func(module: &str, name: &str, params: &[ValType], results: &[ValType]) -> Import {
        Import {
            module: module.into(),
            name: name.into(),
            kind: ImportKind::Func(Sig::new(params, results)),
        }
    }

    #[test]
    fn documented_calls_get_fixed_behaviour() {
        use ValType::*;
        let w = "wasi_snapshot_preview1";
        assert_eq!(
            behaviour(&func(w, "fd_write", &[I32, I32, I32, I32], &[I32]), true),
            Behaviour::Return(8)
        );
        assert_eq!(
            behaviour(&func(w, "fd_prestat_get", &[I32, I32], &[I32]), true),
            Behaviour::Return(8)
        );
        assert_eq!(
            behaviour(&func(w, "clock_time_get", &[I32, I64, I32], &[I32]), true),
            Behaviour::ClockZero
        );
        assert_eq!(
            behaviour(&func(w, "clock_time_get", &[I32, I64, I32], &[I32]), false),
            Behaviour::Fail
        );
        assert_eq!(
            behaviour(&func(w, "proc_exit", &[I32], &[]), true),
            Behaviour::Fail
        );
        assert_eq!(
            behaviour(
                &func("env", "emscripten_notify_memory_growth", &[I32], &[]),
                true
            ),
            Behaviour::Nothing
        );
        assert_eq!(
            behaviour(&func("env", "something", &[], &[]), true),
            Behaviour::Fail
        );
        // A documented name with an undocumented signature is not guessed at.
        assert_eq!(
            behaviour(&func(w, "random_get", &[I32], &[I32]), true),
            Behaviour::Fail
        );
    }

    #[test]
    fn error_codes_name_the_import() {
        let imps = vec![
            Import {
                module: "env".into(),
                name: "mem".into(),
                kind: ImportKind::Memory,
            },
            func("env", "a", &[], &[]),
            func("env", "b", &[], &[]),
        ];
        let stubbed = stubbed(&imps);
        assert_eq!(stub_failure(0, &stubbed), None);
        assert_eq!(stub_failure(3, &stubbed), None);
        assert!(stub_failure(2, &stubbed).unwrap().contains("import env.b,"));
    }
}
