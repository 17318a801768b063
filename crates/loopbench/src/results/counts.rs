//! `loopbench count`: what a shape or module executed, exactly.

use serde::{Deserialize, Serialize};

/// The schema count results are written with.
pub const SCHEMA: &str = "loopbench-count/1";

/// Exact dynamic counts of one target.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Counts {
    pub schema: String,
    /// The shape name or module path counted.
    pub target: String,
    /// The export called, for a module file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub invoke: Option<String>,
    /// Loop iterations, for a shape.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iters: Option<u64>,
    #[serde(flatten)]
    pub counts: loopbench_count::Counts,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_iter: Option<loopbench_count::PerIter>,
    /// Why the run stopped before its end (a trap, fuel), when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped: Option<String>,
}
