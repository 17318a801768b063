use super::util::{loopbench, SMALL};
use serde_json::Value;

#[test]
fn json_has_the_schema_keys() {
    let (mut cmd, dir) = loopbench();
    let mut args = vec![
        "run",
        "--engines",
        "wasmi,tinywasm",
        "--shapes",
        "add_chain,load_stream",
        "--json",
        "out.json",
        // One code layout (no build-layout null arm): tests/layouts.rs
        // has the variants' keys.
        "--layout-builds",
        "1",
    ];
    args.extend_from_slice(SMALL);
    cmd.args(&args).assert().success();
    let v: Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("out.json")).unwrap()).unwrap();
    assert_eq!(v["schema"], "loopbench/2");
    for key in ["cpu", "cores", "os", "load_start", "load_end"] {
        assert!(v["machine"].get(key).is_some(), "machine.{key}");
    }
    for key in ["rounds", "warmup", "baseline", "bytes", "engines"] {
        assert!(v["session"].get(key).is_some(), "session.{key}");
    }
    assert_eq!(v["session"]["baseline"], "wasmi");
    let results = v["results"].as_array().unwrap();
    assert_eq!(results.len(), 2);
    for r in results {
        for key in [
            "shape",
            "iters",
            "bytes_per_iter",
            "arms",
            "comparisons",
            "null_control",
        ] {
            assert!(r.get(key).is_some(), "results[].{key}");
        }
        let roles: Vec<&str> = r["arms"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a["role"].as_str().unwrap())
            .collect();
        assert_eq!(roles, ["baseline", "candidate", "null"]);
        for a in r["arms"].as_array().unwrap() {
            assert!(a["ns_per_iter"]["min"].as_f64().unwrap() > 0.0);
            assert!(
                a["ns_per_iter"]["median"].as_f64().unwrap()
                    >= a["ns_per_iter"]["min"].as_f64().unwrap()
            );
            // 2 rounds requested, rounded up to a whole Williams design
            // for 3 arms (two squares: 6), in every epoch.
            // Each shape stops on its own; its epochs are in `stopped`.
            let epochs = r["stopped"]["epochs"].as_u64().unwrap();
            assert_eq!(v["session"]["rounds"], 6);
            assert_eq!(a["verified_reps"].as_u64().unwrap(), 6 * epochs);
            assert_eq!(a["reps"].as_array().unwrap().len() as u64, 6 * epochs);
        }
        for c in r["comparisons"].as_array().unwrap() {
            assert_eq!(c["vs"], "wasmi");
            assert_eq!(c["ci_pct"].as_array().unwrap().len(), 2);
            assert!(["faster", "slower", "within_noise"].contains(&c["verdict"].as_str().unwrap()));
        }
        assert_eq!(r["null_control"]["ci_pct"].as_array().unwrap().len(), 2);
    }
}

#[test]
fn json_to_stdout_is_pure_json() {
    let (mut cmd, _dir) = loopbench();
    let mut args = vec![
        "run",
        "--engines",
        "wasmi",
        "--shapes",
        "lut",
        "--json",
        "-",
    ];
    args.extend_from_slice(SMALL);
    let out = cmd.args(&args).output().unwrap();
    assert!(out.status.success());
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["complete"], true);
}

#[test]
fn skipped_shapes_carry_a_reason() {
    let (mut cmd, _dir) = loopbench();
    let mut args = vec![
        "run",
        "--engines",
        "wasmi",
        "--shapes",
        "atomic_rmw",
        "--json",
        "-",
    ];
    args.extend_from_slice(SMALL);
    let out = cmd.args(&args).output().unwrap();
    // Nothing was measured at all: a failure, with the reason, and the
    // skipped shape still in the results.
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("nothing was measured"), "{err}");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let arm = &v["results"][0]["arms"][0];
    assert_eq!(
        arm["skipped"],
        "skipped: wasmi lacks threads (shared memory and atomics)"
    );
    assert!(
        arm.get("ns_per_iter").is_none(),
        "a skipped arm has no number"
    );
}

#[test]
fn a_shape_with_nothing_to_compare_says_so_after_one_epoch() {
    // wasm3 (the baseline) lacks SIMD, so only tinywasm runs simd_arith:
    // its time is reported, and the stop reason is not "precision reached".
    let (mut cmd, _dir) = loopbench();
    let mut args = vec![
        "run",
        "--engines",
        "wasm3,tinywasm",
        "--shapes",
        "simd_arith",
        "--json",
        "-",
    ];
    args.extend_from_slice(SMALL);
    let out = cmd.args(&args).output().unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let r = &v["results"][0];
    assert_eq!(r["stopped"]["reason"], "nothing to compare", "{r}");
    assert_eq!(r["stopped"]["epochs"], 1);
    assert!(r["stopped"].get("half_width_pct").is_none());
    assert!(r["arms"][1]["ns_per_iter"].is_object(), "{r}");
}
