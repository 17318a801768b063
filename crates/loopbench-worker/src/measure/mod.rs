//! The measure stage: what runs immediately around the one timed call.
//!
//! A [`Meter`] holds every counter the session reads. Engine adapters call
//! [`Meter::start`] right before the engine's call and [`Meter::stop`] right
//! after; the scheduler then takes the [`Reading`]. The monotonic clock is
//! always present; further counters (cycles, hardware events) plug in as
//! [`Counter`]s.

pub mod affinity;
pub mod callgrind;
pub mod counters;
pub mod cpu;
pub mod error;
pub mod load;
pub mod perf;
pub mod rusage;
pub mod tsc;

pub use error::{ChoiceError, DumpError, MeasureError};

use serde::Serialize;
use std::collections::BTreeMap;
use std::time::Instant;

/// One extra counter read around the timed call.
pub trait Counter: Send {
    /// Stable name used in reports and JSON (e.g. `tsc_cycles`).
    fn name(&self) -> &'static str;
    fn start(&mut self);
    /// Stop and return the value accumulated since `start`.
    fn stop(&mut self) -> f64;
    /// Stop and record this counter's values in `out`. Counters that read
    /// several values at once (a perf event group) override this; a counter
    /// that has no value for this call inserts nothing (never a zero).
    fn stop_into(&mut self, out: &mut BTreeMap<String, f64>) {
        let v = self.stop();
        out.insert(self.name().to_string(), v);
    }
    /// Which rep comes next (callgrind names its per-rep dumps with it).
    fn context(&mut self, _shape: &str, _arm: &str, _rep: usize) {}
}

/// The values of one timed call.
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct Reading {
    /// Wall time of the call on the monotonic clock.
    pub ns: f64,
    /// Other counters by name.
    pub counters: BTreeMap<String, f64>,
}

/// Run `call` inside the timed region when a meter is given: every engine
/// adapter brackets its one engine call with this, after the export lookup.
#[inline(always)]
pub fn timed<R>(meter: Option<&mut Meter>, call: impl FnOnce() -> R) -> R {
    match meter {
        Some(m) => {
            m.start();
            let r = call();
            m.stop();
            r
        }
        None => call(),
    }
}

#[derive(Default)]
pub struct Meter {
    started: Option<Instant>,
    reading: Reading,
    counters: Vec<Box<dyn Counter>>,
}

impl Meter {
    pub fn new(counters: Vec<Box<dyn Counter>>) -> Self {
        Meter {
            started: None,
            reading: Reading::default(),
            counters,
        }
    }

    /// Names of the extra counters, in order.
    pub fn counter_names(&self) -> Vec<&'static str> {
        self.counters.iter().map(|c| c.name()).collect()
    }

    /// Tell the counters which shape, arm and rep the next call belongs to.
    pub fn context(&mut self, shape: &str, arm: &str, rep: usize) {
        for c in &mut self.counters {
            c.context(shape, arm, rep);
        }
    }

    #[inline(always)]
    pub fn start(&mut self) {
        // A duet rep waits for its partner here, as late as can be and
        // before any counter starts, so the wait is in no reading.
        if let Some(gate) = GATE.with(std::cell::Cell::take) {
            gate();
        }
        for c in &mut self.counters {
            c.start();
        }
        self.started = Some(Instant::now());
    }

    #[inline(always)]
    pub fn stop(&mut self) {
        let end = Instant::now();
        if let Some(s) = self.started.take() {
            self.reading.ns = end.duration_since(s).as_nanos() as f64;
        }
        for c in self.counters.iter_mut().rev() {
            c.stop_into(&mut self.reading.counters);
        }
    }

    /// Replace the wall time of the call just measured with `ns`, a value
    /// the adapter supplies instead of the clock. Test-only in purpose: the
    /// mock engine (`engines/mock.rs`) reports synthetic, exact costs through
    /// it so tests of scheduling and statistics need no timing; real
    /// adapters never call it. Call after [`Meter::stop`], before
    /// [`Meter::take`]; the other counters keep what they read.
    pub fn supply_ns(&mut self, ns: f64) {
        self.reading.ns = ns;
    }

    /// The last reading; the meter is ready for the next call.
    pub fn take(&mut self) -> Reading {
        std::mem::take(&mut self.reading)
    }
}

thread_local! {
    static GATE: std::cell::Cell<Option<Box<dyn FnOnce()>>> = const { std::cell::Cell::new(None) };
}

/// Run `gate` at the start of this thread's next timed call, right before
/// its clock and counters start (a duet worker waits for its partner
/// there: [`crate::workers::barrier`]). Used once, then gone.
pub fn gate_next_start(gate: Box<dyn FnOnce()>) {
    GATE.with(|g| g.set(Some(gate)));
}

/// The gate set by [`gate_next_start`] if no timed call used it.
pub fn take_gate() -> Option<Box<dyn FnOnce()>> {
    GATE.with(std::cell::Cell::take)
}

/// The counters every timed call reads, whatever `--counters` says: the
/// thread's CPU time (the `--metric cpu` of a verdict) and its involuntary
/// context switches (preempted reps). Both are two cheap system calls
/// outside the wall-clock window.
pub fn disturbance_counters() -> Vec<Box<dyn Counter>> {
    let mut c: Vec<Box<dyn Counter>> = vec![Box::new(rusage::Involuntary::default())];
    #[cfg(target_os = "linux")]
    c.push(Box::new(cpu::ThreadCpu::default()));
    c
}
