//! An app recipe as a shape: its module as the host rewrote it (imports
//! stubbed, a `run(n)` driver added), what the driver is fed, and the
//! checksum and output every rep must give. All of it travels to a worker
//! whole, so an app runs as `run`'s shapes do: in worker processes, in code
//! layout variants, under their deadlines (a `run` that never returns is a
//! killed worker and one line, not a hung session).

use super::{expect_region, expect_return, Body, Declared, HookError, Mismatch, Params, Shape};
use crate::engines::Instance;
use serde::{Deserialize, Serialize};

/// Exported `() -> i32` by every prepared app: 0, or `1 + index` of the
/// function import whose stub failed.
pub const STUB_ERROR_EXPORT: &str = "__loopbench_stub_error";
/// Exported by a zstd app: where its input frame and its output go.
pub const SET_SRC: &str = "__loopbench_set_src";
pub const SET_DST: &str = "__loopbench_set_dst";
pub const GET_DST: &str = "__loopbench_get_dst";

/// A recipe as it travels to a worker.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RecipeSource {
    pub name: String,
    pub about: String,
    /// The prepared module: it imports nothing.
    pub wasm: Vec<u8>,
    /// Workload steps of one rep (`run(steps)`).
    pub steps: u64,
    /// What `run(steps)` returns on every engine.
    pub checksum: i32,
    pub feed: Feed,
    /// The original module's function imports (`module.name`, in index
    /// order), so a stub's error code names the one the app called.
    pub stubbed: Vec<String>,
    pub memory_bytes: u64,
}

/// What the host gives the module around each rep, and what it checks
/// besides the checksum.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Feed {
    /// The module's own `run(n)` needs nothing.
    Nothing,
    /// hash-wasm: this chunk in the hasher's buffer before every rep, and
    /// this digest (hex) in it after `run(steps)`.
    HashChunk { chunk: Vec<u8>, digest: String },
    /// zstddec: the frame in memory once, its decompressed bytes out every
    /// rep (the output cleared before).
    Zstd {
        compressed: Vec<u8>,
        original: Vec<u8>,
    },
}

/// The zstd driver's checksum of `steps` decompressions, computed from the
/// original bytes as the injected `run` computes it.
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

/// A recipe ready to run as a shape.
pub struct Recipe {
    source: RecipeSource,
}

impl Recipe {
    pub fn new(source: RecipeSource) -> Self {
        Recipe { source }
    }

    pub fn source(&self) -> &RecipeSource {
        &self.source
    }

    /// Untimed setup of a fresh instance: the driver's inputs allocated by
    /// the module's own allocator and filled.
    pub fn setup(&self, inst: &mut dyn Instance) -> Result<(), HookError> {
        if let Feed::Zstd {
            compressed,
            original,
        } = &self.source.feed
        {
            let src = inst
                .call("malloc", Some(compressed.len() as i32), None)?
                .unwrap_or(0);
            let dst = inst
                .call("malloc", Some(original.len() as i32), None)?
                .unwrap_or(0);
            if src == 0 || dst == 0 {
                return Err(HookError::Mismatch(Mismatch::new(
                    "zstddec malloc",
                    "a pointer",
                    "0",
                )));
            }
            inst.write_memory(src as u32 as u64, compressed)?;
            inst.call(SET_SRC, Some(src), None)?;
            inst.call(SET_DST, Some(dst), None)?;
        }
        Ok(())
    }

    fn zstd_dst(inst: &mut dyn Instance) -> Result<u64, HookError> {
        Ok(inst.call(GET_DST, None, None)?.unwrap_or(0) as u32 as u64)
    }

    fn hash_buffer(inst: &mut dyn Instance) -> Result<u64, HookError> {
        Ok(inst.call("Hash_GetBuffer", None, None)?.unwrap_or(0) as u32 as u64)
    }

    /// Before every rep: restore the input the previous rep overwrote and
    /// clear the output.
    pub fn before_rep(&self, inst: &mut dyn Instance) -> Result<(), HookError> {
        match &self.source.feed {
            Feed::Nothing => {}
            Feed::HashChunk { chunk, .. } => {
                let buf = Self::hash_buffer(inst)?;
                inst.write_memory(buf, chunk)?;
            }
            Feed::Zstd { original, .. } => {
                let dst = Self::zstd_dst(inst)?;
                inst.write_memory(dst, &vec![0u8; original.len()])?;
            }
        }
        Ok(())
    }

    /// After every rep: the checksum and, where the feed has one, the output.
    pub fn check(
        &self,
        steps: u64,
        ret: Option<i32>,
        inst: &mut dyn Instance,
    ) -> Result<(), HookError> {
        let name = &self.source.name;
        if let (Feed::Zstd { original, .. }, Some(code @ -200..=-1)) = (&self.source.feed, ret) {
            return Err(HookError::Mismatch(Mismatch::new(
                "zstddec ZSTD_decompress result",
                format!("{} bytes", original.len()),
                format!("zstd error code {}", -code),
            )));
        }
        let want = match &self.source.feed {
            Feed::Zstd { original, .. } => zstd_checksum(original, steps),
            _ if steps == self.source.steps => self.source.checksum,
            _ => {
                return Err(HookError::Mismatch(Mismatch::new(
                    format!("app {name} run({steps})"),
                    format!(
                        "a known checksum (the recipe checks run({}))",
                        self.source.steps
                    ),
                    "none",
                )))
            }
        };
        expect_return(&format!("app {name} checksum of run({steps})"), want, ret)?;
        match &self.source.feed {
            Feed::Nothing => {}
            Feed::HashChunk { digest, .. } => {
                let buf = Self::hash_buffer(inst)?;
                let got = inst.read_memory(buf, 32)?;
                let hex: String = got.iter().map(|b| format!("{b:02x}")).collect();
                if &hex != digest {
                    return Err(HookError::Mismatch(Mismatch::new(
                        "sha256 digest",
                        digest,
                        hex,
                    )));
                }
            }
            Feed::Zstd { original, .. } => {
                let dst = Self::zstd_dst(inst)?;
                expect_region(inst, "zstd output", dst, original)?;
            }
        }
        Ok(())
    }

    /// After a failed call: which stubbed import the app called, if a stub
    /// failed.
    pub fn explain(&self, inst: &mut dyn Instance) -> Option<String> {
        let code = inst.call(STUB_ERROR_EXPORT, None, None).ok()??;
        stub_failure(code, &self.source.stubbed)
    }
}

/// What a stub error code says: the import the app called (`stubbed` as in
/// [`RecipeSource::stubbed`]); 0 says nothing.
pub fn stub_failure(code: i32, stubbed: &[String]) -> Option<String> {
    let import = stubbed.get(usize::try_from(code).ok()?.checked_sub(1)?)?;
    Some(format!(
        "the app called import {import}, which loopbench's stub host cannot serve (see apps/README.md, \"stub host\")"
    ))
}

impl Shape for Recipe {
    fn name(&self) -> &str {
        &self.source.name
    }
    fn prices(&self) -> &str {
        &self.source.about
    }
    fn default_iters(&self, _p: &Params) -> u64 {
        self.source.steps
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
        Some(self.source.steps)
    }
    fn counted_in_session(&self) -> bool {
        false
    }
    fn recipe(&self) -> Option<&Recipe> {
        Some(self)
    }
    fn wasm(&self, _p: &Params) -> Result<Vec<u8>, String> {
        Ok(self.source.wasm.clone())
    }
    fn wat(&self, _p: &Params, _body: Body) -> String {
        wasmprinter::print_bytes(&self.source.wasm)
            .unwrap_or_else(|e| format!(";; cannot print: {e}"))
    }
    fn memory_bytes(&self, _p: &Params) -> u64 {
        self.source.memory_bytes
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
