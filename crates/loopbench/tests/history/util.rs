use assert_cmd::Command;
use loopbench::history::store::Sql;
use std::path::PathBuf;

/// The binary, with the history database `db` (also as LOOPBENCH_DB, so
/// nothing reaches the user's own database).
pub fn loopbench(db: &str) -> Command {
    let mut cmd = Command::cargo_bin("loopbench").unwrap();
    cmd.env("LOOPBENCH_DB", db);
    cmd
}

/// A real, short session: the arguments of every job and run here.
pub const SHORT_RUN: &[&str] = &[
    "run",
    // One code layout: these tests are about the store, not variants.
    "--layout-builds",
    "1",
    "--shapes",
    "add_chain",
    "--engines",
    "wasmi",
    "--min-epochs",
    "2",
    "--max-epochs",
    "2",
    "--rep-ms",
    "0.5",
    "-q",
];

pub fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// `SELECT count(*) ...` as a number.
pub fn count(db: &mut dyn Sql, sql: &str) -> i64 {
    db.query(sql, &[]).unwrap()[0].int(0).unwrap()
}

/// stderr of a failed command, asserted to be one `error:` line.
pub fn one_line_failure(cmd: &mut assert_cmd::Command) -> String {
    let out = cmd.assert().failure();
    let out = out.get_output();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.starts_with("error: "), "{stderr}");
    assert!(
        out.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    stderr
}

/// A short session (3 epochs, add_chain) of `engine` anchored to
/// `reference`, saved as JSON at `json`, recorded in the history `db` or not.
pub fn anchored_run(db: &str, engine: &str, reference: &str, json: &std::path::Path, record: bool) {
    loopbench(db)
        .args([
            "run",
            "--engines",
            engine,
            "--reference",
            reference,
            "--shapes",
            "add_chain",
            "--min-epochs",
            "3",
            "--max-epochs",
            "3",
            "--rep-ms",
            "0.5",
            "-q",
            // Every rep inline: tests edit their times.
            "--json-reps",
            "--json",
        ])
        .arg(json)
        .args(if record {
            &[][..]
        } else {
            &["--no-history"][..]
        })
        .assert()
        .success();
}

/// Make `arm` of session `s` another build: its version, as the session
/// and every result state it, gains `build`.
pub fn rebuild(s: &mut loopbench::results::Session, arm: &str, build: &str) {
    for e in s.session.engines.iter_mut().filter(|e| e.arm == arm) {
        e.version = format!("{} [{build}]", e.version);
    }
    for a in s.results.iter_mut().flat_map(|r| r.arms.iter_mut()) {
        if a.arm == arm {
            a.version = format!("{} [{build}]", a.version);
        }
    }
}
