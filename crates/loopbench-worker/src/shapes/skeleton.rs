//! The loop skeleton every built-in shape shares, so the per-iteration
//! overhead is identical across shapes and declared once.

use super::{Body, Declared};

/// Instructions the skeleton executes per iteration: `local.get $i;
/// i32.const 1; i32.add; local.tee $i; local.get $n; i32.lt_u; br_if $L`.
pub const LOOP_OPS: u64 = 7;
/// The back-edge is one taken branch per iteration (the last iteration's
/// not-taken exit is a constant, not a per-iteration cost).
pub const LOOP_TAKEN: u64 = 1;

impl Declared {
    /// The counts of one iteration: `body_ops` and `body_taken` taken
    /// branches in the body, plus the skeleton's. Other counts (loads,
    /// calls, bytes) go on top: `Declared { loads: 1, ..Declared::loop_body(3, 0) }`.
    pub fn loop_body(body_ops: u64, body_taken: u64) -> Declared {
        Declared {
            ops: body_ops + LOOP_OPS,
            taken_branches: body_taken + LOOP_TAKEN,
            per: 1,
            ..Declared::default()
        }
    }
}

/// The pieces of a shape's module around the skeleton.
pub struct LoopModule<'a> {
    /// Linear memory in wasm pages.
    pub pages: u64,
    /// A shared memory (threads proposal) instead of an ordinary one.
    pub shared: bool,
    /// Module-level items: types, tables, helper functions, globals.
    pub items: &'a str,
    /// Extra locals of `run`, e.g. `(local $acc i32)`.
    pub locals: &'a str,
    /// Untimed-by-nobody prologue: loads parameters into locals.
    pub pre: &'a str,
    /// The loop body.
    pub body: &'a str,
    /// Epilogue that leaves the i32 result.
    pub post: &'a str,
}

impl LoopModule<'_> {
    /// Do-while loop over `$i` in `0..$n`; `run` requires `$n >= 1`.
    pub fn render(&self, body: Body) -> String {
        let memory = if self.shared {
            format!(
                "(memory (export \"memory\") {p} {p} shared)",
                p = self.pages
            )
        } else {
            format!("(memory (export \"memory\") {})", self.pages)
        };
        let loop_body = match body {
            Body::Enabled => self.body,
            Body::Disabled => "",
        };
        format!(
            "(module\n  {memory}\n{items}\n  (func (export \"run\") (param $n i32) (result i32)\n    (local $i i32) {locals}\n{pre}\n    loop $L\n{loop_body}\n      local.get $i\n      i32.const 1\n      i32.add\n      local.tee $i\n      local.get $n\n      i32.lt_u\n      br_if $L\n    end\n{post}\n  )\n)\n",
            items = self.items,
            locals = self.locals,
            pre = self.pre,
            post = self.post,
        )
    }
}
