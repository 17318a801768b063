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
pub mod calibration;
pub mod compare;
pub mod counters;
pub mod counts;
pub mod csv;
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
    /// Held from [`Exports::check`] until the manager is dropped.
    locks: Vec<OutputLock>,
    /// Per output: the last rewrite failed (a note is printed once).
    failing: RefCell<Vec<bool>>,
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
        Ok(Exports {
            failing: RefCell::new(vec![false; outputs.len()]),
            outputs,
            locks: Vec::new(),
        })
    }

    /// A file of `format` that holds the latest document (its last write
    /// succeeded), if one was asked for.
    pub fn written(&self, format: &str) -> Option<&Path> {
        let failing = self.failing.borrow();
        self.outputs
            .iter()
            .zip(failing.iter())
            .find_map(|(o, &failed)| match &o.target {
                Target::File(p) if o.format == format && !failed => Some(p.as_path()),
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
    /// without touching an existing file; then lock each one for this
    /// command (a second session writing it is refused) and remove the
    /// temporaries that killed sessions left beside it.
    pub fn check(&mut self) -> Result<(), Error> {
        for o in &self.outputs {
            if let Target::File(p) = &o.target {
                check_writable(p)?;
                self.locks.push(OutputLock::take(p)?);
                remove_stale_temporaries(p);
            }
        }
        Ok(())
    }

    /// After each completed shape: rewrite the files (stdout waits for the
    /// end). A file that cannot be written is noted once and tried again
    /// next time; the session goes on.
    pub fn partial(&self, doc: &Document) -> Result<(), Error> {
        for (i, o) in self.outputs.iter().enumerate() {
            if let Target::File(p) = &o.target {
                let result = write_atomic(p, &o.exporter.render(doc)?);
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
        let rendered = self
            .outputs
            .iter()
            .map(|o| o.exporter.render(doc))
            .collect::<Result<Vec<_>, _>>()?;
        let mut failed = Vec::new();
        for (i, (o, bytes)) in self.outputs.iter().zip(&rendered).enumerate() {
            if let Target::File(p) = &o.target {
                let result = write_atomic(p, bytes);
                self.failing.borrow_mut()[i] = result.is_err();
                if let Err(e) = result {
                    failed.push(format!("{} ({e})", o.format));
                }
            }
        }
        for (o, bytes) in self.outputs.iter().zip(&rendered) {
            if o.target == Target::Stdout {
                let mut out = std::io::stdout().lock();
                out.write_all(bytes)
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

/// The directory of `path` accepts a new file, and `path` itself, if it
/// exists, is a writable file (it is left untouched).
fn check_writable(path: &Path) -> Result<(), Error> {
    let dir = parent(path);
    if path.is_dir() {
        return Err(ReportError::IsADirectory {
            path: path.to_path_buf(),
        }
        .into());
    }
    temp_beside(path).map_err(|e| {
        Error::io(
            format!("cannot write {} (in {})", path.display(), dir.display()),
            without_path(e),
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

/// The file name of `path` as the sidecar names use it.
fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// The prefix of every temporary file of `path`, before the owner's pid.
fn temp_prefix(path: &Path) -> String {
    format!(".{}.loopbench-tmp-", file_name(path))
}

/// tempfile's errors name the random temporary path, which means nothing
/// to the user: keep only the system's reason.
fn without_path(e: std::io::Error) -> std::io::Error {
    if let Some(code) = e.raw_os_error() {
        return std::io::Error::from_raw_os_error(code);
    }
    // tempfile renders its wrapper as `REASON at path "PATH"`.
    let text = e.to_string();
    match text.split_once(" at path ") {
        Some((reason, _)) => std::io::Error::new(e.kind(), reason.to_string()),
        None => e,
    }
}

/// A new temporary file beside `path`, named for it and this process, with
/// the mode the target has (a new target: 0666 less the umask, as any
/// other program's output; tempfile alone would make it 0600).
fn temp_beside(path: &Path) -> std::io::Result<tempfile::NamedTempFile> {
    let prefix = format!("{}{}-", temp_prefix(path), std::process::id());
    let mut b = tempfile::Builder::new();
    b.prefix(&prefix);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(path)
            .map(|m| m.permissions().mode() & 0o7777)
            .unwrap_or(0o666);
        b.permissions(std::fs::Permissions::from_mode(mode));
    }
    b.tempfile_in(parent(path))
}

/// Remove `.NAME.loopbench-tmp-PID-*` files beside `path` whose process is
/// gone (a session killed mid-write). Called with the lock held, so no
/// live writer of `path` can own them; failures are ignored (another
/// cleaner, or a read-only directory that `check` would have refused).
fn remove_stale_temporaries(path: &Path) {
    let prefix = temp_prefix(path);
    let Ok(entries) = std::fs::read_dir(parent(path)) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(rest) = name.strip_prefix(&prefix) else {
            continue;
        };
        let pid = rest.split('-').next().and_then(|p| p.parse::<u32>().ok());
        if let Some(pid) = pid {
            if !process_alive(pid) {
                let _ = std::fs::remove_file(entry.path());
            }
        }
    }
}

/// Whether a process with this pid exists (a pid in use by another
/// program counts as alive: its file is kept, never wrongly removed).
fn process_alive(pid: u32) -> bool {
    #[cfg(target_os = "linux")]
    {
        let Ok(pid) = libc::pid_t::try_from(pid) else {
            return true;
        };
        // SAFETY: signal 0 only checks that the process exists.
        let r = unsafe { libc::kill(pid, 0) };
        r == 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = pid;
        true
    }
}

/// An advisory lock on one output file: a sidecar `.NAME.loopbench-lock`
/// beside it, `flock`ed and holding the owner's pid. The sidecar is
/// removed when the lock is dropped.
struct OutputLock {
    file: std::fs::File,
    path: PathBuf,
}

impl OutputLock {
    fn take(target: &Path) -> Result<Self, Error> {
        let path = parent(target).join(format!(".{}.loopbench-lock", file_name(target)));
        let cannot = |e| Error::io(format!("cannot lock {}", target.display()), e);
        // A lock file removed by its holder between our open and our lock
        // is a stale inode: try again on the new one.
        for _ in 0..3 {
            let mut file = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .open(&path)
                .map_err(cannot)?;
            match file.try_lock() {
                Ok(()) => {}
                Err(std::fs::TryLockError::WouldBlock) => {
                    let mut holder = String::new();
                    let _ = std::io::Read::read_to_string(&mut file, &mut holder);
                    let holder = Some(holder.trim().to_string()).filter(|pid| !pid.is_empty());
                    return Err(ReportError::Locked {
                        path: target.to_path_buf(),
                        holder,
                    }
                    .into());
                }
                Err(std::fs::TryLockError::Error(e)) => return Err(cannot(e)),
            }
            if !same_file(&file, &path) {
                continue;
            }
            file.set_len(0).map_err(cannot)?;
            write!(file, "{}", std::process::id()).map_err(cannot)?;
            return Ok(OutputLock { file, path });
        }
        Err(ReportError::LockKeepsChanging {
            path: target.to_path_buf(),
        }
        .into())
    }
}

/// Whether `path` still names the open `file` (its holder may have removed
/// it between our open and our lock).
fn same_file(file: &std::fs::File, path: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        match (file.metadata(), std::fs::metadata(path)) {
            (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
            _ => false,
        }
    }
    #[cfg(not(unix))]
    {
        let _ = (file, path);
        true
    }
}

impl Drop for OutputLock {
    fn drop(&mut self) {
        // Remove while still holding the lock, so a waiting writer that
        // opened the old file sees it is gone (`same_file`) and retries.
        let _ = std::fs::remove_file(&self.path);
        let _ = self.file.unlock();
    }
}

/// Write `bytes` to `path` atomically: a temp file in the same directory,
/// flushed, then renamed over the target.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), Error> {
    let dir = parent(path);
    let mut tmp = temp_beside(path).map_err(|e| {
        Error::io(
            format!("cannot create a file in {}", dir.display()),
            without_path(e),
        )
    })?;
    tmp.write_all(bytes)
        .map_err(|e| Error::io(format!("cannot write {}", path.display()), e))?;
    tmp.as_file()
        .sync_all()
        .map_err(|e| Error::io(format!("cannot flush {}", path.display()), e))?;
    tmp.persist(path).map_err(|e| {
        Error::io(
            format!("cannot write {}", path.display()),
            without_path(e.error),
        )
    })?;
    Ok(())
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
