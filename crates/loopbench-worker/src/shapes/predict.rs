//! Branch predictability as the only difference: `branch_periodic` and
//! `branch_random` are one module run over two token streams. Each
//! iteration loads a token and makes three data-dependent decisions on it: a
//! `br_if` on bit 0, a 4-way `br_table` on bits 1..2, and a `call_indirect`
//! to one of four callees on bits 0..1. Tokens come in groups of eight, each
//! group a permutation of 0..7, so both shapes execute exactly the same
//! counts per group. In `branch_periodic` every group is the same
//! permutation (period 8, which a history-based predictor learns); in
//! `branch_random` every group is a fresh seeded permutation. The difference
//! is what mispredicted branches cost, and the counting run's simulated
//! predictor supplies the misprediction counts the model prices.

use super::data::{self, Data, Source};
use super::skeleton::{LoopModule, LOOP_OPS, LOOP_TAKEN};
use super::*;

pub fn shapes() -> Vec<Box<dyn Shape>> {
    vec![
        Box::new(Predict { random: false }),
        Box::new(Predict { random: true }),
    ]
}

const TOKEN_SEED: u64 = 0x9E_D1C7;
const ODD_XOR: i32 = 0x2545_F491;

fn case_constant(k: u32) -> i32 {
    (0x85EB_CA6Bu32.wrapping_mul(k + 1) | 1) as i32
}

fn callee_constant(k: u32) -> i32 {
    0xC2B2_AE35u32.wrapping_mul(k + 3) as i32
}

struct Predict {
    random: bool,
}

impl Predict {
    fn tokens(&self, p: &Params) -> Data {
        let len = p.bytes.max(8) as usize;
        if self.random {
            data::bytes(Source::Tokens(TOKEN_SEED), len)
        } else {
            data::bytes(Source::PeriodicTokens(TOKEN_SEED), len)
        }
    }
}

impl Shape for Predict {
    fn name(&self) -> &str {
        if self.random {
            "branch_random"
        } else {
            "branch_periodic"
        }
    }
    fn prices(&self) -> &str {
        if self.random {
            "br_if, br_table and call_indirect on a random token stream (compare branch_periodic)"
        } else {
            "br_if, br_table and call_indirect on a period-8 token stream (the predictable twin)"
        }
    }
    fn default_iters(&self, p: &Params) -> u64 {
        (p.bytes / 4).max(8)
    }
    fn declared(&self, _p: &Params) -> Declared {
        // Per group of eight tokens (see the module docs):
        // token load 5 ops each; br_if block 5 ops when bit 0 is set (taken),
        // 10 when not; switch: 5 blocks + 6 dispatch ops + 6 case ops, plus a
        // taken `br $done` (cases 0..2) or the `end` of $done (case 3);
        // call site 7 ops + callee 6.
        Declared {
            ops: 8 * 5 + (4 * 5 + 4 * 10) + 8 * 18 + 8 * 13 + 8 * LOOP_OPS,
            taken_branches: 4 + (8 + 6) + 8 * LOOP_TAKEN,
            loads: 8,
            calls: 8,
            bytes: 8,
            per: 8,
            ..Declared::default()
        }
    }
    fn wat(&self, p: &Params, body: Body) -> String {
        let mask = p.bytes.max(8) - 1;
        let mut b = format!(
            "      local.get $i\n      i32.const {mask}\n      i32.and\n      i32.load8_u offset={DATA_BASE}\n      local.set $t\n      block\n        local.get $t\n        i32.const 1\n        i32.and\n        br_if 0\n        local.get $acc\n        i32.const {ODD_XOR}\n        i32.xor\n        local.set $acc\n      end\n      block $done\n      block $b3\n      block $b2\n      block $b1\n      block $b0\n      local.get $t\n      i32.const 1\n      i32.shr_u\n      i32.const 3\n      i32.and\n      br_table $b0 $b1 $b2 $b3 $b3\n"
        );
        for k in 0..4u32 {
            b += &format!(
                "      end\n      local.get $acc\n      i32.const 3\n      i32.mul\n      i32.const {}\n      i32.add\n      local.set $acc\n",
                case_constant(k)
            );
            if k < 3 {
                b += "      br $done\n";
            }
        }
        b += "      end\n      local.get $acc\n      local.get $i\n      local.get $t\n      i32.const 3\n      i32.and\n      call_indirect (type $bin)\n      local.set $acc\n";
        let mut items = String::from("  (type $bin (func (param i32 i32) (result i32)))\n");
        for k in 0..4u32 {
            items += &format!(
                "  (func $f{k} (type $bin) local.get 0 local.get 1 i32.add i32.const {} i32.xor)\n",
                callee_constant(k)
            );
        }
        items += "  (table 4 funcref)\n  (elem (i32.const 0) $f0 $f1 $f2 $f3)";
        LoopModule {
            pages: pages_for(self.memory_bytes(p)),
            shared: false,
            items: &items,
            locals: "(local $t i32) (local $acc i32)",
            pre: "",
            body: &b,
            post: "    local.get $acc",
        }
        .render(body)
    }
    fn memory_bytes(&self, p: &Params) -> u64 {
        DATA_BASE + p.bytes.max(8)
    }
    fn init(&self, p: &Params, inst: &mut dyn Instance) -> Result<(), HookError> {
        inst.write_memory(DATA_BASE, &self.tokens(p))?;
        Ok(())
    }
    fn verify(
        &self,
        p: &Params,
        iters: u64,
        ret: Option<i32>,
        _inst: &mut dyn Instance,
    ) -> Result<(), HookError> {
        let tokens = self.tokens(p);
        let acc = (0..iters as usize).fold(0i32, |mut acc, i| {
            let t = tokens[i % tokens.len()] as u32;
            if t & 1 == 0 {
                acc ^= ODD_XOR;
            }
            acc = acc
                .wrapping_mul(3)
                .wrapping_add(case_constant((t >> 1) & 3));
            acc.wrapping_add(i as i32) ^ callee_constant(t & 3)
        });
        expect_return("accumulator", acc, ret)
    }
}
