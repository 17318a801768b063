//! Hardware events through `perf_event_open` (the perf-event2 crate).
//!
//! One event group, so the four values come from the same scheduling window:
//! user-space core cycles, retired instructions, branches and branch misses.
//! The group is reset and enabled right before the timed call and disabled
//! right after; only the user-space half of the enable/disable syscalls falls
//! inside (a few dozen instructions, constant per call).
//!
//! When the kernel has more events than counters it time-slices them
//! ("multiplexing"): then `time_running < time_enabled` and the values are
//! estimates scaled by `enabled / running`. We scale, and record the running
//! fraction per rep as `perf_running_fraction` so the report can say so.
//!
//! When the kernel or the VM refuses, [`probe`] gives the reason (no PMU in
//! this VM, `perf_event_paranoid`, seccomp) and the session carries on
//! without these counters. A group that never ran records nothing: never a
//! zero.

use super::{Counter, MeasureError};
use std::collections::BTreeMap;

/// Reading names of the group's events, in order.
pub const EVENTS: [&str; 4] = ["cycles", "instructions", "branches", "branch_misses"];
/// Fraction of the enabled time the group was counting (1 = not multiplexed).
pub const RUNNING_FRACTION: &str = "perf_running_fraction";

/// Why the kernel refused `perf_event_open`, in words a user can act on.
/// `paranoid` is the value of /proc/sys/kernel/perf_event_paranoid and
/// `seccomp` the `Seccomp:` mode from /proc/self/status, when readable.
#[cfg(target_os = "linux")]
pub fn refusal_reason(
    err: &std::io::Error,
    event: &str,
    paranoid: Option<i64>,
    seccomp: Option<u32>,
) -> String {
    let errno = err.raw_os_error().unwrap_or(0);
    let name = errno_name(errno);
    match errno {
        libc::ENOENT | libc::EOPNOTSUPP | libc::ENODEV => format!(
            "no hardware PMU available (perf_event_open for {event}: {name}); virtual machines usually hide it"
        ),
        libc::EACCES | libc::EPERM => match (paranoid, seccomp) {
            (Some(p), _) if p > 2 => format!(
                "perf_event_paranoid = {p} forbids unprivileged perf_event_open ({name}); as root: sysctl kernel.perf_event_paranoid=2"
            ),
            (_, Some(2)) => format!(
                "perf_event_open is blocked by a seccomp filter ({name}, Seccomp: 2 in /proc/self/status), as container runtimes install"
            ),
            (Some(p), _) => format!("perf_event_open refused ({name}) although perf_event_paranoid = {p}"),
            (None, _) => format!("perf_event_open refused ({name}); /proc/sys/kernel/perf_event_paranoid is unreadable"),
        },
        libc::ENOSYS => format!("perf_event_open does not exist here ({name}): kernel without perf events, or a seccomp filter"),
        _ => format!("perf_event_open for {event} failed: {err}"),
    }
}

#[cfg(target_os = "linux")]
fn errno_name(errno: i32) -> String {
    let name = match errno {
        libc::ENOENT => "ENOENT",
        libc::EOPNOTSUPP => "EOPNOTSUPP",
        libc::ENODEV => "ENODEV",
        libc::EACCES => "EACCES",
        libc::EPERM => "EPERM",
        libc::ENOSYS => "ENOSYS",
        libc::EINVAL => "EINVAL",
        libc::EMFILE => "EMFILE",
        _ => return format!("errno {errno}"),
    };
    name.to_string()
}

/// /proc/sys/kernel/perf_event_paranoid.
pub fn paranoid() -> Option<i64> {
    std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// The `Seccomp:` mode of this process (0 none, 1 strict, 2 filter).
pub fn seccomp_mode() -> Option<u32> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("Seccomp:"))
        .and_then(|v| v.trim().parse().ok())
}

#[cfg(target_os = "linux")]
mod imp {
    use super::*;
    use perf_event::events::Hardware;
    use perf_event::{Builder, Group};

    pub struct PerfGroup {
        group: Group,
        members: Vec<perf_event::Counter>,
        failed: bool,
        /// Enabled and running time after the previous call: the kernel's
        /// times are cumulative (a reset clears only the counts).
        last: (std::time::Duration, std::time::Duration),
    }

    impl PerfGroup {
        pub fn open() -> Result<PerfGroup, MeasureError> {
            let why = |e: std::io::Error, event: &str| {
                MeasureError::PerfRefused(refusal_reason(&e, event, paranoid(), seccomp_mode()))
            };
            let mut group = Group::new().map_err(|e| why(e, "the group leader"))?;
            let mut members = Vec::new();
            let events = [
                Hardware::CPU_CYCLES,
                Hardware::INSTRUCTIONS,
                Hardware::BRANCH_INSTRUCTIONS,
                Hardware::BRANCH_MISSES,
            ];
            for (event, name) in events.into_iter().zip(EVENTS) {
                let mut b = Builder::new(event);
                b.exclude_kernel(true).exclude_hv(true);
                members.push(group.add(&b).map_err(|e| why(e, name))?);
            }
            Ok(PerfGroup {
                group,
                members,
                failed: false,
                last: Default::default(),
            })
        }

        #[inline(always)]
        pub fn start(&mut self) {
            self.failed = self.group.reset().is_err() || self.group.enable().is_err();
        }

        pub fn stop_into(&mut self, out: &mut BTreeMap<String, f64>) {
            let disabled = self.group.disable();
            if self.failed || disabled.is_err() {
                return;
            }
            let Ok(data) = self.group.read() else { return };
            let (Some(total_enabled), Some(total_running)) =
                (data.time_enabled(), data.time_running())
            else {
                return;
            };
            let enabled = total_enabled.saturating_sub(self.last.0);
            let running = total_running.saturating_sub(self.last.1);
            self.last = (total_enabled, total_running);
            if running.is_zero() {
                // Never scheduled onto the PMU: no value, not a zero.
                return;
            }
            let fraction = running.as_secs_f64() / enabled.as_secs_f64().max(f64::MIN_POSITIVE);
            let scale = if fraction < 1.0 { 1.0 / fraction } else { 1.0 };
            for (member, name) in self.members.iter().zip(EVENTS) {
                if let Some(entry) = data.get(member) {
                    out.insert(name.to_string(), entry.value() as f64 * scale);
                }
            }
            out.insert(RUNNING_FRACTION.to_string(), fraction.min(1.0));
        }
    }
}

#[cfg(not(target_os = "linux"))]
mod imp {
    use super::*;
    pub struct PerfGroup;
    impl PerfGroup {
        pub fn open() -> Result<PerfGroup, MeasureError> {
            Err(MeasureError::PerfNotLinux)
        }
        pub fn start(&mut self) {}
        pub fn stop_into(&mut self, _out: &mut BTreeMap<String, f64>) {}
    }
}

pub use imp::PerfGroup;

/// Can the group be opened and does it count? `Ok` with a description, or
/// the reason it cannot.
pub fn probe() -> Result<String, MeasureError> {
    let mut g = PerfGroup::open()?;
    let mut out = BTreeMap::new();
    g.start();
    let mut x = 1u64;
    for i in 0..10_000u64 {
        x = std::hint::black_box(x.wrapping_mul(3).wrapping_add(i));
    }
    g.stop_into(&mut out);
    match out.get("instructions") {
        Some(v) if *v > 0.0 => Ok(
            "user-space cycles, instructions, branches and branch misses in one perf event group"
                .into(),
        ),
        _ => Err(MeasureError::PerfNeverCounted),
    }
}

/// The counter plugged into the meter. Its readings are the four events
/// plus [`RUNNING_FRACTION`].
pub struct PerfCounter {
    group: PerfGroup,
}

impl PerfCounter {
    pub fn open() -> Result<Self, MeasureError> {
        Ok(PerfCounter {
            group: PerfGroup::open()?,
        })
    }
}

impl Counter for PerfCounter {
    fn name(&self) -> &'static str {
        "perf"
    }
    #[inline(always)]
    fn start(&mut self) {
        self.group.start();
    }
    fn stop(&mut self) -> f64 {
        // Only reached through the default `stop_into`, which is overridden.
        f64::NAN
    }
    fn stop_into(&mut self, out: &mut BTreeMap<String, f64>) {
        self.group.stop_into(out);
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;
    use std::io::Error;

    #[test]
    fn refusals_name_their_cause() {
        let no_pmu = refusal_reason(
            &Error::from_raw_os_error(libc::ENOENT),
            "cycles",
            Some(2),
            Some(0),
        );
        assert!(
            no_pmu.contains("no hardware PMU") && no_pmu.contains("ENOENT"),
            "{no_pmu}"
        );
        let unsupported = refusal_reason(
            &Error::from_raw_os_error(libc::EOPNOTSUPP),
            "cycles",
            Some(2),
            Some(0),
        );
        assert!(unsupported.contains("no hardware PMU"), "{unsupported}");
        let paranoid = refusal_reason(
            &Error::from_raw_os_error(libc::EACCES),
            "cycles",
            Some(3),
            Some(0),
        );
        assert!(paranoid.contains("perf_event_paranoid = 3"), "{paranoid}");
        let seccomp = refusal_reason(
            &Error::from_raw_os_error(libc::EPERM),
            "cycles",
            Some(1),
            Some(2),
        );
        assert!(seccomp.contains("seccomp"), "{seccomp}");
        let nosys = refusal_reason(
            &Error::from_raw_os_error(libc::ENOSYS),
            "cycles",
            None,
            None,
        );
        assert!(nosys.contains("ENOSYS"), "{nosys}");
    }

    /// On this machine either the group counts (positive instructions) or
    /// the probe gives a reason; readings never hold a zero for it.
    #[test]
    fn probe_counts_or_explains() {
        match probe() {
            Ok(detail) => {
                let mut c = PerfCounter::open().expect("probe succeeded, open must too");
                let mut out = BTreeMap::new();
                c.start();
                std::hint::black_box((0..1000u64).sum::<u64>());
                c.stop_into(&mut out);
                for e in EVENTS {
                    if let Some(v) = out.get(e) {
                        assert!(*v >= 0.0, "{e} = {v}");
                    }
                }
                assert!(
                    out.get("instructions").is_some_and(|v| *v > 0.0),
                    "{detail}: {out:?}"
                );
            }
            Err(reason) => {
                assert!(!reason.to_string().is_empty());
                crate::diag!("perf unavailable here: {reason}");
            }
        }
    }
}
