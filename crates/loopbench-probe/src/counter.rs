//! Reading the hardware counter, and what one tick of it is worth.
//!
//! A probe is two counter reads around a region, so the read is the whole
//! measuring instrument. Its choices, per architecture:
//!
//! - **x86_64**: the time-stamp counter. A bare `rdtsc` is not ordered with
//!   the surrounding instructions, so an out-of-order core can start the
//!   region before the first read or retire the second read before the region
//!   is done. [`Read::Fenced`] puts an `lfence` in front of each `rdtsc`: the
//!   read waits for everything before it to finish. That costs a few tens of
//!   cycles and is right for regions of hundreds of cycles or more.
//!   [`Read::Serialising`] also stops the region from starting early and the
//!   code after it from overlapping the closing read: `lfence; rdtsc; lfence`
//!   to open, `rdtscp; lfence` to close (`rdtscp` waits for all earlier
//!   instructions; the `lfence` keeps later ones back). It is dearer and is
//!   meant for regions under about 100 cycles, where a few cycles of overlap
//!   are a large error.
//!
//!   The TSC ticks at a fixed *reference* rate on CPUs with an invariant TSC
//!   (CPUID leaf `0x8000_0007`, EDX bit 8), not at the core's current clock:
//!   with turbo or power saving, one TSC tick is not one core cycle. The
//!   counts are still proportional to wall time, which is what makes shares
//!   and run-to-run comparisons meaningful. [`invariant_tsc`] reports the bit.
//! - **aarch64**: the virtual counter `CNTVCT_EL0`, readable from user space.
//!   It runs at a fixed frequency (often 24 MHz to 1 GHz), far slower than the
//!   core, so short regions read as 0 or 1 tick; sum many entries. An `isb`
//!   before the read keeps it from being hoisted above earlier instructions.
//! - **anything else**: [`std::time::Instant`] relative to the first read, in
//!   nanoseconds. Slow to read, but honest about it: the unit says `ns`.
//!
//! The reads are inline assembly without the `nomem` option, so they are also
//! compiler barriers: the optimiser cannot move the region's loads and stores
//! across them.
//!
//! Ticks convert to nanoseconds with a rate measured against
//! [`std::time::Instant`] ([`calibrate`]): spin for a short window, compare
//! both clocks, repeat, take the median. The report gives cycles first and the
//! conversion once, because the conversion is the part that moves with
//! frequency scaling.

use std::fmt;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// How a probe reads the counter. See the [module docs](self) for the exact
/// instruction sequences.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Read {
    /// A fence before each read: cheap, right for regions of a few hundred
    /// cycles or more. The default.
    #[default]
    Fenced,
    /// Fences on both sides of each read (`rdtscp` to close on x86_64): the
    /// region is isolated from the code around it. For regions under ~100
    /// cycles.
    Serialising,
}

impl Read {
    /// Lowercase name, as printed in reports.
    pub const fn name(self) -> &'static str {
        match self {
            Read::Fenced => "fenced",
            Read::Serialising => "serialising",
        }
    }
}

impl fmt::Display for Read {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Which counter this build reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Counter {
    /// x86_64 time-stamp counter: reference cycles.
    Tsc,
    /// aarch64 virtual counter `CNTVCT_EL0`: fixed-frequency ticks.
    Cntvct,
    /// [`std::time::Instant`] since the first read: nanoseconds.
    Monotonic,
}

impl Counter {
    /// The counter compiled into this build.
    pub const fn current() -> Counter {
        if cfg!(target_arch = "x86_64") {
            Counter::Tsc
        } else if cfg!(target_arch = "aarch64") {
            Counter::Cntvct
        } else {
            Counter::Monotonic
        }
    }

    /// Short unit for one tick: `cycles`, `ticks` or `ns`.
    pub const fn unit(self) -> &'static str {
        match self {
            Counter::Tsc => "cycles",
            Counter::Cntvct => "ticks",
            Counter::Monotonic => "ns",
        }
    }

    /// Lowercase identifier, as used in JSON.
    pub const fn name(self) -> &'static str {
        match self {
            Counter::Tsc => "tsc",
            Counter::Cntvct => "cntvct_el0",
            Counter::Monotonic => "monotonic",
        }
    }

    /// What one tick means, for the report header.
    pub const fn describe(self) -> &'static str {
        match self {
            Counter::Tsc => "x86_64 TSC (reference cycles, not core cycles)",
            Counter::Cntvct => "aarch64 CNTVCT_EL0 (fixed-frequency timer ticks)",
            Counter::Monotonic => "std::time::Instant (nanoseconds)",
        }
    }
}

impl fmt::Display for Counter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Reads the counter to open a region.
#[inline(always)]
pub fn start(read: Read) -> u64 {
    match read {
        Read::Fenced => arch::fenced(),
        Read::Serialising => arch::serialising_start(),
    }
}

/// Reads the counter to close a region opened with [`start`] using the same
/// [`Read`].
#[inline(always)]
pub fn stop(read: Read) -> u64 {
    match read {
        Read::Fenced => arch::fenced(),
        Read::Serialising => arch::serialising_stop(),
    }
}

#[cfg(target_arch = "x86_64")]
mod arch {
    use core::arch::asm;
    use core::arch::x86_64::{__cpuid, CpuidResult};
    use std::sync::atomic::{AtomicU8, Ordering};

    #[inline(always)]
    fn join(lo: u32, hi: u32) -> u64 {
        (u64::from(hi) << 32) | u64::from(lo)
    }

    /// `rdtsc` alone, for measuring the counter's step.
    #[inline(always)]
    pub(super) fn bare() -> u64 {
        let (lo, hi): (u32, u32);
        // SAFETY: rdtsc is baseline x86_64; it writes only eax/edx.
        unsafe {
            asm!("rdtsc", out("eax") lo, out("edx") hi, options(nostack, preserves_flags));
        }
        join(lo, hi)
    }

    /// `lfence; rdtsc`.
    #[inline(always)]
    pub(super) fn fenced() -> u64 {
        let (lo, hi): (u32, u32);
        // SAFETY: lfence and rdtsc are baseline x86_64 (SSE2, TSC); they
        // write only eax/edx, which are declared as outputs.
        unsafe {
            asm!("lfence", "rdtsc", out("eax") lo, out("edx") hi, options(nostack, preserves_flags));
        }
        join(lo, hi)
    }

    /// `lfence; rdtsc; lfence`.
    #[inline(always)]
    pub(super) fn serialising_start() -> u64 {
        let (lo, hi): (u32, u32);
        // SAFETY: as in `fenced`.
        unsafe {
            asm!(
                "lfence",
                "rdtsc",
                "lfence",
                out("eax") lo,
                out("edx") hi,
                options(nostack, preserves_flags)
            );
        }
        join(lo, hi)
    }

    /// `rdtscp; lfence`, or `lfence; rdtsc; lfence` where RDTSCP is missing.
    #[inline(always)]
    pub(super) fn serialising_stop() -> u64 {
        if !has_rdtscp() {
            return serialising_start();
        }
        let (lo, hi): (u32, u32);
        // SAFETY: `has_rdtscp` confirmed the instruction exists; it writes
        // eax/edx/ecx, all declared.
        unsafe {
            asm!(
                "rdtscp",
                "lfence",
                out("eax") lo,
                out("edx") hi,
                out("ecx") _,
                options(nostack, preserves_flags)
            );
        }
        join(lo, hi)
    }

    fn cpuid(leaf: u32) -> CpuidResult {
        // `__cpuid` is an unsafe fn on older toolchains and safe on newer ones.
        #[allow(unused_unsafe)]
        // SAFETY: CPUID exists on every x86_64 CPU.
        unsafe {
            __cpuid(leaf)
        }
    }

    fn max_extended_leaf() -> u32 {
        cpuid(0x8000_0000).eax
    }

    /// 0 = not yet checked, 1 = absent, 2 = present.
    static RDTSCP: AtomicU8 = AtomicU8::new(0);

    #[inline(always)]
    fn has_rdtscp() -> bool {
        match RDTSCP.load(Ordering::Relaxed) {
            2 => true,
            1 => false,
            _ => detect_rdtscp(),
        }
    }

    #[cold]
    #[inline(never)]
    fn detect_rdtscp() -> bool {
        let present = max_extended_leaf() >= 0x8000_0001 && cpuid(0x8000_0001).edx & (1 << 27) != 0;
        RDTSCP.store(if present { 2 } else { 1 }, Ordering::Relaxed);
        present
    }

    pub(super) fn invariant_tsc() -> Option<bool> {
        if max_extended_leaf() < 0x8000_0007 {
            return Some(false);
        }
        Some(cpuid(0x8000_0007).edx & (1 << 8) != 0)
    }

    pub(super) fn check_fixed_rate() -> Result<(), String> {
        let max = max_extended_leaf();
        if max < 0x8000_0007 {
            return Err(format!(
                "CPUID reports no leaf 0x80000007 (highest extended leaf {max:#x}), so invariant TSC cannot be confirmed"
            ));
        }
        if invariant_tsc() != Some(true) {
            return Err("no invariant TSC (CPUID 0x80000007 EDX bit 8 is clear): its rate may follow frequency \
                        changes or stop in idle states"
                .into());
        }
        if !has_rdtscp() {
            return Err("the processor has no RDTSCP (CPUID 0x80000001 EDX bit 27), needed for the closing read".into());
        }
        Ok(())
    }

    pub(super) fn nominal_ticks_per_ns() -> Option<f64> {
        None
    }
}

#[cfg(target_arch = "aarch64")]
mod arch {
    use core::arch::asm;

    /// `mrs cntvct_el0` alone, for measuring the counter's step.
    #[inline(always)]
    pub(super) fn bare() -> u64 {
        let t: u64;
        // SAFETY: CNTVCT_EL0 is readable from EL0 on every supported OS.
        unsafe {
            asm!("mrs {t}, cntvct_el0", t = out(reg) t, options(nostack, preserves_flags));
        }
        t
    }

    /// `isb; mrs cntvct_el0`.
    #[inline(always)]
    pub(super) fn fenced() -> u64 {
        let t: u64;
        // SAFETY: CNTVCT_EL0 is readable from EL0 on every supported OS.
        unsafe {
            asm!("isb", "mrs {t}, cntvct_el0", t = out(reg) t, options(nostack, preserves_flags));
        }
        t
    }

    /// `dsb ish; isb; mrs cntvct_el0; isb`.
    #[inline(always)]
    pub(super) fn serialising_start() -> u64 {
        let t: u64;
        // SAFETY: as in `fenced`.
        unsafe {
            asm!(
                "dsb ish",
                "isb",
                "mrs {t}, cntvct_el0",
                "isb",
                t = out(reg) t,
                options(nostack, preserves_flags)
            );
        }
        t
    }

    #[inline(always)]
    pub(super) fn serialising_stop() -> u64 {
        serialising_start()
    }

    pub(super) fn invariant_tsc() -> Option<bool> {
        None
    }

    pub(super) fn check_fixed_rate() -> Result<(), String> {
        if nominal_ticks_per_ns().is_none() {
            return Err("CNTFRQ_EL0 reads zero: the generic timer's frequency is not set".into());
        }
        Ok(())
    }

    /// The frequency the firmware declares in `CNTFRQ_EL0`, for cross-checking
    /// the calibration.
    pub(super) fn nominal_ticks_per_ns() -> Option<f64> {
        let f: u64;
        // SAFETY: CNTFRQ_EL0 is readable from EL0.
        unsafe {
            asm!("mrs {f}, cntfrq_el0", f = out(reg) f, options(nomem, nostack, preserves_flags));
        }
        (f != 0).then(|| f as f64 / 1e9)
    }
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
mod arch {
    use std::sync::OnceLock;
    use std::time::Instant;

    static ORIGIN: OnceLock<Instant> = OnceLock::new();

    #[inline(always)]
    pub(super) fn fenced() -> u64 {
        let origin = *ORIGIN.get_or_init(Instant::now);
        u64::try_from(origin.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    #[inline(always)]
    pub(super) fn bare() -> u64 {
        fenced()
    }

    #[inline(always)]
    pub(super) fn serialising_start() -> u64 {
        fenced()
    }

    #[inline(always)]
    pub(super) fn serialising_stop() -> u64 {
        fenced()
    }

    pub(super) fn invariant_tsc() -> Option<bool> {
        None
    }

    pub(super) fn check_fixed_rate() -> Result<(), String> {
        Err(format!(
            "no cycle counter support for {}",
            std::env::consts::ARCH
        ))
    }

    pub(super) fn nominal_ticks_per_ns() -> Option<f64> {
        Some(1.0)
    }
}

/// Whether the CPU declares an invariant TSC (CPUID `0x8000_0007` EDX bit 8):
/// `Some(true)` means TSC ticks at a constant rate in every power state.
/// `None` on architectures without a TSC.
pub fn invariant_tsc() -> Option<bool> {
    arch::invariant_tsc()
}

/// Whether this build's counter can time a region as a fixed-rate clock with
/// [`Read::Serialising`] reads, and if not, why: x86_64 needs an invariant
/// TSC (otherwise its rate follows frequency changes or it stops in deep idle
/// states) and RDTSCP for the closing read; aarch64 needs `CNTFRQ_EL0` set;
/// other architectures have no counter here. Needs no `enabled` feature: a
/// harness timing whole calls uses it beside [`start`], [`stop`] and
/// [`clock`].
pub fn check_fixed_rate() -> Result<(), String> {
    arch::check_fixed_rate()
}

/// The counter's rate, measured against [`Instant`].
#[derive(Clone, Debug, PartialEq)]
pub struct Clock {
    /// The counter this build reads.
    pub counter: Counter,
    /// Counter ticks per nanosecond (the median of the calibration windows;
    /// exactly 1 for [`Counter::Monotonic`]).
    pub ticks_per_ns: f64,
    /// Each calibration window's ticks per nanosecond, in measurement order.
    pub samples: Vec<f64>,
    /// Length of each calibration window.
    pub window: Duration,
    /// Smallest non-zero step seen between back-to-back reads, in ticks: the
    /// counter's granularity. Some CPUs advance the TSC in coarse steps (on
    /// AMD Zen, every ~25 cycles), so a single short region reads as 0 or one
    /// step; sums over many entries still average out.
    pub resolution: u64,
    /// CPUID's invariant-TSC bit (x86_64 only).
    pub invariant_tsc: Option<bool>,
    /// The frequency the hardware declares, where it declares one
    /// (`CNTFRQ_EL0` on aarch64).
    pub nominal_ticks_per_ns: Option<f64>,
}

impl Clock {
    /// Nanoseconds per tick.
    pub fn ns_per_tick(&self) -> f64 {
        if self.ticks_per_ns > 0.0 {
            1.0 / self.ticks_per_ns
        } else {
            f64::NAN
        }
    }

    /// (max - min) / median of the calibration samples; 0 when there were
    /// fewer than two.
    pub fn spread(&self) -> f64 {
        let min = self.samples.iter().copied().fold(f64::INFINITY, f64::min);
        let max = self
            .samples
            .iter()
            .copied()
            .fold(f64::NEG_INFINITY, f64::max);
        if self.samples.len() < 2 || self.ticks_per_ns <= 0.0 {
            0.0
        } else {
            (max - min) / self.ticks_per_ns
        }
    }
}

/// Default calibration: five windows of 20 ms.
pub const CALIBRATION_WINDOW: Duration = Duration::from_millis(20);
/// Number of calibration windows by default.
pub const CALIBRATION_REPEATS: usize = 5;

/// Measures the counter's rate: `repeats` windows of `window` each, spinning
/// on [`Instant`] (no sleep, so a counter that stops in idle states cannot
/// fool it), median of the per-window rates. Takes `repeats * window`.
pub fn calibrate(window: Duration, repeats: usize) -> Clock {
    let counter = Counter::current();
    let repeats = repeats.max(1);
    let mut samples = Vec::with_capacity(repeats);
    if counter != Counter::Monotonic {
        for _ in 0..repeats {
            let t0 = Instant::now();
            let c0 = start(Read::Serialising);
            let mut t1 = Instant::now();
            while t1.duration_since(t0) < window {
                std::hint::spin_loop();
                t1 = Instant::now();
            }
            let c1 = stop(Read::Serialising);
            let ns = t1.duration_since(t0).as_nanos() as f64;
            if ns > 0.0 {
                samples.push(c1.saturating_sub(c0) as f64 / ns);
            }
        }
    }
    let ticks_per_ns = if counter == Counter::Monotonic {
        1.0
    } else {
        median_f64(&mut samples.clone()).unwrap_or(f64::NAN)
    };
    Clock {
        counter,
        ticks_per_ns,
        samples,
        window,
        resolution: resolution(),
        invariant_tsc: invariant_tsc(),
        nominal_ticks_per_ns: arch::nominal_ticks_per_ns(),
    }
}

/// Smallest non-zero difference between consecutive unfenced reads, over
/// 10 000 pairs; 0 if the counter never moved. An upper bound on the true
/// step where one read costs more than a step.
fn resolution() -> u64 {
    (0..10_000)
        .filter_map(|_| {
            let a = arch::bare();
            let b = arch::bare();
            b.checked_sub(a).filter(|&d| d > 0)
        })
        .min()
        .unwrap_or(0)
}

/// The process-wide calibration, measured on first use with
/// [`CALIBRATION_REPEATS`] windows of [`CALIBRATION_WINDOW`] (about 100 ms),
/// then cached.
pub fn clock() -> &'static Clock {
    static CLOCK: OnceLock<Clock> = OnceLock::new();
    CLOCK.get_or_init(|| calibrate(CALIBRATION_WINDOW, CALIBRATION_REPEATS))
}

/// Median of `xs` (sorted in place); `None` when empty.
pub(crate) fn median_f64(xs: &mut [f64]) -> Option<f64> {
    if xs.is_empty() {
        return None;
    }
    xs.sort_by(f64::total_cmp);
    let mid = xs.len() / 2;
    Some(if xs.len() % 2 == 1 {
        xs[mid]
    } else {
        (xs[mid - 1] + xs[mid]) / 2.0
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_handles_odd_even_and_empty() {
        assert_eq!(median_f64(&mut []), None);
        assert_eq!(median_f64(&mut [3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median_f64(&mut [4.0, 1.0, 2.0, 3.0]), Some(2.5));
    }

    #[test]
    fn calibration_reports_its_inputs() {
        let clock = calibrate(Duration::from_millis(1), 3);
        assert_eq!(clock.counter, Counter::current());
        assert_eq!(clock.window, Duration::from_millis(1));
        assert!(clock.resolution > 0, "the counter moved in 10 000 reads");
        match clock.counter {
            Counter::Monotonic => assert_eq!(clock.ticks_per_ns, 1.0),
            _ => assert_eq!(clock.samples.len(), 3),
        }
        assert_eq!(clock.invariant_tsc.is_some(), cfg!(target_arch = "x86_64"));
    }

    /// The TSC frequency the kernel reports, in kHz, and where it came from:
    /// sysfs `tsc_freq_khz`, the boot log's refined or detected TSC rate
    /// (when `dmesg` is readable), or `cpu MHz` in /proc/cpuinfo on a VM
    /// with `constant_tsc` (there the hypervisor fixes the value). `None`
    /// when the kernel reports nothing usable.
    fn kernel_tsc_khz() -> Option<(f64, String)> {
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

    /// The TSC rate in a kernel log: the refined calibration when present,
    /// else the boot-time detection.
    fn tsc_khz_from_log(log: &str) -> Option<(f64, String)> {
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

    /// On x86_64 with an invariant TSC, calibration against the monotonic
    /// clock agrees with the kernel's own TSC frequency within 1%, where the
    /// kernel reports one. Elsewhere the check says why it refuses.
    #[test]
    fn calibration_matches_the_kernel() {
        if let Err(reason) = check_fixed_rate() {
            // Refusal must come with a reason, never a value.
            assert!(!reason.is_empty());
            eprintln!("counter refused here: {reason}");
            return;
        }
        if Counter::current() != Counter::Tsc {
            return;
        }
        let calibrated = clock().ticks_per_ns * 1e9;
        assert!(
            calibrated > 1e6 && calibrated < 1e11,
            "implausible rate {calibrated}"
        );
        match kernel_tsc_khz() {
            Some((khz, source)) => {
                let kernel = khz * 1e3;
                let err = (calibrated - kernel).abs() / kernel;
                eprintln!(
                    "calibrated {:.3} MHz, kernel {:.3} MHz ({source}), {:.3}% apart",
                    calibrated / 1e6,
                    kernel / 1e6,
                    err * 100.0
                );
                assert!(
                    err < 0.01,
                    "calibrated {calibrated} Hz vs kernel {kernel} Hz from {source}"
                );
            }
            None => eprintln!(
                "the kernel reports no TSC frequency here (no tsc_freq_khz, no readable boot log); checked plausibility only"
            ),
        }
    }

    #[test]
    fn names_are_lowercase() {
        assert_eq!(Read::Fenced.to_string(), "fenced");
        assert_eq!(Read::Serialising.to_string(), "serialising");
        assert_eq!(Counter::Tsc.unit(), "cycles");
        assert_eq!(Counter::Monotonic.unit(), "ns");
    }
}
