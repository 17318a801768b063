//! What the worker side can fail with: the adapter family ([`FamilyError`]) and everything from
//! checking a build to starting its process ([`WorkerError`]).
//!
//! The causes that are not `Clone` (I/O, JSON) sit behind an `Arc`: a build
//! result, failure included, is cached and shared by every arm of that build.

use crate::arm::RequirementError;
use crate::engines::EngineKind;
use semver::Version;
use std::path::PathBuf;
use std::sync::Arc;
use thiserror::Error;

/// No adapter family builds this engine, or this version of it.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum FamilyError {
    #[error(
        "{engine} cannot be built as a worker (no adapter family; buildable engines: {buildable})"
    )]
    NotBuildable {
        engine: EngineKind,
        /// The buildable engines, comma-separated.
        buildable: String,
    },
    #[error("{engine} {version} is outside every adapter family (supported: {supported})")]
    Outside {
        engine: EngineKind,
        version: Version,
        /// The families' ranges, `; `-separated.
        supported: String,
    },
}

/// Checking, building or starting a worker.
#[derive(Debug, Error, Clone)]
pub enum WorkerError {
    #[error(transparent)]
    Barrier(#[from] super::barrier::BarrierError),
    #[error("worker builds need loopbench's source, which is not at {} any more; set {var} to a checkout's crates/loopbench-worker directory", dir.display())]
    SourceGone { dir: PathBuf, var: &'static str },
    #[error(transparent)]
    Requirement(#[from] RequirementError),
    #[error(transparent)]
    Family(#[from] FamilyError),
    #[error("no {engine} version is compiled into this binary; name one, e.g. {engine}@0.10")]
    NotCompiledIn { engine: EngineKind },
    #[error("{engine}=path:{}: no such directory", dir.display())]
    NoDirectory { engine: EngineKind, dir: PathBuf },
    #[error("{engine}=path:{}: no Cargo.toml there; point at a checkout of the {engine} crate (or of a workspace that contains it)", dir.display())]
    NoManifest { engine: EngineKind, dir: PathBuf },
    #[error("{engine}=path:{}: cargo cannot read the manifest: {detail}", dir.display())]
    BadManifest {
        engine: EngineKind,
        dir: PathBuf,
        /// The last lines of cargo's stderr, ` | `-separated.
        detail: String,
    },
    #[error("{engine}=path:{}: no package named {engine} there (found: {found})", dir.display())]
    NoPackage {
        engine: EngineKind,
        dir: PathBuf,
        /// The packages there, comma-separated (or `none`).
        found: String,
    },
    /// `=git:DIR#REV`: git could not resolve the revision or check it out.
    #[error("{engine}=git:{}#{rev}: {detail}", repo.display())]
    Git {
        engine: EngineKind,
        repo: PathBuf,
        rev: String,
        detail: String,
    },
    /// An arm's build is refused (prefixes the reason with the arm).
    #[error("arm {arm}: {source}")]
    Arm {
        arm: String,
        #[source]
        source: Box<WorkerError>,
    },
    #[error("arm `{arm}`: {engine} cannot run from a build (buildable engines: {buildable})")]
    NotBuildable {
        arm: String,
        engine: String,
        buildable: String,
    },
    #[error("arm `{arm}`: no {engine} adapter takes option `{option}`")]
    NoAdapterOption {
        arm: String,
        engine: String,
        option: String,
    },
    #[error("arm {arm}: adapter family {family} takes no option `{option}` (valid: {valid})")]
    FamilyOption {
        arm: String,
        family: &'static str,
        option: String,
        /// The family's options, comma-separated (or `none`).
        valid: String,
    },
    /// A file or directory of the worker project.
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: Arc<std::io::Error>,
    },
    /// An in-process arm's engine could not be made.
    #[error("{0}")]
    Engine(#[from] crate::engines::EngineError),
    /// Pinning the orchestrator's thread failed.
    #[error(transparent)]
    Measure(#[from] crate::measure::MeasureError),
    #[error("no parent directory")]
    NoParent,
    #[error("cannot run cargo: {0}")]
    Cargo(#[source] Arc<std::io::Error>),
    /// `cargo metadata` failed or said something unexpected.
    #[error("{0}")]
    Metadata(String),
    #[error("resolving the worker's dependencies failed:\n{detail}")]
    Resolve {
        /// The last lines of cargo's stderr, indented.
        detail: String,
    },
    #[error("{label}: the requirement resolved to {engine} {version}, outside adapter family {family} ({engine} {covers}); pin a version, e.g. {engine}@={version}")]
    ResolvedOutside {
        label: String,
        engine: EngineKind,
        version: Version,
        family: &'static str,
        covers: &'static str,
    },
    #[error("{0}")]
    Json(#[source] Arc<serde_json::Error>),
    /// `cargo build` failed; the detail holds the tail of its output.
    #[error("{0}")]
    Build(String),
    #[error("not enough disk space for {what}: {} free where the worker cache is ({}), and it needs about {}; `loopbench cache --max-size SIZE` frees some", crate::units::format_bytes(*free), root.display(), crate::units::format_bytes(*need))]
    NoSpace {
        what: String,
        root: PathBuf,
        free: u64,
        need: u64,
    },
    #[error("the worker cache {} cannot be made: {} is not a directory; set {var} to a directory", root.display(), blocker.display())]
    CacheNotADirectory {
        root: PathBuf,
        blocker: PathBuf,
        var: &'static str,
    },
    #[error("cargo reported success but {} does not exist", bin.display())]
    NoBinary { bin: PathBuf },
    #[error("layout variants: {detail}")]
    Layout { detail: String },
    /// Layout variants of this binary's own engines cannot be made.
    #[error("{0}")]
    Relink(String),
    /// A mock arm with a source whose options cannot be had.
    #[error("arm {arm}: {detail}")]
    MockSource { arm: String, detail: String },
    #[error("cannot find this loopbench binary to start workers: {0}")]
    CurrentExe(#[source] Arc<std::io::Error>),
    #[error("cannot start worker {}: {source}", bin.display())]
    Spawn {
        bin: PathBuf,
        #[source]
        source: Arc<std::io::Error>,
    },
    #[error("worker without {0}")]
    NoPipe(&'static str),
    #[error("{var}: unknown randomisation `{part}` (valid: env, stack, heap, all, none)")]
    UnknownRandomisation { var: &'static str, part: String },
}

impl WorkerError {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        WorkerError::Io {
            path: path.into(),
            source: Arc::new(source),
        }
    }
}
