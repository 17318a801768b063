//! The `enabled` feature is on: counts are real and exact.

use crate::exclusive;
use crate::json;
use loopbench_probe::{
    count_ops, flush, phases, probe, reset, Guard, Phase, Read, Report, Warning,
};
use std::hint::black_box;
use std::mem::{align_of, needs_drop, size_of};

phases! {
    static STEP = "it/step";
    static DECODE = "it/decode" in STEP;
    static EXEC = "it/exec" in STEP;
    static MEM = "it/mem" in EXEC, serialising;
    static LONE = "it/lone";
}

fn find<'a>(report: &'a Report, name: &str) -> (usize, &'a loopbench_probe::PhaseStats) {
    report
        .phases
        .iter()
        .enumerate()
        .find(|(_, p)| p.name == name)
        .unwrap_or_else(|| panic!("no phase {name} in\n{report}"))
}

#[test]
fn enabled_types_carry_counters() {
    const { assert!(loopbench_probe::ENABLED) };
    assert!(needs_drop::<Guard>(), "an enabled guard records on drop");
    assert!(size_of::<Guard>() > 0);
    assert!(
        size_of::<Guard>() <= 16,
        "guard is a timestamp and a pointer"
    );
    assert!(align_of::<Phase>() >= 64, "totals are cache-line padded");
}

#[test]
fn entries_and_ops_are_exact_and_nested_as_declared() {
    let _lock = exclusive();
    reset();
    for i in 0..1_000u64 {
        let _step = STEP.enter();
        probe!(DECODE, { black_box(i) });
        probe!(EXEC, {
            if i % 4 == 0 {
                probe!(MEM, { black_box(i) });
            }
        });
        count_ops(1);
    }
    count_ops(24);
    let report = Report::capture();
    assert!(report.enabled);
    assert_eq!(report.ops, 1_024);

    let (step, s) = find(&report, "it/step");
    let (decode, d) = find(&report, "it/decode");
    let (exec, e) = find(&report, "it/exec");
    let (mem, m) = find(&report, "it/mem");
    assert_eq!(
        [s.entries, d.entries, e.entries, m.entries],
        [1_000, 1_000, 1_000, 250]
    );
    assert_eq!(report.parent(step), None);
    assert_eq!(report.parent(decode), Some(step));
    assert_eq!(report.parent(exec), Some(step));
    assert_eq!(report.parent(mem), Some(exec));
    assert_eq!(m.read, Read::Serialising);
    assert_eq!(d.read, Read::Fenced);
    assert!(
        step < decode && step < exec && exec < mem,
        "parents come first"
    );
    assert_eq!(report.path(mem), "it/step/it/exec/it/mem");
    assert!(report.unaccounted(step).is_some());
    assert!(report.unaccounted(mem).is_none());

    // The probe's own phases never show up.
    assert!(report
        .phases
        .iter()
        .all(|p| !p.name.starts_with("loopbench-probe/")));

    // What the machine could not promise is stated, not hidden.
    let clock = report.clock.as_ref().expect("enabled report has a clock");
    assert_eq!(clock.invariant_tsc.is_some(), cfg!(target_arch = "x86_64"));
    assert!(report.overhead.is_some());
    json::parse(&report.to_json()).unwrap();
    let text = report.to_text();
    assert!(
        text.contains("it/decode") && text.contains("(unaccounted)"),
        "{text}"
    );
}

#[test]
fn reset_zeroes_and_phases_never_entered_are_absent() {
    let _lock = exclusive();
    reset();
    for _ in 0..10 {
        let _g = LONE.enter();
        count_ops(1);
    }
    let first = Report::capture();
    assert_eq!(find(&first, "it/lone").1.entries, 10);
    assert_eq!(first.ops, 10);

    reset();
    let second = Report::capture();
    assert_eq!(find(&second, "it/lone").1.entries, 0);
    assert_eq!(second.ops, 0);

    static NEVER: Phase = Phase::new("it/never");
    let _ = &NEVER;
    assert!(second.phases.iter().all(|p| p.name != "it/never"));
}

#[test]
fn counts_stay_on_the_thread_until_flushed() {
    let _lock = exclusive();
    reset();
    static HELD: Phase = Phase::new("it/held");
    let (tx, rx) = std::sync::mpsc::channel();
    let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
    let worker = std::thread::spawn(move || {
        for _ in 0..7 {
            let _g = HELD.enter();
        }
        count_ops(7);
        tx.send(()).ok();
        done_rx.recv().ok();
        flush();
        tx.send(()).ok();
        done_rx.recv().ok();
    });
    rx.recv().unwrap();
    let before = Report::capture();
    assert!(before
        .phases
        .iter()
        .all(|p| p.name != "it/held" || p.entries == 0));
    assert_eq!(before.ops, 0);
    done_tx.send(()).unwrap();
    rx.recv().unwrap();
    let after = Report::capture();
    assert_eq!(find(&after, "it/held").1.entries, 7);
    assert_eq!(after.ops, 7);
    done_tx.send(()).unwrap();
    worker.join().unwrap();
    reset();
}

#[test]
fn warnings_from_a_real_capture_are_well_formed() {
    let _lock = exclusive();
    reset();
    {
        let _g = LONE.enter();
    }
    let report = Report::capture();
    assert!(report.warnings().contains(&Warning::NoOps));
    reset();
}
