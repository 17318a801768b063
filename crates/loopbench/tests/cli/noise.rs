use super::util::{assert_one_line_error, loopbench};
use serde_json::Value;

/// The mock engine's synthetic noise (10% per rep, deterministic) over a
/// sweep of two rep lengths: one row each, every level a finite SD, a
/// choice among them, and the document reports again as HTML with its chart.
/// The mock's null control is a second worker process whose engine draws
/// the same noise sequence as the baseline's, so pairing removes it
/// exactly: the rep level holds it all, the round and epoch levels none.
#[test]
fn noise_splits_the_levels_per_rep_length_and_chooses_one() {
    let (doc, table, dir) = noise_json(&[
        "--engine",
        "mock:cost=10,noise=0.1",
        "--shape",
        "add_chain",
        "--rep-ms",
        "0.05,0.2",
        "--schedules",
        "sequential,duet",
        "--epochs",
        "3",
        "--rounds",
        "4",
        "--budget",
        "2",
    ]);
    assert!(table.contains("would use: --rep-ms "), "{table}");
    assert_eq!(doc["schema"], "loopbench-noise/1");
    let rows = doc["rows"].as_array().unwrap();
    // Both schedules, each over the sweep: in a duet too the null's
    // identical noise pairs away exactly.
    assert_eq!(rows.len(), 4);
    let sweep = [
        ("sequential", 0.05),
        ("sequential", 0.2),
        ("duet", 0.05),
        ("duet", 0.2),
    ];
    for (r, (schedule, ms)) in rows.iter().zip(sweep) {
        assert_eq!(r["rep_ms"], ms);
        assert_eq!(r["schedule"], schedule);
        assert_eq!(
            (r["epochs"].as_u64(), r["rounds"].as_u64()),
            (Some(3), Some(4))
        );
        for level in [
            "rep_sd_pct",
            "round_sd_pct",
            "epoch_sd_pct",
            "smallest_change_pct",
        ] {
            let v = r[level].as_f64().unwrap();
            assert!(v.is_finite() && v >= 0.0, "{level}: {r}");
        }
        assert!(r["rep_sd_pct"].as_f64().unwrap() > 0.5, "{r}");
        assert_eq!(r["round_sd_pct"], 0.0, "{r}");
        assert_eq!(r["epoch_sd_pct"], 0.0, "{r}");
        assert!(r["budget_epochs"].as_u64().unwrap() >= 2);
    }
    let choice = doc["choice"].as_f64().unwrap();
    assert!(choice == 0.05 || choice == 0.2, "{choice}");
    let schedule = doc["choice_schedule"].as_str().unwrap();
    assert!(schedule == "sequential" || schedule == "duet", "{schedule}");
    let (mut cmd, _d) = loopbench();
    let html = cmd
        .current_dir(dir.path())
        .args(["report", "noise.json", "--html", "-"])
        .assert()
        .success();
    let html = String::from_utf8_lossy(&html.get_output().stdout).to_string();
    assert!(
        html.contains("Noise of mock:cost=10,noise=0.1 on add_chain"),
        "{html}"
    );
    assert!(html.contains("<svg"), "{html}");
}

/// Without `--rounds`, each rep length of the sweep is measured with the
/// rounds `run` would take at it, so the predictions are for those
/// sessions.
#[test]
fn noise_takes_the_rounds_run_would_at_each_rep_length() {
    let (doc, _, _dir) = noise_json(&[
        "--engine",
        "mock:cost=10",
        "--rep-ms",
        "0.25,2",
        "--epochs",
        "2",
    ]);
    let rounds: Vec<_> = doc["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["rounds"].as_u64())
        .collect();
    assert_eq!(rounds, [Some(32), Some(8)]);
}

#[test]
fn noise_refuses_sweeps_it_cannot_split() {
    for (args, says) in [
        (&["--epochs", "1"][..], "--epochs must be 2 to 200"),
        (&["--rep-ms", "0"][..], "--rep-ms: each rep length must be"),
        (
            &["--rep-ms", "nan"][..],
            "--rep-ms: each rep length must be",
        ),
        (&["--budget=-1"][..], "--budget must be a positive"),
        (
            &["--record", "--epochs", "8"][..],
            "--record needs --epochs 20 or more",
        ),
        (&["--shape", "nope"][..], "nope"),
    ] {
        let (mut cmd, _d) = loopbench();
        let out = cmd.arg("noise").args(args).assert().failure();
        let e = assert_one_line_error(&out.get_output().stderr);
        assert!(e.contains(says), "{args:?}: {e}");
    }
}

/// `noise --record` stores the rep length it chose for this machine;
/// `run` then takes it by default and says so in the table and the JSON,
/// and `--rep-ms` overrides it.
#[test]
fn a_recorded_setting_is_used_reported_and_overridable() {
    let (mut cmd, dir) = loopbench();
    cmd.current_dir(dir.path())
        .args([
            "noise",
            "--engine",
            "mock:cost=10",
            "--rep-ms",
            "0.3,0.7",
            "--epochs",
            "20",
            "--rounds",
            "2",
            "--record",
        ])
        .assert()
        .success()
        .stderr(predicates::str::contains(
            "noise: --rep-ms 0.3 recorded for this machine",
        ));
    let run = |extra: &[&str]| run_with_setting(dir.path(), extra);
    let (doc, table) = run(&[]);
    assert_eq!(doc["session"]["rep_ms"], 0.3);
    let setting = doc["session"]["setting"].as_str().unwrap();
    assert!(
        setting.starts_with("rep length 0.3 ms recorded for this machine by `loopbench noise`"),
        "{setting}"
    );
    assert!(
        table.contains("setting: rep length 0.3 ms recorded"),
        "{table}"
    );
    // Rounds follow the rep length when --rounds is not given: 8 ms of
    // reps (27 at 0.3 ms), rounded up to a whole design for two arms.
    assert_eq!(doc["session"]["rounds"], 28);
    let (doc, table) = run(&["--rep-ms", "1"]);
    assert_eq!(doc["session"]["rep_ms"], 1.0);
    assert_eq!(doc["session"]["rounds"], 8);
    assert!(
        doc["session"].get("setting").is_none(),
        "{}",
        doc["session"]
    );
    assert!(!table.contains("setting:"), "{table}");
}

/// A recorded duet: `run` then runs in duets by default and says so;
/// `--schedule sequential` overrides it (and `--rep-ms` alone does not).
#[test]
fn a_recorded_duet_schedule_is_used_reported_and_overridable() {
    let (mut cmd, dir) = loopbench();
    cmd.current_dir(dir.path())
        .args([
            "noise",
            "--engine",
            "mock:cost=10",
            "--schedules",
            "duet",
            "--rep-ms",
            "0.3",
            "--epochs",
            "20",
            "--rounds",
            "2",
            "--record",
        ])
        .assert()
        .success()
        .stderr(predicates::str::contains("(schedule duet, estimator "));
    let run = |extra: &[&str]| run_with_setting(dir.path(), extra).0;
    let doc = run(&[]);
    assert_eq!(doc["session"]["schedule"]["name"], "duet");
    let setting = doc["session"]["setting"].as_str().unwrap();
    assert!(setting.contains("the duet schedule recorded"), "{setting}");
    let doc = run(&["--rep-ms", "1"]);
    assert_eq!(doc["session"]["schedule"]["name"], "duet");
    let doc = run(&["--schedule", "sequential", "--rep-ms", "1"]);
    assert_eq!(doc["session"]["schedule"]["name"], "sequential");
    assert!(
        doc["session"].get("setting").is_none(),
        "{}",
        doc["session"]
    );
}

/// A short mock `run` in `dir` with the history `noise --record` wrote
/// there: its JSON document and its table.
fn run_with_setting(dir: &std::path::Path, extra: &[&str]) -> (Value, String) {
    let (mut cmd, _d) = loopbench();
    let out = cmd
        .current_dir(dir)
        .env("LOOPBENCH_DB", dir.join("history.sqlite"))
        .args([
            "run",
            "--engines",
            "mock:cost=10",
            "--shapes",
            "add_chain",
            "--min-epochs",
            "2",
            "--max-epochs",
            "2",
            "--no-history",
            "--json",
            "s.json",
        ])
        .args(extra)
        .assert()
        .success();
    let table = String::from_utf8_lossy(&out.get_output().stdout).to_string();
    let doc = serde_json::from_slice(&std::fs::read(dir.join("s.json")).unwrap()).unwrap();
    (doc, table)
}

/// `noise --record` replays its chosen row's own reps through every
/// estimator and records the one they favour (on the mock's noise-free
/// reps no estimator is narrower: the median). A recorded estimator is
/// what `run` then reduces each epoch by, and it says so; `--estimator`
/// overrides it, and a name it does not know is one clear line.
#[cfg(feature = "history")]
#[test]
fn a_recorded_estimator_is_chosen_on_own_reps_used_and_overridable() {
    let (mut cmd, dir) = loopbench();
    cmd.current_dir(dir.path())
        .env("LOOPBENCH_DB", dir.path().join("history.sqlite"))
        .args([
            "noise",
            "--engine",
            "mock:cost=10",
            "--schedules",
            "sequential",
        ])
        .args(["--rep-ms", "0.3", "--epochs", "20", "--rounds", "2"])
        .args(["--record", "--json", "noise.json"])
        .assert()
        .success()
        .stderr(predicates::str::contains("estimator median)"));
    let doc: Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("noise.json")).unwrap()).unwrap();
    assert_eq!(doc["choice_estimator"]["estimator"], "median");
    let rows = doc["estimators"]["rows"].as_array().unwrap();
    // Every estimator at effects 0 and +1%, on the 20 recorded epochs.
    assert_eq!(rows.len(), 2 * 8, "{rows:?}");
    assert_eq!(doc["estimators"]["epochs"], 20);
    let (doc, _) = run_with_setting(dir.path(), &[]);
    assert_eq!(doc["session"]["estimator"], "median");

    // A machine whose own reps favoured Hodges-Lehmann.
    let db = dir.path().join("history.sqlite");
    let mut conn = loopbench::history::Location::parse(db.to_str().unwrap())
        .unwrap()
        .open()
        .unwrap();
    loopbench::history::settings::record(
        conn.as_mut(),
        &loopbench::machine::Machine::read(),
        0.3,
        "sequential",
        "hodges_lehmann",
        "a test",
    )
    .unwrap();
    drop(conn);
    let (doc, table) = run_with_setting(dir.path(), &[]);
    assert_eq!(doc["session"]["estimator"], "hodges_lehmann");
    let setting = doc["session"]["setting"].as_str().unwrap();
    assert!(
        setting.starts_with("rep length 0.3 ms and the hodges_lehmann estimator recorded")
            && setting.ends_with("(--rep-ms, --estimator override)"),
        "{setting}"
    );
    assert!(table.contains("the hodges_lehmann estimator"), "{table}");
    let (doc, _) = run_with_setting(dir.path(), &["--estimator", "q25", "--rep-ms", "1"]);
    assert_eq!(doc["session"]["estimator"], "q25");
    assert!(
        doc["session"].get("setting").is_none(),
        "{}",
        doc["session"]
    );

    let (mut cmd, _d) = loopbench();
    let out = cmd
        .args(["run", "--engines", "mock:cost=10", "--estimator", "q0"])
        .assert()
        .failure();
    let e = assert_one_line_error(&out.get_output().stderr);
    assert!(e.contains("--estimator: unknown estimator `q0`"), "{e}");
}

/// `noise ARGS --json noise.json` in a fresh directory: its document, its
/// table and the directory.
fn noise_json(args: &[&str]) -> (Value, String, tempfile::TempDir) {
    let (mut cmd, dir) = loopbench();
    let out = cmd
        .current_dir(dir.path())
        .arg("noise")
        .args(args)
        .args(["--json", "noise.json"])
        .assert()
        .success();
    let table = String::from_utf8_lossy(&out.get_output().stdout).to_string();
    let doc =
        serde_json::from_slice(&std::fs::read(dir.path().join("noise.json")).unwrap()).unwrap();
    (doc, table, dir)
}

/// Issue 53.9: `--schedules duet:0,1` was split at its comma and refused,
/// while the message offered `duet:A,B`. The duet keeps its cores: two
/// equal ones are refused for being equal.
#[test]
fn a_duet_in_the_sweep_names_its_cores() {
    let (mut cmd, _dir) = loopbench();
    let out = cmd
        .args(["noise", "--engine", "mock:cost=10"])
        .args(["--schedules", "sequential,duet:0,0", "--epochs", "2"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let e = assert_one_line_error(&out.stderr);
    assert!(e.contains("two different core numbers"), "{e}");
}
