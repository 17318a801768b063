//! What a probe costs, measured on this machine rather than assumed.
//!
//! A probe costs its enclosing code in two places, and the report needs both:
//!
//! - **Inside the region** ([`ReadCost::empty_median`]): the ticks an *empty*
//!   region records, i.e. the part of the two reads that falls between the
//!   timestamps. Every entry of a phase carries it; with
//!   [`Report::subtracting_overhead`](crate::Report::subtracting_overhead)
//!   it is taken off `entries x empty_median`.
//! - **Per entry, as the parent sees it** ([`ReadCost::per_entry`]): the whole
//!   cost of `let _g = P.enter();` plus the drop (both reads, the index load,
//!   the thread-local add), measured by timing a loop of empty guarded regions
//!   from outside and taking off the bare loop. A parent's region holds all
//!   of it for every child entry, so subtraction takes
//!   `child entries x per_entry` off the parent; the part outside the child's
//!   own region (`per_entry - empty_median`) is what shows up in the parent's
//!   "unaccounted" cycles when nothing is subtracted.
//!
//! Both are measured in isolation, in a tight loop. In real code a fence also
//! waits for the surrounding work in flight, so the true cost there is
//! higher: treat the subtracted figures as an upper bound on the work and
//! the raw ones as the measurement.
//!
//! Each is the median of many repeats (20 000 empty regions; 21 loops of 1 000
//! guards), because one preempted sample must not decide it; the minimum of the
//! empty regions is kept as the floor.

use crate::counter::Read;

/// The measured cost of one [`Read`] mode, in counter ticks.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ReadCost {
    /// Median ticks recorded by an empty region.
    pub empty_median: f64,
    /// Fewest ticks recorded by an empty region.
    pub empty_min: u64,
    /// Median ticks one whole enter-and-drop adds to the enclosing code.
    pub per_entry: f64,
}

/// Probe cost for both read modes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Overhead {
    /// Cost with [`Read::Fenced`].
    pub fenced: ReadCost,
    /// Cost with [`Read::Serialising`].
    pub serialising: ReadCost,
}

impl Overhead {
    /// The cost for `read`.
    pub fn get(&self, read: Read) -> ReadCost {
        match read {
            Read::Fenced => self.fenced,
            Read::Serialising => self.serialising,
        }
    }
}

#[cfg(feature = "enabled")]
pub(crate) use measure::overhead;

#[cfg(feature = "enabled")]
mod measure {
    use super::{Overhead, ReadCost};
    use crate::counter::{self, Read};
    use crate::Phase;
    use std::hint::black_box;
    use std::sync::OnceLock;

    const EMPTY_SAMPLES: usize = 20_000;
    const LOOP_REPEATS: usize = 21;
    const LOOP_LEN: u64 = 1_000;

    static EMPTY_FENCED: Phase = Phase::new("loopbench-probe/overhead/fenced").hidden();
    static EMPTY_SERIALISING: Phase = Phase::new("loopbench-probe/overhead/serialising")
        .serialising()
        .hidden();

    /// Measures both modes now (a few milliseconds).
    fn measure() -> Overhead {
        Overhead {
            fenced: measure_read(Read::Fenced, &EMPTY_FENCED),
            serialising: measure_read(Read::Serialising, &EMPTY_SERIALISING),
        }
    }

    /// The process-wide measurement, taken on first use and cached.
    pub(crate) fn overhead() -> Overhead {
        static OVERHEAD: OnceLock<Overhead> = OnceLock::new();
        *OVERHEAD.get_or_init(measure)
    }

    fn measure_read(read: Read, phase: &'static Phase) -> ReadCost {
        let mut empty: Vec<u64> = (0..EMPTY_SAMPLES)
            .map(|_| {
                let a = counter::start(read);
                let b = counter::stop(read);
                b.saturating_sub(a)
            })
            .collect();
        empty.sort_unstable();
        let empty_min = empty.first().copied().unwrap_or(0);
        let empty_median = empty.get(empty.len() / 2).copied().unwrap_or(0) as f64;

        // Warm the phase's slot so registration is not timed.
        drop(phase.enter());
        let mut per_entry: Vec<f64> = (0..LOOP_REPEATS)
            .map(|_| {
                let a = counter::start(Read::Serialising);
                for i in 0..LOOP_LEN {
                    black_box(i);
                }
                let b = counter::stop(Read::Serialising);
                for i in 0..LOOP_LEN {
                    let g = phase.enter();
                    black_box(i);
                    drop(black_box(g));
                }
                let c = counter::stop(Read::Serialising);
                let bare = b.saturating_sub(a);
                let guarded = c.saturating_sub(b);
                guarded.saturating_sub(bare) as f64 / LOOP_LEN as f64
            })
            .collect();
        let per_entry = counter::median_f64(&mut per_entry).unwrap_or(f64::NAN);
        ReadCost {
            empty_median,
            empty_min,
            per_entry,
        }
    }
}
