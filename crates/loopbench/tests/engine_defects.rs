//! Engine defects the apps found, each reduced to a small module in
//! `tests/fixtures/engine-defects/` that the app catalog names: every other
//! engine compiled in gives the right answer, the defective one the wrong
//! answer the module's comment describes. Once the engine is fixed this
//! fails, and the catalog's entry goes with the module.

use loopbench::apps;
use loopbench::arm::{ArmSpec, EngineKind};

/// `export(arg)` of `wasm` on the compiled-in engine `kind`, with its version.
fn answer(kind: EngineKind, wasm: &[u8], export: &str, arg: i32) -> (String, Option<i32>) {
    let engine = kind.name().parse::<ArmSpec>().unwrap().build().unwrap();
    let mut inst = engine.compile(wasm).unwrap().instantiate().unwrap();
    let got = inst.call(export, Some(arg), None).unwrap();
    (engine.version(), got)
}

#[test]
fn tinywasm_010_skips_a_tee_after_a_block_that_a_branch_leaves() {
    let zstd = apps::find("zstd").unwrap();
    let defect = zstd
        .known_defect("tinywasm 0.10.0")
        .expect("the zstd app names tinywasm 0.10's defect");
    let wasm = wat::parse_file(apps::root().join(defect.reduced)).unwrap();
    let engines: Vec<EngineKind> = EngineKind::ALL
        .into_iter()
        .filter(|k| *k != EngineKind::Mock && k.compiled_in())
        .collect();
    assert!(engines.contains(&EngineKind::Tinywasm) && engines.contains(&EngineKind::Wasmi));
    for kind in engines {
        // Falling through, every engine agrees.
        let (version, got) = answer(kind, &wasm, "tee_after_branch", 0);
        assert_eq!(got, Some(0), "{version}, falling through");
        let (version, got) = answer(kind, &wasm, "tee_after_branch", 1);
        if version.starts_with(defect.engine) {
            assert_eq!(
                got,
                Some(1),
                "{version} now gives the right answer to {}: the defect is fixed, so remove it \
                 from the zstd app's known_defects and the module",
                defect.reduced
            );
        } else {
            assert_eq!(got, Some(2), "{version}, taking the branch");
        }
    }
}
