//! Control flow: the taken-branch pair and the two switch shapes.
//!
//! `add_chain` and `br_chain` are one module. Each of the K adds sits in a
//! block that ends with `br_if 0` on a flag loaded from memory: 0 for
//! add_chain (never taken), 1 for br_chain (always taken). The instruction
//! stream is the same, so the dispatch count is equal by construction and
//! the difference divided by K prices a taken branch over a not-taken one
//! (the seed harness's nop/jmp lesson: a pair that differs in anything else
//! over-attributes). No engine can remove the branch: the flag is data.
//!
//! `add_run` and `add_blocks` are the same K adds with nothing around them
//! and with each in an empty block: their difference prices `block`/`end`
//! alone (free in an engine that resolves blocks when it compiles, a frame
//! in one that keeps them at run time), and `add_run` prices `int` without
//! the blocks and branches it otherwise always rides with. `add_stack` runs
//! the same adds as one expression on the operand stack, reading each x
//! once and `$acc` once per iteration: the same K adds with fewer local
//! operands. `(add_run - add_stack) / K` is what chaining through a local
//! costs over chaining on the stack (a memory slot against a register in
//! wasm3, the same register file in wasmi). `add_loops` puts each add in an
//! empty `loop` instead of a `block`: entered by falling through and never
//! branched to, it runs exactly the ops of `add_blocks` (both are `control`)
//! with K more block entries, so `(add_loops - add_blocks) / K` prices a
//! block entry alone (wasmi's fuel check, paid at every loop header).
//!
//! `if_else` runs the same K adds as K `if`/`else` diamonds on the same
//! flag (always 1, so the `then` arm runs and its `else` jumps past the
//! `end`): it prices the `if` that compiled C is full of, which the chains'
//! `br_if`s do not exercise.
//!
//! `br_if_ladder` and `br_table_switch` walk the same token stream: groups of
//! eight tokens, each group a random permutation of 0..7, so every group
//! costs the same exact counts while the order has no short period.

use super::data::{self, Source};
use super::skeleton::{LoopModule, LOOP_OPS, LOOP_TAKEN};
use super::*;

pub fn shapes() -> Vec<Box<dyn Shape>> {
    vec![
        Box::new(Chain(ChainKind::NotTaken)),
        Box::new(Chain(ChainKind::Taken)),
        Box::new(Chain(ChainKind::IfElse)),
        Box::new(Chain(ChainKind::Run)),
        Box::new(Chain(ChainKind::Blocks)),
        Box::new(Chain(ChainKind::Stack)),
        Box::new(Chain(ChainKind::Loops)),
        Box::new(Switch { table: false }),
        Box::new(Switch { table: true }),
    ]
}

/// How each of the K adds is wrapped.
#[derive(Clone, Copy, PartialEq)]
enum ChainKind {
    /// In a block ending with a `br_if` on the flag (0: never taken).
    NotTaken,
    /// The same, with the flag 1: always taken.
    Taken,
    /// In the then arm of an `if`/`else` on the flag (1).
    IfElse,
    /// Bare: nothing around the adds.
    Run,
    /// Each in an empty block, no branch.
    Blocks,
    /// Bare, and chained on the operand stack instead of through `$acc`.
    Stack,
    /// Each in an empty loop, entered by falling through, no branch.
    Loops,
}

impl ChainKind {
    /// Whether the flag is 1 (the branches are taken, the then arm runs).
    fn flag(self) -> bool {
        matches!(self, ChainKind::Taken | ChainKind::IfElse)
    }
}

/// The K-add family: one module shape, seven ways around each add.
struct Chain(ChainKind);

const CHAIN_SEED: u64 = 0xC4A1;

fn chain_values(k: u32) -> Vec<i32> {
    let mut s = Stream::new(CHAIN_SEED);
    let mut v: Vec<i32> = (0..k).map(|_| s.next_u64() as i32).collect();
    // An odd sum keeps n * sum away from zero for every n < 2^32.
    let sum = v.iter().fold(0i32, |a, x| a.wrapping_add(*x));
    if sum & 1 == 0 {
        v[0] = v[0].wrapping_add(1);
    }
    v
}

impl Shape for Chain {
    fn name(&self) -> &str {
        match self.0 {
            ChainKind::NotTaken => "add_chain",
            ChainKind::Taken => "br_chain",
            ChainKind::IfElse => "if_else",
            ChainKind::Run => "add_run",
            ChainKind::Blocks => "add_blocks",
            ChainKind::Stack => "add_stack",
            ChainKind::Loops => "add_loops",
        }
    }
    fn prices(&self) -> &str {
        match self.0 {
            ChainKind::NotTaken => {
                "K dependent adds, each followed by a not-taken br_if (the pair's baseline)"
            }
            ChainKind::Taken => {
                "K dependent adds, each followed by a taken br_if (subtract add_chain, divide by K)"
            }
            ChainKind::IfElse => {
                "K adds, each in the then arm of an if/else on a data flag (an if and an else jump per add)"
            }
            ChainKind::Run => "K dependent adds and nothing else (int without blocks or branches)",
            ChainKind::Blocks => {
                "K dependent adds, each in an empty block (subtract add_run: block and end alone)"
            }
            ChainKind::Stack => {
                "K dependent adds on the operand stack (subtract from add_run: local operands alone)"
            }
            ChainKind::Loops => {
                "K dependent adds, each in an empty loop never branched to (subtract add_blocks: block entries alone)"
            }
        }
    }
    fn default_iters(&self, p: &Params) -> u64 {
        (p.bytes / 16).max(1)
    }
    fn declared(&self, p: &Params) -> Declared {
        let k = p.k as u64;
        // Per add: block, local.get, local.get, i32.add, local.set, local.get,
        // br_if, plus the block's `end` when the branch falls through. For
        // if_else: local.get $flag, if, the four ops of the add, and `else`
        // (a taken jump past the `end`, which never runs). add_run: the four
        // ops of the add; add_blocks: those and the block and its end;
        // add_stack: local.get $x and the add, plus one local.get $acc and
        // one local.set $acc around the whole chain; add_loops: as
        // add_blocks.
        let (per_add, around, taken) = match self.0 {
            ChainKind::NotTaken => (8, 0, 0),
            ChainKind::Taken => (7, 0, k),
            ChainKind::IfElse => (7, 0, k),
            ChainKind::Run => (4, 0, 0),
            ChainKind::Blocks | ChainKind::Loops => (6, 0, 0),
            ChainKind::Stack => (2, 2, 0),
        };
        Declared {
            ..Declared::loop_body(per_add * k + around, taken)
        }
    }
    fn wat(&self, p: &Params, body: Body) -> String {
        let k = p.k as usize;
        let locals: String = (0..k)
            .map(|j| format!("(local $x{j} i32) "))
            .collect::<String>()
            + "(local $acc i32) (local $flag i32)";
        // The flag, then the K addends, from consecutive words (as `init`).
        let names: Vec<String> = std::iter::once("$flag".to_string())
            .chain((0..k).map(|j| format!("$x{j}")))
            .collect();
        let pre = load_locals("i32", &names.iter().map(String::as_str).collect::<Vec<_>>());
        // `$acc = $acc OP $x{j}`, at the given indent.
        let stmt = |pad: &str, op: &str, j: usize| {
            format!(
                "{pad}local.get $acc\n{pad}local.get $x{j}\n{pad}i32.{op}\n{pad}local.set $acc\n"
            )
        };
        let (open, close) = match self.0 {
            ChainKind::Stack => ("      local.get $acc\n", "      local.set $acc\n"),
            _ => ("", ""),
        };
        let inner = "        ";
        let adds: String = (0..k)
            .map(|j| match self.0 {
                ChainKind::Stack => format!("      local.get $x{j}\n      i32.add\n"),
                ChainKind::Run => stmt("      ", "add", j),
                ChainKind::Blocks => format!("      block\n{}      end\n", stmt(inner, "add", j)),
                ChainKind::Loops => format!("      loop\n{}      end\n", stmt(inner, "add", j)),
                ChainKind::NotTaken | ChainKind::Taken => format!(
                    "      block\n{}{inner}local.get $flag\n{inner}br_if 0\n      end\n",
                    stmt(inner, "add", j)
                ),
                ChainKind::IfElse => format!(
                    "      local.get $flag\n      if\n{}      else\n{}      end\n",
                    stmt(inner, "add", j),
                    stmt(inner, "sub", j)
                ),
            })
            .collect();
        let b = format!("{open}{adds}{close}");
        LoopModule {
            pages: pages_for(self.memory_bytes(p)),
            shared: false,
            items: "",
            locals: &locals,
            pre: &pre,
            body: &b,
            post: "    local.get $acc",
        }
        .render(body)
    }
    fn init(&self, p: &Params, inst: &mut dyn Instance) -> Result<(), HookError> {
        let mut words = vec![self.0.flag() as i32];
        words.extend(chain_values(p.k));
        inst.write_memory(PARAM_BASE, &words_to_bytes(&words))?;
        Ok(())
    }
    fn verify(
        &self,
        p: &Params,
        iters: u64,
        ret: Option<i32>,
        _inst: &mut dyn Instance,
    ) -> Result<(), HookError> {
        let sum = chain_values(p.k)
            .iter()
            .fold(0i32, |a, x| a.wrapping_add(*x));
        expect_return("accumulator", sum.wrapping_mul(iters as i32), ret)
    }
}

struct Switch {
    table: bool,
}

const TOKEN_SEED: u64 = 0x5717C4;

fn case_constant(k: u32) -> i32 {
    (0x9E37_79B1u32.wrapping_mul(k + 1) | 1) as i32
}

impl Switch {
    fn expected(&self, p: &Params, iters: u64) -> i32 {
        let tokens = data::bytes(Source::Tokens(TOKEN_SEED), p.bytes as usize);
        let mask = p.bytes as usize - 1;
        (0..iters as usize).fold(0i32, |acc, i| {
            acc.wrapping_mul(3)
                .wrapping_add(case_constant(tokens[i & mask] as u32))
        })
    }
}

impl Shape for Switch {
    fn name(&self) -> &str {
        if self.table {
            "br_table_switch"
        } else {
            "br_if_ladder"
        }
    }
    fn prices(&self) -> &str {
        if self.table {
            "an 8-way switch over a token stream through one br_table"
        } else {
            "an 8-way switch over a token stream as a compare-and-br_if ladder"
        }
    }
    fn default_iters(&self, p: &Params) -> u64 {
        p.bytes / 4
    }
    fn declared(&self, _p: &Params) -> Declared {
        // Per token: 5 ops to load it, 9 block entries, the dispatch, the case
        // body (6 ops), and a `br $done` (cases 0..6) or the `end` of $done
        // (case 7). Counted over a group of eight tokens.
        let (dispatch_ops, dispatch_taken): (u64, u64) = if self.table {
            (8 * 2, 8)
        } else {
            // token 0: 3 ops; token k in 1..=6: 3 + 4k; token 7: 3 + 24 + br.
            (3 + (1..=6).map(|k| 3 + 4 * k).sum::<u64>() + 28, 8)
        };
        Declared {
            ops: 8 * (5 + 9 + 6 + 1) + dispatch_ops + 8 * LOOP_OPS,
            taken_branches: dispatch_taken + 7 + 8 * LOOP_TAKEN,
            loads: 8,
            bytes: 8,
            per: 8,
            ..Declared::default()
        }
    }
    fn wat(&self, p: &Params, body: Body) -> String {
        let mask = p.bytes - 1;
        let mut b = format!(
            "      local.get $i\n      i32.const {mask}\n      i32.and\n      i32.load8_u offset={DATA_BASE}\n      local.set $t\n      block $done\n"
        );
        for k in (0..8).rev() {
            b += &format!("      block $c{k}\n");
        }
        if self.table {
            b += "      local.get $t\n      br_table $c0 $c1 $c2 $c3 $c4 $c5 $c6 $c7 $c7\n";
        } else {
            b += "      local.get $t\n      i32.eqz\n      br_if $c0\n";
            for k in 1..7 {
                b += &format!(
                    "      local.get $t\n      i32.const {k}\n      i32.eq\n      br_if $c{k}\n"
                );
            }
            b += "      br $c7\n";
        }
        for k in 0..8u32 {
            b += &format!(
                "      end\n      local.get $acc\n      i32.const 3\n      i32.mul\n      i32.const {}\n      i32.add\n      local.set $acc\n",
                case_constant(k)
            );
            if k < 7 {
                b += "      br $done\n";
            }
        }
        b += "      end\n";
        LoopModule {
            pages: pages_for(self.memory_bytes(p)),
            shared: false,
            items: "",
            locals: "(local $t i32) (local $acc i32)",
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
        inst.write_memory(
            DATA_BASE,
            &data::bytes(Source::Tokens(TOKEN_SEED), p.bytes as usize),
        )?;
        Ok(())
    }
    fn verify(
        &self,
        p: &Params,
        iters: u64,
        ret: Option<i32>,
        _inst: &mut dyn Instance,
    ) -> Result<(), HookError> {
        expect_return("accumulator", self.expected(p, iters), ret)
    }
}
