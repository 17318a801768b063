//! A shape's results, as kept: each arm's reps and summaries, its
//! comparison with the baseline, the nulls, the layout spread, the exact
//! counts per iteration, the counters, and when the shape stopped.

use crate::stats::Verdict;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    Baseline,
    Null,
    Candidate,
    /// The baseline's other layout variants against it: the build-layout
    /// null, beside the process null (a build arm in variants only).
    BuildNull,
    /// The yardstick of `--reference` that was not also asked for as an
    /// arm: measured and compared like a candidate, but not a change to
    /// decide (no outcome, no gate, no stop).
    Reference,
}

/// How the session's nulls are labelled: the baseline's label plus one of
/// these.
pub const NULL_SUFFIX: &str = "#null";
pub const BUILD_NULL_SUFFIX: &str = "#build-null";

/// Whether an arm's label is one of the session's nulls.
pub fn is_null_label(label: &str) -> bool {
    label.ends_with(NULL_SUFFIX) || label.ends_with(BUILD_NULL_SUFFIX)
}

impl Role {
    /// As stored in the history and the CSV.
    pub fn name(self) -> &'static str {
        match self {
            Role::Baseline => "baseline",
            Role::Null => "null",
            Role::Candidate => "candidate",
            Role::BuildNull => "build_null",
            Role::Reference => "reference",
        }
    }

    /// One of the session's nulls (process or build layout).
    pub fn is_null(self) -> bool {
        matches!(self, Role::Null | Role::BuildNull)
    }

    /// What a null's row says in place of a verdict.
    pub fn floor_name(self) -> &'static str {
        match self {
            Role::BuildNull => "build null",
            _ => "null floor",
        }
    }
}

/// The widest end of a null's interval, percent.
fn reach(n: &NullControl) -> f64 {
    n.ci_pct[0].abs().max(n.ci_pct[1].abs())
}

impl ShapeResult {
    /// Each measured arm's spread across code layouts (null arms left out:
    /// they are the baseline's), in arm order.
    pub fn layout_spreads(&self) -> Vec<(&str, &crate::stats::builds::LayoutSpread)> {
        self.arms
            .iter()
            .filter(|a| !crate::results::is_null_label(&a.arm))
            .filter_map(|a| Some((a.arm.as_str(), a.layout_spread.as_ref()?)))
            .collect()
    }

    /// Whether comparison `c` moves less than the code layout alone moves
    /// either of its two arms (the larger SD of the two): a difference an
    /// engine's alignment sensitivity could make, so no ranking.
    pub fn inside_layout_spread(&self, c: &Comparison) -> bool {
        let spread = |label: &str| {
            self.arms
                .iter()
                .find(|a| a.arm == label)
                .and_then(|a| a.layout_spread.as_ref())
                .map(|s| s.sd_pct)
        };
        let widest = spread(&c.arm)
            .into_iter()
            .chain(spread(&c.vs))
            .fold(0.0, f64::max);
        // The spread is an SD of log time in percent; so is the change's log.
        widest > 0.0 && (100.0 * (1.0 + c.median_pct / 100.0).ln()).abs() < widest
    }

    /// The noise floor of the verdicts, percent: the widest end of the
    /// null control's interval ([`crate::stats::verdict`]).
    pub fn floor_pct(&self) -> Option<f64> {
        Some(reach(self.null_control.as_ref()?))
    }

    /// The widest end of both nulls' intervals, percent: what a change
    /// between two sessions must clear ([`crate::results::compare`]), whose
    /// layouts were drawn apart.
    pub fn both_nulls_pct(&self) -> Option<f64> {
        let n = self.null_control.as_ref()?;
        Some(reach(n).max(self.build_null.as_ref().map_or(0.0, reach)))
    }

    /// The change of the null arm with `role` (process or build layout).
    pub fn null_of(&self, role: Role) -> Option<&NullControl> {
        match role {
            Role::Null => self.null_control.as_ref(),
            Role::BuildNull => self.build_null.as_ref(),
            _ => None,
        }
    }
}

/// What a rep's cost is read from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    /// The monotonic clock around the call: what sessions report by default.
    #[default]
    Wall,
    /// The timing thread's CPU time around the same call: time spent
    /// waiting for a core is not in it.
    ThreadCpu,
}

impl Metric {
    pub const ALL: [Metric; 2] = [Metric::Wall, Metric::ThreadCpu];

    /// As written in JSON and stored in the history.
    pub fn key(self) -> &'static str {
        match self {
            Metric::Wall => "wall",
            Metric::ThreadCpu => "thread_cpu",
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Metric::Wall => "wall clock",
            Metric::ThreadCpu => "thread CPU time",
        }
    }
}

/// One verified, timed rep: where it ran and what it cost.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct RepRecord {
    /// Epoch (a fresh set of worker processes, i.e. a fresh memory layout).
    pub epoch: u32,
    /// Measured round within the epoch.
    pub round: u32,
    /// Position in the round.
    pub slot: u32,
    /// Iterations the call ran.
    pub iters: u64,
    /// Wall-clock nanoseconds of the call.
    pub ns: f64,
    /// The timing thread's CPU nanoseconds, where read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_ns: Option<f64>,
    /// Involuntary context switches of the timing thread during the call,
    /// where read (non-zero: the rep waited for a core).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub involuntary_switches: Option<u64>,
    /// In a duet: the arm this rep ran beside, at the same moment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partner: Option<String>,
    /// In a duet: the core the rep ran on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub core: Option<u32>,
    /// In a duet: when this rep left the barrier minus when its partner
    /// did, in nanoseconds (how simultaneous the pair really was).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skew_ns: Option<i64>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct MinMedian {
    pub min: f64,
    pub median: f64,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ArmResult {
    pub arm: String,
    pub role: Role,
    pub version: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ns_per_iter: Option<MinMedian>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ns_per_op: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mb_per_s: Option<f64>,
    pub verified_reps: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skipped: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// ns per iteration of every measured rep (of the session's metric),
    /// epoch by epoch, in round order.
    pub samples_ns_per_iter: Vec<f64>,
    /// Every measured rep, parallel to `samples_ns_per_iter` (empty in
    /// schema 1, which had one process and no epochs).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reps: Vec<RepRecord>,
    /// Reps that were preempted (an involuntary context switch during the
    /// timed call), where the switches were read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preempted_reps: Option<usize>,
    /// For an arm run in layout variants of its build: the variant (index)
    /// each epoch ran.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub build_variants: BTreeMap<u32, u32>,
    /// Its spread across those variants (SD of time between code layouts,
    /// with its interval), when a variant ran in two epochs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layout_spread: Option<crate::stats::builds::LayoutSpread>,
    /// Extra counters (TSC, perf events, callgrind), per iteration and per op.
    #[serde(default, skip_serializing_if = "ArmCounters::is_empty")]
    pub counters: ArmCounters,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Comparison {
    pub arm: String,
    pub vs: String,
    pub median_pct: f64,
    pub ci_pct: [f64; 2],
    pub confidence: f64,
    pub ratio: f64,
    pub verdict: Verdict,
    /// Changed, unchanged (inside `--precision`) or unsure (methodology
    /// rule 16); absent in older files and outside sessions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<crate::stats::outcome::Outcome>,
    /// The precision the outcome was taken at, percent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub precision_pct: Option<f64>,
    #[serde(flatten)]
    pub layout: Layout,
}

impl Comparison {
    /// The comparison as a decision reads it: its interval, level and
    /// degrees of freedom (epochs, or build clusters in layout variants,
    /// minus one).
    pub fn check(&self) -> crate::stats::outcome::Check {
        let units = self
            .layout
            .build
            .as_ref()
            .map_or(self.layout.epochs, |b| b.clusters);
        crate::stats::outcome::Check {
            median_pct: self.median_pct,
            ci_pct: self.ci_pct,
            level: self.confidence,
            pairs: self.layout.pairs,
            df: units.saturating_sub(1) as f64,
        }
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct NullControl {
    pub median_pct: f64,
    pub ci_pct: [f64; 2],
    pub confidence: f64,
    #[serde(flatten)]
    pub layout: Layout,
}

/// How a change's interval was built and how much of the spread is layout
/// (see [`crate::stats::epochs`]). Schema 1 had none of it: one process,
/// rounds only.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct Layout {
    /// Paired rounds over all epochs.
    #[serde(default)]
    pub pairs: usize,
    /// Epochs (fresh processes) the interval is built from.
    #[serde(default)]
    pub epochs: usize,
    /// False with one epoch: the interval then covers rounds of one process
    /// and says nothing about layout.
    #[serde(default)]
    pub includes_layout: bool,
    /// `rounds_only`, `student_t`, or a bootstrap.
    #[serde(default)]
    pub interval: String,
    /// Each epoch's median change, in percent.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub epoch_median_pct: Vec<f64>,
    /// Which epochs of the session those are (parallel; absent in older
    /// files): what pairs two rows of one session epoch by epoch.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub epoch_ids: Vec<u32>,
    /// Each of those epochs' pair of layout variants (parallel), when the
    /// arms ran in variants of their builds.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub epoch_clusters: Vec<u32>,
    /// Standard deviation of the epoch medians, in percent: the spread a
    /// rerun in a new process would see.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub between_epoch_sd_pct: Option<f64>,
    /// The layout variance component alone, in percent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layout_sd_pct: Option<f64>,
    /// Typical half-width of one epoch's own interval, in percent: the noise
    /// inside a process.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub within_epoch_half_width_pct: Option<f64>,
    /// The spread between epochs exceeds what the noise inside them explains.
    #[serde(default)]
    pub layout_sensitive: bool,
    /// The build level, when the interval is across layout variants of the
    /// arms' builds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub build: Option<crate::stats::builds::BuildLevel>,
    /// When the two arms are builds of one engine linked with the same
    /// shuffle seed in every epoch: how their times move together across
    /// those seeds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paired_layouts: Option<crate::stats::builds::Pairing>,
}

/// Per-iteration counts and where they came from.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct IterCounts {
    pub ops: f64,
    pub taken_branches: f64,
    pub loads: f64,
    pub stores: f64,
    pub calls: f64,
    pub bytes: f64,
    /// Bytes moved by bulk operators (`memory.copy/fill/init`), part of
    /// `bytes` (counted runs only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bulk_bytes: Option<f64>,
    /// Of `bulk_bytes`, those written by `memory.fill` (counted runs only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bulk_fill_bytes: Option<f64>,
    /// Taken branches + calls + returns (the seed harness's blocks/iter).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transfers: Option<f64>,
    /// Function entries, loop header executions and `if`s (counted runs
    /// only; see `loopbench_count::Counts::block_entries`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block_entries: Option<f64>,
    /// Branch mispredictions per iteration of the counting run's simulated
    /// predictor (counted runs only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mispredicts: Option<f64>,
    /// Of `mispredicts`, the multi-way ones (`br_table`, `call_indirect`:
    /// a wrong target); absent in older files, where all count as two-way.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub multiway_mispredicts: Option<f64>,
    /// Executed instructions per class (counted runs only).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub classes: BTreeMap<String, f64>,
    /// Of `classes`, the instructions a register-based engine (wasmi, wasm3)
    /// folds into a neighbouring instruction: operands read in place and
    /// results written straight into their local (counted runs only; see
    /// `loopbench_count::Counts::folded`). Only `local` and `const` are ever
    /// non-zero.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub folded: BTreeMap<String, f64>,
    /// `counted` (the exact counting run, checked against the declaration)
    /// or `declared` (the shape's own numbers, when the counting engine
    /// cannot run the shape).
    pub source: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ShapeResult {
    pub shape: String,
    /// Set when the "shape" is a real application: its steps per rep.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub app_steps: Option<u64>,
    /// Set for a user's workload: the hash of its module, arguments,
    /// environment and files. Two sessions' rows of one name but another
    /// identity measured different workloads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identity: Option<String>,
    pub prices: String,
    pub iters: u64,
    pub bytes_per_iter: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counts_per_iter: Option<IterCounts>,
    pub arms: Vec<ArmResult>,
    pub comparisons: Vec<Comparison>,
    /// Every other arm against the session's reference arm (`--reference`),
    /// the ratios that carry across sessions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub anchored: Vec<Comparison>,
    pub null_control: Option<NullControl>,
    /// The build-layout null (the baseline's other variants against it),
    /// when the baseline ran in layout variants.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub build_null: Option<NullControl>,
    /// Every candidate against the baseline, per counter.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub counter_comparisons: Vec<CounterComparison>,
    /// The null control's change, per counter.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub counter_null_control: BTreeMap<String, NullControl>,
    /// Why the shape stopped taking epochs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped: Option<Stopped>,
}

/// Why a shape stopped, after how much.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Stopped {
    /// `precision reached`, `budget exhausted`, `epoch limit` or `interrupted`.
    pub reason: String,
    pub epochs: usize,
    pub seconds: f64,
    /// The widest interval half-width of the shape's comparisons, in
    /// percent of the ratio each estimates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub half_width_pct: Option<f64>,
}

#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq)]
pub struct MedianMin {
    pub median: f64,
    pub min: f64,
}

/// One counter of one arm on one shape.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct CounterSummary {
    pub per_iter: MedianMin,
    /// Per wasm op, when the shape's ops per iteration are known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_op: Option<MedianMin>,
    /// Reps that had a value.
    pub reps: usize,
    /// Per rep in round order; `null` where the counter gave no value.
    pub samples_per_iter: Vec<Option<f64>>,
}

/// All counters of one arm on one shape.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct ArmCounters {
    pub values: BTreeMap<String, CounterSummary>,
    /// Instructions per core cycle (median over reps), where the perf group
    /// gave both.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ipc: Option<f64>,
    /// The smallest fraction of time the perf group was on the PMU; below 1
    /// the perf values were multiplexed and are scaled estimates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub perf_running_fraction_min: Option<f64>,
}

impl ArmCounters {
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    pub fn multiplexed(&self) -> bool {
        self.perf_running_fraction_min.is_some_and(|f| f < 1.0)
    }
}

/// One counter's paired change of one arm against the baseline.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct CounterComparison {
    pub counter: String,
    /// The same fields as a time comparison (flattened in JSON).
    #[serde(flatten)]
    pub comparison: Comparison,
}

/// A counter comparison reads like the time comparison it extends.
impl std::ops::Deref for CounterComparison {
    type Target = Comparison;
    fn deref(&self) -> &Comparison {
        &self.comparison
    }
}

impl Comparison {
    /// `arm` against `vs`, from the one compare every command makes.
    pub fn of(arm: &str, vs: &str, c: &crate::stats::Compared) -> Self {
        Comparison {
            arm: arm.to_string(),
            vs: vs.to_string(),
            median_pct: c.change.median_pct,
            ci_pct: c.change.ci_pct,
            confidence: c.change.confidence,
            ratio: c.change.ratio,
            verdict: c.verdict,
            outcome: None,
            precision_pct: None,
            layout: Layout::of(&c.change),
        }
    }

    /// With its three-way outcome at `precision_pct` ([`crate::stats::outcome`]).
    pub fn with_outcome(mut self, precision_pct: f64) -> Self {
        self.outcome = Some(crate::stats::outcome::outcome(
            self.verdict,
            self.ci_pct,
            precision_pct,
        ));
        self.precision_pct = Some(precision_pct);
        self
    }

    /// What the verdict column says: the outcome and why, or for a
    /// comparison without one (older files) the verdict.
    pub fn verdict_text(&self) -> String {
        match (self.outcome, self.precision_pct) {
            (Some(o), Some(p)) => crate::stats::outcome::describe(self.verdict, o, self.ci_pct, p),
            _ => self.verdict.to_string(),
        }
    }
}

impl Layout {
    /// The layout part of a change computed across epochs.
    pub fn of(c: &crate::stats::EpochChange) -> Self {
        Layout {
            pairs: c.pairs,
            epochs: c.epochs,
            includes_layout: c.includes_layout,
            interval: c.method.name().to_string(),
            epoch_median_pct: c.epoch_median_pct.clone(),
            epoch_ids: c.epoch_ids.clone(),
            epoch_clusters: c.epoch_clusters.clone(),
            between_epoch_sd_pct: c.between_epoch_sd_pct,
            layout_sd_pct: c.layout_sd_pct,
            within_epoch_half_width_pct: Some(c.within_epoch_half_width_pct),
            layout_sensitive: c.layout_sensitive,
            build: c.build.clone(),
            paired_layouts: None,
        }
    }
}

impl NullControl {
    pub fn of(c: &crate::stats::EpochChange) -> Self {
        NullControl {
            median_pct: c.median_pct,
            ci_pct: c.ci_pct,
            confidence: c.confidence,
            layout: Layout::of(c),
        }
    }
}

impl ArmResult {
    /// The samples grouped by epoch, in round order (schema 1: epoch 0).
    pub fn samples_by_epoch(&self) -> BTreeMap<u32, Vec<f64>> {
        group_by_epoch(&self.samples_ns_per_iter, &self.reps)
    }

    /// For an arm run in layout variants: the log of each epoch's median
    /// and the variant that epoch ran (parallel, in epoch order).
    pub fn variant_epochs(&self) -> (Vec<f64>, Vec<u32>) {
        self.samples_by_epoch()
            .into_iter()
            .filter(|(_, samples)| !samples.is_empty())
            .filter_map(|(epoch, samples)| {
                let variant = *self.build_variants.get(&epoch)?;
                Some((crate::stats::median(&samples).ln(), variant))
            })
            .unzip()
    }

    /// Its spread across the layout variants it ran in, at `level`.
    /// `epoch_var`: one epoch's noise as the null control measured it, for
    /// a session that ran no variant twice ([`crate::stats::builds::layout_spread`]).
    pub fn spread_across_layouts(
        &self,
        level: f64,
        epoch_var: Option<f64>,
    ) -> Option<crate::stats::builds::LayoutSpread> {
        let (log_medians, variants) = self.variant_epochs();
        crate::stats::builds::layout_spread(&log_medians, &variants, level, epoch_var)
    }

    /// [`ArmResult::samples_by_epoch`] of the reps that pair with `other`
    /// ([`reps_against`]).
    pub fn samples_against(&self, other: &str) -> BTreeMap<u32, Vec<f64>> {
        let (values, reps) = reps_against(&self.samples_ns_per_iter, &self.reps, other);
        group_by_epoch(&values, &reps)
    }
}

/// `values` (parallel to `reps`) grouped by the reps' epochs; all in
/// epoch 0 when there are no rep records.
pub fn group_by_epoch<T: Clone>(values: &[T], reps: &[RepRecord]) -> BTreeMap<u32, Vec<T>> {
    let mut out: BTreeMap<u32, Vec<T>> = BTreeMap::new();
    if reps.len() != values.len() {
        out.insert(0, values.to_vec());
        return out;
    }
    for (v, r) in values.iter().zip(reps) {
        out.entry(r.epoch).or_default().push(v.clone());
    }
    out
}

/// The reps of `reps` that belong to a comparison with `other`: in a duet
/// the baseline runs once beside every other arm in each round, and only
/// the reps beside `other` pair with `other`'s; every other arm ran once
/// per round (beside the baseline), and all its reps pair.
pub fn reps_against<'a, T>(
    values: &'a [T],
    reps: &'a [RepRecord],
    other: &str,
) -> (Vec<T>, Vec<RepRecord>)
where
    T: Clone,
{
    let beside = |r: &RepRecord| r.partner.as_deref() == Some(other);
    if values.len() != reps.len() || !reps.iter().any(beside) {
        return (values.to_vec(), reps.to_vec());
    }
    values
        .iter()
        .zip(reps)
        .filter(|(_, r)| beside(r))
        .map(|(v, r)| (v.clone(), r.clone()))
        .unzip()
}

/// The median absolute start skew of a shape's duet reps, in
/// nanoseconds (`None` when no rep ran in a duet).
pub fn median_skew_ns(arms: &[ArmResult]) -> Option<f64> {
    let skews: Vec<f64> = arms
        .iter()
        .filter(|a| a.role != Role::Baseline)
        .flat_map(|a| a.reps.iter().filter_map(|r| r.skew_ns))
        .map(|s| s.unsigned_abs() as f64)
        .collect();
    (!skews.is_empty()).then(|| crate::stats::median(&skews))
}

/// Two arms' samples on the epochs both ran, aligned epoch by epoch.
pub fn paired_epochs(
    candidate: &BTreeMap<u32, Vec<f64>>,
    baseline: &BTreeMap<u32, Vec<f64>>,
) -> (Vec<Vec<f64>>, Vec<Vec<f64>>) {
    candidate
        .iter()
        .filter_map(|(e, c)| Some((c.clone(), baseline.get(e)?.clone())))
        .unzip()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A shape of arms `a` and `b` with the given spreads (percent), and a
    /// comparison of `b` against `a` moving by `change_pct`.
    fn shape(spreads: [Option<f64>; 2], change_pct: f64) -> (ShapeResult, Comparison) {
        let arm = |label: &str, spread: Option<f64>| {
            serde_json::json!({
                "arm": label, "role": "candidate", "version": "v", "verified_reps": 0,
                "samples_ns_per_iter": [],
                "layout_spread": spread.map(|sd| serde_json::json!(
                    {"variants": 8, "sd_pct": sd, "ci_pct": [sd / 2.0, sd * 2.0]})),
            })
        };
        let r: ShapeResult = serde_json::from_value(serde_json::json!({
            "shape": "s", "prices": "wall", "iters": 1, "bytes_per_iter": 0.0,
            "arms": [arm("a", spreads[0]), arm("b", spreads[1])],
            "comparisons": [], "null_control": null,
        }))
        .unwrap();
        let c: Comparison = serde_json::from_value(serde_json::json!({
            "arm": "b", "vs": "a", "median_pct": change_pct, "ci_pct": [change_pct, change_pct],
            "confidence": 0.95, "ratio": 1.0 + change_pct / 100.0, "verdict": "slower",
        }))
        .unwrap();
        (r, c)
    }

    #[test]
    fn a_change_inside_either_arms_layout_spread_is_marked() {
        // exp(0.09) - 1 = +9.4%: inside a 10% spread of either arm.
        let inside = (0.09f64.exp() - 1.0) * 100.0;
        for spreads in [
            [Some(10.0), None],
            [None, Some(10.0)],
            [Some(2.0), Some(10.0)],
        ] {
            let (r, c) = shape(spreads, inside);
            assert!(r.inside_layout_spread(&c), "{spreads:?}");
            let (r, c) = shape(spreads, -inside / 2.0);
            assert!(r.inside_layout_spread(&c), "faster too: {spreads:?}");
        }
        // Outside the wider spread, or no spread known: not marked.
        let (r, c) = shape([Some(5.0), Some(8.0)], inside);
        assert!(!r.inside_layout_spread(&c));
        let (r, c) = shape([None, None], 0.1);
        assert!(!r.inside_layout_spread(&c));
        assert_eq!(r.layout_spreads().len(), 0);
        let (r, _) = shape([Some(5.0), None], 0.0);
        assert_eq!(
            r.layout_spreads(),
            [("a", r.arms[0].layout_spread.as_ref().unwrap())]
        );
    }
}
