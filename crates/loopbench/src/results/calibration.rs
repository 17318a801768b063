//! A calibration's results: known effects, what was measured, coverage.

use super::nan;
use crate::machine::Machine;
pub use crate::results::Metric;
use crate::stats::Verdict;
use serde::{Deserialize, Serialize};

/// The schema calibrations are written with.
pub const SCHEMA: &str = "loopbench-calibrate/1";

/// One effect in one repetition.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Row {
    pub repetition: usize,
    pub metric: Metric,
    pub arm: String,
    /// The true effect in loop iterations, exact: `(scaled / base - 1) * 100`.
    pub true_pct: f64,
    /// The true effect in time, after the fixed per-call cost: `true_pct * (1 - c/T)`.
    pub true_time_pct: f64,
    pub base_iters: u64,
    pub iters: u64,
    pub median_pct: f64,
    pub ci_pct: [f64; 2],
    pub confidence: f64,
    pub pairs: usize,
    /// The change of the minima, `min(candidate) / min(baseline) - 1`:
    /// contention only adds time, so the least disturbed reps may agree
    /// better than the medians (no interval: this is a point estimate).
    pub min_pct: f64,
    /// The interval holds `true_pct`.
    pub covered: bool,
    /// The interval excludes zero with the sign of the truth (for the null:
    /// excludes zero at all, a false alarm).
    pub detected: bool,
    /// The session's verdict against the concurrent null control.
    pub verdict: Verdict,
    pub session_seconds: f64,
    pub load_start: Option<[f64; 3]>,
    pub load_end: Option<[f64; 3]>,
}

/// One repetition of the whole calibration.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Repetition {
    pub repetition: usize,
    pub session_seconds: f64,
    pub rounds: usize,
    pub reps: usize,
    /// Median time of one baseline call, ns.
    #[serde(deserialize_with = "nan::f64")]
    pub base_call_ns: f64,
    pub load_start: Option<[f64; 3]>,
    pub load_end: Option<[f64; 3]>,
}

/// One effect over all repetitions.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct EffectSummary {
    pub true_pct: f64,
    pub repetitions: usize,
    pub covered: usize,
    /// Fraction of repetitions whose interval held the truth.
    #[serde(deserialize_with = "nan::f64")]
    pub coverage: f64,
    pub detected: usize,
    #[serde(deserialize_with = "nan::f64")]
    pub detection_rate: f64,
    /// Detected in at least 90% of repetitions (never for the null).
    pub reliably_detected: bool,
    /// Median over repetitions of the measured median change.
    #[serde(deserialize_with = "nan::f64")]
    pub median_pct: f64,
    pub mean_abs_error_pct: f64,
    /// Median over repetitions of the change of the minima, and its mean
    /// absolute error against the truth.
    #[serde(deserialize_with = "nan::f64")]
    pub min_pct: f64,
    pub mean_abs_error_min_pct: f64,
    /// Median over repetitions of the interval's width.
    #[serde(deserialize_with = "nan::f64")]
    pub median_ci_width_pct: f64,
    /// `true_pct - true_time_pct`: what the fixed per-call cost takes off.
    #[serde(deserialize_with = "nan::f64")]
    pub overhead_bias_pct: f64,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Reliable {
    pub true_pct: f64,
    pub detected: usize,
    pub repetitions: usize,
    pub median_session_seconds: f64,
    pub total_session_seconds: f64,
}

/// wasmi:fuel against wasmi on one shape, with its null control.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ToggleRow {
    pub shape: String,
    pub arm: String,
    pub vs: String,
    pub median_pct: f64,
    pub ci_pct: [f64; 2],
    pub verdict: Verdict,
    /// The known sign is for executed instructions (fuel metering only adds
    /// them), not for time: the instruction change, where a counter of
    /// executed instructions ran, and which counter.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions_pct: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions_counter: Option<String>,
    /// Whether the time change points the way the instruction change does
    /// (`None`: either is within noise, or no instruction counter ran).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_agrees: Option<bool>,
    pub null_median_pct: Option<f64>,
    pub null_ci_pct: Option<[f64; 2]>,
    pub rounds: usize,
    pub wall_seconds: f64,
    pub load_start: Option<[f64; 3]>,
    pub load_end: Option<[f64; 3]>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SettingsInfo {
    pub shape: String,
    pub engine: String,
    pub version: String,
    pub bytes: u64,
    pub k: u32,
    pub base_iters: u64,
    pub effects_pct: Vec<f64>,
    pub repeat: usize,
    pub rounds: usize,
    pub warmup: usize,
    pub load_threads: usize,
    pub confidence_level: f64,
    pub build_profile: String,
    pub rotation: String,
}

/// The whole calibration as reported and saved.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Calibration {
    pub schema: String,
    pub machine: Machine,
    pub settings: SettingsInfo,
    /// Median time of a one-iteration call: an upper bound on the fixed cost `c`.
    #[serde(deserialize_with = "nan::f64")]
    pub call_overhead_ns: f64,
    /// Median baseline call over all repetitions, `T`.
    #[serde(deserialize_with = "nan::f64")]
    pub base_call_ns: f64,
    pub repetitions: Vec<Repetition>,
    pub rows: Vec<Row>,
    pub effects: Vec<EffectSummary>,
    /// The smallest effect detected in at least 90% of repetitions, with
    /// every larger effect also so detected.
    pub smallest_reliable: Option<Reliable>,
    /// The same reps by thread CPU time (absent where that clock is not
    /// available): the floor without the time spent waiting for a core.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread_cpu: Option<MetricSummary>,
    pub toggle: Vec<ToggleRow>,
    /// Every repetition and toggle shape ran; `false` when an interrupt
    /// stopped it (documents from before this field read as complete).
    #[serde(default = "complete")]
    pub complete: bool,
    pub wall_seconds: f64,
}

fn complete() -> bool {
    true
}

/// The calibration by a metric other than the wall clock.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct MetricSummary {
    pub metric: Metric,
    #[serde(deserialize_with = "nan::f64")]
    pub call_overhead_ns: f64,
    #[serde(deserialize_with = "nan::f64")]
    pub base_call_ns: f64,
    pub effects: Vec<EffectSummary>,
    pub smallest_reliable: Option<Reliable>,
}

#[cfg(test)]
mod tests {
    use crate::results::{parse, Document};

    /// A calibration written before `complete` existed reads as complete,
    /// and the figures of effects without repetitions (NaN, `null` in
    /// JSON, as an interrupted calibration writes them) read back as NaN.
    #[test]
    fn old_and_interrupted_calibrations_read_back() {
        let doc = serde_json::json!({
            "schema": super::SCHEMA,
            "machine": {"cpu": "c", "cores": 1, "os": "o", "arch": "a", "hostname": "h",
                "load_start": null, "load_end": null},
            "settings": {"shape": "add_chain", "engine": "wasmi", "version": "1", "bytes": 1,
                "k": 1, "base_iters": 20, "effects_pct": [0.0, 5.0], "repeat": 3, "rounds": 2,
                "warmup": 1, "load_threads": 0, "confidence_level": 0.95,
                "build_profile": "release", "rotation": "r"},
            "call_overhead_ns": 10.0, "base_call_ns": null,
            "repetitions": [], "rows": [],
            "effects": [{"true_pct": 5.0, "repetitions": 0, "covered": 0, "coverage": null,
                "detected": 0, "detection_rate": null, "reliably_detected": false,
                "median_pct": null, "mean_abs_error_pct": 0.0, "min_pct": null,
                "mean_abs_error_min_pct": 0.0, "median_ci_width_pct": null,
                "overhead_bias_pct": null}],
            "smallest_reliable": null, "toggle": [], "wall_seconds": 1.0
        });
        let Ok(Document::Calibration(c)) = parse(&doc.to_string()) else {
            panic!("does not read back");
        };
        assert!(c.complete);
        assert!(c.base_call_ns.is_nan() && c.effects[0].coverage.is_nan());
        let mut cut = doc.clone();
        cut["complete"] = false.into();
        let Ok(Document::Calibration(c)) = parse(&cut.to_string()) else {
            panic!("does not read back");
        };
        assert!(!c.complete);
        let note = crate::report::calibration::incomplete(&c).unwrap();
        assert!(note.contains("0 of 3 repetitions"), "{note}");
    }
}
