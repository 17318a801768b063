//! A user's own workload: a WASI command module (Sightglass's benchmark
//! protocol or a plain command) as a shape. Each rep is one run of the
//! command as a fresh process on the WASI host (`loopbench_worker::wasi`),
//! timed between its `bench.start` and `bench.end` (or over the whole
//! `_start`), and verified: it must exit with 0 and print on each stream
//! exactly what `<name>.stdout.expected` (`.stderr.expected`) beside it
//! holds, or the directory's `default.stdout.expected` as Sightglass
//! names it, or, with neither, what its counting run printed.
//!
//! Before any timing, the module runs once instrumented on wasmi with fuel
//! (the counting run): a module that never ends is stopped there, wrong
//! output is refused there, and the counts of its timed region are exact.
//!
//! The module's directory is its working directory, read-only and loaded
//! into memory before any timing. Its arguments, environment and files are
//! part of its identity (the files it looks up in its counting run, not
//! every file beside it): the row carries their hash, and rows of one name
//! with another identity are never compared.

use super::AppError;
use crate::engines::Instance;
use crate::shapes::{Body, Declared, HookError, Mismatch, Params, Shape};
use crate::wasi::{self, Region, Setup};
use loopbench_count::{Counts, Instrumented};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The most bytes of stdout and stderr a run may write together.
pub const OUTPUT_CAP: usize = 64 << 20;
/// The most bytes the module's directory may hold (all loaded in memory).
pub const DIRECTORY_CAP: u64 = 1 << 30;

/// The counting run's fuel unless `--fuel` says otherwise: a tight loop
/// that never ends burns it in 18 s on a 2-vCPU EPYC VM, and Sightglass's
/// modules (about 10^8 instructions) fit many times over.
pub const WORKLOAD_FUEL: u64 = 1 << 36;

/// What a workload is given besides its module.
#[derive(Clone, Debug)]
pub struct Invocation {
    /// Arguments after the program name.
    pub args: Vec<String>,
    /// `NAME=value`.
    pub env: Vec<String>,
    /// Fuel of the counting run (wasmi's units: one or more per
    /// instruction): a module that needs more is refused as never ending.
    pub fuel: u64,
}

impl Default for Invocation {
    fn default() -> Self {
        Invocation {
            args: Vec::new(),
            env: Vec::new(),
            fuel: WORKLOAD_FUEL,
        }
    }
}

/// What every run must print on its two streams: the contents of an
/// expected file, or, with none, what the session's first run printed.
#[derive(Debug, Default)]
struct Expected {
    stdout: Option<Vec<u8>>,
    stderr: Option<Vec<u8>>,
}

/// A WASI command module, loaded and checked, ready to run as a shape.
pub struct Workload {
    name: String,
    path: PathBuf,
    wasm: Vec<u8>,
    setup: Arc<Setup>,
    expected: Expected,
    /// What the counting run printed: the reference of a stream that has
    /// no expected file.
    first: (Vec<u8>, Vec<u8>),
    /// The exact counts of the timed region, from the counting run.
    counts: Counts,
    /// Calls of its imports inside the timed region, in the counting run.
    host_calls: u64,
    identity: String,
    /// One line: the file, what is timed, the identity.
    about: String,
}

impl Workload {
    /// Read the module at `path`, its directory and expected output; every
    /// import must be one the host serves.
    pub fn load(path: &Path, invocation: &Invocation) -> Result<Self, AppError> {
        let bad = |why: String| AppError::Workload {
            path: path.to_path_buf(),
            why,
        };
        let bytes = std::fs::read(path).map_err(|e| bad(format!("cannot read it: {e}")))?;
        // A module given as text (named explicitly) is assembled here.
        let wasm = match path.extension().is_some_and(|e| e == "wat") {
            true => wat::parse_bytes(&bytes)
                .map_err(|e| bad(format!("does not assemble: {e}")))?
                .into_owned(),
            false => bytes,
        };
        let imports = wasi::imports(&wasm).map_err(|e| bad(e.to_string()))?;
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let files = load_directory(&dir).map_err(bad)?;
        let stem = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let expected = expected_output(&dir, &stem).map_err(bad)?;
        let program = path
            .file_name()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let mut args = vec![program];
        args.extend(invocation.args.iter().cloned());
        let setup = Arc::new(Setup {
            args,
            env: invocation.env.clone(),
            files,
            output_cap: OUTPUT_CAP,
            region: Region::of(&imports),
        });
        let name = name_of(path, &stem);
        let (counted, counts) = count(&wasm, setup.clone(), invocation.fuel).map_err(bad)?;
        let read: BTreeMap<&String, &Arc<Vec<u8>>> = setup
            .files
            .iter()
            .filter(|(name, _)| counted.host.looked_up.contains(*name))
            .collect();
        let identity = identity(&wasm, &setup.args, &setup.env, &read);
        // The counting run is the first run: its output is the reference
        // of a stream without a file, and one that differs from a file is
        // refused before any timing.
        for (stream, file, got) in [
            ("stdout", &expected.stdout, &counted.host.stdout),
            ("stderr", &expected.stderr, &counted.host.stderr),
        ] {
            if let Some(want) = file {
                check_stream(
                    &format!("{name} {stream} against the expected file"),
                    want,
                    got,
                )
                .map_err(|e| bad(format!("counting run (wasmi): {e}")))?;
            }
        }
        let timed = match setup.region {
            Region::Between => "bench.start to bench.end",
            Region::FromStart => "bench.start to the end of _start",
            Region::Whole => "the whole _start",
        };
        let about = format!(
            "WASI command {}, timed {timed}, identity {identity}",
            path.display()
        );
        Ok(Workload {
            about,
            name,
            path: path.to_path_buf(),
            wasm,
            setup,
            expected,
            first: (counted.host.stdout, counted.host.stderr),
            identity,
            counts,
            host_calls: counted.host.timed_calls,
        })
    }

    /// The exact op counts of one run's timed region.
    pub fn counts(&self) -> &Counts {
        &self.counts
    }

    /// Calls of its imports inside the timed region of one run.
    pub fn host_calls(&self) -> u64 {
        self.host_calls
    }

    /// The one-line description: file, timed region, identity.
    pub fn about(&self) -> &str {
        &self.about
    }
}

/// The untimed counting run: the instrumented copy on wasmi with fuel
/// (a module that never ends is stopped here, in one line), the counts
/// those of the timed region.
fn count(
    wasm: &[u8],
    setup: Arc<Setup>,
    fuel: u64,
) -> Result<(wasi::wasmi::Counted, Counts), String> {
    let inst = crate::count::instrumented(wasm).map_err(|e| e.to_string())?;
    let counted = wasi::wasmi::count(
        &inst.wasm,
        Instrumented::COUNTER_EXPORT,
        inst.slots(),
        setup,
        fuel,
    )
    .map_err(|e| match e {
        wasi::wasmi::CountStop::OutOfFuel(_) => {
            format!("counting run (wasmi): {e}; one that runs longer needs --fuel above {fuel}")
        }
        e => format!("counting run (wasmi): {e}"),
    })?;
    let decode = |raw: &[i64]| {
        inst.decode(|slot| Ok::<i64, ()>(raw.get(slot as usize).copied().unwrap_or(0)))
            .unwrap_or_default()
    };
    let counts = decode(&counted.end).delta(&decode(&counted.start));
    Ok((counted, counts))
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
fn check_stream(what: &str, want: &[u8], got: &[u8]) -> Result<(), Mismatch> {
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

/// A Sightglass module is `<suite>/<name>/benchmark.wasm`: it is known by
/// its directory; any other by its file's stem.
fn name_of(path: &Path, stem: &str) -> String {
    let dir = path
        .parent()
        .and_then(Path::file_name)
        .map(|d| d.to_string_lossy().into_owned());
    match dir {
        Some(d) if stem == "benchmark" => d,
        _ => stem.to_string(),
    }
}

/// Every regular file under `dir` by relative path, refusing more than
/// [`DIRECTORY_CAP`] bytes.
fn load_directory(dir: &Path) -> Result<BTreeMap<String, Arc<Vec<u8>>>, String> {
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

/// Each stream's expected file: `<stem>.<stream>.expected`, or the
/// directory's `default.<stream>.expected` (Sightglass's names).
fn expected_output(dir: &Path, stem: &str) -> Result<Expected, String> {
    let read = |stream: &str| -> Result<Option<Vec<u8>>, String> {
        for name in [stem, "default"] {
            let p = dir.join(format!("{name}.{stream}.expected"));
            match std::fs::read(&p) {
                Ok(d) => return Ok(Some(d)),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(format!("cannot read {}: {e}", p.display())),
            }
        }
        Ok(None)
    };
    Ok(Expected {
        stdout: read("stdout")?,
        stderr: read("stderr")?,
    })
}

fn identity(
    wasm: &[u8],
    args: &[String],
    env: &[String],
    files: &BTreeMap<&String, &Arc<Vec<u8>>>,
) -> String {
    // Lengths first: no two different invocations hash the same parts.
    let mut parts: Vec<&[u8]> = vec![wasm];
    let lengths: Vec<[u8; 8]> = args
        .iter()
        .chain(env)
        .map(|a| (a.len() as u64).to_le_bytes())
        .chain(files.values().map(|d| (d.len() as u64).to_le_bytes()))
        .collect();
    parts.extend(lengths.iter().map(|l| l.as_slice()));
    parts.extend(args.iter().chain(env).map(|a| a.as_bytes()));
    for (name, data) in files {
        parts.push(name.as_bytes());
        parts.push(data.as_slice());
    }
    format!("{:016x}", crate::hash::fnv1a(&parts))
}

impl Shape for Workload {
    fn name(&self) -> &str {
        &self.name
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
        Some(self.identity.clone())
    }
    fn wasi(&self) -> Option<Arc<Setup>> {
        Some(self.setup.clone())
    }
    fn wasm(&self, _p: &Params) -> Result<Vec<u8>, String> {
        Ok(self.wasm.clone())
    }
    fn wat(&self, _p: &Params, _body: Body) -> String {
        wasmprinter::print_bytes(&self.wasm).unwrap_or_else(|e| format!(";; cannot print: {e}"))
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
                format!("{}", self.path.display()),
                "a WASI run",
                "none",
            )));
        };
        let streams = [
            ("stdout", &self.expected.stdout, &self.first.0, &host.stdout),
            ("stderr", &self.expected.stderr, &self.first.1, &host.stderr),
        ];
        for (stream, file, first, got) in streams {
            let (want, against) = match file {
                Some(want) => (want.as_slice(), "the expected file"),
                None => (first.as_slice(), "the counting run"),
            };
            check_stream(
                &format!("{} {stream} against {against}", self.name),
                want,
                got,
            )
            .map_err(HookError::Mismatch)?;
        }
        Ok(())
    }
}

/// Whether an `app run` argument names a file or directory rather than
/// a recipe.
pub fn is_path(arg: &str) -> bool {
    arg.ends_with(".wasm") || arg.ends_with(".wat") || arg.contains('/') || Path::new(arg).is_dir()
}

/// The modules an argument names: the file itself; a directory's `.wasm`
/// files; or, when it holds none, those of its subdirectories (the layout
/// of Sightglass's `benchmarks/`), in name order.
pub fn modules(path: &Path) -> Result<Vec<PathBuf>, AppError> {
    let bad = |why: String| AppError::Workload {
        path: path.to_path_buf(),
        why,
    };
    let meta = std::fs::metadata(path).map_err(|e| bad(format!("cannot read it: {e}")))?;
    if !meta.is_dir() {
        return Ok(vec![path.to_path_buf()]);
    }
    let wasm_in = |dir: &Path| -> Result<Vec<PathBuf>, AppError> {
        let mut found = Vec::new();
        let entries = std::fs::read_dir(dir)
            .map_err(|e| bad(format!("cannot list {}: {e}", dir.display())))?;
        for entry in entries.flatten() {
            let p = entry.path();
            if p.is_file() && p.extension().is_some_and(|e| e == "wasm") {
                found.push(p);
            }
        }
        found.sort();
        Ok(found)
    };
    let direct = wasm_in(path)?;
    if !direct.is_empty() {
        return Ok(direct);
    }
    let mut subdirs: Vec<PathBuf> = std::fs::read_dir(path)
        .map_err(|e| bad(format!("cannot list it: {e}")))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    subdirs.sort();
    let mut found = Vec::new();
    for d in subdirs {
        found.extend(wasm_in(&d)?);
    }
    if found.is_empty() {
        return Err(bad(
            "holds no .wasm module, nor do its subdirectories".into()
        ));
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::check_stream;

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
}
