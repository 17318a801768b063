//! The branch trace reports every decision in execution order, with the
//! operand that decided it, and the traced module computes what the
//! original does (function indices renumbered around the new import).

use loopbench_count::{trace_branches, Predictor, Site, Traced, TRACE_IMPORT};

const MODULE: &str = r#"
(module
  (import "env" "twice" (func $twice (param i32) (result i32)))
  (type $un (func (param i32) (result i32)))
  (table 2 funcref)
  (elem (i32.const 0) $inc $dec)
  (func $inc (type $un) local.get 0 i32.const 1 i32.add)
  (func $dec (type $un) local.get 0 i32.const 1 i32.sub)
  (func (export "run") (param $n i32) (result i32)
    (local $i i32) (local $acc i32)
    loop $l
      ;; acc = table[i & 1](acc)
      local.get $acc
      local.get $i
      i32.const 1
      i32.and
      call_indirect (type $un)
      local.set $acc
      ;; a 3-way switch on i % 3
      block $b2 block $b1 block $b0
        local.get $i
        i32.const 3
        i32.rem_u
        br_table $b0 $b1 $b2
      end
      local.get $acc
      call $twice
      local.set $acc
      end end
      local.get $i
      i32.const 1
      i32.add
      local.tee $i
      local.get $n
      i32.lt_u
      br_if $l
    end
    local.get $acc))
"#;

type Events = Vec<(i32, u32)>;

fn run(traced: &Traced, n: i32) -> (i32, Events) {
    let engine = wasmi::Engine::default();
    let module = wasmi::Module::new(&engine, &traced.wasm[..]).unwrap();
    let mut store = wasmi::Store::new(&engine, Events::new());
    let mut linker = wasmi::Linker::<Events>::new(&engine);
    linker
        .func_wrap("env", "twice", |x: i32| x.wrapping_mul(2))
        .unwrap();
    linker
        .func_wrap(
            TRACE_IMPORT.0,
            TRACE_IMPORT.1,
            |mut caller: wasmi::Caller<'_, Events>, v: i32, site: i32| {
                caller.data_mut().push((v, site as u32));
                v
            },
        )
        .unwrap();
    let instance = linker.instantiate_and_start(&mut store, &module).unwrap();
    let f = instance.get_typed_func::<i32, i32>(&store, "run").unwrap();
    let r = f.call(&mut store, n).unwrap();
    (r, store.into_data())
}

fn reference(n: i32) -> i32 {
    let mut acc = 0i32;
    for i in 0..n {
        acc = if i & 1 == 0 { acc + 1 } else { acc - 1 };
        if i % 3 == 0 {
            acc = acc.wrapping_mul(2);
        }
    }
    acc
}

#[test]
fn every_decision_is_reported_in_order() {
    let wasm = wat::parse_str(MODULE).unwrap();
    let traced = trace_branches(&wasm).unwrap();
    assert_eq!(
        traced.sites,
        vec![
            Site::Indirect,
            Site::Table { targets: 2 },
            Site::Conditional
        ]
    );
    let (r, events) = run(&traced, 10);
    assert_eq!(r, reference(10));
    assert_eq!(events.len(), 30);
    for (i, chunk) in events.chunks(3).enumerate() {
        let i = i as i32;
        assert_eq!(chunk[0], (i & 1, 0));
        assert_eq!(chunk[1], (i % 3, 1));
        assert_eq!(chunk[2], ((i + 1 < 10) as i32, 2));
    }
    assert_eq!(traced.decision(1, 2), Some(Ok(true)));
    assert_eq!(traced.decision(7, 1), Some(Err(2)));
    assert_eq!(traced.decision(0, 3), None);
}

#[test]
fn a_module_without_imports_or_types_gets_both() {
    let wasm = wat::parse_str("(module (func (export \"f\") (param i32) (result i32) local.get 0 if (result i32) i32.const 1 else i32.const 2 end))").unwrap();
    let traced = trace_branches(&wasm).unwrap();
    assert_eq!(traced.sites, vec![Site::Conditional]);
}

#[test]
fn the_predictor_learns_the_traced_loop() {
    // Periodic decisions only (i & 1, i % 3, the back-edge): after warm-up
    // only the loop exit is left to miss.
    let wasm = wat::parse_str(MODULE).unwrap();
    let traced = trace_branches(&wasm).unwrap();
    let (_, events) = run(&traced, 3000);
    let mut p = Predictor::default();
    let mut late = 0;
    for (k, (v, site)) in events.iter().enumerate() {
        let miss = match traced.decision(*v, *site).unwrap() {
            Ok(taken) => p.conditional(*site, taken),
            Err(target) => p.multiway(*site, target),
        };
        if k > 3000 {
            late += miss as u32;
        }
    }
    assert!(late <= 2, "{late} late mispredictions");
}
