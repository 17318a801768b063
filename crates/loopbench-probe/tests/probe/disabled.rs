//! The `enabled` feature is off: prove the probes are gone, not just idle.

use loopbench_probe::{count_ops, flush, phases, probe, reset, Guard, Phase, Report, Warning};
use std::mem::{align_of, needs_drop, size_of};

phases! {
    static OUTER = "outer";
    static INNER = "inner" in OUTER, serialising;
}

/// Checked by the compiler: if any of these stopped holding, this test
/// binary would not build. The runtime asserts repeat them for the test log.
const _: () = {
    assert!(size_of::<Phase>() == 0);
    assert!(size_of::<Guard>() == 0);
    assert!(align_of::<Phase>() == 1);
    assert!(!needs_drop::<Guard>());
    assert!(!loopbench_probe::ENABLED);
};

#[test]
fn phase_and_guard_are_zero_sized_and_guard_has_no_destructor() {
    assert_eq!(size_of::<Phase>(), 0, "a disabled phase holds no counters");
    assert_eq!(size_of::<Guard>(), 0, "a disabled guard holds no timestamp");
    assert_eq!(align_of::<Phase>(), 1, "no cache-line padding either");
    assert!(
        !needs_drop::<Guard>(),
        "a disabled guard must not run any code when it goes out of scope"
    );
    // A static of phases takes no space in the binary's data either.
    static MANY: [Phase; 1000] = [const { Phase::new("x") }; 1000];
    assert_eq!(size_of_val(&MANY), 0);
}

#[test]
fn probes_record_nothing_and_the_report_says_disabled() {
    for i in 0..1_000u64 {
        let _outer = OUTER.enter();
        let x = probe!(INNER, { i * 2 });
        assert_eq!(x, i * 2, "probe! still evaluates to its block");
        count_ops(1);
    }
    flush();
    reset();
    loopbench_probe::calibrate();
    let report = Report::capture();
    assert_eq!(report, Report::disabled());
    assert!(!report.enabled);
    assert_eq!(report.ops, 0);
    assert!(report.phases.is_empty());
    assert!(report.clock.is_none() && report.overhead.is_none());
    assert_eq!(report.warnings(), [Warning::Disabled]);
    assert!(report.to_text().contains("probes disabled"));
    assert!(report.to_json().contains("\"enabled\":false"));
}
