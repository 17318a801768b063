//! `loopbench noise`: this machine's noise, level by level, for one
//! engine and shape, at each rep length of a sweep; and the smallest
//! change a session of a given budget would find at each.

use crate::machine::Machine;
use crate::stats::components::Components;
use crate::stats::sessions::Between;
use serde::{Deserialize, Serialize};

/// The schema noise documents are written with.
pub const SCHEMA: &str = "loopbench-noise/1";

/// One rep length of the sweep.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct NoiseRow {
    /// The rep length asked for, milliseconds.
    pub rep_ms: f64,
    /// The baseline's median rep, as measured, milliseconds.
    pub measured_rep_ms: f64,
    /// `sequential` (one arm at a time on one core, as sessions run) or
    /// `duet` (the arm and its null control at once on two cores).
    pub schedule: String,
    #[serde(flatten)]
    pub components: Components,
    /// Wall time of one epoch (process start, preparation, the rounds),
    /// seconds: what one more epoch costs.
    pub epoch_seconds: f64,
    /// Epochs the budget buys at this rep length.
    pub budget_epochs: usize,
    /// The interval half-width and the smallest change found with 80%
    /// power (95% confidence) in the budget, percent.
    pub half_width_pct: f64,
    pub smallest_change_pct: f64,
}

/// The whole measurement.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Noise {
    pub schema: String,
    pub machine: Machine,
    pub arm: String,
    pub version: String,
    pub shape: String,
    pub metric: crate::results::Metric,
    /// The session budget the predictions are for, seconds.
    pub budget_s: f64,
    pub rows: Vec<NoiseRow>,
    /// The spread of this machine's repeated sessions of the shape and arm,
    /// from the history (absolute time); absent without three of them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_level: Option<Between>,
    /// The rep length with the smallest predicted change, and what it finds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub choice: Option<f64>,
    /// The schedule of the chosen row (absent in documents from before
    /// duets: sequential).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub choice_schedule: Option<String>,
    /// The estimators replayed on the chosen row's own reps (`loopbench
    /// replay`'s rows: coverage of zero, and of a +1% injected into the
    /// null's reps, half-width, detection).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub estimators: Option<crate::replay::ShapeReplay>,
    /// The estimator those favour, and why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub choice_estimator: Option<crate::replay::EstimatorChoice>,
    /// What was not measured, and why.
    pub notes: Vec<String>,
    pub wall_seconds: f64,
}

impl Noise {
    /// The row the choice names.
    pub fn chosen(&self) -> Option<&NoiseRow> {
        let c = self.choice?;
        let schedule = self.choice_schedule.as_deref().unwrap_or("sequential");
        self.rows
            .iter()
            .find(|r| r.rep_ms == c && r.schedule == schedule)
    }
}
