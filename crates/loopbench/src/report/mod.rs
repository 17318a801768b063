//! Reports: the terminal table and machine-readable JSON, and the export
//! manager that writes files atomically (temp file + rename) after every
//! shape, so an interrupted session keeps what it completed.

pub mod counters;
pub mod counts;
pub mod json;
pub mod model;
pub mod table;

use crate::error::Error;
use std::io::Write;
use std::path::{Path, PathBuf};

/// What the numbers do not measure; printed under every table.
pub const LIMITS: &[&str] = &[
    "Limits: periodic loops let the branch predictor learn every dispatch, so they understate dispatch cost",
    "  (random_ops, br_if_ladder and call_indirect_poly price the unpredictable case).",
    "ns/op is per wasm instruction, not per engine dispatch: engines fuse and translate.",
    "A micro-benchmark % is not an app %: scale it by the app's share of that machinery.",
];

/// Write `bytes` to `path` atomically: a temp file in the same directory,
/// flushed, then renamed over the target.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), Error> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let mut tmp = tempfile::NamedTempFile::new_in(dir)
        .map_err(|e| Error::io(format!("cannot create a file in {}", dir.display()), e))?;
    tmp.write_all(bytes)
        .map_err(|e| Error::io(format!("cannot write {}", path.display()), e))?;
    tmp.as_file()
        .sync_all()
        .map_err(|e| Error::io(format!("cannot flush {}", path.display()), e))?;
    tmp.persist(path)
        .map_err(|e| Error::io(format!("cannot write {}", path.display()), e.error))?;
    Ok(())
}

/// Where JSON goes.
#[derive(Clone, Debug, PartialEq)]
pub enum JsonTarget {
    Stdout,
    File(PathBuf),
}

impl JsonTarget {
    pub fn parse(s: &str) -> Self {
        if s == "-" {
            JsonTarget::Stdout
        } else {
            JsonTarget::File(PathBuf::from(s))
        }
    }

    /// Fail before any measuring if the file cannot be written.
    pub fn check(&self) -> Result<(), Error> {
        if let JsonTarget::File(p) = self {
            write_atomic(p, b"{}\n")?;
        }
        Ok(())
    }
}
