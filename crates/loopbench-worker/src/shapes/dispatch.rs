//! `random_ops`: a long straight-line stream of integer statements with no
//! short period.
//!
//! A short periodic loop lets the branch predictor learn every indirect
//! branch of an interpreter's dispatch, so dispatch looks cheaper than it is
//! in real code. This body is 256 statements drawn from a seeded generator
//! over six operators and four locals, so the sequence of handlers repeats
//! only once per iteration (about a thousand dispatches); it prices dispatch
//! in the mispredicting case. The result depends on every statement, and the
//! inputs come from memory, so optimising engines cannot fold it.

use super::skeleton::LoopModule;
use super::*;

pub fn shapes() -> Vec<Box<dyn Shape>> {
    vec![Box::new(RandomOps)]
}

const STATEMENTS: usize = 256;
const SEED: u64 = 0xD15_BA7C4;
const LOCALS: [&str; 4] = ["$a", "$b", "$c", "$d"];

#[derive(Clone, Copy)]
enum Op {
    Add,
    Sub,
    Xor,
    MulConst(i32),
    Rotl,
    Rotr,
}

#[derive(Clone, Copy)]
struct Statement {
    dst: usize,
    lhs: usize,
    rhs: usize,
    op: Op,
}

fn program() -> Vec<Statement> {
    let mut s = Stream::new(SEED);
    (0..STATEMENTS)
        .map(|_| {
            let r = s.next_u64();
            let op = match r % 6 {
                0 => Op::Add,
                1 => Op::Sub,
                2 => Op::Xor,
                3 => Op::MulConst(((r >> 32) as i32) | 1),
                4 => Op::Rotl,
                _ => Op::Rotr,
            };
            let dst = ((r >> 8) % 4) as usize;
            let lhs = ((r >> 12) % 4) as usize;
            // Never combine a local with itself: x - x and x ^ x collapse.
            let rhs = (lhs + 1 + ((r >> 16) % 3) as usize) % 4;
            Statement { dst, lhs, rhs, op }
        })
        .collect()
}

fn initial() -> [i32; 4] {
    let mut s = Stream::new(SEED ^ 0xFFFF);
    [0; 4].map(|_| s.next_u64() as i32)
}

struct RandomOps;

impl Shape for RandomOps {
    fn name(&self) -> &str {
        "random_ops"
    }
    fn prices(&self) -> &str {
        "dispatch with no short period (1024 integer ops per iteration, unpredictable handler order)"
    }
    fn default_iters(&self, p: &Params) -> u64 {
        (p.bytes / 4096).max(1)
    }
    fn declared(&self, _p: &Params) -> Declared {
        // Every statement is four instructions: get, get-or-const, op, set.
        Declared {
            ..Declared::loop_body(4 * STATEMENTS as u64, 0)
        }
    }
    fn wat(&self, p: &Params, body: Body) -> String {
        let mut b = String::new();
        for st in program() {
            b += &format!("      local.get {}\n", LOCALS[st.lhs]);
            let op = match st.op {
                Op::Add => "i32.add",
                Op::Sub => "i32.sub",
                Op::Xor => "i32.xor",
                Op::MulConst(c) => {
                    b += &format!("      i32.const {c}\n");
                    "i32.mul"
                }
                Op::Rotl => "i32.rotl",
                Op::Rotr => "i32.rotr",
            };
            if !matches!(st.op, Op::MulConst(_)) {
                b += &format!("      local.get {}\n", LOCALS[st.rhs]);
            }
            b += &format!("      {op}\n      local.set {}\n", LOCALS[st.dst]);
        }
        let (pre, post) = (load_locals("i32", &LOCALS), xor_of(&LOCALS));
        LoopModule {
            pages: pages_for(self.memory_bytes(p)),
            shared: false,
            items: "",
            locals: "(local $a i32) (local $b i32) (local $c i32) (local $d i32)",
            pre: &pre,
            body: &b,
            post: &post,
        }
        .render(body)
    }
    fn init(&self, _p: &Params, inst: &mut dyn Instance) -> Result<(), HookError> {
        inst.write_memory(PARAM_BASE, &words_to_bytes(&initial()))?;
        Ok(())
    }
    fn verify(
        &self,
        _p: &Params,
        iters: u64,
        ret: Option<i32>,
        _inst: &mut dyn Instance,
    ) -> Result<(), HookError> {
        let prog = program();
        let mut r = initial();
        for _ in 0..iters {
            for st in &prog {
                let (x, y) = (r[st.lhs], r[st.rhs]);
                r[st.dst] = match st.op {
                    Op::Add => x.wrapping_add(y),
                    Op::Sub => x.wrapping_sub(y),
                    Op::Xor => x ^ y,
                    Op::MulConst(c) => x.wrapping_mul(c),
                    Op::Rotl => x.rotate_left(y as u32 & 31),
                    Op::Rotr => x.rotate_right(y as u32 & 31),
                };
            }
        }
        expect_return("a ^ b ^ c ^ d", r[0] ^ r[1] ^ r[2] ^ r[3], ret)
    }
}
