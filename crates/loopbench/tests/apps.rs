//! Real applications: every recipe builds, runs and verifies on every
//! default engine; profiles add up; warm mode never reuses an instance; the
//! stub host names what it cannot serve; a missing tool says what to install.
//!
//! The first test to need an app builds it (scripts/apps/build.sh, cached in
//! target/apps/), which needs the tools of scripts/apps/install-deps.sh.

use loopbench::apps::{self, profile::count_app, warm, warm::run_warm, AppShape, Driver};
use loopbench::arm::{ArmSpec, EngineKind};
use loopbench::measure::counters::CounterSet;
use loopbench::results::StopSettings;
use loopbench::session::{self, Isolation, Plan};

/// One epoch: these tests check verification, not intervals.
fn one_epoch() -> StopSettings {
    StopSettings {
        min_epochs: 1,
        max_epochs: 1,
        precision_pct: 100.0,
        budget_s: 1e9,
    }
}
use loopbench::shapes::{self, Params, Shape, ShapeModule};
use std::process::Command;

fn load(name: &str) -> AppShape {
    AppShape::load(apps::find(name).unwrap()).unwrap_or_else(|e| panic!("loading app {name}: {e}"))
}

#[test]
fn every_app_verifies_on_every_default_engine() {
    let arms = ArmSpec::defaults();
    assert!(!arms.is_empty());
    for spec in apps::APPS {
        let plan = Plan {
            shapes: vec![Box::new(load(spec.name).into_recipe())],
            arms: arms.clone(),
            params: Params::default(),
            rounds: 1,
            warmup: 0,
            counters: CounterSet::none(),
            isolation: Isolation::InProcess,
            rep_target: None,
            stop: one_epoch(),
            ..Default::default()
        };
        let report = session::run(plan, &mut ()).unwrap();
        let r = &report.results[0];
        for a in &r.arms {
            let known = spec.known_defect(&a.version);
            match (&a.skipped, known) {
                // Only an engine that lacks a proposal the module needs may skip, and it says which.
                (Some(reason), _) => assert!(
                    reason.contains("lacks"),
                    "app {} arm {}: {reason}",
                    spec.name,
                    a.arm
                ),
                // A known engine defect still fails verification (tests/engine_defects.rs
                // fails first once the engine is fixed).
                (None, Some(_)) => {
                    let e = a.error.as_deref().unwrap_or("no error");
                    assert!(
                        e.contains("verify failed"),
                        "app {} arm {}: {e}",
                        spec.name,
                        a.arm
                    );
                }
                (None, None) => {
                    assert!(
                        a.error.is_none(),
                        "app {} arm {}: {:?}",
                        spec.name,
                        a.arm,
                        a.error
                    );
                    assert!(
                        a.verified_reps >= 1,
                        "app {} arm {}: no verified rep",
                        spec.name,
                        a.arm
                    );
                }
            }
        }
        let wasmi = r.arms.iter().find(|a| a.arm == "wasmi").unwrap();
        assert!(
            wasmi.verified_reps >= 1,
            "app {} did not run on wasmi",
            spec.name
        );
    }
}

#[test]
fn every_c_app_runs_on_wasm3_too() {
    // The C recipes are built for the MVP feature set precisely so wasm3 runs them.
    if !EngineKind::Wasm3.compiled_in() {
        return;
    }
    for name in ["zlib", "lua", "sqlite"] {
        let plan = Plan {
            shapes: vec![Box::new(load(name).into_recipe())],
            arms: vec!["wasm3".parse().unwrap()],
            params: Params::default(),
            rounds: 1,
            warmup: 0,
            counters: CounterSet::none(),
            isolation: Isolation::InProcess,
            rep_target: None,
            stop: one_epoch(),
            ..Default::default()
        };
        let report = session::run(plan, &mut ()).unwrap();
        assert!(report.errors.is_empty(), "{name}: {:?}", report.errors);
        assert!(
            report.results[0].arms[0].skipped.is_none(),
            "{name} skipped on wasm3"
        );
    }
}

#[test]
fn a_wrong_result_fails_verification() {
    for spec in apps::APPS {
        let app = load(spec.name);
        let engine = "wasmi".parse::<ArmSpec>().unwrap().build().unwrap();
        let compiled = engine.compile(&app.prepared.wasm).unwrap();
        let mut inst = compiled.instantiate().unwrap();
        let p = Params::default();
        app.recipe.init(&p, inst.as_mut()).unwrap();
        app.recipe.reset(&p, spec.steps, inst.as_mut()).unwrap();
        let good = inst.call("run", Some(spec.steps as i32), None).unwrap();
        app.recipe
            .verify(&p, spec.steps, good, inst.as_mut())
            .unwrap();
        let bad = good.map(|v| v ^ 1);
        assert!(
            app.recipe
                .verify(&p, spec.steps, bad, inst.as_mut())
                .is_err(),
            "{}: a wrong checksum passed",
            spec.name
        );
        // The output itself is checked too where the app leaves one in memory.
        if spec.driver == Driver::Zstd {
            app.recipe.reset(&p, spec.steps, inst.as_mut()).unwrap(); // clears the output
            assert!(
                app.recipe
                    .verify(&p, spec.steps, good, inst.as_mut())
                    .is_err(),
                "zstd: cleared output passed"
            );
        }
    }
}

#[test]
fn profile_counts_add_up() {
    for spec in apps::APPS {
        let app = load(spec.name);
        let (c, ret) = count_app(&app, spec.steps).unwrap();
        assert!(
            c.total_ops > 100_000,
            "{}: only {} ops",
            spec.name,
            c.total_ops
        );
        assert_eq!(
            c.total_ops,
            c.classes.values().sum::<u64>(),
            "{}: classes do not sum to the total",
            spec.name
        );
        assert_eq!(
            c.total_ops,
            c.functions.iter().map(|f| f.ops).sum::<u64>(),
            "{}: functions do not sum",
            spec.name
        );
        assert_eq!(c.transfers, c.taken_branches + c.calls + c.returns);
        assert_eq!(
            Some(ret),
            app.expected(spec.steps),
            "{}: the counting run's checksum",
            spec.name
        );
    }
}

#[test]
fn hot_classes_are_mapped_to_shapes() {
    let app = load("zlib");
    let (c, _) = count_app(&app, app.spec.steps).unwrap();
    let (mixes, _) = apps::profile::shape_mixes();
    assert!(mixes.iter().any(|m| m.shape == "load_stream"));
    let hot = apps::profile::hot_classes(&c, &mixes);
    assert!(!hot.is_empty());
    let local = hot
        .iter()
        .find(|h| h.class == loopbench_count::OpClass::Local)
        .expect("zlib is local-heavy");
    assert!(
        local.priced_by.iter().any(|(s, _)| s == "local_copies"),
        "{:?}",
        local.priced_by
    );
}

fn warm_setup(app: &str, shape: &str) -> warm::WarmSetup {
    let params = Params {
        bytes: 64 << 10,
        iters: None,
        k: 8,
    };
    let module = ShapeModule::build(shapes::find(shape).unwrap(), &params).unwrap();
    warm::setup(apps::find(app).unwrap(), module).unwrap()
}

#[test]
fn warm_mode_uses_one_fresh_instance_per_rep() {
    let setup = warm_setup("zlib", "store_stream");
    let (r, errors) = run_warm(&setup, &"wasmi".parse().unwrap(), 1, 3, 1).unwrap();
    assert!(errors.is_empty(), "{errors:?}");
    // 3 arms -> 6 rounds (a Williams design for an odd count is two
    // squares), + 1 warm-up: 7 reps and 7 instances per arm.
    for ((label, samples, skipped), n) in r.arms.iter().zip(&r.instances) {
        assert!(skipped.is_none(), "{label}: {skipped:?}");
        assert_eq!(samples.len(), 6, "{label}");
        assert_eq!(
            *n, 7,
            "{label}: instances must equal reps (one fresh instance per rep)"
        );
    }
    assert!(r.change.is_some() && r.null.is_some());
}

#[test]
fn warm_entry_point_refuses_a_second_call() {
    // If an instance were ever reused, the injected entry point traps, and
    // the host names the reason.
    let setup = warm_setup("sha256", "add_chain");
    let engine = "wasmi".parse::<ArmSpec>().unwrap().build().unwrap();
    let compiled = engine.compile(&setup.module.wasm).unwrap();
    let mut inst = compiled.instantiate().unwrap();
    let s = &setup.module;
    setup.app.recipe.setup(inst.as_mut()).unwrap();
    let pages = shapes::pages_for(s.shape.memory_bytes(&s.params)) as i32;
    assert!(inst.call(warm::GROW, Some(pages), None).unwrap().unwrap() >= pages);
    s.shape.init(&s.params, inst.as_mut()).unwrap();
    s.shape.reset(&s.params, s.iters, inst.as_mut()).unwrap();
    let ret = inst
        .call(warm::WARM_RUN, Some(s.iters as i32), None)
        .unwrap();
    s.shape
        .verify(&s.params, s.iters, ret, inst.as_mut())
        .unwrap();
    let again = inst.call(warm::WARM_RUN, Some(s.iters as i32), None);
    assert!(
        again.is_err(),
        "a second call on one warm instance must fail"
    );
    let code = inst
        .call(apps::stub::ERROR_EXPORT, None, None)
        .unwrap()
        .unwrap();
    assert_eq!(code, warm::REUSED_CODE);
    assert!(warm::explain(code).unwrap().contains("reused"));
}

#[test]
fn shared_memory_shapes_are_refused_in_warm_mode() {
    let params = Params {
        bytes: 64 << 10,
        iters: None,
        k: 8,
    };
    let module = ShapeModule::build(shapes::find("shared_store_stream").unwrap(), &params).unwrap();
    let err = warm::setup(apps::find("zlib").unwrap(), module)
        .err()
        .expect("refused")
        .to_string();
    assert!(err.contains("shared memory"), "{err}");
}

#[test]
fn an_unserved_import_is_named() {
    static SPEC: apps::AppSpec = apps::AppSpec {
        name: "test",
        about: "",
        source: "",
        license: "",
        steps: 1,
        expected: 7,
        driver: Driver::Native,
        known_defects: &[],
    };
    let wasm = wat::parse_str(
        r#"(module
            (import "wasi_snapshot_preview1" "clock_time_get" (func $clock (param i32 i64 i32) (result i32)))
            (import "env" "nope" (func $nope))
            (memory (export "memory") 1)
            (func (export "run") (param i32) (result i32)
                (drop (call $clock (i32.const 0) (i64.const 0) (i32.const 64)))
                (if (local.get 0) (then (call $nope)))
                (i32.add (i32.load (i32.const 64)) (i32.const 7))))"#,
    )
    .unwrap();
    // 99 at address 64 must be overwritten by the clock stub's zero.
    let prepared = apps::prepare(&SPEC, &wasm, &apps::Inputs::default(), None).unwrap();
    for arm in ArmSpec::defaults() {
        let engine = arm.build().unwrap();
        let compiled = engine.compile(&prepared.wasm).unwrap();
        let mut inst = compiled.instantiate().unwrap();
        inst.write_memory(64, &99i32.to_le_bytes()).unwrap();
        assert_eq!(
            inst.call("run", Some(0), None).unwrap(),
            Some(7),
            "{arm}: clock stub"
        );
        assert!(
            inst.call("run", Some(1), None).is_err(),
            "{arm}: env.nope must trap"
        );
        let code = inst
            .call(apps::stub::ERROR_EXPORT, None, None)
            .unwrap()
            .unwrap();
        let stubbed = apps::stub::stubbed(&prepared.imports);
        let msg = loopbench::shapes::recipe::stub_failure(code, &stubbed).unwrap();
        assert!(msg.contains("env.nope"), "{arm}: {msg}");
    }
}

#[test]
fn a_missing_tool_says_what_to_install() {
    let out_dir = tempfile::tempdir().unwrap();
    let root = apps::root();
    let out = Command::new("bash")
        .arg(root.join("scripts/apps/build.sh"))
        .arg("zlib")
        .env("LOOPBENCH_APPS_OUT", out_dir.path())
        .env("LOOPBENCH_CLANG", "clang-missing-for-test")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("error: clang-missing-for-test not found; install it with: apt-get install clang lld wasi-libc"),
        "{stderr}"
    );
    // The same message reaches the user through the binary, as one line.
    let out = Command::new(env!("CARGO_BIN_EXE_loopbench"))
        .args(["app", "profile", "zlib"])
        .env("LOOPBENCH_APPS_OUT", out_dir.path())
        .env("LOOPBENCH_CLANG", "clang-missing-for-test")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    let errors: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("error: "))
        .collect();
    assert_eq!(errors.len(), 1, "{stderr}");
    assert!(
        errors[0].contains(
            "building app zlib failed: clang-missing-for-test not found; install it with:"
        ),
        "{stderr}"
    );
    assert!(!stderr.contains("panicked"));
}

#[test]
fn cli_lists_apps_and_rejects_unknown_ones() {
    let out = Command::new(env!("CARGO_BIN_EXE_loopbench"))
        .args(["app", "list"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    for a in apps::APPS {
        assert!(text.contains(a.name) && text.contains(a.source), "{text}");
    }
    let out = Command::new(env!("CARGO_BIN_EXE_loopbench"))
        .args(["app", "run", "nosuch"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("unknown app `nosuch` (valid: zlib, lua, sqlite, sha256, zstd)"),
        "{stderr}"
    );
    let out = Command::new(env!("CARGO_BIN_EXE_loopbench"))
        .args(["app", "project", "zlib", "--engines", "wasmi"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("at least two arms"));
    for (flag, value, message) in [
        (
            "--budget",
            "0",
            "--budget must be a positive number of seconds",
        ),
        (
            "--budget",
            "nan",
            "--budget must be a positive number of seconds",
        ),
        ("--min-epochs", "0", "--min-epochs must be at least 1"),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_loopbench"))
            .args([
                "app",
                "project",
                "zlib",
                "--engines",
                "wasmi,wasm3",
                flag,
                value,
            ])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{flag} {value}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(stderr.trim(), format!("error: {message}"), "{flag} {value}");
    }
}

/// The sqlite app's expected checksum is not ours: Python's sqlite3 runs
/// the same SQL over the same rows and hashes the results the same way.
#[test]
fn sqlite_checksum_matches_an_independent_sqlite() {
    let spec = apps::find("sqlite").unwrap();
    let out = Command::new("python3")
        .arg(apps::root().join("apps/sqlite/reference.py"))
        .arg(spec.steps.to_string())
        .output()
        .expect("python3 (scripts/apps/install-deps.sh installs it)");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let reference: i32 = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
    assert_eq!(reference, spec.expected);
}

/// A recipe whose `run` never returns (an artifact that loops for ever, in
/// zlib's place) runs in worker processes like every app: each arm's worker
/// is killed at its deadline and said in one line, and the session ends
/// with a failure instead of hanging in this process.
#[test]
fn an_app_that_never_returns_is_a_worker_killed_at_its_deadline() {
    let dir = tempfile::tempdir().unwrap();
    crate::cli::util::a_recipe_that_never_returns(dir.path());
    let out = Command::new(env!("CARGO_BIN_EXE_loopbench"))
        .args([
            "app",
            "run",
            "zlib",
            "--engines",
            "wasmi",
            "--budget",
            "0.5",
        ])
        .args(["--layout-builds", "1", "--no-history", "--json", "-"])
        .env("LOOPBENCH_APPS_OUT", dir.path())
        .env("LOOPBENCH_WORKER_DEADLINE_FLOOR_MS", "500")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        json["session"]["isolation"], "workers",
        "{}",
        json["session"]
    );
    let arms = json["results"][0]["arms"].as_array().unwrap();
    assert_eq!(arms.len(), 2, "{arms:?}");
    for arm in arms {
        let error = arm["error"].as_str().unwrap_or_default();
        assert!(
            error.contains("the worker did not answer rep 0 within 0.5 s")
                && error.contains("killed it"),
            "{arm}"
        );
        assert_eq!(arm["verified_reps"], 0, "{arm}");
    }
    let errors: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("error: "))
        .collect();
    assert_eq!(errors.len(), 2, "{stderr}");
}

/// `app run` sends each recipe to the workers whole (its prepared module,
/// what its driver is fed, its checksum), and they verify every rep: the
/// three drivers, a module's own `run`, hash-wasm's and zstd's.
#[test]
fn app_run_verifies_every_recipe_in_worker_processes() {
    let out = Command::new(env!("CARGO_BIN_EXE_loopbench"))
        .args(["app", "run", "lua,sha256,zstd", "--engines", "wasmi"])
        .args(["--budget", "1", "--rounds", "2", "--layout-builds", "1"])
        .args(["--no-history", "--json", "-"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        json["session"]["isolation"], "workers",
        "{}",
        json["session"]
    );
    let me = u64::from(std::process::id());
    for epoch in json["epochs"].as_array().unwrap() {
        assert_ne!(epoch["pids"]["wasmi"].as_u64(), Some(me), "{epoch}");
        assert!(epoch["pids"]["wasmi"].as_u64().is_some(), "{epoch}");
    }
    let rows = json["results"].as_array().unwrap();
    let names: Vec<&str> = rows.iter().map(|r| r["shape"].as_str().unwrap()).collect();
    assert_eq!(names, ["lua", "sha256", "zstd"]);
    for row in rows {
        for arm in row["arms"].as_array().unwrap() {
            assert!(arm["error"].is_null(), "{arm}");
            assert!(arm["verified_reps"].as_u64().unwrap() >= 2, "{arm}");
        }
    }
}

/// An arm that fails to verify a recipe on an engine known to run it to a
/// wrong answer says whose defect it is and where it was reduced, in the
/// saved session as on the terminal; `app list` names it beside the app.
#[test]
fn a_known_engine_defect_is_named_where_the_app_fails() {
    let out = Command::new(env!("CARGO_BIN_EXE_loopbench"))
        .args(["app", "run", "zstd", "--engines", "wasmi,tinywasm"])
        .args(["--budget", "1", "--rounds", "1", "--layout-builds", "1"])
        .args(["--no-history", "--json", "-"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    // A failed arm is a failed measurement.
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let arms = json["results"][0]["arms"].as_array().unwrap();
    let arm = |name: &str| arms.iter().find(|a| a["arm"] == name).unwrap();
    assert!(arm("wasmi")["error"].is_null(), "{}", arm("wasmi"));
    let error = arm("tinywasm")["error"].as_str().unwrap();
    let defect = apps::catalog::TINYWASM_010_TEE_AFTER_BRANCH;
    assert!(error.contains("verify failed"), "{error}");
    assert!(
        error.contains("a known defect of tinywasm 0.10.x"),
        "{error}"
    );
    assert!(error.contains(defect.reduced), "{error}");
    assert!(apps::root().join(defect.reduced).is_file());

    let list = Command::new(env!("CARGO_BIN_EXE_loopbench"))
        .args(["app", "list"])
        .output()
        .unwrap();
    let list = String::from_utf8_lossy(&list.stdout);
    let zstd = &list[list.find("  zstd ").unwrap()..];
    assert!(
        zstd.contains("wrong on: tinywasm 0.10.x, which skips a local.tee"),
        "{list}"
    );
}

/// `app profile` and `app warm` run the app in this process, where no
/// worker can be killed: its counting run's fuel stops a `run` that never
/// returns, in one line (before, reading the counters before the run
/// refuelled it without bound, and warm mode had no counting run).
#[test]
fn an_app_that_never_returns_is_stopped_by_fuel_where_it_runs_in_this_process() {
    let dir = tempfile::tempdir().unwrap();
    crate::cli::util::a_recipe_that_never_returns(dir.path());
    let start = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_loopbench"))
            .args(args)
            .env("LOOPBENCH_APPS_OUT", dir.path())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    // Both at once: each burns the fuel for about half a minute.
    let children = [
        start(&["app", "profile", "zlib"]),
        start(&[
            "app",
            "warm",
            "zlib",
            "--shape",
            "add_chain",
            "--after",
            "1",
        ]),
    ];
    for child in children {
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(
            stderr.contains("app zlib: run(") && stderr.contains("did not finish within"),
            "{stderr}"
        );
    }
}

/// Every app a command names is read before anything is measured, and a
/// module that is not one is said in one line: `app project` priced the
/// catalog for about 20 s before it found its app missing, and a garbage
/// module's error printed wasmparser's byte lists over 11 lines.
#[test]
fn an_app_that_cannot_be_read_is_one_line_before_any_measuring() {
    let dir = tempfile::tempdir().unwrap();
    let empty_root = tempfile::tempdir().unwrap();
    let garbage = dir.path().join("garbage.wasm");
    std::fs::write(&garbage, b"garbage, not wasm").unwrap();
    std::fs::write(dir.path().join("zlib.wasm"), b"garbage, not wasm").unwrap();
    let truncated = dir.path().join("truncated.wasm");
    std::fs::write(&truncated, b"\0asm\x01\0\0\0\x05").unwrap();
    let loopbench = || {
        let mut c = Command::new(env!("CARGO_BIN_EXE_loopbench"));
        c.env("LOOPBENCH_APPS_OUT", dir.path())
            .env("LOOPBENCH_DB", dir.path().join("history.sqlite"));
        c
    };
    let (garbage, truncated) = (garbage.to_str().unwrap(), truncated.to_str().unwrap());
    let engines = ["--engines", "wasmi,tinywasm"];
    let cases: Vec<(Command, &str)> = vec![
        (
            {
                // No artifact and no recipe to build one.
                let mut c = loopbench();
                c.args(["app", "project", "sha256"]).args(engines);
                c.env("LOOPBENCH_ROOT", empty_root.path());
                c
            },
            "app sha256 is not built",
        ),
        (
            {
                let mut c = loopbench();
                c.args(["app", "project", "zlib"]).args(engines);
                c
            },
            "app zlib: invalid module: magic header not detected",
        ),
        (
            {
                let mut c = loopbench();
                c.args(["app", "project", garbage]).args(engines);
                c
            },
            "it does not start with the wasm magic bytes \\0asm",
        ),
        (
            {
                let mut c = loopbench();
                c.args(["app", "run", garbage]);
                c
            },
            "it does not start with the wasm magic bytes \\0asm",
        ),
        (
            {
                let mut c = loopbench();
                c.args(["app", "profile", truncated]);
                c
            },
            "is not a wasm module loopbench can read: unexpected end-of-file",
        ),
        (
            {
                // A build that cannot be built is refused as run refuses it
                // (app run measured the other arms and failed it per shape).
                let mut c = loopbench();
                c.args([
                    "app",
                    "run",
                    "zlib",
                    "--engines",
                    "wasmi,wasmi=git:/no/such/repo#main",
                ]);
                c
            },
            "arm wasmi=git:/no/such/repo#main: wasmi=git:/no/such/repo#main: no such directory",
        ),
        (
            {
                let mut c = loopbench();
                c.args(["app", "run", "zlib", "--engines", "wasmi,wasmi@>=99"]);
                c
            },
            "wasmi 99.0.0 is outside every adapter family",
        ),
    ];
    for (mut command, says) in cases {
        let out = command.output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{command:?}: {stderr}");
        // Nothing priced, nothing measured: the error is all it says.
        assert!(
            !stderr.contains("pricing primitives"),
            "{command:?}: {stderr}"
        );
        assert_eq!(stderr.lines().count(), 1, "{command:?}: {stderr}");
        assert!(
            stderr.starts_with("error: ") && stderr.contains(says),
            "{command:?}: {stderr}"
        );
    }
}
