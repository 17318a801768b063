//! Shared memory (threads proposal): the load and store streams on a shared
//! memory, and an atomic read-modify-write stream. Set beside `load_stream`
//! and `store_stream`, they price what an engine pays for a shared access
//! (the seed's tinywasm lock case). Only engines with the threads proposal
//! run them; the others report `skipped`.

use super::data::{self, Source};
use super::memory::{LoadStream, StoreStream};
use super::skeleton::LoopModule;
use super::*;

pub fn shapes() -> Vec<Box<dyn Shape>> {
    vec![
        Box::new(StoreStream { shared: true }),
        Box::new(LoadStream { shared: true }),
        Box::new(AtomicRmw),
    ]
}

const RMW_SEED: u64 = 0xA70C;

struct AtomicRmw;

impl AtomicRmw {
    fn initial(p: &Params) -> data::Data {
        data::bytes(Source::Stream(RMW_SEED), p.bytes as usize)
    }
}

impl Shape for AtomicRmw {
    fn name(&self) -> &str {
        "atomic_rmw"
    }
    fn prices(&self) -> &str {
        "one i32.atomic.rmw.add per iteration on a shared memory, old values summed"
    }
    fn default_iters(&self, p: &Params) -> u64 {
        p.bytes / 4
    }
    fn declared(&self, _p: &Params) -> Declared {
        Declared {
            atomics: 1,
            bytes: 8,
            ..Declared::loop_body(12, 0)
        }
    }
    fn wat(&self, p: &Params, body: Body) -> String {
        let mask = p.bytes - 1;
        let b = format!(
            "      local.get $acc\n      local.get $i\n      i32.const 2\n      i32.shl\n      i32.const {mask}\n      i32.and\n      local.get $i\n      i32.const 1\n      i32.or\n      i32.atomic.rmw.add offset={DATA_BASE}\n      i32.add\n      local.set $acc\n"
        );
        LoopModule {
            pages: pages_for(self.memory_bytes(p)),
            shared: true,
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
    fn init(&self, _p: &Params, _inst: &mut dyn Instance) -> Result<(), HookError> {
        Ok(())
    }
    fn reset(&self, p: &Params, _iters: u64, inst: &mut dyn Instance) -> Result<(), HookError> {
        inst.write_memory(DATA_BASE, &Self::initial(p))?;
        Ok(())
    }
    fn verify(
        &self,
        p: &Params,
        iters: u64,
        ret: Option<i32>,
        inst: &mut dyn Instance,
    ) -> Result<(), HookError> {
        let init = Self::initial(p);
        let mut words: Vec<i32> = init
            .chunks_exact(4)
            .map(|c| i32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        let n = words.len();
        let mut acc = 0i32;
        for i in 0..iters as usize {
            let w = &mut words[i % n];
            acc = acc.wrapping_add(*w);
            *w = w.wrapping_add(i as i32 | 1);
        }
        expect_return("sum of old values", acc, ret)?;
        expect_region(inst, "atomic counters", DATA_BASE, &words_to_bytes(&words))
    }
}
