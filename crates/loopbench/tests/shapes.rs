//! Every built-in shape verifies on every compiled-in engine that supports
//! it, and every verifier fails when the loop body is disabled.

use loopbench::arm::{skip_reason, Arm, InProcessArm};
use loopbench::arm::{ArmSpec, EngineKind};
use loopbench::shapes::{catalog, Body, Params, ShapeModule};

fn small() -> Params {
    Params {
        bytes: 64 << 10,
        iters: None,
        k: 8,
    }
}

/// A modest iteration count per shape: enough to wrap the working set.
fn iters_for(m: &ShapeModule) -> u64 {
    let per = m.declared.map(|d| d.per).unwrap_or(1);
    (m.iters.min(4096) / per).max(1) * per
}

fn all_arms() -> Vec<ArmSpec> {
    let mut specs = ArmSpec::defaults();
    specs.push("wasmi:fuel".parse().unwrap());
    for kind in [EngineKind::Wasmtime, EngineKind::Wasmer] {
        if kind.compiled_in() {
            for (opt, _) in kind.options() {
                specs.push(ArmSpec {
                    engine: kind,
                    options: vec![opt.to_string()],
                    worker: None,
                });
            }
        }
    }
    specs
}

#[test]
fn every_shape_verifies_on_every_engine() {
    let mut ran = 0;
    for spec in all_arms() {
        let arm = InProcessArm::new(&spec, spec.to_string()).unwrap();
        for shape in catalog() {
            let probe = ShapeModule::build(shape, &small()).unwrap();
            let params = Params {
                iters: Some(iters_for(&probe)),
                ..small()
            };
            let module =
                ShapeModule::build(loopbench::shapes::find(probe.name()).unwrap(), &params)
                    .unwrap();
            if let Some(reason) = skip_reason(&arm, &module).unwrap() {
                assert!(reason.contains("lacks"), "{reason}");
                continue;
            }
            let mut prepared = arm
                .prepare(&module)
                .unwrap_or_else(|e| panic!("{spec} {}: {e}", module.name()));
            for rep in 0..2 {
                prepared
                    .rep(rep)
                    .unwrap_or_else(|e| panic!("{spec} {}: {e}", module.name()));
            }
            ran += 1;
        }
    }
    // 26 plain shapes on wasmi, wasmi:fuel (no SIMD), tinywasm (28);
    // wasm3 lacks bulk memory, tail calls and SIMD (23).
    assert!(ran >= 26 * 2 + 28 + 23, "only {ran} shape/arm pairs ran");
}

#[test]
fn every_verifier_fails_with_the_body_disabled() {
    // The shared shapes need an engine with the threads proposal.
    let spec = if EngineKind::Wasmtime.compiled_in() {
        "wasmtime:cranelift"
    } else {
        "wasmi"
    };
    let spec: ArmSpec = spec.parse().unwrap();
    let arm = InProcessArm::new(&spec, spec.to_string()).unwrap();
    let mut checked = 0;
    let mut skipped = Vec::new();
    for shape in catalog() {
        let params = Params {
            iters: Some(shape.declared(&small()).per * 64),
            ..small()
        };
        let mut module = ShapeModule::build(shape, &params).unwrap();
        module.wasm = wat::parse_str(module.shape.wat(&params, Body::Disabled)).unwrap();
        if let Some(reason) = skip_reason(&arm, &module).unwrap() {
            skipped.push((module.name().to_string(), reason));
            continue;
        }
        let mut prepared = arm.prepare(&module).unwrap();
        let err = prepared.rep(0).expect_err(&format!(
            "{}: verify passed with the body disabled",
            module.name()
        ));
        let text = err.to_string();
        assert!(
            text.starts_with("verify failed: shape "),
            "{}: {text}",
            module.name()
        );
        assert!(text.contains("expected"), "{text}");
        checked += 1;
    }
    // wasmtime runs every shape; wasmi lacks threads (and SIMD unless built with it).
    if EngineKind::Wasmtime.compiled_in() {
        assert!(skipped.is_empty(), "{skipped:?}");
    } else {
        assert!(
            skipped
                .iter()
                .all(|(_, r)| r.contains("threads") || r.contains("simd")),
            "{skipped:?}"
        );
        assert!(skipped.len() <= 5, "{skipped:?}");
    }
    assert_eq!(checked + skipped.len(), catalog().len());
}

/// Declared counts are a function of the parameters only; K scales the chain.
#[test]
fn chain_counts_follow_k() {
    let d = |k| {
        loopbench::shapes::find("br_chain")
            .unwrap()
            .declared(&Params { k, ..small() })
    };
    assert_eq!(d(16).ops - d(8).ops, 8 * 7);
    assert_eq!(d(16).taken_branches - d(8).taken_branches, 8);
}
