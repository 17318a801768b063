//! Duet schedules end to end with the real binary: the baseline and each
//! other arm released together from the shared-memory barrier in two
//! worker processes, one per core, the cores swapped every round, and the
//! pairs kept together through the statistics. The mock engine's costs make
//! every ratio exact; nothing here asserts a time.

use assert_cmd::Command;
use loopbench::results::{RepRecord, Schedule, Session};
use std::collections::{BTreeMap, BTreeSet};

/// A duet session of add_chain on the mock engine, with `args` added.
fn run(args: &[&str], env: &[(&str, &str)]) -> (Session, bool, String) {
    let mut all = vec![
        "--shapes",
        "add_chain",
        "--bytes",
        "64k",
        "--iters",
        "256",
        "--warmup",
        "1",
        "--schedule",
        "duet",
    ];
    all.extend_from_slice(args);
    crate::epochs::run(&all, env)
}

/// Reps by (epoch, round, partner).
fn by_pair(reps: &[RepRecord]) -> BTreeMap<(u32, u32, String), &RepRecord> {
    let mut m = BTreeMap::new();
    for r in reps {
        let key = (
            r.epoch,
            r.round,
            r.partner.clone().expect("a duet rep names its partner"),
        );
        assert!(m.insert(key, r).is_none(), "two reps of one pair: {r:?}");
    }
    m
}

#[test]
fn every_arm_meets_the_baseline_once_a_round_on_the_other_core() {
    let (s, ok, err) = run(
        &[
            "--engines",
            "mock:cost=10,mock:cost=20",
            "--rounds",
            "4",
            "--min-epochs",
            "3",
            "--max-epochs",
            "3",
        ],
        &[],
    );
    assert!(ok, "{err}");
    let Some(Schedule::Duet { cores }) = s.session.schedule else {
        panic!("{:?}", s.session.schedule)
    };
    assert_ne!(cores[0], cores[1]);
    assert!(
        s.session.rotation.starts_with("duets:"),
        "{}",
        s.session.rotation
    );
    let r = &s.results[0];
    let arm = |label: &str| r.arms.iter().find(|a| a.arm == label).unwrap();
    let base = arm("mock:cost=10");
    let base_pairs = by_pair(&base.reps);
    // Two partners, 4 rounds (whole, even designs), 3 epochs.
    assert_eq!(base.verified_reps, 2 * 4 * 3);
    for label in ["mock:cost=20", "mock:cost=10#null"] {
        let a = arm(label);
        assert_eq!(a.verified_reps, 4 * 3, "{label}");
        for rep in &a.reps {
            assert_eq!(rep.partner.as_deref(), Some("mock:cost=10"), "{rep:?}");
            // The baseline's rep of the same round names this arm: the
            // pair carries one round index.
            let b = base_pairs[&(rep.epoch, rep.round, label.to_string())];
            let (core, bcore) = (rep.core.unwrap(), b.core.unwrap());
            assert_ne!(core, bcore, "a pair runs on two cores: {rep:?} {b:?}");
            assert!(cores.contains(&(core as usize)));
            // Each side's release minus the other's: one skew, two signs.
            assert_eq!(rep.skew_ns, b.skew_ns.map(|s| -s), "{rep:?} {b:?}");
        }
        // The cores swap every round.
        for e in 0..3 {
            let cores_by_round: Vec<u32> = (0..4)
                .map(|round| {
                    a.reps
                        .iter()
                        .find(|x| x.epoch == e && x.round == round)
                        .unwrap()
                        .core
                        .unwrap()
                })
                .collect();
            for w in cores_by_round.windows(2) {
                assert_ne!(w[0], w[1], "{label} epoch {e}: {cores_by_round:?}");
            }
        }
    }
    // The partners' order within a round changes (a design over partners).
    let firsts: BTreeSet<String> = base
        .reps
        .iter()
        .filter(|x| x.slot == 0)
        .map(|x| x.partner.clone().unwrap())
        .collect();
    assert_eq!(firsts.len(), 2, "{firsts:?}");
    // Pairs go through the statistics intact: exact mock costs, exact ratios.
    let c = r
        .comparisons
        .iter()
        .find(|c| c.arm == "mock:cost=20")
        .unwrap();
    assert!((c.ratio - 2.0).abs() < 1e-12, "{c:?}");
    let null = r.null_control.as_ref().unwrap();
    assert_eq!(null.median_pct, 0.0);
}

#[test]
fn a_partner_that_dies_leaves_the_baseline_free_and_the_session_completes() {
    let (s, ok, err) = run(
        &[
            "--engines",
            "mock:cost=10,mock:cost=20",
            "--rounds",
            "2",
            "--min-epochs",
            "2",
            "--max-epochs",
            "2",
        ],
        // The worker of mock:cost=20 exits when asked for its 2nd rep.
        &[("LOOPBENCH_WORKER_EXIT", "mock:cost=20@2")],
    );
    assert!(!ok, "an arm failed, so the exit status says so");
    assert!(s.complete, "{err}");
    let r = &s.results[0];
    let failed = r.arms.iter().find(|a| a.arm == "mock:cost=20").unwrap();
    assert!(failed.error.as_deref().unwrap().contains("epoch 0"));
    // The baseline was not left at the barrier: it and the null control
    // ran every duet of both epochs.
    let null = r
        .arms
        .iter()
        .find(|a| a.arm == "mock:cost=10#null")
        .unwrap();
    assert_eq!(null.error, None);
    assert_eq!(null.verified_reps, 2 * 2);
    let base = r.arms.iter().find(|a| a.arm == "mock:cost=10").unwrap();
    assert_eq!(base.error, None, "{err}");
    assert!(!err.contains("did not arrive"), "{err}");
}

#[test]
fn schedules_that_cannot_run_are_one_line_errors() {
    for (extra, says) in [
        (
            &["--schedule", "duet", "--in-process"][..],
            "drop --in-process",
        ),
        (&["--schedule", "duet", "--pin", "0"][..], "drop --pin"),
        (
            &["--schedule", "duet:0,0"][..],
            "two different core numbers",
        ),
        (&["--schedule", "duet:0,x"][..], "two core numbers"),
        (&["--schedule", "duet:0,4096"][..], "core 4096 is not one"),
        (
            &["--schedule", "trio"][..],
            "expected sequential, duet or duet:A,B",
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let out = Command::cargo_bin("loopbench")
            .unwrap()
            .current_dir(dir.path())
            .env("LOOPBENCH_DB", dir.path().join("history.sqlite"))
            .args(["run", "--engines", "mock:cost=10", "--shapes", "add_chain"])
            .args(extra)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{extra:?}");
        let e = String::from_utf8_lossy(&out.stderr);
        assert!(!e.contains("panicked"), "{e}");
        let lines: Vec<&str> = e.lines().filter(|l| l.starts_with("error: ")).collect();
        assert_eq!(lines.len(), 1, "{e}");
        assert!(lines[0].contains(says), "{extra:?}: {e}");
    }
}
