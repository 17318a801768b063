//! `--counters`: availability with reasons, TSC readings, and callgrind's
//! exact instruction counts (deterministic, linear in iterations, blind to
//! setup and verify). The callgrind tests are small because valgrind is
//! slow; they skip, saying why, only when valgrind is not installed.

use super::util::{assert_one_line_error, loopbench};
use serde_json::Value;
use std::path::Path;

fn run_json(args: &[&str]) -> Value {
    let (mut cmd, _dir) = loopbench();
    let out = cmd
        .args(args)
        .args(["--json", "-", "--quiet"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "loopbench {args:?} failed: {}\n{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("bad JSON ({e}): {}", String::from_utf8_lossy(&out.stdout)))
}

/// [`run_json`], with the document also saved at `path` for a later
/// `--from` or `--instructions-from`.
fn saved_json(args: &[&str], path: &Path) -> Value {
    let doc = run_json(args);
    std::fs::write(path, serde_json::to_vec(&doc).unwrap()).unwrap();
    doc
}

fn valgrind_present() -> bool {
    let ok = std::process::Command::new("valgrind")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        eprintln!("SKIPPED: valgrind is not installed (apt-get install valgrind); callgrind counts not tested");
    }
    ok
}

/// Total callgrind Ir of every measured rep of `arm` on the first shape.
fn ir_per_rep(report: &Value, arm: &str) -> Vec<u64> {
    let shape = &report["results"][0];
    let iters = shape["iters"].as_f64().unwrap();
    let a = shape["arms"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["arm"] == arm)
        .unwrap_or_else(|| panic!("no arm {arm}"));
    let samples = a["counters"]["values"]["callgrind_ir"]["samples_per_iter"]
        .as_array()
        .unwrap_or_else(|| panic!("no callgrind_ir for {arm}: {a}"));
    samples
        .iter()
        .map(|s| (s.as_f64().expect("a rep without a count") * iters).round() as u64)
        .collect()
}

#[test]
fn bad_counter_names_are_one_line_errors() {
    let (mut cmd, _dir) = loopbench();
    let out = cmd
        .args(["run", "--counters", "tsc,cycles"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = assert_one_line_error(&out.stderr);
    assert!(err.contains("unknown counter `cycles`"), "{err}");
    let (mut cmd, _dir) = loopbench();
    let out = cmd
        .args(["run", "--counters", "tsc,callgrind"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(assert_one_line_error(&out.stderr).contains("cannot be combined"));
}

/// Every counter in the JSON `counters` section is available with a
/// description or unavailable with a reason; unavailable counters have no
/// values anywhere in the results (never a zero).
#[test]
fn availability_and_reasons_are_reported() {
    let r = run_json(&[
        "run",
        "--engines",
        "wasmi",
        "--shapes",
        "add_chain",
        "--bytes",
        "64k",
        "--iters",
        "2000",
        "--rounds",
        "2",
        "--counters",
        "tsc,perf",
    ]);
    let counters = r["counters"].as_array().unwrap();
    assert_eq!(counters.len(), 2, "{counters:?}");
    for c in counters {
        let available = c["available"].as_bool().unwrap();
        if available {
            assert!(c["detail"].as_str().is_some_and(|d| !d.is_empty()), "{c}");
            assert!(c.get("reason").is_none(), "{c}");
        } else {
            assert!(c["reason"].as_str().is_some_and(|d| !d.is_empty()), "{c}");
        }
        for arm in r["results"][0]["arms"].as_array().unwrap() {
            for m in c["metrics"].as_array().unwrap() {
                let v = &arm["counters"]["values"][m.as_str().unwrap()];
                if available {
                    assert!(
                        v["per_iter"]["median"].as_f64().is_some_and(|x| x > 0.0),
                        "{m}: {arm}"
                    );
                    assert!(
                        v["per_op"]["median"].as_f64().is_some_and(|x| x > 0.0),
                        "{m}: {arm}"
                    );
                } else {
                    assert!(v.is_null(), "unavailable {m} has a value: {v}");
                }
            }
        }
    }
    let tsc = counters.iter().find(|c| c["counter"] == "tsc").unwrap();
    if tsc["available"] == true {
        assert!(tsc["detail"].as_str().unwrap().contains("not core cycles"));
        // Every counter that ran is compared against the baseline and the null control.
        let cmp = r["results"][0]["counter_comparisons"].as_array().unwrap();
        assert!(
            cmp.iter()
                .any(|c| c["counter"] == "tsc_cycles" && c["arm"] == "wasmi#null"),
            "{cmp:?}"
        );
        assert!(r["results"][0]["counter_null_control"]["tsc_cycles"]["median_pct"].is_number());
    }
}

/// Without valgrind, `--counters callgrind` says so and how to install it.
#[test]
fn callgrind_without_valgrind_says_how_to_install_it() {
    let (mut cmd, dir) = loopbench();
    let out = cmd
        .env("PATH", dir.path())
        .args([
            "run",
            "--engines",
            "wasmi",
            "--shapes",
            "add_chain",
            "--counters",
            "callgrind",
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = assert_one_line_error(&out.stderr);
    assert!(
        err.contains("needs valgrind") && err.contains("apt-get install valgrind"),
        "{err}"
    );
}

#[test]
fn counters_none_reads_only_the_clock() {
    let r = run_json(&[
        "run",
        "--engines",
        "wasmi",
        "--shapes",
        "add_chain",
        "--bytes",
        "64k",
        "--iters",
        "500",
        "--rounds",
        "1",
        "--counters",
        "none",
    ]);
    assert_eq!(r["counters"].as_array().unwrap().len(), 0);
    assert!(r["results"][0]["arms"][0].get("counters").is_none());
}

/// Two runs of the same shape and arm give identical counts, rep for rep,
/// and the null control (a second instance) counts the same as the baseline.
#[test]
fn callgrind_counts_are_identical_across_runs() {
    if !valgrind_present() {
        return;
    }
    let args = [
        "run",
        "--engines",
        "wasmi",
        "--shapes",
        "load_stream",
        "--bytes",
        "64k",
        "--iters",
        "3000",
        "--rounds",
        "2",
        "--counters",
        "callgrind",
    ];
    let a = run_json(&args);
    let b = run_json(&args);
    let first = ir_per_rep(&a, "wasmi");
    assert!(
        first.iter().all(|&c| c > 3000),
        "fewer instructions than iterations: {first:?}"
    );
    assert_eq!(first, ir_per_rep(&b, "wasmi"));
    assert_eq!(first, ir_per_rep(&a, "wasmi#null"));
    assert!(
        first.windows(2).all(|w| w[0] == w[1]),
        "reps differ: {first:?}"
    );
    let cg = a["counters"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["counter"] == "callgrind")
        .unwrap();
    assert_eq!(cg["available"], true, "{cg}");
}

/// count(3n) - count(2n) == count(2n) - count(n): the per-iteration cost is
/// constant and the fixed cost of a call cancels. Allowed difference: 0.
#[test]
fn callgrind_counts_scale_with_iterations() {
    if !valgrind_present() {
        return;
    }
    let count = |iters: u64| {
        let it = iters.to_string();
        let r = run_json(&[
            "run",
            "--engines",
            "wasmi,tinywasm",
            "--shapes",
            "store_stream",
            "--bytes",
            "64k",
            "--iters",
            &it,
            "--rounds",
            "1",
            "--counters",
            "callgrind",
        ]);
        (ir_per_rep(&r, "wasmi")[0], ir_per_rep(&r, "tinywasm")[0])
    };
    let (n, n2, n3) = (count(1000), count(2000), count(3000));
    assert_eq!(n3.0 - n2.0, n2.0 - n.0, "wasmi: {n:?} {n2:?} {n3:?}");
    assert_eq!(n3.1 - n2.1, n2.1 - n.1, "tinywasm: {n:?} {n2:?} {n3:?}");
    assert!(
        n2.0 - n.0 >= 1000,
        "less than one instruction per iteration"
    );
}

const LOOP: &str = r#"(module
  (memory (export "memory") 1)
  (global $acc (mut i32) (i32.const 0))
  (func (export "run") (param $n i32) (result i32)
    (local $i i32) (local $s i32)
    (loop $l
      (local.set $s (i32.add (local.get $s) (i32.mul (local.get $i) (i32.const 7))))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br_if $l (i32.lt_u (local.get $i) (local.get $n))))
    (global.set $acc (local.get $s))
    (local.get $s))
  (func (export "setup") (param $n i32) (local $k i32) SETUP_WORK)
  (func (export "verify") (result i32) (local $k i32) VERIFY_WORK (i32.const 1)))"#;

/// The same loop with trivial and with expensive setup and verify: the
/// counts inside the timed call are identical, so neither is counted.
#[test]
fn callgrind_excludes_setup_and_verify() {
    if !valgrind_present() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let busy = "(loop $w (local.set $k (i32.add (local.get $k) (i32.const 1))) (br_if $w (i32.lt_u (local.get $k) (i32.const 200000))))";
    let busy_setup = busy.replace(
        "(local.set $k",
        "(i32.store (i32.const 0) (local.get $k)) (local.set $k",
    );
    let write = |name: &str, setup: &str, verify: &str| {
        let p = dir.path().join(format!("{name}.wat"));
        std::fs::write(
            &p,
            LOOP.replace("SETUP_WORK", setup)
                .replace("VERIFY_WORK", verify),
        )
        .unwrap();
        p
    };
    let cheap = write("cheap", "", "");
    let costly = write("costly", &busy_setup, busy);
    let counts = |p: &Path| {
        let f = p.to_str().unwrap();
        let r = run_json(&[
            "run",
            "--engines",
            "wasmi",
            "--shape-file",
            f,
            "--iters",
            "2000",
            "--rounds",
            "2",
            "--counters",
            "callgrind",
        ]);
        ir_per_rep(&r, "wasmi")
    };
    let c = counts(&cheap);
    assert!(c[0] > 2000, "{c:?}");
    assert_eq!(c, counts(&costly));
}

/// `model --price-in callgrind_ir` prices every feature in host
/// instructions: exact, so the twins' anchor is the exact difference and a
/// refit is identical; a counter the session lacks is one line naming the
/// ones it has.
#[test]
fn a_model_priced_in_instructions_is_exact_and_a_missing_counter_is_one_line() {
    if !valgrind_present() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let saved = dir.path().join("model-ir.json");
    let doc = saved_json(
        &[
            "model",
            "--engines",
            "wasmi,wasmi:fuel",
            "--shapes",
            "add_run,add_blocks,add_loops,add_stack,add_chain,br_chain",
            "--bytes",
            "64k",
            "--iters",
            "300",
            "--rounds",
            "2",
            "--counters",
            "callgrind",
            "--price-in",
            "callgrind_ir",
        ],
        &saved,
    );
    let model = |arm: &str| -> Value {
        doc["models"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["arm"] == arm)
            .unwrap_or_else(|| panic!("no model for {arm}"))
            .clone()
    };
    // Each twin-priced feature is exactly its twins' difference per unit,
    // and one epoch of identical reps gives intervals of no width.
    let anchored = |m: &Value, feature: &str, a: &str, b: &str, units: f64| -> f64 {
        let measured = |shape: &str| {
            m["residuals"]
                .as_array()
                .unwrap()
                .iter()
                .find(|r| r["shape"] == shape)
                .unwrap_or_else(|| panic!("no residual for {shape}"))["measured_ns"]
                .as_f64()
                .unwrap()
        };
        let p = m["prices"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["feature"] == feature)
            .unwrap();
        assert!(
            p["from_pair"]
                .as_str()
                .unwrap()
                .contains(&format!("{a} - {b}")),
            "{p}"
        );
        let expected = ((measured(a) - measured(b)) / units).max(0.0);
        assert_eq!(p["ns"].as_f64().unwrap(), expected, "{feature}");
        assert_eq!(p["ci"][0], p["ci"][1], "{p}");
        expected
    };
    let m = model("wasmi");
    assert_eq!(m["counter"], "callgrind_ir", "{m}");
    // K = 8 blocks and their 8 ends per iteration more in add_blocks.
    anchored(&m, "control", "add_blocks", "add_run", 16.0);
    // 8 loops fallen into instead of 8 blocks: 8 block entries.
    let plain = anchored(&m, "block_entry", "add_loops", "add_blocks", 8.0);
    let fuel = anchored(
        &model("wasmi:fuel"),
        "block_entry",
        "add_loops",
        "add_blocks",
        8.0,
    );
    // wasmi's fuel check: 12 host instructions per block entry, exactly
    // (up to the rounding of the per-iteration division).
    assert!((fuel - plain - 12.0).abs() < 1e-9, "{fuel} - {plain}");
    for p in m["pairs"].as_array().unwrap() {
        if p["unit"] != "ratio" {
            assert_eq!(p["unit"], "callgrind_ir", "{p}");
        }
    }

    // A counter the session does not have: one line, exit 2, with the
    // ones it does.
    let (mut cmd, _d) = loopbench();
    let out = cmd
        .args(["model", "--price-in", "cycles", "--from"])
        .arg(&saved)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = assert_one_line_error(&out.stderr);
    assert!(
        err.contains("no counter `cycles`") && err.contains("callgrind_ir"),
        "{err}"
    );
}

/// `model --instructions-from`: each shape's time as ns per host
/// instruction (exact counts from a callgrind session) plus ns per
/// misprediction; a held-out shape is reproduced from its own instruction
/// count by exactly that formula. A session without instruction counts is
/// one line.
#[test]
fn time_from_instructions_uses_the_callgrind_session_counts() {
    if !valgrind_present() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (ir, time) = (dir.path().join("ir.json"), dir.path().join("time.json"));
    let shapes = "add_run,add_stack,add_chain,load_stream,random_ops";
    let ir_doc = saved_json(
        &[
            "model",
            "--engines",
            "wasmi",
            "--shapes",
            shapes,
            "--bytes",
            "64k",
            "--iters",
            "300",
            "--rounds",
            "2",
            "--counters",
            "callgrind",
            "--price-in",
            "callgrind_ir",
        ],
        &ir,
    );
    let time_doc = saved_json(
        &[
            "model",
            "--engines",
            "wasmi",
            "--shapes",
            shapes,
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
            "--no-history",
            "--instructions-from",
            ir.to_str().unwrap(),
        ],
        &time,
    );
    let residual = |doc: &Value, section: Option<&str>, shape: &str| -> Value {
        let m = &doc["models"][0];
        let m = section.map_or(m, |s| &m[s]);
        m["residuals"]
            .as_array()
            .unwrap_or_else(|| panic!("no residuals in {m}"))
            .iter()
            .find(|r| r["shape"] == shape)
            .unwrap_or_else(|| panic!("no {shape}"))
            .clone()
    };
    let fi = &time_doc["models"][0]["from_instructions"];
    assert_eq!(fi["counter"], "callgrind_ir", "{fi}");
    let a = fi["ns_per_instruction"].as_f64().unwrap();
    assert!(a > 0.0, "{fi}");
    let held = residual(&time_doc, Some("from_instructions"), "random_ops");
    assert_eq!(held["kind"], "held_out");
    // The same time as the op-class model's row, and random_ops has no
    // mispredictions: reproduced = ns per instruction x its instructions.
    assert_eq!(
        held["measured_ns"],
        residual(&time_doc, None, "random_ops")["measured_ns"]
    );
    let instructions = residual(&ir_doc, None, "random_ops")["measured_ns"]
        .as_f64()
        .unwrap();
    let reproduced = held["reproduced_ns"].as_f64().unwrap();
    assert!(
        (reproduced - a * instructions).abs() <= 1e-9 * reproduced,
        "{reproduced} vs {a} x {instructions}"
    );

    // A session without instruction counts: one line, exit 2.
    let (mut cmd, _d) = loopbench();
    let out = cmd
        .args(["model", "--from"])
        .arg(&time)
        .arg("--instructions-from")
        .arg(&time)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = assert_one_line_error(&out.stderr);
    assert!(
        err.contains("no `callgrind_ir`") && err.contains("--counters callgrind"),
        "{err}"
    );
}

/// `--price-in` is checked before any session runs: a reading no counter
/// takes, or one whose counter was not asked for, is one line and exit 2.
#[test]
fn price_in_is_checked_before_the_session_runs() {
    for (args, expect) in [
        (
            &["--price-in", "callgrind_ir"][..],
            "--price-in callgrind_ir needs --counters callgrind",
        ),
        (&["--price-in", "bogus"][..], "no counter reads it"),
    ] {
        for command in [
            &["model", "--engines", "wasmi", "--shapes", "add_run"][..],
            &["app", "project", "zlib", "--engines", "wasmi,wasm3"][..],
        ] {
            let (mut cmd, _d) = loopbench();
            let out = cmd.args(command).args(args).output().unwrap();
            assert_eq!(out.status.code(), Some(2), "{command:?} {args:?}");
            let err = assert_one_line_error(&out.stderr);
            assert!(err.contains(expect), "{command:?} {args:?}: {err}");
            // Nothing was measured: no table on stdout.
            assert!(out.stdout.is_empty(), "{command:?} {args:?}");
        }
    }
}

/// `app project` run under callgrind: the app and the shapes counted in
/// exact host instructions, the share and the pairs in instructions (the
/// pairs by exact ratios, the null control exactly zero); then a timed
/// `app project` reproduces each app's time from those instructions by
/// exactly `ns/instruction x instructions + ns/misprediction x
/// mispredictions`. A document that is not such a run is one line.
#[test]
fn app_projection_in_instructions_and_time_from_them() {
    if !valgrind_present() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (ir, time) = (dir.path().join("ir.json"), dir.path().join("time.json"));
    let project = |extra: &[&str], path: &Path| -> Value {
        let (mut cmd, _d) = loopbench();
        let out = cmd
            .args(["app", "project", "sha256", "--engines", "wasmi,wasm3"])
            // Every rep inline: the test takes a session out of it.
            .args(["--bytes", "64k", "--warmup", "0", "--json-reps", "--json"])
            .arg(path)
            .args(extra)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "app project {extra:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
    };
    let ir_doc = project(
        &[
            "--counters",
            "callgrind",
            "--iters",
            "200",
            "--rounds",
            "2",
            "--price-in",
            "callgrind_ir",
        ],
        &ir,
    );
    assert_eq!(ir_doc["schema"], "loopbench-app-project/3");
    assert_eq!(ir_doc["unit"], "callgrind_ir");
    let app = &ir_doc["projections"][0];
    let steps = app["steps"].as_f64().unwrap();
    let app_ir = |doc: &Value, arm: &str| -> f64 {
        let a = doc["app_session"]["results"][0]["arms"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["arm"] == arm)
            .unwrap_or_else(|| panic!("no {arm}"));
        a["counters"]["values"]["callgrind_ir"]["per_iter"]["median"]
            .as_f64()
            .unwrap()
            * steps
    };
    let (wasmi, wasm3) = (app_ir(&ir_doc, "wasmi"), app_ir(&ir_doc, "wasm3"));
    for c in app["coverage"].as_array().unwrap() {
        let want = app_ir(&ir_doc, c["arm"].as_str().unwrap());
        assert_eq!(c["measured_ns"].as_f64().unwrap(), want, "{c}");
        let share = c["reproduced_ns"].as_f64().unwrap() / want;
        assert!((c["share"].as_f64().unwrap() - share).abs() < 1e-12, "{c}");
    }
    let pair = &app["pairs"][0];
    assert_eq!(
        pair["measured_pct"].as_f64().unwrap(),
        100.0 * (wasm3 / wasmi - 1.0)
    );
    let null = &ir_doc["app_session"]["results"][0]["counter_null_control"]["callgrind_ir"];
    assert_eq!(null["median_pct"].as_f64(), Some(0.0), "{null}");

    let time_doc = project(
        &[
            "--budget",
            "0.05",
            "--min-epochs",
            "1",
            "--rounds",
            "2",
            "--instructions-from",
            ir.to_str().unwrap(),
        ],
        &time,
    );
    let app = &time_doc["projections"][0];
    let mispredicts = app["predictor"]["mispredicts"].as_f64().unwrap();
    let rows = app["from_instructions"].as_array().unwrap();
    assert_eq!(rows.len(), 2, "{app}");
    for row in rows {
        let arm = row["arm"].as_str().unwrap();
        let instructions = row["instructions"].as_f64().unwrap();
        assert_eq!(instructions, app_ir(&ir_doc, arm), "{row}");
        assert_eq!(row["mispredicts"].as_f64().unwrap(), mispredicts);
        let (a, b) = (
            row["ns_per_instruction"].as_f64().unwrap(),
            row["ns_per_mispredict"].as_f64().unwrap(),
        );
        assert!(a > 0.0, "{row}");
        let reproduced = row["reproduced_ns"].as_f64().unwrap();
        assert!(
            (reproduced - (a * instructions + b * mispredicts)).abs() <= 1e-9 * reproduced,
            "{row}"
        );
        let measured = row["measured_ns"].as_f64().unwrap();
        assert!((row["share"].as_f64().unwrap() - reproduced / measured).abs() < 1e-12);
    }

    // A timed projection is not an instruction session, and a session
    // document is not an app projection: one line, exit 2, before anything
    // runs.
    let session = dir.path().join("session.json");
    std::fs::write(
        &session,
        serde_json::to_vec(&ir_doc["pricing_session"]).unwrap(),
    )
    .unwrap();
    // Reproducing time from instructions under valgrind, or against a
    // counter, would compare ns with something else: refused too.
    for (from, extra, expect) in [
        (&time, &[][..], "no `callgrind_ir`"),
        (
            &session,
            &[],
            "not the JSON of `app project --counters callgrind`",
        ),
        (
            &ir,
            &["--counters", "callgrind", "--price-in", "callgrind_ir"],
            "does not go with --price-in or --counters callgrind",
        ),
    ] {
        let (mut cmd, _d) = loopbench();
        let out = cmd
            .args(["app", "project", "sha256", "--engines", "wasmi,wasm3"])
            .arg("--instructions-from")
            .arg(from)
            .args(extra)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{expect}");
        let err = assert_one_line_error(&out.stderr);
        assert!(err.contains(expect), "{err}");
        assert!(out.stdout.is_empty());
    }
}

/// The block-entry count is the unit wasmi's fuel is paid in: on every
/// shape, whatever its ops, wasmi:fuel executes exactly 12 more host
/// instructions per block entry than wasmi (wasmi 2's `ConsumeFuel` at each
/// function entry, loop header and `if` arm; the version is pinned in
/// Cargo.lock). This is why the model prices fuel per block entry.
#[test]
fn wasmi_fuel_costs_a_fixed_count_per_block_entry() {
    if !valgrind_present() {
        return;
    }
    let report = run_json(&[
        "run",
        "--engines",
        "wasmi,wasmi:fuel",
        "--shapes",
        "add_run,br_chain,if_else,call_direct,recursion",
        "--bytes",
        "64k",
        "--iters",
        "300",
        "--rounds",
        "2",
        "--counters",
        "callgrind",
    ]);
    let per_iter = |r: &Value, arm: &str| -> f64 {
        r["arms"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["arm"] == arm)
            .unwrap_or_else(|| panic!("no {arm}"))["counters"]["values"]["callgrind_ir"]["per_iter"]
            ["median"]
            .as_f64()
            .unwrap()
    };
    let mut entries = Vec::new();
    for r in report["results"].as_array().unwrap() {
        let e = r["counts_per_iter"]["block_entries"].as_f64().unwrap();
        let extra = per_iter(r, "wasmi:fuel") - per_iter(r, "wasmi");
        // The function's own entry once per rep adds 12/300 per iteration.
        assert!(
            (extra - 12.0 * e).abs() < 0.1,
            "{}: {extra} extra instructions per iteration for {e} block entries",
            r["shape"]
        );
        entries.push(e);
    }
    // The shapes differ in block entries, not only in ops: one loop header
    // per iteration, plus the `if` arms of if_else and the calls and `if`s
    // of recursion.
    assert!(entries.iter().any(|e| *e > 1.5), "{entries:?}");
}
