//! Preparing an app module to run as a shape: its imports rewritten into
//! stubs, the stub error reader, the driver that gives it a `run(n)`, and
//! whatever else is injected (warm mode's loop).

use super::catalog::{AppSpec, Driver, HASH_CHUNK};
use super::rewrite::{self, Additions, Import, ModuleInfo, Sig};
use super::{stub, AppError};
use wasm_encoder::{BlockType, ExportKind, Function, MemArg, ValType};

/// Data a driver needs besides the module.
#[derive(Clone, Debug, Default)]
pub struct Inputs {
    /// zstd: the compressed frame and the bytes it decompresses to.
    pub compressed: Vec<u8>,
    pub original: Vec<u8>,
    /// sha256: the chunk hashed `steps` times.
    pub chunk: Vec<u8>,
}

/// Exported names loopbench adds to app modules (the worker's recipe
/// shape calls them).
pub use crate::shapes::recipe::{GET_DST, SET_DST, SET_SRC};

/// Extra functions to inject besides the driver (warm mode's loop). The
/// closure receives the module facts and the additions so far and appends
/// to them.
pub type Injector<'a> = &'a dyn Fn(&ModuleInfo, &mut Additions) -> Result<(), AppError>;

/// A rewritten app module and what the host needs to drive it.
#[derive(Clone)]
pub struct Prepared {
    pub wasm: Vec<u8>,
    pub imports: Vec<Import>,
    pub info: ModuleInfo,
}

/// Rewrite an app module: imports into stubs, the stub error reader, the
/// driver's `run`, `memory` exported, then whatever `inject` adds.
pub fn prepare(
    spec: &AppSpec,
    original: &[u8],
    inputs: &Inputs,
    inject: Option<Injector>,
) -> Result<Prepared, AppError> {
    let info = rewrite::inspect(original)?;
    if info.memories == 0 {
        return Err(AppError::NoMemory);
    }
    let mut add = Additions::default();
    // Global: stub error code.
    let err_global = info.globals;
    add.push_i32_global();
    let t_void_i32 = info.types;
    let t_i32_void = info.types + 1;
    let t_i32_i32 = info.types + 2;
    add.types.push(Sig::new(&[], &[ValType::I32]));
    add.types.push(Sig::new(&[ValType::I32], &[]));
    add.types.push(Sig::new(&[ValType::I32], &[ValType::I32]));
    let mut next_func = info.funcs();
    let mut push_func = |add: &mut Additions, ty: u32, f: Function, export: Option<&str>| {
        let idx = next_func;
        next_func += 1;
        add.functions.push((ty, f));
        if let Some(name) = export {
            add.exports.push((name.to_string(), ExportKind::Func, idx));
        }
        idx
    };
    push_func(
        &mut add,
        t_void_i32,
        stub::error_reader(err_global),
        Some(stub::ERROR_EXPORT),
    );
    if !info.exports.contains_key("memory") {
        add.exports.push(("memory".into(), ExportKind::Memory, 0));
    }
    match spec.driver {
        Driver::Native => {
            let (_, sig) = info.export_func("run")?;
            if sig != Sig::new(&[ValType::I32], &[ValType::I32]) {
                return Err(AppError::RunType { sig });
            }
        }
        Driver::HashWasm => {
            let get = |n: &str, want: Sig| -> Result<u32, AppError> {
                let (i, s) = info.export_func(n)?;
                if s != want {
                    return Err(AppError::HashExport {
                        name: n.to_string(),
                        found: Box::new(s),
                        want: Box::new(want),
                    });
                }
                Ok(i)
            };
            let buffer = get("Hash_GetBuffer", Sig::new(&[], &[ValType::I32]))?;
            let init = get("Hash_Init", Sig::new(&[ValType::I32], &[]))?;
            let update = get("Hash_Update", Sig::new(&[ValType::I32], &[]))?;
            let fin = get("Hash_Final", Sig::new(&[], &[]))?;
            // run(n): Hash_Init(256); n x Hash_Update(CHUNK); Hash_Final(); first digest word.
            let mut f = Function::new([(1, ValType::I32)]);
            let mut ins = f.instructions();
            ins.i32_const(256).call(init);
            ins.block(BlockType::Empty).loop_(BlockType::Empty);
            ins.local_get(1).local_get(0).i32_ge_u().br_if(1);
            ins.i32_const(HASH_CHUNK as i32).call(update);
            ins.local_get(1).i32_const(1).i32_add().local_set(1).br(0);
            ins.end().end();
            ins.call(fin).call(buffer).i32_load(mem_arg(2)).end();
            push_func(&mut add, t_i32_i32, f, Some("run"));
        }
        Driver::Zstd => {
            let (decompress, sig) = info.export_func("ZSTD_decompress")?;
            if sig != Sig::new(&[ValType::I32; 4], &[ValType::I32]) {
                return Err(AppError::ZstdType { sig });
            }
            info.export_func("malloc")?;
            let (src, dst) = (info.globals + 1, info.globals + 2);
            for _ in 0..2 {
                add.push_i32_global();
            }
            for (g, name) in [(src, SET_SRC), (dst, SET_DST)] {
                let mut f = Function::new([]);
                f.instructions().local_get(0).global_set(g).end();
                push_func(&mut add, t_i32_void, f, Some(name));
            }
            let mut f = Function::new([]);
            f.instructions().global_get(dst).end();
            push_func(&mut add, t_void_i32, f, Some(GET_DST));
            let dlen = inputs.original.len() as i32;
            let clen = inputs.compressed.len() as i32;
            if dlen < 4 || clen == 0 {
                return Err(AppError::EmptyZstdInputs);
            }
            // run(n): acc = 0; for i < n: r = ZSTD_decompress(dst, dlen, src, clen);
            //   if r != dlen: return r; acc = acc*31 + r + word(dst + probe(i)).
            let mut f = Function::new([(3, ValType::I32)]);
            let mut ins = f.instructions();
            ins.block(BlockType::Empty).loop_(BlockType::Empty);
            ins.local_get(1).local_get(0).i32_ge_u().br_if(1);
            ins.global_get(dst)
                .i32_const(dlen)
                .global_get(src)
                .i32_const(clen)
                .call(decompress);
            // A failed call returns zstd's error code (a small negative
            // number) as the checksum, which verify names.
            ins.local_tee(3)
                .i32_const(dlen)
                .i32_ne()
                .if_(BlockType::Empty)
                .local_get(3)
                .return_()
                .end();
            ins.local_get(2)
                .i32_const(31)
                .i32_mul()
                .i32_const(dlen)
                .i32_add();
            ins.global_get(dst)
                .local_get(1)
                .i32_const(4099)
                .i32_mul()
                .i32_const(dlen - 4)
                .i32_rem_u()
                .i32_add();
            ins.i32_load(mem_arg(0)).i32_add().local_set(2);
            ins.local_get(1).i32_const(1).i32_add().local_set(1).br(0);
            ins.end().end();
            ins.local_get(2).end();
            push_func(&mut add, t_i32_i32, f, Some("run"));
        }
    }
    if let Some(inject) = inject {
        let mut probe = info.clone();
        probe.types += add.types.len() as u32;
        probe.globals += add.globals.len() as u32;
        probe.func_sigs.extend(add.functions.iter().map(|_| None));
        inject(&probe, &mut add)?;
    }
    let mem = info.memory0.map(|m| !m.memory64).unwrap_or(false);
    let stubs: Vec<Function> = info
        .imports
        .iter()
        .filter(|i| matches!(i.kind, rewrite::ImportKind::Func(_)))
        .enumerate()
        .map(|(k, imp)| stub::body(imp, k as u32, err_global, mem))
        .collect();
    let wasm = rewrite::rewrite(original, &info, stubs, &add)?;
    Ok(Prepared {
        wasm,
        imports: info.imports.clone(),
        info,
    })
}

fn mem_arg(align: u32) -> MemArg {
    MemArg {
        offset: 0,
        align,
        target: wasm_encoder::MemArgTarget::Memory(0),
        ordering: None,
    }
}
