//! The text rendering of a [`Report`] and of [`Runs`]: a header, a tree
//! table of cycles/op, share, entries/op and cycles/entry, then warnings.

use super::{Report, Runs, UNACCOUNTED_WARN};
use crate::counter::{Counter, Read};
use std::fmt::{self, Write as _};

impl Report {
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

impl Runs {
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
        for run in 1..=self.reports().len() {
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
}
