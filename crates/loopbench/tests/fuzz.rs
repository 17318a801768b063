//! Arbitrary input where a user controls it (arm specs, sizes, shape files
//! as WAT and as wasm, saved JSON read back), and a worker that misbehaves:
//! never a panic; a bad input is an `Err` whose message is one line; a bad
//! worker is an error for its arm while the other arms go on.
//!
//! A fixed case budget and no persistence file, so this runs in the normal
//! test suite in seconds and the same way everywhere.

use loopbench::arm::{parse_arms, Arm, ArmSpec};
use loopbench::measure::counters::CounterSet;
use loopbench::schedule::{self, ArmOutcome, Design, EpochOrder};
use loopbench::shapes::{self, user::UserShape, Params, ShapeModule};
use loopbench::workers::project::Built;
use loopbench::workers::protocol::{Response, PROTOCOL};
use loopbench::workers::{ArmContext, WorkerArm};
use proptest::prelude::*;
use std::collections::BTreeMap;
use std::sync::Arc;

const COUNT_WAT: &str = r#"(module
  (memory (export "memory") 1)
  (func (export "setup") (param i32) (i32.store (i32.const 0) (i32.const 0)))
  (func (export "run") (param $n i32) (result i32) (local $i i32)
    (loop $l
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br_if $l (i32.lt_u (local.get $i) (local.get $n))))
    (local.get $i))
  (func (export "verify") (result i32) (i32.const 1)))"#;

const SAVED: &str = include_str!("fixtures/schema1/session.json");

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 192,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// An error message a user can read: one non-empty line.
fn one_line(e: &dyn std::fmt::Display) -> Result<(), TestCaseError> {
    let m = e.to_string();
    prop_assert!(!m.trim().is_empty(), "empty message");
    prop_assert!(!m.contains('\n'), "multi-line message: {m:?}");
    Ok(())
}

/// Text that looks like what a user types: the characters of the syntax.
fn typed(alphabet: &'static str, max: usize) -> impl Strategy<Value = String> {
    let chars: Vec<char> = alphabet.chars().collect();
    prop::collection::vec(prop::sample::select(chars), 0..max).prop_map(|v| v.into_iter().collect())
}

/// `base` with a few bytes replaced, inserted or cut.
fn mutated(base: Vec<u8>) -> impl Strategy<Value = Vec<u8>> {
    let n = base.len();
    prop::collection::vec((0..n, any::<u8>(), 0..3u8), 1..4).prop_map(move |edits| {
        let mut b = base.clone();
        for (at, byte, how) in edits {
            let at = at.min(b.len().saturating_sub(1));
            match how {
                0 if !b.is_empty() => b[at] = byte,
                1 => b.insert(at, byte),
                _ => b.truncate(at),
            }
        }
        b
    })
}

/// Load `bytes` as a shape file; if it loads, build and count it too.
fn load_shape(bytes: &[u8], ext: &str) -> Result<(), TestCaseError> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(format!("fuzzed.{ext}"));
    std::fs::write(&path, bytes).unwrap();
    match UserShape::load(&path) {
        Err(e) => one_line(&e),
        Ok(shape) => {
            let params = Params {
                bytes: 64 << 10,
                iters: Some(64),
                k: 8,
            };
            match ShapeModule::build(Box::new(shape), &params) {
                Err(e) => one_line(&e),
                Ok(module) => match loopbench::count::count_shape(&module) {
                    Err(e) => one_line(&e),
                    Ok(_) => Ok(()),
                },
            }
        }
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn arm_specs(text in prop_oneof![
        any::<String>(),
        typed("wasmi tinywasm3@:=+,.-/_0123456789fuelagrpohlt", 40),
    ]) {
        if let Err(e) = text.parse::<ArmSpec>() {
            one_line(&e)?;
        }
        let list: Vec<String> = text.split(',').map(String::from).collect();
        if let Err(e) = parse_arms(&list) {
            one_line(&e)?;
        }
    }

    #[test]
    fn sizes(text in prop_oneof![
        any::<String>(),
        typed("0123456789kmgtKMGTiB .-+e", 24),
    ]) {
        if let Err(e) = loopbench::units::parse_bytes(&text) {
            one_line(&e)?;
        }
        match loopbench::units::working_set(&text) {
            Err(e) => one_line(&e)?,
            Ok(b) => prop_assert!(b.is_power_of_two() && b >= 64 << 10),
        }
    }

    #[test]
    fn shape_files_as_wat(text in prop_oneof![
        any::<String>(),
        mutated(COUNT_WAT.as_bytes().to_vec())
            .prop_map(|b| String::from_utf8_lossy(&b).into_owned()),
    ]) {
        load_shape(text.as_bytes(), "wat")?;
    }

    #[test]
    fn shape_files_as_wasm(bytes in prop_oneof![
        prop::collection::vec(any::<u8>(), 0..256)
            .prop_map(|b| [b"\0asm\x01\0\0\0".as_slice(), &b].concat()),
        mutated(wat::parse_str(COUNT_WAT).unwrap()),
    ]) {
        load_shape(&bytes, "wasm")?;
    }

    #[test]
    fn saved_json_read_back(bytes in prop_oneof![
        prop::collection::vec(any::<u8>(), 0..512),
        mutated(SAVED.as_bytes().to_vec()),
    ]) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("saved.json");
        std::fs::write(&path, &bytes).unwrap();
        if let Err(e) = loopbench::results::read(&path) {
            one_line(&e)?;
        }
    }
}

/// The saved file itself still reads (the mutations start from a valid one).
#[test]
fn the_fuzzed_inputs_start_valid() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("saved.json");
    std::fs::write(&path, SAVED).unwrap();
    loopbench::results::read(&path).unwrap();
    let wat = dir.path().join("count.wat");
    std::fs::write(&wat, COUNT_WAT).unwrap();
    UserShape::load(&wat).unwrap();
}

fn line(r: &Response) -> String {
    serde_json::to_string(r).unwrap()
}

/// A worker that is not one: `sh -c SCRIPT` speaking (or not) the protocol.
/// Runs one shape with an in-process wasmi arm beside it; returns the fake
/// arm's error, after checking wasmi completed every rep.
fn fake_worker(script: &str) -> String {
    let ctx = ArmContext::new(&CounterSet::none(), Arc::new(Vec::new));
    let wasmi = ctx.make(&"wasmi".parse().unwrap(), "wasmi".into()).unwrap();
    let built = Built {
        bin: "sh".into(),
        args: vec!["-c".into(), script.into()],
        version: "fake".into(),
        family: "test",
        key: String::new(),
        identity: None,
        seconds: 0.0,
        compiled: false,
    };
    let spec: ArmSpec = "wasmi".parse().unwrap();
    let fake = WorkerArm::start(
        "fake".into(),
        &spec,
        "a shell script".into(),
        Ok(built),
        &ctx,
    );
    let params = Params {
        bytes: 64 << 10,
        iters: Some(256),
        k: 8,
    };
    let module = ShapeModule::build(shapes::lookup("add_chain").unwrap(), &params).unwrap();
    let arms: Vec<&dyn Arm> = vec![wasmi.as_ref(), &fake];
    let rounds = schedule::complete_rounds(2, 2);
    let order = EpochOrder::new(Design::Williams, 2, 0, None);
    let outcomes = schedule::run_shape(
        &module,
        &arms,
        &[None, None],
        1,
        rounds,
        &order,
        None,
        &mut (),
    );
    match &outcomes[0] {
        ArmOutcome::Ran(reps) => assert_eq!(reps.len(), rounds),
        _ => panic!("wasmi did not complete beside {script}"),
    }
    match &outcomes[1] {
        ArmOutcome::Failed { error, .. } => {
            let e = error.to_string();
            assert!(e.starts_with("shape add_chain, arm fake: "), "{e}");
            e
        }
        _ => panic!("the fake worker `{script}` did not fail"),
    }
}

#[test]
fn a_worker_sending_garbage_fails_its_arm_only() {
    let e = fake_worker("echo garbage");
    assert!(
        e.contains("the worker sent a malformed answer during startup: `garbage`"),
        "{e}"
    );
    // A huge garbage line is cut, so the report keeps one readable line.
    let e = fake_worker("head -c 100000 /dev/zero | tr '\\0' x; echo");
    let first = e.lines().next().unwrap();
    assert!(first.contains("malformed answer during startup"), "{e}");
    assert!(first.len() < 400, "{} characters", first.len());
}

#[test]
fn a_worker_closing_its_pipe_fails_its_arm_only() {
    let e = fake_worker("exit 3");
    assert!(
        e.contains("the worker exited during startup (exit status: 3)"),
        "{e}"
    );
    let ready = line(&Response::Ready {
        protocol: PROTOCOL,
        version: "fake".into(),
        proposals: Vec::new(),
    });
    let prepared = line(&Response::Prepared);
    // Closes its output after `prepare`, then after the first rep request.
    let e = fake_worker(&format!(
        "read l; echo '{ready}'; read l; exec >&-; sleep 1"
    ));
    assert!(e.contains("during prepare"), "{e}");
    let e = fake_worker(&format!(
        "read l; echo '{ready}'; read l; echo '{prepared}'; read l; exit 0"
    ));
    assert!(e.contains("the worker exited during rep 0"), "{e}");
    // Binary noise mid-protocol.
    let e = fake_worker(&format!(
        "read l; echo '{ready}'; read l; head -c 2000 /dev/urandom; exit 0"
    ));
    assert!(e.contains("during prepare"), "{e}");
}

#[test]
fn a_worker_reporting_an_impossible_time_fails_its_arm_only() {
    let ready = line(&Response::Ready {
        protocol: PROTOCOL,
        version: "fake".into(),
        proposals: Vec::new(),
    });
    let prepared = line(&Response::Prepared);
    let rep = line(&Response::Rep {
        ns: -5.0,
        counters: BTreeMap::new(),
        duet: None,
    });
    let e = fake_worker(&format!(
        "read l; echo '{ready}'; read l; echo '{prepared}'; read l; echo '{rep}'; read l"
    ));
    assert!(
        e.contains("the worker reported an impossible time for rep 0: -5 ns"),
        "{e}"
    );
}
