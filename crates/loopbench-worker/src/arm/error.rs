//! What arms fail with: an arm as written that does not parse ([`ArmError`],
//! with its build part's [`SpecError`]), and a prepared arm that fails while
//! it runs a shape ([`RunError`]: the hard errors that name shape, arm and
//! rep). A leaf: the scheduler, the workers and the session all name these,
//! and the top-level error only wraps them.

use crate::engines::{EngineError, OptionError, UnknownEngine};
use crate::shapes::ShapeError;
use thiserror::Error;

/// Why an arm (or an engine name) as written does not parse.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum ArmError {
    /// A plan or a list of arms with none in it.
    #[error("no engines given")]
    NoArms,
    #[error(transparent)]
    UnknownEngine(#[from] UnknownEngine),
    /// The build part (`@0.31`, `=path:DIR`, `+profile:lto`).
    #[error(transparent)]
    Build(#[from] SpecError),
    /// The mock engine's options (`cost=NS`, ...) do not parse.
    #[error("arm `{arm}`: {source}")]
    Mock {
        arm: String,
        #[source]
        source: OptionError,
    },
    #[error("engine {engine} takes no options, got `{option}`")]
    NoOptions { engine: String, option: String },
    #[error("unknown option `{option}` for {engine} (valid: {valid})")]
    UnknownOption {
        engine: String,
        option: String,
        /// The engine's options, comma-separated.
        valid: String,
    },
}

/// A version requirement after `@` that loopbench cannot use.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum RequirementError {
    #[error("empty version requirement after `@`")]
    Empty,
    #[error("`{req}` is not a version requirement: {detail}")]
    Invalid {
        req: String,
        /// semver's message (its error is neither `Clone` nor `Eq`).
        detail: String,
    },
    #[error("no version number in requirement `{req}`")]
    NoVersion { req: String },
}

/// Why the build part of an arm (`@0.31`, `=path:DIR`, `+profile:lto`) does
/// not parse.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum SpecError {
    #[error("arm `{arm}`: {source}")]
    Requirement {
        arm: String,
        #[source]
        source: RequirementError,
    },
    #[error("arm `{arm}`: after `=` expected `path:DIR`, got `{got}` (registry versions use `@`, e.g. {engine}@0.31)")]
    NotAPath {
        arm: String,
        engine: String,
        got: String,
    },
    #[error("arm `{arm}`: empty path after `path:`")]
    EmptyPath { arm: String },
    #[error("arm `{arm}`: after `git:` expected DIR#REV (a repository and a revision, e.g. ../wasmi#main), got `{got}`")]
    GitRevision { arm: String, got: String },
    #[error("arm `{arm}`: missing engine name")]
    MissingEngine { arm: String },
    #[error("arm `{arm}`: unknown profile `{profile}` (valid: {valid})")]
    UnknownProfile {
        arm: String,
        profile: String,
        /// The profiles, comma-separated.
        valid: String,
    },
    #[error("arm `{arm}`: unknown build setting `+{setting}` (valid: +feature:NAME, +profile:NAME, +rustflags:FLAGS, +ignore-rust-version)")]
    UnknownSetting { arm: String, setting: String },
}

/// Why a prepared arm failed on a shape. Verify and engine failures are hard
/// errors: the session stops and names the shape, the arm and the rep.
#[derive(Debug, Error, Clone)]
pub enum RunError {
    /// A rep produced the wrong result.
    #[error("verify failed: shape {shape}, arm {arm}, rep {rep}: {detail}")]
    Verify {
        shape: String,
        arm: String,
        rep: usize,
        detail: String,
    },
    /// The engine trapped or failed while running a shape.
    #[error("shape {shape}, arm {arm}: {source}")]
    Engine {
        shape: String,
        arm: String,
        #[source]
        source: EngineError,
    },
    /// A build arm's worker failed to build, crashed, hung or misbehaved.
    #[error("shape {shape}, arm {arm}: {detail}")]
    Worker {
        shape: String,
        arm: String,
        detail: String,
    },
    /// A duet rep was asked of an arm that runs in this process.
    #[error("a duet needs every arm in a worker process (not --in-process)")]
    NoDuet,
    /// The arm's iteration override gives no count for the shape.
    #[error("arm {arm}: {detail}")]
    Iters { arm: String, detail: String },
    #[error(transparent)]
    Shape(#[from] ShapeError),
}
