//! Hand-written modules with hand-computed exact dynamic counts.
//!
//! Conventions the expectations rely on (see the crate docs): an `end` or
//! `else` counts when control falls through it, never when a branch skips
//! it; `if`/`else` costs one taken branch per execution whichever arm runs;
//! falling off a function's final `end` is one return.

use crate::util::{i32s, Counted};
use loopbench_count::{Counts, OpClass};
use std::collections::BTreeMap;

fn classes(pairs: &[(OpClass, u64)]) -> BTreeMap<OpClass, u64> {
    let mut m: BTreeMap<OpClass, u64> = OpClass::ALL.into_iter().map(|c| (c, 0)).collect();
    for (c, n) in pairs {
        m.insert(*c, *n);
    }
    m
}

fn assert_classes(c: &Counts, pairs: &[(OpClass, u64)]) {
    assert_eq!(c.classes, classes(pairs), "classes of {c:#?}");
}

/// Counted-up loop with a load and a store per iteration, `br_if` back-edge.
const LOAD_STORE_LOOP: &str = r#"
(module
  (memory 1)
  (func (export "run") (param $n i32) (result i32)
    (local $i i32) (local $acc i32)
    (loop $l
      (local.set $acc (i32.add (local.get $acc)
                               (i32.load (i32.shl (local.get $i) (i32.const 2)))))
      (i32.store16 offset=1024 (local.get $i) (local.get $acc))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br_if $l (i32.lt_u (local.get $i) (local.get $n))))
    (local.get $acc)))
"#;

#[test]
fn load_store_loop() {
    let mut m = Counted::new(LOAD_STORE_LOOP);
    assert_eq!(m.call_i32("run", &i32s(&[100])), 0);
    let c = m.counts();
    // Per iteration 18 ops: 9 local, 2 const, 3 int (add, add, lt_u), 1
    // int_shift (shl),
    // 1 load, 1 store, 1 br_if. Once: loop, the loop's end, local.get, end.
    assert_classes(
        &c,
        &[
            (OpClass::Control, 3),
            (OpClass::Local, 9 * 100 + 1),
            (OpClass::Const, 200),
            (OpClass::Int, 300),
            (OpClass::IntShift, 100),
            (OpClass::Load, 100),
            (OpClass::Store, 100),
            (OpClass::Branch, 100),
        ],
    );
    assert_eq!(c.total_ops, 18 * 100 + 4);
    // Every local and constant of the body folds into the shl, load, add,
    // store, lt_u and br_if, even `local.get $acc`, whose group ends at the
    // load before its consumer (the add) starts the next one.
    assert_eq!(c.folded(OpClass::Local), 9 * 100);
    assert_eq!(c.folded(OpClass::Const), 2 * 100);
    // The back-edge br_if is taken after iterations 1..=99, not after the last.
    assert_eq!(c.taken_branches, 99);
    assert_eq!(c.calls, 0);
    assert_eq!(c.returns, 1);
    assert_eq!(c.transfers, 100);
    // The function's entry and the loop header's 100 executions.
    assert_eq!(c.block_entries, 1 + 100);
    assert_eq!(c.bytes_loaded, 4 * 100);
    assert_eq!(c.bytes_stored, 2 * 100);
    assert_eq!(c.bulk_bytes, 0);
    assert_eq!(c.functions.len(), 1);
    assert_eq!(c.functions[0].index, 0);
    assert_eq!(c.functions[0].name.as_deref(), Some("run"));
    assert_eq!(c.functions[0].entries, 1);
    assert_eq!(c.functions[0].ops, 1804);
    assert_eq!(c.loops.len(), 1);
    let l = &c.loops[0];
    assert_eq!(
        (l.function, l.depth, l.entries, l.iterations),
        (0, 0, 1, 100)
    );
    // The body and the loop's own `end`.
    assert_eq!(l.ops, 1801);

    // A second run on the same instance accumulates; delta recovers it.
    assert_eq!(m.call_i32("run", &i32s(&[50])), 0);
    let d = m.counts().delta(&c);
    assert_eq!(d.total_ops, 18 * 50 + 4);
    assert_eq!(d.taken_branches, 49);
    assert_eq!(d.loops[0].iterations, 50);
    let per = m.counts().delta(&c).per_iter(50);
    assert_eq!(per.bytes_loaded, 4.0);
}

/// A loop mixing folded operands with a real copy (`$x = $acc`).
const FOLD_LOOP: &str = r#"
(module
  (func (export "run") (param $n i32) (result i32)
    (local $i i32) (local $acc i32) (local $x i32)
    (loop $l
      (local.set $acc (i32.add (local.get $acc) (local.get $i)))
      (local.set $x (local.get $acc))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br_if $l (i32.lt_u (local.get $i) (local.get $n))))
    (local.get $x)))
"#;

#[test]
fn folded_operands_scale_with_iterations() {
    // Static, per iteration: 9 local instructions, 7 folded (the add's two
    // operands and its set, `$i + 1`'s operand and set, the lt_u's two
    // operands); the copy's get and set are not. One const, folded. Once:
    // the final `local.get $x`, not folded (its consumer is `end`).
    for n in [1u64, 10, 37] {
        let mut m = Counted::new(FOLD_LOOP);
        m.call_i32("run", &i32s(&[n as i32]));
        let c = m.counts();
        assert_eq!(c.class(OpClass::Local), 9 * n + 1, "n = {n}");
        assert_eq!(c.folded(OpClass::Local), 7 * n, "n = {n}");
        assert_eq!(c.class(OpClass::Const), n, "n = {n}");
        assert_eq!(c.folded(OpClass::Const), n, "n = {n}");
        let others: u64 = c
            .folded
            .iter()
            .filter(|(k, _)| !matches!(k, OpClass::Local | OpClass::Const))
            .map(|(_, v)| v)
            .sum();
        assert_eq!(others, 0);
        // delta and per_iter carry folded counts like classes.
        let mut m2 = Counted::new(FOLD_LOOP);
        m2.call_i32("run", &i32s(&[2 * n as i32]));
        let per = m2.counts().delta(&c).per_iter(n);
        assert_eq!(per.folded[&OpClass::Local], 7.0);
        assert_eq!(per.classes[&OpClass::Local], 9.0);
    }
}

/// `loop` + `br_table` dispatch over nested blocks + `if`/`else` both ways.
const BR_TABLE_IF_ELSE: &str = r#"
(module
  (func (export "run") (param $n i32) (result i32)
    (local $i i32) (local $acc i32)
    (loop $l
      (block $b2
        (block $b1
          (block $b0
            (br_table $b0 $b1 $b2 (i32.rem_u (local.get $i) (i32.const 3))))
          (local.set $acc (i32.add (local.get $acc) (i32.const 1)))
          (br $b2))
        (local.set $acc (i32.add (local.get $acc) (i32.const 10))))
      (if (i32.and (local.get $i) (i32.const 1))
        (then (local.set $acc (i32.add (local.get $acc) (i32.const 100))))
        (else (local.set $acc (i32.add (local.get $acc) (i32.const 1000)))))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br_if $l (i32.lt_u (local.get $i) (local.get $n))))
    (local.get $acc)))
"#;

#[test]
fn br_table_nested_blocks_if_else() {
    let mut m = Counted::new(BR_TABLE_IF_ELSE);
    // i = 0..6: i%3 = 0,1,2,0,1,2 -> +1 +10 twice; odd i +100 x3, even +1000 x3.
    assert_eq!(m.call_i32("run", &i32s(&[6])), 3322);
    let c = m.counts();
    // Every iteration: 3 blocks, local.get/const/rem_u/br_table, the if
    // condition (get, const, and, if), one arm (4 ops + `else` when the
    // condition is true, or + the if's `end` when it is false), the
    // increment (4) and the back-edge test (4): 24 ops.
    // A branch to a block lands after its `end`, so no `end` of the target
    // block runs: i%3 == 0: 4 ops + br $b2 = 5. i%3 == 1: 4 ops + end($b2)
    // = 5. i%3 == 2: br_table jumps past end($b2): 0.
    // Once: loop, end(loop), local.get, end.
    assert_eq!(c.total_ops, 6 * 24 + 4 * 5 + 4);
    assert_classes(
        &c,
        &[
            // The `if` is a conditional branch and the `else` (run by the
            // three odd iterations' then arm) a jump: branches, not control.
            (OpClass::Control, 6 * 4 + 2 + 3 - 3),
            (OpClass::Branch, 6 + 2 + 6 + 6 + 3),
            (OpClass::Local, 6 * 8 + 4 + 4 + 1),
            (OpClass::Const, 6 * 4 + 2 + 2),
            // The rem_u of every iteration is a multiplicative op.
            (OpClass::Int, 6 * 4 + 2 + 2),
            (OpClass::IntMul, 6),
        ],
    );
    // br_table 6 + br $b2 2 + (if-false or else) 6 + br_if taken 5.
    assert_eq!(c.taken_branches, 19);
    assert_eq!(c.loops[0].iterations, 6);
}

/// Direct and indirect calls, an early `return`, `if` without `else`.
const CALLS: &str = r#"
(module
  (type $t (func (param i32) (result i32)))
  (table 2 funcref)
  (elem (i32.const 0) $double $early)
  (func $double (type $t) (i32.add (local.get 0) (local.get 0)))
  (func $early (type $t)
    (if (i32.eqz (local.get 0)) (then (return (i32.const 100))))
    (i32.const 7))
  (func (export "run") (result i32)
    (call $double (i32.const 5))
    (call_indirect (type $t) (i32.const 0) (i32.const 1))
    i32.add
    (call_indirect (type $t) (i32.const 3) (i32.const 1))
    i32.add))
"#;

#[test]
fn calls_and_early_return() {
    let mut m = Counted::new(CALLS);
    assert_eq!(m.call_i32("run", &[]), 10 + 100 + 7);
    let c = m.counts();
    // run: 5 const, call, 2 call_indirect, 2 add, end = 11.
    // double: 2 local.get, add, end = 4.
    // early(0): get, eqz, if, const, return = 5 (condition true: no jump).
    // early(3): get, eqz, if (false: taken), const, end = 5.
    assert_classes(
        &c,
        &[
            (OpClass::Const, 5 + 1 + 1),
            (OpClass::Call, 1),
            (OpClass::CallIndirect, 2),
            (OpClass::Int, 2 + 1 + 1 + 1),
            (OpClass::Local, 2 + 1 + 1),
            // The ends of run, double and early(3); the two ifs are branches.
            (OpClass::Control, 1 + 1 + 1),
            (OpClass::Branch, 2),
            (OpClass::Return, 1),
        ],
    );
    assert_eq!(c.total_ops, 11 + 4 + 5 + 5);
    assert_eq!(c.taken_branches, 1);
    assert_eq!(c.calls, 3);
    // run's end, double's end, early(0)'s return, early(3)'s end.
    assert_eq!(c.returns, 4);
    assert_eq!(c.transfers, 8);
    // Entries of run, double and early twice, and early's two `if`s.
    assert_eq!(c.block_entries, 4 + 2);
    let f: Vec<_> = c
        .functions
        .iter()
        .map(|f| (f.index, f.name.as_deref(), f.entries, f.ops))
        .collect();
    assert_eq!(
        f,
        [
            (0, Some("double"), 1, 4),
            (1, Some("early"), 2, 10),
            (2, Some("run"), 1, 11)
        ]
    );
}

/// Nested loops: per-loop entries, iterations and inclusive ops.
const NESTED_LOOPS: &str = r#"
(module
  (func (export "run") (result i32)
    (local $i i32) (local $j i32) (local $acc i32)
    (loop $outer
      (local.set $j (i32.const 0))
      (loop $inner
        (local.set $acc (i32.add (local.get $acc) (i32.const 1)))
        (local.set $j (i32.add (local.get $j) (i32.const 1)))
        (br_if $inner (i32.lt_u (local.get $j) (i32.const 4))))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br_if $outer (i32.lt_u (local.get $i) (i32.const 3))))
    (local.get $acc)))
"#;

#[test]
fn nested_loops() {
    let mut m = Counted::new(NESTED_LOOPS);
    assert_eq!(m.call_i32("run", &[]), 12);
    let c = m.counts();
    // inner: 4 iterations x 12 ops + its end = 49 per entry, 3 entries.
    // outer: 3 x (2 + loop + 49 + 8) + its end = 181.
    assert_eq!(c.total_ops, 1 + 181 + 2);
    assert_eq!(c.loops.len(), 2);
    let (outer, inner) = (&c.loops[0], &c.loops[1]);
    assert!(outer.offset < inner.offset);
    assert_eq!(
        (outer.depth, outer.entries, outer.iterations, outer.ops),
        (0, 1, 3, 181)
    );
    assert_eq!(
        (inner.depth, inner.entries, inner.iterations, inner.ops),
        (1, 3, 12, 147)
    );
    // inner back-edges 3 per entry, outer 2.
    assert_eq!(c.taken_branches, 9 + 2);
}

/// memory.copy / fill / init / data.drop and table.fill / copy.
const BULK: &str = r#"
(module
  (memory 1)
  (data $d "hello")
  (table 10 funcref)
  (func (export "bulk")
    (memory.copy (i32.const 0) (i32.const 1000) (i32.const 100))
    (memory.fill (i32.const 200) (i32.const 7) (i32.const 37))
    (memory.init $d (i32.const 300) (i32.const 0) (i32.const 5))
    (data.drop $d))
  (func (export "bulk_trap")
    (memory.copy (i32.const 65000) (i32.const 0) (i32.const 1000))
    (memory.fill (i32.const 0) (i32.const 0) (i32.const 1)))
  (func (export "tables")
    (table.fill (i32.const 1) (ref.null func) (i32.const 4))
    (table.copy (i32.const 5) (i32.const 0) (i32.const 3))))
"#;

#[test]
fn bulk_memory_bytes() {
    let mut m = Counted::new(BULK);
    m.call("bulk", &[]).unwrap();
    let c = m.counts();
    assert_eq!(c.bulk_bytes, 100 + 37 + 5);
    assert_eq!(c.bulk_fill_bytes, 37, "of which memory.fill wrote");
    assert_classes(
        &c,
        &[
            (OpClass::Const, 9),
            (OpClass::BulkMemory, 4),
            (OpClass::Control, 1),
        ],
    );
    // A memory.copy that traps copies nothing and adds nothing.
    assert!(m.call("bulk_trap", &[]).is_err());
    let d = m.counts().delta(&c);
    assert_eq!(d.bulk_bytes, 0);
    assert_eq!(d.bulk_fill_bytes, 0, "the fill after the trap never ran");
    assert_eq!(d.total_ops, 4);
    assert_eq!(d.class(OpClass::BulkMemory), 1);
    m.call("tables", &[]).unwrap();
    let c = m.counts();
    assert_eq!(c.bulk_table_elements, 4 + 3);
    assert_eq!(c.bulk_bytes, 142);

    // JSON keys are the stable lowercase class names.
    let json = serde_json::to_value(&c).unwrap();
    assert_eq!(json["classes"]["bulk_memory"], 4 + 1 + 2);
    assert_eq!(json["classes"]["call_indirect"], 0);
    assert_eq!(json["bulk_bytes"], 142);
}

#[test]
fn memory64_bulk_lengths() {
    let mut m = Counted::new(
        r#"(module (memory i64 1)
             (func (export "run") (result i64)
               (memory.fill (i64.const 8) (i32.const 1) (i64.const 4096))
               (memory.copy (i64.const 0) (i64.const 8) (i64.const 16))
               (i64.load (i64.const 0))))"#,
    );
    let r = m.call("run", &[]).unwrap();
    assert!(matches!(r[..], [wasmi::Val::I64(0x0101_0101_0101_0101)]));
    let c = m.counts();
    assert_eq!(c.bulk_bytes, 4096 + 16);
    assert_eq!(c.bulk_fill_bytes, 4096);
    assert_eq!(c.bytes_loaded, 8);
}

#[test]
fn simd_loads_and_stores() {
    let mut m = Counted::new(
        r#"(module (memory 1)
             (func (export "run")
               (v128.store (i32.const 0) (v128.load (i32.const 16)))
               (v128.store8_lane 3 (i32.const 0)
                 (v128.load32_splat (i32.const 4)))
               (drop (i32x4.extract_lane 0
                 (i32x4.add (v128.const i32x4 1 2 3 4) (v128.load8x8_u (i32.const 0)))))))"#,
    );
    m.call("run", &[]).unwrap();
    let c = m.counts();
    assert_eq!(c.bytes_loaded, 16 + 4 + 8);
    assert_eq!(c.bytes_stored, 16 + 1);
    assert_classes(
        &c,
        &[
            (OpClass::Const, 5),
            (OpClass::Load, 3),
            (OpClass::Store, 2),
            (OpClass::Simd, 3),
            (OpClass::Other, 1),
            (OpClass::Control, 1),
        ],
    );
}
