//! An app as a shape: loaded and rewritten once, then per instance its
//! inputs set up, per rep its outputs cleared, and after every rep its
//! checksum and output verified, so the scheduler, statistics, counters and
//! null control treat it like any synthetic loop.

use super::catalog::{artifact, read, AppSpec, Driver, HASH_CHUNK, HASH_SEED, SHA256_DIGEST};
use super::prepare::{
    prepare, zstd_checksum, Injector, Inputs, Prepared, GET_DST, SET_DST, SET_SRC,
};
use super::{stub, AppError};
use crate::engines::Instance;
use crate::shapes::{expect_return, Body, Declared, HookError, Mismatch, Params, Shape, Stream};
use std::path::Path;
use std::sync::Arc;

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
    pub fn load(spec: &'static AppSpec) -> Result<Self, AppError> {
        Self::load_with(spec, None)
    }

    pub fn load_with(spec: &'static AppSpec, inject: Option<Injector>) -> Result<Self, AppError> {
        let path = artifact(spec)?;
        let original = read(&path)?;
        let inputs = load_inputs(spec, &path)?;
        let prepared =
            prepare(spec, &original, &inputs, inject).map_err(|e| AppError::Prepare {
                app: spec.name,
                source: Box::new(e),
            })?;
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

fn load_inputs(spec: &AppSpec, path: &Path) -> Result<Inputs, AppError> {
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
