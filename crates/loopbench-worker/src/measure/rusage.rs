//! Disturbances: how often the timing thread was taken off its core.
//!
//! On a shared VM most wall-clock noise is waiting for a core. The thread's
//! involuntary context switches (`getrusage(RUSAGE_THREAD)`) around each
//! timed call count it: a rep with one or more was preempted. The count is
//! recorded per rep and summed per arm, not hidden.

/// Reading name of [`Involuntary`].
pub const INVOLUNTARY: &str = "involuntary_switches";

/// Involuntary context switches of the calling thread during the call.
#[derive(Default)]
pub struct Involuntary {
    start: Option<i64>,
}

impl Involuntary {
    #[cfg(target_os = "linux")]
    fn now() -> Option<i64> {
        // SAFETY: getrusage writes one rusage through a valid pointer.
        let mut u: libc::rusage = unsafe { std::mem::zeroed() };
        let rc = unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut u) };
        (rc == 0).then_some(u.ru_nivcsw as i64)
    }
    #[cfg(not(target_os = "linux"))]
    fn now() -> Option<i64> {
        None
    }
}

impl super::Counter for Involuntary {
    fn name(&self) -> &'static str {
        INVOLUNTARY
    }
    fn start(&mut self) {
        self.start = Self::now();
    }
    fn stop(&mut self) -> f64 {
        match (self.start.take(), Self::now()) {
            (Some(a), Some(b)) => (b - a) as f64,
            _ => f64::NAN,
        }
    }
    fn stop_into(&mut self, out: &mut std::collections::BTreeMap<String, f64>) {
        let v = self.stop();
        // An unreadable count records nothing, never a zero.
        if v.is_finite() {
            out.insert(INVOLUNTARY.to_string(), v);
        }
    }
}
