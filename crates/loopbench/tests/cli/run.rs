use super::util::{loopbench, SMALL};
use predicates::prelude::*;

#[test]
fn list_shows_shapes_and_engines() {
    let (mut cmd, _dir) = loopbench();
    cmd.arg("list")
        .assert()
        .success()
        .stdout(predicate::str::contains("add_chain"))
        .stdout(predicate::str::contains("br_table_switch"))
        .stdout(predicate::str::contains("random_ops"))
        .stdout(predicate::str::contains("wasmi 2."))
        .stdout(predicate::str::contains("wasmi:fuel"));
}

#[test]
fn show_prints_wat_and_counts() {
    let (mut cmd, _dir) = loopbench();
    cmd.args(["show", "store_stream"])
        .assert()
        .success()
        .stdout(predicate::str::contains("(module"))
        .stdout(predicate::str::contains("i32.store"))
        .stdout(predicate::str::contains(
            "declared per 1 iteration(s): ops 37",
        ));
}

#[test]
fn a_session_prints_the_table_with_null_floor() {
    let (mut cmd, _dir) = loopbench();
    let mut args = vec![
        "run",
        "--engines",
        "wasmi,wasmi:fuel",
        "--shapes",
        "add_chain,br_chain",
        "--verbose",
    ];
    args.extend_from_slice(SMALL);
    cmd.args(&args)
        .assert()
        .success()
        .stdout(predicate::str::contains("wasmi#null"))
        .stdout(predicate::str::contains("null floor:"))
        .stdout(predicate::str::contains("wasmi:fuel"))
        .stdout(predicate::str::contains(
            "A micro-benchmark % is not an app %",
        ));
}

#[test]
fn user_shape_file_runs() {
    let (mut cmd, dir) = loopbench();
    std::fs::write(
        dir.path().join("sum.wat"),
        r#"(module
  (global $acc (mut i32) (i32.const 0))
  (func (export "setup") (param i32) i32.const 0 global.set $acc)
  (func (export "run") (param $n i32)
    (local $i i32)
    loop $l
      global.get $acc local.get $i i32.add global.set $acc
      local.get $i i32.const 1 i32.add local.tee $i local.get $n i32.lt_u br_if $l
    end)
  (func (export "verify") (result i32) global.get $acc i32.const 32640 i32.eq))"#,
    )
    .unwrap();
    let out = cmd
        .args([
            "run",
            "--engines",
            "wasmi,tinywasm",
            "--shape-file",
            "sum.wat",
            "--iters",
            "256",
            "--rounds",
            "2",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("sum"));
}

#[test]
fn phases_show_where_the_time_went() {
    let (mut cmd, _dir) = loopbench();
    let mut args = vec![
        "run",
        "--engines",
        "wasmi,tinywasm",
        "--shapes",
        "lut",
        "--phases",
    ];
    args.extend_from_slice(SMALL);
    let out = cmd.args(&args).output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("where the session's"), "{text}");
    for arm in ["wasmi ", "tinywasm ", "wasmi#null ", "(session) "] {
        assert!(
            text.lines().any(|l| l.trim_start().starts_with(arm)),
            "no phase row for {arm}: {text}"
        );
    }
    assert!(
        text.contains("counting run") && text.contains("verify") && text.contains("instantiate")
    );
    // Every arm ran in worker processes: their own phases come back from
    // the workers (spawn is the orchestrator's), not "-". Columns are 15
    // characters wide after a 24-character arm column.
    fn column(line: &str, k: usize) -> Option<&str> {
        line.get(24 + 15 * k..24 + 15 * (k + 1)).map(str::trim)
    }
    let header: Vec<&str> = [
        "spawn",
        "pilot",
        "module",
        "compile",
        "instantiate",
        "setup",
        "timed run",
        "verify",
    ]
    .to_vec();
    for arm in ["wasmi ", "tinywasm ", "wasmi#null "] {
        let phases = &text[text.find("where the session's").unwrap()..];
        let line = phases
            .lines()
            .find(|l| l.trim_start().starts_with(arm))
            .unwrap();
        for (k, phase) in header.iter().enumerate() {
            let cell = column(line, k).unwrap_or_default();
            // No pilot under --iters; every other phase happened.
            assert_eq!(
                cell == "-",
                *phase == "pilot",
                "{arm}{phase}: `{cell}` in {line}"
            );
        }
    }
    assert!(
        !text.contains("timed runs are 0.0% of the session"),
        "{text}"
    );
}

#[test]
fn count_reports_exact_shape_counts_as_json() {
    let (mut cmd, dir) = loopbench();
    cmd.args([
        "count", "br_chain", "--iters", "100", "--bytes", "64k", "--json", "c.json",
    ])
    .assert()
    .success();
    let v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("c.json")).unwrap()).unwrap();
    // br_chain with K = 8: 63 ops and 9 taken branches per iteration, plus
    // a fixed prologue and epilogue.
    let total = v["total_ops"].as_u64().unwrap();
    assert!(total > 6300 && total < 6300 + 100, "{total}");
    let classes: u64 = v["classes"]
        .as_object()
        .unwrap()
        .values()
        .map(|c| c.as_u64().unwrap())
        .sum();
    assert_eq!(classes, total);
    for key in ["transfers", "bytes_loaded", "bytes_stored"] {
        assert!(v.get(key).is_some(), "{key}");
    }
}

#[test]
fn count_of_a_trapping_module_reports_what_ran() {
    let (mut cmd, dir) = loopbench();
    std::fs::write(
        dir.path().join("t.wat"),
        r#"(module (memory 1) (func (export "go") (param $n i32)
             (local $i i32)
             loop $l
               local.get $i i32.const 65532 i32.mul local.get $i i32.store
               local.get $i i32.const 1 i32.add local.tee $i local.get $n i32.lt_u br_if $l
             end))"#,
    )
    .unwrap();
    let out = cmd
        .args(["count", "t.wat", "--invoke", "go", "10", "--json", "-"])
        .output()
        .unwrap();
    assert!(
        !out.status.success(),
        "the call traps, so the exit code says so"
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    // i = 0 and 1 store in bounds; i = 2 traps at the store: two full
    // iterations (12 ops each) and five ops of the third, plus `loop`.
    assert_eq!(v["classes"]["store"], 3);
    assert!(v["stopped"].as_str().unwrap().starts_with("trap"));
    assert!(String::from_utf8_lossy(&out.stderr).contains("stopped early"));
}

#[test]
fn model_prints_prices_and_residuals() {
    let (mut cmd, _dir) = loopbench();
    let out = cmd
        .args([
            "model",
            "--engines",
            "wasmi",
            "--bytes",
            "64k",
            "--rounds",
            "2",
            "--warmup",
            "0",
            "--json",
            "-",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let models = v["models"].as_array().unwrap();
    assert_eq!(models.len(), 1, "the null control is not modelled");
    let m = &models[0];
    assert_eq!(m["arm"], "wasmi");
    for p in m["prices"].as_array().unwrap() {
        assert!(p["ns"].as_f64().unwrap() >= 0.0, "prices are non-negative");
        assert_eq!(p["ci"].as_array().unwrap().len(), 2);
    }
    let residuals = m["residuals"].as_array().unwrap();
    let shapes: Vec<&str> = residuals
        .iter()
        .map(|r| r["shape"].as_str().unwrap())
        .collect();
    assert!(
        shapes.contains(&"br_if_ladder") && shapes.contains(&"lut"),
        "{shapes:?}"
    );
    let held: Vec<&str> = residuals
        .iter()
        .filter(|r| r["kind"] == "held_out")
        .map(|r| r["shape"].as_str().unwrap())
        .collect();
    assert_eq!(held, ["br_if_ladder", "br_table_switch", "random_ops"]);
    let pairs: Vec<&str> = m["pairs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert!(
        pairs.iter().any(|p| p.starts_with("taken branch")),
        "{pairs:?}"
    );
    assert!(
        pairs.iter().any(|p| p.starts_with("misprediction")),
        "{pairs:?}"
    );
    // Every counted class and the predictor's mispredictions are features,
    // and the catalog separates them (atomic and SIMD keep declared counts).
    let prices = m["prices"].as_array().unwrap();
    for f in [
        "float",
        "conversion",
        "return",
        "other",
        "const",
        "int",
        "mispredict",
    ] {
        let p = prices.iter().find(|p| p["feature"] == f).unwrap();
        assert_eq!(p["identifiable"], true, "{f}");
    }
    assert!(m.get("caveat").is_none(), "wasmi is an interpreter");
}

#[test]
fn model_from_a_saved_session_refits_it_without_running_anything() {
    let (mut cmd, dir) = loopbench();
    let saved = dir.path().join("model.json");
    let out = cmd
        .args([
            "model",
            "--engines",
            "wasmi",
            "--shapes",
            "add_chain,br_chain,lut,load_stream,call_direct,f64_chain,branch_periodic,branch_random",
            "--bytes",
            "64k",
            "--rounds",
            "3",
            "--warmup",
            "0",
            "--min-epochs",
            "2",
            "--max-epochs",
            "2",
            "--json",
        ])
        .arg(&saved)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let first: serde_json::Value = serde_json::from_slice(&std::fs::read(&saved).unwrap()).unwrap();

    // The refit is the same fit: the bootstrap is seeded by shape and arm.
    let (mut cmd, _d) = loopbench();
    let out = cmd
        .args(["model", "--from"])
        .arg(&saved)
        .args(["--json", "-"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let again: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(again["models"], first["models"]);
    assert_eq!(again["session"]["id"], first["session"]["id"]);

    let m = &first["models"][0];
    let price = |f: &str| {
        m["prices"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["feature"] == f)
            .unwrap()
            .clone()
    };
    // The twins differ only in mispredictions, so they price them.
    assert!(price("mispredict")["from_pair"]
        .as_str()
        .unwrap()
        .contains("branch_random - branch_periodic"));
    assert!(price("int")["from_pair"].is_null());
    for r in m["residuals"].as_array().unwrap() {
        let ci = r["ci_pct"].as_array().unwrap();
        assert!(ci[0].as_f64().unwrap() <= ci[1].as_f64().unwrap(), "{r}");
        if r["kind"] != "fit" {
            assert!(r.get("loo_pct").is_none(), "{r}");
        }
    }

    // Options of a session that is not run are refused, not ignored.
    let (mut cmd, _d) = loopbench();
    let out = cmd
        .args(["model", "--engines", "wasm3", "--from"])
        .arg(&saved)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("--engines and --shapes do not apply"), "{err}");
    let (mut cmd, _d) = loopbench();
    let out = cmd
        .args(["model", "--from", "no-such-file.json"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert_eq!(String::from_utf8_lossy(&out.stderr).lines().count(), 1);
}
