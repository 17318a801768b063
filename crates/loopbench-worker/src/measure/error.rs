//! What the measure stage can fail with: pinning, probing the counters,
//! parsing `--counters`, and the callgrind re-execution and dumps.
//!
//! Every message is shown to users as is (the counters' reasons land in the
//! table and the JSON `counters` section), so the texts are stable. The
//! causes that are not `Clone` (I/O) sit behind an `Arc`: the TSC probe's
//! result, failure included, is computed once and shared.

use std::num::ParseIntError;
use std::path::PathBuf;
use std::process::ExitStatus;
use std::sync::Arc;
use thiserror::Error;

/// A callgrind output file that loopbench cannot read.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum DumpError {
    #[error("no `events:` line")]
    NoEvents,
    #[error("no Ir event in `events:`")]
    NoIr,
    #[error("no `summary:` or `totals:` line")]
    NoTotals,
    #[error("bad Ir total `{value}`: {source}")]
    BadIr {
        value: String,
        #[source]
        source: ParseIntError,
    },
}

/// Why a `--counters` value does not parse.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum ChoiceError {
    #[error("empty name in --counters `{spec}` (valid: {valid})")]
    EmptyName { spec: String, valid: String },
    #[error("unknown counter `{name}` (valid: {valid})")]
    Unknown { name: String, valid: String },
    #[error("--counters `{spec}`: `{name}` is a choice of its own and cannot be combined with other counters (give `--counters {name}` alone)")]
    AloneOnly { name: String, spec: String },
    #[error("--counters callgrind runs the session under valgrind and cannot be combined with other counters")]
    CallgrindCombined,
}

/// Pinning, a counter that cannot be had here, or callgrind failing.
#[derive(Debug, Error, Clone)]
pub enum MeasureError {
    #[error("cannot pin to core {cpu}: {source}")]
    Pin {
        cpu: usize,
        #[source]
        source: Arc<std::io::Error>,
    },
    #[error("cannot pin to core {cpu}: not supported on this system")]
    PinUnsupported { cpu: usize },

    /// The kernel refused `perf_event_open`; the reason in words a user can
    /// act on (see [`super::perf::refusal_reason`]).
    #[error("{0}")]
    PerfRefused(String),
    #[error("perf_event_open exists only on Linux")]
    PerfNotLinux,
    #[error("the perf event group opened but never counted (the PMU is busy or virtualised away)")]
    PerfNeverCounted,

    /// The probe crate's fixed-rate check failed; its reason.
    #[error("{0}")]
    NotFixedRate(String),
    #[error("calibration gave an implausible counter rate of {hz:.0} Hz")]
    ImplausibleRate { hz: f64 },

    #[error("`valgrind --version` failed ({status}){}", said(stderr))]
    ValgrindFailed { status: ExitStatus, stderr: String },
    #[error(
        "--counters callgrind needs valgrind, which is not on PATH; {}",
        super::callgrind::INSTALL_HINT
    )]
    ValgrindMissing,
    #[error("cannot run valgrind: {0}")]
    ValgrindRun(#[source] Arc<std::io::Error>),
    #[error("cannot find this program's path: {0}")]
    CurrentExe(#[source] Arc<std::io::Error>),
    #[error("cannot create a directory for callgrind output: {0}")]
    TempDir(#[source] Arc<std::io::Error>),
    #[error("cannot start valgrind: {0}")]
    ValgrindStart(#[source] Arc<std::io::Error>),
    #[error("the callgrind child ended without an exit code ({status})")]
    NoExitCode { status: ExitStatus },
    #[error("callgrind counts only in the valgrind child that `--counters callgrind` starts")]
    NotCallgrindChild,
    #[error(
        "{} is set but this process does not run under valgrind",
        super::callgrind::CHILD_ENV
    )]
    NotUnderValgrind,
    #[error("callgrind output directory {} does not exist", dir.display())]
    NoOutputDir { dir: PathBuf },
    #[error("the overhead dump could not be read")]
    OverheadUnread,
    #[error("dump name has a NUL byte")]
    NulInDumpName,
    #[error("cannot list {}: {source}", dir.display())]
    ListDumps {
        dir: PathBuf,
        #[source]
        source: Arc<std::io::Error>,
    },
    #[error("cannot read {}: {source}", path.display())]
    ReadDump {
        path: PathBuf,
        #[source]
        source: Arc<std::io::Error>,
    },
    #[error("{}: {source}", path.display())]
    Dump {
        path: PathBuf,
        #[source]
        source: DumpError,
    },
    #[error("no callgrind dump named `{name}` in {}", dir.display())]
    NoDump { name: String, dir: PathBuf },
}

/// What a failed valgrind printed, on one line, or that it printed nothing.
fn said(stderr: &str) -> String {
    let line = stderr.split_whitespace().collect::<Vec<_>>().join(" ");
    if line.is_empty() {
        " and printed nothing; reinstall valgrind".into()
    } else {
        format!(": {line}")
    }
}
