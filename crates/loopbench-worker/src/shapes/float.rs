//! Floating point: dependent f64 and f32 multiply-add chains, and a chain of
//! value-type conversions. Each isolates one class (`float`, `conversion`)
//! against the loop skeleton; the inputs come from memory, so no engine can
//! fold the chain, and the Rust reference computes the same IEEE results
//! (round-to-nearest-even everywhere, no NaNs produced).

use super::skeleton::LoopModule;
use super::*;

pub fn shapes() -> Vec<Box<dyn Shape>> {
    vec![
        Box::new(FloatChain { wide: true }),
        Box::new(FloatChain { wide: false }),
        Box::new(Conversions),
    ]
}

/// Multiply-add steps per iteration.
const STEPS: u64 = 4;
/// The chain's inputs: start value, multiplier, addend. The multiplier below
/// one keeps the value bounded, so the chain never overflows to infinity.
const X0: f64 = 1.25;
const M: f64 = 0.998_046_875;
const C: f64 = 0.003_906_25;

struct FloatChain {
    /// f64 (true) or f32.
    wide: bool,
}

impl FloatChain {
    fn ty(&self) -> &'static str {
        if self.wide {
            "f64"
        } else {
            "f32"
        }
    }
    /// The final value's bits folded to 32: what `run` returns.
    fn expected(&self, iters: u64) -> i32 {
        if self.wide {
            let mut x = X0;
            for _ in 0..iters * STEPS {
                x = x * M + C;
            }
            let b = x.to_bits();
            (b as u32 ^ (b >> 32) as u32) as i32
        } else {
            let (mut x, m, c) = (X0 as f32, M as f32, C as f32);
            for _ in 0..iters * STEPS {
                x = x * m + c;
            }
            x.to_bits() as i32
        }
    }
}

impl Shape for FloatChain {
    fn name(&self) -> &str {
        if self.wide {
            "f64_chain"
        } else {
            "f32_chain"
        }
    }
    fn prices(&self) -> &str {
        if self.wide {
            "four dependent f64 multiply-adds per iteration (8 float ops)"
        } else {
            "four dependent f32 multiply-adds per iteration (8 float ops)"
        }
    }
    fn default_iters(&self, p: &Params) -> u64 {
        (p.bytes / 16).max(1)
    }
    fn declared(&self, _p: &Params) -> Declared {
        // local.get $x, then per step local.get $m, mul, local.get $c, add,
        // and local.set $x.
        Declared {
            ..Declared::loop_body(2 + 4 * STEPS, 0)
        }
    }
    fn wat(&self, p: &Params, body: Body) -> String {
        let t = self.ty();
        let mut b = String::from("      local.get $x\n");
        for _ in 0..STEPS {
            b += &format!("      local.get $m\n      {t}.mul\n      local.get $c\n      {t}.add\n");
        }
        b += "      local.set $x\n";
        let pre = format!(
            "    i32.const 0\n    {t}.load\n    local.set $x\n    i32.const 8\n    {t}.load\n    local.set $m\n    i32.const 16\n    {t}.load\n    local.set $c"
        );
        let post = if self.wide {
            "    local.get $x\n    i64.reinterpret_f64\n    local.tee $bits\n    i32.wrap_i64\n    local.get $bits\n    i64.const 32\n    i64.shr_u\n    i32.wrap_i64\n    i32.xor"
        } else {
            "    local.get $x\n    i32.reinterpret_f32"
        };
        let locals = format!("(local $x {t}) (local $m {t}) (local $c {t}) (local $bits i64)");
        LoopModule {
            pages: pages_for(self.memory_bytes(p)),
            shared: false,
            items: "",
            locals: &locals,
            pre: &pre,
            body: &b,
            post,
        }
        .render(body)
    }
    fn init(&self, _p: &Params, inst: &mut dyn Instance) -> Result<(), HookError> {
        let mut bytes = Vec::new();
        for v in [X0, M, C] {
            if self.wide {
                bytes.extend_from_slice(&v.to_le_bytes());
            } else {
                bytes.extend_from_slice(&(v as f32).to_le_bytes());
                bytes.extend_from_slice(&[0; 4]);
            }
        }
        inst.write_memory(PARAM_BASE, &bytes)?;
        Ok(())
    }
    fn verify(
        &self,
        _p: &Params,
        iters: u64,
        ret: Option<i32>,
        _inst: &mut dyn Instance,
    ) -> Result<(), HookError> {
        expect_return("final value's bits", self.expected(iters), ret)
    }
}

const CONV_SEED: i32 = 0x0123_4567;

struct Conversions;

impl Conversions {
    /// One iteration of the chain, as Rust casts (in range, so `as` and the
    /// trapping wasm truncation agree; float casts round to nearest even).
    fn step(x: i32, i: i32) -> i32 {
        let wide = (x as i64) as f64;
        let narrow = wide as f32;
        let back = (narrow as f64) as i64;
        ((back as i32) as f32).to_bits() as i32 ^ i
    }
}

impl Shape for Conversions {
    fn name(&self) -> &str {
        "conversions"
    }
    fn prices(&self) -> &str {
        "a chain of eight value-type conversions per iteration (int <-> float, widen, narrow, reinterpret)"
    }
    fn default_iters(&self, p: &Params) -> u64 {
        (p.bytes / 16).max(1)
    }
    fn declared(&self, _p: &Params) -> Declared {
        // local.get $x, eight conversions, local.get $i, i32.xor, local.set $x.
        Declared {
            ..Declared::loop_body(12, 0)
        }
    }
    fn wat(&self, p: &Params, body: Body) -> String {
        let b = "      local.get $x\n      i64.extend_i32_s\n      f64.convert_i64_s\n      f32.demote_f64\n      f64.promote_f32\n      i64.trunc_f64_s\n      i32.wrap_i64\n      f32.convert_i32_s\n      i32.reinterpret_f32\n      local.get $i\n      i32.xor\n      local.set $x\n";
        LoopModule {
            pages: pages_for(self.memory_bytes(p)),
            shared: false,
            items: "",
            locals: "(local $x i32)",
            pre: "    i32.const 0\n    i32.load\n    local.set $x",
            body: b,
            post: "    local.get $x",
        }
        .render(body)
    }
    fn init(&self, _p: &Params, inst: &mut dyn Instance) -> Result<(), HookError> {
        inst.write_memory(PARAM_BASE, &CONV_SEED.to_le_bytes())?;
        Ok(())
    }
    fn verify(
        &self,
        _p: &Params,
        iters: u64,
        ret: Option<i32>,
        _inst: &mut dyn Instance,
    ) -> Result<(), HookError> {
        let x = (0..iters as i32).fold(CONV_SEED, Conversions::step);
        expect_return("final value", x, ret)
    }
}
