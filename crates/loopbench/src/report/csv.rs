//! CSV: the raw data, one row per timed rep, for pandas, R or a
//! spreadsheet. A header row; numbers without units (the header names the
//! unit); an empty cell where a value was not read, never 0.
//!
//! `workload` is a user's workload's identity (its module, invocation and
//! inputs; empty for the built-in shapes): two rows of one shape name with
//! different identities measured different workloads.
//!
//! Counter columns hold the count for the whole rep (per iteration times
//! the rep's iterations), so every cell is a measured quantity. Documents
//! without reps have their own rows: a calibration one row per effect and
//! repetition, a comparison one row per shape and arm.

use super::{Exporter, ReportError};
use crate::results::{Document, Session};
use crate::session::counters::METRICS;

pub struct Csv;

impl Exporter for Csv {
    fn render(&self, doc: &Document) -> Result<Vec<u8>, ReportError> {
        match doc {
            Document::Session(s) => session(s),
            Document::Model(m) => session(&m.session),
            Document::Calibration(c) => calibration(c),
            Document::Compare(c) => comparison(c),
            other => Err(ReportError::NotTabular { kind: other.kind() }),
        }
    }
}

fn err(source: csv::Error) -> ReportError {
    ReportError::Csv { source }
}

fn finish(w: csv::Writer<Vec<u8>>) -> Result<Vec<u8>, ReportError> {
    w.into_inner().map_err(|e| ReportError::CsvFlush {
        source: e.into_error(),
    })
}

fn opt<T: ToString>(x: Option<T>) -> String {
    x.map(|v| v.to_string()).unwrap_or_default()
}

/// The counters that have a value anywhere in the session, display order.
fn counter_keys(s: &Session) -> Vec<&'static str> {
    METRICS
        .iter()
        .map(|m| m.key)
        .filter(|k| {
            s.results
                .iter()
                .any(|r| r.arms.iter().any(|a| a.counters.values.contains_key(*k)))
        })
        .collect()
}

/// Every timed rep of every arm of every shape.
pub fn session(s: &Session) -> Result<Vec<u8>, ReportError> {
    let keys = counter_keys(s);
    let mut w = csv::Writer::from_writer(Vec::new());
    let mut header = vec![
        "session",
        "epoch",
        "round",
        "slot",
        "shape",
        "workload",
        "arm",
        "role",
        "iterations",
        "ns",
        "cpu_ns",
    ];
    header.extend(keys.iter().copied());
    header.extend([
        "involuntary_switches",
        "preempted",
        "layout_variant",
        "arm_layout_sd_pct",
    ]);
    w.write_record(&header).map_err(err)?;
    let id = s.id.clone().unwrap_or_default();
    for r in &s.results {
        for a in &r.arms {
            // Schema 1 kept samples without rep records: one process, so
            // epoch 0, rounds in order, iterations the shape's.
            let reps: Vec<crate::results::RepRecord> =
                if a.reps.len() == a.samples_ns_per_iter.len() {
                    a.reps.clone()
                } else {
                    a.samples_ns_per_iter
                        .iter()
                        .enumerate()
                        .map(|(i, ns)| crate::results::RepRecord {
                            epoch: 0,
                            round: i as u32,
                            slot: u32::MAX,
                            iters: r.iters,
                            ns: ns * r.iters as f64,
                            cpu_ns: None,
                            involuntary_switches: None,
                            partner: None,
                            core: None,
                            skew_ns: None,
                        })
                        .collect()
                };
            for (i, rep) in reps.iter().enumerate() {
                let mut row = vec![
                    id.clone(),
                    rep.epoch.to_string(),
                    rep.round.to_string(),
                    if rep.slot == u32::MAX {
                        String::new()
                    } else {
                        rep.slot.to_string()
                    },
                    r.shape.clone(),
                    r.identity.clone().unwrap_or_default(),
                    a.arm.clone(),
                    a.role.name().to_string(),
                    rep.iters.to_string(),
                    rep.ns.to_string(),
                    opt(rep.cpu_ns),
                ];
                for k in &keys {
                    let v = a
                        .counters
                        .values
                        .get(*k)
                        .and_then(|c| c.samples_per_iter.get(i).copied().flatten())
                        .map(|per_iter| per_iter * rep.iters as f64);
                    row.push(opt(v));
                }
                row.push(opt(rep.involuntary_switches));
                row.push(opt(rep.involuntary_switches.map(|n| n > 0)));
                // The code layout this rep ran in, and the arm's spread
                // across layouts (the same on each of its rows).
                row.push(opt(a.build_variants.get(&rep.epoch)));
                row.push(opt(a.layout_spread.as_ref().map(|l| l.sd_pct)));
                w.write_record(&row).map_err(err)?;
            }
        }
    }
    finish(w)
}

fn calibration(c: &crate::results::calibration::Calibration) -> Result<Vec<u8>, ReportError> {
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record([
        "repetition",
        "metric",
        "arm",
        "true_pct",
        "true_time_pct",
        "base_iters",
        "iters",
        "median_pct",
        "ci_lo_pct",
        "ci_hi_pct",
        "confidence",
        "pairs",
        "min_pct",
        "covered",
        "detected",
        "verdict",
        "session_seconds",
    ])
    .map_err(err)?;
    for r in &c.rows {
        w.write_record([
            r.repetition.to_string(),
            serde_json::to_value(r.metric)
                .ok()
                .and_then(|v| v.as_str().map(String::from))
                .unwrap_or_default(),
            r.arm.clone(),
            r.true_pct.to_string(),
            r.true_time_pct.to_string(),
            r.base_iters.to_string(),
            r.iters.to_string(),
            r.median_pct.to_string(),
            r.ci_pct[0].to_string(),
            r.ci_pct[1].to_string(),
            r.confidence.to_string(),
            r.pairs.to_string(),
            r.min_pct.to_string(),
            r.covered.to_string(),
            r.detected.to_string(),
            r.verdict.to_string(),
            r.session_seconds.to_string(),
        ])
        .map_err(err)?;
    }
    finish(w)
}

fn comparison(c: &crate::results::compare::SessionComparison) -> Result<Vec<u8>, ReportError> {
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record([
        "a_session",
        "b_session",
        "shape",
        "arm",
        "a_ns_per_iter",
        "b_ns_per_iter",
        "units",
        "a_units",
        "b_units",
        "median_pct",
        "ci_lo_pct",
        "ci_hi_pct",
        "verdict",
        "outcome",
        "basis",
    ])
    .map_err(err)?;
    for r in &c.rows {
        w.write_record([
            opt(c.a.id.clone()),
            opt(c.b.id.clone()),
            r.shape.clone(),
            r.arm.clone(),
            r.a_ns_per_iter.to_string(),
            r.b_ns_per_iter.to_string(),
            r.units.clone(),
            r.a_units.to_string(),
            r.b_units.to_string(),
            r.median_pct.to_string(),
            r.ci_pct[0].to_string(),
            r.ci_pct[1].to_string(),
            super::compare::verdict_words(r.verdict).to_string(),
            r.outcome.map(|o| o.to_string()).unwrap_or_default(),
            r.basis_text(),
        ])
        .map_err(err)?;
    }
    finish(w)
}
