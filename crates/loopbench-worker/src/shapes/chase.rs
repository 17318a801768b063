//! `pointer_chase`: one dependent load per iteration along a random cycle
//! through the working set, one node per 64-byte cache line. Every load's
//! address is the previous load's value, so nothing overlaps and no
//! prefetcher can guess the next line: ns/iter is the load-to-use latency
//! of wherever the working set lives. A `--bytes` sweep (16K .. 64M) shows
//! the steps from L1 to L2, last-level cache, DRAM, and the TLB reach.

use super::skeleton::LoopModule;
use super::*;

pub fn shapes() -> Vec<Box<dyn Shape>> {
    vec![Box::new(PointerChase)]
}

/// One node per cache line.
const NODE: u64 = 64;
const CHASE_SEED: u64 = 0xC4A5E;

struct PointerChase;

impl PointerChase {
    /// `next[k]`: the node after node `k`, one cycle through every node
    /// (Sattolo's shuffle gives a single cycle, so the walk visits them all).
    fn next(p: &Params) -> Vec<u32> {
        let n = (p.bytes / NODE).max(1) as usize;
        let mut order: Vec<u32> = (0..n as u32).collect();
        let mut s = Stream::new(CHASE_SEED);
        for i in (1..n).rev() {
            let j = (s.next_u64() % i as u64) as usize;
            order.swap(i, j);
        }
        let mut next = vec![0u32; n];
        for k in 0..n {
            next[order[k] as usize] = order[(k + 1) % n];
        }
        next
    }
}

impl Shape for PointerChase {
    fn name(&self) -> &str {
        "pointer_chase"
    }
    fn prices(&self) -> &str {
        "one dependent load per iteration along a random cycle, one node per cache line (sweep --bytes)"
    }
    fn default_iters(&self, p: &Params) -> u64 {
        (p.bytes / 16).max(1)
    }
    fn declared(&self, _p: &Params) -> Declared {
        Declared {
            loads: 1,
            bytes: 4,
            ..Declared::loop_body(3, 0)
        }
    }
    fn wat(&self, p: &Params, body: Body) -> String {
        LoopModule {
            pages: pages_for(self.memory_bytes(p)),
            shared: false,
            items: "",
            locals: "(local $p i32)",
            pre: "",
            body: &format!(
                "      local.get $p\n      i32.load offset={DATA_BASE}\n      local.set $p\n"
            ),
            post: "    local.get $p",
        }
        .render(body)
    }
    fn memory_bytes(&self, p: &Params) -> u64 {
        DATA_BASE + p.bytes.max(NODE)
    }
    fn init(&self, p: &Params, inst: &mut dyn Instance) -> Result<(), HookError> {
        let next = Self::next(p);
        let mut mem = vec![0u8; next.len() * NODE as usize];
        for (k, n) in next.iter().enumerate() {
            let at = k * NODE as usize;
            mem[at..at + 4].copy_from_slice(&(n * NODE as u32).to_le_bytes());
        }
        inst.write_memory(DATA_BASE, &mem)?;
        Ok(())
    }
    fn verify(
        &self,
        p: &Params,
        iters: u64,
        ret: Option<i32>,
        _inst: &mut dyn Instance,
    ) -> Result<(), HookError> {
        let next = Self::next(p);
        let end = (0..iters).fold(0u32, |k, _| next[k as usize]);
        expect_return("final node offset", (end * NODE as u32) as i32, ret)
    }
}
