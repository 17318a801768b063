//! Counts read after a trap are exact; after running out of fuel they are
//! consistent to within one group.

use crate::util::{engine, i32s, read_counts, Counted};
use loopbench_count::{instrument, OpClass};
use wasmi::{Linker, Module, Store, Val};

#[test]
fn out_of_bounds_store_after_eight_iterations() {
    let mut m = Counted::new(
        r#"(module (memory 1)
             (func (export "run") (param $n i32)
               (local $i i32)
               (loop $l
                 (i32.store (i32.mul (local.get $i) (i32.const 8192)) (local.get $i))
                 (local.set $i (i32.add (local.get $i) (i32.const 1)))
                 (br_if $l (i32.lt_u (local.get $i) (local.get $n))))))"#,
    );
    // i = 0..=7 store inside the 64 KiB page; i = 8 stores at 65536: trap.
    let err = m.call("run", &i32s(&[100])).unwrap_err();
    assert_eq!(err.as_trap_code(), Some(wasmi::TrapCode::MemoryOutOfBounds));
    let c = m.counts();
    // loop + 8 complete iterations of 13 ops + get, const, mul, get, store.
    assert_eq!(c.total_ops, 1 + 8 * 13 + 5);
    assert_eq!(
        c.class(OpClass::Store),
        9,
        "the trapping store was attempted"
    );
    assert_eq!(c.class(OpClass::Local), 8 * 6 + 2);
    assert_eq!(c.class(OpClass::Const), 8 * 2 + 1);
    // add and lt_u per iteration; the mul (also of the trapping one) is
    // multiplicative.
    assert_eq!(c.class(OpClass::Int), 8 * 2);
    assert_eq!(c.class(OpClass::IntMul), 8 + 1);
    assert_eq!(c.class(OpClass::Branch), 8);
    assert_eq!(c.class(OpClass::Control), 1);
    assert_eq!(c.taken_branches, 8);
    assert_eq!(c.returns, 0, "the function never returned");
    // Widths are static: the trapping store's 4 bytes are attributed too.
    assert_eq!(c.bytes_stored, 9 * 4);
    assert_eq!(c.loops[0].iterations, 9);
}

#[test]
fn unreachable_and_trapping_callee() {
    let mut m = Counted::new(
        r#"(module
             (func $boom (i32.const 1) (drop) (unreachable) (i32.const 2) (drop))
             (func (export "run") (result i32)
               (call $boom)
               (i32.const 3)))"#,
    );
    assert!(m.call("run", &[]).is_err());
    let c = m.counts();
    // run: call (the last instruction its caller ran); boom: const, drop, unreachable.
    assert_eq!(c.total_ops, 4);
    assert_eq!(c.class(OpClass::Call), 1);
    assert_eq!(c.class(OpClass::Control), 1);
    assert_eq!(c.class(OpClass::Const), 1);
    assert_eq!(c.class(OpClass::Other), 1);
    assert_eq!(c.calls, 1);
    assert_eq!(c.returns, 0);
}

#[test]
fn division_by_zero_midway() {
    let mut m = Counted::new(
        r#"(module (func (export "run") (param i32) (result i32)
             (i32.add (i32.const 1) (i32.div_u (i32.const 10) (local.get 0)))))"#,
    );
    assert_eq!(m.call_i32("run", &i32s(&[5])), 3);
    let ok = m.counts();
    assert_eq!(ok.total_ops, 6);
    assert!(m.call("run", &i32s(&[0])).is_err());
    let d = m.counts().delta(&ok);
    // const, const, local.get, div_u (trapped); not the add nor the end.
    assert_eq!(d.total_ops, 4);
    assert_eq!(d.class(OpClass::IntMul), 1);
    assert_eq!(d.class(OpClass::Int), 0);
}

#[test]
fn out_of_fuel_is_consistent() {
    let wat = r#"(module
        (global $g (export "g") (mut i32) (i32.const 0))
        (func (export "spin")
          (loop $l
            (global.set $g (i32.add (global.get $g) (i32.const 1)))
            (br $l))))"#;
    let wasm = wat::parse_str(wat).unwrap();
    let inst = instrument(&wasm).unwrap();
    let mut previous = 0;
    for fuel in [1_000u64, 5_000, 20_000] {
        let engine = engine(true);
        let module = Module::new(&engine, &inst.wasm[..]).unwrap();
        let mut store = Store::new(&engine, ());
        store.set_fuel(fuel).unwrap();
        let instance = Linker::<()>::new(&engine)
            .instantiate_and_start(&mut store, &module)
            .unwrap();
        let err = crate::util::call(&mut store, &instance, "spin", &[]).unwrap_err();
        assert_eq!(err.as_trap_code(), Some(wasmi::TrapCode::OutOfFuel));
        store.set_fuel(1_000_000).unwrap();
        let c = read_counts(&inst, &mut store, &instance);
        let g = match instance.get_global(&store, "g").unwrap().get(&store) {
            Val::I32(v) => v as u64,
            other => panic!("{other:?}"),
        };
        // One group per iteration (global.get .. br), counted at its start:
        // the count is the completed iterations, or one more if the fuel ran
        // out inside the last group.
        let iters = c.loops[0].iterations;
        assert!(
            iters == g || iters == g + 1,
            "iterations {iters}, global {g}"
        );
        assert_eq!(c.total_ops, 1 + 5 * iters);
        assert_eq!(c.taken_branches, iters);
        assert!(iters > previous, "more fuel, more iterations");
        previous = iters;
    }
}
