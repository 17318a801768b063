//! Scalar odds and ends the other families do not isolate: a dependent i64
//! arithmetic chain, a chain of `select`s on data-dependent conditions,
//! global-only get/set traffic (`locals_traffic` mixes locals and globals),
//! and two i32 chains that price the integer classes the add chains do not:
//! rotates (`shift_chain`) and multiplications (`mul_chain`).

use super::skeleton::LoopModule;
use super::*;

pub fn shapes() -> Vec<Box<dyn Shape>> {
    vec![
        Box::new(I64Chain),
        Box::new(SelectChain),
        Box::new(Globals),
        Box::new(I32Chain { mul: false }),
        Box::new(I32Chain { mul: true }),
    ]
}

const I32_SEED: u64 = 0x1320_C4A1;

/// The i32 chains' start value and four operands; the multipliers are odd,
/// so the product never collapses to zero.
fn i32_inputs() -> [i32; 5] {
    let mut s = Stream::new(I32_SEED);
    [0; 5].map(|_| s.next_u64() as i32 | 1)
}

/// Eight dependent i32 operations of one integer class per iteration, each
/// on an operand loaded from memory (so no engine can fold them).
struct I32Chain {
    mul: bool,
}

const OPERANDS: [&str; 4] = ["$a", "$b", "$c", "$d"];

impl I32Chain {
    /// mul_chain: `x = x * a * b * c * d * a * b * c * d`. shift_chain:
    /// four times `x = rotr(rotl(x, x), operand)`: the first amount is the
    /// value itself, because rotations by fixed amounts add up, and over a
    /// multiple of 32 iterations would bring x back (the verifier could not
    /// tell a run from none).
    fn body(&self) -> String {
        let mut b = String::new();
        if self.mul {
            b += "      local.get $x\n";
            for operand in OPERANDS.iter().chain(&OPERANDS) {
                b += &format!("      local.get {operand}\n      i32.mul\n");
            }
            b += "      local.set $x\n";
        } else {
            for operand in OPERANDS {
                b += &format!(
                    "      local.get $x\n      local.get $x\n      i32.rotl\n      local.get {operand}\n      i32.rotr\n      local.set $x\n"
                );
            }
        }
        b
    }
}

impl Shape for I32Chain {
    fn name(&self) -> &str {
        if self.mul {
            "mul_chain"
        } else {
            "shift_chain"
        }
    }
    fn prices(&self) -> &str {
        if self.mul {
            "eight dependent i32.mul per iteration (the int_mul class)"
        } else {
            "eight dependent i32 rotates per iteration, by the value itself and by data (the int_shift class)"
        }
    }
    fn default_iters(&self, p: &Params) -> u64 {
        (p.bytes / 16).max(1)
    }
    fn declared(&self, _p: &Params) -> Declared {
        // mul: local.get $x, eight (local.get operand, mul), local.set $x;
        // shift: four statements of six ops (see `body`).
        let ops = if self.mul { 2 + 16 } else { 4 * 6 };
        Declared {
            ..Declared::loop_body(ops, 0)
        }
    }
    fn wat(&self, p: &Params, body: Body) -> String {
        let b = self.body();
        LoopModule {
            pages: pages_for(self.memory_bytes(p)),
            shared: false,
            items: "",
            locals: "(local $x i32) (local $a i32) (local $b i32) (local $c i32) (local $d i32)",
            pre: &load_locals("i32", &["$x", "$a", "$b", "$c", "$d"]),
            body: &b,
            post: "    local.get $x",
        }
        .render(body)
    }
    fn init(&self, _p: &Params, inst: &mut dyn Instance) -> Result<(), HookError> {
        inst.write_memory(PARAM_BASE, &words_to_bytes(&i32_inputs()))?;
        Ok(())
    }
    fn verify(
        &self,
        _p: &Params,
        iters: u64,
        ret: Option<i32>,
        _inst: &mut dyn Instance,
    ) -> Result<(), HookError> {
        let [mut x, a, b, c, d] = i32_inputs();
        for _ in 0..iters {
            if self.mul {
                for v in [a, b, c, d, a, b, c, d] {
                    x = x.wrapping_mul(v);
                }
            } else {
                for v in [a, b, c, d] {
                    x = x.rotate_left(x as u32 & 31).rotate_right(v as u32 & 31);
                }
            }
        }
        expect_return("final value", x, ret)
    }
}

const I64_SEED: u64 = 0x1640_C4A1;

/// The i64 chain's operands: start value, then one operand per step.
fn i64_inputs() -> [i64; 5] {
    let mut s = Stream::new(I64_SEED);
    [0; 5].map(|_| s.next_u64() as i64)
}

struct I64Chain;

impl Shape for I64Chain {
    fn name(&self) -> &str {
        "i64_chain"
    }
    fn prices(&self) -> &str {
        "eight dependent i64 operations per iteration (mul, add, xor, rotl, sub, shr, or, rotr)"
    }
    fn default_iters(&self, p: &Params) -> u64 {
        (p.bytes / 16).max(1)
    }
    fn declared(&self, _p: &Params) -> Declared {
        // local.get $x, then eight (local.get operand, op), local.set $x.
        Declared {
            ..Declared::loop_body(2 + 16, 0)
        }
    }
    fn wat(&self, p: &Params, body: Body) -> String {
        let steps = [
            ("$a", "i64.mul"),
            ("$b", "i64.add"),
            ("$c", "i64.xor"),
            ("$d", "i64.rotl"),
            ("$a", "i64.sub"),
            ("$d", "i64.shr_u"),
            ("$b", "i64.or"),
            ("$c", "i64.rotr"),
        ];
        let mut b = String::from("      local.get $x\n");
        for (operand, op) in steps {
            b += &format!("      local.get {operand}\n      {op}\n");
        }
        b += "      local.set $x\n";
        let pre = load_locals("i64", &["$x", "$a", "$b", "$c", "$d"]);
        LoopModule {
            pages: pages_for(self.memory_bytes(p)),
            shared: false,
            items: "",
            locals: "(local $x i64) (local $a i64) (local $b i64) (local $c i64) (local $d i64)",
            pre: &pre,
            body: &b,
            post: "    local.get $x\n    local.get $x\n    i64.const 32\n    i64.shr_u\n    i64.xor\n    i32.wrap_i64",
        }
        .render(body)
    }
    fn init(&self, _p: &Params, inst: &mut dyn Instance) -> Result<(), HookError> {
        let bytes: Vec<u8> = i64_inputs().iter().flat_map(|v| v.to_le_bytes()).collect();
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
        let [mut x, a, b, c, d] = i64_inputs();
        for _ in 0..iters {
            x = x.wrapping_mul(a);
            x = x.wrapping_add(b);
            x ^= c;
            x = x.rotate_left((d & 63) as u32);
            x = x.wrapping_sub(a);
            x = ((x as u64) >> (d & 63)) as i64;
            x |= b;
            x = x.rotate_right((c & 63) as u32);
        }
        expect_return("folded final value", (x ^ (x >> 32)) as i32, ret)
    }
}

const SELECT_SEED: u64 = 0x5E1EC7;
const SELECTS: usize = 8;

/// Start value, eight alternatives and eight conditions (about half zero).
fn select_inputs() -> (i32, [i32; SELECTS], [i32; SELECTS]) {
    let mut s = Stream::new(SELECT_SEED);
    let v = s.next_u64() as i32;
    let alts = [0; SELECTS].map(|_| s.next_u64() as i32);
    let conds = [0; SELECTS].map(|_| (s.next_u64() & 1) as i32);
    (v, alts, conds)
}

struct SelectChain;

impl Shape for SelectChain {
    fn name(&self) -> &str {
        "select_chain"
    }
    fn prices(&self) -> &str {
        "eight dependent selects per iteration on conditions loaded from memory"
    }
    fn default_iters(&self, p: &Params) -> u64 {
        (p.bytes / 16).max(1)
    }
    fn declared(&self, _p: &Params) -> Declared {
        // local.get $v, eight (local.get alt, local.get cond, select), then
        // local.get $i, i32.add, local.set $v.
        Declared {
            ..Declared::loop_body(1 + 3 * SELECTS as u64 + 3, 0)
        }
    }
    fn wat(&self, p: &Params, body: Body) -> String {
        let mut b = String::from("      local.get $v\n");
        for j in 0..SELECTS {
            b += &format!("      local.get $y{j}\n      local.get $c{j}\n      select\n");
        }
        b += "      local.get $i\n      i32.add\n      local.set $v\n";
        let mut locals = String::from("(local $v i32)");
        let mut pre = String::from("    i32.const 0\n    i32.load\n    local.set $v\n");
        for j in 0..SELECTS {
            locals += &format!(" (local $y{j} i32) (local $c{j} i32)");
            pre += &format!(
                "    i32.const {}\n    i32.load\n    local.set $y{j}\n    i32.const {}\n    i32.load\n    local.set $c{j}\n",
                4 + 4 * j,
                4 + 4 * (SELECTS + j)
            );
        }
        LoopModule {
            pages: pages_for(self.memory_bytes(p)),
            shared: false,
            items: "",
            locals: &locals,
            pre: &pre,
            body: &b,
            post: "    local.get $v",
        }
        .render(body)
    }
    fn init(&self, _p: &Params, inst: &mut dyn Instance) -> Result<(), HookError> {
        let (v, alts, conds) = select_inputs();
        let mut words = vec![v];
        words.extend(alts);
        words.extend(conds);
        inst.write_memory(PARAM_BASE, &words_to_bytes(&words))?;
        Ok(())
    }
    fn verify(
        &self,
        _p: &Params,
        iters: u64,
        ret: Option<i32>,
        _inst: &mut dyn Instance,
    ) -> Result<(), HookError> {
        let (mut v, alts, conds) = select_inputs();
        for i in 0..iters as i32 {
            for (y, c) in alts.iter().zip(&conds) {
                // select keeps its first operand when the condition is non-zero.
                if *c == 0 {
                    v = *y;
                }
            }
            v = v.wrapping_add(i);
        }
        expect_return("selected value", v, ret)
    }
}

const G: [i32; 4] = [0x0BAD_5EED, 0x1234_5678, 0x7654_3210, 0x0F0F_0F0F];

struct Globals;

impl Shape for Globals {
    fn name(&self) -> &str {
        "globals_traffic"
    }
    fn prices(&self) -> &str {
        "global.get/set only: four globals rotated through adds and xors (14 of 20 body ops)"
    }
    fn default_iters(&self, p: &Params) -> u64 {
        (p.bytes / 16).max(1)
    }
    fn declared(&self, _p: &Params) -> Declared {
        // Five statements `g = x op y` of four ops each.
        Declared {
            ..Declared::loop_body(20, 0)
        }
    }
    fn wat(&self, p: &Params, body: Body) -> String {
        let b = "      global.get $g1\n      global.get $g2\n      i32.add\n      global.set $g0\n      global.get $g2\n      global.get $g3\n      i32.xor\n      global.set $g1\n      global.get $g3\n      global.get $g0\n      i32.sub\n      global.set $g2\n      global.get $g0\n      global.get $g1\n      i32.xor\n      global.set $g3\n      global.get $g0\n      local.get $i\n      i32.add\n      global.set $g0\n";
        let mut items = String::new();
        let mut pre = String::new();
        for j in 0..4 {
            items += &format!("  (global $g{j} (mut i32) (i32.const 0))\n");
            pre += &format!(
                "    i32.const {}\n    i32.load\n    global.set $g{j}\n",
                4 * j
            );
        }
        LoopModule {
            pages: pages_for(self.memory_bytes(p)),
            shared: false,
            items: &items,
            locals: "",
            pre: &pre,
            body: b,
            post: "    global.get $g0\n    global.get $g1\n    i32.xor\n    global.get $g2\n    i32.xor\n    global.get $g3\n    i32.xor",
        }
        .render(body)
    }
    fn init(&self, _p: &Params, inst: &mut dyn Instance) -> Result<(), HookError> {
        inst.write_memory(PARAM_BASE, &words_to_bytes(&G))?;
        Ok(())
    }
    fn verify(
        &self,
        _p: &Params,
        iters: u64,
        ret: Option<i32>,
        _inst: &mut dyn Instance,
    ) -> Result<(), HookError> {
        let mut g = G;
        for i in 0..iters as i32 {
            g[0] = g[1].wrapping_add(g[2]);
            g[1] = g[2] ^ g[3];
            g[2] = g[3].wrapping_sub(g[0]);
            g[3] = g[0] ^ g[1];
            g[0] = g[0].wrapping_add(i);
        }
        expect_return("g0 ^ g1 ^ g2 ^ g3", g[0] ^ g[1] ^ g[2] ^ g[3], ret)
    }
}
