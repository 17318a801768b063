//! Many threads, each with its own known number of ops and entries: the
//! totals are their exact sums, whether threads flush on exit or by hand.

use crate::exclusive;
use loopbench_probe::{count_ops, flush, phases, reset, Report};
use std::hint::black_box;
use std::thread;

phases! {
    static WORK = "mt/work";
    static PART = "mt/part" in WORK;
}

fn worker(t: u64, explicit_flush: bool) {
    let ops = 1_000 + 137 * t;
    for i in 0..ops {
        let _w = WORK.enter();
        if i % (t + 1) == 0 {
            let _p = PART.enter();
            black_box(i);
        }
        count_ops(1);
    }
    if explicit_flush {
        flush();
    }
}

fn expected(threads: u64) -> (u64, u64) {
    let ops: u64 = (0..threads).map(|t| 1_000 + 137 * t).sum();
    let parts: u64 = (0..threads)
        .map(|t| (1_000 + 137 * t).div_ceil(t + 1))
        .sum();
    (ops, parts)
}

fn run(threads: u64, explicit_flush: bool) {
    let _lock = exclusive();
    reset();
    let handles: Vec<_> = (0..threads)
        .map(|t| thread::spawn(move || worker(t, explicit_flush)))
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    let report = Report::capture();
    let (ops, parts) = expected(threads);
    let entries = |name: &str| {
        report
            .phases
            .iter()
            .find(|p| p.name == name)
            .map(|p| p.entries)
            .unwrap_or_else(|| panic!("no {name} in\n{report}"))
    };
    assert_eq!(report.ops, ops);
    assert_eq!(entries("mt/work"), ops);
    assert_eq!(entries("mt/part"), parts);
    reset();
}

#[test]
fn threads_flush_on_exit() {
    run(6, false);
}

#[test]
fn threads_flush_by_hand() {
    run(4, true);
}
