//! SIMD (v128): a dependent chain of i32x4 arithmetic, and a v128 load
//! stream (the 16-byte sibling of `load_stream`). Engines without the SIMD
//! proposal report `skipped` with the reason.

use super::data::{self, Source};
use super::skeleton::LoopModule;
use super::*;

pub fn shapes() -> Vec<Box<dyn Shape>> {
    vec![Box::new(SimdArith), Box::new(SimdLoad)]
}

const ARITH_SEED: u64 = 0x51AD;
const LOAD_SEED: u64 = 0x51AD_10AD;

type Lanes = [i32; 4];

fn lanes(words: &[i32]) -> Lanes {
    [words[0], words[1], words[2], words[3]]
}

fn zip(a: Lanes, b: Lanes, f: impl Fn(i32, i32) -> i32) -> Lanes {
    [f(a[0], b[0]), f(a[1], b[1]), f(a[2], b[2]), f(a[3], b[3])]
}

fn fold(v: Lanes) -> i32 {
    v[0] ^ v[1] ^ v[2] ^ v[3]
}

/// Lanes extracted and xored: the result of both shapes.
const FOLD_LANES: &str = "    local.get $v\n    i32x4.extract_lane 0\n    local.get $v\n    i32x4.extract_lane 1\n    i32.xor\n    local.get $v\n    i32x4.extract_lane 2\n    i32.xor\n    local.get $v\n    i32x4.extract_lane 3\n    i32.xor";

/// The arithmetic chain: operand local and operator, applied in order.
const STEPS: [(&str, &str); 8] = [
    ("$w", "i32x4.add"),
    ("$m", "i32x4.mul"),
    ("$w", "v128.xor"),
    ("$m", "i32x4.sub"),
    ("$m", "i32x4.add"),
    ("$w", "i32x4.mul"),
    ("$m", "v128.xor"),
    ("$w", "i32x4.sub"),
];

fn arith_inputs() -> Vec<i32> {
    let mut s = Stream::new(ARITH_SEED);
    (0..12).map(|_| s.next_u64() as i32 | 1).collect()
}

struct SimdArith;

impl Shape for SimdArith {
    fn name(&self) -> &str {
        "simd_arith"
    }
    fn prices(&self) -> &str {
        "eight dependent i32x4 operations per iteration (add, mul, xor, sub)"
    }
    fn default_iters(&self, p: &Params) -> u64 {
        (p.bytes / 16).max(1)
    }
    fn declared(&self, _p: &Params) -> Declared {
        // local.get $v, eight (local.get, op), local.set $v.
        Declared {
            ..Declared::loop_body(2 + 2 * STEPS.len() as u64, 0)
        }
    }
    fn wat(&self, p: &Params, body: Body) -> String {
        let mut b = String::from("      local.get $v\n");
        for (operand, op) in STEPS {
            b += &format!("      local.get {operand}\n      {op}\n");
        }
        b += "      local.set $v\n";
        LoopModule {
            pages: pages_for(self.memory_bytes(p)),
            shared: false,
            items: "",
            locals: "(local $v v128) (local $w v128) (local $m v128)",
            pre: "    i32.const 0\n    v128.load\n    local.set $v\n    i32.const 16\n    v128.load\n    local.set $w\n    i32.const 32\n    v128.load\n    local.set $m",
            body: &b,
            post: FOLD_LANES,
        }
        .render(body)
    }
    fn init(&self, _p: &Params, inst: &mut dyn Instance) -> Result<(), HookError> {
        inst.write_memory(PARAM_BASE, &words_to_bytes(&arith_inputs()))?;
        Ok(())
    }
    fn verify(
        &self,
        _p: &Params,
        iters: u64,
        ret: Option<i32>,
        _inst: &mut dyn Instance,
    ) -> Result<(), HookError> {
        let w = arith_inputs();
        let (mut v, a, m) = (lanes(&w[0..4]), lanes(&w[4..8]), lanes(&w[8..12]));
        for _ in 0..iters {
            for (operand, op) in STEPS {
                let x = if operand == "$w" { a } else { m };
                v = match op {
                    "i32x4.add" => zip(v, x, i32::wrapping_add),
                    "i32x4.sub" => zip(v, x, i32::wrapping_sub),
                    "i32x4.mul" => zip(v, x, i32::wrapping_mul),
                    _ => zip(v, x, |p, q| p ^ q),
                };
            }
        }
        expect_return("lanes xored", fold(v), ret)
    }
}

struct SimdLoad;

impl SimdLoad {
    /// The bytes the loads read: the working set, at least one vector.
    fn source(p: &Params) -> data::Data {
        data::bytes(Source::Stream(LOAD_SEED), p.bytes.max(16) as usize)
    }
}

impl Shape for SimdLoad {
    fn name(&self) -> &str {
        "simd_load"
    }
    fn prices(&self) -> &str {
        "one v128.load per iteration, summed lane-wise over the working set"
    }
    fn default_iters(&self, p: &Params) -> u64 {
        (p.bytes / 16).max(1)
    }
    fn declared(&self, _p: &Params) -> Declared {
        Declared {
            loads: 1,
            bytes: 16,
            ..Declared::loop_body(9, 0)
        }
    }
    fn wat(&self, p: &Params, body: Body) -> String {
        let mask = p.bytes.max(16) - 1;
        let b = format!(
            "      local.get $v\n      local.get $i\n      i32.const 4\n      i32.shl\n      i32.const {mask}\n      i32.and\n      v128.load offset={DATA_BASE}\n      i32x4.add\n      local.set $v\n"
        );
        LoopModule {
            pages: pages_for(self.memory_bytes(p)),
            shared: false,
            items: "",
            locals: "(local $v v128)",
            pre: "",
            body: &b,
            post: FOLD_LANES,
        }
        .render(body)
    }
    fn memory_bytes(&self, p: &Params) -> u64 {
        DATA_BASE + p.bytes.max(16)
    }
    fn init(&self, p: &Params, inst: &mut dyn Instance) -> Result<(), HookError> {
        inst.write_memory(DATA_BASE, &Self::source(p))?;
        Ok(())
    }
    fn verify(
        &self,
        p: &Params,
        iters: u64,
        ret: Option<i32>,
        _inst: &mut dyn Instance,
    ) -> Result<(), HookError> {
        let src = Self::source(p);
        let vectors = src.len() / 16;
        let v = (0..iters as usize).fold([0i32; 4], |v, i| {
            let at = (i % vectors) * 4;
            let lane = |k| word_at(&src, at + k);
            zip(v, [lane(0), lane(1), lane(2), lane(3)], i32::wrapping_add)
        });
        expect_return("lanes xored", fold(v), ret)
    }
}
