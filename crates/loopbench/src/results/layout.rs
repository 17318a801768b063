//! Layout variants of a build arm as the results record them (made by
//! [`crate::workers::layout`]): which ran, and how far the engine's code
//! moved between them.

use serde::{Deserialize, Serialize};

/// One variant as the results record it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Variant {
    pub index: usize,
    pub seed: u64,
    /// The worker's cache key (its project directory).
    pub key: String,
}

/// The variants of one build arm a session runs, as recorded with it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Variants {
    pub variants: Vec<Variant>,
    pub moved: Moved,
    /// Wall time to ensure them all (builds, or cache checks).
    pub seconds: f64,
}

/// How far the variants' code moved: of the engine's `compared` largest
/// functions present in every variant, how many sit at another address in
/// at least one variant, and one example.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Moved {
    pub compared: usize,
    pub moved: usize,
    /// The largest moved function and its address in each variant.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub example: Option<(String, Vec<u64>)>,
}
