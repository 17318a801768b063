//! A shape's reps reduced to its result: per arm the metric per iteration,
//! minimum and median, rates and counters; then every candidate and the
//! null control compared with the baseline across epochs
//! ([`crate::stats::compare`]), and the counters compared the same way.

use super::{ArmPlan, ShapeRun, LEVEL};
use crate::arm::Arm;
use crate::measure::cpu::THREAD_CPU;
use crate::measure::rusage::INVOLUNTARY;
use crate::measure::summary as counter_summary;
use crate::results::{
    paired_epochs, ArmCounters, ArmResult, Comparison, Metric, MinMedian, NullControl, RepRecord,
    Role, ShapeResult,
};
use crate::schedule::Timed;
use crate::stats;

/// The shape's result from every rep so far.
pub(super) fn summarise(
    run: &ShapeRun,
    specs: &[ArmPlan],
    arms: &[&dyn Arm],
    metric: Metric,
) -> ShapeResult {
    let module = &run.module;
    let counts = run.counts.clone();
    let mut results = Vec::new();
    for (i, a) in specs.iter().enumerate() {
        let (label, role) = (&a.label, &a.role);
        // The count this arm's reps ran (an override scales the shape's).
        let n = a.iters.resolve(module.iters).unwrap_or(module.iters);
        let iters = n as f64;
        let reps = &run.reps[i];
        let value = |t: &Timed| match metric {
            Metric::Wall => Some(t.rep.reading.ns),
            Metric::ThreadCpu => t.rep.reading.counters.get(THREAD_CPU).copied(),
        };
        // A rep without the metric (a CPU clock that failed) is left out.
        let kept: Vec<&(u32, Timed)> = reps.iter().filter(|(_, t)| value(t).is_some()).collect();
        let samples: Vec<f64> = kept
            .iter()
            .filter_map(|(_, t)| value(t).map(|v| v / iters))
            .collect();
        let records: Vec<RepRecord> = kept
            .iter()
            .map(|(e, t)| RepRecord {
                epoch: *e,
                round: t.round as u32,
                slot: t.slot as u32,
                iters: n,
                ns: t.rep.reading.ns,
                cpu_ns: t.rep.reading.counters.get(THREAD_CPU).copied(),
                involuntary_switches: t.rep.reading.counters.get(INVOLUNTARY).map(|v| *v as u64),
            })
            .collect();
        let switches: Vec<u64> = records
            .iter()
            .filter_map(|r| r.involuntary_switches)
            .collect();
        let ns = (!samples.is_empty()).then(|| MinMedian {
            min: stats::min(&samples),
            median: stats::median(&samples),
        });
        let ns_per_op = match (&ns, &counts) {
            (Some(t), Some(c)) if c.ops > 0.0 => Some(t.median / c.ops),
            _ => None,
        };
        let mb_per_s = match (&ns, &counts) {
            (Some(t), Some(c)) if c.bytes > 0.0 => Some(c.bytes / t.median * 1e3),
            _ => None,
        };
        let readings: Vec<&crate::measure::Reading> =
            kept.iter().map(|(_, t)| &t.rep.reading).collect();
        results.push(ArmResult {
            counters: counter_summary::summarise_arm(
                &readings,
                iters,
                counts.as_ref().map(|c| c.ops),
            ),
            arm: label.clone(),
            role: *role,
            version: arms[i].version(),
            ns_per_iter: ns,
            ns_per_op,
            mb_per_s,
            verified_reps: reps.len(),
            skipped: run.skipped[i].as_ref().map(|r| format!("skipped: {r}")),
            error: run.failed[i].clone(),
            samples_ns_per_iter: samples,
            preempted_reps: (!switches.is_empty())
                .then(|| switches.iter().filter(|&&s| s > 0).count()),
            reps: records,
        });
    }
    let base = results
        .iter()
        .find(|r| r.role == Role::Baseline)
        .map(|r| r.samples_by_epoch());
    let compare = |r: &ArmResult, null: Option<&stats::EpochChange>| {
        let (c, b) = paired_epochs(&r.samples_by_epoch(), base.as_ref()?);
        stats::compare(&c, &b, null, LEVEL)
    };
    let null_change = results
        .iter()
        .find(|r| r.role == Role::Null)
        .and_then(|r| compare(r, None))
        .map(|c| c.change);
    let baseline_label = results.first().map(|r| r.arm.clone()).unwrap_or_default();
    let comparisons = results
        .iter()
        .filter(|r| r.role != Role::Baseline)
        .filter_map(|r| {
            let c = compare(r, null_change.as_ref())?;
            Some(Comparison::of(&r.arm, &baseline_label, &c))
        })
        .collect();
    let counter_arms: Vec<(&str, Role, &ArmCounters, &[RepRecord])> = results
        .iter()
        .map(|r| (r.arm.as_str(), r.role, &r.counters, r.reps.as_slice()))
        .collect();
    let (counter_comparisons, counter_null_control) = counter_summary::compare(&counter_arms);
    ShapeResult {
        counter_comparisons,
        counter_null_control,
        shape: module.name().to_string(),
        app_steps: module.shape.app_steps(),
        prices: module.shape.prices().to_string(),
        iters: module.iters,
        bytes_per_iter: counts.as_ref().map(|c| c.bytes),
        counts_per_iter: counts,
        arms: results,
        comparisons,
        null_control: null_change.as_ref().map(NullControl::of),
        stopped: None,
    }
}
