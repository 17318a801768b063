//! Issue 12: nothing lost, nothing hangs, no wrong number. Each test holds
//! one fault a new user met, through the real binary.

use super::util::{assert_one_line_error, loopbench, LONG};
use serde_json::Value;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// One epoch, tiny reps: a fast session.
const ONE_EPOCH: &[&str] = &[
    "--bytes",
    "64k",
    "--rounds",
    "2",
    "--warmup",
    "1",
    "--iters",
    "256",
    "--min-epochs",
    "1",
    "--max-epochs",
    "1",
];

/// A user loop that returns its iteration count.
const COUNT_WAT: &str = r#"(module
  (func (export "run") (param $n i32) (result i32) (local $i i32)
    (loop $l
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br_if $l (i32.lt_u (local.get $i) (local.get $n))))
    (local.get $i)))"#;

/// Traps on its first call.
const TRAP_WAT: &str = r#"(module
  (func (export "run") (param i32) (result i32) unreachable))"#;

fn bin() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_loopbench"));
    // Sessions these tests run are recorded beside them, never in the
    // user's history, whoever runs the tests.
    cmd.env(
        "LOOPBENCH_DB",
        concat!(env!("CARGO_TARGET_TMPDIR"), "/reliability-history.sqlite"),
    );
    cmd
}

fn wait_for(path: &Path, child: &mut Child) {
    let until = Instant::now() + Duration::from_secs(120);
    while !path.exists() {
        if let Ok(Some(status)) = child.try_wait() {
            panic!(
                "the session ended ({status}) before {} appeared",
                path.display()
            );
        }
        assert!(Instant::now() < until, "{} never appeared", path.display());
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Issue 12.2: a second session writing the same file is refused, naming
/// the first one's pid; the first one's results are not lost.
#[test]
fn a_second_writer_of_one_file_is_refused_with_the_holders_pid() {
    let dir = tempfile::tempdir().unwrap();
    let mut first = bin()
        .current_dir(dir.path())
        .arg("run")
        .args(LONG)
        .args(["--json", "out.json"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_for(&dir.path().join(".out.json.loopbench-lock"), &mut first);
    for args in [
        &["--json", "out.json"][..],
        &["--export", "json=./out.json"][..],
    ] {
        let second = bin()
            .current_dir(dir.path())
            .args(["run", "--engines", "wasmi", "--shapes", "add_chain"])
            .args(ONE_EPOCH)
            .args(args)
            .output()
            .unwrap();
        assert_eq!(second.status.code(), Some(2), "{}", stderr(&second));
        let err = assert_one_line_error(&second.stderr);
        assert!(
            err.contains("out.json is being written by another loopbench session")
                && err.contains(&format!("(pid {})", first.id())),
            "{err}"
        );
    }
    let _ = first.kill();
    let _ = first.wait();
}

/// Issue 12.3: temporaries a killed session left are removed by the next
/// run (those of live processes are not), and the output honours the umask.
#[test]
fn orphan_temporaries_are_cleaned_and_the_umask_is_honoured() {
    let dir = tempfile::tempdir().unwrap();
    let mut gone = Command::new("true").spawn().unwrap();
    let dead = gone.id();
    gone.wait().unwrap();
    let orphan = dir
        .path()
        .join(format!(".out.json.loopbench-tmp-{dead}-a1b2c3"));
    let alive = dir.path().join(format!(
        ".out.json.loopbench-tmp-{}-d4e5f6",
        std::process::id()
    ));
    let other = dir
        .path()
        .join(format!(".other.json.loopbench-tmp-{dead}-g7h8i9"));
    for f in [&orphan, &alive, &other] {
        std::fs::write(f, "partial").unwrap();
    }
    let cmd = format!(
        "umask 027; exec {} run --no-history --engines wasmi --shapes add_chain {} --json out.json",
        env!("CARGO_BIN_EXE_loopbench"),
        ONE_EPOCH.join(" ")
    );
    let out = Command::new("sh")
        .current_dir(dir.path())
        .args(["-c", &cmd])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!orphan.exists(), "the dead session's temporary is left");
    assert!(alive.exists(), "a live process's temporary was removed");
    assert!(other.exists(), "another target's temporary was removed");
    use std::os::unix::fs::PermissionsExt;
    for output in ["out.json", "out.reps.json.gz"] {
        let mode = std::fs::metadata(dir.path().join(output))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o640, "{output}: mode {mode:o}");
    }
    // Nothing but the output, its reps and the planted files is left (no
    // lock, no temp).
    let mut names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names.len(), 4, "{names:?}");
}

/// Issue 12.4: SIGINT (sent to the process group, as a terminal's Ctrl-C
/// is) prints the table of what completed, says so, exits 130; the JSON
/// says `complete: false`, and no worker is reported as crashed.
#[test]
fn an_interrupt_prints_what_completed_and_exits_130() {
    use std::os::unix::process::CommandExt;
    let dir = tempfile::tempdir().unwrap();
    let mut child = bin()
        .current_dir(dir.path())
        .arg("run")
        .args(LONG)
        .args(["--export", "json=partial.json"])
        .process_group(0)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The first epoch is done once the file is there.
    wait_for(&dir.path().join("partial.json"), &mut child);
    let pgid = child.id() as libc::pid_t;
    // SAFETY: signals this test's own process group.
    assert_eq!(unsafe { libc::kill(-pgid, libc::SIGINT) }, 0);
    let out = child.wait_with_output().unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(130), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    let last = err.lines().last().unwrap_or_default();
    assert!(
        last.starts_with("error: interrupted: the results cover the ")
            && last.ends_with("of 2 shapes that ran before the interrupt"),
        "{err}"
    );
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(table.contains("session incomplete"), "{table}");
    assert!(table.contains("add_chain"), "{table}");
    let json: Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("partial.json")).unwrap()).unwrap();
    assert_eq!(json["complete"], false);
    assert_eq!(json["errors"], serde_json::json!([]), "{err}");
    let results = json["results"].as_array().unwrap();
    assert!(!results.is_empty());
    for r in results {
        assert_eq!(r["stopped"]["reason"], "interrupted", "{r}");
        for a in r["arms"].as_array().unwrap() {
            assert!(a["error"].is_null(), "{a}");
        }
    }
}

/// Issue 12.6: duplicate names and a shape file named like a built-in.
#[test]
fn duplicate_and_clashing_shape_names_are_refused() {
    let (mut cmd, _dir) = loopbench();
    let out = cmd
        .args(["run", "--shapes", "add_chain,br_chain,add_chain"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = assert_one_line_error(&out.stderr);
    assert_eq!(err, "error: shape `add_chain` is given twice");

    for shapes in [&["--shapes", "br_chain"][..], &[][..]] {
        let (mut cmd, dir) = loopbench();
        std::fs::write(dir.path().join("add_chain.wat"), COUNT_WAT).unwrap();
        let out = cmd
            .arg("run")
            .args(shapes)
            .args(["--shape-file", "add_chain.wat"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2));
        let err = assert_one_line_error(&out.stderr);
        assert_eq!(
            err,
            "error: shape file add_chain.wat: `add_chain` is the name of a built-in shape; rename the file"
        );
    }

    let (mut cmd, dir) = loopbench();
    std::fs::create_dir(dir.path().join("a")).unwrap();
    std::fs::create_dir(dir.path().join("b")).unwrap();
    std::fs::write(dir.path().join("a/mine.wat"), COUNT_WAT).unwrap();
    std::fs::write(dir.path().join("b/mine.wat"), COUNT_WAT).unwrap();
    let out = cmd
        .args([
            "run",
            "--shape-file",
            "a/mine.wat",
            "--shape-file",
            "b/mine.wat",
        ])
        .output()
        .unwrap();
    assert_eq!(
        assert_one_line_error(&out.stderr),
        "error: shape `mine` is given twice"
    );
}

/// Issue 12.8: a shape file that fails after a good shape is recorded for
/// that shape; the shapes before and after it run; the exit code says so.
#[test]
fn a_failing_shape_file_is_recorded_and_the_session_goes_on() {
    let (mut cmd, dir) = loopbench();
    std::fs::write(dir.path().join("broken.wat"), TRAP_WAT).unwrap();
    std::fs::write(dir.path().join("count.wat"), COUNT_WAT).unwrap();
    let out = cmd
        .args([
            "run",
            "--engines",
            "wasmi,tinywasm",
            "--shapes",
            "add_chain",
        ])
        .args(["--shape-file", "broken.wat", "--shape-file", "count.wat"])
        .args(ONE_EPOCH)
        .args(["--export", "json=s.json"])
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    let json: Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("s.json")).unwrap()).unwrap();
    assert_eq!(json["complete"], true);
    let errors = json["errors"].as_array().unwrap();
    assert_eq!(errors.len(), 1, "{errors:?}");
    let error = errors[0].as_str().unwrap();
    assert!(
        error.starts_with("shape broken, arm counting run (wasmi): trap: "),
        "{error}"
    );
    assert!(err.contains(&format!("error: {error}")), "{err}");
    let shapes: Vec<&str> = json["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["shape"].as_str().unwrap())
        .collect();
    assert_eq!(shapes, ["add_chain", "broken", "count"]);
    for r in json["results"].as_array().unwrap() {
        for a in r["arms"].as_array().unwrap() {
            if r["shape"] == "broken" {
                assert_eq!(a["verified_reps"], 0);
                assert_eq!(a["error"].as_str().unwrap(), format!("not run: {error}"));
            } else {
                assert!(a["verified_reps"].as_u64().unwrap() > 0, "{a}");
            }
        }
    }
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(
        table
            .lines()
            .any(|l| l.starts_with("broken") && l.contains("failed: not run: shape broken")),
        "{table}"
    );
}

/// Issue 12.9: a baseline that is not among the engines is refused (and
/// `--help` says so), never added silently.
#[test]
fn a_baseline_outside_the_engines_is_refused() {
    let (mut cmd, _dir) = loopbench();
    let out = cmd
        .args(["run", "--engines", "wasmi,tinywasm", "--baseline", "wasm3"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        assert_one_line_error(&out.stderr),
        "error: --baseline wasm3 is not one of the engines (wasmi,tinywasm); add it to --engines"
    );
    let (mut cmd, _dir) = loopbench();
    let help = cmd.args(["run", "--help"]).output().unwrap();
    let help = String::from_utf8_lossy(&help.stdout);
    assert!(help.contains("it must be one of"), "{help}");
}

/// Issue 12.10: a closed stderr (its reader exited) is no panic: usage
/// errors still exit 2, a session still exits 0 with its table on stdout.
#[test]
fn a_closed_stderr_does_not_panic() {
    let runs: [(&[&str], i32); 3] = [
        (&["run", "--shapes", "nosuch"], 2),
        (&["run", "--bytes", "3k"], 2),
        (&["run", "--engines", "wasmi", "--shapes", "add_chain"], 0),
    ];
    for (args, code) in runs {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let dir = tempfile::tempdir().unwrap();
        let mut cmd = bin();
        cmd.current_dir(dir.path()).args(args);
        if code == 0 {
            cmd.args(ONE_EPOCH).args(["--json", "s.json"]);
        }
        let out = cmd.stderr(writer).stdout(Stdio::piped()).output().unwrap();
        assert_eq!(out.status.code(), Some(code), "{args:?}");
        if code == 0 {
            assert!(dir.path().join("s.json").exists());
            assert!(String::from_utf8_lossy(&out.stdout).contains("add_chain"));
        }
    }
}

/// Issue 12.12: each message is one clear line.
#[test]
fn messages_are_one_clear_line() {
    let cases: &[(&[&str], &str)] = &[
        (
            &["run", "--shapes", "add_chain", "--bytes", "128g"],
            "error: shape add_chain: --bytes 128 GiB gives 8589934592 iterations, more than 2^31 - 1; use a smaller --bytes, or set --iters",
        ),
        (
            &["show", "add_chain", "--bytes", "128g"],
            "error: shape add_chain: --bytes 128 GiB gives 8589934592 iterations, more than 2^31 - 1; use a smaller --bytes, or set --iters",
        ),
        (
            &["run", "--shapes", "add_chain", "--iters", "0"],
            "error: shape add_chain: --iters must be a positive multiple of 1 below 2^31, got 0",
        ),
        (
            &["run", "--shapes", "load_stream", "--bytes", "4g"],
            "error: shape load_stream needs 4 GiB + 64 KiB of linear memory for --bytes 4 GiB; wasm32 allows at most 4 GiB",
        ),
        (
            &["run", "--shapes", "add_chain", "--json", "nodir/out.json"],
            "error: cannot write nodir/out.json (in nodir): No such file or directory (os error 2)",
        ),
        (
            // A usage error alone: no counter notice before it.
            &["run", "--json", "a.json", "--export", "json=a.json"],
            "error: a.json is named for two formats",
        ),
    ];
    for (args, expected) in cases {
        let (mut cmd, _dir) = loopbench();
        let out = cmd.args(*args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert_one_line_error(&out.stderr);
        assert_eq!(stderr(&out).trim_end(), *expected, "{args:?}");
    }

    let files: &[(&str, &str, &str)] = &[
        (
            "bad.wat",
            "(module (func (export \"run\") (param i32) (result i32)\n  i32.const 1\n  i32.bogus))",
            "error: bad.wat:3:3: malformed WAT: unknown operator or unexpected token: `i32.bogus))`",
        ),
        (
            "imports.wat",
            r#"(module (import "env" "f" (func $f)) (func (export "run") (param i32) (result i32) i32.const 1))"#,
            "error: imports.wat: imports are not supported in a shape (it must be self-contained); it imports env.f (function)",
        ),
    ];
    for (name, text, expected) in files {
        let (mut cmd, dir) = loopbench();
        std::fs::write(dir.path().join(name), text).unwrap();
        let out = cmd.args(["run", "--shape-file", name]).output().unwrap();
        assert_eq!(out.status.code(), Some(2));
        assert_eq!(stderr(&out).trim_end(), *expected);
    }
}

/// Issue 12.12: a start function's trap names the shape; a trap is said
/// once (`trap: unreachable`, not `trap: trap: unreachable`) in every engine.
#[test]
fn traps_name_the_shape_and_say_trap_once() {
    let (mut cmd, dir) = loopbench();
    std::fs::write(
        dir.path().join("start.wat"),
        r#"(module (func $s unreachable) (start $s)
  (func (export "run") (param i32) (result i32) i32.const 1))"#,
    )
    .unwrap();
    let out = cmd
        .args(["run", "--engines", "wasmi", "--shape-file", "start.wat"])
        .args(ONE_EPOCH)
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.lines().any(|l| l
            == "error: shape start, arm counting run (wasmi): instantiation failed: the start function trapped: wasm `unreachable` instruction executed"),
        "{err}"
    );

    // Traps only at the session's count, not the counting run's.
    let (mut cmd, dir) = loopbench();
    std::fs::write(
        dir.path().join("late.wat"),
        r#"(module
  (func (export "run") (param $n i32) (result i32) (local $i i32)
    (if (i32.gt_u (local.get $n) (i32.const 1000)) (then unreachable))
    (loop $l (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br_if $l (i32.lt_u (local.get $i) (local.get $n))))
    (local.get $n)))"#,
    )
    .unwrap();
    let out = cmd
        .args(["run", "--engines", "wasmi,tinywasm,wasm3,wasmtime"])
        .args([
            "--shape-file",
            "late.wat",
            "--bytes",
            "64k",
            "--iters",
            "4096",
        ])
        .args(["--rounds", "2", "--min-epochs", "1", "--max-epochs", "1"])
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    let lines: Vec<&str> = err.lines().filter(|l| l.starts_with("error: ")).collect();
    assert_eq!(lines.len(), 5, "{err}");
    for l in lines {
        assert!(l.starts_with("error: shape late, arm "), "{l}");
        let (_, what) = l.split_once(": trap: ").unwrap();
        assert!(!what.contains("trap:") && !what.starts_with('['), "{l}");
        assert!(what.contains("unreachable"), "{l}");
    }
}

/// Issue 12.12: a valgrind that fails silently is said to, in one line.
#[test]
fn a_silent_broken_valgrind_is_one_clear_line() {
    let (mut cmd, dir) = loopbench();
    let bin_dir = dir.path().join("fakebin");
    std::fs::create_dir(&bin_dir).unwrap();
    let fake = bin_dir.join("valgrind");
    std::fs::write(&fake, "#!/bin/sh\nexit 1\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = cmd
        .env("PATH", path)
        .args(["run", "--engines", "wasmi", "--shapes", "add_chain"])
        .args(ONE_EPOCH)
        .args(["--counters", "callgrind"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = assert_one_line_error(&out.stderr);
    assert_eq!(
        err,
        "error: `valgrind --version` failed (exit status: 1) and printed nothing; reinstall valgrind"
    );
}

/// Arbitrary input through the real binary: each case is built to be
/// refused (a missing shape or output directory follows the fuzzed value),
/// so whatever the fuzzed part does, the run must exit 2 with exactly one
/// error line and no panic.
mod arbitrary {
    use super::*;
    use proptest::prelude::*;

    fn refused(args: &[String], dir: &Path) -> Result<(), TestCaseError> {
        let out = bin().current_dir(dir).args(args).output().unwrap();
        let err = stderr(&out);
        prop_assert_eq!(out.status.code(), Some(2), "{:?}: {}", args, err);
        prop_assert!(!err.contains("panicked"), "{}", err);
        // clap adds its `For more information` tip; the error is one line.
        prop_assert_eq!(
            err.lines().filter(|l| l.starts_with("error")).count(),
            1,
            "{:?}: {}",
            args,
            err
        );
        prop_assert!(err.starts_with("error: "), "{}", err);
        Ok(())
    }

    fn typed(alphabet: &'static str, max: usize) -> impl Strategy<Value = String> {
        let chars: Vec<char> = alphabet.chars().collect();
        prop::collection::vec(prop::sample::select(chars), 1..max)
            .prop_map(|v| v.into_iter().collect())
    }

    proptest! {
        #![proptest_config(ProptestConfig {
            cases: 6,
            failure_persistence: None,
            ..ProptestConfig::default()
        })]

        #[test]
        fn engines(spec in typed("wasmi tinywasm3@:=+,.-/_0123456789fuel", 30)) {
            let dir = tempfile::tempdir().unwrap();
            let args = ["run", "--engines", &spec, "--shapes", "nosuch"].map(String::from);
            refused(&args, dir.path())?;
        }

        #[test]
        fn sizes(bytes in typed("0123456789kmgtKMGTiB .-+e", 16), iters in typed("0123456789-+e ", 12)) {
            let dir = tempfile::tempdir().unwrap();
            for (opt, v) in [("--bytes", &bytes), ("--iters", &iters)] {
                let args = ["run", opt, v, "--shapes", "nosuch"].map(String::from);
                refused(&args, dir.path())?;
            }
        }

        #[test]
        fn shape_files(bytes in prop::collection::vec(any::<u8>(), 0..200), wasm in any::<bool>()) {
            let dir = tempfile::tempdir().unwrap();
            let body = if wasm { [b"\0asm\x01\0\0\0".as_slice(), &bytes].concat() } else { bytes };
            std::fs::write(dir.path().join("f.wasm"), body).unwrap();
            let args = ["run", "--engines", "wasmi", "--shape-file", "f.wasm", "--json", "nodir/x.json"]
                .map(String::from);
            refused(&args, dir.path())?;
        }
    }
}

/// Issue 12.5: a user loop that ends on some calls and not on a later one
/// (here: from its third call on) is stopped at the per-rep deadline of its
/// worker; the message names shape, arm and rep, and the session ends.
#[test]
fn a_loop_that_stops_ending_is_killed_at_its_deadline() {
    let (mut cmd, dir) = loopbench();
    std::fs::write(
        dir.path().join("later.wat"),
        r#"(module
  (global $calls (mut i32) (i32.const 0))
  (func (export "run") (param $n i32) (result i32) (local $i i32)
    (global.set $calls (i32.add (global.get $calls) (i32.const 1)))
    (loop $l
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br_if $l (i32.or
        (i32.gt_u (global.get $calls) (i32.const 2))
        (i32.lt_u (local.get $i) (local.get $n)))))
    (local.get $i)))"#,
    )
    .unwrap();
    let out = cmd
        .env("LOOPBENCH_WORKER_DEADLINE_FLOOR_MS", "1000")
        .args([
            "run",
            "--engines",
            "wasmi,tinywasm",
            "--shape-file",
            "later.wat",
        ])
        .args(ONE_EPOCH)
        .args(["--json", "s.json"])
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    let json: Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("s.json")).unwrap()).unwrap();
    let errors = json["errors"].as_array().unwrap();
    assert_eq!(errors.len(), 3, "{errors:?}");
    for (e, arm) in errors.iter().zip(["wasmi", "tinywasm", "wasmi#null"]) {
        let e = e.as_str().unwrap();
        // Warm-up is rep 0, so the third call is rep 2.
        assert!(
            e.starts_with(&format!(
                "shape later, arm {arm}: the worker did not answer rep 2 within 1.0 s"
            )),
            "{e}"
        );
    }
    for a in json["results"][0]["arms"].as_array().unwrap() {
        assert_eq!(a["verified_reps"], 1, "{a}");
    }
}
