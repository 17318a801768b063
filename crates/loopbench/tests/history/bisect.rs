//! Bisect on real git repositories whose revisions set the mock engine's
//! synthetic cost (`mock=git:DIR#REV` reads the options in the revision's
//! file `loopbench-mock`): the search, its three-way verdicts, resuming
//! from the database (SQLite and PostgreSQL), and refusals.

use super::pg::PgServer;
use super::util::{count, loopbench, one_line_failure};
use crate::builds::git;
use serde_json::Value;
use std::path::Path;

/// Fast, fixed sessions per step: the mock's costs are exact.
const STEP: &[&str] = &[
    "--",
    "--min-epochs",
    "2",
    "--max-epochs",
    "2",
    "--rep-ms",
    "0.5",
];

/// A repository with one revision per entry of `options` (the mock's
/// options at that revision); the commits, oldest first.
fn repo(dir: &Path, options: &[String]) -> Vec<String> {
    git(dir, &["init", "-q", "-b", "main"]);
    options
        .iter()
        .enumerate()
        .map(|(i, o)| {
            std::fs::write(dir.join("loopbench-mock"), format!("# revision {i}\n{o}\n")).unwrap();
            git(dir, &["add", "."]);
            git(dir, &["commit", "-q", "-m", &format!("revision {i}")]);
            git(dir, &["rev-parse", "HEAD"])
        })
        .collect()
}

/// Costs 10 ns/iter up to `first_bad`, then 11 (+10%), over revisions 0..=n.
fn step_change(n: usize, first_bad: usize) -> Vec<String> {
    (0..=n)
        .map(|i| format!("cost={}", if i >= first_bad { 11 } else { 10 }))
        .collect()
}

struct Bisected {
    code: i32,
    stdout: String,
    stderr: String,
    json: Value,
}

fn bisect(db: &str, repo: &Path, extra: &[&str]) -> Bisected {
    let out_dir = tempfile::tempdir().unwrap();
    let json = out_dir.path().join("bisect.json");
    let out = loopbench(db)
        .arg("bisect")
        .arg("--engine")
        .arg(format!("mock=git:{}", repo.display()))
        .args([
            "--good",
            "main~8",
            "--bad",
            "main",
            "--shapes",
            "add_chain",
            "--json",
        ])
        .arg(&json)
        .args(extra)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(!stderr.contains("panicked"), "{stderr}");
    Bisected {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).to_string(),
        json: serde_json::from_str(&std::fs::read_to_string(&json).unwrap_or_default())
            .unwrap_or(Value::Null),
        stderr,
    }
}

/// Steps of the bisect taken from the database (`true`) or measured.
fn steps(b: &Bisected, reused: bool) -> usize {
    b.json["steps"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["reused"] == reused)
        .count()
}

fn measured(b: &Bisected) -> usize {
    steps(b, false)
}

#[test]
fn the_first_bad_revision_is_found_within_log2_steps_plus_the_endpoints() {
    let db_dir = tempfile::tempdir().unwrap();
    for first_bad in [1, 5, 8] {
        let db = db_dir.path().join(format!("h{first_bad}.sqlite"));
        let db = db.to_str().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let commits = repo(dir.path(), &step_change(8, first_bad));
        let b = bisect(db, dir.path(), STEP);
        assert_eq!(b.code, 0, "{}{}", b.stdout, b.stderr);
        assert_eq!(b.json["result"], "found", "{}", b.json);
        assert_eq!(b.json["commit"], commits[first_bad].as_str());
        assert_eq!(b.json["position"], first_bad);
        assert_eq!(b.json["last_good"], commits[first_bad - 1].as_str());
        // ceil(log2(8)) midpoints and the endpoint step, all measured.
        let steps = measured(&b);
        assert!(steps <= 3 + 1, "{steps} steps: {}", b.json);
        assert!(
            b.stdout
                .contains(&format!("first bad revision: {}", commits[first_bad])),
            "{}",
            b.stdout
        );
        assert!(
            b.stdout.contains(&format!("\"revision {first_bad}\"")),
            "{}",
            b.stdout
        );
        // Every measured step is a session in the history, with its step row.
        let mut conn = loopbench::history::Location::Sqlite(db.into())
            .open()
            .unwrap();
        assert_eq!(
            count(conn.as_mut(), "SELECT count(*) FROM bisect_steps") as usize,
            steps
        );
        assert_eq!(
            count(
                conn.as_mut(),
                "SELECT count(*) FROM sessions WHERE origin = 'bisect'"
            ) as usize,
            steps
        );
        // The endpoint step is the exact +10%, each midpoint exactly 0 or +10%.
        for s in b.json["steps"].as_array().unwrap() {
            let pct = s["shapes"][0]["median_pct"].as_f64().unwrap();
            let bad = s["position"].as_u64().unwrap() as usize >= first_bad;
            assert!((pct - if bad { 10.0 } else { 0.0 }).abs() < 1e-6, "{s}");
            assert_eq!(s["verdict"], if bad { "bad" } else { "good" }, "{s}");
        }
        // The plan line came first, and says what the bisect measures.
        let first = b.stderr.lines().next().unwrap();
        assert!(
            first.starts_with("bisect: 8 revisions after good")
                && first.contains("at most 4 steps")
                && first.contains("nothing to build"),
            "{first}"
        );
    }
}

#[test]
fn equal_costs_name_no_revision_and_noise_says_unsure() {
    let db_dir = tempfile::tempdir().unwrap();
    let db = db_dir.path().join("h.sqlite");
    let db = db.to_str().unwrap();
    // The same cost everywhere: bad is unchanged against good.
    let dir = tempfile::tempdir().unwrap();
    repo(dir.path(), &vec!["cost=10".to_string(); 9]);
    let b = bisect(db, dir.path(), STEP);
    assert_eq!(b.code, 1, "{}{}", b.stdout, b.stderr);
    assert_eq!(b.json["result"], "no_change", "{}", b.json);
    assert!(
        b.stdout.contains("no revision named: bad is unchanged"),
        "{}",
        b.stdout
    );
    assert_eq!(measured(&b), 1, "only the endpoints");

    // The same cost under noise that the steps cannot see through: unsure,
    // not a guess.
    let dir = tempfile::tempdir().unwrap();
    let noisy: Vec<String> = (0..=8)
        .map(|i| format!("cost=10,noise=0.5,seed={i}"))
        .collect();
    repo(dir.path(), &noisy);
    let b = bisect(
        db,
        dir.path(),
        &[
            "--precision",
            "0.1",
            "--",
            "--min-epochs",
            "3",
            "--max-epochs",
            "3",
            "--rep-ms",
            "0.5",
            // The sessions' order seeded, so the noise each mock draws is
            // the same every time.
            "--seed",
            "1",
        ],
    );
    assert_eq!(b.code, 1, "{}{}", b.stdout, b.stderr);
    assert_eq!(b.json["result"], "unsure", "{}", b.json);
    assert!(
        b.stdout
            .contains("unsure: the first bad revision is one of the 8"),
        "{}",
        b.stdout
    );
}

#[test]
fn a_bisect_stopped_halfway_goes_on_without_repeating_finished_steps() {
    let db_dir = tempfile::tempdir().unwrap();
    let db = db_dir.path().join("h.sqlite");
    let db = db.to_str().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let commits = repo(dir.path(), &step_change(8, 3));
    let mut first: Vec<&str> = vec!["--max-steps", "2"];
    first.extend(STEP);
    let b = bisect(db, dir.path(), &first);
    assert_eq!(b.code, 1, "{}{}", b.stdout, b.stderr);
    assert_eq!(b.json["result"], "unfinished", "{}", b.json);
    assert_eq!(measured(&b), 2);
    assert!(
        b.stdout.contains("run the same command again to go on"),
        "{}",
        b.stdout
    );

    let b = bisect(db, dir.path(), STEP);
    assert_eq!(b.code, 0, "{}{}", b.stdout, b.stderr);
    assert_eq!(b.json["commit"], commits[3].as_str());
    let reused = steps(&b, true);
    assert_eq!(reused, 2, "{}", b.json);
    assert!(
        b.stderr
            .lines()
            .next()
            .unwrap()
            .contains("(2 measured before, reused)"),
        "{}",
        b.stderr
    );
    let mut conn = loopbench::history::Location::Sqlite(db.into())
        .open()
        .unwrap();
    let steps = count(conn.as_mut(), "SELECT count(*) FROM bisect_steps") as usize;
    assert_eq!(steps, 2 + measured(&b), "no step measured twice");

    // Finished: run again, nothing is measured and the answer is the same.
    let b = bisect(db, dir.path(), STEP);
    assert_eq!((b.code, measured(&b)), (0, 0), "{}", b.json);
    assert_eq!(b.json["commit"], commits[3].as_str());
}

#[test]
fn an_interrupted_bisect_keeps_its_finished_steps() {
    let db_dir = tempfile::tempdir().unwrap();
    let db = db_dir.path().join("h.sqlite");
    let db_s = db.to_str().unwrap().to_string();
    let dir = tempfile::tempdir().unwrap();
    let commits = repo(dir.path(), &step_change(8, 6));
    // Steps long enough to be interrupted in the middle of one (the same
    // options when it goes on: they are part of what the bisect is).
    let long = [
        "--",
        "--min-epochs",
        "30",
        "--max-epochs",
        "30",
        "--rep-ms",
        "0.5",
    ];
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("loopbench"))
        .env("LOOPBENCH_DB", &db_s)
        .arg("bisect")
        .arg("--engine")
        .arg(format!("mock=git:{}", dir.path().display()))
        .args(["--good", "main~8", "--bad", "main", "--shapes", "add_chain"])
        .args(long)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Wait (without a clock in the assertion) until a step is stored.
    let stored = |db: &Path| {
        loopbench::history::Location::Sqlite(db.into())
            .open_read()
            .ok()
            .and_then(|mut c| c.query("SELECT count(*) FROM bisect_steps", &[]).ok())
            .and_then(|r| r.first().and_then(|r| r.int(0).ok()))
            .unwrap_or(0)
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(300);
    while stored(&db) < 1 {
        assert!(std::time::Instant::now() < deadline, "no step stored");
        assert!(
            child.try_wait().unwrap().is_none(),
            "the bisect ended early"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    // SAFETY: signals the child this test started.
    unsafe {
        libc::kill(child.id() as libc::pid_t, libc::SIGINT);
    }
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("error: interrupted"), "{stderr}");
    let kept = stored(&db) as usize;
    assert!(kept >= 1);
    let b = bisect(&db_s, dir.path(), &long);
    assert_eq!(b.code, 0, "{}{}", b.stdout, b.stderr);
    assert_eq!(b.json["commit"], commits[6].as_str());
    let reused = steps(&b, true);
    assert_eq!(reused, kept, "{stderr}\n{}", b.stderr);
}

/// Issue 53.6: two runs of one bisect on one database both measured every
/// step. While one runs, the other is refused in one line that says which
/// (its pid, on SQLite), and nothing is measured twice.
fn a_second_runner_is_refused(db: &str, names_pid: bool) {
    use std::io::BufRead;
    let dir = tempfile::tempdir().unwrap();
    repo(dir.path(), &step_change(8, 6));
    let long = [
        "--",
        "--min-epochs",
        "30",
        "--max-epochs",
        "30",
        "--rep-ms",
        "0.5",
    ];
    let mut first = std::process::Command::new(assert_cmd::cargo::cargo_bin("loopbench"))
        .env("LOOPBENCH_DB", db)
        .arg("bisect")
        .arg("--engine")
        .arg(format!("mock=git:{}", dir.path().display()))
        .args(["--good", "main~8", "--bad", "main", "--shapes", "add_chain"])
        .args(long)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The plan line comes once the bisect is held.
    let mut lines = std::io::BufReader::new(first.stderr.take().unwrap()).lines();
    let plan = lines
        .by_ref()
        .map_while(Result::ok)
        .find(|l| l.starts_with("bisect: "))
        .expect("the first bisect printed no plan");
    assert!(plan.contains("at most"), "{plan}");
    let e = one_line_failure(
        loopbench(db)
            .arg("bisect")
            .arg("--engine")
            .arg(format!("mock=git:{}", dir.path().display()))
            .args(["--good", "main~8", "--bad", "main", "--shapes", "add_chain"])
            .args(long),
    );
    assert!(e.contains("is being measured by another loopbench"), "{e}");
    if names_pid {
        assert!(e.contains(&format!("(pid {})", first.id())), "{e}");
    }
    // SAFETY: signals the child this test started.
    unsafe {
        libc::kill(first.id() as libc::pid_t, libc::SIGINT);
    }
    let _ = first.wait();
    // Once it has stopped, the bisect is free again (a single step now).
    let mut again = vec!["--max-steps", "1"];
    again.extend(long);
    let b = bisect(db, dir.path(), &again);
    assert!(!b.stderr.contains("another loopbench"), "{}", b.stderr);
}

#[test]
fn a_second_run_of_one_bisect_is_refused_while_the_first_measures() {
    let db_dir = tempfile::tempdir().unwrap();
    let db = db_dir.path().join("h.sqlite");
    a_second_runner_is_refused(db.to_str().unwrap(), true);
}

#[test]
fn a_bisect_on_postgresql_goes_on_where_it_stopped() {
    let server = PgServer::start();
    let url = server.url.as_str();
    let dir = tempfile::tempdir().unwrap();
    let commits = repo(dir.path(), &step_change(8, 7));
    let mut first: Vec<&str> = vec!["--max-steps", "1"];
    first.extend(STEP);
    let b = bisect(url, dir.path(), &first);
    assert_eq!((b.code, measured(&b)), (1, 1), "{}{}", b.stdout, b.stderr);
    let b = bisect(url, dir.path(), STEP);
    assert_eq!(b.code, 0, "{}{}", b.stdout, b.stderr);
    assert_eq!(b.json["commit"], commits[7].as_str());
    let mut conn = loopbench::history::Location::parse(url)
        .unwrap()
        .open()
        .unwrap();
    assert_eq!(
        count(conn.as_mut(), "SELECT count(*) FROM bisect_steps") as usize,
        1 + measured(&b)
    );
    assert_eq!(
        count(
            conn.as_mut(),
            "SELECT count(*) FROM bisects WHERE finished_at IS NOT NULL"
        ),
        1
    );
    a_second_runner_is_refused(url, false);
}

#[test]
fn bad_bisects_are_one_clear_line() {
    let db_dir = tempfile::tempdir().unwrap();
    let db = db_dir.path().join("h.sqlite");
    let db = db.to_str().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let r = dir.path();
    repo(r, &step_change(8, 4));
    let engine = format!("mock=git:{}", r.display());
    let case = |args: &[&str]| one_line_failure(loopbench(db).arg("bisect").args(args));
    let base = ["--engine", engine.as_str(), "--shapes", "add_chain"];
    let with = |extra: &[&'static str]| {
        let mut v: Vec<&str> = base.to_vec();
        v.extend(extra);
        v
    };
    let e = case(&with(&["--good", "main", "--bad", "main~8"]));
    assert!(e.contains("is not an ancestor"), "{e}");
    let e = case(&with(&["--good", "main", "--bad", "main"]));
    assert!(e.contains("are the same commit"), "{e}");
    let e = case(&with(&["--good", "no-such", "--bad", "main"]));
    assert!(e.contains("no such revision"), "{e}");
    let e = case(&with(&[
        "--good",
        "main~8",
        "--bad",
        "main",
        "--",
        "--engines",
        "wasmi",
    ]));
    assert!(e.contains("bisect sets it"), "{e}");
    // The step's options are parsed as the step will run them, before the
    // plan: one line now rather than a failed first step.
    let range = ["--good", "main~8", "--bad", "main"];
    let after = |extra: &[&'static str]| {
        let mut v = with(&range);
        v.push("--");
        v.extend(extra);
        v
    };
    let e = case(&after(&["--budget", "5"]));
    assert!(
        e.contains("bisect sets it") && e.contains("bisect's own --budget"),
        "{e}"
    );
    let e = case(&after(&["--no-such-option"]));
    assert!(
        e.contains("after `--`") && e.contains("--no-such-option"),
        "{e}"
    );
    let e = case(&after(&["--rounds", "many"]));
    assert!(e.contains("after `--`") && e.contains("many"), "{e}");
    // An app is WASI command modules, judged by time, each one loaded
    // before any step.
    let app = |extra: &[&'static str]| {
        let mut v = vec!["--engine", engine.as_str()];
        v.extend(range);
        v.extend(extra);
        v
    };
    let e = case(&app(&["--app", "lua"]));
    assert!(e.contains("--app lua") && e.contains("recipe"), "{e}");
    let e = case(&app(&["--app", "x.wasm", "--counters", "callgrind"]));
    assert!(e.contains("bisect an app by time"), "{e}");
    let e = case(&app(&["--app", "/no/such/module.wasm"]));
    assert!(e.contains("/no/such/module.wasm"), "{e}");
    let e = case(&app(&["--app", "x.wasm", "--", "--arg"]));
    assert!(e.contains("after `--`") && e.contains("--arg"), "{e}");
    let e = case(&with(&[
        "--good", "main~8", "--bad", "main", "--budget", "0",
    ]));
    assert!(e.contains("--budget"), "{e}");
    let e = case(&[
        "--engine",
        "wasmi@2",
        "--good",
        "a",
        "--bad",
        "b",
        "--shapes",
        "add_chain",
    ]);
    assert!(e.contains("expected ENGINE=git:DIR"), "{e}");
    let e = case(&with(&[
        "--good",
        "main~8",
        "--bad",
        "main",
        "--shapes",
        "no_such_shape",
    ]));
    assert!(e.contains("no_such_shape"), "{e}");
    // A revision without the mock's file is refused before any step.
    let other = tempfile::tempdir().unwrap();
    git(other.path(), &["init", "-q", "-b", "main"]);
    for i in 0..2 {
        std::fs::write(other.path().join("README"), format!("{i}")).unwrap();
        git(other.path(), &["add", "."]);
        git(other.path(), &["commit", "-q", "-m", "x"]);
    }
    let e = one_line_failure(
        loopbench(db)
            .arg("bisect")
            .arg("--engine")
            .arg(format!("mock=git:{}", other.path().display()))
            .args(["--good", "main~1", "--bad", "main", "--shapes", "add_chain"]),
    );
    assert!(e.contains("has no file `loopbench-mock`"), "{e}");
}
