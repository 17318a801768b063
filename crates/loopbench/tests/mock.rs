//! Exact tests of scheduling, statistics and verdicts through the mock
//! engine: its costs are synthetic, so every number here is known in
//! advance and nothing depends on the clock.

use loopbench::arm::ArmSpec;
use loopbench::arm::{Arm, InProcessArm};
use loopbench::engines::mock::{take_calls, MockCall, MockConfig};
use loopbench::results::{self, Role, Session as Report, ShapeResult, StopSettings};
use loopbench::schedule;
use loopbench::session::{self, Isolation, Plan};
use loopbench::shapes::{self, Body, Params, ShapeModule};
use loopbench::stats::Verdict;

const ITERS: u64 = 256;

fn params() -> Params {
    Params {
        bytes: 64 << 10,
        iters: Some(ITERS),
        k: 8,
    }
}

/// Run `arms` (the first is the baseline) on one shape; also return the
/// mock's call log for the session.
fn run(shape: &str, arms: &[&str], rounds: usize, warmup: usize) -> (Report, Vec<MockCall>) {
    let _ = take_calls();
    // One epoch: these tests are about one epoch's rounds.
    let plan = in_process(shape, arms, rounds, warmup, 1, 1, 100.0);
    let report = session::run(plan, &mut ()).unwrap();
    (report, take_calls())
}

/// A plan of `arms` on `shape` in this process (the mock's call log and
/// instance numbers live here), taking `min_epochs` to `max_epochs` epochs
/// or stopping at `precision_pct`; no time budget.
fn in_process(
    shape: &str,
    arms: &[&str],
    rounds: usize,
    warmup: usize,
    min_epochs: usize,
    max_epochs: usize,
    precision_pct: f64,
) -> Plan {
    Plan {
        shapes: vec![shapes::find(shape).unwrap()],
        arms: arms.iter().map(|a| a.parse::<ArmSpec>().unwrap()).collect(),
        params: params(),
        rounds,
        warmup,
        isolation: Isolation::InProcess,
        rep_target: None,
        stop: StopSettings {
            min_epochs,
            max_epochs,
            precision_pct,
            budget_s: 1e9,
        },
        ..Default::default()
    }
}

/// The mock instance number of each arm (null control last) in the first
/// epoch of `report`: instances are made in the epoch's first-round order.
fn instances(report: &Report, calls: &[MockCall], arms: usize, warmup: usize) -> Vec<u64> {
    let first = calls.iter().map(|c| c.instance).min().unwrap();
    let order = schedule::EpochOrder::new(
        schedule::Design::Williams,
        arms,
        0,
        Some(report.session.seed.unwrap()),
    );
    let made = schedule::sequence(&order, warmup, 0);
    (0..arms)
        .map(|i| first + made.iter().position(|&a| a == i).unwrap() as u64)
        .collect()
}

fn arm<'r>(r: &'r ShapeResult, label: &str) -> &'r results::ArmResult {
    r.arms.iter().find(|a| a.arm == label).unwrap()
}

fn comparison<'r>(r: &'r ShapeResult, label: &str) -> &'r results::Comparison {
    r.comparisons.iter().find(|c| c.arm == label).unwrap()
}

/// Costs that differ by known factors give exactly those ratios, exact
/// intervals and the verdicts that follow; the null control sits at 0.
#[test]
fn known_costs_give_exact_ratios_and_verdicts() {
    let arms = [
        "mock:cost=10",
        "mock:cost=20",
        "mock:cost=5",
        "mock:cost=12.5",
    ];
    let (report, _) = run("add_chain", &arms, 8, 2);
    assert!(report.complete);
    assert!(report.errors.is_empty(), "{:?}", report.errors);
    // 4 arms + the null control: 8 rounds rounded up to 10.
    assert_eq!(report.session.rounds, 10);
    assert_eq!(report.session.null_arm, "mock:cost=10#null");
    let r = &report.results[0];
    assert_eq!(r.iters, ITERS);
    let roles: Vec<(&str, Role)> = r.arms.iter().map(|a| (a.arm.as_str(), a.role)).collect();
    assert_eq!(
        roles,
        [
            ("mock:cost=10", Role::Baseline),
            ("mock:cost=20", Role::Candidate),
            ("mock:cost=5", Role::Candidate),
            ("mock:cost=12.5", Role::Candidate),
            ("mock:cost=10#null", Role::Null),
        ]
    );
    for (label, cost) in [
        ("mock:cost=10", 10.0),
        ("mock:cost=20", 20.0),
        ("mock:cost=5", 5.0),
        ("mock:cost=12.5", 12.5),
        ("mock:cost=10#null", 10.0),
    ] {
        let a = arm(r, label);
        // Warm-up excluded: one verified rep per measured round.
        assert_eq!(a.verified_reps, 10, "{label}");
        assert_eq!(a.samples_ns_per_iter, vec![cost; 10], "{label}");
        let t = a.ns_per_iter.as_ref().unwrap();
        assert_eq!((t.min, t.median), (cost, cost), "{label}");
        assert!(a.version.starts_with("mock (synthetic costs; runs wasmi "));
        assert_eq!(a.error, None);
    }
    for (label, ratio, pct, verdict) in [
        ("mock:cost=20", 2.0, 100.0, Verdict::Slower),
        ("mock:cost=5", 0.5, -50.0, Verdict::Faster),
        ("mock:cost=12.5", 1.25, 25.0, Verdict::Slower),
        ("mock:cost=10#null", 1.0, 0.0, Verdict::WithinNoise),
    ] {
        let c = comparison(r, label);
        assert_eq!(c.vs, "mock:cost=10");
        assert_eq!(c.ratio, ratio, "{label}");
        assert_eq!(c.median_pct, pct, "{label}");
        assert_eq!(c.ci_pct, [pct, pct], "{label}");
        assert_eq!(c.verdict, verdict, "{label}");
    }
    let null = r.null_control.as_ref().unwrap();
    assert_eq!((null.median_pct, null.ci_pct), (0.0, [0.0, 0.0]));
    // The verdicts as the table and JSON spell them.
    assert_eq!(Verdict::Slower.to_string(), "slower");
    assert_eq!(Verdict::Faster.to_string(), "faster");
    assert_eq!(Verdict::WithinNoise.to_string(), "within noise");
}

/// Every round runs each arm once in the cyclic rotation, warm-up rounds
/// included, and the rep number is the round number.
#[test]
fn rounds_follow_the_rotation() {
    let arms = ["mock:cost=10", "mock:cost=20", "mock:cost=30"];
    let (warmup, rounds) = (3, 8);
    let (report, calls) = run("add_chain", &arms, 5, warmup);
    let n = arms.len() + 1;
    assert_eq!(report.session.rounds, rounds);
    assert_eq!(calls.len(), n * (warmup + rounds));
    let order = schedule::EpochOrder::new(
        schedule::Design::Williams,
        n,
        0,
        Some(report.session.seed.unwrap()),
    );
    // Instances are made in the order of the epoch's first round.
    let made = instances(&report, &calls, n, warmup);
    let instance = |i: usize| made[i];
    let expected: Vec<MockCall> = (0..warmup + rounds)
        .flat_map(|round| {
            schedule::sequence(&order, warmup, round)
                .into_iter()
                .map(move |i| MockCall {
                    instance: instance(i),
                    rep: round,
                })
        })
        .collect();
    assert_eq!(calls, expected);
    // Slot balance over the measured rounds: each arm in each slot equally.
    for a in &report.results[0].arms {
        assert_eq!(a.verified_reps, rounds);
    }
}

/// Arms are prepared in each epoch's first-round order, so the arm
/// prepared last (whose working set is warm when the rounds start) is a
/// different one from epoch to epoch, not always the null control.
#[test]
fn the_arm_prepared_last_changes_from_epoch_to_epoch() {
    let _ = take_calls();
    let arms = ["mock:cost=10", "mock:cost=20"];
    let epochs = 6;
    let plan = in_process("add_chain", &arms, 6, 1, epochs, epochs, 0.0);
    let seed = plan.seed;
    session::run(plan, &mut ()).unwrap();
    let calls = take_calls();
    let n = arms.len() + 1;
    let per_epoch = calls.len() / epochs;
    let mut last = std::collections::BTreeSet::new();
    for (e, epoch_calls) in calls.chunks(per_epoch).enumerate() {
        let order = schedule::EpochOrder::new(schedule::Design::Williams, n, e, Some(seed));
        let made = schedule::sequence(&order, 1, 0);
        // The first round runs in that order too: its instances, in the
        // order they were made, are the first round's calls.
        let first = epoch_calls.iter().map(|c| c.instance).min().unwrap();
        for (k, &arm) in made.iter().enumerate() {
            assert_eq!(
                epoch_calls[k].instance,
                first + k as u64,
                "epoch {e}, arm {arm}"
            );
        }
        last.insert(*made.last().unwrap());
    }
    assert!(
        last.len() > 1,
        "the same arm was prepared last in every epoch: {last:?}"
    );
}

/// A mock arm set to fail at rep N is reported for that arm, with the reps
/// it completed; the other arms run every round.
#[test]
fn a_failing_arm_is_reported_and_the_others_complete() {
    let arms = ["mock:cost=10", "mock:cost=20,fail=5", "mock:cost=30"];
    // 4 arms: 6 rounds rounded up to 8; 2 warm-up rounds, so rep 5 is the
    // fourth measured round and three measured reps were verified before.
    let (report, calls) = run("add_chain", &arms, 6, 2);
    assert!(report.complete);
    assert_eq!(report.errors.len(), 1, "{:?}", report.errors);
    let e = &report.errors[0];
    assert!(
        e.starts_with(
            "shape add_chain, arm mock:cost=20,fail=5: trap: mock: configured to fail at rep 5"
        ),
        "{e}"
    );
    let r = &report.results[0];
    let failed = arm(r, "mock:cost=20,fail=5");
    assert_eq!(failed.error.as_deref(), Some(e.as_str()));
    assert_eq!(failed.verified_reps, 3);
    assert_eq!(failed.samples_ns_per_iter, vec![20.0; 3]);
    for label in ["mock:cost=10", "mock:cost=30", "mock:cost=10#null"] {
        let a = arm(r, label);
        assert_eq!(a.verified_reps, 8, "{label}");
        assert_eq!(a.error, None);
    }
    // The failed arm is compared on the rounds it completed, but three
    // pairs are too few for a verdict (six are the fewest).
    let c = comparison(r, "mock:cost=20,fail=5");
    assert_eq!((c.ratio, c.verdict), (2.0, Verdict::TooFewPairs));
    // exp(mean log ratio): exact up to rounding.
    assert!((comparison(r, "mock:cost=30").ratio - 3.0).abs() < 1e-12);
    // It is not called again after the failing rep.
    let first = calls.iter().map(|c| c.instance).min().unwrap();
    let its: Vec<usize> = calls
        .iter()
        .filter(|c| c.instance == first + 1)
        .map(|c| c.rep)
        .collect();
    assert_eq!(its, (0..=5).collect::<Vec<_>>());
}

/// The samples are exactly the configured formula, per instance and rep,
/// with noise; the noise is the baseline's and the null control's own, so
/// the null control shows a floor, and a change smaller than it is
/// "within noise" while a large one is not.
#[test]
fn noise_gives_a_null_floor_and_verdicts_respect_it() {
    let base = "mock:cost=10,noise=0.05,seed=11";
    let small = "mock:cost=10,effect=0.001,noise=0.05,seed=11";
    let large = "mock:cost=10,effect=0.5,noise=0.05,seed=11";
    let (warmup, rounds) = (1, 40);
    let (report, calls) = run("add_chain", &[base, small, large], rounds, warmup);
    assert_eq!(report.session.rounds, rounds);
    let made = instances(&report, &calls, 4, warmup);
    let r = &report.results[0];
    let null_label = format!("{base}#null");
    for (i, label) in [base, small, large, null_label.as_str()]
        .into_iter()
        .enumerate()
    {
        let spec: ArmSpec = label.trim_end_matches("#null").parse().unwrap();
        let cfg = MockConfig::parse(&spec.options).unwrap();
        let expected: Vec<f64> = (warmup..warmup + rounds)
            .map(|rep| cfg.ns(ITERS, made[i], rep) / ITERS as f64)
            .collect();
        assert_eq!(arm(r, label).samples_ns_per_iter, expected, "{label}");
    }
    let null = r.null_control.as_ref().unwrap();
    assert!(null.ci_pct[0] < 0.0 && null.ci_pct[1] > 0.0, "{null:?}");
    assert_eq!(
        comparison(r, small).verdict,
        Verdict::WithinNoise,
        "{:?}",
        comparison(r, small)
    );
    let c = comparison(r, large);
    assert_eq!(c.verdict, Verdict::Slower, "{c:?}");
    assert!((c.median_pct - 50.0).abs() < 10.0, "{c:?}");
}

/// A fixed per-instance layout bias moves the null control by exactly the
/// ratio of the two instances' factors, with a zero-width interval: the
/// bias that more reps cannot remove.
#[test]
fn layout_bias_is_a_fixed_offset_per_instance() {
    let base = "mock:cost=10,layout=0.1,seed=5";
    let (report, calls) = run("add_chain", &[base], 4, 1);
    let made = instances(&report, &calls, 2, 1);
    let cfg = MockConfig::parse(&base.parse::<ArmSpec>().unwrap().options).unwrap();
    let b = cfg.ns(ITERS, made[0], 0) / ITERS as f64;
    let n = cfg.ns(ITERS, made[1], 0) / ITERS as f64;
    assert_ne!(b, n);
    let r = &report.results[0];
    assert!(arm(r, base).samples_ns_per_iter.iter().all(|&x| x == b));
    let null = r.null_control.as_ref().unwrap();
    let pct = (n / b - 1.0) * 100.0;
    assert_eq!((null.median_pct, null.ci_pct), (pct, [pct, pct]));
}

/// The mock runs the module for real: a shape whose loop body is disabled
/// still fails verification, and every shape it supports verifies.
#[test]
fn the_mock_runs_the_module_for_real() {
    let spec: ArmSpec = "mock:cost=3".parse().unwrap();
    let mock = InProcessArm::new(&spec, spec.to_string()).unwrap();
    let mut verified = 0;
    for shape in shapes::catalog() {
        let p = Params {
            iters: Some(shape.declared(&params()).per * 64),
            ..params()
        };
        let module = ShapeModule::build(shape, &p).unwrap();
        if loopbench::arm::skip_reason(&mock, &module)
            .unwrap()
            .is_some()
        {
            continue;
        }
        let mut prepared = mock.prepare(&module).unwrap();
        for rep in 0..2 {
            let done = prepared.rep(rep).unwrap();
            assert_eq!(done.reading.ns, 3.0 * module.iters as f64);
        }
        verified += 1;
        let mut disabled = ShapeModule::build(shapes::find(module.name()).unwrap(), &p).unwrap();
        disabled.wasm = wat::parse_str(disabled.shape.wat(&p, Body::Disabled)).unwrap();
        let err = mock
            .prepare(&disabled)
            .unwrap()
            .rep(0)
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with(&format!(
                "verify failed: shape {}, arm mock:cost=3, rep 0",
                module.name()
            )),
            "{err}"
        );
    }
    assert!(verified >= 14, "only {verified} shapes verified");
}

#[test]
fn bad_mock_options_are_one_line_errors() {
    for (arm, says) in [
        (
            "mock:cost=abc",
            "arm `mock:cost=abc`: mock option `cost=abc`: expected a number > 0 (cost=NS)",
        ),
        ("mock:noise=2", "expected a number in [0, 1)"),
        ("mock:speed=2", "unknown option `speed=2` for mock"),
        ("mock@1", "the mock engine is not built; give it a revision"),
    ] {
        // The grammar is the parser's; whether a build can be made is the
        // workers' check, which every command runs before any work.
        let e = match arm.parse::<ArmSpec>() {
            Err(e) => e.to_string(),
            Ok(spec) => loopbench::workers::check(&spec).unwrap_err().to_string(),
        };
        assert!(e.contains(says), "{arm}: {e}");
        assert!(!e.contains('\n'));
    }
    // Option values are not build syntax; the arm prints as written.
    let spec: ArmSpec = "mock:cost=12.5,seed=3".parse().unwrap();
    assert_eq!(spec.worker, None);
    assert_eq!(spec.to_string(), "mock:cost=12.5,seed=3");
}

/// The binary under test takes mock arms too, and its JSON carries the
/// exact ratio and verdict.
#[test]
fn the_binary_runs_mock_arms() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.json");
    assert_cmd::Command::cargo_bin("loopbench")
        .unwrap()
        .current_dir(dir.path())
        .env("LOOPBENCH_DB", dir.path().join("history.sqlite"))
        .args([
            "run",
            "--engines",
            "mock:cost=10,mock:cost=40",
            "--shapes",
            "add_chain",
            "--bytes",
            "64k",
            "--iters",
            "256",
            "--rounds",
            "3",
            "--warmup",
            "1",
            "--json",
        ])
        .arg(&out)
        .assert()
        .success();
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    let c = &v["results"][0]["comparisons"][0];
    assert_eq!(c["arm"], "mock:cost=40");
    assert_eq!(c["ratio"], 4.0);
    assert_eq!(c["verdict"], "slower");
    assert_eq!(v["results"][0]["null_control"]["median_pct"], 0.0);
    // Three arms: 3 rounds round up to 6 (a Williams design for an odd
    // count is two squares), in every epoch.
    let epochs = v["epochs"].as_array().unwrap().len();
    assert!(
        epochs >= 5,
        "the default minimum is five epochs, ran {epochs}"
    );
    assert_eq!(v["session"]["rounds"], 6);
    for a in v["results"][0]["arms"].as_array().unwrap() {
        assert_eq!(a["verified_reps"], 6 * epochs);
    }

    let failed = assert_cmd::Command::cargo_bin("loopbench")
        .unwrap()
        .current_dir(dir.path())
        .env("LOOPBENCH_DB", dir.path().join("history.sqlite"))
        .args(["run", "--engines", "mock:cost=abc", "--shapes", "add_chain"])
        .assert()
        .failure();
    let stderr = String::from_utf8_lossy(&failed.get_output().stderr).to_string();
    let errors: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("error: "))
        .collect();
    assert_eq!(errors.len(), 1, "{stderr}");
    assert!(errors[0].contains("mock option `cost=abc`"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

/// A session of `arms` on add_chain over 3 to 8 epochs, precision 0.5%.
fn decided_session(arms: &[&str]) -> ShapeResult {
    let plan = in_process("add_chain", arms, 6, 1, 3, 8, 0.5);
    session::run(plan, &mut ()).unwrap().results.remove(0)
}

/// Three outcomes (rule 16), and epochs where they decide something: a
/// changed or unchanged comparison stops its shape at --min-epochs, an
/// unsure one takes every epoch it may.
#[test]
fn unsure_comparisons_take_more_epochs_and_decided_ones_none() {
    use loopbench::stats::outcome::Outcome;
    let cases = [
        // Twice the cost under 30% noise: changed at once.
        (
            ["mock:cost=10,noise=0.3", "mock:cost=20,noise=0.3"],
            Outcome::Changed,
            3,
        ),
        // The same cost and no noise: an interval of [0, 0], unchanged.
        (["mock:cost=10", "mock:cost=10"], Outcome::Unchanged, 3),
        // 1% apart under 30% noise: neither, until the epoch limit.
        (
            ["mock:cost=10,noise=0.3", "mock:cost=10.1,noise=0.3"],
            Outcome::Unsure,
            8,
        ),
    ];
    for (arms, outcome, epochs) in cases {
        let r = decided_session(&arms);
        let c = r.comparisons.iter().find(|c| c.arm == arms[1]).unwrap();
        assert_eq!(c.outcome, Some(outcome), "{arms:?}: {c:?}");
        assert_eq!(c.precision_pct, Some(0.5));
        let stopped = r.stopped.as_ref().unwrap();
        assert_eq!(stopped.epochs, epochs, "{arms:?}: {stopped:?}");
        let reason = if outcome == Outcome::Unsure {
            "epoch limit"
        } else {
            "every comparison decided"
        };
        assert!(
            stopped.reason.starts_with(reason),
            "{arms:?}: {}",
            stopped.reason
        );
        // The nulls are the floor, not an outcome.
        let null = r
            .comparisons
            .iter()
            .find(|c| c.arm.ends_with("#null"))
            .unwrap();
        assert_eq!(null.outcome, None);
    }
}

/// Stopping at the first look that decides must not invent changes: 200
/// sessions of a candidate equal to its baseline (noise and a per-process
/// layout bias, different seeds), up to 40 epochs with looks at 5, 10, 20
/// and 40, end "changed" no more often than a 95% interval allows.
/// (Stopping at the first epoch whose 95% verdict is a change: 20 of 200
/// here; with the looks: 6.)
#[test]
fn stopping_when_decided_does_not_inflate_false_changes() {
    let mut changed = 0;
    for seed in 0..200 {
        let arms = [
            format!("mock:cost=10,noise=0.2,layout=0.02,seed={seed}"),
            format!("mock:cost=10,noise=0.2,layout=0.02,seed={}", seed + 1000),
        ];
        let plan = Plan {
            shapes: vec![shapes::find("add_chain").unwrap()],
            arms: arms.iter().map(|a| a.parse::<ArmSpec>().unwrap()).collect(),
            params: params(),
            rounds: 4,
            warmup: 0,
            isolation: Isolation::InProcess,
            rep_target: None,
            stop: StopSettings {
                min_epochs: 5,
                max_epochs: 40,
                precision_pct: 0.5,
                budget_s: 1e9,
            },
            ..Default::default()
        };
        let r = session::run(plan, &mut ()).unwrap().results.remove(0);
        let c = r.comparisons.iter().find(|c| c.arm == arms[1]).unwrap();
        if c.outcome == Some(loopbench::stats::outcome::Outcome::Changed) {
            changed += 1;
        }
    }
    // At a true 5% rate, 10 of 200 is the expectation.
    assert!(changed <= 10, "{changed} of 200 A/A sessions ended changed");
}
