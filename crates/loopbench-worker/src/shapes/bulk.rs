//! Bulk memory: `memory.copy` and `memory.fill` of 4 KiB chunks over the
//! same bytes that `store_stream` writes. MB/s compares across these shapes
//! (and only these) because they move the same bytes by different routes:
//! the per-op store path against the bulk floor.

use super::data::{self, Source};
use super::skeleton::LoopModule;
use super::*;

pub fn shapes() -> Vec<Box<dyn Shape>> {
    vec![
        Box::new(Bulk { fill: false }),
        Box::new(Bulk { fill: true }),
    ]
}

const CHUNK: u64 = 4096;
const SRC_SEED: u64 = 0xB01C;

struct Bulk {
    fill: bool,
}

fn fill_byte(i: u64) -> u8 {
    (i as u8) | 1
}

impl Shape for Bulk {
    fn name(&self) -> &str {
        if self.fill {
            "memory_fill"
        } else {
            "memory_copy"
        }
    }
    fn prices(&self) -> &str {
        if self.fill {
            "memory.fill of 4 KiB per iteration (the bulk floor for stores)"
        } else {
            "memory.copy of 4 KiB per iteration (the bulk floor; compare store_stream's MB/s)"
        }
    }
    fn default_iters(&self, p: &Params) -> u64 {
        (p.bytes / CHUNK).max(1)
    }
    fn declared(&self, _p: &Params) -> Declared {
        Declared {
            bytes: CHUNK,
            ..Declared::loop_body(if self.fill { 12 } else { 13 }, 0)
        }
    }
    fn wat(&self, p: &Params, body: Body) -> String {
        let mask = p.bytes - 1;
        let dst = self.dst(p);
        let b = if self.fill {
            format!(
                "      local.get $i\n      i32.const 12\n      i32.shl\n      i32.const {mask}\n      i32.and\n      i32.const {dst}\n      i32.add\n      local.get $i\n      i32.const 1\n      i32.or\n      i32.const {CHUNK}\n      memory.fill\n"
            )
        } else {
            format!(
                "      local.get $i\n      i32.const 12\n      i32.shl\n      i32.const {mask}\n      i32.and\n      local.tee $p\n      i32.const {dst}\n      i32.add\n      local.get $p\n      i32.const {DATA_BASE}\n      i32.add\n      i32.const {CHUNK}\n      memory.copy\n"
            )
        };
        LoopModule {
            pages: pages_for(self.memory_bytes(p)),
            shared: false,
            items: "",
            locals: "(local $p i32)",
            pre: "",
            body: &b,
            post: "    local.get $i",
        }
        .render(body)
    }
    fn memory_bytes(&self, p: &Params) -> u64 {
        DATA_BASE + 2 * p.bytes.max(CHUNK)
    }
    fn init(&self, p: &Params, inst: &mut dyn Instance) -> Result<(), HookError> {
        if !self.fill {
            inst.write_memory(
                DATA_BASE,
                &data::bytes(Source::Stream(SRC_SEED), p.bytes.max(CHUNK) as usize),
            )?;
        }
        Ok(())
    }
    fn reset(&self, p: &Params, iters: u64, inst: &mut dyn Instance) -> Result<(), HookError> {
        let len = (iters * CHUNK).min(p.bytes.max(CHUNK)) as usize;
        inst.write_memory(self.dst(p), &vec![0u8; len])?;
        Ok(())
    }
    fn verify(
        &self,
        p: &Params,
        iters: u64,
        ret: Option<i32>,
        inst: &mut dyn Instance,
    ) -> Result<(), HookError> {
        expect_return("final index", iters as i32, ret)?;
        let ws = p.bytes.max(CHUNK);
        let len = (iters * CHUNK).min(ws) as usize;
        if !self.fill {
            let want = data::bytes(Source::Stream(SRC_SEED), len);
            return expect_region(inst, "bulk destination", self.dst(p), &want);
        }
        let chunks = ws / CHUNK;
        let mut want = vec![0u8; len];
        for i in iters.saturating_sub(chunks)..iters {
            let at = ((i % chunks) * CHUNK) as usize;
            want[at..at + CHUNK as usize].fill(fill_byte(i));
        }
        expect_region(inst, "bulk destination", self.dst(p), &want)
    }
}

impl Bulk {
    fn dst(&self, p: &Params) -> u64 {
        DATA_BASE + p.bytes.max(CHUNK)
    }
}
