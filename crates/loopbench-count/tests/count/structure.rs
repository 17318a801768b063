//! Index preservation, imports, missing sections, and clean errors.

use crate::util::{call, engine, read_counts, Counted};
use loopbench_count::{instrument, CountError, Instrumented, OpClass};
use wasmi::{Caller, Linker, Module, Store, Val};

#[test]
fn imports_keep_their_indices() {
    let mut m = Counted::with_linker(
        r#"(module
             (import "env" "add1" (func $add1 (param i32) (result i32)))
             (import "env" "base" (global $base i32))
             (global $mine (mut i32) (i32.const 40))
             (func (export "run") (result i32)
               (global.set $mine (i32.add (global.get $mine) (global.get $base)))
               (call $add1 (global.get $mine))))"#,
        |linker, store| {
            linker
                .func_wrap("env", "add1", |_: Caller<'_, ()>, x: i32| x + 1)
                .unwrap();
            let base = wasmi::Global::new(&mut *store, Val::I32(1), wasmi::Mutability::Const);
            linker.define("env", "base", base).unwrap();
        },
    );
    assert_eq!(m.call_i32("run", &[]), 42);
    let c = m.counts();
    assert_eq!(c.functions[0].index, 1, "imported function keeps index 0");
    assert_eq!(c.calls, 1);
    assert_eq!(c.class(OpClass::Global), 4);
    assert_eq!(c.class(OpClass::Local), 0);
}

#[test]
fn modules_without_sections() {
    for wat in [
        "(module)",
        r#"(module (memory (export "m") 1))"#,
        r#"(module (func (export "f")))"#,
        r#"(module (type (func)) (data "x"))"#,
    ] {
        let wasm = wat::parse_str(wat).unwrap();
        let inst = instrument(&wasm).unwrap_or_else(|e| panic!("{wat}: {e}"));
        let engine = engine(false);
        let module = Module::new(&engine, &inst.wasm[..]).unwrap();
        let mut store = Store::new(&engine, ());
        let instance = Linker::<()>::new(&engine)
            .instantiate_and_start(&mut store, &module)
            .unwrap();
        if wat.contains("\"f\"") {
            call(&mut store, &instance, "f", &[]).unwrap();
        }
        let c = read_counts(&inst, &mut store, &instance);
        assert_eq!(c.total_ops, u64::from(wat.contains("\"f\"")), "{wat}");
    }
}

#[test]
fn start_function_is_counted() {
    let mut m = Counted::new(
        r#"(module (global $g (mut i32) (i32.const 0))
             (func $init (global.set $g (i32.const 5)))
             (start $init)
             (func (export "get") (result i32) (global.get $g)))"#,
    );
    assert_eq!(m.call_i32("get", &[]), 5);
    assert_eq!(m.counts().total_ops, 3 + 2);
}

#[test]
fn out_of_range_slot_reads_zero() {
    let mut m = Counted::new(r#"(module (func (export "f") (nop)))"#);
    let slots = m.inst.slots() as i32;
    let read = m
        .instance
        .get_typed_func::<i32, i64>(&m.store, Instrumented::COUNTER_EXPORT)
        .unwrap();
    assert_eq!(read.call(&mut m.store, slots).unwrap(), 0);
    assert_eq!(read.call(&mut m.store, -1).unwrap(), 0);
}

#[test]
fn errors_are_clean() {
    assert!(matches!(
        instrument(b"not wasm"),
        Err(CountError::Invalid(_))
    ));
    let invalid = wat::parse_str("(module (func (result i32)))");
    assert!(
        invalid.is_err() || matches!(instrument(&invalid.unwrap()), Err(CountError::Invalid(_)))
    );
    let bad_body = [
        0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, // header
        0x01, 0x04, 0x01, 0x60, 0x00, 0x00, // type ()->()
        0x03, 0x02, 0x01, 0x00, // one func
        0x0a, 0x05, 0x01, 0x03, 0x00, 0x6a, 0x0b, // body: i32.add on empty stack
    ];
    let e = instrument(&bad_body).unwrap_err();
    assert!(matches!(e, CountError::Invalid(_)), "{e}");

    let taken = wat::parse_str(r#"(module (func (export "__loopbench_count")))"#).unwrap();
    assert!(
        matches!(instrument(&taken), Err(CountError::ExportCollision(n)) if n == "__loopbench_count")
    );

    let exceptions = wat::parse_str(r#"(module (tag $t) (func (export "f") (throw $t)))"#).unwrap();
    let e = instrument(&exceptions).unwrap_err();
    assert!(matches!(e, CountError::Unsupported { .. }), "{e}");
    assert!(e.to_string().contains("exception"), "{e}");

    let component = wat::parse_str("(component)").unwrap();
    assert!(instrument(&component).is_err());
}

#[test]
fn threads_modules_instrument_and_validate() {
    // wasmi cannot run shared memories; check the pass accepts atomics and
    // produces a valid module (instrument validates its output).
    let wasm = wat::parse_str(
        r#"(module (memory 1 1 shared)
             (func (export "f") (result i32)
               (i32.atomic.store (i32.const 0) (i32.const 1))
               (drop (i64.atomic.rmw.add (i32.const 8) (i64.const 2)))
               (atomic.fence)
               (memory.atomic.notify (i32.const 0) (i32.const 1))))"#,
    )
    .unwrap();
    let inst = instrument(&wasm).unwrap();
    assert!(inst.slots() > 0);
}
