//! Linear-memory access: a byte lookup table, an i32 load stream and an i32
//! store stream. The `shared` family reuses these bodies on a shared memory,
//! so an ordinary and a shared access differ in nothing but the memory type.
//!
//! Addresses are masked with `bytes - 1`, so any iteration count stays inside
//! the working set; `--bytes` must therefore be a power of two.

use super::data::{self, Source};
use super::skeleton::LoopModule;
use super::*;

pub fn shapes() -> Vec<Box<dyn Shape>> {
    vec![
        Box::new(Lut),
        Box::new(LoadStream { shared: false }),
        Box::new(StoreStream { shared: false }),
    ]
}

const SRC_SEED: u64 = 0x10AD;
const STORE_SEED: i32 = 0x2F6B_1A35;

/// The bytes the loads read: the whole working set.
fn source(bytes: u64) -> data::Data {
    data::bytes(Source::Stream(SRC_SEED), bytes as usize)
}

fn lut_table() -> Vec<u8> {
    // Never zero, so a destination byte that was never written is caught.
    (0..256u32)
        .map(|b| ((b * 167 + 13) % 255 + 1) as u8)
        .collect()
}

struct Lut;

impl Shape for Lut {
    fn name(&self) -> &str {
        "lut"
    }
    fn prices(&self) -> &str {
        "dst[i] = lut[src[i]] over bytes: two dependent byte loads and a byte store"
    }
    fn default_iters(&self, p: &Params) -> u64 {
        p.bytes / 4
    }
    fn declared(&self, _p: &Params) -> Declared {
        Declared {
            loads: 2,
            stores: 1,
            bytes: 3,
            ..Declared::loop_body(8, 0)
        }
    }
    fn wat(&self, p: &Params, body: Body) -> String {
        let mask = p.bytes - 1;
        let dst = DATA_BASE + p.bytes;
        let b = format!(
            "      local.get $i\n      i32.const {mask}\n      i32.and\n      local.tee $p\n      local.get $p\n      i32.load8_u offset={DATA_BASE}\n      i32.load8_u offset={TABLE_BASE}\n      i32.store8 offset={dst}\n"
        );
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
        DATA_BASE + 2 * p.bytes
    }
    fn init(&self, p: &Params, inst: &mut dyn Instance) -> Result<(), HookError> {
        inst.write_memory(TABLE_BASE, &lut_table())?;
        inst.write_memory(DATA_BASE, &source(p.bytes))?;
        Ok(())
    }
    fn reset(&self, p: &Params, iters: u64, inst: &mut dyn Instance) -> Result<(), HookError> {
        let len = iters.min(p.bytes) as usize;
        inst.write_memory(DATA_BASE + p.bytes, &vec![0u8; len])?;
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
        let len = iters.min(p.bytes) as usize;
        let table = lut_table();
        let src = source(p.bytes);
        let want: Vec<u8> = src[..len].iter().map(|&b| table[b as usize]).collect();
        expect_region(inst, "dst", DATA_BASE + p.bytes, &want)
    }
}

pub struct LoadStream {
    pub shared: bool,
}

impl Shape for LoadStream {
    fn name(&self) -> &str {
        if self.shared {
            "shared_load_stream"
        } else {
            "load_stream"
        }
    }
    fn prices(&self) -> &str {
        if self.shared {
            "one i32 load per iteration from a shared memory (compare load_stream)"
        } else {
            "one i32 load per iteration, summed over the working set"
        }
    }
    fn default_iters(&self, p: &Params) -> u64 {
        p.bytes / 4
    }
    fn declared(&self, _p: &Params) -> Declared {
        Declared {
            loads: 1,
            bytes: 4,
            ..Declared::loop_body(9, 0)
        }
    }
    fn wat(&self, p: &Params, body: Body) -> String {
        let mask = p.bytes - 1;
        let b = format!(
            "      local.get $acc\n      local.get $i\n      i32.const 2\n      i32.shl\n      i32.const {mask}\n      i32.and\n      i32.load offset={DATA_BASE}\n      i32.add\n      local.set $acc\n"
        );
        LoopModule {
            pages: pages_for(self.memory_bytes(p)),
            shared: self.shared,
            items: "",
            locals: "(local $acc i32)",
            pre: "",
            body: &b,
            post: "    local.get $acc",
        }
        .render(body)
    }
    fn memory_bytes(&self, p: &Params) -> u64 {
        DATA_BASE + p.bytes
    }
    fn init(&self, p: &Params, inst: &mut dyn Instance) -> Result<(), HookError> {
        inst.write_memory(DATA_BASE, &source(p.bytes))?;
        Ok(())
    }
    fn verify(
        &self,
        p: &Params,
        iters: u64,
        ret: Option<i32>,
        _inst: &mut dyn Instance,
    ) -> Result<(), HookError> {
        let src = source(p.bytes);
        let sum = (0..iters as usize).fold(0i32, |a, i| a.wrapping_add(word_at(&src, i)));
        expect_return("sum of loads", sum, ret)
    }
}

pub struct StoreStream {
    pub shared: bool,
}

impl StoreStream {
    /// The four words of record `i`.
    fn record(i: u64) -> [i32; 4] {
        let v = (i as i32).wrapping_add(1).wrapping_mul(STORE_SEED);
        [v, v ^ 1, v ^ 2, v ^ 3]
    }
}

impl Shape for StoreStream {
    fn name(&self) -> &str {
        if self.shared {
            "shared_store_stream"
        } else {
            "store_stream"
        }
    }
    fn prices(&self) -> &str {
        if self.shared {
            "four i32 stores per iteration into a shared memory (compare store_stream)"
        } else {
            "four i32 stores per iteration: the per-op store path (compare memory_copy)"
        }
    }
    fn default_iters(&self, p: &Params) -> u64 {
        p.bytes / 16
    }
    fn declared(&self, _p: &Params) -> Declared {
        Declared {
            stores: 4,
            bytes: 16,
            ..Declared::loop_body(30, 0)
        }
    }
    fn wat(&self, p: &Params, body: Body) -> String {
        let mask = p.bytes - 1;
        let mut b = format!(
            "      local.get $i\n      i32.const 4\n      i32.shl\n      i32.const {mask}\n      i32.and\n      local.set $p\n      local.get $i\n      i32.const 1\n      i32.add\n      local.get $seed\n      i32.mul\n      local.set $v\n      local.get $p\n      local.get $v\n      i32.store offset={DATA_BASE}\n"
        );
        for k in 1..4 {
            b += &format!(
                "      local.get $p\n      local.get $v\n      i32.const {k}\n      i32.xor\n      i32.store offset={}\n",
                DATA_BASE + 4 * k
            );
        }
        LoopModule {
            pages: pages_for(self.memory_bytes(p)),
            shared: self.shared,
            items: "",
            locals: "(local $p i32) (local $v i32) (local $seed i32)",
            pre: "    i32.const 0\n    i32.load\n    local.set $seed",
            body: &b,
            post: "    local.get $v",
        }
        .render(body)
    }
    fn memory_bytes(&self, p: &Params) -> u64 {
        DATA_BASE + p.bytes
    }
    fn init(&self, _p: &Params, inst: &mut dyn Instance) -> Result<(), HookError> {
        inst.write_memory(PARAM_BASE, &STORE_SEED.to_le_bytes())?;
        Ok(())
    }
    fn reset(&self, p: &Params, iters: u64, inst: &mut dyn Instance) -> Result<(), HookError> {
        let len = (iters * 16).min(p.bytes) as usize;
        inst.write_memory(DATA_BASE, &vec![0u8; len])?;
        Ok(())
    }
    fn verify(
        &self,
        p: &Params,
        iters: u64,
        ret: Option<i32>,
        inst: &mut dyn Instance,
    ) -> Result<(), HookError> {
        expect_return("last stored value", Self::record(iters - 1)[0], ret)?;
        // Later passes over the working set overwrite earlier ones.
        let records = (p.bytes / 16).min(iters);
        let mut want = vec![0i32; records as usize * 4];
        for i in iters.saturating_sub(p.bytes / 16)..iters {
            let slot = (i % (p.bytes / 16)) as usize;
            want[slot * 4..slot * 4 + 4].copy_from_slice(&Self::record(i));
        }
        expect_region(inst, "store destination", DATA_BASE, &words_to_bytes(&want))
    }
}
