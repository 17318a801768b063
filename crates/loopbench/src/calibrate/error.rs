//! What a calibration can fail with, in its own words: the base count that
//! does not scale, an arm the shape cannot run, a repetition or a toggle
//! whose session went wrong. Context sits in fields so a caller can tell the
//! cases apart; the top-level error keeps it whole (`Error::Above`).
//!
//! A session reports a failed arm as text (its `errors`), so the
//! repetition and toggle variants carry that text rather than a source.

use crate::engines::EngineError;
use thiserror::Error;

#[derive(Debug, Error)]
pub enum CalibrateError {
    /// `--iters` that no effect can scale to an exact integer count.
    #[error("--iters {iters} does not scale exactly by every effect on shape {shape}: use a multiple of {unit}")]
    InexactIters {
        iters: u64,
        shape: String,
        unit: u64,
    },
    /// The engine of a calibration arm could not be built.
    #[error("{source}")]
    Engine {
        arm: String,
        #[source]
        source: EngineError,
    },
    /// The scheduler skipped an arm of the one-iteration overhead run.
    #[error("calibration arm skipped: {reason}")]
    ArmSkipped { reason: String },
    /// The calibration's engine lacks a proposal the shape needs.
    #[error("cannot calibrate on shape {shape}: {reason}")]
    Unsupported { shape: String, reason: String },
    /// The one-shot arm's engine lacks a proposal the shape needs.
    #[error("{reason}")]
    OneShotUnsupported { shape: String, reason: String },
    /// An arm of a repetition's session failed.
    #[error("calibration repetition {repetition}: {detail}")]
    Repetition { repetition: usize, detail: String },
    #[error("calibration repetition {repetition}: no result")]
    RepetitionWithoutResult { repetition: usize },
    /// An arm of the known-sign toggle's session failed.
    #[error("known-sign toggle on {shape}: {detail}")]
    Toggle { shape: String, detail: String },
    #[error("toggle on {shape} produced no result")]
    ToggleWithoutResult { shape: String },
    #[error("toggle on {shape}: {arm} did not run")]
    ToggleArmMissing { shape: String, arm: String },
}

crate::converts_above!(CalibrateError);
