//! TSC reference cycles around the timed call: the harness's [`Counter`]
//! adapter over the probe crate's reader ([`loopbench_probe::counter`]).
//!
//! The time-stamp counter ticks at a fixed reference rate, not at the core's
//! current clock: these are *reference cycles*, a fine-grained clock, not core
//! cycles (those come from the perf counters where a PMU exists). We take
//! them because every x86_64 and aarch64 machine has them, VMs included.
//!
//! The reads are the probe crate's [`Read::Serialising`] ones (x86_64:
//! `lfence; rdtsc; lfence` to open, `rdtscp; lfence` to close; aarch64:
//! `CNTVCT_EL0` framed by barriers). The counter must be usable as a
//! fixed-rate clock ([`counter::check_fixed_rate`]: an invariant TSC with
//! RDTSCP, or a set `CNTFRQ_EL0`); otherwise we refuse it with the reason.
//! The rate is the probe crate's process-wide calibration against the
//! monotonic clock (or `CNTFRQ_EL0` where the hardware declares it).
//!
//! What is ours: what the window holds besides the call (the two counter
//! reads and the meter's two clock reads: the median of 1001 empty meter
//! start/stop pairs) is subtracted from every reading.

use super::{Counter, MeasureError, Meter};
use loopbench_probe::counter::{self, Read};
use std::sync::OnceLock;

/// Name of the reading, in reports and JSON.
pub const NAME: &str = "tsc_cycles";

/// What calibration found; shared by every counter of the session.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TscInfo {
    /// Ticks per second, calibrated against the monotonic clock.
    pub hz: f64,
    /// Ticks of an empty start/stop pair (median), subtracted from readings.
    pub overhead: u64,
    /// Where `hz` came from.
    pub source: &'static str,
}

impl TscInfo {
    pub fn describe(&self) -> String {
        format!(
            "TSC reference cycles (a fixed-rate clock, not core cycles) at {:.1} MHz ({}); read overhead {} ticks subtracted",
            self.hz / 1e6,
            self.source,
            self.overhead
        )
    }
}

/// Median ticks of an empty meter start/stop pair: the two counter reads
/// plus the meter's two monotonic-clock reads, which sit inside the TSC
/// window around every timed call.
pub fn read_overhead() -> u64 {
    let mut meter = Meter::new(vec![Box::new(TscCounter {
        overhead: 0,
        started: 0,
    })]);
    let mut v: Vec<u64> = (0..1001)
        .map(|_| {
            meter.start();
            meter.stop();
            meter.take().counters.get(NAME).copied().unwrap_or(0.0) as u64
        })
        .collect();
    v.sort_unstable();
    v[v.len() / 2]
}

/// Check, calibrate and measure the overhead, once per process. The check
/// and the rate come from the probe crate's reader (its calibration is
/// process-wide, so engine-side probes and the harness share one).
pub fn probe() -> Result<TscInfo, MeasureError> {
    INFO.get_or_init(|| measure(None)).clone()
}

/// A worker takes the session's rate instead of calibrating its own: the
/// rate is the machine's, and calibrating spins 100 ms in every fresh
/// process, which was half of a short epoch. The check and the overhead
/// are still this process's. Without effect once the process has probed.
pub fn adopt_rate(hz: f64) {
    let _ = INFO.set(measure(Some(hz)));
}

/// The rate this process has found or adopted, without calibrating.
pub fn known_rate() -> Option<f64> {
    INFO.get().and_then(|r| r.as_ref().ok()).map(|i| i.hz)
}

static INFO: OnceLock<Result<TscInfo, MeasureError>> = OnceLock::new();

/// The probe: `given` is a rate measured elsewhere on this machine (an
/// implausible one is calibrated again here).
fn measure(given: Option<f64>) -> Result<TscInfo, MeasureError> {
    counter::check_fixed_rate().map_err(MeasureError::NotFixedRate)?;
    let (hz, source) = match given.filter(|hz| plausible(*hz)) {
        Some(hz) => (hz, "the session's calibration"),
        None => {
            let clock = counter::clock();
            match clock.nominal_ticks_per_ns {
                Some(t) => (t * 1e9, "CNTFRQ_EL0"),
                None => (
                    clock.ticks_per_ns * 1e9,
                    "calibrated against the monotonic clock",
                ),
            }
        }
    };
    if !plausible(hz) {
        return Err(MeasureError::ImplausibleRate { hz });
    }
    Ok(TscInfo {
        hz,
        overhead: read_overhead(),
        source,
    })
}

fn plausible(hz: f64) -> bool {
    hz.is_finite() && hz > 1e6
}

/// The counter plugged into the meter.
pub struct TscCounter {
    overhead: u64,
    started: u64,
}

impl TscCounter {
    pub fn new(info: &TscInfo) -> Self {
        TscCounter {
            overhead: info.overhead,
            started: 0,
        }
    }
}

impl Counter for TscCounter {
    fn name(&self) -> &'static str {
        NAME
    }
    #[inline(always)]
    fn start(&mut self) {
        self.started = counter::start(Read::Serialising);
    }
    #[inline(always)]
    fn stop(&mut self) -> f64 {
        let end = counter::stop(Read::Serialising);
        end.wrapping_sub(self.started).saturating_sub(self.overhead) as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A rate and a described reading, or a reason: never a silent zero.
    #[test]
    fn probe_gives_a_rate_or_a_reason() {
        match probe() {
            Ok(info) => {
                assert!(info.hz > 1e6 && info.hz < 1e11, "{info:?}");
                assert!(info.describe().contains("MHz"), "{}", info.describe());
                let mut meter = Meter::new(vec![Box::new(TscCounter::new(&info))]);
                meter.start();
                std::hint::black_box((0..1000u64).sum::<u64>());
                meter.stop();
                assert!(meter.take().counters.contains_key(NAME));
            }
            Err(reason) => assert!(!reason.to_string().is_empty()),
        }
    }

    /// A worker's probe keeps the rate it was given and says so; a rate
    /// that cannot be a clock's is measured again, never adopted.
    #[test]
    fn a_given_rate_is_adopted_and_a_bad_one_is_not() {
        let Ok(own) = probe() else { return };
        let given = measure(Some(2.5e9)).unwrap();
        assert_eq!(given.hz, 2.5e9);
        assert_eq!(given.source, "the session's calibration");
        for bad in [f64::NAN, 0.0, -1.0, 1e3] {
            let info = measure(Some(bad)).unwrap();
            assert_eq!(info.hz, own.hz, "{bad}");
            assert_ne!(info.source, "the session's calibration");
        }
        assert_eq!(known_rate(), Some(own.hz));
    }
}
