//! The counting run is exact for every shape: counted per-iteration numbers
//! equal the declared ones at two different iteration counts, and the
//! instrumented module computes what the original does (its reps verify).

use loopbench::count::{
    check_declared, count_shape, count_shape_once, counting_engine_lacks, instrumented,
};
use loopbench::shapes::{catalog, Params, ShapeModule};

fn params(iters: Option<u64>) -> Params {
    Params {
        bytes: 64 << 10,
        iters,
        k: 8,
    }
}

/// Shapes wasmi (the counting engine, as built) can run: not the threads
/// shapes, and the SIMD ones only when wasmi's SIMD is compiled in.
fn countable() -> Vec<String> {
    let names: Vec<String> = catalog()
        .into_iter()
        .filter(|s| {
            let m = ShapeModule::build(loopbench::shapes::find(s.name()).unwrap(), &params(None))
                .unwrap();
            counting_engine_lacks(&m.wasm).unwrap().is_none()
        })
        .map(|s| s.name().to_string())
        .collect();
    assert!(names
        .iter()
        .all(|n| !n.starts_with("shared_") && n != "atomic_rmw"));
    assert!(names.len() >= 28, "{names:?}");
    names
}

#[test]
fn counted_equals_declared_for_every_shape() {
    for name in countable() {
        let m = ShapeModule::build(loopbench::shapes::find(&name).unwrap(), &params(None)).unwrap();
        let counted = count_shape(&m).unwrap_or_else(|e| panic!("{name}: {e}"));
        check_declared(&name, m.declared.as_ref().unwrap(), &counted)
            .unwrap_or_else(|e| panic!("{e}"));
    }
}

#[test]
fn absolute_counts_are_linear_in_iterations() {
    for name in countable() {
        let per = loopbench::shapes::find(&name)
            .unwrap()
            .declared(&params(None))
            .per;
        let counts: Vec<_> = [8, 24, 40]
            .iter()
            .map(|g| {
                let m = ShapeModule::build(
                    loopbench::shapes::find(&name).unwrap(),
                    &params(Some(g * per)),
                )
                .unwrap();
                let inst = instrumented(&m.wasm).unwrap();
                count_shape_once(&m, &inst, m.iters).unwrap_or_else(|e| panic!("{name}: {e}"))
            })
            .collect();
        let d = loopbench::shapes::find(&name)
            .unwrap()
            .declared(&params(None));
        // 16 more groups of `per` iterations add exactly 16 declared groups.
        for w in counts.windows(2) {
            assert_eq!(w[1].total_ops - w[0].total_ops, 16 * d.ops, "{name} ops");
            assert_eq!(
                w[1].taken_branches - w[0].taken_branches,
                16 * d.taken_branches,
                "{name} taken"
            );
            assert_eq!(w[1].calls - w[0].calls, 16 * d.calls, "{name} calls");
        }
        assert_eq!(
            counts[0].total_ops,
            counts[0].classes.values().sum::<u64>(),
            "{name}: classes sum to total"
        );
    }
}

#[test]
fn a_wrong_declaration_is_a_hard_error_naming_both() {
    let m = ShapeModule::build(
        loopbench::shapes::find("store_stream").unwrap(),
        &params(None),
    )
    .unwrap();
    let counted = count_shape(&m).unwrap();
    let mut wrong = *m.declared.as_ref().unwrap();
    wrong.ops -= 1;
    let err = check_declared("store_stream", &wrong, &counted)
        .unwrap_err()
        .to_string();
    assert_eq!(err, "counts for shape store_stream differ from its declaration: ops/iter counted 37 vs declared 36");
}

fn counted(name: &str) -> loopbench::results::IterCounts {
    let m = ShapeModule::build(loopbench::shapes::find(name).unwrap(), &params(None)).unwrap();
    loopbench::results::IterCounts::counted(&count_shape(&m).unwrap())
}

#[test]
fn the_simulated_predictor_separates_the_predictability_twins() {
    let periodic = counted("branch_periodic");
    let random = counted("branch_random");
    // Same instructions, same taken branches, per group of eight tokens.
    assert_eq!(periodic.classes, random.classes);
    assert_eq!(periodic.taken_branches, random.taken_branches);
    let (p, r) = (periodic.mispredicts.unwrap(), random.mispredicts.unwrap());
    // Three decisions per iteration: a period-8 stream is learned, a
    // random permutation per group is not (about half the br_ifs, most
    // of the four-way switches and calls).
    assert!(p < 0.05, "periodic: {p} mispredicts/iter");
    assert!(r > 1.0 && r < 3.0, "random: {r} mispredicts/iter");
    // A loop with no data-dependent branch mispredicts nothing once warm.
    assert!(counted("add_chain").mispredicts.unwrap() < 0.01);
    // The switch shapes walk random permutations too.
    assert!(counted("br_if_ladder").mispredicts.unwrap() > 0.5);
    assert!(counted("br_table_switch").mispredicts.unwrap() > 0.5);
}

#[test]
fn the_fitted_catalog_identifies_every_feature_it_counts() {
    use loopbench::model::{feature_vector, not_identifiable, FEATURES, HELD_OUT};
    let rows: Vec<Vec<f64>> = countable()
        .iter()
        .filter(|n| !HELD_OUT.contains(&n.as_str()))
        .map(|n| feature_vector(&counted(n)).unwrap())
        .collect();
    let missing: Vec<&str> = not_identifiable(&rows)
        .into_iter()
        .map(|j| FEATURES[j])
        .collect();
    // Atomics run on shared memory, which the counting engine lacks, and
    // SIMD only when wasmi is built with it: both keep declared counts.
    for f in &missing {
        assert!(
            *f == "atomic" || *f == "simd",
            "{f} is not identifiable: {missing:?}"
        );
    }
    assert!(FEATURES.contains(&"mispredict"));
}

#[test]
fn counted_shapes_report_folded_operands() {
    // locals_traffic: 12 local and 4 global instructions per iteration; the
    // globals are instructions in a register machine too, and every
    // local.get/set/tee and the skeleton's constant fold.
    let c = counted("locals_traffic");
    assert_eq!((c.classes["local"], c.classes["global"]), (12.0, 4.0));
    assert_eq!((c.folded["local"], c.folded["global"]), (12.0, 0.0));
    assert_eq!((c.classes["const"], c.folded["const"]), (1.0, 1.0));
    for name in countable() {
        let c = counted(&name);
        assert_eq!(
            c.folded.keys().collect::<Vec<_>>(),
            c.classes.keys().collect::<Vec<_>>(),
            "{name}"
        );
        for (class, n) in &c.folded {
            assert!(*n <= c.classes[class], "{name}: folded {class} {n}");
            if class != "local" && class != "const" {
                assert_eq!(*n, 0.0, "{name}: folded {class}");
            }
        }
    }
}
