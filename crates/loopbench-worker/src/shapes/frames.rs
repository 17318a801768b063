//! Frames: how a call ends and how big it is. `call_return` is
//! `call_direct` with the callee leaving by an explicit `return` instead of
//! falling off its `end` (same instruction count, so the pair prices
//! `return` against `end`); `tail_call` reaches the same callee through a
//! `return_call` trampoline (tail-call proposal); `call_many_args` passes
//! twelve arguments; `recursion` descends 64 frames per iteration; and
//! `memory_size` reads the memory's size through `memory.size` and
//! `memory.grow 0` (which grows nothing and returns the size).

use super::skeleton::LoopModule;
use super::*;

pub fn shapes() -> Vec<Box<dyn Shape>> {
    vec![
        Box::new(Frame {
            kind: FrameKind::Return,
        }),
        Box::new(Frame {
            kind: FrameKind::TailCall,
        }),
        Box::new(Frame {
            kind: FrameKind::ManyArgs,
        }),
        Box::new(Frame {
            kind: FrameKind::Recursion,
        }),
        Box::new(Frame {
            kind: FrameKind::MemorySize,
        }),
    ]
}

#[derive(Clone, Copy, PartialEq)]
enum FrameKind {
    Return,
    TailCall,
    ManyArgs,
    Recursion,
    MemorySize,
}

const CALLEE_C: i32 = 0x6C07_8965;
/// Arguments of `call_many_args`' callee.
const ARGS: u64 = 12;
/// Frames per iteration of `recursion` (the outermost call included).
const DEPTH: u64 = 64;
const ARG_SEED: u64 = 0xA265;

fn args() -> Vec<i32> {
    let mut s = Stream::new(ARG_SEED);
    (0..ARGS).map(|_| s.next_u64() as i32).collect()
}

struct Frame {
    kind: FrameKind,
}

impl Frame {
    fn step(&self, acc: i32, i: i32, pages: i32) -> i32 {
        match self.kind {
            FrameKind::Return | FrameKind::TailCall => acc.wrapping_add(i) ^ CALLEE_C,
            FrameKind::ManyArgs => args()
                .iter()
                .fold(acc ^ i, |a, x| a.wrapping_add(*x).rotate_left(1)),
            // rec(n) = n + rec(n - 1), rec(0) = i: the sum 1..DEPTH-1 plus i.
            FrameKind::Recursion => acc
                .wrapping_add(((DEPTH - 1) * DEPTH / 2) as i32)
                .wrapping_add(i),
            FrameKind::MemorySize => acc.wrapping_add(pages).rotate_left(pages as u32),
        }
    }
}

impl Shape for Frame {
    fn name(&self) -> &str {
        match self.kind {
            FrameKind::Return => "call_return",
            FrameKind::TailCall => "tail_call",
            FrameKind::ManyArgs => "call_many_args",
            FrameKind::Recursion => "recursion",
            FrameKind::MemorySize => "memory_size",
        }
    }
    fn prices(&self) -> &str {
        match self.kind {
            FrameKind::Return => {
                "call_direct with the callee leaving by `return` (compare call_direct: return vs end)"
            }
            FrameKind::TailCall => "one call whose callee tail-calls (return_call) the work function",
            FrameKind::ManyArgs => "one direct call with twelve i32 arguments per iteration",
            FrameKind::Recursion => "a 64-deep recursion per iteration (if/else, call, return)",
            FrameKind::MemorySize => "memory.size and memory.grow 0 (the size query) per iteration",
        }
    }
    fn default_iters(&self, p: &Params) -> u64 {
        match self.kind {
            FrameKind::Recursion => (p.bytes / 1024).max(1),
            _ => (p.bytes / 32).max(1),
        }
    }
    fn declared(&self, _p: &Params) -> Declared {
        let (ops, calls, taken) = match self.kind {
            // local.get $acc, local.get $i, call, local.set; callee 6.
            FrameKind::Return => (4 + 6, 1, 0),
            // The call site (4) + trampoline (3: two gets and return_call)
            // + the work function (6, its end included).
            FrameKind::TailCall => (4 + 3 + 6, 2, 0),
            // acc ^ i (3), twelve args, call, local.set; the callee
            // (local.get 0, then per argument get, add, const 1, rotl, end).
            FrameKind::ManyArgs => (3 + ARGS + 2 + 1 + 4 * ARGS + 1, 1, 0),
            // Site: local.get $acc, const, local.get $i, call, add, local.set
            // (6). Each of DEPTH - 1 non-leaf frames: local.get $n, if, two
            // gets, const, sub, get $base, call, add, `else` (a taken jump
            // past the else arm and the if's `end`) and the function's `end`:
            // 11. The leaf: local.get $n, `if` (taken, to the else arm),
            // local.get $base, the if's `end`, the function's `end`: 5.
            FrameKind::Recursion => (6 + 11 * (DEPTH - 1) + 5, DEPTH, DEPTH),
            // memory.size, local.get, add, local.set, local.get, const 0,
            // memory.grow, rotl, local.set: 9. (wasm3 0.4.7 fails to compile
            // `i32.mul` followed by `memory.size` on a deeper stack, so the
            // size is taken on an empty one.)
            FrameKind::MemorySize => (9, 0, 0),
        };
        Declared {
            calls,
            ..Declared::loop_body(ops, taken)
        }
    }
    fn wat(&self, p: &Params, body: Body) -> String {
        let (items, b) = match self.kind {
            FrameKind::Return => (
                format!("  (func $f (param i32 i32) (result i32) local.get 0 local.get 1 i32.add i32.const {CALLEE_C} i32.xor return)"),
                "      local.get $acc\n      local.get $i\n      call $f\n      local.set $acc\n".to_string(),
            ),
            FrameKind::TailCall => (
                format!("  (func $g (param i32 i32) (result i32) local.get 0 local.get 1 i32.add i32.const {CALLEE_C} i32.xor)\n  (func $f (param i32 i32) (result i32) local.get 0 local.get 1 return_call $g)"),
                "      local.get $acc\n      local.get $i\n      call $f\n      local.set $acc\n".to_string(),
            ),
            FrameKind::ManyArgs => {
                let params = "i32 ".repeat(ARGS as usize + 1);
                let mut f = format!("  (func $f (param {params}) (result i32) local.get 0");
                for k in 1..=ARGS {
                    f += &format!(" local.get {k} i32.add i32.const 1 i32.rotl");
                }
                f += ")";
                let mut b = String::from("      local.get $acc\n      local.get $i\n      i32.xor\n");
                for k in 0..ARGS {
                    b += &format!("      local.get $a{k}\n");
                }
                b += "      call $f\n      local.set $acc\n";
                (f, b)
            }
            FrameKind::Recursion => (
                "  (func $rec (param $n i32) (param $base i32) (result i32)\n    local.get $n\n    if (result i32)\n      local.get $n\n      local.get $n\n      i32.const 1\n      i32.sub\n      local.get $base\n      call $rec\n      i32.add\n    else\n      local.get $base\n    end)".to_string(),
                format!("      local.get $acc\n      i32.const {}\n      local.get $i\n      call $rec\n      i32.add\n      local.set $acc\n", DEPTH - 1),
            ),
            FrameKind::MemorySize => (
                String::new(),
                "      memory.size\n      local.get $acc\n      i32.add\n      local.set $acc\n      local.get $acc\n      i32.const 0\n      memory.grow\n      i32.rotl\n      local.set $acc\n".to_string(),
            ),
        };
        let mut locals = String::from("(local $acc i32)");
        let mut pre = String::new();
        if self.kind == FrameKind::ManyArgs {
            for k in 0..ARGS {
                locals += &format!(" (local $a{k} i32)");
                pre += &format!(
                    "    i32.const {}\n    i32.load\n    local.set $a{k}\n",
                    4 * k
                );
            }
        }
        LoopModule {
            pages: pages_for(self.memory_bytes(p)),
            shared: false,
            items: &items,
            locals: &locals,
            pre: &pre,
            body: &b,
            post: "    local.get $acc",
        }
        .render(body)
    }
    fn init(&self, _p: &Params, inst: &mut dyn Instance) -> Result<(), HookError> {
        inst.write_memory(PARAM_BASE, &words_to_bytes(&args()))?;
        Ok(())
    }
    fn verify(
        &self,
        p: &Params,
        iters: u64,
        ret: Option<i32>,
        _inst: &mut dyn Instance,
    ) -> Result<(), HookError> {
        let pages = pages_for(self.memory_bytes(p)) as i32;
        let acc = (0..iters as i32).fold(0, |acc, i| self.step(acc, i, pages));
        expect_return("accumulator", acc, ret)
    }
}
