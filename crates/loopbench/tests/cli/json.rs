use super::util::{assert_one_line_error, loopbench, SMALL};
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
        // Every rep inline (the reps file beside is tested below).
        "--json-reps",
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
    // A stream has no file beside it: every rep is inline.
    assert!(v.get("reps_file").is_none());
    assert!(!v["results"][0]["arms"][0]["reps"]
        .as_array()
        .unwrap()
        .is_empty());
}

/// A JSON file holds the summaries and names the compressed file beside it
/// that holds every rep; every reader puts them back, so the session reads
/// as measured: the same per-rep CSV, the same document inline.
#[test]
fn a_json_file_keeps_its_reps_beside_it_and_reads_back_whole() {
    let (mut cmd, dir) = loopbench();
    let mut args = vec!["run", "--engines", "wasmi,tinywasm", "--shapes", "lut"];
    args.extend_from_slice(SMALL);
    args.extend(["--json", "s.json", "--csv", "direct.csv", "--quiet"]);
    cmd.args(&args).assert().success();
    let path = |f: &str| dir.path().join(f);
    let text = std::fs::read_to_string(path("s.json")).unwrap();
    let summary: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(summary["reps_file"]["file"], "s.reps.json.gz");
    // At least the three arms' reps (wasmi, tinywasm, the null).
    assert!(summary["reps_file"]["parts"].as_u64().unwrap() >= 3);
    for field in [
        "samples_ns_per_iter",
        "samples_per_iter",
        "epoch_median_pct",
        "\"reps\": [",
    ] {
        assert!(!text.contains(field), "{field} in the summaries");
    }
    let gz = std::fs::read(path("s.reps.json.gz")).unwrap();
    assert_eq!(gz[..2], [0x1f, 0x8b], "gzip");

    let report = |args: &[&str]| {
        let (mut cmd, _) = loopbench();
        cmd.current_dir(dir.path())
            .arg("report")
            .args(args)
            .output()
            .unwrap()
    };
    // The per-rep CSV of the file is the one the session wrote.
    assert!(report(&["s.json", "--csv", "back.csv"]).status.success());
    assert_eq!(
        std::fs::read(path("back.csv")).unwrap(),
        std::fs::read(path("direct.csv")).unwrap()
    );
    // Inline on asking; split again, the same two files but for their key.
    assert!(report(&["s.json", "--json-reps", "--json", "whole.json"])
        .status
        .success());
    let whole: Value = serde_json::from_slice(&std::fs::read(path("whole.json")).unwrap()).unwrap();
    assert!(whole.get("reps_file").is_none());
    for arm in whole["results"][0]["arms"].as_array().unwrap() {
        let reps = arm["reps"].as_array().unwrap().len();
        assert_eq!(
            reps as u64,
            arm["verified_reps"].as_u64().unwrap(),
            "{}",
            arm["arm"]
        );
    }
    assert!(report(&["whole.json", "--json", "again.json"])
        .status
        .success());
    let without_key = |f: &str| {
        let mut v: Value = serde_json::from_slice(&std::fs::read(path(f)).unwrap()).unwrap();
        v["reps_file"]["key"] = Value::Null;
        v["reps_file"]["file"] = Value::Null;
        v
    };
    assert_eq!(without_key("again.json"), without_key("s.json"));

    // Through a link from elsewhere: the reps are beside the file itself.
    std::fs::create_dir(path("elsewhere")).unwrap();
    std::os::unix::fs::symlink(path("s.json"), path("elsewhere/link.json")).unwrap();
    assert!(report(&["elsewhere/link.json", "--csv", "linked.csv"])
        .status
        .success());

    // An input's reps file is an input: no output replaces it; a directory
    // where an output's reps file would go is refused before any work.
    let before = std::fs::read(path("s.reps.json.gz")).unwrap();
    let out = report(&["s.json", "--csv", "s.reps.json.gz"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(assert_one_line_error(&out.stderr).contains("is the input"));
    assert_eq!(std::fs::read(path("s.reps.json.gz")).unwrap(), before);
    std::fs::create_dir(path("taken.reps.json.gz")).unwrap();
    let out = report(&["s.json", "--json", "taken.json"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(assert_one_line_error(&out.stderr).contains("taken.reps.json.gz is a directory"));
    assert!(!path("taken.json").exists());

    // Each way the reps file can fail is one line naming it.
    let refused = |file: &str, why: &str| {
        let out = report(&[file]);
        assert_eq!(out.status.code(), Some(2));
        let err = assert_one_line_error(&out.stderr);
        assert!(err.contains(why), "{file}: {err}");
    };
    std::fs::copy(path("again.reps.json.gz"), path("s.reps.json.gz")).unwrap();
    refused(
        "s.json",
        "s.reps.json.gz beside it, which belongs to another document",
    );
    std::fs::write(path("s.reps.json.gz"), b"not gzip").unwrap();
    refused("s.json", "is not a gzip-compressed JSON file of reps");
    std::fs::remove_file(path("s.reps.json.gz")).unwrap();
    refused(
        "s.json",
        "its reps are in s.reps.json.gz beside it, which is missing",
    );
    let mut away = summary.clone();
    away["reps_file"]["file"] = "../again.reps.json.gz".into();
    std::fs::write(path("away.json"), away.to_string()).unwrap();
    refused("away.json", "which is not the name of a file beside it");
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
