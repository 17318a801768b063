//! What a replay can fail with, in its own words: a file that does not
//! read, a CSV that is not loopbench's per-rep CSV, a shape or arm that is
//! not in it, options out of range. Context sits in fields; the top-level
//! error only converts (`Error::Replay`).

use std::path::PathBuf;
use thiserror::Error;

use crate::stats::estimators::UnknownEstimator;

/// The columns a per-rep CSV must have (`loopbench run --csv` writes them).
pub const REQUIRED: &[&str] = &["session", "epoch", "round", "shape", "arm", "role"];

#[derive(Debug, Error)]
pub enum ReplayError {
    #[error("cannot read {}: {source}", path.display())]
    Open {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The CSV layer failed (bad quoting, ragged rows, bad gzip data).
    #[error("{}: {source}", path.display())]
    Csv {
        path: PathBuf,
        #[source]
        source: csv::Error,
    },
    #[error("{}: not a per-rep CSV of `loopbench run --csv`: no column {} (needs {})", path.display(), missing.join(", "), needs.join(", "))]
    MissingColumns {
        path: PathBuf,
        missing: Vec<String>,
        needs: Vec<String>,
    },
    #[error("{}, line {line}: bad {column} `{value}`", path.display())]
    BadValue {
        path: PathBuf,
        line: u64,
        column: String,
        value: String,
    },
    #[error("{}, line {line}: a second {arm} rep for shape {shape}, epoch {epoch}, round {round}", path.display())]
    DuplicateRep {
        path: PathBuf,
        line: u64,
        shape: String,
        arm: String,
        epoch: u64,
        round: u64,
    },
    #[error("{}: no timed reps", path.display())]
    Empty { path: PathBuf },
    #[error("shape `{shape}` is not in {} (it has: {})", path.display(), has.join(", "))]
    UnknownShape {
        path: PathBuf,
        shape: String,
        has: Vec<String>,
    },
    #[error("shape {shape} has no baseline arm (role `baseline`) in {}", path.display())]
    NoBaseline { path: PathBuf, shape: String },
    #[error("shape {shape} has no null arm (role `null`) in {}: replay injects effects into the null control's reps", path.display())]
    NoNull { path: PathBuf, shape: String },
    #[error("shape {shape} has several null arms ({}): choose one with --null", arms.join(", "))]
    SeveralNulls { shape: String, arms: Vec<String> },
    #[error("--null {arm}: not a null arm of shape {shape} (its null arms: {})", nulls.join(", "))]
    UnknownNull {
        arm: String,
        shape: String,
        nulls: Vec<String>,
    },
    #[error("no shape has the {min_epochs} epochs with paired baseline and null reps that a replay needs (lower --min-epochs; the most any shape has is {most})")]
    TooFewEpochs { min_epochs: usize, most: usize },
    #[error("--effects `{value}`: {reason}")]
    BadEffect { value: String, reason: String },
    #[error(transparent)]
    Estimator(#[from] UnknownEstimator),
    #[error("{option} {value}: {reason}")]
    BadOption {
        option: &'static str,
        value: String,
        reason: &'static str,
    },
}
