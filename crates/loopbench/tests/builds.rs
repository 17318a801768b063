//! Build arms: two registry versions of wasmi in worker processes, side by
//! side with the in-process engine, with crashes, hangs and bad paths.
//!
//! The workers are real cargo builds (dev profile, to keep the suite's build
//! short), cached under the target directory (`LOOPBENCH_CACHE_DIR`, so the
//! user's cache is never touched): the first test run builds them once (a
//! few minutes on two cores), later runs find them. The tests share the
//! builds, so they take turns.

use assert_cmd::Command;
use loopbench::arm::build as spec;
use loopbench::arm::EngineKind;
use loopbench::workers::{locate, project};
use serde_json::Value;
use std::sync::Mutex;

static BUILDS: Mutex<()> = Mutex::new(());

const OLD: &str = "wasmi@0.31+profile:dev";
const NEW: &str = "wasmi@2+profile:dev";
const SHAPES: &str = "add_chain,load_stream";
const ROUNDS: usize = 3;

/// The tests' worker cache, under the target directory.
const CACHE: &str = concat!(env!("CARGO_TARGET_TMPDIR"), "/loopbench-workers");

/// `loopbench` with the tests' worker cache.
fn loopbench() -> Command {
    let mut cmd = Command::cargo_bin("loopbench").unwrap();
    cmd.env("LOOPBENCH_CACHE_DIR", CACHE);
    // The suite's cache holds every build its tests make (several GiB of
    // dev builds): a session pruning it mid-suite would make the next test
    // build again. Pruning has tests of its own (tests/cache.rs).
    cmd.env("LOOPBENCH_CACHE_LIMIT", "1024g");
    cmd.env(
        "LOOPBENCH_DB",
        concat!(env!("CARGO_TARGET_TMPDIR"), "/history.sqlite"),
    );
    cmd
}

fn session(engines: &str, env: &[(&str, &str)]) -> (bool, Value, String) {
    // One epoch: these tests are about build arms, not layouts.
    session_with(engines, &["--min-epochs", "1", "--max-epochs", "1"], env)
}

/// [`session`] with its own epoch options (and any other flags).
fn session_with(engines: &str, extra: &[&str], env: &[(&str, &str)]) -> (bool, Value, String) {
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = loopbench();
    cmd.current_dir(dir.path()).args([
        "run",
        "--engines",
        engines,
        "--shapes",
        SHAPES,
        "--bytes",
        "64k",
        "--iters",
        "2048",
        "--rounds",
        &ROUNDS.to_string(),
        "--warmup",
        "1",
        "--json",
        "-",
    ]);
    cmd.args(extra);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(!stderr.contains("panicked"), "{stderr}");
    let json: Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {stderr}"));
    (out.status.success(), json, stderr)
}

fn arm<'a>(shape: &'a Value, label: &str) -> &'a Value {
    shape["arms"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["arm"] == label)
        .unwrap_or_else(|| panic!("no arm {label}"))
}

#[test]
fn two_registry_builds_compare_with_a_null_control_and_stay_cached() {
    let _turn = BUILDS.lock().unwrap_or_else(|e| e.into_inner());
    let engines = format!("{OLD},{NEW}");
    let (ok, json, stderr) = session(&engines, &[]);
    assert!(ok, "{stderr}");
    assert_eq!(json["complete"], true);
    assert_eq!(json["errors"].as_array().unwrap().len(), 0, "{stderr}");
    let null = format!("{OLD}#null");
    assert_eq!(json["session"]["null_arm"], null.as_str());
    let versions: Vec<&str> = json["session"]["engines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["version"].as_str().unwrap())
        .collect();
    assert!(
        versions[0].starts_with("wasmi 0.31.")
            && versions[0].contains("[worker: crates.io 0.31, profile dev"),
        "{versions:?}"
    );
    assert!(
        versions[1].starts_with("wasmi 2.") && versions[1].contains("adapter wasmi_1x"),
        "{versions:?}"
    );
    assert_eq!(
        versions[2], versions[0],
        "the null control is the same build"
    );
    let results = json["results"].as_array().unwrap();
    assert_eq!(results.len(), 2);
    for shape in results {
        for label in [OLD, NEW, null.as_str()] {
            let a = arm(shape, label);
            // Every measured rep ran and verified in its worker.
            assert_eq!(
                a["verified_reps"], json["session"]["rounds"],
                "{label}: {a}"
            );
            assert!(a["error"].is_null());
        }
        let comparisons = shape["comparisons"].as_array().unwrap();
        assert!(
            comparisons
                .iter()
                .any(|c| c["arm"] == NEW && c["vs"] == OLD),
            "{comparisons:?}"
        );
        assert!(shape["null_control"]["median_pct"].is_number(), "{shape}");
    }

    // The second run finds both workers: cargo compiles nothing.
    let (ok, _, stderr) = session(&engines, &[]);
    assert!(ok, "{stderr}");
    assert!(!stderr.contains("built worker"), "rebuilt: {stderr}");
}

#[test]
fn a_worker_that_dies_mid_session_is_reported_and_the_rest_completes() {
    let _turn = BUILDS.lock().unwrap_or_else(|e| e.into_inner());
    // In-process wasmi as the baseline, the 2.x build as a worker that exits
    // when asked for rep 2 of every shape.
    let hook = format!("{NEW}@2");
    let (ok, json, _) = session(&format!("wasmi,{NEW}"), &[("LOOPBENCH_WORKER_EXIT", &hook)]);
    assert!(!ok, "the exit code reports the failed arm");
    assert_eq!(json["complete"], true, "the session finished");
    for shape in json["results"].as_array().unwrap() {
        let failed = arm(shape, NEW);
        let error = failed["error"].as_str().unwrap();
        assert!(error.contains(&format!("arm {NEW}")), "{error}");
        assert!(
            error.contains("the worker exited during rep 2 (exit status: 86)"),
            "{error}"
        );
        assert!(
            error.contains("exiting at rep 2"),
            "stderr tail missing: {error}"
        );
        // Rep 0 is warm-up, rep 1 measured, rep 2 killed it.
        assert_eq!(failed["verified_reps"], 1);
        for label in ["wasmi", "wasmi#null"] {
            assert_eq!(
                arm(shape, label)["verified_reps"],
                json["session"]["rounds"],
                "{label}"
            );
        }
        assert!(shape["null_control"]["median_pct"].is_number());
    }
    assert_eq!(json["errors"].as_array().unwrap().len(), 2);
}

#[test]
fn a_worker_that_hangs_is_killed_at_its_deadline() {
    let _turn = BUILDS.lock().unwrap_or_else(|e| e.into_inner());
    let hook = format!("{OLD}@1");
    let env = [
        ("LOOPBENCH_WORKER_HANG", hook.as_str()),
        ("LOOPBENCH_WORKER_DEADLINE_FLOOR_MS", "1500"),
    ];
    let (ok, json, stderr) = session(&format!("wasmi,{OLD}"), &env);
    assert!(!ok);
    assert_eq!(json["complete"], true, "{stderr}");
    for shape in json["results"].as_array().unwrap() {
        let error = arm(shape, OLD)["error"].as_str().unwrap().to_string();
        assert!(
            error.contains("the worker did not answer rep 1 within"),
            "{error}"
        );
        assert!(
            error.contains("killed it") && error.contains("hanging at rep 1"),
            "{error}"
        );
        assert_eq!(
            arm(shape, "wasmi")["verified_reps"],
            json["session"]["rounds"]
        );
    }
}

#[test]
fn a_build_that_fails_is_reported_with_cargos_output_and_the_rest_completes() {
    let _turn = BUILDS.lock().unwrap_or_else(|e| e.into_inner());
    // A "checkout" of wasmi 2.0.0 that does not compile.
    let checkout = tempfile::tempdir().unwrap();
    std::fs::write(
        checkout.path().join("Cargo.toml"),
        "[package]\nname = \"wasmi\"\nversion = \"2.0.0\"\nedition = \"2021\"\n",
    )
    .unwrap();
    std::fs::create_dir(checkout.path().join("src")).unwrap();
    std::fs::write(
        checkout.path().join("src/lib.rs"),
        "compile_error!(\"this branch does not build\");\n",
    )
    .unwrap();
    let broken = format!("wasmi=path:{}+profile:dev", checkout.path().display());
    let (ok, json, stderr) = session(&format!("wasmi,{broken}"), &[]);
    assert!(!ok);
    assert_eq!(json["complete"], true, "{stderr}");
    let results = json["results"].as_array().unwrap();
    let first = arm(&results[0], &broken)["error"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(first.contains("building the worker failed"), "{first}");
    assert!(
        first.contains("this branch does not build"),
        "cargo's output missing: {first}"
    );
    let later = arm(&results[1], &broken)["error"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(later.contains("see this arm's first error"), "{later}");
    for shape in results {
        assert_eq!(
            arm(shape, "wasmi")["verified_reps"],
            json["session"]["rounds"]
        );
        assert_eq!(
            arm(shape, "wasmi#null")["verified_reps"],
            json["session"]["rounds"]
        );
    }
    let version = &json["session"]["engines"][1]["version"];
    assert!(
        version.as_str().unwrap().contains("worker unavailable"),
        "{version}"
    );
}

#[test]
fn a_path_without_a_crate_is_refused_before_any_work() {
    let empty = tempfile::tempdir().unwrap();
    let arg = format!("wasmi,wasmi=path:{}", empty.path().display());
    let out = loopbench()
        .args(["run", "--engines", &arg])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    let errors: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("error: "))
        .collect();
    assert_eq!(errors.len(), 1, "{stderr}");
    assert!(errors[0].contains("no Cargo.toml there"), "{stderr}");
    assert!(!stderr.contains("building worker"));

    for (arg, needle) in [
        ("wasmi@0.40", "wasmi 0.40.0 is outside every adapter family"),
        ("wasm3@0.2", "wasm3 0.2.0 is outside every adapter family"),
        ("wasmtime@48", "wasmtime cannot run from a build"),
        ("wasmi@0.31:eager", "takes no option `eager`"),
        ("wasmi=path:/no/such/dir", "no such directory"),
    ] {
        let out = loopbench()
            .args(["run", "--engines", arg])
            .output()
            .unwrap();
        assert!(!out.status.success(), "{arg}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(needle), "{arg}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{arg}: {stderr}");
    }
}

/// The worker builds' identity in a session's JSON (`loopbench-worker
/// ID` in its version).
fn identity(json: &Value, label: &str) -> String {
    let version = json["session"]["engines"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["arm"] == label)
        .unwrap()["version"]
        .as_str()
        .unwrap();
    let at = version
        .find("loopbench-worker ")
        .unwrap_or_else(|| panic!("{version}"));
    version[at..at + "loopbench-worker ".len() + 12].to_string()
}

#[test]
fn a_worker_build_follows_the_timed_path_and_not_the_host() {
    let _turn = BUILDS.lock().unwrap_or_else(|e| e.into_inner());
    // A checkout of the workspace to edit: the timed path's crates, the
    // root manifest and lock, and a file of the host's.
    let live = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let copy = tempfile::tempdir().unwrap();
    let root = copy.path();
    for c in ["loopbench-worker", "loopbench-count", "loopbench-probe"] {
        std::fs::create_dir_all(root.join("crates")).unwrap();
        let status = std::process::Command::new("cp")
            .arg("-r")
            .arg(live.join("crates").join(c))
            .arg(root.join("crates"))
            .status()
            .unwrap();
        assert!(status.success());
    }
    for f in ["Cargo.toml", "Cargo.lock"] {
        std::fs::copy(live.join(f), root.join(f)).unwrap();
    }
    let host_file = root.join("crates/loopbench/src/report.rs");
    std::fs::create_dir_all(host_file.parent().unwrap()).unwrap();
    std::fs::write(&host_file, "// a report\n").unwrap();
    let source = root.join("crates/loopbench-worker");
    let env = [("LOOPBENCH_SOURCE", source.to_str().unwrap())];

    let (ok, json, stderr) = session(NEW, &env);
    assert!(ok, "{stderr}");
    let first = identity(&json, NEW);

    // The host edited: the same build, found, under the same identity
    // (a rebuild of loopbench continues the same series).
    std::fs::write(&host_file, "// a report, reworded\n").unwrap();
    let (ok, json, stderr) = session(NEW, &env);
    assert!(ok, "{stderr}");
    assert!(!stderr.contains("built worker"), "rebuilt: {stderr}");
    assert_eq!(identity(&json, NEW), first);

    // The timed path edited: built anew, from a snapshot, saying why.
    let units = source.join("src/units.rs");
    let mut text = std::fs::read_to_string(&units).unwrap();
    // Unique per run: the suite's cache outlives it, and an edit made
    // before would be found built.
    let nonce = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    text.push_str(&format!("// edited by a test at {nonce}\n"));
    std::fs::write(&units, text).unwrap();
    let (ok, json, stderr) = session(NEW, &env);
    assert!(ok, "{stderr}");
    assert!(
        stderr.contains(&format!(
            "{NEW}: building anew: the timed path's source changed since its last build"
        )),
        "{stderr}"
    );
    assert!(stderr.contains("built worker"), "{stderr}");
    let edited = identity(&json, NEW);
    assert_ne!(edited, first);
    // A cached worker binary that changed since it was built (truncated:
    // the one just built) is built again, in one line, and runs.
    let bins = std::fs::read_dir(format!("{CACHE}/target/debug")).unwrap();
    let newest = bins
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name().unwrap().to_string_lossy().starts_with("lbw-") && p.extension().is_none()
        })
        .max_by_key(|p| p.metadata().unwrap().modified().unwrap())
        .unwrap();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&newest)
        .unwrap()
        .set_len(1000)
        .unwrap();
    let (ok, json, stderr) = session(NEW, &env);
    assert!(ok, "{stderr}");
    assert!(
        stderr.contains("changed since it was built (hash differs): building it again"),
        "{stderr}"
    );
    assert_eq!(json["errors"].as_array().unwrap().len(), 0, "{stderr}");
}

#[test]
fn the_cache_key_changes_with_the_features() {
    let key = |s: &str| {
        let p = spec::parse(s).unwrap();
        let build = p.build.unwrap();
        let (dep, _) = locate::locate(EngineKind::Wasmi, &build).unwrap();
        project::cache_key(&project::inputs(
            EngineKind::Wasmi,
            &build,
            &dep,
            None,
            "timed path",
            "rustc",
        ))
    };
    let plain = key("wasmi@2");
    assert_eq!(plain, key("wasmi@2"));
    assert_ne!(plain, key("wasmi@2+feature:simd"));
    assert_ne!(
        key("wasmi@2+feature:simd"),
        key("wasmi@2+feature:simd+feature:extra-checks")
    );
    assert_ne!(plain, key("wasmi@2+profile:lto"));
    assert_ne!(plain, key("wasmi@2+rustflags:-Ctarget-cpu=native"));
}

#[test]
fn list_explains_build_arms() {
    let out = loopbench().arg("list").output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    for needle in [
        "Build arms",
        "ENGINE@REQ",
        "=path:DIR",
        "+ignore-rust-version",
        "0.31.x",
        "0.12.x",
    ] {
        assert!(stdout.contains(needle), "{needle}: {stdout}");
    }
}

#[test]
fn the_worker_cache_is_the_users_cache_directory_unless_overridden() {
    let cache_line = |env: &[(&str, &str)]| {
        let mut cmd = Command::cargo_bin("loopbench").unwrap();
        cmd.arg("list")
            .env_remove("LOOPBENCH_CACHE_DIR")
            .env_remove("XDG_CACHE_HOME");
        for (k, v) in env {
            cmd.env(k, v);
        }
        let out = cmd.output().unwrap();
        assert!(out.status.success());
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .find(|l| l.contains("Workers are cached under"))
            .unwrap()
            .to_string()
    };
    let line = cache_line(&[("LOOPBENCH_CACHE_DIR", "/scratch/lb")]);
    assert!(line.contains("under /scratch/lb by"), "{line}");
    let line = cache_line(&[("XDG_CACHE_HOME", "/xdg/cache"), ("HOME", "/home/u")]);
    assert!(
        line.contains("under /xdg/cache/loopbench/workers by"),
        "{line}"
    );
    let line = cache_line(&[
        ("LOOPBENCH_CACHE_DIR", "/scratch/lb"),
        ("XDG_CACHE_HOME", "/xdg/cache"),
    ]);
    assert!(line.contains("under /scratch/lb by"), "{line}");
    if cfg!(target_os = "linux") {
        let line = cache_line(&[("HOME", "/home/u")]);
        assert!(
            line.contains("under /home/u/.cache/loopbench/workers by"),
            "{line}"
        );
    }
    // Nothing under the build machine's target directory.
    assert!(!line.contains(env!("CARGO_TARGET_TMPDIR")), "{line}");
}

#[test]
fn a_missing_loopbench_source_is_one_clear_line() {
    let out = loopbench()
        .args(["run", "--engines", "wasmi,wasmi@2"])
        .env("LOOPBENCH_SOURCE", "/no/such/loopbench")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("not at /no/such/loopbench") && stderr.contains("LOOPBENCH_SOURCE"),
        "{stderr}"
    );
}

/// `git` in `dir`, which must succeed; its stdout.
pub fn git(dir: &std::path::Path, args: &[&str]) -> String {
    let out = std::process::Command::new("git")
        .arg("-C")
        .arg(dir)
        .args([
            "-c",
            "user.name=loopbench",
            "-c",
            "user.email=loopbench@localhost",
        ])
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

#[test]
fn a_git_revision_is_checked_out_by_commit_built_and_recorded() {
    let _turn = BUILDS.lock().unwrap_or_else(|e| e.into_inner());
    // A repository whose `main` holds a wasmi 2.0.0 "checkout" that does
    // not compile: the revision is resolved, checked out and handed to
    // cargo, whose error names the commit's source.
    let repo = tempfile::tempdir().unwrap();
    let r = repo.path();
    git(r, &["init", "-q", "-b", "main"]);
    std::fs::write(
        r.join("Cargo.toml"),
        "[package]\nname = \"wasmi\"\nversion = \"2.0.0\"\nedition = \"2021\"\n",
    )
    .unwrap();
    std::fs::create_dir(r.join("src")).unwrap();
    std::fs::write(r.join("src/lib.rs"), "compile_error!(\"revision one\");\n").unwrap();
    git(r, &["add", "."]);
    git(r, &["commit", "-q", "-m", "one"]);
    let first = git(r, &["rev-parse", "HEAD"]);
    let arm_text = format!("wasmi=git:{}#main+profile:dev", r.display());
    let db = tempfile::tempdir().unwrap();
    let db_path = db.path().join("h.sqlite");
    let (ok, json, stderr) = session(
        &format!("wasmi,{arm_text}"),
        &[("LOOPBENCH_DB", db_path.to_str().unwrap())],
    );
    assert!(!ok);
    let version = json["session"]["engines"][1]["version"].as_str().unwrap();
    assert!(
        version.contains(&format!("git {}#main commit {first}", r.display())),
        "{version}"
    );
    let error = arm(&json["results"][0], &arm_text)["error"]
        .as_str()
        .unwrap();
    assert!(error.contains("revision one"), "{error}");
    let tree = std::path::Path::new(CACHE).join("git").join(&first);
    assert!(
        tree.join("src/lib.rs").is_file(),
        "no worktree at {}",
        tree.display()
    );
    // The history stores the commit id with the arm.
    assert!(stderr.contains("history: session 1 recorded"), "{stderr}");
    let mut store = loopbench::history::Location::Sqlite(db_path.clone())
        .open()
        .unwrap();
    let rows = store
        .query(
            "SELECT commit_id, source FROM arms WHERE label = $1",
            &[arm_text.as_str().into()],
        )
        .unwrap();
    assert_eq!(rows[0].text(0).unwrap(), first);
    assert_eq!(
        rows[0].text(1).unwrap(),
        format!("git {}#main", r.display())
    );

    // `main` moves: a new commit, a new worktree; the old one stays.
    std::fs::write(r.join("src/lib.rs"), "compile_error!(\"revision two\");\n").unwrap();
    git(r, &["commit", "-q", "-am", "two"]);
    let second = git(r, &["rev-parse", "HEAD"]);
    let (_, json, _) = session(&format!("wasmi,{arm_text}"), &[]);
    let error = arm(&json["results"][0], &arm_text)["error"]
        .as_str()
        .unwrap();
    assert!(error.contains("revision two"), "{error}");
    assert!(std::path::Path::new(CACHE)
        .join("git")
        .join(&second)
        .is_dir());
    assert!(tree.is_dir());

    // A revision that does not exist is refused before any work.
    let out = loopbench()
        .args(["run", "--no-history", "--engines"])
        .arg(format!("wasmi,wasmi=git:{}#no-such-branch", r.display()))
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.starts_with("error: ") && stderr.contains("no such revision in this repository"),
        "{stderr}"
    );
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
}

/// A legacy Rust symbol without its hash: what two builds share.
fn stable(name: &str) -> String {
    match name.len().checked_sub(20).map(|i| name.split_at(i)) {
        Some((head, tail)) if tail.starts_with("17h") && tail.ends_with('E') => head.to_string(),
        _ => name.to_string(),
    }
}

/// The variant in the cache under `key` was linked in the order its
/// `layout.order` lists: the listed functions that the binary defines
/// once sit at increasing addresses.
fn follows_its_order(key: &str) {
    use object::{Object, ObjectSymbol, SymbolKind};
    let dir = std::path::Path::new(CACHE).join(key);
    let script = std::fs::read_to_string(dir.join("build.rs")).unwrap();
    assert!(script.contains("--symbol-ordering-file="), "{script}");
    let order = std::fs::read_to_string(dir.join("layout.order")).unwrap();
    let bin = std::path::Path::new(CACHE)
        .join("target/debug")
        .join(format!("lbw-{key}"));
    let bytes = std::fs::read(&bin).unwrap();
    let file = object::File::parse(&*bytes).unwrap();
    let mut seen: std::collections::HashMap<String, Option<u64>> = Default::default();
    for s in file
        .symbols()
        .filter(|s| s.kind() == SymbolKind::Text && s.size() > 0)
    {
        let name = s.name().unwrap().to_string();
        // A name defined twice (two crates' local copies) has no one place.
        seen.entry(name)
            .and_modify(|a| *a = None)
            .or_insert(Some(s.address()));
    }
    let addresses: Vec<u64> = order
        .lines()
        .filter_map(|n| seen.get(n).copied().flatten())
        .take(200)
        .collect();
    assert!(
        addresses.len() >= 100,
        "{key}: {} ordered functions",
        addresses.len()
    );
    assert!(
        addresses.windows(2).all(|w| w[0] < w[1]),
        "{key}: not in its order: {addresses:x?}"
    );
}

#[test]
fn build_arms_run_in_layout_variants_beside_a_build_layout_null() {
    let _turn = BUILDS.lock().unwrap_or_else(|e| e.into_inner());
    let engines = format!("{NEW},{OLD}");
    let epochs = [
        "--min-epochs",
        "4",
        "--max-epochs",
        "4",
        "--layout-builds",
        "2",
    ];
    let (ok, json, stderr) = session_with(&engines, &epochs, &[]);
    assert!(ok, "{stderr}");
    assert_eq!(json["session"]["layout_builds"], 2);
    // Each build arm: two variants of its own, whose engine code moved.
    let engines_info = json["session"]["engines"].as_array().unwrap();
    for label in [NEW, OLD] {
        let e = engines_info.iter().find(|e| e["arm"] == label).unwrap();
        let layout = &e["layout"];
        let variants = layout["variants"].as_array().unwrap();
        assert_eq!(variants.len(), 2, "{e}");
        // Without --seed, the link seeds come from the fixed one (the
        // session's own seed is fresh), so every session reuses them.
        let session_seed = loopbench::session::DEFAULT_SEED;
        assert_ne!(json["session"]["seed"], session_seed);
        assert_eq!(
            variants[0]["seed"],
            loopbench::workers::layout::seed(session_seed, 0)
        );
        assert_eq!(
            variants[1]["seed"],
            loopbench::workers::layout::seed(session_seed, 1)
        );
        assert_ne!(variants[0]["key"], variants[1]["key"]);
        assert!(layout["moved"]["moved"].as_u64().unwrap() > 0, "{layout}");
        for v in variants {
            follows_its_order(v["key"].as_str().unwrap());
        }
    }
    // The two builds of wasmi (another version, another crate hash) place
    // the functions they share in one order per epoch: the first functions
    // both define sit in the same order in both variant-0 binaries.
    let order_of = |label: &str| {
        let e = engines_info.iter().find(|e| e["arm"] == label).unwrap();
        let key = e["layout"]["variants"][0]["key"]
            .as_str()
            .unwrap()
            .to_string();
        let order = std::fs::read_to_string(format!("{CACHE}/{key}/layout.order")).unwrap();
        order.lines().map(stable).collect::<Vec<String>>()
    };
    let (new, old) = (order_of(NEW), order_of(OLD));
    fn once(v: &[String]) -> std::collections::HashMap<&String, usize> {
        let mut count = std::collections::HashMap::new();
        v.iter().for_each(|n| *count.entry(n).or_default() += 1);
        count
    }
    let (in_new, in_both) = (once(&new), once(&old));
    let single = |n: &&String| in_new.get(*n) == Some(&1) && in_both.get(*n) == Some(&1);
    let shared: Vec<&String> = new.iter().filter(single).take(50).collect();
    let in_old: Vec<&String> = old.iter().filter(|n| shared.contains(n)).collect();
    assert!(shared.len() >= 20, "{} shared", shared.len());
    assert_eq!(shared, in_old);
    // Which variant ran in each epoch: 1, 2, 1, 2 for every build arm; the
    // build-layout null runs the baseline's other one.
    let build_null = format!("{NEW}#build-null");
    let seed = |i: usize| loopbench::workers::layout::seed(loopbench::session::DEFAULT_SEED, i);
    for (e, record) in json["epochs"].as_array().unwrap().iter().enumerate() {
        assert_eq!(record["variants"][NEW], seed(e % 2), "{record}");
        assert_eq!(record["variants"][OLD], seed(e % 2), "{record}");
        assert_eq!(record["variants"][format!("{NEW}#null")], seed(e % 2));
        assert_eq!(record["variants"][build_null.as_str()], seed((e + 1) % 2));
    }
    // An arm's version is its build, whichever variant ran last: the same
    // text as the session's engine line, so history and compare match it.
    let engine_version = |label: &str| {
        engines_info.iter().find(|e| e["arm"] == label).unwrap()["version"]
            .as_str()
            .unwrap()
            .to_string()
    };
    for shape in json["results"].as_array().unwrap() {
        // Every rep of every variant verified (the workers verify each rep).
        for label in [NEW, OLD, build_null.as_str()] {
            let a = arm(shape, label);
            assert!(a["error"].is_null(), "{label}: {a}");
            let build = engine_version(label.trim_end_matches("#build-null"));
            assert_eq!(a["version"].as_str().unwrap(), build, "{label}");
            assert!(!build.contains("layout variant"), "{build}");
            assert_eq!(
                a["verified_reps"],
                json["session"]["rounds"].as_u64().unwrap() * 4
            );
        }
        assert_eq!(arm(shape, build_null.as_str())["role"], "build_null");
        assert!(shape["build_null"]["median_pct"].is_number(), "{shape}");
        let c = shape["comparisons"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["arm"] == OLD)
            .unwrap();
        assert_eq!(c["interval"], "student_t_builds", "{c}");
        assert_eq!(c["build"]["clusters"], 2, "{c}");
    }

    // The table and the Markdown report say how builds were sampled and
    // show the build floor.
    let saved = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(saved.path(), serde_json::to_vec(&json).unwrap()).unwrap();
    let out = loopbench()
        .arg("report")
        .arg(saved.path())
        .arg("--verbose")
        .output()
        .unwrap();
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(table.contains("builds: layout variants (function order shuffled at link time), epoch e runs variant e mod 2"), "{table}");
    assert!(table.contains(&format!("{build_null} ")), "{table}");
    assert!(table.contains("build null: "), "{table}");
    assert!(table.contains("over 2 pairs of layout variants"), "{table}");
    let out = loopbench()
        .arg("report")
        .arg(saved.path())
        .args(["--markdown", "-"])
        .output()
        .unwrap();
    let md = String::from_utf8_lossy(&out.stdout);
    assert!(
        md.contains("the build-layout null (the baseline's layout variants against each other)"),
        "{md}"
    );

    // Again: every variant is found in the cache, none is built.
    let (ok, _, stderr) = session_with(&engines, &epochs, &[]);
    assert!(ok, "{stderr}");
    assert!(!stderr.contains("built worker"), "rebuilt: {stderr}");
    let variant_lines: Vec<&str> = stderr.lines().filter(|l| l.contains(", layout ")).collect();
    assert!(variant_lines.len() >= 4, "{stderr}");
    assert!(
        variant_lines.iter().all(|l| l.contains("is up to date")),
        "{stderr}"
    );

    // One build per arm: no variants, and the table says what is missing.
    let out = loopbench()
        .args([
            "run",
            "--no-history",
            "--engines",
            &engines,
            "--shapes",
            "add_chain",
        ])
        .args(["--bytes", "64k", "--iters", "2048", "--rounds", "3"])
        .args([
            "--min-epochs",
            "2",
            "--max-epochs",
            "2",
            "--layout-builds",
            "1",
        ])
        .output()
        .unwrap();
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        table.contains("the intervals have NO build component"),
        "{table}"
    );
    assert!(!table.contains("#build-null"), "{table}");
}

#[test]
fn layout_builds_out_of_range_is_refused_in_one_line() {
    for k in ["0", "65", "two"] {
        let out = loopbench()
            .args([
                "run",
                "--no-history",
                "--engines",
                "wasmi",
                "--layout-builds",
                k,
            ])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{k}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("--layout-builds"), "{err}");
        assert!(!err.contains("panicked"), "{err}");
    }
}

/// A WASI command on builds: wasmi 2's build runs it in layout variants,
/// its imports routed by loopbench's routing compiled against that build,
/// every rep verified in the worker; wasmi 0.31's adapter has no routing,
/// and its arm says so in one line while the others run.
#[test]
fn a_wasi_command_runs_on_a_build_whose_family_routes_its_imports() {
    let _turn = BUILDS.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let path = crate::workload::module(dir.path(), "reader", &crate::workload::command("", "", ""));
    std::fs::write(
        dir.path().join("reader.stdout.expected"),
        crate::workload::INPUT,
    )
    .unwrap();
    let out = loopbench()
        .args(["app", "run", "--no-history"])
        .arg(&path)
        .args(["--engines", &format!("wasmi,{NEW},{OLD}")])
        .args(["--rounds", "2", "--layout-builds", "2", "--json", "-"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    let json: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|_| panic!("{stderr}"));
    let arms = json["results"][0]["arms"].as_array().unwrap();
    let arm = |label: &str| {
        arms.iter()
            .find(|a| a["arm"] == label)
            .unwrap_or_else(|| panic!("{label}: {json}"))
    };
    let new = arm(NEW);
    assert!(new["error"].is_null(), "{new}");
    assert!(new["verified_reps"].as_u64().unwrap() >= 4, "{new}");
    assert_eq!(new["layout_spread"]["variants"], 2, "{new}");
    let old = arm(OLD);
    let why = old["error"].as_str().unwrap_or_default();
    assert!(why.contains("has no routing of WASI imports"), "{old}");
    assert!(!why.contains('\n'), "{why}");
    assert!(arm("wasmi")["verified_reps"].as_u64().unwrap() >= 4);
}

/// A copy of the registry's wasmi 2 source as a git repository of two
/// commits, the second changing only a comment. `simd` is on by default in
/// the copy: a worker also links the registry's wasmi through the timed-path
/// crate (the counting engine), and the copy shares its `wasmi_ir`, whose
/// features must then agree; a real wasmi repository has its own.
fn wasmi_repository(dir: &std::path::Path) {
    let home = std::env::var_os("CARGO_HOME")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| {
            std::path::PathBuf::from(std::env::var_os("HOME").unwrap()).join(".cargo")
        });
    let source = std::fs::read_dir(home.join("registry/src"))
        .unwrap()
        .flatten()
        .flat_map(|index| std::fs::read_dir(index.path()).unwrap().flatten())
        .map(|e| e.path())
        .find(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("wasmi-2."))
        })
        .expect("wasmi 2 in the cargo registry (a dependency of loopbench)");
    let copied = std::process::Command::new("cp")
        .arg("-r")
        .arg(format!("{}/.", source.display()))
        .arg(dir)
        .status()
        .unwrap();
    // As it is published: loopbench turns on the `simd` its own wasmi 2
    // shares with this copy (their wasmi_ir is one crate).
    assert!(copied.success());
    git(dir, &["init", "-q", "-b", "main"]);
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-q", "-m", "good"]);
    let lib = dir.join("src/lib.rs");
    let mut text = std::fs::read_to_string(&lib).unwrap();
    text.push_str("// a change that changes nothing\n");
    std::fs::write(&lib, text).unwrap();
    git(dir, &["commit", "-q", "-am", "bad"]);
}

/// `bisect --app`: each step an `app run` of the module on two revisions'
/// builds, recorded with the workload's identity; the same bisect again
/// reuses its step, and another argument is another workload, so another
/// bisect. What the step finds is timing and not asserted.
#[test]
fn a_bisect_of_a_wasi_command_steps_through_app_runs_keyed_by_the_workload() {
    let _turn = BUILDS.lock().unwrap_or_else(|e| e.into_inner());
    let repo = tempfile::tempdir().unwrap();
    wasmi_repository(repo.path());
    let dir = tempfile::tempdir().unwrap();
    let module =
        crate::workload::module(dir.path(), "reader", &crate::workload::command("", "", ""));
    std::fs::write(
        dir.path().join("reader.stdout.expected"),
        crate::workload::INPUT,
    )
    .unwrap();
    let db = dir.path().join("h.sqlite");
    let json = dir.path().join("bisect.json");
    let bisect = |extra: &[&str]| {
        let out = loopbench()
            .arg("bisect")
            .arg("--engine")
            .arg(format!("wasmi=git:{}+profile:dev", repo.path().display()))
            .args([
                "--good", "main~1", "--bad", "main", "--budget", "1", "--app",
            ])
            .arg(&module)
            .arg("--db")
            .arg(&db)
            .arg("--json")
            .arg(&json)
            .args(["--", "--layout-builds", "1", "--rounds", "2"])
            .args(extra)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr).to_string();
        assert!(!stderr.contains("panicked"), "{stderr}");
        let report: Value = serde_json::from_slice(&std::fs::read(&json).unwrap())
            .unwrap_or_else(|_| panic!("{stderr}"));
        (report, stderr)
    };
    let (report, stderr) = bisect(&[]);
    assert!(stderr.contains("each one `app run` of reader"), "{stderr}");
    let step = &report["steps"][0];
    assert_eq!(step["reused"], false, "{report}");
    assert_eq!(step["shapes"][0]["shape"], "reader", "{report}");
    assert!(step["shapes"][0]["median_pct"].is_f64(), "{report}");
    let session = step["session_id"].as_i64().unwrap();
    let mut store = loopbench::history::Location::Sqlite(db.clone())
        .open()
        .unwrap();
    let identity = stderr
        .split("identity ")
        .nth(1)
        .and_then(|t| t.split_whitespace().next())
        .unwrap()
        .to_string();
    let rows = store
        .query(
            "SELECT DISTINCT workload FROM summaries WHERE session_id = $1",
            &[session.into()],
        )
        .unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].text(0).unwrap(), identity);

    // Again: the step comes from the database, nothing is measured.
    let (again, stderr) = bisect(&[]);
    assert_eq!(again["steps"][0]["reused"], true, "{stderr}");
    assert_eq!(again["steps"][0]["session_id"], step["session_id"]);
    // Another argument is another workload: a bisect of its own.
    let (other, stderr) = bisect(&["--arg", "x"]);
    assert_eq!(other["steps"][0]["reused"], false, "{stderr}");
    assert_ne!(other["steps"][0]["session_id"], step["session_id"]);
}
