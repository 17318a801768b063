//! A WASI command as a shape: each rep is one run of the command as a fresh
//! process on the WASI host ([`crate::wasi`]), and is verified here, where
//! it ran (in this process or in a worker): it must print on each stream
//! what its [`Reference`] holds.
//!
//! The loading, counting and identity of a user's workload are the host's
//! (`loopbench::apps::workload`); this is what a worker needs to run and
//! check it. A command travels to a worker as its module bytes, the path
//! of its directory with a hash of the files in it (the worker loads them
//! itself and refuses a directory that changed), its arguments and
//! environment, and what each stream must print.

use super::{Body, Declared, HookError, Mismatch, Params, Shape};
use crate::engines::Instance;
use crate::wasi::{self, Region, Setup};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The most bytes stdout and stderr of one run may hold together.
pub const OUTPUT_CAP: usize = 64 << 20;
/// The most bytes a command's directory may hold (all loaded in memory).
pub const DIRECTORY_CAP: u64 = 1 << 30;

/// What one stream of every run must print, and where that came from
/// (said in a mismatch: an expected file, or the counting run).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Reference {
    pub want: Vec<u8>,
    pub against: String,
}

/// A command as it travels to a worker.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CommandSource {
    pub name: String,
    pub wasm: Vec<u8>,
    /// The preopened directory, absolute.
    pub dir: PathBuf,
    /// The paths the counting run looked up in it (a run of a command is
    /// deterministic: every run looks up these and no other).
    pub looked_up: Vec<String>,
    /// [`lookups_hash`] of those paths as the session loaded the directory.
    pub lookups_hash: u64,
    /// `argv`, the program name first.
    pub args: Vec<String>,
    /// `NAME=value`.
    pub env: Vec<String>,
    pub stdout: Reference,
    pub stderr: Reference,
}

/// A WASI command ready to run as a shape.
pub struct Command {
    source: CommandSource,
    setup: Arc<Setup>,
    /// One line: the file, what is timed, the identity.
    about: String,
    identity: Option<String>,
}

impl Command {
    /// A command whose directory's files are already loaded.
    pub fn new(
        source: CommandSource,
        files: BTreeMap<String, Arc<Vec<u8>>>,
    ) -> Result<Self, String> {
        let imports = wasi::imports(&source.wasm).map_err(|e| e.to_string())?;
        let setup = Arc::new(Setup {
            args: source.args.clone(),
            env: source.env.clone(),
            files,
            output_cap: OUTPUT_CAP,
            region: Region::of(&imports),
        });
        Ok(Command {
            about: format!("WASI command {}", source.name),
            source,
            setup,
            identity: None,
        })
    }

    /// The command a worker was sent: its directory loaded here, and
    /// refused when a path the command looks up is not what the session
    /// loaded (files it never reads may come and go: the session's own
    /// results, written beside it).
    pub fn from_source(source: CommandSource) -> Result<Self, String> {
        let files = load_directory(&source.dir)?;
        if lookups_hash(&files, &source.looked_up) != source.lookups_hash {
            return Err(format!(
                "{}: a file it reads in {} changed since the session loaded it",
                source.name,
                source.dir.display()
            ));
        }
        Command::new(source, files)
    }

    /// What the counting run found: what each stream of every run must
    /// print, and the paths the command looks up.
    pub fn counted(
        mut self,
        stdout: Reference,
        stderr: Reference,
        looked_up: &std::collections::BTreeSet<String>,
    ) -> Self {
        self.source.stdout = stdout;
        self.source.stderr = stderr;
        self.source.looked_up = looked_up.iter().cloned().collect();
        self.source.lookups_hash = lookups_hash(&self.setup.files, &self.source.looked_up);
        self
    }

    /// Describe it as the host knows it: one line, and its identity.
    pub fn described(mut self, about: String, identity: String) -> Self {
        self.about = about;
        self.identity = Some(identity);
        self
    }

    /// What it travels to a worker as.
    pub fn source(&self) -> &CommandSource {
        &self.source
    }

    /// What its process sees.
    pub fn setup(&self) -> &Arc<Setup> {
        &self.setup
    }
}

impl Shape for Command {
    fn name(&self) -> &str {
        &self.source.name
    }
    fn prices(&self) -> &str {
        &self.about
    }
    fn default_iters(&self, _p: &Params) -> u64 {
        1
    }
    fn declared(&self, _p: &Params) -> Declared {
        Declared {
            per: 1,
            ..Declared::default()
        }
    }
    fn has_declared_counts(&self) -> bool {
        false
    }
    fn app_steps(&self) -> Option<u64> {
        Some(1)
    }
    fn counted_in_session(&self) -> bool {
        false
    }
    fn entry(&self) -> &'static str {
        "_start"
    }
    fn identity(&self) -> Option<String> {
        self.identity.clone()
    }
    fn command(&self) -> Option<&Command> {
        Some(self)
    }
    fn wasm(&self, _p: &Params) -> Result<Vec<u8>, String> {
        Ok(self.source.wasm.clone())
    }
    fn wat(&self, _p: &Params, _body: Body) -> String {
        wasmprinter::print_bytes(&self.source.wasm)
            .unwrap_or_else(|e| format!(";; cannot print: {e}"))
    }
    fn init(&self, _p: &Params, _inst: &mut dyn Instance) -> Result<(), HookError> {
        Ok(())
    }
    fn verify(
        &self,
        _p: &Params,
        _iters: u64,
        _ret: Option<i32>,
        inst: &mut dyn Instance,
    ) -> Result<(), HookError> {
        let Some(host) = inst.wasi_host() else {
            return Err(HookError::Mismatch(Mismatch::new(
                self.source.name.clone(),
                "a WASI run",
                "none",
            )));
        };
        let streams = [
            ("stdout", &self.source.stdout, &host.stdout),
            ("stderr", &self.source.stderr, &host.stderr),
        ];
        for (stream, reference, got) in streams {
            let what = format!(
                "{} {stream} against {}",
                self.source.name, reference.against
            );
            check_stream(&what, &reference.want, got).map_err(HookError::Mismatch)?;
        }
        Ok(())
    }
}

/// A stream's lines as Sightglass compares them (Rust's `str::lines` on
/// bytes): a `\r\n` ends a line as `\n` does, the last line's newline is
/// optional.
fn lines(text: &[u8]) -> Vec<&[u8]> {
    if text.is_empty() {
        return Vec::new();
    }
    let text = text.strip_suffix(b"\n").unwrap_or(text);
    text.split(|b| *b == b'\n')
        .map(|l| l.strip_suffix(b"\r").unwrap_or(l))
        .collect()
}

/// One output stream against what it must be, line by line; a mismatch
/// says the lengths and the first byte that differs.
pub fn check_stream(what: &str, want: &[u8], got: &[u8]) -> Result<(), Mismatch> {
    if lines(want) == lines(got) {
        return Ok(());
    }
    let at = want
        .iter()
        .zip(got)
        .position(|(a, b)| a != b)
        .unwrap_or(want.len().min(got.len()));
    Err(Mismatch::new(
        what,
        format!("{} bytes", want.len()),
        format!("{} bytes, first different at byte {at}", got.len()),
    ))
}

/// Every regular file under `dir` by relative path, refusing more than
/// [`DIRECTORY_CAP`] bytes.
pub fn load_directory(dir: &Path) -> Result<BTreeMap<String, Arc<Vec<u8>>>, String> {
    let mut files = BTreeMap::new();
    let mut total = 0u64;
    let mut pending = vec![PathBuf::new()];
    while let Some(rel) = pending.pop() {
        let here = dir.join(&rel);
        let entries = std::fs::read_dir(&here)
            .map_err(|e| format!("cannot list its directory {}: {e}", here.display()))?;
        for entry in entries {
            let entry = entry.map_err(|e| format!("cannot list {}: {e}", here.display()))?;
            let kind = entry
                .file_type()
                .map_err(|e| format!("cannot read {}: {e}", entry.path().display()))?;
            let rel = rel.join(entry.file_name());
            if kind.is_dir() {
                pending.push(rel);
            } else if kind.is_file() {
                let data = std::fs::read(entry.path())
                    .map_err(|e| format!("cannot read {}: {e}", entry.path().display()))?;
                total += data.len() as u64;
                if total > DIRECTORY_CAP {
                    return Err(format!(
                        "its directory {} holds more than {} (every file is loaded before timing)",
                        dir.display(),
                        crate::units::format_bytes(DIRECTORY_CAP)
                    ));
                }
                files.insert(rel.to_string_lossy().into_owned(), Arc::new(data));
            }
        }
    }
    Ok(files)
}

/// One hash of what each of `paths` is in `files`: a file's contents, a
/// directory, or nothing. A worker's copy of the directory must answer
/// every lookup of the command as the session's did.
pub fn lookups_hash(files: &BTreeMap<String, Arc<Vec<u8>>>, paths: &[String]) -> u64 {
    let mut parts: Vec<Vec<u8>> = Vec::new();
    for p in paths {
        let prefix = format!("{p}/");
        let (kind, data): (u8, &[u8]) = match files.get(p) {
            Some(d) => (b'f', d.as_slice()),
            None if p.is_empty() || files.keys().any(|k| k.starts_with(&prefix)) => (b'd', &[]),
            None => (b'-', &[]),
        };
        // Lengths first: no two different answers hash the same parts.
        let mut head = vec![kind];
        head.extend((p.len() as u64).to_le_bytes());
        head.extend((data.len() as u64).to_le_bytes());
        head.extend(p.as_bytes());
        parts.push(head);
        parts.push(data.to_vec());
    }
    let parts: Vec<&[u8]> = parts.iter().map(|p| p.as_slice()).collect();
    crate::hash::fnv1a(&parts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_is_compared_line_by_line_as_sightglass_does() {
        assert!(check_stream("s", b"0", b"0\n").is_ok());
        assert!(check_stream("s", b"a\r\nb\n", b"a\nb").is_ok());
        assert!(check_stream("s", b"", b"").is_ok());
        // One byte more is another line, or another last line.
        assert!(check_stream("s", b"a\n", b"a\n!").is_err());
        assert!(check_stream("s", b"a\n", b"a\n\n").is_err());
        assert!(check_stream("s", b"", b"\n").is_err());
        let e = check_stream("s", b"ab\n", b"ax\n").unwrap_err().to_string();
        assert_eq!(
            e,
            "s: expected 3 bytes, got 3 bytes, first different at byte 1"
        );
    }

    #[test]
    fn only_what_the_command_looks_up_is_hashed() {
        let files = |list: &[(&str, &[u8])]| -> BTreeMap<String, Arc<Vec<u8>>> {
            list.iter()
                .map(|(n, d)| (n.to_string(), Arc::new(d.to_vec())))
                .collect()
        };
        let read = [
            "in.txt".to_string(),
            "sub".to_string(),
            "opt.cfg".to_string(),
        ];
        let a = lookups_hash(&files(&[("in.txt", b"abc"), ("sub/x", b"")]), &read);
        // A file it never looks up may appear (the session's own results).
        let more = files(&[("in.txt", b"abc"), ("sub/x", b""), ("out.json", b"{}")]);
        assert_eq!(a, lookups_hash(&more, &read));
        // A file it reads changes; a directory it opens goes; a file it
        // looked for and did not find appears: each is another answer.
        assert_ne!(
            a,
            lookups_hash(&files(&[("in.txt", b"abd"), ("sub/x", b"")]), &read)
        );
        assert_ne!(a, lookups_hash(&files(&[("in.txt", b"abc")]), &read));
        let cfg = files(&[("in.txt", b"abc"), ("sub/x", b""), ("opt.cfg", b"")]);
        assert_ne!(a, lookups_hash(&cfg, &read));
    }
}
