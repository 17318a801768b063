//! A session's results, as kept: owned data that serialises to the JSON
//! schema and reads back from it (every schema version written so far), so
//! any saved session can be reported again, compared or stored.

use crate::machine::Machine;
use crate::measure::counters::CounterStatus;
use crate::stats::Verdict;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    Baseline,
    Null,
    Candidate,
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
    /// ns per iteration of every measured rep, in round order.
    pub samples_ns_per_iter: Vec<f64>,
    /// Extra counters (TSC, perf events, callgrind), per iteration and per op.
    #[serde(default, skip_serializing_if = "ArmCounters::is_empty")]
    pub counters: ArmCounters,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Comparison {
    pub arm: String,
    pub vs: String,
    pub median_pct: f64,
    pub ci_pct: [f64; 2],
    pub confidence: f64,
    pub ratio: f64,
    pub verdict: Verdict,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct NullControl {
    pub median_pct: f64,
    pub ci_pct: [f64; 2],
    pub confidence: f64,
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
    /// Taken branches + calls + returns (the seed harness's blocks/iter).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transfers: Option<f64>,
    /// Executed instructions per class (counted runs only).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub classes: BTreeMap<String, f64>,
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
    pub prices: String,
    pub iters: u64,
    pub bytes_per_iter: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counts_per_iter: Option<IterCounts>,
    pub arms: Vec<ArmResult>,
    pub comparisons: Vec<Comparison>,
    pub null_control: Option<NullControl>,
    /// Every candidate against the baseline, per counter.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub counter_comparisons: Vec<CounterComparison>,
    /// The null control's change, per counter.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub counter_null_control: BTreeMap<String, NullControl>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SessionInfo {
    pub rounds: usize,
    pub warmup: usize,
    pub baseline: String,
    pub null_arm: String,
    pub bytes: u64,
    pub k: u32,
    pub iters_override: Option<u64>,
    pub engines: Vec<EngineInfo>,
    pub build_profile: String,
    pub confidence_level: f64,
    pub rotation: String,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct EngineInfo {
    pub arm: String,
    pub version: String,
}

/// The whole session as reported and saved.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Session {
    pub schema: String,
    pub machine: Machine,
    pub session: SessionInfo,
    /// Each requested counter: available or not, and why.
    pub counters: Vec<CounterStatus>,
    pub results: Vec<ShapeResult>,
    /// False while the session runs and when it stopped early.
    pub complete: bool,
    pub errors: Vec<String>,
    pub wall_seconds: f64,
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
    pub arm: String,
    pub vs: String,
    pub median_pct: f64,
    pub ci_pct: [f64; 2],
    pub confidence: f64,
    pub ratio: f64,
    pub verdict: Verdict,
}
