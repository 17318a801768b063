//! The JSON rendering of a [`Report`] and of [`Runs`] (the schema is in the
//! crate README), written by the crate's own small JSON writer.

use super::{Report, Runs, Warning};
use crate::counter::{Counter, Read};
use crate::json::{self, Object};

impl Report {
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

impl Runs {
    /// The runs as JSON: `{"runs":[<report>...],"shares":[...],"warnings":[...]}`.
    pub fn to_json(&self) -> String {
        let mut out = String::new();
        let mut o = Object::new(&mut out);
        let v = o.key("runs");
        v.push('[');
        for (k, r) in self.reports().iter().enumerate() {
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
