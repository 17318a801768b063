//! Reports: one [`Exporter`] per format, and the export manager that
//! writes every requested format of a command's [`Document`].
//!
//! A format is a file here plus one line in [`FORMATS`]: the exporter turns
//! a results value into bytes and knows nothing of files or the terminal.
//! The table-shaped formats (terminal, Markdown, HTML) describe their tables
//! and headings through [`markup`], which supplies each syntax and escapes;
//! numbers print through [`crate::units`], so one value reads the same in
//! every format. What can go wrong here is a [`ReportError`].
//! The manager ([`Exports`]) owns the targets: files are replaced
//! atomically (temp file + rename) and only when there is a result to put
//! there, rewritten after every shape so an interrupted session keeps what
//! it completed; stdout takes at most one format.
//!
//! A file that cannot be written (a full disk, a removed directory) fails
//! that export only: the session goes on, the other outputs are still
//! written, and the end reports which exports failed ([`ReportError::Exports`]).
//!
//! Two sessions writing one file would silently lose one of them, so each
//! output file is held under an advisory lock (`flock` on a sidecar
//! `.NAME.loopbench-lock` holding the owner's pid) from the check to the end
//! of the command; a second writer is refused and told the holder's pid.
//! Temporary files are named `.NAME.loopbench-tmp-PID-*` beside the target,
//! so the next run can remove those a killed session left behind.

pub mod app;
pub mod brief;
pub mod calibration;
pub mod compare;
pub mod counters;
pub mod counts;
pub mod csv;
pub mod glance;
pub mod html;
pub mod json;
pub mod markdown;
pub mod markup;
pub mod model;
pub mod noise;
pub mod replay;
pub mod svg;
pub mod table;

pub mod error;

pub use error::ReportError;
mod files;
pub use files::{refuse_input, write_atomic};

use crate::error::Error;
use crate::results::Document;
use std::cell::RefCell;
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
    fn render(&self, doc: &Document) -> Result<Vec<u8>, ReportError>;

    /// The name of the file this format keeps a part of its document in,
    /// beside a file named `name` (JSON: its reps), and what that part is
    /// in a word or two; `None` for one file.
    fn beside(&self, _name: &str) -> Option<(String, &'static str)> {
        None
    }

    /// `doc` as the file citing `beside` (by name) and what goes there;
    /// `None` when nothing does (the first holds it all). `key` ties the
    /// two files of one command together.
    fn render_apart(
        &self,
        doc: &Document,
        _beside: &str,
        _key: &str,
    ) -> Result<(Vec<u8>, Option<Vec<u8>>), ReportError> {
        self.render(doc).map(|bytes| (bytes, None))
    }
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
        make: || Box::new(table::Table::default()),
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

impl Format {
    /// This format's exporter.
    pub fn exporter(&self) -> Box<dyn Exporter> {
        (self.make)()
    }
}

/// A shape's ratios to the session's reference, as one line's parts: the
/// reference and `arm change [interval], ...` (every format says it).
pub(crate) fn anchored_ratios(r: &crate::results::ShapeResult) -> Option<(&str, String)> {
    let reference = r.anchored.first().map(|c| c.vs.as_str())?;
    let ratios: Vec<String> = r
        .anchored
        .iter()
        .map(|c| {
            format!(
                "{} {}",
                c.arm,
                crate::units::interval(c.median_pct, c.ci_pct)
            )
        })
        .collect();
    Some((reference, ratios.join(", ")))
}

/// A gate's result for the terminal: its summary, then each failing
/// comparison indented.
pub(crate) fn gate_text(g: &crate::results::gate::Gate) -> String {
    let mut out = format!("{}\n", g.summary());
    for f in &g.failing {
        out.push_str(&format!("  {f}\n"));
    }
    out
}

/// The format named `name`, or the list of names.
pub fn format(name: &str) -> Result<&'static Format, ReportError> {
    FORMATS
        .iter()
        .find(|f| f.name == name)
        .ok_or_else(|| ReportError::UnknownFormat {
            name: name.to_string(),
            valid: FORMATS.iter().map(|f| f.name).collect(),
        })
}

/// Where one format goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    Stdout,
    File(PathBuf),
}

impl Target {
    /// `-` is stdout, and so is a path that names this process's stdout
    /// (`/dev/stdout`, `/proc/self/fd/1`, the file it was sent to); anything
    /// else a file path.
    pub fn parse(s: &str) -> Self {
        if s == "-" || files::is_stdout(Path::new(s)) {
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
    /// Whether a part of the document may go to a file beside this one
    /// ([`Exporter::beside`]; `--json-reps` keeps the reps inline).
    apart: bool,
}

/// The file beside an output file, held as the output is.
struct Beside {
    name: String,
    what: &'static str,
    held: files::Held,
    /// Its last write holds the part the output file cites.
    written: std::cell::Cell<bool>,
}

/// A rewrite during a session waits this many times as long as the last
/// one took: rewrites take a tenth of the session at most.
const PARTIAL_EVERY: f64 = 10.0;

/// Whether a rewrite is due at `now`, the last one having started at and
/// taken `last`: at once for the first, then after [`PARTIAL_EVERY`] times
/// what the last took.
fn rewrite_due(
    last: Option<(std::time::Instant, std::time::Duration)>,
    now: std::time::Instant,
) -> bool {
    last.is_none_or(|(at, took)| now.saturating_duration_since(at) >= took.mul_f64(PARTIAL_EVERY))
}

/// The export manager: every format a command was asked for.
pub struct Exports {
    outputs: Vec<Output>,
    /// Per output, its file held from [`Exports::check`] until the
    /// manager is dropped (`None` for stdout, or before the check).
    held: Vec<Option<files::Held>>,
    /// Per output: the file beside it, held at the check, when its format
    /// keeps a part of the document apart.
    beside: Vec<Option<Beside>>,
    /// Ties each output file to the file beside it: this command's, and
    /// the write's number ([`Exporter::render_apart`]).
    key: String,
    writes: std::cell::Cell<u64>,
    /// Per output: the last rewrite failed (a note is printed once).
    failing: RefCell<Vec<bool>>,
    /// When the last rewrite of the files during a session started, and
    /// what it took: the next waits ([`Exports::partial`]).
    last_partial: std::cell::Cell<Option<(std::time::Instant, std::time::Duration)>>,
    /// A table was asked for by name (`--export table=...`).
    asked_table: bool,
}

impl Exports {
    /// The usual outputs of a command: each `(format, target)` requested,
    /// plus the table on stdout unless another format already takes stdout.
    pub fn new(requested: &[(&str, Target)]) -> Result<Self, ReportError> {
        let mut outputs = Vec::new();
        for (name, target) in requested {
            let f = format(name)?;
            if *target == Target::Stdout
                && outputs.iter().any(|o: &Output| o.target == Target::Stdout)
            {
                return Err(ReportError::SecondOnStdout {
                    format: name.to_string(),
                });
            }
            if let Target::File(p) = target {
                if outputs.iter().any(|o: &Output| o.target == *target) {
                    return Err(ReportError::NamedTwice { path: p.clone() });
                }
            }
            outputs.push(Output {
                format: f.name,
                exporter: (f.make)(),
                target: target.clone(),
                apart: true,
            });
        }
        let asked_table = outputs.iter().any(|o: &Output| o.format == "table");
        if !outputs.iter().any(|o| o.target == Target::Stdout) {
            let t = format("table")?;
            outputs.push(Output {
                format: t.name,
                exporter: (t.make)(),
                target: Target::Stdout,
                apart: true,
            });
        }
        Ok(Exports {
            asked_table,
            failing: RefCell::new(vec![false; outputs.len()]),
            last_partial: std::cell::Cell::new(None),
            held: outputs.iter().map(|_| None).collect(),
            beside: outputs.iter().map(|_| None).collect(),
            key: crate::results::new_session_id(),
            writes: std::cell::Cell::new(0),
            outputs,
        })
    }

    /// Leave out the table [`Exports::new`] put on stdout when nothing was
    /// asked of stdout and some file was: for a command whose files are its
    /// answer (`report FILE --html OUT`). Whether it was left out.
    pub fn files_only(&mut self) -> bool {
        let files = self
            .outputs
            .iter()
            .any(|o| matches!(o.target, Target::File(_)));
        let table = self
            .outputs
            .iter()
            .position(|o| o.target == Target::Stdout && o.format == "table");
        // The table `new` adds comes last; one asked for comes in order.
        match table {
            Some(i) if files && i + 1 == self.outputs.len() && !self.asked_table => {
                self.outputs.remove(i);
                self.held.remove(i);
                self.beside.remove(i);
                self.failing.borrow_mut().remove(i);
                true
            }
            _ => false,
        }
    }

    /// Each file output: its format and path, each followed by the file
    /// beside it when that holds a part of it (and what the part is).
    pub fn files(&self) -> Vec<(String, &Path)> {
        let mut files = Vec::new();
        for (o, beside) in self.outputs.iter().zip(&self.beside) {
            if let Target::File(p) = &o.target {
                files.push((o.format.to_string(), p.as_path()));
                if let Some(b) = beside.as_ref().filter(|b| b.written.get()) {
                    files.push((b.what.to_string(), b.held.path()));
                }
            }
        }
        files
    }

    /// Keep every part of each document in its one file (`--json-reps`).
    pub fn keep_parts_inline(&mut self) {
        for o in &mut self.outputs {
            o.apart = false;
        }
    }

    /// Every table in full ([`table::Table::verbose`]).
    pub fn verbose_table(&mut self) {
        for o in self.outputs.iter_mut().filter(|o| o.format == "table") {
            o.exporter = Box::new(table::Table { verbose: true });
        }
    }

    /// A file of `format` that holds the latest document (its last write
    /// succeeded), if one was asked for.
    pub fn written(&self, format: &str) -> Option<&Path> {
        let failing = self.failing.borrow();
        // A device or FIFO keeps nothing to read back.
        self.outputs
            .iter()
            .zip(failing.iter())
            .zip(&self.held)
            .find_map(|((o, &failed), held)| match (&o.target, held) {
                (_, Some(files::Held::Stream { .. })) => None,
                (Target::File(p), _) if o.format == format && !failed => Some(p.as_path()),
                _ => None,
            })
    }

    /// Whether the terminal table goes to stdout.
    pub fn stdout_has_table(&self) -> bool {
        self.outputs
            .iter()
            .any(|o| o.target == Target::Stdout && o.format == "table")
    }

    /// Whether stdout carries a machine-readable format (progress and
    /// notes then stay off it).
    pub fn stdout_is_data(&self) -> bool {
        self.outputs
            .iter()
            .any(|o| o.target == Target::Stdout && o.format != "table")
    }

    /// Fail before any measuring if an output file could not be written,
    /// without touching an existing file; then hold each one for this
    /// command: a file locked (a second session writing it is refused, the
    /// temporaries killed sessions left beside it removed), a device or
    /// FIFO open ([`files`]). A file whose format keeps a part apart gets
    /// the file beside it held too; a device or FIFO takes the whole
    /// document.
    pub fn check(&mut self) -> Result<(), Error> {
        for ((o, held), beside) in self
            .outputs
            .iter()
            .zip(&mut self.held)
            .zip(&mut self.beside)
        {
            if let Target::File(p) = &o.target {
                let taken = files::Held::take(p)?;
                if let (files::Held::File { path, .. }, true) = (&taken, o.apart) {
                    let named = path
                        .file_name()
                        .and_then(|n| n.to_str())
                        .and_then(|n| o.exporter.beside(n));
                    if let Some((name, what)) = named {
                        *beside = Some(Beside {
                            held: files::Held::take(&path.with_file_name(&name))?,
                            name,
                            what,
                            written: std::cell::Cell::new(false),
                        });
                    }
                }
                *held = Some(taken);
            }
        }
        Ok(())
    }

    /// Refuse, before any work, an output file that is one of `inputs`
    /// (by identity, not name). The files beside the outputs count too,
    /// and an input's reps file beside it is an input.
    pub fn refuse_inputs(&self, inputs: &[&Path]) -> Result<(), Error> {
        let beside: Vec<PathBuf> = inputs
            .iter()
            .filter_map(|p| {
                let name = p.file_name()?.to_str()?;
                Some(p.with_file_name(crate::results::reps::file_name(name)))
            })
            .collect();
        let all: Vec<&Path> = inputs
            .iter()
            .copied()
            .chain(beside.iter().map(PathBuf::as_path))
            .collect();
        for (o, b) in self.outputs.iter().zip(&self.beside) {
            if let Target::File(p) = &o.target {
                refuse_input(p, &all)?;
            }
            if let Some(b) = b {
                refuse_input(b.held.path(), &all)?;
            }
        }
        Ok(())
    }

    /// `doc` to output `i`'s file: through what the check holds, else
    /// (no check) straight to the path; `None` when a held stream waits
    /// for the end. The part kept beside goes first, so the file that
    /// cites it never names what is not there yet.
    fn write_file(
        &self,
        i: usize,
        path: &Path,
        doc: &Document,
        last: bool,
    ) -> Result<Option<Result<(), Error>>, Error> {
        let exporter = &self.outputs[i].exporter;
        let bytes = match &self.beside[i] {
            Some(beside) => {
                self.writes.set(self.writes.get() + 1);
                let key = format!("{}/{}", self.key, self.writes.get());
                let (bytes, part) = exporter.render_apart(doc, &beside.name, &key)?;
                if let Some(part) = part {
                    let wrote = match last {
                        true => beside.held.finish(&part),
                        false => beside.held.partial(&part).unwrap_or(Ok(())),
                    };
                    beside.written.set(wrote.is_ok());
                    if wrote.is_err() {
                        return Ok(Some(wrote));
                    }
                }
                bytes
            }
            None => exporter.render(doc)?,
        };
        Ok(match &self.held[i] {
            Some(h) if last => Some(h.finish(&bytes)),
            Some(h) => h.partial(&bytes),
            None => Some(write_atomic(path, &bytes)),
        })
    }

    /// After each epoch: rewrite the files (stdout waits for the end), so
    /// that a session killed outright keeps what it completed. A file that
    /// cannot be written is noted once and tried again next time; the
    /// session goes on. The first is written at once; later ones wait
    /// until the session has run [`PARTIAL_EVERY`] times as long as the
    /// last rewrite took (a 60 s default session's document and reps,
    /// compressed, took 0.7 s a rewrite: a fifth of its time when written
    /// every epoch). The end writes everything whatever the wait.
    pub fn partial(&self, doc: &Document) -> Result<(), Error> {
        if !self.partial_due() {
            return Ok(());
        }
        let started = std::time::Instant::now();
        let wrote = self.rewrite(doc);
        self.last_partial.set(Some((started, started.elapsed())));
        wrote
    }

    /// Whether [`Exports::partial`] would rewrite now (a caller can skip
    /// making the document).
    pub fn partial_due(&self) -> bool {
        rewrite_due(self.last_partial.get(), std::time::Instant::now())
    }

    fn rewrite(&self, doc: &Document) -> Result<(), Error> {
        for (i, o) in self.outputs.iter().enumerate() {
            if let Target::File(p) = &o.target {
                // A device or FIFO takes the document once, at the end.
                let Some(result) = self.write_file(i, p, doc, false)? else {
                    continue;
                };
                let mut failing = self.failing.borrow_mut();
                match result {
                    Ok(()) => failing[i] = false,
                    Err(e) if !failing[i] => {
                        failing[i] = true;
                        crate::diag!(
                            "warning: {} export: {e}; the session goes on and tries again at the end",
                            o.format
                        );
                    }
                    Err(_) => {}
                }
            }
        }
        Ok(())
    }

    /// At the end: every output. Each file is attempted even when another
    /// fails; the failures come back together as [`ReportError::Exports`]
    /// after the rest (stdout last) is written.
    pub fn finish(&self, doc: &Document) -> Result<(), Error> {
        let mut failed = Vec::new();
        for (i, o) in self.outputs.iter().enumerate() {
            if let Target::File(p) = &o.target {
                let result = self.write_file(i, p, doc, true)?.unwrap_or(Ok(()));
                self.failing.borrow_mut()[i] = result.is_err();
                if let Err(e) = result {
                    failed.push(format!("{} ({e})", o.format));
                }
            }
        }
        for o in &self.outputs {
            if o.target == Target::Stdout {
                let bytes = o.exporter.render(doc)?;
                let mut out = std::io::stdout().lock();
                out.write_all(&bytes)
                    .and_then(|_| out.flush())
                    .map_err(|e| Error::io("cannot write to stdout", e))?;
            }
        }
        if failed.is_empty() {
            Ok(())
        } else {
            Err(ReportError::Exports { failed }.into())
        }
    }
}

/// A session the history database did not take and no `--json` file
/// holds: saved as JSON in the current directory (else the temporary
/// directory), so measuring it was not for nothing. Returns the line that
/// says where.
pub fn save_unrecorded(document: &Document) -> String {
    let name = format!(
        "loopbench-unrecorded-{}-{}.json",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs()),
        std::process::id()
    );
    let bytes = match format("json").map(|f| f.exporter().render(document)) {
        Ok(Ok(bytes)) => bytes,
        Ok(Err(e)) | Err(e) => return format!("history: the session could not be saved: {e}"),
    };
    let mut last = String::new();
    for dir in [std::path::PathBuf::from("."), std::env::temp_dir()] {
        let path = dir.join(&name);
        match write_atomic(&path, &bytes) {
            Ok(()) => {
                return format!(
                "history: the session is saved in {}; store it with `loopbench history import {}`",
                path.display(),
                path.display()
            )
            }
            Err(e) => last = e.to_string(),
        }
    }
    format!("history: the session could not be saved either: {last}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    #[test]
    fn a_rewrite_during_a_session_waits_ten_times_what_the_last_took() {
        let t0 = Instant::now();
        assert!(rewrite_due(None, t0), "the first is written at once");
        let last = Some((t0, Duration::from_millis(700)));
        assert!(!rewrite_due(last, t0 + Duration::from_millis(6999)));
        assert!(rewrite_due(last, t0 + Duration::from_millis(7000)));
        // A clock read before the last write started is not a wait.
        assert!(!rewrite_due(
            Some((t0 + Duration::from_secs(1), Duration::from_millis(1))),
            t0
        ));
    }
}
