//! Phases, the guard that brackets them, the op counter, and where the counts
//! live between a region's end and the report.
//!
//! The hot path must cost two counter reads and a few plain adds, and must not
//! make threads fight over cache lines. So:
//!
//! - A [`Phase`] is a `static`, declared once. Its index into the per-thread
//!   table is assigned the first time it records (one mutex lock per phase per
//!   process) and then read with a relaxed load: no string lookup, no hashing.
//! - Each thread accumulates into its own table (a `thread_local` holding
//!   plain `u64`s). Nothing atomic happens per region.
//! - The table is added into the phase's global totals once: when the thread
//!   exits (the thread-local's destructor) or when [`flush`] is called. The
//!   totals sit on their own 64-byte line, away from the read-mostly fields the
//!   hot path loads, so a flush on one core does not evict them elsewhere.
//!
//! Without the `enabled` feature the same names exist but hold nothing:
//! `Phase` and `Guard` are zero-sized, `Guard` has no destructor, and every
//! function is an empty `#[inline(always)]` body. The integration tests check
//! this with `size_of` and `needs_drop` rather than asserting it here.

pub use imp::{count_ops, flush, reset, Guard, Phase};

#[cfg(feature = "enabled")]
pub(crate) use imp::snapshot;

#[cfg(feature = "enabled")]
mod imp {
    use crate::counter::{self, Read};
    use std::cell::{Cell, RefCell};
    use std::fmt;
    use std::marker::PhantomData;
    use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};
    use std::sync::{Mutex, MutexGuard, PoisonError};

    /// A named sub-phase of an operation, declared once as a `static`.
    ///
    /// ```
    /// use loopbench_probe::Phase;
    ///
    /// static STEP: Phase = Phase::new("step");
    /// static DECODE: Phase = Phase::new("decode").under(&STEP);
    /// static LOAD: Phase = Phase::new("load").under(&STEP).serialising();
    ///
    /// let _step = STEP.enter();
    /// {
    ///     let _decode = DECODE.enter();
    ///     // ... decode ...
    /// }
    /// ```
    pub struct Phase {
        name: &'static str,
        parent: Option<&'static Phase>,
        read: Read,
        hidden: bool,
        /// 0 until registered, then index + 1.
        index: AtomicUsize,
        totals: Totals,
    }

    /// Global totals, on a cache line of their own.
    #[repr(align(64))]
    struct Totals {
        ticks: AtomicU64,
        entries: AtomicU64,
    }

    impl Totals {
        fn add(&self, ticks: u64, entries: u64) {
            self.ticks.fetch_add(ticks, Relaxed);
            self.entries.fetch_add(entries, Relaxed);
        }
    }

    impl Phase {
        /// A top-level phase read with [`Read::Fenced`].
        pub const fn new(name: &'static str) -> Phase {
            Phase {
                name,
                parent: None,
                read: Read::Fenced,
                hidden: false,
                index: AtomicUsize::new(0),
                totals: Totals {
                    ticks: AtomicU64::new(0),
                    entries: AtomicU64::new(0),
                },
            }
        }

        /// Makes this phase a child of `parent`: the report nests it under
        /// the parent and shows the parent's cycles its children do not cover.
        pub const fn under(mut self, parent: &'static Phase) -> Phase {
            self.parent = Some(parent);
            self
        }

        /// Reads the counter with [`Read::Serialising`], for regions under
        /// about 100 cycles.
        pub const fn serialising(mut self) -> Phase {
            self.read = Read::Serialising;
            self
        }

        /// Used for the probe's own overhead measurement; left out of reports.
        pub(crate) const fn hidden(mut self) -> Phase {
            self.hidden = true;
            self
        }

        /// Opens the region: reads the counter now, and again when the
        /// returned guard drops. Bind it to a named variable (`let _g = ...`);
        /// `let _ = ...` drops it at once. Entering a phase again while it is
        /// open (recursion) counts the inner time twice.
        #[inline(always)]
        pub fn enter(&'static self) -> Guard {
            Guard {
                phase: self,
                start: counter::start(self.read),
                _not_send: PhantomData,
            }
        }

        /// The name given to [`Phase::new`].
        pub const fn name(&self) -> &'static str {
            self.name
        }

        /// How this phase reads the counter.
        pub const fn read(&self) -> Read {
            self.read
        }

        #[inline(always)]
        fn index(&'static self) -> usize {
            match self.index.load(Relaxed) {
                0 => register(self),
                i => i - 1,
            }
        }
    }

    impl fmt::Debug for Phase {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.debug_struct("Phase")
                .field("name", &self.name)
                .field("parent", &self.parent.map(|p| p.name))
                .field("read", &self.read)
                .finish_non_exhaustive()
        }
    }

    /// An open region of a [`Phase`]; dropping it records the elapsed ticks
    /// and one entry in this thread's table. Not `Send`: a region opens and
    /// closes on one thread.
    #[must_use = "a region lasts as long as its guard: bind it with `let _g = ...`"]
    pub struct Guard {
        phase: &'static Phase,
        start: u64,
        _not_send: PhantomData<*const ()>,
    }

    impl Drop for Guard {
        #[inline(always)]
        fn drop(&mut self) {
            let end = counter::stop(self.phase.read);
            record(self.phase, end.saturating_sub(self.start));
        }
    }

    impl fmt::Debug for Guard {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.debug_struct("Guard")
                .field("phase", &self.phase.name)
                .field("start", &self.start)
                .finish()
        }
    }

    #[derive(Clone, Copy, Default)]
    struct Slot {
        ticks: u64,
        entries: u64,
    }

    /// This thread's counts, indexed like `REGISTRY`.
    struct Local {
        ops: Cell<u64>,
        slots: RefCell<Vec<Slot>>,
    }

    impl Local {
        fn flush(&self) {
            let ops = self.ops.replace(0);
            if ops != 0 {
                OPS.0.fetch_add(ops, Relaxed);
            }
            let Ok(mut slots) = self.slots.try_borrow_mut() else {
                return;
            };
            if slots.iter().all(|s| s.entries == 0) {
                return;
            }
            let registry = registry();
            for (slot, phase) in slots.iter_mut().zip(registry.iter()) {
                if slot.entries != 0 {
                    phase.totals.add(slot.ticks, slot.entries);
                    *slot = Slot::default();
                }
            }
        }

        fn clear(&self) {
            self.ops.set(0);
            if let Ok(mut slots) = self.slots.try_borrow_mut() {
                slots.iter_mut().for_each(|s| *s = Slot::default());
            }
        }
    }

    impl Drop for Local {
        fn drop(&mut self) {
            self.flush();
        }
    }

    thread_local! {
        static LOCAL: Local = const {
            Local { ops: Cell::new(0), slots: RefCell::new(Vec::new()) }
        };
    }

    /// Padded so flushes of the op count do not share a line with anything.
    #[repr(align(64))]
    struct PaddedU64(AtomicU64);

    static OPS: PaddedU64 = PaddedU64(AtomicU64::new(0));

    /// Every phase that has recorded, in registration order; a phase's index
    /// is its position here.
    static REGISTRY: Mutex<Vec<&'static Phase>> = Mutex::new(Vec::new());

    fn registry() -> MutexGuard<'static, Vec<&'static Phase>> {
        // The registry is only ever pushed to; a panic elsewhere cannot leave
        // it inconsistent, so a poisoned lock is still good.
        REGISTRY.lock().unwrap_or_else(PoisonError::into_inner)
    }

    #[cold]
    #[inline(never)]
    fn register(phase: &'static Phase) -> usize {
        let mut registry = registry();
        register_locked(&mut registry, phase)
    }

    fn register_locked(registry: &mut Vec<&'static Phase>, phase: &'static Phase) -> usize {
        match phase.index.load(Relaxed) {
            0 => {}
            i => return i - 1,
        }
        registry.push(phase);
        let index = registry.len() - 1;
        phase.index.store(index + 1, Relaxed);
        // Parents are registered too (after the child, so a cycle of
        // `under` links ends here instead of recursing forever): the report
        // needs them even if they never record.
        if let Some(parent) = phase.parent {
            register_locked(registry, parent);
        }
        index
    }

    #[inline(always)]
    fn record(phase: &'static Phase, ticks: u64) {
        let index = phase.index();
        let recorded = LOCAL
            .try_with(|local| {
                let Ok(mut slots) = local.slots.try_borrow_mut() else {
                    return false;
                };
                match slots.get_mut(index) {
                    Some(slot) => {
                        slot.ticks = slot.ticks.wrapping_add(ticks);
                        slot.entries = slot.entries.wrapping_add(1);
                    }
                    None => grow_and_record(&mut slots, index, ticks),
                }
                true
            })
            .unwrap_or(false);
        if !recorded {
            // The thread-local is gone (a guard dropped during thread
            // teardown): add straight to the totals.
            phase.totals.add(ticks, 1);
        }
    }

    #[cold]
    #[inline(never)]
    fn grow_and_record(slots: &mut Vec<Slot>, index: usize, ticks: u64) {
        slots.resize(index + 1, Slot::default());
        slots[index] = Slot { ticks, entries: 1 };
    }

    /// Counts `n` completed operations on this thread; the report divides
    /// every phase's ticks by the total. Call it once per op, or once per
    /// batch with the batch size.
    #[inline(always)]
    pub fn count_ops(n: u64) {
        let counted = LOCAL.try_with(|local| local.ops.set(local.ops.get().wrapping_add(n)));
        if counted.is_err() {
            OPS.0.fetch_add(n, Relaxed);
        }
    }

    /// Adds this thread's counts into the global totals and zeroes them.
    /// Threads flush by themselves when they exit; call this when a worker
    /// thread lives on past the measured work. [`crate::Report::capture`]
    /// flushes the calling thread.
    pub fn flush() {
        let _ = LOCAL.try_with(Local::flush);
    }

    /// Zeroes the global totals, the op count and this thread's unflushed
    /// counts, for the next of several runs. Other threads' unflushed counts
    /// are not reachable: have them flush (or exit) before calling this.
    pub fn reset() {
        let _ = LOCAL.try_with(Local::clear);
        OPS.0.store(0, Relaxed);
        for phase in registry().iter() {
            phase.totals.ticks.store(0, Relaxed);
            phase.totals.entries.store(0, Relaxed);
        }
    }

    /// One registered phase's totals, as read for a report.
    pub(crate) struct RawPhase {
        pub(crate) name: &'static str,
        pub(crate) parent: Option<usize>,
        pub(crate) read: Read,
        pub(crate) hidden: bool,
        pub(crate) ticks: u64,
        pub(crate) entries: u64,
    }

    /// Flushes this thread and reads every phase's totals and the op count.
    /// `parent` indexes into the returned vector.
    pub(crate) fn snapshot() -> (Vec<RawPhase>, u64) {
        flush();
        let registry = registry();
        let phases = registry
            .iter()
            .map(|p| RawPhase {
                name: p.name,
                parent: p
                    .parent
                    .map(|parent| parent.index.load(Relaxed).saturating_sub(1)),
                read: p.read,
                hidden: p.hidden,
                ticks: p.totals.ticks.load(Relaxed),
                entries: p.totals.entries.load(Relaxed),
            })
            .collect();
        (phases, OPS.0.load(Relaxed))
    }
}

#[cfg(not(feature = "enabled"))]
mod imp {
    use std::marker::PhantomData;

    /// A named sub-phase of an operation. Built without the `enabled`
    /// feature: zero-sized, holds nothing, and [`Phase::enter`] does nothing.
    #[derive(Debug)]
    pub struct Phase {
        _private: (),
    }

    impl Phase {
        /// A phase that records nothing (feature `enabled` is off).
        #[inline(always)]
        pub const fn new(_name: &'static str) -> Phase {
            Phase { _private: () }
        }

        /// No-op without the `enabled` feature.
        #[inline(always)]
        pub const fn under(self, _parent: &'static Phase) -> Phase {
            self
        }

        /// No-op without the `enabled` feature.
        #[inline(always)]
        pub const fn serialising(self) -> Phase {
            self
        }

        /// Returns a zero-sized guard with no destructor.
        #[inline(always)]
        pub fn enter(&'static self) -> Guard {
            Guard {
                _not_send: PhantomData,
            }
        }
    }

    /// Zero-sized and without a destructor when the `enabled` feature is off.
    #[must_use = "a region lasts as long as its guard: bind it with `let _g = ...`"]
    #[derive(Debug)]
    pub struct Guard {
        _not_send: PhantomData<*const ()>,
    }

    /// No-op without the `enabled` feature.
    #[inline(always)]
    pub fn count_ops(_n: u64) {}

    /// No-op without the `enabled` feature.
    #[inline(always)]
    pub fn flush() {}

    /// No-op without the `enabled` feature.
    #[inline(always)]
    pub fn reset() {}
}
