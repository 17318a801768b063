//! Issue 26: nothing lost, nothing left running. A failing export, a bad
//! database, SIGTERM and SIGINT, and the children of a session, through
//! the real binary.

use super::util::{assert_one_line_error, LONG};
use serde_json::Value;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn bin(dir: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_loopbench"));
    cmd.current_dir(dir)
        .env("LOOPBENCH_DB", dir.join("history.sqlite"));
    cmd
}

/// Wait (generously: only a hang fails) until `path` exists.
fn wait_for(path: &Path, child: &mut Child) {
    let until = Instant::now() + Duration::from_secs(120);
    while !path.exists() {
        if let Ok(Some(status)) = child.try_wait() {
            panic!("ended ({status}) before {} appeared", path.display());
        }
        assert!(Instant::now() < until, "{} never appeared", path.display());
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn json(path: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

/// Issue 26.3: an export whose writes start failing mid-session (its
/// directory removed after the pre-run check, as a full disk would) fails
/// that export only: the session runs to its end, the other files, the
/// table and the history record are written, and the exit code is 2 with
/// the failed export named.
#[test]
fn a_failing_export_fails_only_itself() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("full")).unwrap();
    let mut child = bin(dir.path())
        .args(["run", "--engines", "wasmi", "--shapes", "add_chain"])
        .args(["--bytes", "64k", "--rounds", "2", "--iters", "256"])
        // Never precise enough: the session runs its 3 s budget.
        .args(["--precision", "0.0001", "--budget", "3"])
        .args([
            "--csv",
            "full/keep.csv",
            "--json",
            "ok.json",
            "--html",
            "page.html",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for(&dir.path().join("full/keep.csv"), &mut child);
    std::fs::remove_dir_all(dir.path().join("full")).unwrap();
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains(
            "warning: csv export: cannot create a file in full: No such file or directory"
        ),
        "{err}"
    );
    assert!(err.contains("history: session 1 recorded in"), "{err}");
    assert_eq!(
        assert_one_line_error(&out.stderr),
        "error: export failed: csv (cannot create a file in full: No such file or directory (os error 2))"
    );
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(table.contains("add_chain"), "{table}");
    let doc = json(&dir.path().join("ok.json"));
    assert_eq!(doc["complete"], true, "{err}");
    assert!(std::fs::read_to_string(dir.path().join("page.html"))
        .unwrap()
        .contains("add_chain"));
}

/// Issue 26.4: a history database that cannot record (nothing listens
/// there; a SQLite path under a file) is refused before the first epoch,
/// as output paths are: nothing is measured, no file is written.
#[test]
fn a_database_that_cannot_record_is_refused_before_measuring() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("plain"), "").unwrap();
    for db in ["postgres://u:secret@127.0.0.1:1/x", "plain/h.sqlite"] {
        let out = bin(dir.path())
            .args(["run", "--engines", "wasmi", "--shapes", "add_chain"])
            .args(["--bytes", "64k", "--rounds", "2", "--iters", "256"])
            .args(["--db", db, "--json", "out.json"])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{db}: {err}");
        assert_one_line_error(&out.stderr);
        assert!(!err.contains("secret"), "{err}");
        assert!(!err.contains("counters:"), "measuring started: {err}");
        assert!(!dir.path().join("out.json").exists(), "{db}: measured");
    }
}

/// Issue 26.4: when recording fails after measuring anyway (the database's
/// directory replaced by a file mid-session) and no `--json` file holds the
/// session, it is saved beside the command, which says where, and imports.
#[test]
fn a_session_the_database_refuses_is_saved_for_import() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    std::fs::create_dir(&db).unwrap();
    let mut child = bin(dir.path())
        .args(["run", "--engines", "wasmi", "--shapes", "add_chain"])
        .args(["--bytes", "64k", "--rounds", "2", "--iters", "256"])
        .args(["--precision", "0.0001", "--budget", "3"])
        .args(["--db", "db/h.sqlite", "--csv", "rows.csv"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for(&dir.path().join("rows.csv"), &mut child);
    std::fs::remove_dir_all(&db).unwrap();
    std::fs::write(&db, "").unwrap();
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("error: history: "), "{err}");
    let saved = err
        .lines()
        .find_map(|l| l.strip_prefix("history: the session is saved in "))
        .and_then(|l| l.split(';').next())
        .unwrap_or_else(|| panic!("no recovery file named: {err}"));
    let saved = dir.path().join(saved);
    assert!(saved
        .file_name()
        .unwrap()
        .to_string_lossy()
        .starts_with("loopbench-unrecorded-"));
    assert_eq!(json(&saved)["complete"], true);
    let import = bin(dir.path())
        .args(["history", "import"])
        .arg(&saved)
        .args(["--db", "other.sqlite"])
        .output()
        .unwrap();
    assert!(
        import.status.success(),
        "{}",
        String::from_utf8_lossy(&import.stderr)
    );
}

fn sigterm(child: &Child) {
    // SAFETY: signals this test's own child.
    assert_eq!(
        unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) },
        0
    );
}

/// Issue 26.5: SIGTERM stops `run` as SIGINT does: the table of what
/// completed, a `complete: false` JSON, the interrupt named, exit 143.
#[test]
fn sigterm_stops_run_with_what_completed() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = bin(dir.path())
        .arg("run")
        .args(LONG)
        .args(["--json", "partial.json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for(&dir.path().join("partial.json"), &mut child);
    sigterm(&child);
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(143), "{err}");
    assert!(
        err.lines()
            .last()
            .unwrap_or_default()
            .starts_with("error: interrupted: the results cover the "),
        "{err}"
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("session incomplete"));
    assert_eq!(json(&dir.path().join("partial.json"))["complete"], false);
}

/// Issue 26.5: SIGTERM stops `model` too, and its JSON is still written
/// (`complete: false`), exit 143.
#[test]
fn sigterm_stops_model_and_writes_its_json() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = bin(dir.path())
        .arg("model")
        .args(LONG)
        .args(["--json", "model.json"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // `model` writes no partial file: give it time for a first epoch.
    std::thread::sleep(Duration::from_secs(5));
    assert!(child.try_wait().unwrap().is_none(), "model ended early");
    sigterm(&child);
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(143), "{err}");
    let doc = json(&dir.path().join("model.json"));
    assert_eq!(doc["session"]["complete"], false, "{doc}");
}
