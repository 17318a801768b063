use crate::json::{self, Value};
use loopbench_probe::{
    Clock, Counter, Overhead, PhaseStats, Read, ReadCost, Report, Runs, Warning,
};
use std::time::Duration;

fn phase(name: &str, parent: Option<usize>, read: Read, ticks: u64, entries: u64) -> PhaseStats {
    PhaseStats {
        name: name.to_owned(),
        parent,
        read,
        ticks,
        entries,
    }
}

fn clock(invariant: Option<bool>) -> Clock {
    Clock {
        counter: Counter::Tsc,
        ticks_per_ns: 2.0,
        samples: vec![2.0, 2.0, 2.0],
        window: Duration::from_millis(20),
        resolution: 1,
        invariant_tsc: invariant,
        nominal_ticks_per_ns: None,
    }
}

/// step(10000) > decode(3000), exec(5000) > mem[s](4600); gc(2500) at top
/// level. 100 ops. Integers throughout, so every derived number is exact.
fn sample() -> Report {
    Report {
        enabled: true,
        ops: 100,
        clock: Some(clock(Some(true))),
        overhead: Some(Overhead {
            fenced: ReadCost {
                empty_median: 10.0,
                empty_min: 8,
                per_entry: 30.0,
            },
            serialising: ReadCost {
                empty_median: 20.0,
                empty_min: 15,
                per_entry: 50.0,
            },
        }),
        phases: vec![
            phase("step", None, Read::Fenced, 10_000, 100),
            phase("decode", Some(0), Read::Fenced, 3_000, 100),
            phase("exec", Some(0), Read::Fenced, 5_000, 100),
            phase("mem", Some(2), Read::Serialising, 4_600, 50),
            phase("gc", None, Read::Fenced, 2_500, 10),
        ],
        subtract_overhead: false,
    }
}

#[test]
fn tree_structure() {
    let r = sample();
    assert_eq!(r.roots().collect::<Vec<_>>(), [0, 4]);
    assert_eq!(r.children(0).collect::<Vec<_>>(), [1, 2]);
    assert_eq!(r.children(2).collect::<Vec<_>>(), [3]);
    assert_eq!(r.children(3).count(), 0);
    assert_eq!([0, 1, 2, 3, 4].map(|i| r.depth(i)), [0, 1, 1, 2, 0]);
    assert_eq!(r.path(3), "step/exec/mem");
}

#[test]
fn per_op_share_and_unaccounted() {
    let r = sample();
    assert_eq!(r.total_ticks(), 12_500.0);
    assert_eq!(r.per_op(0), Some(100.0));
    assert_eq!(r.per_op(3), Some(46.0));
    assert_eq!(r.share(0), Some(80.0));
    assert_eq!(r.share(4), Some(20.0));
    assert_eq!(r.unaccounted(0), Some(2_000.0));
    assert_eq!(r.unaccounted_fraction(0), Some(0.2));
    assert_eq!(r.unaccounted(2), Some(400.0));
    assert_eq!(r.unaccounted(1), None);
}

#[test]
fn overhead_subtraction_is_entries_times_cost() {
    let r = sample().subtracting_overhead();
    // own: entries x empty_median of the phase's read;
    // children: entries x per_entry of each child's read.
    assert_eq!(r.ticks(3), 4_600.0 - 50.0 * 20.0);
    assert_eq!(r.ticks(1), 3_000.0 - 100.0 * 10.0);
    assert_eq!(r.ticks(2), 5_000.0 - 100.0 * 10.0 - 50.0 * 50.0);
    assert_eq!(r.ticks(0), 10_000.0 - 100.0 * 10.0 - 2.0 * 100.0 * 30.0);
    assert_eq!(r.ticks(4), 2_500.0 - 10.0 * 10.0);
    assert_eq!(r.total_ticks(), 3_000.0 + 2_400.0);
    // Unaccounted after subtraction: 3000 - (2000 + 1500) clamps at zero.
    assert_eq!(r.unaccounted(0), Some(0.0));
    // Never below zero.
    let mut tiny = sample().subtracting_overhead();
    tiny.phases[1].ticks = 5;
    assert_eq!(tiny.ticks(1), 0.0);
    // Without a measurement there is nothing to subtract.
    let mut none = sample().subtracting_overhead();
    none.overhead = None;
    assert_eq!(none.ticks(0), 10_000.0);
}

#[test]
fn warnings_name_what_is_wrong() {
    let w = sample().warnings();
    let kinds: Vec<&str> = w.iter().map(Warning::kind).collect();
    assert_eq!(kinds, ["unaccounted", "probe_dominated"], "{w:#?}");
    match &w[0] {
        Warning::Unaccounted {
            phase,
            fraction,
            probe_fraction,
        } => {
            assert_eq!(phase, "step");
            assert_eq!(*fraction, 0.2);
            assert_eq!(*probe_fraction, Some(0.5));
        }
        other => panic!("{other:?}"),
    }
    match &w[1] {
        Warning::ProbeDominated {
            phase,
            read,
            subtracted,
            ..
        } => {
            assert_eq!(phase, "step/decode");
            assert_eq!(*read, Read::Fenced);
            assert!(!subtracted);
            assert!(w[1].to_string().contains(".serialising()"));
        }
        other => panic!("{other:?}"),
    }

    // Just under 10% is not a warning; just over is.
    let mut r = sample();
    r.phases[0].ticks = 8_000 + 889;
    assert!(r.unaccounted_fraction(0).unwrap() > 0.1);
    assert!(r.warnings().iter().any(|w| w.kind() == "unaccounted"));
    r.phases[0].ticks = 8_000 + 800;
    assert!(r.unaccounted_fraction(0).unwrap() < 0.1);
    assert!(!r.warnings().iter().any(|w| w.kind() == "unaccounted"));

    let mut r = sample();
    r.clock = Some(clock(Some(false)));
    assert!(r.warnings().contains(&Warning::TscNotInvariant));
    r.clock = Some(Clock {
        samples: vec![1.8, 2.0, 2.2],
        ..clock(Some(true))
    });
    assert!(r.warnings().iter().any(|w| w.kind() == "unsteady_clock"));

    let mut r = sample();
    r.ops = 0;
    assert_eq!(r.per_op(0), None);
    assert_eq!(r.warnings()[0], Warning::NoOps);
    r.phases.iter_mut().for_each(|p| p.entries = 0);
    assert_eq!(r.warnings()[0], Warning::NoEntries);
}

#[test]
fn text_is_an_indented_tree_with_unaccounted_rows() {
    let text = sample().to_text();
    let rows: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.starts_with("phase"))
        .skip(1)
        .take_while(|l| !l.starts_with("total"))
        .collect();
    let labels: Vec<&str> = rows
        .iter()
        .map(|l| l.split("  ").find(|s| !s.is_empty()).unwrap_or(""))
        .collect();
    assert_eq!(
        labels,
        [
            "step",
            "decode",
            "exec",
            "mem [s]",
            "(unaccounted)",
            "(unaccounted)",
            "gc"
        ],
        "{text}"
    );
    assert!(rows[0].starts_with("step "), "{text}");
    assert!(rows[1].starts_with("  decode "), "{text}");
    assert!(rows[3].starts_with("    mem [s] "), "{text}");
    assert!(rows[4].starts_with("    (unaccounted)"), "{text}");
    assert!(rows[4].contains("(8.0% of exec)"), "{text}");
    assert!(rows[5].starts_with("  (unaccounted)"), "{text}");
    assert!(rows[5].contains("<- 20.0% of step, over 10%"), "{text}");
    assert!(
        rows[0].contains("100.0") && rows[0].contains("80.0%"),
        "{text}"
    );
    assert!(text.contains("cycles/op"), "{text}");
    assert!(text.contains("1 cycle = 0.500 ns"), "{text}");
    assert!(text.contains("reference cycles, not core cycles"), "{text}");
    assert!(text.contains("invariant TSC: yes"), "{text}");
    assert!(
        text.contains("fenced 10 cycles (min 8), serialising 20 cycles (min 15)"),
        "{text}"
    );
    assert!(text.contains("[s] = serialising read"), "{text}");
    assert!(
        text.contains("total") && text.contains("125.0  cycles/op = 62.5 ns/op"),
        "{text}"
    );
    assert!(text.contains("warnings:"), "{text}");
    assert!(sample()
        .subtracting_overhead()
        .to_text()
        .contains("overhead subtracted"));
    assert_eq!(format!("{}", sample()), text);
}

#[test]
fn json_parses_and_carries_the_numbers() {
    let r = sample();
    let v = json::parse(&r.to_json()).unwrap_or_else(|e| panic!("{e}\n{}", r.to_json()));
    assert_eq!(v.get("enabled"), &Value::Bool(true));
    assert_eq!(v.get("ops").num(), 100.0);
    assert_eq!(v.get("unit").str(), "cycles");
    assert_eq!(v.get("counter").get("reference_cycles"), &Value::Bool(true));
    assert_eq!(v.get("counter").get("ns_per_tick").num(), 0.5);
    assert_eq!(
        v.get("overhead").get("serialising").get("empty_min").num(),
        15.0
    );
    assert_eq!(v.get("overhead_subtracted"), &Value::Bool(false));
    let phases = v.get("phases");
    assert_eq!(phases.len(), 5);
    let mem = phases.at(3);
    assert_eq!(mem.get("path").str(), "step/exec/mem");
    assert_eq!(mem.get("parent").num(), 2.0);
    assert_eq!(mem.get("read").str(), "serialising");
    assert_eq!(mem.get("ticks").num(), 4_600.0);
    assert_eq!(mem.get("entries").num(), 50.0);
    assert_eq!(mem.get("unaccounted_ticks"), &Value::Null);
    assert_eq!(phases.at(0).get("parent"), &Value::Null);
    assert_eq!(phases.at(0).get("share").num(), 80.0);
    assert_eq!(phases.at(0).get("unaccounted_fraction").num(), 0.2);
    assert_eq!(v.get("warnings").len(), 2);
    assert_eq!(v.get("warnings").at(0).get("kind").str(), "unaccounted");
}

#[test]
fn json_escapes_hostile_names() {
    let names = [
        "quote\"d",
        "back\\slash",
        "new\nline\ttab",
        "\u{1}ctl",
        "ünï😀",
        "\u{2028}",
    ];
    let mut r = sample();
    for (p, name) in r.phases.iter_mut().zip(names) {
        p.name = name.to_owned();
    }
    let text = r.to_json();
    let v = json::parse(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    for (i, name) in names.iter().take(5).enumerate() {
        assert_eq!(v.get("phases").at(i).get("name").str(), *name);
    }
    assert!(!text.contains('\n') && !text.contains('\u{1}'));
}

#[test]
fn monotonic_clock_is_stated_in_nanoseconds() {
    let mut r = sample();
    r.clock = Some(Clock {
        counter: Counter::Monotonic,
        ticks_per_ns: 1.0,
        samples: vec![],
        ..clock(None)
    });
    let text = r.to_text();
    assert!(
        text.contains("ns/op") && text.contains("no calibration needed"),
        "{text}"
    );
    assert!(
        !text.contains("cycles") && !text.contains("invariant"),
        "{text}"
    );
    let v = json::parse(&r.to_json()).unwrap();
    assert_eq!(v.get("unit").str(), "ns");
    assert_eq!(
        v.get("counter").get("reference_cycles"),
        &Value::Bool(false)
    );
}

#[test]
fn non_finite_numbers_become_null() {
    let mut r = sample();
    r.clock = Some(Clock {
        ticks_per_ns: f64::NAN,
        samples: vec![],
        ..clock(None)
    });
    let v = json::parse(&r.to_json()).unwrap();
    assert_eq!(v.get("counter").get("ticks_per_ns"), &Value::Null);
    assert_eq!(v.get("counter").get("invariant_tsc"), &Value::Null);
}

#[test]
fn bad_parent_links_are_roots_not_panics() {
    let mut r = sample();
    r.phases[1].parent = Some(99);
    r.phases[0].parent = Some(3);
    r.phases[2].parent = Some(2);
    assert_eq!(r.roots().collect::<Vec<_>>(), [0, 1, 2, 4]);
    assert_eq!(r.depth(3), 1);
    let _ = r.to_text();
    json::parse(&r.to_json()).unwrap();
    let empty = Report {
        phases: vec![],
        ..sample()
    };
    assert_eq!(empty.total_ticks(), 0.0);
    assert_eq!(empty.share(0), None);
    let _ = empty.to_text();
    json::parse(&empty.to_json()).unwrap();
}

#[test]
fn disabled_report_says_so_in_every_format() {
    let r = Report::disabled();
    assert!(!r.enabled);
    assert_eq!(r.warnings(), [Warning::Disabled]);
    assert!(r.to_text().contains("probes disabled"), "{}", r.to_text());
    let v = json::parse(&r.to_json()).unwrap();
    assert_eq!(v.get("enabled"), &Value::Bool(false));
    assert_eq!(v.get("counter"), &Value::Null);
    assert_eq!(v.get("phases").len(), 0);
    assert_eq!(v.get("warnings").at(0).get("kind").str(), "disabled");
}

fn with_shares(step: u64, gc: u64) -> Report {
    let mut r = sample();
    r.phases[0].ticks = step;
    r.phases[4].ticks = gc;
    r
}

#[test]
fn runs_warn_on_unstable_shares_and_few_runs() {
    let mut runs = Runs::new();
    runs.push(with_shares(8_000, 2_000)); // step 80%
    runs.push(with_shares(7_600, 2_400)); // step 76%
    assert_eq!(runs.warnings(), [Warning::FewRuns { runs: 2 }]);
    runs.push(with_shares(8_100, 1_900)); // step 81%
    let shares = runs.shares();
    assert_eq!(shares[0].path, "step");
    assert_eq!(shares[0].shares, [Some(80.0), Some(76.0), Some(81.0)]);
    assert_eq!(shares[0].spread(), Some(5.0));
    assert!(runs.warnings().is_empty(), "{:?}", runs.warnings());

    runs.push(with_shares(7_000, 3_000)); // step 70%: spread 11 points
    let w = runs.warnings();
    assert_eq!(w.len(), 2, "{w:?}"); // step and gc move together
    assert_eq!(
        w[0],
        Warning::UnstableShare {
            phase: "step".into(),
            min: 70.0,
            max: 81.0
        }
    );
    let text = runs.to_text();
    assert!(text.contains("run 4") && text.contains("11.0pp"), "{text}");
    let v = json::parse(&runs.to_json()).unwrap();
    assert_eq!(v.get("runs").len(), 4);
    assert_eq!(v.get("shares").at(0).get("spread_points").num(), 11.0);
    assert_eq!(v.get("warnings").len(), 2);
}

#[test]
fn runs_match_phases_by_path() {
    let mut runs = Runs::new();
    runs.push(sample());
    let mut other = sample();
    other.phases.pop(); // no gc in this run
    runs.push(other);
    let gc = runs.shares().into_iter().find(|s| s.path == "gc").unwrap();
    assert_eq!(gc.shares, [Some(20.0), None]);
    assert_eq!(gc.spread(), None);
}
