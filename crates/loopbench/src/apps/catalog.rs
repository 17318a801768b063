//! The app catalog: the recipes in `apps/`, what each workload is and
//! returns, and their built modules (`scripts/apps/build.sh` into
//! `target/apps/`, run on first use when a module is missing).

use super::AppError;
use std::path::{Path, PathBuf};

/// How the app's `run(n)` comes to be.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Driver {
    /// The module exports `run(n) -> i32` itself (our C wrapper).
    Native,
    /// hash-wasm's `Hash_*` API: `n` updates of one chunk, then the digest.
    HashWasm,
    /// zstddec: `n` decompressions of one frame.
    Zstd,
}

/// One recipe in `apps/`.
#[derive(Clone, Copy, Debug)]
pub struct AppSpec {
    pub name: &'static str,
    pub about: &'static str,
    /// Registry, package and pinned version.
    pub source: &'static str,
    pub license: &'static str,
    /// Workload steps of one rep (`run(steps)`).
    pub steps: u64,
    /// `run(steps)` on every engine (for [`Driver::Zstd`] the checksum is
    /// computed from the input instead, see [`zstd_checksum`]).
    pub expected: i32,
    pub driver: Driver,
    /// Engines known to run this app to a wrong answer.
    pub known_defects: &'static [KnownDefect],
}

/// An engine that runs an app to a wrong answer: the defect is the
/// engine's, reduced to a small module that shows the difference (kept as a
/// test, `tests/engine_defects.rs`, which fails once the engine is fixed).
#[derive(Clone, Copy, Debug)]
pub struct KnownDefect {
    /// The engine and version it was found in, as an arm's version starts
    /// (`tinywasm 0.10.`).
    pub engine: &'static str,
    /// What the engine does wrong, after "which".
    pub what: &'static str,
    /// The reduced module, from the workspace root.
    pub reduced: &'static str,
}

/// tinywasm 0.10 lowers `local.get X; end; local.tee Y` of a block with a
/// result into one copy placed before the block's end, so a branch out of
/// the block skips the tee. zstddec meets it in its bit reader and reports
/// corruption (ZSTD error 20).
pub const TINYWASM_010_TEE_AFTER_BRANCH: KnownDefect = KnownDefect {
    engine: "tinywasm 0.10.",
    what: "skips a local.tee right after a block's end when a branch leaves the block",
    reduced: "crates/loopbench/tests/fixtures/engine-defects/tinywasm-0.10-tee-after-branch.wat",
};

impl AppSpec {
    /// The known defect of the engine that ran this arm, by its version.
    pub fn known_defect(&self, version: &str) -> Option<&'static KnownDefect> {
        self.known_defects
            .iter()
            .find(|d| version.starts_with(d.engine))
    }
}

/// hash-wasm workload: this many bytes per `Hash_Update`.
pub const HASH_CHUNK: usize = 8192;
pub(super) const HASH_SEED: u64 = 0x5A_256;
/// SHA-256 of `HASH_CHUNK` bytes of `Stream::new(HASH_SEED)` repeated
/// `steps` times, from Python's hashlib (see apps/sha256/README.md).
pub(super) const SHA256_DIGEST: &str =
    "deb8ea2cbedadacbdd1d0f07f8ff07b8f8bff575ebb9148d4cd9a5a93267b0cd";

/// The catalog, in the order `app list` prints it.
pub const APPS: &[AppSpec] = &[
    AppSpec {
        name: "zlib",
        about: "deflate (level 6) + inflate of 32 KiB text blocks, round trip checked",
        source: "crates.io libz-sys =1.1.33 (vendored zlib C sources) + apps/zlib/wrapper.c",
        license: "zlib license (zlib); wrapper MIT OR Apache-2.0",
        steps: 2,
        expected: 222861457,
        driver: Driver::Native,
        known_defects: &[],
    },
    AppSpec {
        name: "lua",
        about: "Lua 5.4.9 interpreter running apps/lua/workload.lua (tables, strings, closures, metatables)",
        source: "crates.io lua-src =551.1.0 (Lua 5.4.9 C sources) + apps/lua/wrapper.c",
        license: "MIT (Lua); wrapper MIT OR Apache-2.0",
        steps: 2,
        expected: 60610254,
        driver: Driver::Native,
        known_defects: &[],
    },
    AppSpec {
        name: "sqlite",
        about: "SQLite in-memory database: 2000 inserts per step, an index, a join with aggregates, indexed range queries, a GROUP BY on text",
        source: "crates.io libsqlite3-sys =0.40.0 (bundled SQLite 3.54.1 amalgamation) + apps/sqlite/wrapper.c",
        license: "public domain (SQLite); wrapper MIT OR Apache-2.0",
        steps: 2,
        // apps/sqlite/reference.py 2 (Python's sqlite3, same rows and SQL).
        expected: -1085592089,
        driver: Driver::Native,
        known_defects: &[],
    },
    AppSpec {
        name: "sha256",
        about: "hash-wasm's SHA-256 over n x 8 KiB, digest checked",
        source: "npm hash-wasm@4.13.0 (prebuilt module, base64 in dist/sha256.umd.min.js)",
        license: "MIT (hash-wasm)",
        steps: 64,
        expected: 753580254,
        driver: Driver::HashWasm,
        known_defects: &[],
    },
    AppSpec {
        name: "zstd",
        about: "zstddec's ZSTD_decompress of a 1 MiB frame, output compared with the input",
        source: "npm zstddec@0.3.4 (prebuilt Emscripten module, base64 in dist/zstddec.mjs)",
        license: "MIT (zstddec), BSD (Zstandard)",
        steps: 4,
        expected: 0,
        driver: Driver::Zstd,
        known_defects: &[TINYWASM_010_TEE_AFTER_BRANCH],
    },
];

pub fn names() -> Vec<&'static str> {
    APPS.iter().map(|a| a.name).collect()
}

pub fn find(name: &str) -> Result<&'static AppSpec, AppError> {
    APPS.iter()
        .find(|a| a.name == name)
        .ok_or_else(|| AppError::UnknownApp {
            name: name.to_string(),
            valid: names().join(", "),
        })
}

/// The workspace root (where `apps/` and `scripts/` live).
pub fn root() -> PathBuf {
    std::env::var_os("LOOPBENCH_ROOT")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            let here = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
            here.canonicalize().unwrap_or(here)
        })
}

/// Where built app artifacts are cached.
pub fn artifacts_dir() -> PathBuf {
    std::env::var_os("LOOPBENCH_APPS_OUT")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("target/apps"))
}

/// The app's module file, built by its recipe if missing.
pub fn artifact(spec: &AppSpec) -> Result<PathBuf, AppError> {
    let dir = artifacts_dir();
    let path = dir.join(format!("{}.wasm", spec.name));
    if path.is_file() {
        return Ok(path);
    }
    let script = root().join("scripts/apps/build.sh");
    if !script.is_file() {
        return Err(AppError::NotBuilt {
            app: spec.name,
            artifact: path,
            script,
        });
    }
    let out = crate::children::die_with_parent(&mut std::process::Command::new("bash"))
        .arg(&script)
        .arg(spec.name)
        .env("LOOPBENCH_APPS_OUT", &dir)
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| AppError::io(format!("running {}", script.display()), e))?;
    if !out.status.success() || !path.is_file() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        let line = stderr
            .lines()
            .rev()
            .find(|l| l.starts_with("error:"))
            .or_else(|| stderr.lines().last());
        return Err(AppError::BuildFailed {
            app: spec.name,
            why: line
                .unwrap_or("the recipe printed nothing")
                .trim_start_matches("error: ")
                .to_string(),
        });
    }
    Ok(path)
}

/// A module or input file's bytes.
pub(super) fn read(path: &Path) -> Result<Vec<u8>, AppError> {
    std::fs::read(path).map_err(|e| AppError::io(format!("reading {}", path.display()), e))
}
