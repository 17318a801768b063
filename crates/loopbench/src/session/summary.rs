//! A shape's reps reduced to its result: per arm the metric per iteration,
//! minimum and median, rates and counters; then every candidate and the
//! null control compared with the baseline across epochs
//! ([`crate::stats::compare`]), and the counters compared the same way.

use super::counters as counter_summary;
use super::{ArmPlan, ShapeRun, LEVEL};
use crate::arm::Arm;
use crate::measure::cpu::THREAD_CPU;
use crate::measure::rusage::INVOLUNTARY;
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
    plan: &super::Plan,
) -> ShapeResult {
    let (metric, precision_pct) = (plan.metric, plan.stop.precision_pct);
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
                partner: t.partner.map(|p| specs[p].label.clone()),
                core: t.core.map(|c| c as u32),
                skew_ns: t.skew_ns,
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
            build_variants: records
                .iter()
                .filter_map(|r| Some((r.epoch, a.variant(r.epoch as usize)? as u32)))
                .collect(),
            layout_spread: None,
            reps: records,
        });
    }
    let base_arm = results.iter().find(|r| r.role == Role::Baseline);
    // `r` against `other` across their paired epochs.
    let against = |r: &ArmResult, other: Option<&ArmResult>, floor: Option<[f64; 2]>| {
        let other = other?;
        let (mine, theirs) = (r.samples_against(&other.arm), other.samples_against(&r.arm));
        let ids: Vec<u32> = mine
            .keys()
            .filter(|e| theirs.contains_key(e))
            .copied()
            .collect();
        let clusters = build_clusters(r, other, ids.iter());
        let (c, b) = paired_epochs(&mine, &theirs);
        let mut c = stats::compare_by(&c, &b, clusters.as_deref(), floor, LEVEL, plan.estimator)?;
        c.change = c.change.numbered(&ids);
        Some(c)
    };
    let null_of = |role: Role| {
        results
            .iter()
            .find(|r| r.role == role)
            .and_then(|r| against(r, base_arm, None))
            .map(|c| c.change)
    };
    let null_change = null_of(Role::Null);
    let build_null = null_of(Role::BuildNull);
    let floor = null_change.as_ref().map(|n| n.ci_pct);
    let baseline_label = results.first().map(|r| r.arm.clone()).unwrap_or_default();
    let mut comparisons: Vec<Comparison> = results
        .iter()
        .filter(|r| r.role != Role::Baseline)
        .filter_map(|r| {
            let c = against(r, base_arm, floor)?;
            let c = Comparison::of(&r.arm, &baseline_label, &c);
            // The nulls are the floor and the reference is a yardstick,
            // not comparisons to decide.
            Some(if r.role == Role::Candidate {
                c.with_outcome(precision_pct)
            } else {
                c
            })
        })
        .collect();
    // Every other arm as a ratio to the reference: what a later session
    // can be compared with (`loopbench compare` anchors on it).
    let reference = plan
        .reference
        .and_then(|r| results.iter().find(|x| x.arm == specs[r.index].label));
    let anchored = results
        .iter()
        .filter(|r| !r.role.is_null() && reference.is_some_and(|x| x.arm != r.arm))
        .filter_map(|r| {
            let c = against(r, reference, floor)?;
            Some(Comparison::of(&r.arm, &reference?.arm, &c))
        })
        .collect();
    let counter_arms: Vec<(&str, Role, &ArmCounters, &[RepRecord])> = results
        .iter()
        .map(|r| (r.arm.as_str(), r.role, &r.counters, r.reps.as_slice()))
        .collect();
    let (counter_comparisons, counter_null_control) = counter_summary::compare(&counter_arms);
    // Each arm's spread across its layouts; where it ran no variant twice,
    // less the epoch noise its null control shows.
    let epoch_var = null_change
        .as_ref()
        .and_then(|n| stats::builds::epoch_var_of_null(&n.epoch_median_pct));
    for r in &mut results {
        r.layout_spread = r.spread_across_layouts(LEVEL, epoch_var);
    }
    // A build whose layouts pair with the baseline's (one link order per
    // epoch): how their times move together across the orders.
    let paired = |r: &ArmResult| {
        let plan_of = |label: &str| specs.iter().find(|a| a.label == label);
        matches!((plan_of(&r.arm), specs.first()), (Some(a), Some(b)) if super::builds::paired(a, b))
    };
    let base_arm = results.iter().find(|r| r.role == Role::Baseline);
    for c in &mut comparisons {
        let arm = results.iter().find(|r| r.arm == c.arm);
        if let (Some(arm), Some(base)) = (arm.filter(|a| paired(a)), base_arm) {
            let (a, b) = (base.variant_epochs(), arm.variant_epochs());
            c.layout.paired_layouts = stats::builds::pairing((&a.0, &a.1), (&b.0, &b.1), LEVEL);
        }
    }
    ShapeResult {
        counter_comparisons,
        counter_null_control,
        shape: module.name().to_string(),
        app_steps: module.shape.app_steps(),
        identity: module.shape.identity(),
        prices: module.shape.prices().to_string(),
        iters: module.iters,
        bytes_per_iter: counts.as_ref().map(|c| c.bytes),
        counts_per_iter: counts,
        arms: results,
        comparisons,
        anchored,
        null_control: null_change.as_ref().map(NullControl::of),
        build_null: build_null.as_ref().map(NullControl::of),
        stopped: None,
    }
}

/// Each paired epoch's build cluster (which variants of the two arms ran
/// in it), or `None` when neither arm ran in layout variants.
fn build_clusters<'a>(
    arm: &ArmResult,
    base: &ArmResult,
    epochs: impl Iterator<Item = &'a u32>,
) -> Option<Vec<u32>> {
    if arm.build_variants.is_empty() && base.build_variants.is_empty() {
        return None;
    }
    // Variant indices are small: one number names the pair.
    let index = |m: &std::collections::BTreeMap<u32, u32>, e: &u32| m.get(e).map_or(0, |v| v + 1);
    Some(
        epochs
            .map(|e| index(&arm.build_variants, e) * 1024 + index(&base.build_variants, e))
            .collect(),
    )
}
