//! `locals_traffic`: local and global get/set traffic with a little integer
//! arithmetic to keep every value live. Interpreters that keep locals in a
//! register file or on a value stack price this very differently.
//!
//! `local_copies`: locals rotated through plain `local.get x; local.set y`
//! moves. A register machine folds a `local.get` into the instruction that
//! reads it, but a move has no such instruction: it must copy. This is the
//! one shape whose locals are mostly *not* folded (see the counts'
//! `folded`), so the model can tell a move from an operand.

use super::skeleton::LoopModule;
use super::*;

pub fn shapes() -> Vec<Box<dyn Shape>> {
    vec![Box::new(LocalsTraffic), Box::new(LocalCopies)]
}

/// Rotations of the four locals per iteration.
const ROTATIONS: usize = 2;

fn copies_initial() -> [i32; 4] {
    let mut s = Stream::new(0xC0_B1E5);
    [0; 4].map(|_| s.next_u64() as i32)
}

struct LocalCopies;

impl Shape for LocalCopies {
    fn name(&self) -> &str {
        "local_copies"
    }
    fn prices(&self) -> &str {
        "local-to-local moves (t=a a=b b=c c=d, then d=t+i), which a register machine cannot fold away"
    }
    fn default_iters(&self, p: &Params) -> u64 {
        p.bytes / 16
    }
    fn declared(&self, _p: &Params) -> Declared {
        // Per rotation: four moves of two ops, then get, get, add, set.
        Declared {
            ..Declared::loop_body(ROTATIONS as u64 * (8 + 4), 0)
        }
    }
    fn wat(&self, p: &Params, body: Body) -> String {
        let rotation = "      local.get $a\n      local.set $t\n      local.get $b\n      local.set $a\n      local.get $c\n      local.set $b\n      local.get $d\n      local.set $c\n      local.get $t\n      local.get $i\n      i32.add\n      local.set $d\n";
        let abcd = ["$a", "$b", "$c", "$d"];
        let (pre, post) = (load_locals("i32", &abcd), xor_of(&abcd));
        LoopModule {
            pages: pages_for(self.memory_bytes(p)),
            shared: false,
            items: "",
            locals: "(local $a i32) (local $b i32) (local $c i32) (local $d i32) (local $t i32)",
            pre: &pre,
            body: &rotation.repeat(ROTATIONS),
            post: &post,
        }
        .render(body)
    }
    fn init(&self, _p: &Params, inst: &mut dyn Instance) -> Result<(), HookError> {
        inst.write_memory(PARAM_BASE, &words_to_bytes(&copies_initial()))?;
        Ok(())
    }
    fn verify(
        &self,
        _p: &Params,
        iters: u64,
        ret: Option<i32>,
        _inst: &mut dyn Instance,
    ) -> Result<(), HookError> {
        let [mut a, mut b, mut c, mut d] = copies_initial();
        for i in 0..iters as i32 {
            for _ in 0..ROTATIONS {
                let t = a;
                (a, b, c) = (b, c, d);
                d = t.wrapping_add(i);
            }
        }
        expect_return("a ^ b ^ c ^ d", a ^ b ^ c ^ d, ret)
    }
}

const G0: i32 = 0x1357_9BDF;
const G1: i32 = 0x2468_ACE1;

struct LocalsTraffic;

impl Shape for LocalsTraffic {
    fn name(&self) -> &str {
        "locals_traffic"
    }
    fn prices(&self) -> &str {
        "local.get/set/tee and global.get/set traffic (13 of 17 body ops)"
    }
    fn default_iters(&self, p: &Params) -> u64 {
        p.bytes / 16
    }
    fn declared(&self, _p: &Params) -> Declared {
        Declared {
            ..Declared::loop_body(17, 0)
        }
    }
    fn wat(&self, p: &Params, body: Body) -> String {
        let b = "      global.get $g0\n      local.get $i\n      i32.add\n      local.set $a\n      local.get $a\n      global.get $g1\n      i32.xor\n      local.set $b\n      local.get $b\n      local.get $a\n      i32.sub\n      local.tee $c\n      global.set $g0\n      local.get $c\n      local.get $b\n      i32.add\n      global.set $g1\n";
        LoopModule {
            pages: pages_for(self.memory_bytes(p)),
            shared: false,
            items: "  (global $g0 (mut i32) (i32.const 0))\n  (global $g1 (mut i32) (i32.const 0))",
            locals: "(local $a i32) (local $b i32) (local $c i32)",
            pre: "    i32.const 0\n    i32.load\n    global.set $g0\n    i32.const 4\n    i32.load\n    global.set $g1",
            body: b,
            post: "    global.get $g0\n    global.get $g1\n    i32.xor",
        }
        .render(body)
    }
    fn init(&self, _p: &Params, inst: &mut dyn Instance) -> Result<(), HookError> {
        inst.write_memory(PARAM_BASE, &words_to_bytes(&[G0, G1]))?;
        Ok(())
    }
    fn verify(
        &self,
        _p: &Params,
        iters: u64,
        ret: Option<i32>,
        _inst: &mut dyn Instance,
    ) -> Result<(), HookError> {
        let (mut g0, mut g1) = (G0, G1);
        for i in 0..iters as i32 {
            let a = g0.wrapping_add(i);
            let b = a ^ g1;
            let c = b.wrapping_sub(a);
            g0 = c;
            g1 = c.wrapping_add(b);
        }
        expect_return("g0 ^ g1", g0 ^ g1, ret)
    }
}
