//! `loopbench calibrate`: the arms of known effect do exactly the work they
//! claim, and the command runs end to end with tiny settings.
//!
//! Nothing here asserts a timing: only counts, verification, and the shape
//! of the output.

use assert_cmd::Command;
use loopbench::arm::{ArmSpec, Iters, PreparedArm};
use loopbench::calibrate::{base_iters, calibration_arm, Effect};
use loopbench::shapes::{self, HookError, Params, ShapeModule};
use predicates::prelude::*;

fn effects() -> Vec<Effect> {
    [0, 50, 100, 200, 500].map(Effect::from_bp).to_vec()
}

fn module(shape: &str) -> ShapeModule {
    let s = shapes::find(shape).unwrap();
    let mut p = Params {
        bytes: 64 << 10,
        iters: None,
        k: 8,
    };
    p.iters = Some(base_iters(s.as_ref(), &p, &effects()).unwrap());
    ShapeModule::build(s, &p).unwrap()
}

/// Each arm runs and verifies exactly `base * (1 + x/100)` iterations, and
/// its result is not what the base count would have produced.
#[test]
fn scaled_arms_do_exactly_the_claimed_work() {
    let wasmi: ArmSpec = "wasmi".parse().unwrap();
    for shape in ["add_chain", "load_stream"] {
        let m = module(shape);
        let base = m.iters;
        for e in effects() {
            let arm = calibration_arm(&wasmi, format!("wasmi{e}"), e.iters()).unwrap();
            let mut p = arm.prepare_local(&m).unwrap();
            let n = p.iters();
            // The ratio of iteration counts is exactly 1 + x/100.
            assert_eq!(
                u128::from(n) * 10_000,
                u128::from(base) * (10_000 + u128::from(e.bp())),
                "{shape} {e}"
            );
            // Three reps, each reset and verified with the scaled count.
            for rep in 0..3 {
                p.rep(rep)
                    .unwrap_or_else(|err| panic!("{shape} {e} rep {rep}: {err}"));
            }
            let ret = p.last_return();
            // The shape's own verify accepts that result for n and rejects it
            // for the base count: the arm really ran n iterations.
            let s = m.shape.as_ref();
            s.verify(&m.params, n, ret, p.instance())
                .unwrap_or_else(|_| panic!("{shape} {e}: verify at n"));
            let at_base = s.verify(&m.params, base, ret, p.instance());
            if e.is_null() {
                assert!(at_base.is_ok(), "{shape}: the null runs the base count");
            } else {
                assert!(
                    matches!(at_base, Err(HookError::Mismatch(_))),
                    "{shape} {e}: result equals the base count's"
                );
            }
        }
    }
}

#[test]
fn fixed_arm_runs_its_own_count() {
    let wasmi: ArmSpec = "wasmi".parse().unwrap();
    let m = module("add_chain");
    let arm = calibration_arm(&wasmi, "wasmi@1".into(), Iters::Fixed(1)).unwrap();
    let mut p = arm.prepare_local(&m).unwrap();
    assert_eq!(p.iters(), 1);
    p.rep(0).unwrap();
    let s = m.shape.as_ref();
    let ret = p.last_return();
    assert!(s.verify(&m.params, 1, ret, p.instance()).is_ok());
    assert!(s.verify(&m.params, m.iters, ret, p.instance()).is_err());
}

#[test]
fn inexact_scaling_is_refused() {
    let wasmi: ArmSpec = "wasmi".parse().unwrap();
    let s = shapes::find("add_chain").unwrap();
    let m = ShapeModule::build(
        s,
        &Params {
            bytes: 64 << 10,
            iters: Some(1001),
            k: 8,
        },
    )
    .unwrap();
    let arm = calibration_arm(&wasmi, "wasmi+1%".into(), Effect::from_bp(100).iters()).unwrap();
    let err = arm
        .prepare_local(&m)
        .err()
        .expect("1001 iterations cannot grow by exactly 1%");
    assert!(err.to_string().contains("multiple of 100"), "{err}");
}

fn loopbench() -> (Command, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = Command::cargo_bin("loopbench").unwrap();
    cmd.current_dir(dir.path());
    (cmd, dir)
}

#[test]
fn calibrate_runs_with_tiny_settings_and_writes_json() {
    let (mut cmd, dir) = loopbench();
    cmd.args([
        "calibrate",
        "--bytes",
        "64k",
        "--repeat",
        "2",
        "--rounds",
        "4",
        "--effects",
        "0.5,1,5",
        "--toggle-shapes",
        "add_chain",
        "--json",
        "cal.json",
    ])
    .assert()
    .success()
    .stdout(predicate::str::contains("coverage"))
    .stdout(predicate::str::contains("known-sign toggle"))
    .stderr(predicate::str::contains("repetition 2/2"));
    let text = std::fs::read_to_string(dir.path().join("cal.json")).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["schema"], "loopbench-calibrate/1");
    assert_eq!(v["settings"]["base_iters"], 4000);
    assert_eq!(v["complete"], true);
    let all = v["rows"].as_array().unwrap();
    let rows: Vec<&serde_json::Value> = all.iter().filter(|r| r["metric"] == "wall").collect();
    // Two repetitions of the null and three effects, by the wall clock and
    // (on Linux) by thread CPU time.
    assert_eq!(rows.len(), 2 * 4);
    if cfg!(target_os = "linux") {
        assert_eq!(all.len(), 2 * 2 * 4);
        assert_eq!(v["thread_cpu"]["effects"].as_array().unwrap().len(), 4);
    }
    let mut truths: Vec<f64> = rows
        .iter()
        .map(|r| r["true_pct"].as_f64().unwrap())
        .collect();
    truths.sort_by(f64::total_cmp);
    truths.dedup();
    assert_eq!(truths, vec![0.0, 0.5, 1.0, 5.0]);
    for r in &rows {
        for key in [
            "true_pct",
            "median_pct",
            "ci_pct",
            "covered",
            "detected",
            "load_start",
            "session_seconds",
        ] {
            assert!(r.get(key).is_some(), "row lacks {key}: {r}");
        }
        let ci = r["ci_pct"].as_array().unwrap();
        let (lo, hi) = (ci[0].as_f64().unwrap(), ci[1].as_f64().unwrap());
        let t = r["true_pct"].as_f64().unwrap();
        assert_eq!(r["covered"].as_bool().unwrap(), lo <= t && t <= hi);
        assert_eq!(
            r["iters"].as_u64().unwrap() * 10_000,
            4000 * (10_000 + (t * 100.0).round() as u64)
        );
    }
    let effects = v["effects"].as_array().unwrap();
    assert_eq!(effects.len(), 4);
    for e in effects {
        let c = e["coverage"].as_f64().unwrap();
        assert!((0.0..=1.0).contains(&c));
        assert_eq!(e["repetitions"], 2);
    }
    assert_eq!(v["repetitions"].as_array().unwrap().len(), 2);
    let toggle = v["toggle"].as_array().unwrap();
    assert_eq!(toggle.len(), 1);
    assert_eq!(toggle[0]["arm"], "wasmi:fuel");
    assert!(toggle[0]["null_ci_pct"].is_array());
}

#[test]
fn calibrate_with_load_thread_records_it() {
    let (mut cmd, _dir) = loopbench();
    let out = cmd
        .args([
            "calibrate",
            "--bytes",
            "64k",
            "--repeat",
            "1",
            "--rounds",
            "3",
            "--effects",
            "2",
            "--no-toggle",
            "--load",
            "1",
            "--json",
            "-",
        ])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(v["settings"]["load_threads"], 1);
    assert_eq!(v["toggle"].as_array().unwrap().len(), 0);
    let wall = v["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["metric"] == "wall")
        .count();
    assert_eq!(wall, 2);
}

#[test]
fn one_shot_runs_the_scaled_count() {
    let (mut cmd, _dir) = loopbench();
    // 64k on add_chain: 4096 default iterations, rounded to 4100 for 1%; 4141 per call.
    cmd.args([
        "calibrate",
        "--one-shot",
        "1",
        "--bytes",
        "64k",
        "--calls",
        "3",
    ])
    .assert()
    .success()
    .stdout(predicate::str::contains(format!(
        "{} iterations verified",
        3 * 4141
    )));
}

#[test]
fn bad_calibration_input_is_one_line_error() {
    for args in [
        &["calibrate", "--effects", "0.125"][..],
        &["calibrate", "--bytes", "64k", "--iters", "1001"],
        &["calibrate", "--shape", "nope"],
        &["calibrate", "--engine", "nope"],
        &["calibrate", "--repeat", "0"],
        &["calibrate", "--toggle-shapes", "nope"],
    ] {
        let (mut cmd, _dir) = loopbench();
        let out = cmd
            .args(args)
            .assert()
            .failure()
            .get_output()
            .stderr
            .clone();
        let s = String::from_utf8_lossy(&out);
        assert!(!s.contains("panicked"), "{args:?}: {s}");
        assert!(s.trim_start().starts_with("error"), "{args:?}: {s}");
        assert_eq!(s.trim().lines().count(), 1, "{args:?}: {s}");
    }
}
