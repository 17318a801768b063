//! What report/ can fail with: a format or target the command line named
//! that cannot be used, an output file another session holds, or a value
//! the encoders refuse. The binary's [`crate::error::Error`] wraps it.
//!
//! I/O on the targets stays [`crate::error::Error::Io`]: the binary reads
//! that variant to exit quietly on a broken pipe, so a write to a closed
//! stdout must arrive as it.

use std::path::PathBuf;
use thiserror::Error;

/// A report that cannot be made or written where it was asked for.
#[derive(Debug, Error)]
pub enum ReportError {
    #[error("unknown format `{name}` (valid: {})", valid.join(", "))]
    UnknownFormat {
        name: String,
        valid: Vec<&'static str>,
    },
    #[error("only one format can go to stdout (`-`); {format} is the second")]
    SecondOnStdout { format: String },
    #[error("{} is named for two formats", path.display())]
    NamedTwice { path: PathBuf },
    #[error("{} is a directory", path.display())]
    IsADirectory { path: PathBuf },
    #[error("{} is {what}: an output is a regular file, a character device or a FIFO", path.display())]
    NotWritable { path: PathBuf, what: &'static str },
    #[error("{} is the input {}: writing it would destroy what it reports; write to another file", output.display(), input.display())]
    OutputIsInput { output: PathBuf, input: PathBuf },
    /// Another session holds the output's lock; `holder` is the pid it
    /// wrote into the lock file, when it wrote one.
    #[error(
        "{} is being written by another loopbench session{}; \
         wait for it to finish or write to another file",
        path.display(),
        holder.as_ref().map(|pid| format!(" (pid {pid})")).unwrap_or_default()
    )]
    Locked {
        path: PathBuf,
        holder: Option<String>,
    },
    /// Output files that could not be written at the end (each with its
    /// reason); every other output was written.
    #[error("export failed: {}", failed.join("; "))]
    Exports { failed: Vec<String> },
    #[error("cannot lock {}: its lock file keeps changing", path.display())]
    LockKeepsChanging { path: PathBuf },
    /// CSV has rows for sessions, calibrations and comparisons only.
    #[error("CSV holds sessions, calibrations and comparisons, not a {kind} document")]
    NotTabular { kind: &'static str },
    #[error("cannot write CSV: {source}")]
    Csv {
        #[source]
        source: csv::Error,
    },
    #[error("cannot write CSV: {source}")]
    CsvFlush {
        #[source]
        source: std::io::Error,
    },
    #[error("cannot encode JSON: {source}")]
    Json {
        #[source]
        source: serde_json::Error,
    },
}

crate::converts_above!(ReportError);
