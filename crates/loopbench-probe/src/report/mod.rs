//! Turning the totals into the one line of data that says which surgery to do.
//!
//! A [`Report`] is a snapshot: every phase's ticks and entries, the op count,
//! the counter's calibration and the probe's measured cost. It is plain data
//! with public fields, so it can be built by hand (the tests do) and rendered
//! twice. What it derives:
//!
//! - **cycles/op** = phase ticks / ops. The absolute cost of a phase.
//! - **share** = phase ticks / the sum of the top-level phases' ticks. Which
//!   phase to fix: one phase above ~50% is a single bottleneck; several of
//!   similar size is a pipeline-shaped problem.
//! - **unaccounted** = a parent's ticks minus its children's. It is work
//!   nobody bracketed (plus the probes' own cost); above
//!   [`UNACCOUNTED_WARN`] of the parent the report warns, because the answer
//!   may be hiding there.
//! - With [`Report::subtracting_overhead`], each phase loses
//!   `entries x` the empty-region cost of its read, and each parent loses its
//!   children's probe cost outside their regions (see
//!   [`crate::overhead`]). Off by default: the raw counts are what was
//!   measured, the subtraction is an estimate.
//!
//! [`Runs`] holds several reports of the same workload and warns when a
//! phase's share moves by more than [`SHARE_SPREAD_WARN`] percentage points
//! between them: a share that unstable cannot pick the surgery yet.
//!
//! Warnings are data ([`Warning`]); their `Display` gives advice fitted to the
//! options in use.
//!
//! The files: this one holds the data and the arithmetic; [`Warning`] is in
//! `warning.rs`, [`Runs`] in `runs.rs`, and the two renderings, text and
//! JSON, in `text.rs` and `json.rs`.

mod json;
mod runs;
mod text;
mod warning;

pub use runs::{Runs, ShareSeries};
pub use warning::Warning;

use crate::counter::{Clock, Read};
use crate::overhead::Overhead;

/// A parent's unaccounted ticks above this fraction of its own raise
/// [`Warning::Unaccounted`].
pub const UNACCOUNTED_WARN: f64 = 0.10;

/// A phase's share moving by more than this many percentage points across
/// [`Runs`] raises [`Warning::UnstableShare`].
pub const SHARE_SPREAD_WARN: f64 = 5.0;

/// When the probe's own in-region cost is above this fraction of what a phase
/// recorded, [`Warning::ProbeDominated`] is raised.
pub const PROBE_DOMINATED_WARN: f64 = 0.25;

/// The method asks for at least this many runs before trusting a share.
pub const MIN_RUNS: usize = 3;

/// One phase's totals in a [`Report`].
#[derive(Clone, Debug, PartialEq)]
pub struct PhaseStats {
    /// The name given to [`Phase::new`](crate::Phase::new).
    pub name: String,
    /// Index of the parent in [`Report::phases`]. Must be smaller than this
    /// phase's own index (phases are stored parents first); anything else is
    /// treated as no parent.
    pub parent: Option<usize>,
    /// How the phase read the counter.
    pub read: Read,
    /// Counter ticks summed over every entry, as measured.
    pub ticks: u64,
    /// Number of times the region was entered (exact).
    pub entries: u64,
}

/// A snapshot of every phase, ready to print. See the [module docs](self)
/// for what each column means.
#[derive(Clone, Debug, PartialEq)]
pub struct Report {
    /// Whether the crate was built with the `enabled` feature. When `false`,
    /// everything else is empty.
    pub enabled: bool,
    /// Ops counted with [`count_ops`](crate::count_ops).
    pub ops: u64,
    /// The counter and its calibration.
    pub clock: Option<Clock>,
    /// The probe's measured cost.
    pub overhead: Option<Overhead>,
    /// Phases in tree order: each parent before its children, siblings in
    /// the order they were first recorded.
    pub phases: Vec<PhaseStats>,
    /// Whether [`Report::ticks`] subtracts the probe overhead.
    pub subtract_overhead: bool,
}

impl Report {
    /// Flushes the calling thread and snapshots every phase. The first call
    /// also calibrates the counter (~100 ms) and measures the probe's cost
    /// (a few ms); [`calibrate`](crate::calibrate) does that up front instead.
    ///
    /// Other threads' counts are included once they have exited or called
    /// [`flush`](crate::flush). Without the `enabled` feature this returns a
    /// report that says so.
    pub fn capture() -> Report {
        #[cfg(feature = "enabled")]
        {
            capture_enabled()
        }
        #[cfg(not(feature = "enabled"))]
        {
            Report::disabled()
        }
    }

    /// The report of a build without the `enabled` feature.
    pub fn disabled() -> Report {
        Report {
            enabled: false,
            ops: 0,
            clock: None,
            overhead: None,
            phases: Vec::new(),
            subtract_overhead: false,
        }
    }

    /// The same report with probe overhead subtracted from every phase.
    pub fn subtracting_overhead(mut self) -> Report {
        self.subtract_overhead = true;
        self
    }

    /// The parent of phase `i`, if it is a valid one.
    pub fn parent(&self, i: usize) -> Option<usize> {
        self.phases
            .get(i)
            .and_then(|p| p.parent)
            .filter(|&parent| parent < i)
    }

    /// The children of phase `i`, in order.
    pub fn children(&self, i: usize) -> impl Iterator<Item = usize> + '_ {
        (i + 1..self.phases.len()).filter(move |&c| self.parent(c) == Some(i))
    }

    /// Top-level phases, in order.
    pub fn roots(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.phases.len()).filter(move |&i| self.parent(i).is_none())
    }

    /// Nesting depth of phase `i` (0 for top level).
    pub fn depth(&self, i: usize) -> usize {
        let mut depth = 0;
        let mut at = i;
        while let Some(parent) = self.parent(at) {
            depth += 1;
            at = parent;
        }
        depth
    }

    /// `parent/child` names from the root down to phase `i`.
    pub fn path(&self, i: usize) -> String {
        let mut names = vec![self.phases.get(i).map_or("", |p| p.name.as_str())];
        let mut at = i;
        while let Some(parent) = self.parent(at) {
            names.push(&self.phases[parent].name);
            at = parent;
        }
        names.reverse();
        names.join("/")
    }

    fn overhead_active(&self) -> Option<&Overhead> {
        self.overhead.as_ref().filter(|_| self.subtract_overhead)
    }

    /// Ticks of phase `i`: as measured, or with the probe overhead taken off
    /// when [`Report::subtract_overhead`] is set (never below zero).
    pub fn ticks(&self, i: usize) -> f64 {
        let Some(phase) = self.phases.get(i) else {
            return 0.0;
        };
        let raw = phase.ticks as f64;
        let Some(overhead) = self.overhead_active() else {
            return raw;
        };
        // Own probe: the part of its reads inside the region. Each child
        // entry: its whole enter-and-drop cost, since the parent's region
        // holds all of it (the child's own share of it included).
        let own = phase.entries as f64 * overhead.get(phase.read).empty_median;
        let children: f64 = self
            .children(i)
            .map(|c| {
                let child = &self.phases[c];
                child.entries as f64 * overhead.get(child.read).per_entry
            })
            .sum();
        (raw - own - children).max(0.0)
    }

    /// Sum of the top-level phases' ticks: the denominator of every share.
    pub fn total_ticks(&self) -> f64 {
        self.roots().map(|i| self.ticks(i)).sum()
    }

    /// Ticks of phase `i` per op; `None` when no ops were counted.
    pub fn per_op(&self, i: usize) -> Option<f64> {
        (self.ops > 0).then(|| self.ticks(i) / self.ops as f64)
    }

    /// Phase `i`'s share of [`Report::total_ticks`], in percent.
    pub fn share(&self, i: usize) -> Option<f64> {
        let total = self.total_ticks();
        (total > 0.0).then(|| 100.0 * self.ticks(i) / total)
    }

    /// Ticks of phase `i` not covered by its children; `None` for a phase
    /// without children.
    pub fn unaccounted(&self, i: usize) -> Option<f64> {
        let mut children = self.children(i).peekable();
        children.peek()?;
        let covered: f64 = children.map(|c| self.ticks(c)).sum();
        Some((self.ticks(i) - covered).max(0.0))
    }

    /// [`Report::unaccounted`] as a fraction of the phase's own ticks.
    pub fn unaccounted_fraction(&self, i: usize) -> Option<f64> {
        let own = self.ticks(i);
        self.unaccounted(i)
            .and_then(|u| (own > 0.0).then(|| u / own))
    }

    /// The part of phase `i`'s unaccounted ticks that the probes themselves
    /// explain, as a fraction of its ticks: its own in-region read cost plus
    /// each child entry's cost outside the child's region (as measured in
    /// isolation, so a lower bound). `None` without an overhead measurement,
    /// when overhead is already subtracted, or when the phase has no ticks.
    pub fn probe_fraction_of_unaccounted(&self, i: usize) -> Option<f64> {
        if self.subtract_overhead {
            return None;
        }
        let overhead = self.overhead.as_ref()?;
        let phase = self.phases.get(i)?;
        let raw = phase.ticks as f64;
        let own = phase.entries as f64 * overhead.get(phase.read).empty_median;
        let children: f64 = self
            .children(i)
            .map(|c| {
                let child = &self.phases[c];
                let cost = overhead.get(child.read);
                child.entries as f64 * (cost.per_entry - cost.empty_median).max(0.0)
            })
            .sum();
        (raw > 0.0).then(|| (own + children) / raw)
    }

    /// Everything the report should warn about, in order of importance.
    pub fn warnings(&self) -> Vec<Warning> {
        let mut warnings = Vec::new();
        if !self.enabled {
            warnings.push(Warning::Disabled);
            return warnings;
        }
        if self.phases.iter().all(|p| p.entries == 0) {
            warnings.push(Warning::NoEntries);
        } else if self.ops == 0 {
            warnings.push(Warning::NoOps);
        }
        for i in 0..self.phases.len() {
            if let Some(fraction) = self.unaccounted_fraction(i) {
                if fraction > UNACCOUNTED_WARN {
                    warnings.push(Warning::Unaccounted {
                        phase: self.path(i),
                        fraction,
                        probe_fraction: self.probe_fraction_of_unaccounted(i),
                    });
                }
            }
        }
        if let Some(overhead) = &self.overhead {
            for (i, phase) in self.phases.iter().enumerate() {
                let probe = phase.entries as f64 * overhead.get(phase.read).empty_median;
                if phase.ticks > 0 && probe / phase.ticks as f64 > PROBE_DOMINATED_WARN {
                    warnings.push(Warning::ProbeDominated {
                        phase: self.path(i),
                        fraction: probe / phase.ticks as f64,
                        read: phase.read,
                        subtracted: self.subtract_overhead,
                    });
                }
            }
        }
        if let Some(clock) = &self.clock {
            if clock.invariant_tsc == Some(false) {
                warnings.push(Warning::TscNotInvariant);
            }
            if clock.spread() > 0.05 {
                warnings.push(Warning::UnsteadyClock {
                    spread: clock.spread(),
                });
            }
        }
        warnings
    }
}

#[cfg(feature = "enabled")]
fn capture_enabled() -> Report {
    let clock = crate::counter::clock().clone();
    let overhead = crate::overhead::overhead();
    let (raw, ops) = crate::phase::snapshot();
    let visible = |i: usize| raw.get(i).is_some_and(|p| !p.hidden);
    let parent_of = |i: usize| raw[i].parent.filter(|&p| p != i && visible(p));

    // Pre-order walk from the roots; phases caught in a cycle of `under`
    // links are never reached from a root and are appended as roots.
    let mut order: Vec<usize> = Vec::with_capacity(raw.len());
    let mut placed = vec![false; raw.len()];
    fn walk(
        i: usize,
        raw_len: usize,
        parent_of: &dyn Fn(usize) -> Option<usize>,
        visible: &dyn Fn(usize) -> bool,
        placed: &mut [bool],
        order: &mut Vec<usize>,
    ) {
        placed[i] = true;
        order.push(i);
        for c in 0..raw_len {
            if !placed[c] && visible(c) && parent_of(c) == Some(i) {
                walk(c, raw_len, parent_of, visible, placed, order);
            }
        }
    }
    for i in 0..raw.len() {
        if visible(i) && parent_of(i).is_none() && !placed[i] {
            walk(i, raw.len(), &parent_of, &visible, &mut placed, &mut order);
        }
    }
    for i in 0..raw.len() {
        if visible(i) && !placed[i] {
            walk(i, raw.len(), &|_| None, &visible, &mut placed, &mut order);
        }
    }
    let mut new_index = vec![usize::MAX; raw.len()];
    for (new, &old) in order.iter().enumerate() {
        new_index[old] = new;
    }
    let phases = order
        .iter()
        .enumerate()
        .map(|(new, &old)| {
            let p = &raw[old];
            PhaseStats {
                name: p.name.to_owned(),
                parent: parent_of(old)
                    .map(|parent| new_index[parent])
                    .filter(|&parent| parent < new),
                read: p.read,
                ticks: p.ticks,
                entries: p.entries,
            }
        })
        .collect();
    Report {
        enabled: true,
        ops,
        clock: Some(clock),
        overhead: Some(overhead),
        phases,
        subtract_overhead: false,
    }
}
