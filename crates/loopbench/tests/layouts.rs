//! The engines compiled into loopbench, measured in code-layout variants by
//! default: relinks of this binary's own engines (`loopbench-relink`, its
//! function order shuffled), wasm3's C core included, and the one-line
//! fallback when the relinks cannot be made.
//!
//! A relink is a link of the library this test binary's `loopbench` was
//! built from (about 0.5 s), cached under the target directory so the
//! user's cache is never touched.

use assert_cmd::Command;
use serde_json::Value;

/// The tests' worker cache, under the target directory.
const CACHE: &str = concat!(env!("CARGO_TARGET_TMPDIR"), "/loopbench-own-layouts");

/// A short session of wasmi against wasm3 with `--json -`, in `k` layout
/// variants over four epochs; (success, document, stderr).
fn session(k: &str, env: &[(&str, &str)]) -> (bool, Value, String) {
    session_of("wasmi,wasm3", k, env)
}

/// [`session`] of other engines.
fn session_of(engines: &str, k: &str, env: &[(&str, &str)]) -> (bool, Value, String) {
    let mut cmd = Command::cargo_bin("loopbench").unwrap();
    cmd.env("LOOPBENCH_CACHE_DIR", CACHE)
        .args(["run", "--no-history", "--engines", engines])
        .args(["--shapes", "add_chain", "--bytes", "64k", "--iters", "2048"])
        .args(["--rounds", "3", "--warmup", "1"])
        .args([
            "--min-epochs",
            "4",
            "--max-epochs",
            "4",
            "--layout-builds",
            k,
        ])
        .args(["--json", "-"]);
    for (key, value) in env {
        cmd.env(key, value);
    }
    let out = cmd.output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(!stderr.contains("panicked"), "{stderr}");
    let json: Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {stderr}"));
    (out.status.success(), json, stderr)
}

fn engine<'a>(json: &'a Value, label: &str) -> &'a Value {
    json["session"]["engines"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["arm"] == label)
        .unwrap_or_else(|| panic!("no engine {label}: {json}"))
}

/// `loopbench report` of the session `json` in each format (`None`: the
/// table), with its text.
fn reports<'f>(json: &Value, formats: &[Option<&'f str>]) -> Vec<(Option<&'f str>, String)> {
    let saved = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(saved.path(), serde_json::to_vec(json).unwrap()).unwrap();
    formats
        .iter()
        .map(|format| {
            let mut cmd = Command::cargo_bin("loopbench").unwrap();
            cmd.arg("report").arg(saved.path());
            match format {
                Some(flag) => cmd.args([flag, "-"]),
                // The terminal's report in full, every note under a shape.
                None => cmd.arg("--verbose"),
            };
            let out = cmd.output().unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(out.status.success(), "{stderr}");
            (*format, String::from_utf8_lossy(&out.stdout).to_string())
        })
        .collect()
}

/// The session `json` recorded in a new history, and its leaderboard as
/// Markdown.
fn leaderboard_of(json: &Value) -> String {
    let dir = tempfile::tempdir().unwrap();
    let (saved, db) = (dir.path().join("s.json"), dir.path().join("h.sqlite"));
    std::fs::write(&saved, serde_json::to_vec(json).unwrap()).unwrap();
    let run = |args: &[&std::ffi::OsStr]| {
        let out = Command::cargo_bin("loopbench")
            .unwrap()
            .env("LOOPBENCH_DB", &db)
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).to_string()
    };
    run(&["history".as_ref(), "import".as_ref(), saved.as_os_str()]);
    run(&["leaderboard".as_ref(), "--markdown".as_ref(), "-".as_ref()])
}

fn comparisons(json: &Value) -> &Vec<Value> {
    json["results"][0]["comparisons"].as_array().unwrap()
}

#[test]
fn compiled_in_engines_run_in_relinked_layout_variants() {
    let (ok, json, stderr) = session("2", &[]);
    assert!(ok, "{stderr}");
    // (A source edited since the test build makes the relinks refuse to
    // compile it again: this says so rather than a bare null.)
    assert!(json["session"]["one_layout"].is_null(), "{stderr}");
    assert_eq!(json["session"]["layout_builds"], 2);
    // Two variants before the first epoch; more linked between epochs
    // while each epoch would otherwise rerun one (at most one per epoch,
    // and the build null one ahead of the baseline).
    let linked = engine(&json, "wasmi")["layout"]["variants"]
        .as_array()
        .unwrap()
        .len();
    assert!((2..=5).contains(&linked), "{linked}");
    for label in ["wasmi", "wasm3", "wasmi#null", "wasmi#build-null"] {
        let e = engine(&json, label);
        let layout = &e["layout"];
        assert_eq!(layout["variants"].as_array().unwrap().len(), linked, "{e}");
        let moved = &layout["moved"];
        assert!(moved["compared"].as_u64().unwrap() > 0, "{e}");
        assert!(moved["moved"].as_u64().unwrap() > 0, "{e}");
        assert!(
            e["version"]
                .as_str()
                .unwrap()
                .contains("relinked in layout variants"),
            "{e}"
        );
    }
    // wasm3's moved functions are its own C code (op handlers, m3_ API),
    // found by their C names: a Rust function is not counted as wasm3's.
    let example = engine(&json, "wasm3")["layout"]["moved"]["example"][0]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        example.starts_with("op_") || example.starts_with("m3_"),
        "{example}"
    );
    // Each epoch ran variants of this machine's pool, a variant of its own
    // while the session could link one, and the build-layout null the one
    // after the baseline's.
    let pool = loopbench::workers::own_build::pool_seeds(
        loopbench::session::DEFAULT_SEED,
        loopbench::workers::own_build::POOL,
    );
    let seeds: Vec<u64> = engine(&json, "wasmi")["layout"]["variants"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["seed"].as_u64().unwrap())
        .collect();
    assert!(seeds.iter().all(|s| pool.contains(s)), "{seeds:?}");
    let epochs = json["epochs"].as_array().unwrap();
    let ran: Vec<u64> = epochs
        .iter()
        .map(|r| r["variants"]["wasm3"].as_u64().unwrap())
        .collect();
    for (e, record) in epochs.iter().enumerate() {
        assert_eq!(record["variants"]["wasmi"], record["variants"]["wasm3"]);
        assert_eq!(
            record["variants"]["wasmi#null"],
            record["variants"]["wasm3"]
        );
        assert_ne!(
            record["variants"]["wasmi#build-null"],
            record["variants"]["wasm3"]
        );
        if e + 2 <= linked {
            assert_eq!(ran[e], seeds[e], "{record}");
        }
    }
    let mut distinct = ran.clone();
    distinct.sort_unstable();
    distinct.dedup();
    // Every comparison's interval has the build level.
    for c in comparisons(&json) {
        assert_eq!(c["interval"], "student_t_builds", "{c}");
        assert!(c["build"]["clusters"].as_u64().unwrap() >= 2, "{c}");
    }

    // Each arm's spread across its code layouts, with its interval, in
    // JSON and in every report (where each epoch ran a variant of its own,
    // less the epoch noise its null control shows); each CSV row names
    // its rep's variant.
    for a in json["results"][0]["arms"].as_array().unwrap() {
        let spread = &a["layout_spread"];
        assert_eq!(spread["variants"], distinct.len(), "{a}");
        let sd = spread["sd_pct"].as_f64().unwrap();
        let ci = spread["ci_pct"].as_array().unwrap();
        assert!(
            ci[0].as_f64().unwrap() <= sd && sd <= ci[1].as_f64().unwrap(),
            "{spread}"
        );
    }
    let formats = [None, Some("--markdown"), Some("--html"), Some("--csv")];
    for (format, text) in reports(&json, &formats) {
        if format == Some("--csv") {
            let header = text.lines().next().unwrap();
            assert!(
                header.ends_with(",layout_variant,arm_layout_sd_pct"),
                "{header}"
            );
            let row = text.lines().find(|l| l.contains(",wasm3,")).unwrap();
            let variant: usize = row.split(',').rev().nth(1).unwrap().parse().unwrap();
            assert!(variant < linked, "{row}");
        } else {
            let said = format!(
                "layout spread (SD of time across {} code layouts, 95% CI): wasmi ±",
                distinct.len()
            );
            assert!(text.contains(&said), "{format:?}: {text}");
        }
    }

    // Recorded, the leaderboard carries each engine's spread.
    let board = leaderboard_of(&json);
    for arm in ["wasmi", "wasm3"] {
        let row = board
            .lines()
            .find(|l| l.contains(&format!("| add_chain | {arm} |")))
            .unwrap_or_else(|| panic!("no {arm}: {board}"));
        assert!(
            row.contains(&format!(" over {} |", distinct.len())),
            "{row}"
        );
    }

    // A second session finds every variant in the cache.
    let (ok, _, stderr) = session("2", &[]);
    assert!(ok, "{stderr}");
    assert!(!stderr.contains("relinking"), "relinked again: {stderr}");
}

#[test]
fn without_cargo_the_compiled_in_engines_run_one_layout_and_say_so() {
    // A cache of its own, so that no variant is found there.
    let empty = tempfile::tempdir().unwrap();
    let cache = empty.path().to_str().unwrap();
    let (ok, json, stderr) = session(
        "2",
        &[
            ("LOOPBENCH_CACHE_DIR", cache),
            ("CARGO", "/nonexistent/cargo"),
        ],
    );
    assert!(ok, "{stderr}");
    let said: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("compiled-in engines run one code layout: "))
        .collect();
    assert_eq!(said.len(), 1, "{stderr}");
    assert!(said[0].contains("no build component"), "{stderr}");
    let why = json["session"]["one_layout"].as_str().unwrap();
    assert!(!why.is_empty());
    for c in comparisons(&json) {
        assert_eq!(c["interval"], "student_t", "{c}");
    }
    assert!(engine(&json, "wasm3")["layout"].is_null());

    // Every report says the intervals have no build component.
    for (format, text) in reports(&json, &[None, Some("--markdown"), Some("--html")]) {
        assert!(
            text.contains("ran in one code layout") && text.contains("NO build component"),
            "{format:?}: {text}"
        );
    }
}

#[test]
fn wasm3_runs_from_a_build_in_variants_that_move_its_c_core() {
    // A worker build of the registry's wasm3 0.3 (dev profile: the C core
    // at -O0 builds in about a minute), in two layout variants.
    let build = "wasm3@0.3+profile:dev";
    let (ok, json, stderr) = session_of(&format!("wasm3,{build}"), "2", &[]);
    assert!(ok, "{stderr}");
    let e = engine(&json, build);
    assert!(
        e["version"].as_str().unwrap().starts_with("wasm3 0.3."),
        "{e}"
    );
    let layout = &e["layout"];
    let variants = layout["variants"].as_array().unwrap();
    assert_eq!(variants.len(), 2, "{e}");
    assert_ne!(variants[0]["key"], variants[1]["key"], "{e}");
    // The 32 largest functions compared are wasm3's C functions, and the
    // variants place them at different addresses.
    let moved = &layout["moved"];
    assert!(moved["moved"].as_u64().unwrap() > 0, "{e}");
    let example = &moved["example"];
    let name = example[0].as_str().unwrap();
    assert!(name.starts_with("op_") || name.starts_with("m3_"), "{name}");
    let addresses = example[1].as_array().unwrap();
    assert_ne!(addresses[0], addresses[1], "{example}");
    // Every rep of the build verified, in both variants.
    let a = json["results"][0]["arms"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["arm"] == build)
        .unwrap();
    assert!(a["error"].is_null(), "{a}");
    assert!(a["verified_reps"].as_u64().unwrap() > 0, "{a}");
    let c = comparisons(&json)
        .iter()
        .find(|c| c["arm"] == build)
        .unwrap();
    assert_eq!(c["interval"], "student_t_builds", "{c}");
}
