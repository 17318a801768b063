//! Operand folding: which instructions a register-based translation absorbs.
//!
//! Register-based interpreters (wasmi, wasm3) do not execute most
//! `local.get` and `*.const` instructions: the consuming instruction names the
//! local's register or carries the constant as an immediate. Likewise a
//! `local.set`/`local.tee` right after a computation does not run either: the
//! computation writes its result straight into the local's register. So
//! `local.get a; local.get b; i32.add; local.set d` is one register
//! instruction, while `local.get a; local.set b` is a real copy. This module
//! marks, for one function body, every instruction such a translation folds,
//! so the counting pass can report folded operands apart from real moves.
//!
//! # Rules
//!
//! The analysis simulates the operand stack with one *marker* per value,
//! inside straight-line code only:
//!
//! * `local.get` and `i32/i64/f32/f64.const` push an *operand candidate*
//!   (the instruction's position). `global.get` pushes *opaque*: register
//!   machines emit an instruction for it.
//! * A *computation* pops its inputs, folds every operand candidate among
//!   them, and pushes *computed* for each result. Computations are the
//!   classes `int`, `float`, `conversion`, `load` and `store` (address and
//!   value), and `select`. Their arity comes from wasmparser's
//!   [`Operator::operator_arity`] with no module information, so an operator
//!   whose arity depends on the module is never treated as one.
//! * A branch condition is consumed the same way: the condition of `br_if`
//!   and `if`, and the index of `br_table`.
//! * `local.set` pops one value; when it is *computed*, the set is folded
//!   (the computation wrote into the local's register). When it is an operand
//!   candidate (`local.get x; local.set y`, `i32.const 1; local.set x`) it is a
//!   real copy: neither is folded.
//! * `local.tee` follows `local.set`, then pushes *opaque*: the value now
//!   lives in a local, so a consumer reads that register with no instruction
//!   left to fold, and a `local.set` of it is a real copy.
//! * `local.set x` / `local.tee x` turn every operand candidate still on the
//!   stack that reads local `x` into *opaque*: the engine must copy the old
//!   value out before overwriting the register, so that `local.get` runs.
//! * Every other operator of known arity (`drop`, `global.set`, `memory.grow`,
//!   atomics, SIMD arithmetic, reference operators ...) pops its inputs
//!   without folding them and pushes *opaque* results.
//! * Control boundaries clear the stack (what was below becomes opaque):
//!   every `control`, `branch` and `return` class operator except `nop`
//!   (`block`, `loop`, `if`, `else`, `end`, `br`, `br_if`, `br_table`,
//!   `return`, `unreachable`, `try_table`, tail calls ...), after popping the
//!   condition or index where there is one. So does every operator whose
//!   arity is unknown without module information, calls and `call_indirect`
//!   included (calls copy their arguments into the callee's frame).
//! * Popping an empty stack yields *opaque*.
//!
//! The analysis therefore folds only when it saw producer and consumer in
//! the same straight-line run, which keeps it sound for any valid body:
//! a value crossing a block boundary is never folded. It is a static
//! property of each instruction; the counting pass multiplies it by
//! executions like the class counts, so a folded count never exceeds its
//! class count, and only `local` and `const` instructions are ever folded.

use crate::class::OpClass;
use wasmparser::{
    BlockType, ContType, FrameKind, FuncType, ModuleArity, Operator, RefType, SubType,
};

/// What the analysis knows about one value on the operand stack.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Marker {
    /// Pushed by the instruction at this position: a `local.get` (of
    /// `local`) or a constant (`local: None`).
    Candidate { at: usize, local: Option<u32> },
    /// The result of a computation.
    Computed,
    /// Anything else.
    Opaque,
}

/// Answers "unknown" to every module-dependent question, so
/// [`Operator::operator_arity`] only returns the arity of operators whose
/// arity the operator alone determines.
struct NoModule;

impl ModuleArity for NoModule {
    fn sub_type_at(&self, _: u32) -> Option<&SubType> {
        None
    }
    fn tag_type_arity(&self, _: u32) -> Option<(u32, u32)> {
        None
    }
    fn type_index_of_function(&self, _: u32) -> Option<u32> {
        None
    }
    fn func_type_of_cont_type(&self, _: &ContType) -> Option<&FuncType> {
        None
    }
    fn sub_type_of_ref_type(&self, _: &RefType) -> Option<&SubType> {
        None
    }
    fn control_stack_height(&self) -> u32 {
        0
    }
    fn label_block(&self, _: u32) -> Option<(BlockType, FrameKind)> {
        None
    }
}

/// Whether a register machine folds operands into this operator (of
/// class `class`).
fn is_computation(op: &Operator<'_>, class: OpClass) -> bool {
    matches!(
        class,
        OpClass::Int
            | OpClass::IntShift
            | OpClass::IntMul
            | OpClass::Float
            | OpClass::Conversion
            | OpClass::Load
            | OpClass::Store
    ) || matches!(op, Operator::Select | Operator::TypedSelect { .. })
}

/// Streams one function body's operators (in order, `end` included) and
/// marks which ones a register-based translation folds. See the module docs.
#[derive(Debug, Default)]
pub(crate) struct Folder {
    stack: Vec<Marker>,
    folded: Vec<bool>,
}

impl Folder {
    fn pop(&mut self) -> Marker {
        self.stack.pop().unwrap_or(Marker::Opaque)
    }

    /// Pop one value a register instruction reads in place.
    fn consume(&mut self) {
        if let Marker::Candidate { at, .. } = self.pop() {
            self.folded[at] = true;
        }
    }

    /// The next operator of the body, and its class.
    pub(crate) fn push(&mut self, op: &Operator<'_>, class: OpClass) {
        let at = self.folded.len();
        self.folded.push(false);
        match op {
            Operator::LocalGet { local_index } => self.stack.push(Marker::Candidate {
                at,
                local: Some(*local_index),
            }),
            Operator::I32Const { .. }
            | Operator::I64Const { .. }
            | Operator::F32Const { .. }
            | Operator::F64Const { .. } => self.stack.push(Marker::Candidate { at, local: None }),
            Operator::LocalSet { local_index } | Operator::LocalTee { local_index } => {
                if self.pop() == Marker::Computed {
                    self.folded[at] = true;
                }
                for m in &mut self.stack {
                    if matches!(*m, Marker::Candidate { local: Some(l), .. } if l == *local_index) {
                        *m = Marker::Opaque;
                    }
                }
                if matches!(op, Operator::LocalTee { .. }) {
                    self.stack.push(Marker::Opaque);
                }
            }
            Operator::Nop => {}
            Operator::BrIf { .. } | Operator::If { .. } | Operator::BrTable { .. } => {
                self.consume();
                self.stack.clear();
            }
            _ if matches!(
                class,
                OpClass::Control | OpClass::Branch | OpClass::Return | OpClass::TailCall
            ) =>
            {
                self.stack.clear()
            }
            _ => match op.operator_arity(&NoModule) {
                None => self.stack.clear(),
                Some((inputs, outputs)) => {
                    let computation = is_computation(op, class);
                    for _ in 0..inputs {
                        if computation {
                            self.consume();
                        } else {
                            self.pop();
                        }
                    }
                    let result = if computation {
                        Marker::Computed
                    } else {
                        Marker::Opaque
                    };
                    self.stack
                        .extend(std::iter::repeat_n(result, outputs as usize));
                }
            },
        }
    }

    /// Per operator pushed, in order: whether it is folded.
    pub(crate) fn finish(self) -> Vec<bool> {
        self.folded
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::class::classify;
    use wasmparser::{Parser, Payload};

    /// Folded flags of the first function body of `wat`, as (operator
    /// debug name, folded) pairs.
    fn analyze(wat: &str) -> Vec<(String, bool)> {
        let wasm = wat::parse_str(wat).unwrap();
        for payload in Parser::new(0).parse_all(&wasm) {
            if let Payload::CodeSectionEntry(body) = payload.unwrap() {
                let mut folder = Folder::default();
                let mut names = Vec::new();
                let mut reader = body.get_operators_reader().unwrap();
                while !reader.eof() {
                    let op = reader.read().unwrap();
                    names.push(format!("{op:?}"));
                    folder.push(&op, classify(&op));
                }
                return names.into_iter().zip(folder.finish()).collect();
            }
        }
        panic!("no function body");
    }

    /// Number of folded instructions in the body `body` (a function with
    /// i32 params $a $b $c $p, i32 locals $d $x, one memory, a mutable
    /// global $g and a function $f taking one i32).
    fn folded(body: &str) -> usize {
        let wat = format!(
            r#"(module
                 (memory 1)
                 (global $g (mut i32) (i32.const 0))
                 (func $f (param i32))
                 (func (param $a i32) (param $b i32) (param $c i32) (param $p i32)
                   (local $d i32) (local $x i32)
                   {body}))"#
        );
        // The module's first body is $f's (just `end`, never folded).
        let wasm = wat::parse_str(&wat).unwrap();
        let mut bodies = Vec::new();
        for payload in Parser::new(0).parse_all(&wasm) {
            if let Payload::CodeSectionEntry(body) = payload.unwrap() {
                bodies.push(body);
            }
        }
        let mut folder = Folder::default();
        let mut reader = bodies[1].get_operators_reader().unwrap();
        while !reader.eof() {
            let op = reader.read().unwrap();
            folder.push(&op, classify(&op));
        }
        folder.finish().into_iter().filter(|f| *f).count()
    }

    #[test]
    fn binary_op_into_local_folds_operands_and_set() {
        let flags = analyze(
            "(module (func (param $a i32) (param $b i32) (local $d i32)
               local.get $a local.get $b i32.add local.set $d))",
        );
        let got: Vec<bool> = flags.iter().map(|(_, f)| *f).collect();
        // local.get, local.get, i32.add, local.set, end
        assert_eq!(got, [true, true, false, true, false]);
        assert_eq!(folded("local.get $a local.get $b i32.add local.set $d"), 3);
    }

    #[test]
    fn moves_are_not_folded() {
        assert_eq!(folded("local.get $a local.set $b"), 0);
        assert_eq!(folded("i32.const 1 local.set $x"), 0);
    }

    #[test]
    fn load_address_and_result_fold() {
        assert_eq!(folded("local.get $p i32.load local.set $x"), 2);
        // Store: address and value operands.
        assert_eq!(folded("local.get $p i32.const 7 i32.store"), 2);
    }

    #[test]
    fn call_arguments_and_results_are_not_folded() {
        assert_eq!(folded("local.get $a call $f"), 0);
    }

    #[test]
    fn globals_are_not_operands() {
        // Only the constant folds: global.get and global.set are instructions.
        assert_eq!(folded("global.get $g i32.const 1 i32.add global.set $g"), 1);
    }

    #[test]
    fn values_crossing_a_block_are_not_folded() {
        assert_eq!(
            folded("local.get $a (block (result i32) local.get $b) i32.add local.set $d"),
            // Only the set: both operands cross a boundary (`block`, `end`).
            1
        );
        assert_eq!(folded("local.get $a local.get $b (block) i32.add drop"), 0);
    }

    #[test]
    fn branch_conditions_fold() {
        assert_eq!(folded("(block local.get $c br_if 0)"), 1);
        assert_eq!(folded("local.get $c (if (then))"), 1);
        assert_eq!(folded("(block local.get $c br_table 0 0)"), 1);
        // `br_if` with a value: the value is a branch argument, copied.
        assert_eq!(
            folded("(block (result i32) local.get $a local.get $c br_if 0) drop"),
            1
        );
    }

    #[test]
    fn tee_folds_like_set_and_pushes_opaque() {
        // The tee is the add's result register: folded with both operands;
        // the tee'd value is a register already, so the outer add folds only
        // the constant and its own set.
        assert_eq!(
            folded(
                "local.get $a local.get $b i32.add local.tee $d i32.const 1 i32.add local.set $x"
            ),
            5
        );
        // A tee of an operand is a copy, and so is a set of the tee'd value.
        assert_eq!(folded("local.get $a local.tee $d local.set $x"), 0);
    }

    #[test]
    fn overwritten_local_operand_is_not_folded() {
        // `local.get $a` is still on the stack when $a is overwritten: the
        // engine copies it first, so it is not folded. The constant 1, the
        // add and its set fold; `i32.const 5; local.set $a` is a move.
        assert_eq!(
            folded("local.get $a i32.const 5 local.set $a i32.const 1 i32.add local.set $b"),
            2
        );
    }

    #[test]
    fn drop_and_select() {
        assert_eq!(folded("local.get $a drop"), 0);
        assert_eq!(
            folded("local.get $a local.get $b local.get $c select local.set $d"),
            4
        );
    }

    #[test]
    fn empty_stack_pops_are_opaque() {
        // Unreachable code after `br`: the add pops an empty marker stack.
        assert_eq!(folded("(block br 0 i32.add local.set $d)"), 1);
    }
}
