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

use crate::counter::{Clock, Counter, Read};
use crate::json::{self, Object};
use crate::overhead::Overhead;
use std::fmt::{self, Write as _};

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

    /// The breakdown as text: header, tree table, warnings.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        let _ = self.write_text(&mut out);
        out
    }

    fn write_text(&self, out: &mut String) -> fmt::Result {
        if !self.enabled {
            writeln!(
                out,
                "loopbench-probe: probes disabled (built without the `enabled` feature); nothing was measured"
            )?;
            return Ok(());
        }
        let unit = self.unit();
        writeln!(
            out,
            "loopbench-probe: {} ops, {} phases",
            self.ops,
            self.phases.len()
        )?;
        if let Some(clock) = &self.clock {
            let invariant = match clock.invariant_tsc {
                Some(true) => ", invariant TSC: yes",
                Some(false) => ", invariant TSC: NO",
                None => "",
            };
            writeln!(out, "counter  {}{invariant}", clock.counter.describe())?;
            if clock.counter == Counter::Monotonic {
                writeln!(
                    out,
                    "         counts are nanoseconds; no calibration needed"
                )?;
            } else {
                let one = match unit {
                    "cycles" => "cycle",
                    "ticks" => "tick",
                    other => other,
                };
                writeln!(
                    out,
                    "         {:.3} {unit}/ns, 1 {one} = {:.3} ns (calibrated against Instant: {} x {} ms, spread {:.2}%)",
                    clock.ticks_per_ns,
                    clock.ns_per_tick(),
                    clock.samples.len(),
                    clock.window.as_millis(),
                    100.0 * clock.spread(),
                )?;
            }
            writeln!(
                out,
                "         resolution {} {unit} (smallest step between back-to-back reads)",
                clock.resolution
            )?;
        }
        if let Some(o) = &self.overhead {
            writeln!(
                out,
                "probe    empty region: fenced {:.0} {unit} (min {}), serialising {:.0} {unit} (min {})",
                o.fenced.empty_median,
                o.fenced.empty_min,
                o.serialising.empty_median,
                o.serialising.empty_min,
            )?;
            writeln!(
                out,
                "         per entry, charged to the enclosing code: fenced {:.0} {unit}, serialising {:.0} {unit}",
                o.fenced.per_entry, o.serialising.per_entry,
            )?;
            writeln!(
                out,
                "         overhead {}",
                if self.subtract_overhead {
                    "subtracted from every phase below"
                } else {
                    "not subtracted (Report::subtracting_overhead)"
                }
            )?;
        }
        writeln!(out)?;

        let width = (0..self.phases.len())
            .map(|i| self.label(i).chars().count())
            .chain([15, "(unaccounted)".len() + 2 * (self.max_depth() + 1)])
            .max()
            .unwrap_or(15);
        writeln!(
            out,
            "{:<width$}  {:>12}  {:>7}  {:>10}  {:>12}",
            "phase",
            format!("{unit}/op"),
            "share",
            "entries/op",
            format!("{unit}/entry"),
        )?;
        for root in self.roots() {
            self.write_rows(out, root, width)?;
        }
        let total = self.total_ticks();
        match (self.ops, &self.clock) {
            (0, _) => writeln!(
                out,
                "{:<width$}  {total:>12.0} {unit} in all (no ops counted)",
                "total"
            )?,
            (ops, Some(clock)) => writeln!(
                out,
                "{:<width$}  {:>12.1}  {unit}/op = {:.1} ns/op",
                "total",
                total / ops as f64,
                total / ops as f64 * clock.ns_per_tick()
            )?,
            (ops, None) => writeln!(out, "{:<width$}  {:>12.1}", "total", total / ops as f64)?,
        }
        if self.phases.iter().any(|p| p.read == Read::Serialising) {
            writeln!(out, "[s] = serialising read")?;
        }
        let warnings = self.warnings();
        if !warnings.is_empty() {
            writeln!(out, "\nwarnings:")?;
            for w in warnings {
                writeln!(out, "  - {w}")?;
            }
        }
        Ok(())
    }

    /// The counter's unit, `ticks` when unknown.
    fn unit(&self) -> &'static str {
        self.clock.as_ref().map_or("ticks", |c| c.counter.unit())
    }

    fn max_depth(&self) -> usize {
        (0..self.phases.len())
            .map(|i| self.depth(i))
            .max()
            .unwrap_or(0)
    }

    fn label(&self, i: usize) -> String {
        let p = &self.phases[i];
        let mark = if p.read == Read::Serialising {
            " [s]"
        } else {
            ""
        };
        format!("{}{}{mark}", "  ".repeat(self.depth(i)), p.name)
    }

    /// Phase `i`'s row, its children's rows, then its unaccounted row.
    fn write_rows(&self, out: &mut String, i: usize, width: usize) -> fmt::Result {
        let p = &self.phases[i];
        let per_entry = (p.entries > 0).then(|| self.ticks(i) / p.entries as f64);
        let entries_per_op = (self.ops > 0).then(|| p.entries as f64 / self.ops as f64);
        writeln!(
            out,
            "{:<width$}  {:>12}  {:>7}  {:>10}  {:>12}",
            self.label(i),
            num(self.per_op(i), 1),
            pct(self.share(i)),
            num(entries_per_op, 3),
            num(per_entry, 1),
        )?;
        for c in self.children(i).collect::<Vec<_>>() {
            self.write_rows(out, c, width)?;
        }
        if let Some(unaccounted) = self.unaccounted(i) {
            let total = self.total_ticks();
            let per_op = (self.ops > 0).then(|| unaccounted / self.ops as f64);
            let share = (total > 0.0).then(|| 100.0 * unaccounted / total);
            let fraction = self.unaccounted_fraction(i).unwrap_or(0.0);
            let covered: f64 = self.children(i).map(|c| self.ticks(c)).sum();
            let excess = covered - self.ticks(i);
            let note = if excess > 0.0 {
                let unit = self.unit();
                let amount = match self.ops {
                    0 => format!("{excess:.0} {unit}"),
                    ops => format!("{:.1} {unit}/op", excess / ops as f64),
                };
                format!(
                    "  (children exceed {} by {amount}: overhead subtraction is an estimate)",
                    p.name
                )
            } else if fraction > UNACCOUNTED_WARN {
                format!(
                    "  <- {:.1}% of {}, over {:.0}%",
                    100.0 * fraction,
                    p.name,
                    100.0 * UNACCOUNTED_WARN
                )
            } else {
                format!("  ({:.1}% of {})", 100.0 * fraction, p.name)
            };
            let label = format!("{}(unaccounted)", "  ".repeat(self.depth(i) + 1));
            writeln!(
                out,
                "{label:<width$}  {:>12}  {:>7}{note}",
                num(per_op, 1),
                pct(share),
            )?;
        }
        Ok(())
    }

    /// The breakdown as one JSON object (see the crate README for the
    /// schema).
    pub fn to_json(&self) -> String {
        let mut out = String::new();
        self.write_json(&mut out);
        out
    }

    fn write_json(&self, out: &mut String) {
        let mut o = Object::new(out);
        o.str("tool", "loopbench-probe")
            .bool("enabled", self.enabled)
            .uint("ops", self.ops);
        match &self.clock {
            Some(clock) => {
                o.str("unit", clock.counter.unit());
                let v = o.key("counter");
                let mut c = Object::new(v);
                c.str("kind", clock.counter.name())
                    .str("unit", clock.counter.unit())
                    .bool("reference_cycles", clock.counter == Counter::Tsc)
                    .opt_bool("invariant_tsc", clock.invariant_tsc)
                    .float("ticks_per_ns", clock.ticks_per_ns)
                    .float("ns_per_tick", clock.ns_per_tick())
                    .uint("resolution", clock.resolution)
                    .uint(
                        "calibration_window_ms",
                        u64::try_from(clock.window.as_millis()).unwrap_or(u64::MAX),
                    )
                    .opt_float("nominal_ticks_per_ns", clock.nominal_ticks_per_ns);
                let v = c.key("calibration_samples");
                v.push('[');
                for (k, s) in clock.samples.iter().enumerate() {
                    if k > 0 {
                        v.push(',');
                    }
                    json::float(v, *s);
                }
                v.push(']');
                c.finish();
            }
            None => {
                o.null("unit").null("counter");
            }
        }
        match &self.overhead {
            Some(overhead) => {
                let v = o.key("overhead");
                let mut ov = Object::new(v);
                for read in [Read::Fenced, Read::Serialising] {
                    let cost = overhead.get(read);
                    let v = ov.key(read.name());
                    let mut r = Object::new(v);
                    r.float("empty_median", cost.empty_median)
                        .uint("empty_min", cost.empty_min)
                        .float("per_entry", cost.per_entry);
                    r.finish();
                }
                ov.finish();
            }
            None => {
                o.null("overhead");
            }
        }
        o.bool(
            "overhead_subtracted",
            self.subtract_overhead && self.overhead.is_some(),
        )
        .float("total_ticks", self.total_ticks())
        .opt_float(
            "total_ticks_per_op",
            (self.ops > 0).then(|| self.total_ticks() / self.ops as f64),
        );
        let v = o.key("phases");
        v.push('[');
        for (i, p) in self.phases.iter().enumerate() {
            if i > 0 {
                v.push(',');
            }
            let mut ph = Object::new(v);
            ph.str("name", &p.name).str("path", &self.path(i));
            match self.parent(i) {
                Some(parent) => ph.uint("parent", parent as u64),
                None => ph.null("parent"),
            };
            ph.uint("depth", self.depth(i) as u64)
                .str("read", p.read.name())
                .uint("entries", p.entries)
                .uint("ticks", p.ticks)
                .float("ticks_adjusted", self.ticks(i))
                .opt_float("ticks_per_op", self.per_op(i))
                .opt_float(
                    "entries_per_op",
                    (self.ops > 0).then(|| p.entries as f64 / self.ops as f64),
                )
                .opt_float("share", self.share(i))
                .opt_float("unaccounted_ticks", self.unaccounted(i))
                .opt_float("unaccounted_fraction", self.unaccounted_fraction(i));
            ph.finish();
        }
        v.push(']');
        write_warnings(&mut o, &self.warnings());
        o.finish();
    }
}

fn write_warnings(o: &mut Object<'_>, warnings: &[Warning]) {
    let v = o.key("warnings");
    v.push('[');
    for (k, w) in warnings.iter().enumerate() {
        if k > 0 {
            v.push(',');
        }
        let mut wo = Object::new(v);
        wo.str("kind", w.kind()).str("message", &w.to_string());
        wo.finish();
    }
    v.push(']');
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_text())
    }
}

fn num(x: Option<f64>, decimals: usize) -> String {
    match x {
        Some(x) if x.is_finite() => format!("{x:.decimals$}"),
        _ => "-".to_owned(),
    }
}

fn pct(x: Option<f64>) -> String {
    match x {
        Some(x) if x.is_finite() => format!("{x:.1}%"),
        _ => "-".to_owned(),
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

/// Something in a report that should change how far it is trusted.
#[derive(Clone, Debug, PartialEq)]
pub enum Warning {
    /// Built without the `enabled` feature.
    Disabled,
    /// No phase recorded an entry.
    NoEntries,
    /// Entries were recorded but no ops were counted.
    NoOps,
    /// A parent's children leave more than [`UNACCOUNTED_WARN`] of it
    /// uncovered.
    Unaccounted {
        /// Path of the parent.
        phase: String,
        /// Unaccounted ticks / the parent's ticks.
        fraction: f64,
        /// The part of the parent the probes themselves explain (see
        /// [`Report::probe_fraction_of_unaccounted`]).
        probe_fraction: Option<f64>,
    },
    /// The probe's own in-region cost is more than [`PROBE_DOMINATED_WARN`]
    /// of what a phase recorded.
    ProbeDominated {
        /// Path of the phase.
        phase: String,
        /// Estimated probe ticks / recorded ticks.
        fraction: f64,
        /// The phase's read mode.
        read: Read,
        /// Whether the report subtracts overhead.
        subtracted: bool,
    },
    /// CPUID does not declare an invariant TSC.
    TscNotInvariant,
    /// Calibration windows disagreed by more than 5%.
    UnsteadyClock {
        /// (max - min) / median of the calibration rates.
        spread: f64,
    },
    /// Fewer than [`MIN_RUNS`] runs in a [`Runs`].
    FewRuns {
        /// How many there were.
        runs: usize,
    },
    /// A phase's share moved by more than [`SHARE_SPREAD_WARN`] points
    /// across runs.
    UnstableShare {
        /// Path of the phase.
        phase: String,
        /// Smallest share seen, percent.
        min: f64,
        /// Largest share seen, percent.
        max: f64,
    },
}

impl Warning {
    /// Short machine-readable name, as used in JSON.
    pub fn kind(&self) -> &'static str {
        match self {
            Warning::Disabled => "disabled",
            Warning::NoEntries => "no_entries",
            Warning::NoOps => "no_ops",
            Warning::Unaccounted { .. } => "unaccounted",
            Warning::ProbeDominated { .. } => "probe_dominated",
            Warning::TscNotInvariant => "tsc_not_invariant",
            Warning::UnsteadyClock { .. } => "unsteady_clock",
            Warning::FewRuns { .. } => "few_runs",
            Warning::UnstableShare { .. } => "unstable_share",
        }
    }
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Warning::Disabled => f.write_str(
                "probes are disabled: loopbench-probe was built without its `enabled` feature, so nothing was measured",
            ),
            Warning::NoEntries => f.write_str(
                "no phase recorded an entry: did the bracketed code run, and did its threads exit or call flush() before the report?",
            ),
            Warning::NoOps => f.write_str(
                "no ops counted: call count_ops(n) once per operation, or the per-op columns stay empty",
            ),
            Warning::Unaccounted {
                phase,
                fraction,
                probe_fraction,
            } => {
                write!(
                    f,
                    "{:.1}% of `{phase}` is not covered by its children (over {:.0}%)",
                    100.0 * fraction,
                    100.0 * UNACCOUNTED_WARN
                )?;
                if let Some(p) = probe_fraction.filter(|p| *p >= 0.01) {
                    write!(
                        f,
                        "; the probes themselves explain at least {:.0} points of it (fences also stall the work around them, so likely more)",
                        100.0 * p.min(*fraction)
                    )?;
                    if p > 0.5 * fraction {
                        return f.write_str(": bracket fewer, larger regions");
                    }
                }
                f.write_str(": bracket the rest before choosing a fix")
            }
            Warning::ProbeDominated { phase, fraction, read, subtracted } => {
                write!(
                    f,
                    "`{phase}`: the probe's own cost is ~{:.0}% of what it recorded",
                    100.0 * fraction
                )?;
                match (read, subtracted) {
                    (Read::Fenced, _) => f.write_str(
                        "; declare it .serialising() for regions this short, or bracket a larger region",
                    ),
                    (Read::Serialising, false) => f.write_str(
                        "; compare with Report::subtracting_overhead(), or bracket a larger region",
                    ),
                    (Read::Serialising, true) => f.write_str(
                        "; already subtracted, but the estimate is as large as the signal: bracket a larger region",
                    ),
                }
            }
            Warning::TscNotInvariant => f.write_str(
                "CPUID does not declare an invariant TSC: its rate may follow the core clock, so counts and the ns conversion can drift",
            ),
            Warning::UnsteadyClock { spread } => write!(
                f,
                "the counter rate varied {:.1}% across calibration windows: the ns conversion is approximate",
                100.0 * spread
            ),
            Warning::FewRuns { runs } => write!(
                f,
                "only {runs} run(s): take at least {MIN_RUNS} to confirm the shares are stable"
            ),
            Warning::UnstableShare { phase, min, max } => write!(
                f,
                "share of `{phase}` ranged {min:.1}%..{max:.1}% across runs (over {SHARE_SPREAD_WARN:.0} points): run longer, single-threaded, and drop warm-up before trusting it"
            ),
        }
    }
}

/// Reports of repeated runs of the same workload, to check that shares are
/// stable before acting on them.
///
/// ```
/// use loopbench_probe::{reset, Report, Runs};
///
/// let mut runs = Runs::new();
/// for _ in 0..3 {
///     reset();
///     // ... run the workload ...
///     runs.push(Report::capture());
/// }
/// print!("{}", runs.to_text());
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Runs {
    reports: Vec<Report>,
}

/// One phase's share in each run of a [`Runs`].
#[derive(Clone, Debug, PartialEq)]
pub struct ShareSeries {
    /// `parent/child` path of the phase.
    pub path: String,
    /// Share in percent per run; `None` where the phase is absent or the run
    /// has no ticks.
    pub shares: Vec<Option<f64>>,
}

impl ShareSeries {
    /// Largest minus smallest share, in percentage points; `None` with fewer
    /// than two values.
    pub fn spread(&self) -> Option<f64> {
        let values: Vec<f64> = self.shares.iter().flatten().copied().collect();
        if values.len() < 2 {
            return None;
        }
        let min = values.iter().copied().fold(f64::INFINITY, f64::min);
        let max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        Some(max - min)
    }
}

impl Runs {
    /// No runs yet.
    pub fn new() -> Runs {
        Runs::default()
    }

    /// Adds one run's report.
    pub fn push(&mut self, report: Report) {
        self.reports.push(report);
    }

    /// The reports, in the order pushed.
    pub fn reports(&self) -> &[Report] {
        &self.reports
    }

    /// Each phase's share across the runs, phases in order of first
    /// appearance (matched by path).
    pub fn shares(&self) -> Vec<ShareSeries> {
        let mut series: Vec<ShareSeries> = Vec::new();
        for (run, report) in self.reports.iter().enumerate() {
            for i in 0..report.phases.len() {
                let path = report.path(i);
                let at = match series.iter().position(|s| s.path == path) {
                    Some(at) => at,
                    None => {
                        series.push(ShareSeries {
                            path,
                            shares: vec![None; self.reports.len()],
                        });
                        series.len() - 1
                    }
                };
                series[at].shares[run] = report.share(i);
            }
        }
        series
    }

    /// [`Warning::FewRuns`] and one [`Warning::UnstableShare`] per phase
    /// whose share spread exceeds [`SHARE_SPREAD_WARN`].
    pub fn warnings(&self) -> Vec<Warning> {
        let mut warnings = Vec::new();
        if self.reports.iter().any(|r| !r.enabled) {
            warnings.push(Warning::Disabled);
            return warnings;
        }
        if self.reports.len() < MIN_RUNS {
            warnings.push(Warning::FewRuns {
                runs: self.reports.len(),
            });
        }
        for s in self.shares() {
            if s.spread().is_some_and(|spread| spread > SHARE_SPREAD_WARN) {
                let values = s.shares.iter().flatten().copied();
                warnings.push(Warning::UnstableShare {
                    min: values.clone().fold(f64::INFINITY, f64::min),
                    max: values.fold(f64::NEG_INFINITY, f64::max),
                    phase: s.path,
                });
            }
        }
        warnings
    }

    /// A table of each phase's share per run and its spread, then warnings.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        let series = self.shares();
        let width = series
            .iter()
            .map(|s| s.path.len())
            .chain([5])
            .max()
            .unwrap_or(5);
        let _ = write!(out, "{:<width$}", "share");
        for run in 1..=self.reports.len() {
            let _ = write!(out, "  {:>7}", format!("run {run}"));
        }
        let _ = writeln!(out, "  {:>8}", "spread");
        for s in &series {
            let _ = write!(out, "{:<width$}", s.path);
            for share in &s.shares {
                let _ = write!(out, "  {:>7}", pct(*share));
            }
            let _ = writeln!(
                out,
                "  {:>8}",
                num(s.spread(), 1) + if s.spread().is_some() { "pp" } else { "" }
            );
        }
        let warnings = self.warnings();
        if !warnings.is_empty() {
            let _ = writeln!(out, "\nwarnings:");
            for w in warnings {
                let _ = writeln!(out, "  - {w}");
            }
        }
        out
    }

    /// The runs as JSON: `{"runs":[<report>...],"shares":[...],"warnings":[...]}`.
    pub fn to_json(&self) -> String {
        let mut out = String::new();
        let mut o = Object::new(&mut out);
        let v = o.key("runs");
        v.push('[');
        for (k, r) in self.reports.iter().enumerate() {
            if k > 0 {
                v.push(',');
            }
            r.write_json(v);
        }
        v.push(']');
        let v = o.key("shares");
        v.push('[');
        for (k, s) in self.shares().iter().enumerate() {
            if k > 0 {
                v.push(',');
            }
            let mut so = Object::new(v);
            so.str("path", &s.path);
            let sv = so.key("shares");
            sv.push('[');
            for (j, share) in s.shares.iter().enumerate() {
                if j > 0 {
                    sv.push(',');
                }
                json::opt_float(sv, *share);
            }
            sv.push(']');
            so.opt_float("spread_points", s.spread());
            so.finish();
        }
        v.push(']');
        write_warnings(&mut o, &self.warnings());
        o.finish();
        out
    }
}
