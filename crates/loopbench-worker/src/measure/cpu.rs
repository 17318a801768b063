//! The timing thread's CPU time as a counter.

/// Reading name of [`ThreadCpu`].
pub const THREAD_CPU: &str = "thread_cpu_ns";

/// CPU time of the calling thread around the timed call
/// (`CLOCK_THREAD_CPUTIME_ID`). Time the thread spends waiting for a core
/// is not in it, so a busy machine inflates it far less than the wall clock;
/// what remains is interference while running (caches, the sibling
/// hyperthread, frequency). Read outside the wall-clock window: the meter
/// starts counters before the clock and stops them after it.
#[cfg(target_os = "linux")]
#[derive(Default)]
pub struct ThreadCpu {
    start: Option<f64>,
}

#[cfg(target_os = "linux")]
impl ThreadCpu {
    fn now() -> Option<f64> {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: clock_gettime writes one timespec through a valid pointer.
        let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
        (rc == 0).then_some(ts.tv_sec as f64 * 1e9 + ts.tv_nsec as f64)
    }
}

#[cfg(target_os = "linux")]
impl crate::measure::Counter for ThreadCpu {
    fn name(&self) -> &'static str {
        THREAD_CPU
    }
    fn start(&mut self) {
        self.start = Self::now();
    }
    fn stop(&mut self) -> f64 {
        match (self.start.take(), Self::now()) {
            (Some(a), Some(b)) => b - a,
            _ => f64::NAN,
        }
    }
    fn stop_into(&mut self, out: &mut std::collections::BTreeMap<String, f64>) {
        let v = self.stop();
        // A clock that failed records nothing, never a zero.
        if v.is_finite() {
            out.insert(THREAD_CPU.to_string(), v);
        }
    }
}
