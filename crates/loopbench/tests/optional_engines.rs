//! The optional engine adapters (features `wasmtime` and `wasmer`): every arm
//! runs every built-in shape it claims to support, with verified reps, and
//! every proposal claim is checked both ways: a claimed proposal runs a probe
//! module correctly, an unclaimed one is refused by the engine itself (so the
//! declared support is what the engine does, not a guess in either
//! direction).
//!
//! Run with `cargo test --release --features wasmtime,wasmer --test
//! integration optional_engines::` (release: the engines' debug builds are
//! slow to compile and to run). Without either feature the module is
//! compiled out (tests/tests.rs).

use loopbench::arm::ArmSpec;
use loopbench::arm::{self, Arm, InProcessArm};
use loopbench::proposals::{self, Proposal};
use loopbench::shapes::{self, Params, ShapeModule};

/// Every arm of the optional engines compiled into this test binary.
fn optional_arms() -> Vec<ArmSpec> {
    let mut names: Vec<&str> = Vec::new();
    if cfg!(feature = "wasmtime") {
        names.extend(["wasmtime:cranelift", "wasmtime:winch", "wasmtime:pulley"]);
    }
    if cfg!(feature = "wasmer") {
        names.extend(["wasmer:singlepass", "wasmer:cranelift"]);
    }
    names
        .into_iter()
        .map(|n| n.parse().expect("arm spec parses"))
        .collect()
}

fn in_process(spec: &ArmSpec) -> InProcessArm {
    InProcessArm::new(spec, spec.to_string()).unwrap_or_else(|e| panic!("{spec}: {e}"))
}

/// A small working set, and an iteration count that is a multiple of the
/// shape's declared group size.
fn small_module(shape: Box<dyn shapes::Shape>) -> ShapeModule {
    let mut params = Params {
        bytes: 64 << 10,
        iters: None,
        k: 8,
    };
    let per = shape.declared(&params).per.max(1);
    params.iters = Some(per * 512u64.div_ceil(per));
    ShapeModule::build(shape, &params).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn every_arm_runs_and_verifies_every_shape_it_supports() {
    let mut ran = 0;
    let mut skipped = Vec::new();
    for spec in optional_arms() {
        let arm = in_process(&spec);
        for shape in shapes::catalog() {
            let module = small_module(shape);
            if let Some(reason) = arm::skip_reason(&arm, &module).expect("shape validates") {
                skipped.push(format!("{} on {spec}: {reason}", module.name()));
                continue;
            }
            let mut prepared = arm
                .prepare(&module)
                .unwrap_or_else(|e| panic!("prepare {} on {spec}: {e}", module.name()));
            for rep in 0..2 {
                // Each rep resets, runs and verifies; a wrong result is an Err.
                prepared
                    .rep(rep)
                    .unwrap_or_else(|e| panic!("rep {rep} of {} on {spec}: {e}", module.name()));
            }
            ran += 1;
        }
    }
    // The skips are exactly the proposals each backend declares it lacks:
    // threads on wasmtime:pulley, tail calls on winch and on wasmer, SIMD on
    // wasmer's singlepass.
    let expected = |s: &str| {
        let threads = ["shared_store_stream", "shared_load_stream", "atomic_rmw"]
            .iter()
            .any(|n| {
                s.starts_with(&format!("{n} on wasmtime:pulley: "))
                    && s.ends_with("lacks threads (shared memory and atomics)")
            });
        let tail =
            s.starts_with("tail_call on wasmtime:winch: ") || s.starts_with("tail_call on wasmer:");
        let simd = s.starts_with("simd_") && s.contains(" on wasmer:singlepass: ");
        threads || tail || simd
    };
    assert!(
        skipped.iter().all(|s| expected(s)),
        "unexpected skips: {skipped:#?}"
    );
    if cfg!(feature = "wasmtime") {
        assert!(
            skipped.iter().filter(|s| s.contains("wasmtime:")).count() == 4,
            "{skipped:#?}"
        );
    }
    let shapes = shapes::catalog().len();
    assert_eq!(ran + skipped.len(), optional_arms().len() * shapes);
}

#[cfg(feature = "wasmtime")]
#[test]
fn shared_shapes_run_on_cranelift_and_are_skipped_on_pulley() {
    let shared = ["shared_store_stream", "shared_load_stream", "atomic_rmw"];
    let cranelift = in_process(&"wasmtime:cranelift".parse().unwrap());
    let pulley = in_process(&"wasmtime:pulley".parse().unwrap());
    for name in shared {
        let module = small_module(shapes::find(name).unwrap_or_else(|| panic!("no shape {name}")));
        assert_eq!(
            arm::skip_reason(&cranelift, &module).unwrap(),
            None,
            "{name} skipped on cranelift"
        );
        let reason = arm::skip_reason(&pulley, &module)
            .unwrap()
            .unwrap_or_else(|| panic!("{name} not skipped on pulley"));
        assert!(
            reason.starts_with("wasmtime:pulley lacks threads"),
            "{name}: reason was `{reason}`"
        );
    }
}

/// One tiny module per proposal, using nothing else, with the value `run(n)`
/// must return.
struct Probe {
    proposal: Proposal,
    wat: &'static str,
    arg: i32,
    expected: i32,
}

const PROBES: [Probe; 4] = [
    Probe {
        proposal: Proposal::Threads,
        wat: r#"(module
          (memory (export "memory") 1 1 shared)
          (func (export "run") (param $n i32) (result i32)
            (drop (i32.atomic.rmw.add (i32.const 16) (local.get $n)))
            (drop (i32.atomic.rmw.add (i32.const 16) (local.get $n)))
            (i32.atomic.load (i32.const 16))))"#,
        arg: 0x1234,
        expected: 0x2468,
    },
    Probe {
        proposal: Proposal::Simd,
        wat: r#"(module
          (func (export "run") (param $n i32) (result i32)
            (i32x4.extract_lane 2
              (i32x4.mul (i32x4.splat (local.get $n)) (i32x4.splat (i32.const 3))))))"#,
        arg: 1001,
        expected: 3003,
    },
    Probe {
        proposal: Proposal::BulkMemory,
        wat: r#"(module
          (memory (export "memory") 1)
          (func (export "run") (param $n i32) (result i32)
            (memory.fill (i32.const 0) (local.get $n) (i32.const 8))
            (memory.copy (i32.const 100) (i32.const 0) (i32.const 8))
            (i32.load (i32.const 102))))"#,
        arg: 0x5A,
        expected: 0x5A5A_5A5A,
    },
    // 100 000 nested calls would exhaust the stack without real tail calls.
    Probe {
        proposal: Proposal::TailCall,
        wat: r#"(module
          (func $count (param $n i32) (param $acc i32) (result i32)
            (if (result i32) (i32.eqz (local.get $n))
              (then (local.get $acc))
              (else (return_call $count
                      (i32.sub (local.get $n) (i32.const 1))
                      (i32.add (local.get $acc) (i32.const 3))))))
          (func (export "run") (param $n i32) (result i32)
            (return_call $count (local.get $n) (i32.const 0))))"#,
        arg: 100_000,
        expected: 300_000,
    },
];

#[test]
fn probes_use_exactly_their_proposal() {
    for p in &PROBES {
        let wasm = wat::parse_str(p.wat).unwrap();
        let needed = proposals::required(&wasm).unwrap();
        assert_eq!(
            needed.into_iter().collect::<Vec<_>>(),
            vec![p.proposal],
            "probe for {}",
            p.proposal
        );
    }
}

/// Claimed proposals run correctly; unclaimed ones are refused by the engine
/// with an error (at compile or instantiation), never run and never panic.
#[test]
fn declared_support_matches_what_each_engine_does() {
    for spec in optional_arms() {
        let engine = spec.build().unwrap();
        let claimed = engine.supports();
        for p in &PROBES {
            let wasm = wat::parse_str(p.wat).unwrap();
            let outcome = engine
                .compile(&wasm)
                .and_then(|c| c.instantiate())
                .and_then(|mut i| i.call("run", Some(p.arg), None));
            if claimed.contains(&p.proposal) {
                let got = outcome
                    .unwrap_or_else(|e| panic!("{spec} claims {} but failed: {e}", p.proposal));
                assert_eq!(got, Some(p.expected), "{spec}, {}", p.proposal);
            } else {
                assert!(
                    outcome.is_err(),
                    "{spec} does not claim {} but ran it: {outcome:?}",
                    p.proposal
                );
            }
        }
    }
}

#[test]
fn host_memory_access_round_trips_on_ordinary_and_shared_memory() {
    for spec in optional_arms() {
        let engine = spec.build().unwrap();
        for (kind, wat) in [
            ("ordinary", r#"(module (memory (export "memory") 2))"#),
            (
                "shared",
                r#"(module (memory (export "memory") 2 2 shared))"#,
            ),
        ] {
            let wasm = wat::parse_str(wat).unwrap();
            let shared = kind == "shared";
            if shared && !engine.supports().contains(&Proposal::Threads) {
                continue;
            }
            let mut inst = engine.compile(&wasm).unwrap().instantiate().unwrap();
            let data: Vec<u8> = (0..300u32).map(|i| (i * 7 + 1) as u8).collect();
            // Straddles the page boundary and ends on the memory's last byte.
            inst.write_memory(65536 - 100, &data).unwrap();
            inst.write_memory(2 * 65536 - 4, &[9, 8, 7, 6]).unwrap();
            assert_eq!(
                inst.read_memory(65536 - 100, 300).unwrap(),
                data,
                "{spec}, {kind}"
            );
            assert_eq!(
                inst.read_memory(2 * 65536 - 4, 4).unwrap(),
                [9, 8, 7, 6],
                "{spec}, {kind}"
            );
            assert!(
                inst.write_memory(2 * 65536 - 3, &[0; 4]).is_err(),
                "{spec}, {kind}: write past the end"
            );
            assert!(
                inst.read_memory(2 * 65536, 1).is_err(),
                "{spec}, {kind}: read past the end"
            );
            assert!(
                inst.read_memory(u64::MAX, 1).is_err(),
                "{spec}, {kind}: offset overflow"
            );
        }
    }
}

#[test]
fn versions_name_the_backend_and_two_backends_are_refused() {
    for spec in optional_arms() {
        let version = spec.build().unwrap().version();
        let backend = &spec.options[0];
        assert!(
            version.ends_with(&format!("({backend})")),
            "{spec}: {version}"
        );
        assert!(version.starts_with(spec.engine.name()), "{spec}: {version}");
    }
    let mut doubles = Vec::new();
    if cfg!(feature = "wasmtime") {
        doubles.push("wasmtime:winch,pulley");
    }
    if cfg!(feature = "wasmer") {
        doubles.push("wasmer:singlepass,cranelift");
    }
    for d in doubles {
        let spec: ArmSpec = d.parse().unwrap();
        let err = spec.build().err().unwrap_or_else(|| panic!("{d} accepted"));
        assert!(err.to_string().contains("choose one"), "{d}: {err}");
    }
}

#[test]
fn a_trap_is_an_error_not_a_panic() {
    let wat = r#"(module (memory (export "memory") 1)
      (func (export "run") (param $n i32) (result i32) (i32.div_u (i32.const 1) (local.get $n))))"#;
    let wasm = wat::parse_str(wat).unwrap();
    for spec in optional_arms() {
        let mut inst = spec
            .build()
            .unwrap()
            .compile(&wasm)
            .unwrap()
            .instantiate()
            .unwrap();
        assert_eq!(inst.call("run", Some(1), None).unwrap(), Some(1), "{spec}");
        let err = inst
            .call("run", Some(0), None)
            .expect_err("division by zero traps");
        assert!(
            !err.to_string().contains('\n'),
            "{spec}: multi-line error: {err}"
        );
        assert!(
            inst.call("nope", Some(1), None).is_err(),
            "{spec}: missing export"
        );
    }
}
