//! Issue 26: nothing hangs. Every call into an engine, the pilot's included,
//! has a deadline; the budget bounds every epoch. A generous timeout on the
//! command detects a hang; nothing asserts how long a run took.

use super::util::loopbench;
use std::time::Duration;

/// Long enough for any session here; far below "forever".
const HANG: Duration = Duration::from_secs(300);

/// A user loop that ends for n <= 1000 and never for larger n.
const HANG_WAT: &str = r#"(module (memory (export "memory") 1)
  (func (export "run") (param $n i32) (result i32) (local $i i32)
    (if (i32.gt_u (local.get $n) (i32.const 1000)) (then (loop $l (br $l))))
    (loop $l (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br_if $l (i32.lt_u (local.get $i) (local.get $n))))
    (local.get $i))
  (func (export "verify") (result i32) (i32.const 1)))"#;

/// Issue 26.8: the pilot that sizes reps grows its count from one
/// iteration, each call under a deadline set from the one before, so a loop
/// that never ends past 1000 iterations is killed at the deadline floor (in
/// the pilot, or in the first rep when the pilot stopped growing below it).
/// The session ends with one error per arm naming shape, arm and phase.
#[test]
fn a_loop_that_hangs_for_large_counts_is_killed_not_waited_for() {
    let (mut cmd, dir) = loopbench();
    std::fs::write(dir.path().join("hang.wat"), HANG_WAT).unwrap();
    let out = cmd
        .env("LOOPBENCH_WORKER_DEADLINE_FLOOR_MS", "1000")
        .args(["run", "--engines", "wasmi", "--shape-file", "hang.wat"])
        .args([
            "--max-epochs",
            "5",
            "--json",
            "s.json",
            "--layout-builds",
            "1",
        ])
        .timeout(HANG)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "hung or crashed: {err}");
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("s.json")).unwrap()).unwrap();
    let errors: Vec<&str> = json["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e.as_str().unwrap())
        .collect();
    assert_eq!(errors.len(), 2, "{errors:?}");
    for (e, arm) in errors.iter().zip(["wasmi", "wasmi#null"]) {
        assert!(e.contains(&format!("shape hang, arm {arm}: ")), "{e}");
        assert!(e.contains("did not answer"), "{e}");
        assert!(e.contains("pilot at ") || e.contains("rep 0"), "{e}");
    }
}

/// Issue 26.9: `--budget` bounds every epoch: rounds or warm-up rounds that
/// cannot finish within it are cut (after a whole design of measured
/// rounds, so the order stays balanced), and the stop reason says so.
#[test]
fn the_budget_cuts_an_epoch_that_would_outrun_it() {
    for many in [["--rounds", "100000000"], ["--warmup", "100000000"]] {
        let (mut cmd, dir) = loopbench();
        let out = cmd
            .args(["run", "--engines", "wasmi", "--shapes", "add_chain"])
            .args(["--iters", "256", "--budget", "0.5", "--json", "s.json"])
            .args(many)
            .timeout(HANG)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{many:?}: hung or failed: {err}");
        let json: serde_json::Value =
            serde_json::from_slice(&std::fs::read(dir.path().join("s.json")).unwrap()).unwrap();
        let stopped = json["results"][0]["stopped"]["reason"].as_str().unwrap();
        assert!(stopped.contains("--budget cut"), "{many:?}: {stopped}");
        let reps = json["results"][0]["arms"][0]["verified_reps"]
            .as_u64()
            .unwrap();
        assert!(reps > 0, "{many:?}: nothing measured");
    }
}

/// Issue 26.9: with `--iters` no pilot times a rep, so a rep that cannot
/// finish within `--budget` (2^31 iterations of add_chain) is killed at the
/// budget, at least the deadline floor (lowered to 1 s here), not after the
/// two minutes a rep nothing has timed may take. Each arm gets one error
/// that names the budget and what to change; the session ends, exit 1.
#[test]
fn a_rep_that_outruns_the_budget_under_iters_is_killed_at_the_budget() {
    let (mut cmd, dir) = loopbench();
    let out = cmd
        .env("LOOPBENCH_WORKER_DEADLINE_FLOOR_MS", "1000")
        .args(["run", "--engines", "wasmi", "--shapes", "add_chain"])
        .args([
            "--layout-builds",
            "1",
            "--iters",
            "2147483647",
            "--budget",
            "0.5",
            "--json",
            "s.json",
        ])
        // A hang guard only: without the fix each rep may take 120 s.
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "hung or crashed: {err}");
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("s.json")).unwrap()).unwrap();
    let errors: Vec<&str> = json["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e.as_str().unwrap())
        .collect();
    assert_eq!(errors.len(), 2, "{errors:?}");
    for (e, arm) in errors.iter().zip(["wasmi", "wasmi#null"]) {
        assert!(e.contains(&format!("shape add_chain, arm {arm}: ")), "{e}");
        assert!(e.contains("did not answer rep 0 within 1.0 s"), "{e}");
        assert!(
            e.contains("--budget of 0.5 s") && e.contains("raise --budget (or lower --iters)"),
            "{e}"
        );
        assert!(err.contains(&format!("error: {e}")), "{err}");
    }
}

/// Issue 26.9: more load threads than cores is refused in one line.
#[test]
fn calibrate_load_is_capped_at_the_core_count() {
    let (mut cmd, _dir) = loopbench();
    let out = cmd
        .args(["calibrate", "--load", "100000"])
        .timeout(HANG)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let e = super::util::assert_one_line_error(&out.stderr);
    assert!(e.contains("--load 100000: at most"), "{e}");
}
