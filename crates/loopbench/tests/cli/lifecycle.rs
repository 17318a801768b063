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

/// SIGTERM during a worker's cargo build stops the build (cargo and its
/// rustc jobs, not only loopbench's wait for them) and ends the session as
/// interrupted; before, one SIGTERM waited for the whole build.
#[test]
fn sigterm_during_a_worker_build_stops_cargo_and_its_jobs() {
    let dir = tempfile::tempdir().unwrap();
    // A cache of its own: the build starts from nothing every time.
    let cache = dir.path().join("cache");
    let stderr_path = dir.path().join("stderr.txt");
    let mut child = bin(dir.path())
        .env("LOOPBENCH_CACHE_DIR", &cache)
        .args([
            "run",
            "--engines",
            "wasmi+rustflags:-Coverflow-checks=off",
            "--shapes",
            "add_chain",
        ])
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&stderr_path).unwrap())
        .spawn()
        .unwrap();
    // Generous: only a build that never starts fails here.
    let until = Instant::now() + Duration::from_secs(300);
    while !std::fs::read_to_string(&stderr_path)
        .unwrap_or_default()
        .contains("building worker")
    {
        if let Ok(Some(status)) = child.try_wait() {
            panic!(
                "ended ({status}) before building: {}",
                std::fs::read_to_string(&stderr_path).unwrap_or_default()
            );
        }
        assert!(Instant::now() < until, "the build never started");
        std::thread::sleep(Duration::from_millis(50));
    }
    sigterm(&child);
    let status = child.wait().unwrap();
    let err = std::fs::read_to_string(&stderr_path).unwrap();
    assert_eq!(status.code(), Some(143), "{err}");
    assert!(
        err.lines()
            .last()
            .unwrap_or_default()
            .starts_with("error: interrupted: "),
        "{err}"
    );
    // Nothing of the build goes on: no process works in this cache.
    let cache = cache.to_string_lossy().to_string();
    let left: Vec<String> = std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| {
            let cmdline = std::fs::read(e.ok()?.path().join("cmdline")).ok()?;
            let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            cmdline.contains(&cache).then_some(cmdline)
        })
        .collect();
    assert!(left.is_empty(), "still running: {left:?}");
    // And it did not finish: no worker binary was linked (waiting for the
    // build, as before, ends with one).
    let mut dirs = vec![std::path::PathBuf::from(&cache)];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let (path, name) = (e.path(), e.file_name().to_string_lossy().to_string());
            if path.is_dir() {
                dirs.push(path);
            } else {
                assert!(
                    !name.starts_with("lbw-") || name.contains('.'),
                    "the build finished: {}",
                    path.display()
                );
            }
        }
    }
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

/// Issue 26.5: SIGTERM stops `calibrate` between repetitions. The
/// repetitions that completed are printed and kept in a `complete: false`
/// JSON that reads back, the interrupt is the last line, and the exit code
/// is 143. The JSON is rewritten after every repetition, so the test waits
/// for the first one.
#[test]
fn sigterm_stops_calibrate_with_the_repetitions_it_completed() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = bin(dir.path())
        .args(["calibrate", "--bytes", "64k", "--effects", "5"])
        // Far more repetitions than the test waits for.
        .args(["--repeat", "1000", "--epochs", "2", "--rounds", "2"])
        .args(["--no-toggle", "--json", "cal.json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for(&dir.path().join("cal.json"), &mut child);
    sigterm(&child);
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(143), "{err}");
    let last = err.lines().last().unwrap_or_default();
    assert!(
        last.starts_with("error: interrupted: the results cover the ")
            && last.contains(" of 1000 repetitions"),
        "{err}"
    );
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(table.contains("coverage"), "{table}");
    assert!(
        table.contains("calibration incomplete (interrupted): "),
        "{table}"
    );
    let doc = json(&dir.path().join("cal.json"));
    assert_eq!(doc["complete"], false, "{doc}");
    let done = doc["repetitions"].as_array().unwrap().len();
    assert!((1..1000).contains(&done), "{done} repetitions");
    assert!(last.contains(&format!("the {done} of 1000")), "{err}");
    // The partial document reads back.
    let report = bin(dir.path())
        .args(["report", "cal.json"])
        .output()
        .unwrap();
    assert!(report.status.success(), "{report:?}");
    assert!(String::from_utf8_lossy(&report.stdout).contains("calibration incomplete"));
}

/// Shapes enough that a callgrind session runs well past the moment it is
/// signalled (each is quick, and the session stops between shapes).
const CALLGRIND_SHAPES: &str = "add_chain,br_chain,if_else,add_run,add_blocks,add_stack,\
add_loops,br_if_ladder,br_table_switch,lut,load_stream,store_stream,memory_copy,memory_fill,\
locals_traffic,local_copies,call_direct,call_indirect";

/// `run --counters callgrind` with its temporary directories in `tmp`.
fn callgrind_run(dir: &Path, tmp: &Path) -> Child {
    bin(dir)
        .env("TMPDIR", tmp)
        .args(["run", "--engines", "wasmi", "--shapes", CALLGRIND_SHAPES])
        .args(["--bytes", "64k", "--rounds", "2", "--iters", "256"])
        .args(["--counters", "callgrind", "--json", "partial.json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Processes (pid, ppid) whose command line names `tmp`: the valgrind
/// child and anything it started hold the callgrind directory under it.
fn processes_naming(tmp: &Path) -> Vec<(u32, u32)> {
    let needle = tmp.to_string_lossy().to_string();
    let mut found = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(e.path().join("cmdline")) else {
            continue;
        };
        if !String::from_utf8_lossy(&cmdline).contains(&needle) {
            continue;
        }
        let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
        // pid (comm) state ppid ...: the comm may hold spaces, so after ')'.
        let ppid = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1))
            .and_then(|p| p.parse().ok())
            .unwrap_or(0);
        found.push((pid, ppid));
    }
    found
}

fn callgrind_dirs(tmp: &Path) -> Vec<String> {
    std::fs::read_dir(tmp)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().to_string())
        .filter(|n| n.starts_with("loopbench-callgrind-"))
        .collect()
}

/// Wait (generously: only a hang fails) until valgrind runs the session.
fn wait_for_valgrind(tmp: &Path, child: &mut Child) {
    let until = Instant::now() + Duration::from_secs(120);
    while processes_naming(tmp).is_empty() {
        if let Ok(Some(status)) = child.try_wait() {
            panic!("ended ({status}) before valgrind started");
        }
        assert!(Instant::now() < until, "valgrind never started");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn valgrind_present() -> bool {
    let ok = Command::new("valgrind")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        eprintln!("SKIPPED: valgrind is not installed (apt-get install valgrind)");
    }
    ok
}

/// Issue 26.7: SIGTERM to `run --counters callgrind` reaches the session
/// under valgrind, which stops (exit 143); valgrind does not run on as an
/// orphan, and the temporary directory is gone.
#[test]
fn sigterm_to_a_callgrind_run_leaves_nothing_running() {
    if !valgrind_present() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let tmp = dir.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let mut child = callgrind_run(dir.path(), &tmp);
    wait_for_valgrind(&tmp, &mut child);
    sigterm(&child);
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    // 143 either way: the session under valgrind stops with what it
    // completed ("interrupted: ..."), or, signalled before its handlers
    // are in place, dies of the signal, which the parent passes on as
    // 128 + 15. Never does it run on to finish and record the session.
    assert_eq!(out.status.code(), Some(143), "{err}");
    assert!(!err.contains("recorded in"), "{err}");
    let json = dir.path().join("partial.json");
    assert!(!json.exists() || self::json(&json)["complete"] == false);
    assert_eq!(processes_naming(&tmp), vec![], "left running");
    assert_eq!(callgrind_dirs(&tmp), Vec::<String>::new());
}

/// Issue 26.7: a parent killed outright (SIGKILL: no handler runs) takes
/// its valgrind child with it (PR_SET_PDEATHSIG).
#[test]
fn a_killed_callgrind_run_takes_valgrind_with_it() {
    if !valgrind_present() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let tmp = dir.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let mut child = callgrind_run(dir.path(), &tmp);
    wait_for_valgrind(&tmp, &mut child);
    child.kill().unwrap();
    child.wait().unwrap();
    // The kernel signals the child at once; it may take a moment to exit.
    let until = Instant::now() + Duration::from_secs(60);
    while !processes_naming(&tmp).is_empty() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(
        processes_naming(&tmp),
        vec![],
        "valgrind outlived its parent"
    );
}

/// The processes whose parent is `pid` (from /proc).
fn children_of(pid: u32) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|c| {
            let stat = std::fs::read_to_string(format!("/proc/{c}/stat")).unwrap_or_default();
            // After the command name in parentheses: state, then the ppid.
            let after = stat.rsplit_once(") ").map(|(_, rest)| rest).unwrap_or("");
            after.split(' ').nth(1) == Some(pid.to_string().as_str())
        })
        .collect()
}

/// Wait (generously) until the session has a worker process running, then
/// a second more, so a signal sent next lands inside its rep.
fn wait_for_a_worker(child: &mut Child) {
    let until = Instant::now() + Duration::from_secs(120);
    while children_of(child.id()).is_empty() {
        if let Ok(Some(status)) = child.try_wait() {
            panic!("ended ({status}) before a worker started");
        }
        assert!(Instant::now() < until, "no worker started");
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_secs(1));
}

/// What an interrupted session says: the interrupt, named last, and no
/// arm failure for the rep the signal cut off.
fn assert_interrupted(out: &std::process::Output, code: i32) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(code), "{err}");
    assert!(
        err.lines()
            .last()
            .unwrap_or_default()
            .starts_with("error: interrupted: the results cover the "),
        "{err}"
    );
    assert!(!err.contains("did not answer"), "{err}");
    assert!(!err.contains("killed the worker"), "{err}");
}

/// Issue 53.4/53.11: a signal while a worker runs a rep that never ends (an
/// app whose `run` loops for ever) kills the worker and ends the session as
/// interrupted at once; before, the first SIGTERM waited for the rep. The
/// deadline here is ten minutes, so only the signal can end it.
#[test]
fn a_signal_during_a_rep_that_never_ends_stops_the_session() {
    let dir = tempfile::tempdir().unwrap();
    super::util::a_recipe_that_never_returns(dir.path());
    let mut child = bin(dir.path())
        .args([
            "app",
            "run",
            "zlib",
            "--engines",
            "wasmi",
            "--budget",
            "600",
        ])
        .args([
            "--layout-builds",
            "1",
            "--no-history",
            "--json",
            "partial.json",
        ])
        .env("LOOPBENCH_APPS_OUT", dir.path())
        .env("LOOPBENCH_WORKER_DEADLINE_FLOOR_MS", "600000")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_a_worker(&mut child);
    sigterm(&child);
    let out = child.wait_with_output().unwrap();
    assert_interrupted(&out, 143);
    let saved = json(&dir.path().join("partial.json"));
    assert_eq!(saved["complete"], false);
    // The epoch the signal cut short is no epoch, and no arm failed.
    assert_eq!(saved["epochs"].as_array().map_or(0, Vec::len), 0, "{saved}");
    assert_eq!(
        saved["results"].as_array().map(Vec::len),
        Some(0),
        "{saved}"
    );
    assert_eq!(saved["errors"].as_array().map(Vec::len), Some(0), "{saved}");
}

/// Issue 53.11: SIGINT during a session's only shape, whose epoch would
/// take minutes of rounds, ends the epoch at the next rep and the session
/// as interrupted (exit 130); before, the epoch ran all its rounds and the
/// session ended as if nothing had been asked.
#[test]
fn sigint_during_the_only_shape_ends_its_epoch_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = bin(dir.path())
        .args(["run", "--engines", "wasmi", "--shapes", "add_chain"])
        .args([
            "--rounds",
            "1000000",
            "--budget",
            "600",
            "--layout-builds",
            "1",
        ])
        .args(["--no-history", "--json", "partial.json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_a_worker(&mut child);
    // SAFETY: signals this test's own child.
    assert_eq!(
        unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) },
        0
    );
    let out = child.wait_with_output().unwrap();
    assert_interrupted(&out, 130);
    assert_eq!(json(&dir.path().join("partial.json"))["complete"], false);
}

/// Issue 53.11: `run --in-process` on a loop that never ends past 1000
/// iterations (the counting run's 16 and 32 end; the pilot's larger count
/// does not). No worker can be killed; the call into wasm never returns to
/// look at the signal. The watchdog ends the process once the call running
/// at the signal has gone on for its grace period, in one line, with the
/// signal's exit status; before, one SIGTERM was ignored for good.
#[test]
fn a_signal_during_an_in_process_call_that_never_returns_ends_the_process() {
    let dir = tempfile::tempdir().unwrap();
    let hang = r#"(module (memory (export "memory") 1)
      (func (export "run") (param $n i32) (result i32) (local $i i32)
        (if (i32.gt_u (local.get $n) (i32.const 1000)) (then (loop $l (br $l))))
        (loop $l (local.set $i (i32.add (local.get $i) (i32.const 1)))
          (br_if $l (i32.lt_u (local.get $i) (local.get $n))))
        (local.get $i))
      (func (export "verify") (result i32) (i32.const 1)))"#;
    std::fs::write(dir.path().join("hang.wat"), hang).unwrap();
    let child = bin(dir.path())
        .args(["run", "--engines", "wasmi", "--shape-file", "hang.wat"])
        .args(["--in-process", "--no-history", "--json", "partial.json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Into the pilot's call that never returns (whenever the signal lands,
    // that call comes and does not return).
    std::thread::sleep(Duration::from_secs(2));
    sigterm(&child);
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(143), "{err}");
    let errors: Vec<&str> = err.lines().filter(|l| l.starts_with("error")).collect();
    assert_eq!(errors.len(), 1, "{err}");
    assert!(
        errors[0].starts_with("error: interrupted: a call into wasm running in this process did not return within 5 s of signal 15"),
        "{err}"
    );
}
