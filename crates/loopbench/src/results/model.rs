//! `loopbench model`'s results: the price of each primitive per engine,
//! the subtraction pairs, and the residuals of shapes the fit did not see.

use serde::{Deserialize, Serialize};

/// Features that are not instructions but dynamic quantities on top of
/// them (every other feature counts executed instructions).
pub const EXTRA: &[&str] = &[
    "taken_branch",
    "block_entry",
    "bulk_byte",
    "fill_byte",
    "mispredict",
];

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Price {
    pub feature: String,
    /// ns per unit (per instruction, per taken branch, per bulk byte), or
    /// the model's `counter` per unit when it was fitted to a counter.
    pub ns: f64,
    pub ci: [f64; 2],
    pub identifiable: bool,
    /// Set when the price comes from twin shapes rather than the fit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from_pair: Option<String>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Residual {
    pub shape: String,
    pub measured_ns: f64,
    pub reproduced_ns: f64,
    pub residual_pct: f64,
    /// 95% bootstrap interval of `residual_pct` (epochs and rounds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ci_pct: Option<[f64; 2]>,
    /// Fitted shapes: the error when the fit is made without this shape;
    /// absent when no other shape prices one of its features.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loo_pct: Option<f64>,
    /// `fit` for fitted shapes, `held_out` for predictions, `not_fitted`
    /// for shapes outside the fit (with the reason in `note`).
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Pair {
    pub name: String,
    pub value: f64,
    pub ci: [f64; 2],
    pub unit: String,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct EngineModel {
    pub arm: String,
    pub prices: Vec<Price>,
    pub not_identifiable: Vec<String>,
    pub residuals: Vec<Residual>,
    pub pairs: Vec<Pair>,
    /// Set for compiling engines: why their prices are not per instruction.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub caveat: Option<String>,
    /// The bootstrap replicates of the prices, in `FEATURES` order, for
    /// intervals on what is computed from them (an app projection); not
    /// saved.
    #[serde(skip)]
    pub price_replicates: Vec<Vec<f64>>,
    /// Median |leave-one-out error| over the fitted shapes, in percent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loo_median_abs_pct: Option<f64>,
    /// Set when the model prices a counter per iteration instead of the
    /// time (`callgrind_ir`: host instructions, exact and untouched by the
    /// memory layout); every `ns` field then holds that counter's units.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counter: Option<String>,
    /// Time from the engine's host instructions (`--instructions-from`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from_instructions: Option<InstructionModel>,
}

/// Time per iteration as `ns_per_instruction` times the engine's exact
/// host instructions per iteration (callgrind, from a session of its own)
/// plus `ns_per_mispredict` times the simulated mispredictions: how much of
/// each shape's time the instructions it executes explain, whatever the op
/// classes, and what is left for the CPU.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct InstructionModel {
    /// The counter the instructions come from (`callgrind_ir`).
    pub counter: String,
    pub ns_per_instruction: f64,
    pub ns_per_instruction_ci: [f64; 2],
    pub ns_per_mispredict: f64,
    pub ns_per_mispredict_ci: [f64; 2],
    /// Set when the misprediction price comes from the twins rather than
    /// the fit: `(branch_random - branch_periodic) / extra mispredicts`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mispredict_from_pair: Option<String>,
    pub residuals: Vec<Residual>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loo_median_abs_pct: Option<f64>,
}

impl EngineModel {
    /// What the prices and the measured and reproduced values are in.
    pub fn unit(&self) -> &str {
        self.counter.as_deref().unwrap_or("ns")
    }
}
