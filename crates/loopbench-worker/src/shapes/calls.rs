//! Calls: direct, indirect through a one-entry table (monomorphic), and
//! indirect over four targets chosen by a random token stream
//! (polymorphic, so the indirect branch mispredicts). Every callee executes
//! the same instructions, so the three shapes differ only in how the call is
//! made and their counts stay constant per iteration. `call_indirect_fixed`
//! is the polymorphic loop with every token 0: the same instructions, one
//! target, so the pair differs only in wrong targets and prices one.

use super::data::{self, Data, Source};
use super::skeleton::LoopModule;
use super::*;

pub fn shapes() -> Vec<Box<dyn Shape>> {
    vec![
        Box::new(Call {
            kind: CallKind::Direct,
        }),
        Box::new(Call {
            kind: CallKind::Indirect,
        }),
        Box::new(Call {
            kind: CallKind::Poly,
        }),
        Box::new(Call {
            kind: CallKind::Fixed,
        }),
    ]
}

#[derive(Clone, Copy, PartialEq)]
enum CallKind {
    Direct,
    Indirect,
    Poly,
    /// Poly's module and stream, every token 0.
    Fixed,
}

impl CallKind {
    /// Whether the callee comes from the token stream.
    fn streamed(self) -> bool {
        matches!(self, CallKind::Poly | CallKind::Fixed)
    }
}

const TARGETS: u32 = 4;
const TOKEN_SEED: u64 = 0xCA11;

fn callee_constant(k: u32) -> i32 {
    0x7F4A_7C15u32.wrapping_mul(k + 1) as i32
}

/// Every callee: `local.get 0; local.get 1; i32.add; i32.const C; i32.xor`
/// and its `end`, six instructions.
const CALLEE_OPS: u64 = 6;

/// The streamed kinds' call targets (the fixed kind's all the first).
fn tokens(p: &Params, kind: CallKind) -> Data {
    let source = match kind {
        CallKind::Fixed => Source::Zeros,
        _ => Source::Indices {
            seed: TOKEN_SEED,
            n: TARGETS as u8,
        },
    };
    data::bytes(source, p.bytes as usize)
}

struct Call {
    kind: CallKind,
}

impl Shape for Call {
    fn name(&self) -> &str {
        match self.kind {
            CallKind::Direct => "call_direct",
            CallKind::Indirect => "call_indirect",
            CallKind::Poly => "call_indirect_poly",
            CallKind::Fixed => "call_indirect_fixed",
        }
    }
    fn prices(&self) -> &str {
        match self.kind {
            CallKind::Direct => "one direct call and return per iteration",
            CallKind::Indirect => {
                "one call_indirect to a single target (predictable) per iteration"
            }
            CallKind::Poly => "one call_indirect over four targets picked by a random stream",
            CallKind::Fixed => {
                "call_indirect_poly's loop with every token 0 (its twin: one predictable target)"
            }
        }
    }
    fn default_iters(&self, p: &Params) -> u64 {
        p.bytes / 32
    }
    fn declared(&self, _p: &Params) -> Declared {
        let (site_ops, loads) = match self.kind {
            CallKind::Direct => (4, 0),
            CallKind::Indirect => (5, 0),
            CallKind::Poly | CallKind::Fixed => (8, 1),
        };
        Declared {
            loads,
            calls: 1,
            bytes: loads,
            ..Declared::loop_body(site_ops + CALLEE_OPS, 0)
        }
    }
    fn wat(&self, p: &Params, body: Body) -> String {
        let n = if self.kind.streamed() { TARGETS } else { 1 };
        let mut items = String::from("  (type $bin (func (param i32 i32) (result i32)))\n");
        for k in 0..n {
            items += &format!(
                "  (func $f{k} (type $bin) local.get 0 local.get 1 i32.add i32.const {} i32.xor)\n",
                callee_constant(k)
            );
        }
        let elems: String = (0..n).map(|k| format!(" $f{k}")).collect();
        items += &format!("  (table {n} funcref)\n  (elem (i32.const 0){elems})");
        let mask = p.bytes - 1;
        let b = match self.kind {
            CallKind::Direct => "      local.get $acc\n      local.get $i\n      call $f0\n      local.set $acc\n".to_string(),
            CallKind::Indirect => "      local.get $acc\n      local.get $i\n      local.get $idx\n      call_indirect (type $bin)\n      local.set $acc\n".to_string(),
            CallKind::Poly | CallKind::Fixed => format!(
                "      local.get $acc\n      local.get $i\n      local.get $i\n      i32.const {mask}\n      i32.and\n      i32.load8_u offset={DATA_BASE}\n      call_indirect (type $bin)\n      local.set $acc\n"
            ),
        };
        LoopModule {
            pages: pages_for(self.memory_bytes(p)),
            shared: false,
            items: &items,
            locals: "(local $acc i32) (local $idx i32)",
            // The monomorphic index is data, so no engine can devirtualise it.
            pre: "    i32.const 0\n    i32.load\n    local.set $idx",
            body: &b,
            post: "    local.get $acc",
        }
        .render(body)
    }
    fn memory_bytes(&self, p: &Params) -> u64 {
        DATA_BASE + p.bytes
    }
    fn init(&self, p: &Params, inst: &mut dyn Instance) -> Result<(), HookError> {
        inst.write_memory(PARAM_BASE, &0i32.to_le_bytes())?;
        if self.kind.streamed() {
            inst.write_memory(DATA_BASE, &tokens(p, self.kind))?;
        }
        Ok(())
    }
    fn verify(
        &self,
        p: &Params,
        iters: u64,
        ret: Option<i32>,
        _inst: &mut dyn Instance,
    ) -> Result<(), HookError> {
        let streamed = self.kind.streamed().then(|| tokens(p, self.kind));
        let target = |i: usize| match &streamed {
            Some(toks) => toks[i & (p.bytes as usize - 1)] as u32,
            None => 0,
        };
        let acc = (0..iters as usize).fold(0i32, |acc, i| {
            acc.wrapping_add(i as i32) ^ callee_constant(target(i))
        });
        expect_return("accumulator", acc, ret)
    }
}
