//! Reports: one [`Exporter`] per format, and the export manager that
//! writes every requested format of a command's [`Document`].
//!
//! A format is a file here plus one line in [`FORMATS`]: the exporter turns
//! a results value into bytes and knows nothing of files or the terminal.
//! The manager ([`Exports`]) owns the targets: files are replaced
//! atomically (temp file + rename) and only when there is a result to put
//! there, rewritten after every shape so an interrupted session keeps what
//! it completed; stdout takes at most one format.

pub mod app;
pub mod calibration;
pub mod compare;
pub mod counters;
pub mod counts;
pub mod csv;
pub mod html;
pub mod json;
pub mod markdown;
pub mod model;
pub mod svg;
pub mod table;

use crate::error::Error;
use crate::results::Document;
use std::io::Write;
use std::path::{Path, PathBuf};

/// What the numbers do not measure; printed under every table.
pub const LIMITS: &[&str] = &[
    "Limits: periodic loops let the branch predictor learn every dispatch, so they understate dispatch cost",
    "  (random_ops, br_if_ladder and call_indirect_poly price the unpredictable case).",
    "ns/op is per wasm instruction, not per engine dispatch: engines fuse and translate.",
    "A micro-benchmark % is not an app %: scale it by the app's share of that machinery.",
];

/// One output format.
pub trait Exporter {
    /// `doc` in this format.
    fn render(&self, doc: &Document) -> Result<Vec<u8>, Error>;
}

/// A format as the command line names it.
pub struct Format {
    pub name: &'static str,
    pub about: &'static str,
    make: fn() -> Box<dyn Exporter>,
}

/// Every format. A new format is a new file plus one line here.
pub const FORMATS: &[Format] = &[
    Format {
        name: "table",
        about: "the terminal table",
        make: || Box::new(table::Table),
    },
    Format {
        name: "json",
        about: "every value, versioned schema (reads back with `loopbench report`)",
        make: || Box::new(json::Json),
    },
    Format {
        name: "csv",
        about: "one row per timed rep (session, epoch, round, slot, shape, arm, role, iterations, ns, counters)",
        make: || Box::new(csv::Csv),
    },
    Format {
        name: "markdown",
        about: "a report to paste into a pull request",
        make: || Box::new(markdown::Markdown),
    },
    Format {
        name: "html",
        about: "one self-contained page with plots of every interval and the rounds behind it",
        make: || Box::new(html::Html),
    },
];

/// The format named `name`, or the list of names.
pub fn format(name: &str) -> Result<&'static Format, Error> {
    FORMATS.iter().find(|f| f.name == name).ok_or_else(|| {
        let names: Vec<_> = FORMATS.iter().map(|f| f.name).collect();
        Error::Usage(format!(
            "unknown format `{name}` (valid: {})",
            names.join(", ")
        ))
    })
}

/// Where one format goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    Stdout,
    File(PathBuf),
}

impl Target {
    /// `-` is stdout, anything else a file path.
    pub fn parse(s: &str) -> Self {
        if s == "-" {
            Target::Stdout
        } else {
            Target::File(PathBuf::from(s))
        }
    }
}

struct Output {
    format: &'static str,
    exporter: Box<dyn Exporter>,
    target: Target,
}

/// The export manager: every format a command was asked for.
pub struct Exports {
    outputs: Vec<Output>,
}

impl Exports {
    /// The usual outputs of a command: each `(format, target)` requested,
    /// plus the table on stdout unless another format already takes stdout.
    pub fn new(requested: &[(&str, Target)]) -> Result<Self, Error> {
        let mut outputs = Vec::new();
        for (name, target) in requested {
            let f = format(name)?;
            if *target == Target::Stdout
                && outputs.iter().any(|o: &Output| o.target == Target::Stdout)
            {
                return Err(Error::Usage(format!(
                    "only one format can go to stdout (`-`); {name} is the second"
                )));
            }
            if let Target::File(p) = target {
                if outputs.iter().any(|o: &Output| o.target == *target) {
                    return Err(Error::Usage(format!(
                        "{} is named for two formats",
                        p.display()
                    )));
                }
            }
            outputs.push(Output {
                format: f.name,
                exporter: (f.make)(),
                target: target.clone(),
            });
        }
        if !outputs.iter().any(|o| o.target == Target::Stdout) {
            let t = format("table")?;
            outputs.push(Output {
                format: t.name,
                exporter: (t.make)(),
                target: Target::Stdout,
            });
        }
        Ok(Exports { outputs })
    }

    /// Whether stdout carries a machine-readable format (progress and
    /// notes then stay off it).
    pub fn stdout_is_data(&self) -> bool {
        self.outputs
            .iter()
            .any(|o| o.target == Target::Stdout && o.format != "table")
    }

    /// Fail before any measuring if an output file could not be written,
    /// without touching an existing file.
    pub fn check(&self) -> Result<(), Error> {
        for o in &self.outputs {
            if let Target::File(p) = &o.target {
                check_writable(p)?;
            }
        }
        Ok(())
    }

    /// After each completed shape: rewrite the files (stdout waits for the end).
    pub fn partial(&self, doc: &Document) -> Result<(), Error> {
        for o in &self.outputs {
            if let Target::File(p) = &o.target {
                write_atomic(p, &o.exporter.render(doc)?)?;
            }
        }
        Ok(())
    }

    /// At the end: every output.
    pub fn finish(&self, doc: &Document) -> Result<(), Error> {
        for o in &self.outputs {
            let bytes = o.exporter.render(doc)?;
            match &o.target {
                Target::File(p) => write_atomic(p, &bytes)?,
                Target::Stdout => {
                    let mut out = std::io::stdout().lock();
                    out.write_all(&bytes)
                        .and_then(|_| out.flush())
                        .map_err(|e| Error::io("cannot write to stdout", e))?;
                }
            }
        }
        Ok(())
    }
}

/// The directory of `path` accepts a new file, and `path` itself, if it
/// exists, is a writable file (it is left untouched).
fn check_writable(path: &Path) -> Result<(), Error> {
    let dir = parent(path);
    if path.is_dir() {
        return Err(Error::Usage(format!("{} is a directory", path.display())));
    }
    tempfile::NamedTempFile::new_in(dir).map_err(|e| {
        Error::io(
            format!("cannot write {} (in {})", path.display(), dir.display()),
            e,
        )
    })?;
    if path.exists() {
        std::fs::OpenOptions::new()
            .append(true)
            .open(path)
            .map_err(|e| Error::io(format!("cannot write {}", path.display()), e))?;
    }
    Ok(())
}

fn parent(path: &Path) -> &Path {
    path.parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

/// Write `bytes` to `path` atomically: a temp file in the same directory,
/// flushed, then renamed over the target.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), Error> {
    let dir = parent(path);
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
