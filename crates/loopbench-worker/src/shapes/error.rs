//! Why a shape cannot be chosen, built or loaded: the shapes area's own
//! errors. A leaf, so the catalog, the user-shape loader and the arms can
//! name them without reaching up to the top-level error.

use std::path::PathBuf;
use std::sync::Arc;
use thiserror::Error;
use wasmparser::ValType;

/// Why a shape as asked for cannot run.
#[derive(Debug, Error, Clone)]
pub enum ShapeError {
    #[error("unknown shape `{name}` (valid: {valid})")]
    Unknown {
        name: String,
        /// The built-in names, comma-separated.
        valid: String,
    },
    #[error("shape file {}: `{name}` is the name of a built-in shape; rename the file", path.display())]
    ShadowsBuiltin { path: PathBuf, name: String },
    #[error("shape `{0}` is given twice")]
    Twice(String),
    /// `--iters` (or a computed count) is not a positive multiple of the
    /// shape's group below 2^31; `option` says which was given.
    #[error(
        "shape {shape}: {option} must be a positive multiple of {per} below 2^31, got {iters}"
    )]
    Iters {
        shape: String,
        option: &'static str,
        per: u64,
        iters: u64,
    },
    #[error(
        "shape {shape}: --bytes {bytes} gives {iters} iterations, more than 2^31 - 1; \
         use a smaller --bytes, or set --iters"
    )]
    TooManyIters {
        shape: String,
        bytes: String,
        iters: u64,
    },
    #[error("shape {shape} needs {needs} of linear memory for --bytes {bytes}; wasm32 allows at most {max}")]
    Memory {
        shape: String,
        needs: String,
        bytes: String,
        max: String,
    },
    /// The shape's generator failed (its WAT did not assemble).
    #[error("shape {shape}: {detail}")]
    Generate { shape: String, detail: String },
    /// The proposals a module needs could not be read.
    #[error("shape {shape}: {detail}")]
    Proposals { shape: String, detail: String },
    #[error("cannot read {}: {source}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: Arc<std::io::Error>,
    },
    #[error("{}: a FIFO nobody writes to; start its writer first", .0.display())]
    NoWriter(PathBuf),
    #[error("{}: larger than {} MiB, the most a shape file may hold", path.display(), limit >> 20)]
    TooLarge { path: PathBuf, limit: u64 },
    #[error("{}: neither a wasm binary nor UTF-8 WAT text", .0.display())]
    NotText(PathBuf),
    /// The WAT parser's message, on one line, with the file and position.
    #[error("{0}")]
    Wat(String),
    #[error("{}: {source}", path.display())]
    Module {
        path: PathBuf,
        #[source]
        source: ModuleError,
    },
}

/// Why a user module is not a loop loopbench can run.
#[derive(Debug, Error, Clone)]
pub enum ModuleError {
    /// The validator's message, on one line.
    #[error("invalid wasm: {0}")]
    Invalid(String),
    #[error("{0}")]
    Parse(#[from] wasmparser::BinaryReaderError),
    /// The first import, as `module.name (kind)`.
    #[error("imports are not supported in a shape (it must be self-contained); it imports {0}")]
    Import(String),
    #[error("missing export `run` (a function taking the iteration count as i32)")]
    MissingRun,
    #[error("export `run` must be (func (param i32) (result i32)?), found params {params:?} results {results:?}")]
    BadRun {
        params: Vec<ValType>,
        results: Vec<ValType>,
    },
    #[error(
        "export `setup` must be (func (param i32)), found params {params:?} results {results:?}"
    )]
    BadSetup {
        params: Vec<ValType>,
        results: Vec<ValType>,
    },
    #[error(
        "export `verify` must be (func (result i32)), found params {params:?} results {results:?}"
    )]
    BadVerify {
        params: Vec<ValType>,
        results: Vec<ValType>,
    },
}
