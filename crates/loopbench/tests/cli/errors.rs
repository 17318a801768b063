use super::util::{assert_one_line_error, loopbench, SMALL};

fn fails_with(args: &[&str], needle: &str) {
    let (mut cmd, _dir) = loopbench();
    let out = cmd.args(args).output().unwrap();
    assert!(!out.status.success(), "{args:?} succeeded");
    let err = assert_one_line_error(&out.stderr);
    assert!(
        err.contains(needle),
        "{args:?}: expected `{needle}` in: {err}"
    );
}

#[test]
fn unknown_shape_lists_valid_ones() {
    fails_with(
        &["run", "--shapes", "nope"],
        "unknown shape `nope` (valid: add_chain",
    );
    fails_with(&["show", "nope"], "unknown shape `nope`");
}

#[test]
fn none_and_auto_cannot_be_combined_with_counters() {
    for spec in ["none,callgrind", "tsc,none", "auto,perf"] {
        let name = if spec.contains("none") {
            "none"
        } else {
            "auto"
        };
        fails_with(
            &["run", "--shapes", "add_chain", "--counters", spec],
            &format!("`{name}` is a choice of its own and cannot be combined with other counters"),
        );
    }
}

#[test]
fn unknown_engine_and_option() {
    fails_with(
        &["run", "--engines", "v8"],
        "unknown engine `v8` (known: wasmi",
    );
    fails_with(
        &["run", "--engines", "wasmi:turbo"],
        "unknown option `turbo` for wasmi (valid: fuel",
    );
    fails_with(&["run", "--engines", "wasmi,wasmi"], "listed twice");
}

#[test]
fn engine_not_compiled_in_names_the_feature() {
    if !loopbench::arm::EngineKind::Wasmer.compiled_in() {
        fails_with(
            &["run", "--engines", "wasmer"],
            "rebuild with --features wasmer",
        );
    }
}

#[test]
fn bad_bytes() {
    fails_with(&["run", "--bytes", "lots"], "bad size `lots`");
    fails_with(&["run", "--bytes", "3m"], "power of two");
}

#[test]
fn working_set_too_large_for_wasm32() {
    fails_with(
        &["run", "--shapes", "lut", "--bytes", "4g", "--rounds", "1"],
        "wasm32 allows at most 4 GiB",
    );
}

#[test]
fn malformed_wat_and_missing_exports() {
    let (mut cmd, dir) = loopbench();
    std::fs::write(dir.path().join("bad.wat"), "(module (func $f (i32.add))").unwrap();
    std::fs::write(
        dir.path().join("noexport.wat"),
        "(module (func (export \"go\") (param i32)))",
    )
    .unwrap();
    std::fs::write(dir.path().join("garbage.wasm"), b"\0asm\x01\0\0\0\x99").unwrap();
    let out = cmd
        .args(["run", "--shape-file", "bad.wat"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(assert_one_line_error(&out.stderr).contains("malformed WAT"));
    let (mut cmd, _) = loopbench();
    let out = cmd
        .current_dir(dir.path())
        .args(["run", "--shape-file", "noexport.wat"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(assert_one_line_error(&out.stderr).contains("missing export `run`"));
    let (mut cmd, _) = loopbench();
    let out = cmd
        .current_dir(dir.path())
        .args(["run", "--shape-file", "garbage.wasm"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(assert_one_line_error(&out.stderr).contains("invalid wasm"));
}

#[test]
fn a_trap_inside_a_shape_is_reported() {
    let (mut cmd, dir) = loopbench();
    std::fs::write(
        dir.path().join("trap.wat"),
        "(module (func (export \"run\") (param i32) (result i32) local.get 0 i32.const 0 i32.div_u))",
    )
    .unwrap();
    let mut args = vec!["run", "--engines", "wasmi", "--shape-file", "trap.wat"];
    args.extend_from_slice(SMALL);
    let out = cmd.args(&args).output().unwrap();
    assert!(!out.status.success());
    let err = assert_one_line_error(&out.stderr);
    // The untimed counting run meets the trap first, before any arm runs.
    assert!(
        err.contains("shape trap, arm counting run (wasmi): trap: integer divide by zero"),
        "{err}"
    );
}

#[test]
fn a_failed_user_verify_names_shape_arm_and_rep() {
    let (mut cmd, dir) = loopbench();
    std::fs::write(
        dir.path().join("wrong.wat"),
        "(module (func (export \"run\") (param $n i32) (loop $l (local.set $n (i32.sub (local.get $n) (i32.const 1))) (br_if $l (i32.gt_s (local.get $n) (i32.const 0))))) (func (export \"verify\") (result i32) i32.const 0))",
    )
    .unwrap();
    let mut args = vec!["run", "--engines", "wasmi", "--shape-file", "wrong.wat"];
    args.extend_from_slice(SMALL);
    let out = cmd.args(&args).output().unwrap();
    assert!(!out.status.success());
    let err = assert_one_line_error(&out.stderr);
    assert!(
        err.contains(
            "verify failed: shape wrong, arm wasmi, rep 0: verify(): expected nonzero, got 0"
        ),
        "{err}"
    );
}

#[test]
fn a_module_that_never_ends_is_stopped_by_the_counting_run() {
    let (mut cmd, dir) = loopbench();
    std::fs::write(
        dir.path().join("forever.wat"),
        "(module (func (export \"run\") (param i32) (result i32) (loop $l (br $l)) i32.const 1))",
    )
    .unwrap();
    let out = cmd
        .args([
            "run",
            "--engines",
            "wasmi",
            "--shape-file",
            "forever.wat",
            "--rounds",
            "1",
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = assert_one_line_error(&out.stderr);
    assert!(
        err.contains("did not finish within") && err.contains("does the loop end?"),
        "{err}"
    );
}

/// Issue 53.14/15/19: checked before anything is measured, each in its
/// own words: counts of rounds past what the arithmetic holds (they
/// wrapped to no rounds at all), an empty output name (the session used to
/// run whole and then fail to write), an export that is no function.
#[test]
fn impossible_requests_are_refused_before_measuring() {
    let huge = "18446744073709551615";
    for (args, needle) in [
        (
            &[
                "run",
                "--engines",
                "wasmi",
                "--shapes",
                "add_chain",
                "--rounds",
                huge,
            ][..],
            "at most 1000000000",
        ),
        (
            &[
                "run",
                "--engines",
                "wasmi",
                "--shapes",
                "add_chain",
                "--warmup",
                huge,
            ][..],
            "at most 1000000000",
        ),
        (
            &["app", "run", "lua", "--rounds", huge][..],
            "at most 1000000000",
        ),
        (&["calibrate", "--warmup", huge][..], "at most 1000000000"),
        (
            &[
                "run",
                "--engines",
                "wasmi",
                "--shapes",
                "add_chain",
                "--json",
                "",
            ][..],
            "--json \"\": the file name is empty",
        ),
        (
            &[
                "run",
                "--engines",
                "wasmi",
                "--shapes",
                "add_chain",
                "--export",
                "json=",
            ][..],
            "--export `json=`: the file name is empty",
        ),
    ] {
        let (mut cmd, dir) = loopbench();
        let out = cmd.args(args).output().unwrap();
        let err = assert_one_line_error(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
        // Refused before measuring: nothing was recorded or written.
        assert!(!dir.path().join("history.sqlite").exists(), "{args:?}");
    }
    let (mut cmd, dir) = loopbench();
    std::fs::write(
        dir.path().join("m.wat"),
        r#"(module (memory (export "memory") 1) (func (export "run") (param i32) (result i32) (local.get 0)))"#,
    )
    .unwrap();
    let out = cmd
        .args(["count", "m.wat", "--invoke", "memory", "1"])
        .output()
        .unwrap();
    let err = assert_one_line_error(&out.stderr);
    assert!(
        err.contains("the module's export `memory` is a memory, not a function"),
        "{err}"
    );
}

/// Issue 53.16: a name that reaches an error or a listing shows its
/// control characters as escapes; none reaches the terminal raw.
#[test]
fn control_characters_in_names_never_reach_the_terminal() {
    let hostile = "x\u{1b}]0;pwned\u{7}\u{1b}[2J";
    for args in [
        &["run", "--shapes", hostile][..],
        &["run", "--engines", hostile][..],
        &["show", hostile][..],
        &["report", hostile][..],
        &["history", "--shape", hostile][..],
    ] {
        let (mut cmd, _dir) = loopbench();
        let out = cmd.args(args).output().unwrap();
        for stream in [&out.stdout, &out.stderr] {
            let text = String::from_utf8_lossy(stream);
            assert!(!text.contains('\u{1b}'), "{args:?}: {text:?}");
            assert!(!text.contains('\u{7}'), "{args:?}: {text:?}");
        }
        let all = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(all.contains(r"x\u{1b}]0;pwned\u{7}"), "{args:?}: {all}");
    }
}

/// Issue 53.12: a shape file whose `run` ignores its count does no work
/// that a time per iteration could price: it fails in one line naming that,
/// not as 0.000 ns/iter. One without `verify` says its reps are checked
/// only for running to their end.
#[test]
fn a_loop_that_ignores_its_count_is_refused_and_a_missing_verify_is_said() {
    let (mut cmd, dir) = loopbench();
    std::fs::write(
        dir.path().join("flat.wat"),
        r#"(module (func (export "run") (param i32) (result i32) (i32.const 7)))"#,
    )
    .unwrap();
    let out = cmd
        .args(["run", "--engines", "wasmi", "--shape-file", "flat.wat"])
        .args(["--budget", "0.3", "--layout-builds", "1", "--no-history"])
        .args(["--json", "s.json"])
        .output()
        .unwrap();
    let err = assert_one_line_error(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains("shape flat: run(32) executes exactly the instructions of run(16)"),
        "{err}"
    );
    let (mut cmd, dir) = loopbench();
    std::fs::write(
        dir.path().join("count.wat"),
        r#"(module (func (export "run") (param $n i32) (result i32) (local $i i32)
            (loop $l (local.set $i (i32.add (local.get $i) (i32.const 1)))
              (br_if $l (i32.lt_u (local.get $i) (local.get $n))))
            (local.get $i)))"#,
    )
    .unwrap();
    let out = cmd
        .args(["run", "--engines", "wasmi", "--shape-file", "count.wat"])
        .args(["--budget", "0.3", "--layout-builds", "1", "--no-history"])
        .args(["--json", "s.json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("s.json")).unwrap()).unwrap();
    let about = json["results"][0]["prices"].as_str().unwrap_or_default();
    assert!(
        about.contains("no verify(): a rep is checked only for running to its end"),
        "{}",
        json["results"][0]
    );
}

/// Issue 53.17: a FIFO as a shape file or `count` input is read as its
/// writer writes it, and one that nobody writes to is one line at once
/// (opening it used to wait for a writer for ever).
#[test]
fn a_fifo_nobody_writes_to_is_one_line_and_one_with_a_writer_is_read() {
    let (_cmd, dir) = loopbench();
    let fifo = dir.path().join("loop.wat");
    let name = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: mkfifo on a path in this test's own directory.
    assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o600) }, 0);
    for args in [
        &[
            "run",
            "--engines",
            "wasmi",
            "--shape-file",
            "loop.wat",
            "--no-history",
        ][..],
        &["count", "loop.wat", "--invoke", "run", "5"][..],
    ] {
        let (mut cmd, _d) = loopbench();
        let out = cmd.current_dir(dir.path()).args(args).output().unwrap();
        let err = assert_one_line_error(&out.stderr);
        assert!(!out.status.success(), "{args:?}");
        assert!(err.contains("a FIFO nobody writes to"), "{args:?}: {err}");
    }
    let writer = {
        let fifo = fifo.clone();
        std::thread::spawn(move || {
            std::fs::write(
                fifo,
                r#"(module (func (export "run") (param $n i32) (result i32) (local $i i32)
                    (loop $l (local.set $i (i32.add (local.get $i) (i32.const 1)))
                      (br_if $l (i32.lt_u (local.get $i) (local.get $n))))
                    (local.get $i)))"#,
            )
        })
    };
    // The writer is waiting in its open before the reader comes (the
    // message above tells a user to start it first).
    std::thread::sleep(std::time::Duration::from_millis(300));
    let (mut cmd, _d) = loopbench();
    let out = cmd
        .current_dir(dir.path())
        .args(["count", "loop.wat", "--invoke", "run", "5"])
        .output()
        .unwrap();
    writer.join().unwrap().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Issue 53.18: a saved session edited by hand is read back only if it
/// holds values a measurement can have; an option that would print
/// hundreds of digits is refused; a replay of reps with no spread shows no
/// `NaNx`.
#[test]
fn impossible_values_in_saved_files_and_options_are_refused() {
    let (mut cmd, dir) = loopbench();
    cmd.args([
        "run",
        "--engines",
        "mock:cost=2,mock:cost=3",
        "--shapes",
        "add_chain",
    ])
    .args([
        "--min-epochs",
        "6",
        "--max-epochs",
        "6",
        "--rounds",
        "3",
        "--no-history",
    ])
    // Every rep inline: the test edits their times.
    .args(["--json-reps", "--json", "s.json", "--csv", "s.csv"])
    .assert()
    .success();
    let saved: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("s.json")).unwrap()).unwrap();
    let edited = |name: &str, edit: &dyn Fn(&mut serde_json::Value)| {
        let mut doc = saved.clone();
        edit(&mut doc["results"][0]);
        std::fs::write(dir.path().join(name), doc.to_string()).unwrap();
    };
    edited("huge.json", &|r| {
        r["arms"][0]["ns_per_iter"]["median"] = 1e308.into()
    });
    edited("negative.json", &|r| {
        r["arms"][1]["samples_ns_per_iter"][0] = (-3.0).into()
    });
    edited("inverted.json", &|r| {
        r["comparisons"][0]["ci_pct"] = serde_json::json!([50.0, -50.0])
    });
    edited("below.json", &|r| {
        r["null_control"]["median_pct"] = (-150.0).into()
    });
    for (file, says) in [
        (
            "huge.json",
            "ns_per_iter.median is 1e308, which no clock gives",
        ),
        (
            "negative.json",
            "samples_ns_per_iter is -3, which no clock gives",
        ),
        (
            "inverted.json",
            "interval [50%, -50%] has its low end above its high end",
        ),
        (
            "below.json",
            "null_control: change -150% [0%, 0%] is not a change of a time",
        ),
    ] {
        for command in [&["report", file][..], &["compare", "s.json", file]] {
            let (mut cmd, _d) = loopbench();
            let out = cmd.current_dir(dir.path()).args(command).output().unwrap();
            assert_eq!(out.status.code(), Some(2), "{command:?}");
            let err = assert_one_line_error(&out.stderr);
            assert!(
                err.contains(&format!("{file}: impossible value: shape add_chain")),
                "{err}"
            );
            assert!(err.contains(says), "{err}");
            assert!(out.stdout.is_empty(), "{command:?}");
        }
    }
    let (mut cmd, _d) = loopbench();
    let out = cmd
        .current_dir(dir.path())
        .args(["compare", "s.json", "s.json", "--precision", "1e-300"])
        .output()
        .unwrap();
    let err = assert_one_line_error(&out.stderr);
    assert_eq!(
        err,
        "error: --precision 1e-300: must be a percentage from 0.000001 to 1000"
    );
    // The mock's reps have no spread: every width ratio is 0/0.
    let (mut cmd, _d) = loopbench();
    let out = cmd
        .current_dir(dir.path())
        .args(["replay", "s.csv"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains("width vs median") && !text.contains("NaN"),
        "{text}"
    );
}
