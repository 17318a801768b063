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
use crate::shapes::command::{check_stream, load_directory, Command, CommandSource, Reference};
use crate::shapes::Shape;
use crate::wasi::{self, Region};
use loopbench_count::{Counts, Instrumented};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The counting run's fuel unless `--fuel` says otherwise: a tight loop
/// that never ends burns it in 18 s on a 2-vCPU EPYC VM, and Sightglass's
/// modules (about 10^8 instructions) fit many times over; so do the
/// recipes' counting runs (at most 1.7 * 10^8 ops, sqlite), which take it
/// as theirs.
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

/// A WASI command module, loaded, counted and checked: the command a
/// session runs as a shape, and what its counting run found.
pub struct Workload {
    command: Command,
    /// The exact counts of the timed region, from the counting run.
    counts: Counts,
    /// Calls of its imports inside the timed region, in the counting run.
    host_calls: u64,
}

impl Workload {
    /// Read the module at `path`, its directory and expected output; every
    /// import must be one the host serves.
    pub fn load(path: &Path, invocation: &Invocation) -> Result<Self, AppError> {
        let bad = |why: String| AppError::Workload {
            path: path.to_path_buf(),
            why,
        };
        let mut bytes = Vec::new();
        crate::input::open(path)
            .and_then(|mut f| std::io::Read::read_to_end(&mut f, &mut bytes))
            .map_err(|e| bad(format!("cannot read it: {e}")))?;
        // A module given as text (named explicitly) is assembled here.
        let wasm = match path.extension().is_some_and(|e| e == "wat") {
            true => wat::parse_bytes(&bytes)
                .map_err(|e| bad(format!("does not assemble: {e}")))?
                .into_owned(),
            false => bytes,
        };
        wasi::imports(&wasm).map_err(|e| bad(e.to_string()))?;
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        // Absolute: a worker process loads it again.
        let dir = std::fs::canonicalize(&dir)
            .map_err(|e| bad(format!("cannot read its directory: {e}")))?;
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
        let name = name_of(path, &stem);
        // What each stream must print, and what the command reads, are
        // known after the counting run.
        let unknown = || Reference {
            want: Vec::new(),
            against: String::new(),
        };
        let source = CommandSource {
            name: name.clone(),
            wasm,
            dir,
            looked_up: Vec::new(),
            lookups_hash: 0,
            args,
            env: invocation.env.clone(),
            stdout: unknown(),
            stderr: unknown(),
        };
        let command = Command::new(source, files).map_err(bad)?;
        let setup = command.setup().clone();
        let (counted, counts) =
            count(&command.source().wasm, setup.clone(), invocation.fuel).map_err(bad)?;
        // The counting run is the first run: its output is the reference
        // of a stream without a file, and one that differs from a file is
        // refused before any timing.
        let reference =
            |stream: &str, file: Option<Vec<u8>>, got: Vec<u8>| -> Result<Reference, AppError> {
                match file {
                    Some(want) => {
                        check_stream(
                            &format!("{name} {stream} against the expected file"),
                            &want,
                            &got,
                        )
                        .map_err(|e| bad(format!("counting run (wasmi): {e}")))?;
                        Ok(Reference {
                            want,
                            against: "the expected file".into(),
                        })
                    }
                    None => Ok(Reference {
                        want: got,
                        against: "the counting run".into(),
                    }),
                }
            };
        let [stdout_file, stderr_file] = expected;
        let stdout = reference("stdout", stdout_file, counted.host.stdout)?;
        let stderr = reference("stderr", stderr_file, counted.host.stderr)?;
        let command = command.counted(stdout, stderr, &counted.host.looked_up);
        let identity = identity(command.source());
        let timed = match setup.region {
            Region::Between => "bench.start to bench.end",
            Region::FromStart => "bench.start to the end of _start",
            Region::Whole => "the whole _start",
        };
        let about = format!(
            "WASI command {}, timed {timed}, identity {identity}",
            path.display()
        );
        let command = command.described(about, identity);
        Ok(Workload {
            command,
            counts,
            host_calls: counted.host.timed_calls,
        })
    }

    /// Its name: the module's directory for Sightglass's layout, else the
    /// file's stem.
    pub fn name(&self) -> &str {
        self.command.name()
    }

    /// The exact op counts of one run's timed region.
    pub fn counts(&self) -> &Counts {
        &self.counts
    }

    /// Calls of its imports inside the timed region of one run.
    pub fn host_calls(&self) -> u64 {
        self.host_calls
    }

    /// The hash of its module, arguments, environment and the files it
    /// reads: what keys its results.
    pub fn identity(&self) -> String {
        Shape::identity(&self.command).unwrap_or_default()
    }

    /// The one-line description: file, timed region, identity.
    pub fn about(&self) -> &str {
        self.command.prices()
    }

    /// The command a session runs as a shape.
    pub fn into_shape(self) -> Box<dyn Shape> {
        Box::new(self.command)
    }
}

/// The untimed counting run: the instrumented copy on wasmi with fuel
/// (a module that never ends is stopped here, in one line), the counts
/// those of the timed region.
fn count(
    wasm: &[u8],
    setup: Arc<wasi::Setup>,
    fuel: u64,
) -> Result<(wasi::wasmi::Counted, Counts), String> {
    let inst = crate::count::instrumented(wasm).map_err(|e| e.to_string())?;
    // Marked here, not in the routing file (a build's worker compiles that
    // file on its own, without loopbench's modules).
    let _call = crate::children::Unstoppable::enter();
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

/// Each stream's expected file: `<stem>.<stream>.expected`, or the
/// directory's `default.<stream>.expected` (Sightglass's names).
fn expected_output(dir: &Path, stem: &str) -> Result<[Option<Vec<u8>>; 2], String> {
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
    Ok([read("stdout")?, read("stderr")?])
}

/// The command's module, arguments, environment and what it reads: one
/// hash.
fn identity(command: &CommandSource) -> String {
    let (args, env) = (&command.args, &command.env);
    // Lengths first: no two different invocations hash the same parts.
    let lengths: Vec<[u8; 8]> = args
        .iter()
        .chain(env)
        .map(|a| (a.len() as u64).to_le_bytes())
        .collect();
    let reads = command.lookups_hash.to_le_bytes();
    let mut parts: Vec<&[u8]> = vec![&command.wasm, &reads];
    parts.extend(lengths.iter().map(|l| l.as_slice()));
    parts.extend(args.iter().chain(env).map(|a| a.as_bytes()));
    format!("{:016x}", crate::hash::fnv1a(&parts))
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
