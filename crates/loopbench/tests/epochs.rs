//! Layout epochs, end to end with the real binary: every epoch runs its
//! arms in fresh worker processes, a worker that dies is reported for its
//! arm while the session completes, and the stop rule stops where it says.
//! The mock engine's synthetic costs make every number exact; nothing here
//! depends on the clock.

use assert_cmd::Command;
use loopbench::results::{self, Document, Session};
use std::collections::BTreeSet;

/// `loopbench run ARGS --json` in a fresh directory with its own history:
/// the session it wrote, whether it succeeded, and its stderr. Seeded
/// (`--seed 1` unless ARGS give one), so the order, and with it which mock
/// instance draws which noise, is the same every time.
pub(crate) fn run(args: &[&str], env: &[(&str, &str)]) -> (Session, bool, String) {
    if args.contains(&"--seed") {
        return run_as_given(args, env);
    }
    run_as_given(&[args, &["--seed", "1"]].concat(), env)
}

/// [`run`] without a seed unless ARGS give one: the session draws its own.
fn run_as_given(args: &[&str], env: &[(&str, &str)]) -> (Session, bool, String) {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.json");
    let mut cmd = Command::cargo_bin("loopbench").unwrap();
    cmd.current_dir(dir.path())
        .env("LOOPBENCH_DB", dir.path().join("history.sqlite"))
        .arg("run")
        .args(args)
        .arg("--json")
        .arg(&out);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let o = cmd.output().unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr).to_string();
    assert!(!stderr.contains("panicked"), "{stderr}");
    let Document::Session(s) = results::read(&out).unwrap() else {
        panic!("not a session");
    };
    (s, o.status.success(), stderr)
}

const SMALL: &[&str] = &[
    "--shapes",
    "add_chain",
    "--bytes",
    "64k",
    "--iters",
    "256",
    "--rounds",
    "4",
    "--warmup",
    "1",
];

fn args<'a>(extra: &[&'a str]) -> Vec<&'a str> {
    let mut a: Vec<&str> = SMALL.to_vec();
    a.extend_from_slice(extra);
    a
}

#[test]
fn every_epoch_runs_every_arm_in_a_fresh_process() {
    let (s, ok, err) = run(
        &args(&[
            "--engines",
            "mock:cost=10,mock:cost=20",
            "--min-epochs",
            "4",
            "--max-epochs",
            "4",
        ]),
        &[],
    );
    assert!(ok, "{err}");
    assert_eq!(s.session.isolation.as_deref(), Some("workers"));
    assert_eq!(s.epochs.len(), 4);
    let mut all = BTreeSet::new();
    for e in &s.epochs {
        assert_eq!(e.pids.len(), 3, "two arms and the null control: {e:?}");
        for pid in e.pids.values() {
            assert!(all.insert(*pid), "pid {pid} served two arms or two epochs");
        }
    }
    assert!(!all.contains(&std::process::id()));
    let r = &s.results[0];
    // 3 arms: 4 rounds round up to 6 (two Williams squares), per epoch.
    for a in &r.arms {
        assert_eq!(a.verified_reps, 6 * 4, "{}", a.arm);
        let epochs: BTreeSet<u32> = a.reps.iter().map(|r| r.epoch).collect();
        assert_eq!(epochs, (0..4).collect());
    }
    let c = &r.comparisons[0];
    assert!((c.ratio - 2.0).abs() < 1e-12);
    assert_eq!(c.layout.epochs, 4);
    assert!(c.layout.includes_layout);
}

#[test]
fn a_worker_that_dies_is_reported_for_its_arm_and_the_session_completes() {
    let (s, ok, err) = run(
        &args(&[
            "--engines",
            "mock:cost=10,mock:cost=20",
            "--min-epochs",
            "3",
            "--max-epochs",
            "3",
        ]),
        // The worker of mock:cost=20 exits when asked for its 3rd rep.
        &[("LOOPBENCH_WORKER_EXIT", "mock:cost=20@3")],
    );
    assert!(!ok, "an arm failed, so the exit status says so");
    assert!(s.complete, "the session still completed");
    assert!(err.contains("mock:cost=20"), "{err}");
    let r = &s.results[0];
    let failed = r.arms.iter().find(|a| a.arm == "mock:cost=20").unwrap();
    let e = failed.error.as_deref().unwrap();
    assert!(e.contains("epoch 0"), "{e}");
    // Warm-up rep 0 and measured reps 1 and 2 verified before the crash; it
    // runs no further epoch.
    assert_eq!(failed.verified_reps, 2);
    for a in r.arms.iter().filter(|a| a.arm != "mock:cost=20") {
        assert_eq!(a.error, None);
        assert_eq!(a.verified_reps, 6 * 3, "{}", a.arm);
    }
    assert_eq!(s.errors.len(), 1, "{:?}", s.errors);
}

fn in_process(extra: &[&str]) -> Session {
    let mut a = args(&["--in-process"]);
    a.extend_from_slice(extra);
    let (s, ok, err) = run(&a, &[]);
    assert!(ok, "{err}");
    s
}

#[test]
fn exact_costs_are_decided_at_the_minimum_epochs() {
    let s = in_process(&[
        "--engines",
        "mock:cost=10,mock:cost=13",
        "--min-epochs",
        "3",
    ]);
    let st = s.results[0].stopped.as_ref().unwrap();
    // A 30% change with an exact interval is changed at once (rule 16).
    assert_eq!(st.reason, "every comparison decided");
    assert_eq!(st.epochs, 3);
    assert_eq!(st.half_width_pct, Some(0.0));
    assert_eq!(s.epochs.len(), 3);
}

#[test]
fn a_noisy_shape_stops_when_its_budget_is_spent() {
    let s = in_process(&[
        "--engines",
        // No change under 30% noise and a precision no interval reaches:
        // unsure until the budget ends it.
        "mock:cost=10,noise=0.3,mock:cost=10,noise=0.3,seed=1",
        "--min-epochs",
        "2",
        "--precision",
        "0.001",
        "--budget",
        "0.3",
        // A release build runs these tiny epochs in about a millisecond.
        "--max-epochs",
        "1000000",
    ]);
    let st = s.results[0].stopped.as_ref().unwrap();
    assert_eq!(st.reason, "budget exhausted");
    assert!(st.seconds >= 0.3, "{st:?}");
    assert!(st.epochs >= 2);
    assert!(st.half_width_pct.unwrap() > 0.001);
}

#[test]
fn the_epoch_limit_is_said_when_nothing_else_stops_it() {
    let s = in_process(&[
        "--engines",
        "mock:cost=10,noise=0.3,mock:cost=13,noise=0.3",
        "--min-epochs",
        "2",
        "--max-epochs",
        "3",
        "--precision",
        "0.001",
        "--budget",
        "1000",
    ]);
    let st = s.results[0].stopped.as_ref().unwrap();
    assert_eq!(st.reason, "epoch limit");
    assert_eq!(st.epochs, 3);
}

/// A session of schema 1 (one process, no epochs) reads back, and reads as
/// one epoch whose intervals say they have no layout component.
#[test]
fn every_schema_written_so_far_reads_back() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/schema1/session.json");
    let Document::Session(s) = results::read(&path).unwrap() else {
        panic!("not a session");
    };
    assert_eq!(s.schema, "loopbench/1");
    assert!(s.epochs.is_empty());
    let r = s.results.iter().find(|r| r.shape == "call_direct").unwrap();
    let null = r.null_control.as_ref().unwrap();
    assert!(!null.layout.includes_layout);
    let by_epoch = r.arms[0].samples_by_epoch();
    assert_eq!(by_epoch.len(), 1);
    assert_eq!(by_epoch[&0].len(), 60);
    // And a schema 2 file written now reads back the same.
    let s2 = in_process(&["--engines", "mock:cost=10", "--min-epochs", "2"]);
    let text = serde_json::to_string(&s2).unwrap();
    let Document::Session(back) = results::parse(&text).unwrap() else {
        panic!("not a session");
    };
    assert_eq!(back.schema, "loopbench/2");
    assert_eq!(back.results[0].arms[0].reps, s2.results[0].arms[0].reps);
}

/// A shape no arm can run says so and takes no epochs; a session in which
/// nothing at all was measured fails, naming why.
#[test]
fn a_session_with_nothing_measured_fails_and_says_why() {
    let (s, ok, err) = run(
        &[
            "--engines",
            "wasmi",
            "--shapes",
            "shared_store_stream",
            "--bytes",
            "64k",
        ],
        &[],
    );
    assert!(!ok);
    assert!(
        err.contains("nothing was measured: every arm skips every shape"),
        "{err}"
    );
    assert!(err.contains("lacks threads"), "{err}");
    let st = s.results[0].stopped.as_ref().unwrap();
    assert_eq!((st.reason.as_str(), st.epochs), ("skipped by every arm", 0));
}

#[test]
fn a_reference_arm_anchors_every_result_and_the_gate_fails_on_a_change() {
    // 10 against 13 is +30% exactly; the reference at 20 makes the
    // baseline -50% and the candidate -35% exactly.
    let base = [
        "--in-process",
        "--engines",
        "mock:cost=10,mock:cost=13",
        "--reference",
        "mock:cost=20",
        "--min-epochs",
        "3",
    ];
    let (s, ok, err) = run(
        &args(&[&base[..], &["--fail-on", "slower:20"]].concat()),
        &[],
    );
    assert!(!ok, "+30% fails a 20% gate: {err}");
    assert!(
        err.contains("gate FAILED (slower by more than 20%): 1 of 1 comparisons"),
        "{err}"
    );
    let gate = s.gate.as_ref().unwrap();
    assert!(
        gate.failed && gate.failing[0].starts_with("add_chain mock:cost=13: +30.0"),
        "{gate:?}"
    );
    assert_eq!(s.session.reference.as_deref(), Some("mock:cost=20"));
    let r = &s.results[0];
    let role = |arm: &str| r.arms.iter().find(|a| a.arm == arm).unwrap().role;
    assert_eq!(role("mock:cost=20"), loopbench::results::Role::Reference);
    let anchored: Vec<(String, f64)> = r
        .anchored
        .iter()
        .map(|c| (c.arm.clone(), (c.median_pct * 1e6).round() / 1e6))
        .collect();
    assert_eq!(
        anchored,
        [
            ("mock:cost=10".to_string(), -50.0),
            ("mock:cost=13".to_string(), -35.0)
        ]
    );
    // The reference is not a comparison to decide: no outcome, not gated,
    // and the stop rule decided on the candidate alone.
    let reference = r
        .comparisons
        .iter()
        .find(|c| c.arm == "mock:cost=20")
        .unwrap();
    assert_eq!(reference.outcome, None);
    assert_eq!(
        r.stopped.as_ref().unwrap().reason,
        "every comparison decided"
    );
    // A looser gate, or the other direction, passes.
    for rule in ["slower:40", "faster"] {
        let (s, ok, err) = run(&args(&[&base[..], &["--fail-on", rule]].concat()), &[]);
        assert!(ok, "{rule}: {err}");
        assert!(!s.gate.unwrap().failed);
    }
    // A reference that is one of the arms stays a candidate.
    let (s, ok, err) = run(
        &args(&[
            "--in-process",
            "--engines",
            "mock:cost=10,mock:cost=13",
            "--reference",
            "mock:cost=13",
            "--min-epochs",
            "3",
        ]),
        &[],
    );
    assert!(ok, "{err}");
    let r = &s.results[0];
    assert_eq!(r.arms.len(), 3, "no extra arm: two and the null control");
    let c = r
        .comparisons
        .iter()
        .find(|c| c.arm == "mock:cost=13")
        .unwrap();
    assert!(c.outcome.is_some());
    assert_eq!(r.anchored.len(), 1, "the baseline against it");
}

/// Two shapes of SMALL's size, in this process.
fn two_shapes() -> Vec<&'static str> {
    [
        &["--shapes", "add_chain,load_stream", "--in-process"],
        &SMALL[2..],
    ]
    .concat()
}

#[test]
fn the_session_budget_stops_every_undecided_shape_after_two_epochs() {
    // Noise no interval gets under the precision: only a budget ends it.
    let (s, ok, err) = run(
        &[
            &two_shapes()[..],
            &[
                "--engines",
                "mock:cost=10,noise=0.3,mock:cost=10,noise=0.3,seed=1",
                "--precision",
                "0.01",
                "--min-epochs",
                "5",
                "--session-budget",
                "0.001",
            ][..],
        ]
        .concat(),
        &[],
    );
    assert!(ok, "{err}");
    assert_eq!(s.session.session_budget_s, Some(0.001));
    assert_eq!(s.epochs.len(), 2, "an interval needs two epochs first");
    for r in &s.results {
        let st = r.stopped.as_ref().unwrap();
        assert_eq!(
            st.reason, "the session's --session-budget is spent",
            "{}",
            r.shape
        );
        assert_eq!(st.epochs, 2);
    }
}

/// The two-shape mock session whose add_chain is decided at the look after
/// 24 epochs and load_stream only at 48 (seeded noise and order: exact).
fn staggered(extra: &[&str]) -> Session {
    let mut a = two_shapes();
    a.extend_from_slice(&[
        "--engines",
        "mock:cost=10,noise=0.2,mock:cost=10.4,noise=0.2,seed=1",
        "--precision",
        "0.5",
        "--min-epochs",
        "3",
        "--max-epochs",
        "60",
    ]);
    a.extend_from_slice(extra);
    let (s, ok, err) = run(&a, &[]);
    assert!(ok, "{err}");
    s
}

#[test]
fn a_decided_shape_waits_for_the_unsure_then_narrows_with_the_session_time() {
    // Without a session budget, decided is done.
    let s = staggered(&[]);
    let stops: Vec<(usize, &str)> = s
        .results
        .iter()
        .map(|r| {
            let st = r.stopped.as_ref().unwrap();
            (st.epochs, st.reason.as_str())
        })
        .collect();
    assert_eq!(
        stops,
        [
            (24, "every comparison decided"),
            (48, "every comparison decided")
        ]
    );

    // With one, add_chain sits out every other epoch while load_stream is
    // unsure, and takes every epoch again once nothing is.
    let s = staggered(&["--session-budget", "1000"]);
    for e in &s.epochs {
        let expected: &[&str] = if (24..48).contains(&e.epoch) && e.epoch % 2 == 1 {
            &["load_stream"]
        } else {
            &["add_chain", "load_stream"]
        };
        let ran: BTreeSet<&str> = e.shapes.iter().map(String::as_str).collect();
        assert_eq!(ran, expected.iter().copied().collect(), "epoch {}", e.epoch);
    }
    let add = s.results[0].stopped.as_ref().unwrap();
    assert_eq!(
        add.reason,
        "every comparison decided after 24 epochs, then narrowed with the session's time: epoch limit"
    );
    assert_eq!(add.epochs, 60 - (48 - 24) / 2);
}

#[test]
fn narrowing_ends_at_the_precision() {
    let (s, ok, err) = run(
        &args(&[
            "--in-process",
            "--engines",
            "mock:cost=10,noise=0.05,mock:cost=13,noise=0.05,seed=1",
            "--min-epochs",
            "3",
            "--session-budget",
            "1000",
            // Precision, not the clock, ends it however loaded the machine.
            "--budget",
            "1000",
        ]),
        &[],
    );
    assert!(ok, "{err}");
    let st = s.results[0].stopped.as_ref().unwrap();
    assert_eq!(
        st.reason,
        "every comparison decided after 3 epochs, then narrowed with the session's time: precision reached"
    );
    assert!(st.epochs > 3);
    assert!(st.half_width_pct.unwrap() <= 0.5, "{st:?}");
}

#[test]
fn every_session_draws_its_own_seed_unless_given_one() {
    // One seed for every session made every session draw the same
    // layouts, epoch by epoch: A/A sessions were not independent.
    let seed = |extra: &[&str]| {
        let (s, ok, err) = run_as_given(
            &args(&[&["--in-process", "--engines", "mock:cost=10"], extra].concat()),
            &[],
        );
        assert!(ok, "{err}");
        s.session.seed.unwrap()
    };
    assert_ne!(seed(&[]), seed(&[]));
    assert_eq!(seed(&["--seed", "7"]), 7);
    assert_eq!(seed(&["--seed", "7", "--order", "random"]), 7);
}
