//! Your own workload: WASI command modules written for these tests (WAT),
//! run by `loopbench app run FILE.wasm|DIR` on the WASI host, every rep
//! verified against the expected output files or the first run, and every
//! way a module can go wrong one line.

use assert_cmd::Command;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// A command that opens `input.txt` by relative path, reads it between
/// `bench.start` and `bench.end`, then prints it. `before` and `after` are
/// WAT put before the marked region and at the end of `_start`; `imports`
/// adds imports.
pub(crate) fn command(imports: &str, before: &str, after: &str) -> String {
    command_with(imports, before, "", after)
}

/// [`command`] with `inside` put right after `bench.start`.
fn command_with(imports: &str, before: &str, inside: &str, after: &str) -> String {
    format!(
        r#"(module
  (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "path_open" (func $path_open (param i32 i32 i32 i32 i32 i64 i64 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_read" (func $fd_read (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "proc_exit" (func $proc_exit (param i32)))
  (import "bench" "start" (func $start))
  (import "bench" "end" (func $end))
  {imports}
  (memory (export "memory") 1)
  (data (i32.const 100) "input.txt")
  (func (export "_start") (local $i i32)
    (if (call $path_open (i32.const 3) (i32.const 0) (i32.const 100) (i32.const 9)
          (i32.const 0) (i64.const 2) (i64.const 0) (i32.const 0) (i32.const 16))
      (then (call $proc_exit (i32.const 2))))
    {before}
    (call $start)
    {inside}
    (i32.store (i32.const 0) (i32.const 1024))
    (i32.store (i32.const 4) (i32.const 256))
    (drop (call $fd_read (i32.load (i32.const 16)) (i32.const 0) (i32.const 1) (i32.const 20)))
    (call $end)
    (i32.store (i32.const 4) (i32.load (i32.const 20)))
    (drop (call $fd_write (i32.const 1) (i32.const 0) (i32.const 1) (i32.const 24)))
    {after}))"#
    )
}

pub(crate) const INPUT: &str = "a line of input\n";

/// `dir/name.wasm` from `wat`, with `input.txt` beside it; the module's path.
pub(crate) fn module(dir: &Path, name: &str, wat: &str) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join("input.txt"), INPUT).unwrap();
    let path = dir.join(format!("{name}.wasm"));
    std::fs::write(&path, wat::parse_str(wat).unwrap()).unwrap();
    path
}

/// `loopbench app run ARGS --json -` on wasmi, two rounds: (success,
/// the session's JSON if any, stderr).
fn app_run(args: &[&str]) -> (bool, Option<Value>, String) {
    let out = Command::cargo_bin("loopbench")
        .unwrap()
        .args(["app", "run", "--no-history"])
        .args(args)
        .args(["--rounds", "2", "--json", "-"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(!stderr.contains("panicked"), "{stderr}");
    (
        out.status.success(),
        serde_json::from_slice(&out.stdout).ok(),
        stderr,
    )
}

fn results(json: &Value) -> &Vec<Value> {
    json["results"].as_array().unwrap()
}

fn arm<'a>(shape: &'a Value, label: &str) -> &'a Value {
    shape["arms"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["arm"] == label)
        .unwrap_or_else(|| panic!("no arm {label} in {shape}"))
}

#[test]
fn a_command_reads_its_input_and_every_rep_is_verified_against_the_expected_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = module(dir.path(), "reader", &command("", "", ""));
    std::fs::write(dir.path().join("reader.stdout.expected"), INPUT).unwrap();
    // The default engines: every one runs it on the one WASI host.
    let (ok, json, stderr) = app_run(&[path.to_str().unwrap()]);
    assert!(ok, "{stderr}");
    let json = json.unwrap();
    let rows = results(&json);
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0]["shape"], "reader");
    let about = rows[0]["prices"].as_str().unwrap_or_default();
    assert!(
        about.contains("timed bench.start to bench.end"),
        "{}",
        rows[0]
    );
    let labels: Vec<String> = loopbench::arm::ArmSpec::defaults()
        .iter()
        .map(|a| a.to_string())
        .chain(["wasmi#null".to_string()])
        .collect();
    assert!(labels.len() >= 2, "{labels:?}");
    for label in &labels {
        let a = arm(&rows[0], label);
        assert!(a["error"].is_null(), "{a}");
        assert!(a["verified_reps"].as_u64().unwrap() >= 2, "{a}");
    }
    // Each arm ran in worker processes, which loaded the directory and
    // verified every rep themselves.
    assert_eq!(
        json["session"]["isolation"], "workers",
        "{}",
        json["session"]
    );

    // One byte more in the expected output: the run fails, in one line.
    std::fs::write(
        dir.path().join("reader.stdout.expected"),
        format!("{INPUT}!"),
    )
    .unwrap();
    let (ok, _, stderr) = app_run(&[path.to_str().unwrap(), "--engines", "wasmi"]);
    assert!(!ok);
    assert!(
        stderr.contains("reader stdout against the expected file: expected 17 bytes, got 16 bytes, first different at byte 16"),
        "{stderr}"
    );
}

#[test]
fn a_command_runs_in_worker_processes_in_layout_variants_or_in_this_process() {
    let dir = tempfile::tempdir().unwrap();
    let path = module(dir.path(), "reader", &command("", "", ""));
    std::fs::write(dir.path().join("reader.stdout.expected"), INPUT).unwrap();
    let path = path.to_str().unwrap();
    let (ok, json, stderr) = app_run(&[
        path,
        "--engines",
        "wasmi",
        "--layout-builds",
        "2",
        "--min-epochs",
        "4",
        "--budget",
        "60",
    ]);
    assert!(ok, "{stderr}");
    let json = json.unwrap();
    assert_eq!(json["session"]["layout_builds"], 2, "{}", json["session"]);
    // The arm and its build-layout null run other links over the epochs
    // (the two linked before the first, and those linked between epochs),
    // in worker processes of their own.
    let epochs = json["epochs"].as_array().unwrap();
    assert!(epochs.len() >= 4, "{epochs:?}");
    let seeds: std::collections::BTreeSet<u64> = epochs
        .iter()
        .map(|e| e["variants"]["wasmi"].as_u64().unwrap())
        .collect();
    let linked = json["session"]["engines"][0]["layout"]["variants"]
        .as_array()
        .unwrap()
        .len();
    assert!(
        seeds.len() >= 2 && seeds.len() <= linked,
        "{linked} {seeds:?}"
    );
    let me = std::process::id() as u64;
    for e in epochs {
        assert_ne!(e["pids"]["wasmi"].as_u64(), Some(me), "{e}");
        assert_ne!(
            e["variants"]["wasmi"], e["variants"]["wasmi#build-null"],
            "{e}"
        );
    }
    let row = &results(&json)[0];
    for label in ["wasmi", "wasmi#null", "wasmi#build-null"] {
        let a = arm(row, label);
        assert!(a["error"].is_null(), "{a}");
        assert!(a["verified_reps"].as_u64().unwrap() >= 8, "{a}");
    }
    assert_eq!(row["build_null"]["includes_layout"], true, "{row}");

    // Asked to, it runs in this process, one layout.
    let (ok, json, stderr) = app_run(&[path, "--engines", "wasmi", "--in-process"]);
    assert!(ok, "{stderr}");
    let json = json.unwrap();
    assert_eq!(json["session"]["isolation"], "in-process");
    assert!(
        arm(&results(&json)[0], "wasmi")["verified_reps"]
            .as_u64()
            .unwrap()
            >= 2
    );
}

#[test]
fn arguments_and_environment_reach_the_command_and_the_first_run_is_the_reference() {
    // Prints argv[1] (its length from args_sizes_get less the program's).
    let imports = r#"
  (import "wasi_snapshot_preview1" "args_sizes_get" (func $sizes (param i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "args_get" (func $args (param i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "environ_sizes_get" (func $env_sizes (param i32 i32) (result i32)))"#;
    let after = r#"
    (drop (call $sizes (i32.const 200) (i32.const 204)))
    (drop (call $args (i32.const 300) (i32.const 400)))
    ;; argv[1] starts at argv[1]'s pointer and ends before the NUL at the end.
    (i32.store (i32.const 0) (i32.load (i32.const 304)))
    (i32.store (i32.const 4)
      (i32.sub (i32.sub (i32.add (i32.const 400) (i32.load (i32.const 204))) (i32.load (i32.const 304))) (i32.const 1)))
    (drop (call $fd_write (i32.const 1) (i32.const 0) (i32.const 1) (i32.const 24)))
    ;; exit with the count of environment variables
    (drop (call $env_sizes (i32.const 200) (i32.const 204)))
    (call $proc_exit (i32.load (i32.const 200)))"#;
    let dir = tempfile::tempdir().unwrap();
    let path = module(dir.path(), "echo", &command(imports, "", after));
    let path = path.to_str().unwrap();
    // No expected files: every engine must print what the first run did.
    let (ok, json, stderr) = app_run(&[path, "--arg", "hello"]);
    assert!(ok, "{stderr}");
    let json = json.unwrap();
    for a in results(&json)[0]["arms"].as_array().unwrap() {
        assert!(a["error"].is_null(), "{a}");
    }
    // One variable: the command exits with 1, which is a failed run.
    let (ok, _, stderr) = app_run(&[path, "--engines", "wasmi", "--env", "A=1"]);
    assert!(!ok);
    assert!(stderr.contains("the module exited with code 1"), "{stderr}");
    for bad in ["A", "=1"] {
        let (ok, _, stderr) = app_run(&[path, "--engines", "wasmi", "--env", bad]);
        assert!(!ok);
        assert_eq!(
            stderr.trim(),
            format!("error: --env {bad}: expected NAME=value")
        );
    }
}

#[test]
fn every_broken_module_is_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let cases: [(&str, String, &str); 5] = [
        (
            "twice",
            command("", "(call $start)", ""),
            "the module called bench.start a second time",
        ),
        (
            "exits",
            command("", "", "(call $proc_exit (i32.const 3))"),
            "the module exited with code 3",
        ),
        ("traps", command("", "", "unreachable"), "unreachable"),
        (
            "unserved",
            command(r#"(import "env" "now" (func (result i64)))"#, "", ""),
            "imports what the WASI host cannot serve: env.now",
        ),
        (
            "nostart",
            "(module (memory (export \"memory\") 1))".to_string(),
            "exports no `_start` function",
        ),
    ];
    for (name, wat, says) in cases {
        let path = module(&dir.path().join(name), name, &wat);
        let (ok, _, stderr) = app_run(&[path.to_str().unwrap(), "--engines", "wasmi"]);
        assert!(!ok, "{name}");
        assert!(stderr.contains(says), "{name}: {stderr}");
        // One line per arm that met it (the arm and its null control), or
        // one before any arm for a module refused on reading.
        let errors: Vec<&str> = stderr.lines().filter(|l| l.starts_with("error")).collect();
        assert!(!errors.is_empty() && errors.len() <= 2, "{name}: {stderr}");
        assert!(errors.iter().all(|l| l.contains(says)), "{name}: {stderr}");
    }
    // A file that is not there, and a directory without modules.
    let (ok, _, stderr) = app_run(&["no/such.wasm"]);
    assert!(!ok);
    assert!(stderr.contains("no/such.wasm: cannot read it"), "{stderr}");
    let empty = tempfile::tempdir().unwrap();
    let (ok, _, stderr) = app_run(&[empty.path().to_str().unwrap()]);
    assert!(!ok);
    assert!(stderr.contains("holds no .wasm module"), "{stderr}");
    // A directory of which nothing can run.
    let (ok, _, stderr) = app_run(&[dir.path().join("nostart").to_str().unwrap()]);
    assert!(!ok);
    assert!(
        stderr.contains("none of its 1 modules can run here"),
        "{stderr}"
    );
}

#[test]
fn a_suite_directory_runs_each_module_as_a_row() {
    // Sightglass's layout: <suite>/<name>/benchmark.wasm.
    let suite = tempfile::tempdir().unwrap();
    for name in ["alpha", "beta", "gamma"] {
        let dir = suite.path().join(name);
        module(&dir, "benchmark", &command("", "", ""));
        std::fs::write(dir.join("benchmark.stdout.expected"), INPUT).unwrap();
    }
    // As a suite is found: a module the host cannot serve and a component
    // beside them are skipped, each in one line, and the rest runs.
    let nn = suite.path().join("nn");
    module(
        &nn,
        "benchmark",
        &command(
            r#"(import "wasi_ephemeral_nn" "load" (func (param i32)))"#,
            "",
            "",
        ),
    );
    let component = suite.path().join("component");
    std::fs::create_dir_all(&component).unwrap();
    std::fs::write(
        component.join("benchmark.wasm"),
        wat::parse_str("(component)").unwrap(),
    )
    .unwrap();
    let (ok, json, stderr) = app_run(&[suite.path().to_str().unwrap(), "--engines", "wasmi"]);
    assert!(ok, "{stderr}");
    assert!(
        stderr.contains("imports what the WASI host cannot serve: wasi_ephemeral_nn.load"),
        "{stderr}"
    );
    assert!(
        stderr.contains("is a WebAssembly component, not a core module"),
        "{stderr}"
    );
    assert!(stderr.contains("3 of 5 modules run"), "{stderr}");
    assert_eq!(
        stderr
            .lines()
            .filter(|l| l.starts_with("skipped: "))
            .count(),
        2,
        "{stderr}"
    );
    let json = json.unwrap();
    let names: Vec<&str> = results(&json)
        .iter()
        .map(|r| r["shape"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["alpha", "beta", "gamma"]);

    // The table ends with each arm's geometric mean over the three, and
    // the HTML report shows them first.
    let page = suite.path().join("suite.html");
    let saved = suite.path().join("suite.json");
    let out = Command::cargo_bin("loopbench")
        .unwrap()
        .args(["app", "run", "--no-history"])
        .arg(suite.path())
        .args(["--rounds", "2", "--html"])
        .arg(&page)
        // Every rep inline: the test reads each epoch's numbers.
        .arg("--json-reps")
        .arg("--json")
        .arg(&saved)
        .output()
        .unwrap();
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        table.contains("suite of 3 modules: geometric mean of each arm's time over wasmi's"),
        "{table}"
    );
    // Each arm's interval is across the units the three modules ran (the
    // modules of an epoch share its processes' layouts): the pairs of
    // layout variants when the arms ran in variants, else the epochs, as
    // the saved comparisons number them.
    let session: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&saved).unwrap()).unwrap();
    let arms = loopbench::arm::ArmSpec::defaults();
    for arm in arms
        .iter()
        .skip(1)
        .map(|a| a.to_string())
        .chain(["wasmi#null".into()])
    {
        // Per module: its epochs' numbers, and their pairs of variants.
        type Units = Vec<u64>;
        let modules: Vec<(Units, Option<Units>)> = session["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                let c = r["comparisons"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|c| c["arm"] == arm.as_str())
                    .unwrap_or_else(|| panic!("{arm}: no comparison"));
                let numbers = |v: &Value| -> Units {
                    v.as_array()
                        .unwrap()
                        .iter()
                        .map(|e| e.as_u64().unwrap())
                        .collect()
                };
                let ids = numbers(&c["epoch_ids"]);
                assert_eq!(ids.len(), c["epoch_median_pct"].as_array().unwrap().len());
                (ids, c.get("epoch_clusters").map(numbers))
            })
            .collect();
        // Pairs of variants are the unit when every module ran two or more.
        let by_pair = modules.iter().all(|(_, c)| {
            c.as_ref()
                .is_some_and(|c| c.iter().collect::<std::collections::BTreeSet<_>>().len() >= 2)
        });
        let units: Vec<std::collections::BTreeSet<u64>> = modules
            .iter()
            .map(|(ids, c)| match (by_pair, c) {
                (true, Some(c)) => c.iter().copied().collect(),
                _ => ids.iter().copied().collect(),
            })
            .collect();
        // Every unit any module ran in counts; a module that stopped early
        // does not cut the others'.
        let all: std::collections::BTreeSet<u64> = units.iter().flatten().copied().collect();
        let fewest = units.iter().map(|m| m.len()).min().unwrap();
        assert!(fewest >= 2, "{arm}: {units:?}");
        let unit = if by_pair {
            "pairs of layout variants"
        } else {
            "epochs"
        };
        let across = if fewest == all.len() {
            format!("across the {} {unit} every module ran", all.len())
        } else {
            format!("across {} {unit}, a module in {fewest} at least", all.len())
        };
        let want = format!("over 3 of 3 modules, {across}");
        assert!(
            table
                .lines()
                .any(|l| l.starts_with(&format!("  {arm} vs wasmi: x")) && l.ends_with(&want)),
            "{arm}: {want}: {table}"
        );
    }
    let html = std::fs::read_to_string(&page).unwrap();
    let suite_at = html.find("Suite of 3 modules").expect("no suite section");
    assert!(
        suite_at < html.find("id=\"shape-alpha\"").unwrap(),
        "the suite comes after the modules"
    );
    // The forest plot, the suite's means, and each module's strip plot.
    crate::exporters::renders_in_chromium(&page, 2 + 3);
}

/// A loop of exactly `n` iterations on the local `$i`.
fn burn(n: u32) -> String {
    format!(
        "(local.set $i (i32.const 0))
         (loop $l (local.set $i (i32.add (local.get $i) (i32.const 1)))
           (br_if $l (i32.lt_u (local.get $i) (i32.const {n}))))"
    )
}

/// `loopbench app profile FILE --json -`: the counts of the timed region.
fn profile_counts(path: &Path) -> Value {
    let out = Command::cargo_bin("loopbench")
        .unwrap()
        .args(["app", "profile"])
        .arg(path)
        .args(["--json", "-"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    // The module reads its input once inside the region: one WASI call.
    assert_eq!(json["host_calls"], 1, "{json}");
    json["counts"].clone()
}

#[test]
fn the_counted_region_is_exactly_between_the_markers() {
    let dir = tempfile::tempdir().unwrap();
    let plain = module(&dir.path().join("plain"), "m", &command("", "", ""));
    let before = module(
        &dir.path().join("before"),
        "m",
        &command("", &burn(5000), ""),
    );
    let inside = module(
        &dir.path().join("inside"),
        "m",
        &command_with("", "", &burn(5000), ""),
    );
    let plain = profile_counts(&plain);
    assert!(plain["total_ops"].as_u64().unwrap() > 0, "{plain}");
    // Work before bench.start is not in the region, to the op.
    assert_eq!(profile_counts(&before), plain);
    // The same work inside it is: 5000 iterations of a few ops each.
    let inside = profile_counts(&inside);
    let more = inside["total_ops"].as_u64().unwrap() - plain["total_ops"].as_u64().unwrap();
    assert!(more >= 5000 * 4, "{inside} against {plain}");
}

#[test]
fn a_command_that_never_ends_is_stopped_by_the_counting_run() {
    let dir = tempfile::tempdir().unwrap();
    let forever = "(loop $l (br $l))";
    let path = module(dir.path(), "forever", &command_with("", "", forever, ""));
    let (ok, _, stderr) = app_run(&[path.to_str().unwrap(), "--fuel", "100000"]);
    assert!(!ok);
    assert!(
        stderr.contains("counting run (wasmi): did not finish within 100000 units of fuel"),
        "{stderr}"
    );
    assert_eq!(
        stderr.lines().filter(|l| l.starts_with("error")).count(),
        1,
        "{stderr}"
    );
}

#[test]
fn compare_matches_a_workload_only_with_the_same_invocation() {
    let dir = tempfile::tempdir().unwrap();
    let path = module(dir.path(), "reader", &command("", "", ""));
    let path = path.to_str().unwrap();
    let saved = |name: &str, args: &[&str]| {
        let out = dir.path().join(name);
        let mut all = vec![path, "--engines", "wasmi", "--json"];
        all.push(out.to_str().unwrap());
        all.extend(args);
        let o = Command::cargo_bin("loopbench")
            .unwrap()
            .args(["app", "run", "--no-history"])
            .args(&all)
            .args(["--rounds", "2"])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        out
    };
    let a = saved("a.json", &["--arg", "x"]);
    let same = saved("same.json", &["--arg", "x"]);
    let other = saved("other.json", &["--arg", "y"]);
    let compare = |b: &Path| -> Value {
        let o = Command::cargo_bin("loopbench")
            .unwrap()
            .arg("compare")
            .args([&a, b])
            .args(["--json", "-"])
            .output()
            .unwrap();
        serde_json::from_slice(&o.stdout)
            .unwrap_or_else(|_| panic!("{}", String::from_utf8_lossy(&o.stderr)))
    };
    let with_same = compare(&same);
    assert_eq!(
        with_same["rows"].as_array().unwrap().len(),
        1,
        "{with_same}"
    );
    let with_other = compare(&other);
    assert!(
        with_other["rows"].as_array().unwrap().is_empty(),
        "{with_other}"
    );
    let unmatched = with_other["unmatched"].to_string();
    assert!(
        unmatched.contains("reader: another workload in B"),
        "{unmatched}"
    );
    // Another input the module reads is another workload too; the result
    // files written beside it above were not (it never reads them).
    std::fs::write(dir.path().join("input.txt"), "another input\n").unwrap();
    let changed = saved("changed.json", &["--arg", "x"]);
    assert!(compare(&changed)["rows"].as_array().unwrap().is_empty());
}

#[test]
fn a_workload_is_recorded_as_its_own_series_and_gated() {
    let dir = tempfile::tempdir().unwrap();
    let path = module(dir.path(), "reader", &command("", "", ""));
    let db = dir.path().join("history.sqlite");
    let run = |arg: &str, more: &[&str]| {
        let out = Command::cargo_bin("loopbench")
            .unwrap()
            .env("LOOPBENCH_DB", &db)
            .args(["app", "run"])
            .arg(&path)
            .args(["--engines", "wasmi,tinywasm", "--rounds", "2", "--arg", arg])
            .args(more)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr).to_string();
        assert!(!stderr.contains("panicked"), "{stderr}");
        (out.status.success(), stderr)
    };
    for arg in ["x", "x", "y"] {
        let (ok, stderr) = run(arg, &[]);
        assert!(ok, "{stderr}");
        assert!(stderr.contains("history: session"), "{stderr}");
    }
    // Two workloads of one name: two series, keyed by their identities.
    let out = Command::cargo_bin("loopbench")
        .unwrap()
        .env("LOOPBENCH_DB", &db)
        .args(["trend", "--shape", "reader", "--arm", "tinywasm"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    let headings: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("/ reader (workload ") && l.contains("median ns/iter"))
        .collect();
    assert_eq!(headings.len(), 2, "{text}");
    let sessions: Vec<bool> = headings
        .iter()
        .map(|h| h.contains(", 2 sessions"))
        .collect();
    assert_eq!(sessions.iter().filter(|two| **two).count(), 1, "{text}");

    // The gate judges the candidate as `run` does; the exit says its verdict.
    let (json, csv) = (dir.path().join("gated.json"), dir.path().join("gated.csv"));
    let (ok, stderr) = run(
        "x",
        &[
            "--fail-on",
            "changed",
            "--json",
            json.to_str().unwrap(),
            "--csv",
            csv.to_str().unwrap(),
        ],
    );
    let saved: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    // Every rep's CSV row names the workload it measured.
    let identity = results(&saved)[0]["identity"].as_str().unwrap().to_string();
    let csv = std::fs::read_to_string(&csv).unwrap();
    let mut lines = csv.lines();
    let at = lines
        .next()
        .unwrap()
        .split(',')
        .position(|h| h == "workload")
        .unwrap();
    assert!(
        lines.all(|l| l.split(',').nth(at) == Some(identity.as_str())),
        "{csv}"
    );
    let gate = &saved["gate"];
    assert!(gate.is_object(), "{saved}");
    assert_eq!(ok, gate["failed"] == false, "{gate} {stderr}");
    assert!(stderr.contains("gate"), "{stderr}");
}

#[test]
fn callgrind_counts_the_host_instructions_of_each_arm() {
    let dir = tempfile::tempdir().unwrap();
    let path = module(dir.path(), "reader", &command("", "", ""));
    let (ok, json, stderr) = app_run(&[
        path.to_str().unwrap(),
        "--engines",
        "wasmi,tinywasm",
        "--counters",
        "callgrind",
    ]);
    assert!(ok, "{stderr}");
    let json = json.unwrap();
    let row = &results(&json)[0];
    for label in ["wasmi", "tinywasm", "wasmi#null"] {
        let a = arm(row, label);
        assert!(a["verified_reps"].as_u64().unwrap() >= 2, "{a}");
        let ir = &a["counters"]["values"]["callgrind_ir"]["per_iter"]["median"];
        assert!(ir.as_f64().is_some_and(|v| v > 0.0), "{label}: {a}");
    }
    // Under valgrind: one epoch, in this process.
    assert_eq!(json["session"]["isolation"], "in-process");
}

#[test]
fn prices_are_projected_onto_the_counted_region_of_a_command() {
    let dir = tempfile::tempdir().unwrap();
    module(&dir.path().join("plain"), "plain", &command("", "", ""));
    module(
        &dir.path().join("inside"),
        "inside",
        &command_with("", "", &burn(5000), ""),
    );
    let out = Command::cargo_bin("loopbench")
        .unwrap()
        .args(["app", "project"])
        .arg(dir.path())
        .args([
            "--engines",
            "wasmi,tinywasm",
            "--bytes",
            "64k",
            "--warmup",
            "0",
        ])
        .args(["--budget", "0.3", "--min-epochs", "2", "--rounds", "2"])
        .args(["--iters", "2000", "--json", "-"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    let projections = json["projections"].as_array().unwrap();
    let of = |name: &str| {
        projections
            .iter()
            .find(|p| p["app"] == name)
            .unwrap_or_else(|| panic!("no {name}: {json}"))
    };
    let (plain, inside) = (of("plain"), of("inside"));
    // The projection is made onto the timed region's exact counts: the
    // loop burned inside the markers adds its 5000 increments, and no
    // branch trace is claimed for a WASI command.
    let int = |p: &Value| p["features"]["int"].as_f64().unwrap();
    assert!(int(inside) >= int(plain) + 5000.0, "{plain} {inside}");
    for p in [plain, inside] {
        assert_eq!(p["steps"], 1, "{p}");
        assert!(p.get("predictor").is_none(), "{p}");
        let pair = &p["pairs"][0];
        assert_eq!(
            (pair["a"].as_str(), pair["b"].as_str()),
            (Some("wasmi"), Some("tinywasm"))
        );
        assert!(
            pair["projected_pct"].as_f64().is_some_and(f64::is_finite),
            "{pair}"
        );
    }
}

#[test]
fn a_build_beside_what_runs_in_this_process_is_refused_before_any_work() {
    let dir = tempfile::tempdir().unwrap();
    let path = module(dir.path(), "reader", &command("", "", ""));
    let path = path.to_str().unwrap();
    for args in [
        &[
            "app",
            "run",
            path,
            "--engines",
            "wasmi,wasmi@2",
            "--in-process",
        ][..],
        &[
            "app",
            "run",
            "zlib",
            "--engines",
            "wasmi,wasmi@2",
            "--in-process",
        ][..],
    ] {
        let out = Command::cargo_bin("loopbench")
            .unwrap()
            .args(args)
            .arg("--no-history")
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
        assert!(stderr.contains("wasmi@2 is a build"), "{args:?}: {stderr}");
    }
}
