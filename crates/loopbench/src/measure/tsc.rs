//! TSC reference cycles around the timed call.
//!
//! The time-stamp counter ticks at a fixed reference rate, not at the core's
//! current clock: these are *reference cycles*, a fine-grained clock, not core
//! cycles (those come from the perf counters where a PMU exists). We take
//! them because every x86_64 and aarch64 machine has them, VMs included.
//!
//! - x86_64: `lfence; rdtsc; lfence` opens (earlier work retires before the
//!   read, and the call does not start before it), `rdtscp; lfence` closes
//!   (`rdtscp` waits for the call's instructions to retire; the `lfence` keeps
//!   later work from starting before the read). The counter must be
//!   *invariant* (CPUID leaf 0x8000_0007, EDX bit 8): otherwise its rate
//!   follows frequency changes or it stops in deep idle states, and we refuse
//!   it with that reason.
//! - aarch64: the virtual counter `CNTVCT_EL0`, framed by `isb`; its rate is
//!   architecturally constant (`CNTFRQ_EL0`).
//!
//! The rate is calibrated against the monotonic clock (median of three busy
//! windows). What the window holds besides the call (the two counter reads
//! and the meter's two clock reads: the median of 1001 empty meter
//! start/stop pairs) is subtracted from every reading.

use super::{Counter, Meter};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

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

#[cfg(target_arch = "x86_64")]
mod arch {
    use core::arch::asm;
    use core::arch::x86_64::{__cpuid, CpuidResult};

    #[allow(unused_unsafe)]
    fn cpuid(leaf: u32) -> CpuidResult {
        // SAFETY: cpuid exists on every x86_64 processor.
        unsafe { __cpuid(leaf) }
    }

    /// `Err(reason)` when the TSC cannot serve as a clock for cycles.
    pub fn check() -> Result<(), String> {
        let max = cpuid(0x8000_0000).eax;
        if max < 0x8000_0007 {
            return Err(format!(
                "CPUID reports no leaf 0x80000007 (highest extended leaf {max:#x}), so invariant TSC cannot be confirmed"
            ));
        }
        if cpuid(0x8000_0007).edx & (1 << 8) == 0 {
            return Err("no invariant TSC (CPUID 0x80000007 EDX bit 8 is clear): its rate may follow frequency \
                        changes or stop in idle states"
                .into());
        }
        if cpuid(0x8000_0001).edx & (1 << 27) == 0 {
            return Err("the processor has no RDTSCP (CPUID 0x80000001 EDX bit 27), needed for the closing read".into());
        }
        Ok(())
    }

    /// `lfence; rdtsc; lfence`.
    #[inline(always)]
    pub fn start() -> u64 {
        let (lo, hi): (u32, u32);
        // SAFETY: lfence and rdtsc are baseline x86_64; they write only eax/edx.
        unsafe {
            asm!("lfence", "rdtsc", "lfence", out("eax") lo, out("edx") hi, options(nostack, preserves_flags));
        }
        (u64::from(hi) << 32) | u64::from(lo)
    }

    /// `rdtscp; lfence`.
    #[inline(always)]
    pub fn stop() -> u64 {
        let (lo, hi): (u32, u32);
        // SAFETY: `check` confirmed RDTSCP; it writes eax, edx and ecx.
        unsafe {
            asm!("rdtscp", "lfence", out("eax") lo, out("edx") hi, out("ecx") _, options(nostack, preserves_flags));
        }
        (u64::from(hi) << 32) | u64::from(lo)
    }

    pub fn nominal_hz() -> Option<f64> {
        None
    }
}

#[cfg(target_arch = "aarch64")]
mod arch {
    use core::arch::asm;

    pub fn check() -> Result<(), String> {
        if nominal_hz().is_none() {
            return Err("CNTFRQ_EL0 reads zero: the generic timer's frequency is not set".into());
        }
        Ok(())
    }

    /// `isb; mrs cntvct_el0; isb`.
    #[inline(always)]
    pub fn start() -> u64 {
        let t: u64;
        // SAFETY: CNTVCT_EL0 is readable from EL0 on Linux.
        unsafe {
            asm!("isb", "mrs {t}, cntvct_el0", "isb", t = out(reg) t, options(nostack, preserves_flags));
        }
        t
    }

    /// `isb; mrs cntvct_el0; isb`.
    #[inline(always)]
    pub fn stop() -> u64 {
        start()
    }

    pub fn nominal_hz() -> Option<f64> {
        let f: u64;
        // SAFETY: CNTFRQ_EL0 is readable from EL0 on Linux.
        unsafe {
            asm!("mrs {f}, cntfrq_el0", f = out(reg) f, options(nomem, nostack, preserves_flags));
        }
        (f != 0).then_some(f as f64)
    }
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
mod arch {
    pub fn check() -> Result<(), String> {
        Err(format!(
            "no cycle counter support for {}",
            std::env::consts::ARCH
        ))
    }
    pub fn start() -> u64 {
        0
    }
    pub fn stop() -> u64 {
        0
    }
    pub fn nominal_hz() -> Option<f64> {
        None
    }
}

/// Ticks per second over one busy window of `window` on the monotonic clock.
/// Each end is the midpoint of two counter reads around the clock read.
fn one_window(window: Duration) -> f64 {
    let mark = || {
        let a = arch::start();
        let t = Instant::now();
        let b = arch::stop();
        (a / 2 + b / 2 + (a % 2 + b % 2) / 2, t)
    };
    let (c0, t0) = mark();
    while t0.elapsed() < window {
        std::hint::spin_loop();
    }
    let (c1, t1) = mark();
    (c1.wrapping_sub(c0)) as f64 / t1.duration_since(t0).as_secs_f64()
}

/// Calibrate the counter's rate: median of three 30 ms windows.
pub fn calibrate_hz() -> f64 {
    let mut v: Vec<f64> = (0..3)
        .map(|_| one_window(Duration::from_millis(30)))
        .collect();
    v.sort_by(f64::total_cmp);
    v[1]
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

/// Check, calibrate and measure the overhead, once per process.
pub fn probe() -> Result<TscInfo, String> {
    static INFO: OnceLock<Result<TscInfo, String>> = OnceLock::new();
    INFO.get_or_init(|| {
        arch::check()?;
        let (hz, source) = match arch::nominal_hz() {
            Some(hz) => (hz, "CNTFRQ_EL0"),
            None => (calibrate_hz(), "calibrated against the monotonic clock"),
        };
        if !(hz.is_finite() && hz > 1e6) {
            return Err(format!(
                "calibration gave an implausible counter rate of {hz:.0} Hz"
            ));
        }
        Ok(TscInfo {
            hz,
            overhead: read_overhead(),
            source,
        })
    })
    .clone()
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
        self.started = arch::start();
    }
    #[inline(always)]
    fn stop(&mut self) -> f64 {
        let end = arch::stop();
        end.wrapping_sub(self.started).saturating_sub(self.overhead) as f64
    }
}

/// The TSC frequency the kernel reports, in kHz, and where it came from:
/// sysfs `tsc_freq_khz`, the boot log's refined or detected TSC rate (when
/// `dmesg` is readable), or `cpu MHz` in /proc/cpuinfo on a VM with
/// `constant_tsc` (there the hypervisor fixes the value). `None` when the
/// kernel reports nothing usable.
pub fn kernel_tsc_khz() -> Option<(f64, String)> {
    let sysfs = "/sys/devices/system/cpu/cpu0/tsc_freq_khz";
    if let Some(k) = std::fs::read_to_string(sysfs)
        .ok()
        .and_then(|s| s.trim().parse::<f64>().ok())
    {
        return Some((k, sysfs.to_string()));
    }
    if let Some(found) = std::process::Command::new("dmesg")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| tsc_khz_from_log(&String::from_utf8_lossy(&o.stdout)))
    {
        return Some(found);
    }
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    let flags = cpuinfo.lines().find(|l| l.starts_with("flags"))?;
    let has = |f: &str| flags.split_whitespace().any(|x| x == f);
    if has("constant_tsc") && has("hypervisor") {
        let mhz = cpuinfo
            .lines()
            .find(|l| l.starts_with("cpu MHz"))?
            .split(':')
            .nth(1)?
            .trim()
            .parse::<f64>()
            .ok()?;
        return Some((
            mhz * 1e3,
            "/proc/cpuinfo cpu MHz (VM with constant_tsc)".into(),
        ));
    }
    None
}

/// The TSC rate in a kernel log: the refined calibration when present, else
/// the boot-time detection.
pub fn tsc_khz_from_log(log: &str) -> Option<(f64, String)> {
    let mhz_before = |line: &str, marker: &str| -> Option<f64> {
        let rest = &line[line.find(marker)? + marker.len()..];
        rest.split_whitespace().next()?.parse::<f64>().ok()
    };
    let refined = log
        .lines()
        .rev()
        .find_map(|l| mhz_before(l, "tsc: Refined TSC clocksource calibration:"));
    if let Some(m) = refined {
        return Some((
            m * 1e3,
            "kernel log: tsc: Refined TSC clocksource calibration".into(),
        ));
    }
    let detected = log.lines().find_map(|l| mhz_before(l, "tsc: Detected"));
    detected.map(|m| {
        (
            m * 1e3,
            "kernel log: tsc: Detected ... MHz processor".into(),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_lines_are_parsed() {
        let log = "[    0.000062] tsc: Detected 2445.422 MHz processor\n\
                   [    1.2] tsc: Refined TSC clocksource calibration: 2445.400 MHz\n";
        let (k, src) = tsc_khz_from_log(log).unwrap();
        assert_eq!(k, 2_445_400.0);
        assert!(src.contains("Refined"));
        let (k, _) = tsc_khz_from_log("[0.1] tsc: Detected 3000.000 MHz processor").unwrap();
        assert_eq!(k, 3_000_000.0);
        assert_eq!(tsc_khz_from_log("nothing here"), None);
    }

    /// Calibration against the monotonic clock agrees with the kernel's own
    /// TSC frequency within 1%, where the kernel reports one.
    #[test]
    fn calibration_matches_the_kernel() {
        let info = match probe() {
            Ok(i) => i,
            Err(reason) => {
                // Refusal must come with a reason, never a value.
                assert!(!reason.is_empty());
                eprintln!("TSC refused here: {reason}");
                return;
            }
        };
        let calibrated = calibrate_hz();
        assert!(
            calibrated > 1e6 && calibrated < 1e11,
            "implausible rate {calibrated}"
        );
        assert!(
            (info.hz - calibrated).abs() / calibrated < 0.01,
            "{} vs {calibrated}",
            info.hz
        );
        match kernel_tsc_khz() {
            Some((khz, source)) => {
                let kernel = khz * 1e3;
                let err = (calibrated - kernel).abs() / kernel;
                eprintln!("calibrated {:.3} MHz, kernel {:.3} MHz ({source}), {:.3}% apart", calibrated / 1e6, kernel / 1e6, err * 100.0);
                assert!(err < 0.01, "calibrated {calibrated} Hz vs kernel {kernel} Hz from {source}");
            }
            None => eprintln!(
                "the kernel reports no TSC frequency here (no tsc_freq_khz, no readable boot log); checked plausibility only"
            ),
        }
    }
}
