//! Real applications as workloads: the recipes in `apps/`, turned into
//! shapes so that whole-app A/B uses the same scheduler, statistics,
//! counters and null control as the synthetic loops.
//!
//! An app is a module that, after loopbench's rewrite, exports
//! `run(n) -> i32` (n workload steps, returning a checksum) and `memory`,
//! and imports nothing:
//!
//! * C libraries (zlib, Lua) are built by their recipes behind a small C
//!   wrapper of ours that exports `run` itself.
//! * Prebuilt modules from npm (hash-wasm's SHA-256, zstddec) export their
//!   own API; a [`Driver`] injects a `run(n)` function that calls that API
//!   the way its JavaScript glue does, plus setters for the pointers the host
//!   obtains from the module's own allocator during the untimed init.
//! * Imports become stubs ([`stub`]); the rewrite ([`rewrite`]) keeps every
//!   original index, so the app's own code is copied byte for byte.
//!
//! Every rep is verified: the checksum must equal the recipe's expected
//! value, and for the prebuilt modules the output in memory is compared with
//! an independent reference (the SHA-256 digest, the bytes zstd was given).
//!
//! Artifacts are built by `scripts/apps/build.sh` into `target/apps/` (or
//! `$LOOPBENCH_APPS_OUT`); when one is missing, loopbench runs the recipe
//! and passes on its one-line error (which names what to install).

pub mod error;
pub mod profile;
pub mod project;
pub mod rewrite;
pub mod stub;
pub mod warm;

use crate::engines::Instance;
use crate::error::{EngineError, Error};
use crate::shapes::{expect_return, Body, Declared, HookError, Mismatch, Params, Shape, Stream};
pub use error::AppError;
use rewrite::{Additions, Import, ModuleInfo, Sig};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use wasm_encoder::{BlockType, ConstExpr, ExportKind, Function, GlobalType, MemArg, ValType};

/// How the app's `run(n)` comes to be.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Driver {
    /// The module exports `run(n) -> i32` itself (our C wrapper).
    Native,
    /// hash-wasm's `Hash_*` API: `n` updates of one chunk, then the digest.
    HashWasm,
    /// zstddec: `n` decompressions of one frame.
    Zstd,
}

/// One recipe in `apps/`.
#[derive(Clone, Copy, Debug)]
pub struct AppSpec {
    pub name: &'static str,
    pub about: &'static str,
    /// Registry, package and pinned version.
    pub source: &'static str,
    pub license: &'static str,
    /// Workload steps of one rep (`run(steps)`).
    pub steps: u64,
    /// `run(steps)` on every engine (for [`Driver::Zstd`] the checksum is
    /// computed from the input instead, see [`zstd_checksum`]).
    pub expected: i32,
    pub driver: Driver,
}

/// hash-wasm workload: this many bytes per `Hash_Update`.
pub const HASH_CHUNK: usize = 8192;
const HASH_SEED: u64 = 0x5A_256;
/// SHA-256 of `HASH_CHUNK` bytes of `Stream::new(HASH_SEED)` repeated
/// `steps` times, from Python's hashlib (see apps/sha256/README.md).
const SHA256_DIGEST: &str = "deb8ea2cbedadacbdd1d0f07f8ff07b8f8bff575ebb9148d4cd9a5a93267b0cd";

/// The catalog, in the order `app list` prints it.
pub const APPS: &[AppSpec] = &[
    AppSpec {
        name: "zlib",
        about: "deflate (level 6) + inflate of 32 KiB text blocks, round trip checked",
        source: "crates.io libz-sys =1.1.33 (vendored zlib C sources) + apps/zlib/wrapper.c",
        license: "zlib license (zlib); wrapper MIT OR Apache-2.0",
        steps: 2,
        expected: 222861457,
        driver: Driver::Native,
    },
    AppSpec {
        name: "lua",
        about: "Lua 5.4.9 interpreter running apps/lua/workload.lua (tables, strings, closures, metatables)",
        source: "crates.io lua-src =551.1.0 (Lua 5.4.9 C sources) + apps/lua/wrapper.c",
        license: "MIT (Lua); wrapper MIT OR Apache-2.0",
        steps: 2,
        expected: 60610254,
        driver: Driver::Native,
    },
    AppSpec {
        name: "sqlite",
        about: "SQLite in-memory database: 2000 inserts per step, an index, a join with aggregates, indexed range queries, a GROUP BY on text",
        source: "crates.io libsqlite3-sys =0.40.0 (bundled SQLite 3.54.1 amalgamation) + apps/sqlite/wrapper.c",
        license: "public domain (SQLite); wrapper MIT OR Apache-2.0",
        steps: 2,
        // apps/sqlite/reference.py 2 (Python's sqlite3, same rows and SQL).
        expected: -1085592089,
        driver: Driver::Native,
    },
    AppSpec {
        name: "sha256",
        about: "hash-wasm's SHA-256 over n x 8 KiB, digest checked",
        source: "npm hash-wasm@4.13.0 (prebuilt module, base64 in dist/sha256.umd.min.js)",
        license: "MIT (hash-wasm)",
        steps: 64,
        expected: 753580254,
        driver: Driver::HashWasm,
    },
    AppSpec {
        name: "zstd",
        about: "zstddec's ZSTD_decompress of a 1 MiB frame, output compared with the input",
        source: "npm zstddec@0.3.4 (prebuilt Emscripten module, base64 in dist/zstddec.mjs)",
        license: "MIT (zstddec), BSD (Zstandard)",
        steps: 4,
        expected: 0,
        driver: Driver::Zstd,
    },
];

pub fn names() -> Vec<&'static str> {
    APPS.iter().map(|a| a.name).collect()
}

pub fn find(name: &str) -> Result<&'static AppSpec, Error> {
    APPS.iter().find(|a| a.name == name).ok_or_else(|| {
        Error::Usage(format!(
            "unknown app `{name}` (valid: {})",
            names().join(", ")
        ))
    })
}

/// The workspace root (where `apps/` and `scripts/` live).
pub fn root() -> PathBuf {
    std::env::var_os("LOOPBENCH_ROOT")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            let here = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
            here.canonicalize().unwrap_or(here)
        })
}

/// Where built app artifacts are cached.
pub fn artifacts_dir() -> PathBuf {
    std::env::var_os("LOOPBENCH_APPS_OUT")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("target/apps"))
}

/// The app's module file, built by its recipe if missing.
pub fn artifact(spec: &AppSpec) -> Result<PathBuf, Error> {
    let dir = artifacts_dir();
    let path = dir.join(format!("{}.wasm", spec.name));
    if path.is_file() {
        return Ok(path);
    }
    let script = root().join("scripts/apps/build.sh");
    if !script.is_file() {
        return Err(Error::Usage(format!(
            "app {} is not built ({} missing) and {} was not found; set LOOPBENCH_ROOT to the loopbench source tree",
            spec.name,
            path.display(),
            script.display()
        )));
    }
    let out = std::process::Command::new("bash")
        .arg(&script)
        .arg(spec.name)
        .env("LOOPBENCH_APPS_OUT", &dir)
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| Error::io(format!("running {}", script.display()), e))?;
    if !out.status.success() || !path.is_file() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        let line = stderr
            .lines()
            .rev()
            .find(|l| l.starts_with("error:"))
            .or_else(|| stderr.lines().last());
        return Err(Error::Usage(format!(
            "building app {} failed: {}",
            spec.name,
            line.unwrap_or("the recipe printed nothing")
                .trim_start_matches("error: ")
        )));
    }
    Ok(path)
}

fn read(path: &Path) -> Result<Vec<u8>, Error> {
    std::fs::read(path).map_err(|e| Error::io(format!("reading {}", path.display()), e))
}

/// Data a driver needs besides the module.
#[derive(Clone, Debug, Default)]
pub struct Inputs {
    /// zstd: the compressed frame and the bytes it decompresses to.
    pub compressed: Vec<u8>,
    pub original: Vec<u8>,
    /// sha256: the chunk hashed `steps` times.
    pub chunk: Vec<u8>,
}

/// Exported names loopbench adds to app modules.
pub const SET_SRC: &str = "__loopbench_set_src";
pub const SET_DST: &str = "__loopbench_set_dst";
pub const GET_DST: &str = "__loopbench_get_dst";

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
    add.globals.push((
        GlobalType {
            val_type: ValType::I32,
            mutable: true,
            shared: false,
        },
        ConstExpr::i32_const(0),
    ));
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
                        found: s,
                        want,
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
                add.globals.push((
                    GlobalType {
                        val_type: ValType::I32,
                        mutable: true,
                        shared: false,
                    },
                    ConstExpr::i32_const(0),
                ));
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

/// The zstd workload's expected checksum, computed from the original bytes
/// the same way the injected driver does.
pub fn zstd_checksum(original: &[u8], steps: u64) -> i32 {
    let dlen = original.len() as u32;
    let mut acc: u32 = 0;
    for i in 0..steps as u32 {
        let off = (i.wrapping_mul(4099) % (dlen - 4)) as usize;
        let word = u32::from_le_bytes([
            original[off],
            original[off + 1],
            original[off + 2],
            original[off + 3],
        ]);
        acc = acc.wrapping_mul(31).wrapping_add(dlen).wrapping_add(word);
    }
    acc as i32
}

/// An app, loaded and rewritten, ready to be used as a shape.
pub struct AppShape {
    pub spec: &'static AppSpec,
    pub prepared: Prepared,
    pub inputs: Arc<Inputs>,
    /// Steps per rep; the recipe's own count unless a mode says otherwise.
    pub steps: u64,
}

impl AppShape {
    /// Load (building if needed) and rewrite the app.
    pub fn load(spec: &'static AppSpec) -> Result<Self, Error> {
        Self::load_with(spec, None)
    }

    pub fn load_with(spec: &'static AppSpec, inject: Option<Injector>) -> Result<Self, Error> {
        let path = artifact(spec)?;
        let original = read(&path)?;
        let inputs = load_inputs(spec, &path)?;
        let prepared = prepare(spec, &original, &inputs, inject)
            .map_err(|e| Error::Usage(format!("app {}: {e}", spec.name)))?;
        Ok(AppShape {
            spec,
            prepared,
            inputs: Arc::new(inputs),
            steps: spec.steps,
        })
    }

    /// What `run(steps)` must return, when it is known.
    pub fn expected(&self, steps: u64) -> Option<i32> {
        match self.spec.driver {
            Driver::Zstd => Some(zstd_checksum(&self.inputs.original, steps)),
            _ if steps == self.spec.steps => Some(self.spec.expected),
            _ => None,
        }
    }

    /// Untimed setup of a fresh instance: allocate and fill the inputs.
    pub fn setup(&self, inst: &mut dyn Instance) -> Result<(), HookError> {
        if self.spec.driver == Driver::Zstd {
            let src = inst
                .call("malloc", Some(self.inputs.compressed.len() as i32), None)?
                .unwrap_or(0);
            let dst = inst
                .call("malloc", Some(self.inputs.original.len() as i32), None)?
                .unwrap_or(0);
            if src == 0 || dst == 0 {
                return Err(HookError::Mismatch(Mismatch::new(
                    "zstddec malloc",
                    "a pointer",
                    "0",
                )));
            }
            inst.write_memory(src as u32 as u64, &self.inputs.compressed)?;
            inst.call(SET_SRC, Some(src), None)?;
            inst.call(SET_DST, Some(dst), None)?;
        }
        Ok(())
    }

    fn zstd_dst(&self, inst: &mut dyn Instance) -> Result<u64, HookError> {
        Ok(inst.call(GET_DST, None, None)?.unwrap_or(0) as u32 as u64)
    }

    /// Before every rep: restore inputs the previous rep overwrote and clear outputs.
    pub fn before_rep(&self, inst: &mut dyn Instance) -> Result<(), HookError> {
        if self.spec.driver == Driver::HashWasm {
            let buf = inst.call("Hash_GetBuffer", None, None)?.unwrap_or(0);
            inst.write_memory(buf as u32 as u64, &self.inputs.chunk)?;
        }
        if self.spec.driver == Driver::Zstd {
            let dst = self.zstd_dst(inst)?;
            inst.write_memory(dst, &vec![0u8; self.inputs.original.len()])?;
        }
        Ok(())
    }

    /// After every rep: the checksum and, where there is one, the output.
    pub fn check(
        &self,
        steps: u64,
        ret: Option<i32>,
        inst: &mut dyn Instance,
    ) -> Result<(), HookError> {
        if let (Driver::Zstd, Some(code @ -200..=-1)) = (self.spec.driver, ret) {
            return Err(HookError::Mismatch(Mismatch::new(
                "zstddec ZSTD_decompress result",
                format!("{} bytes", self.inputs.original.len()),
                format!("zstd error code {}", -code),
            )));
        }
        match self.expected(steps) {
            Some(want) => expect_return(
                &format!("app {} checksum of run({steps})", self.spec.name),
                want,
                ret,
            )?,
            None => {
                return Err(HookError::Mismatch(Mismatch::new(
                    format!("app {} run({steps})", self.spec.name),
                    format!(
                        "a known checksum (the recipe checks run({}))",
                        self.spec.steps
                    ),
                    "none",
                )))
            }
        }
        if self.spec.driver == Driver::HashWasm {
            let buf = inst.call("Hash_GetBuffer", None, None)?.unwrap_or(0);
            let got = inst.read_memory(buf as u32 as u64, 32)?;
            let hex: String = got.iter().map(|b| format!("{b:02x}")).collect();
            if steps == self.spec.steps && hex != SHA256_DIGEST {
                return Err(HookError::Mismatch(Mismatch::new(
                    "sha256 digest",
                    SHA256_DIGEST,
                    hex,
                )));
            }
        }
        if self.spec.driver == Driver::Zstd {
            let dst = self.zstd_dst(inst)?;
            crate::shapes::expect_region(inst, "zstd output", dst, &self.inputs.original)?;
        }
        Ok(())
    }

    /// After a failed call: a stub's explanation, if a stub failed.
    pub fn explain(&self, inst: &mut dyn Instance) -> Option<String> {
        let code = inst.call(stub::ERROR_EXPORT, None, None).ok()??;
        stub::explain(code, &self.prepared.imports)
    }

    pub fn memory_bytes(&self) -> u64 {
        self.prepared
            .info
            .memory0
            .map(|m| m.initial * 65536)
            .unwrap_or(0)
    }
}

fn load_inputs(spec: &AppSpec, path: &Path) -> Result<Inputs, Error> {
    let dir = path.parent().unwrap_or(Path::new("."));
    Ok(match spec.driver {
        Driver::Native => Inputs::default(),
        Driver::HashWasm => Inputs {
            chunk: Stream::new(HASH_SEED).bytes(HASH_CHUNK),
            ..Inputs::default()
        },
        Driver::Zstd => Inputs {
            compressed: read(&dir.join("zstd-input.zst"))?,
            original: read(&dir.join("zstd-input.bin"))?,
            chunk: Vec::new(),
        },
    })
}

impl Shape for AppShape {
    fn name(&self) -> &str {
        self.spec.name
    }
    fn prices(&self) -> &str {
        self.spec.about
    }
    fn default_iters(&self, _p: &Params) -> u64 {
        self.steps
    }
    fn declared(&self, _p: &Params) -> Declared {
        Declared {
            per: 1,
            ..Declared::default()
        }
    }
    fn has_declared_counts(&self) -> bool {
        false
    }
    fn app_steps(&self) -> Option<u64> {
        Some(self.steps)
    }

    fn counted_in_session(&self) -> bool {
        false
    }
    fn wasm(&self, _p: &Params) -> Result<Vec<u8>, String> {
        Ok(self.prepared.wasm.clone())
    }
    fn wat(&self, _p: &Params, _body: Body) -> String {
        wasmprinter::print_bytes(&self.prepared.wasm)
            .unwrap_or_else(|e| format!(";; cannot print: {e}"))
    }
    fn memory_bytes(&self, _p: &Params) -> u64 {
        AppShape::memory_bytes(self)
    }
    fn init(&self, _p: &Params, inst: &mut dyn Instance) -> Result<(), HookError> {
        self.setup(inst)
    }
    fn reset(&self, _p: &Params, _iters: u64, inst: &mut dyn Instance) -> Result<(), HookError> {
        self.before_rep(inst)
    }
    fn verify(
        &self,
        _p: &Params,
        iters: u64,
        ret: Option<i32>,
        inst: &mut dyn Instance,
    ) -> Result<(), HookError> {
        self.check(iters, ret, inst)
    }
    fn explain_failure(&self, inst: &mut dyn Instance) -> Option<String> {
        self.explain(inst)
    }
}

/// Engine errors from app hooks, with the stub's explanation when there is one.
pub fn engine_error(e: EngineError) -> Error {
    Error::Usage(e.to_string())
}
