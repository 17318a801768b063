//! What an app can fail with before it runs: finding its recipe, building
//! and reading its module, rewriting its imports into stubs, adding the
//! driver, injecting a shape (warm mode); and its untimed counting run.

use super::rewrite::Sig;
use crate::engines::EngineError;
use crate::text::one_line;
use std::path::PathBuf;
use thiserror::Error;
use wasmparser::BinaryReaderError;

/// Why an app module (or a shape injected into it) cannot be prepared.
#[derive(Debug, Error)]
pub enum AppError {
    #[error("unknown app `{name}` (valid: {valid})")]
    UnknownApp { name: String, valid: String },
    #[error(
        "app {app} is not built ({} missing) and {} was not found; set LOOPBENCH_ROOT to the loopbench source tree",
        artifact.display(),
        script.display()
    )]
    NotBuilt {
        app: &'static str,
        artifact: PathBuf,
        script: PathBuf,
    },
    /// The recipe's own one-line error (it names what to install).
    #[error("building app {app} failed: {why}")]
    BuildFailed { app: &'static str, why: String },
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: std::io::Error,
    },
    /// The module does not prepare (the causes below).
    #[error("app {app}: {source}")]
    Prepare {
        app: &'static str,
        #[source]
        source: Box<AppError>,
    },
    /// Warm mode: the app with the shape injected does not load.
    #[error("warm mode, shape {shape}: {source}")]
    Warm {
        shape: String,
        #[source]
        source: Box<AppError>,
    },
    /// The engine of an arm cannot be built.
    #[error(transparent)]
    Engine(EngineError),
    /// The untimed counting or tracing engine failed.
    #[error("counting run: {0}")]
    CountingRun(#[source] EngineError),
    #[error("app {app}: run({steps}) did not finish within {fuel} units of fuel")]
    OutOfFuel {
        app: &'static str,
        steps: u64,
        fuel: u64,
    },
    #[error("app {app}: cannot trace its branches: {source}")]
    Trace {
        app: &'static str,
        #[source]
        source: loopbench_count::CountError,
    },
    /// wasmparser's reading of a section or item.
    #[error("{}", one_line(&.0.to_string()))]
    Wasm(#[from] BinaryReaderError),
    #[error("invalid module: {}", one_line(&.0.to_string()))]
    Invalid(#[source] BinaryReaderError),
    #[error("unsupported type section: {}", one_line(&.0.to_string()))]
    TypeSection(#[source] BinaryReaderError),
    /// The re-encoder's refusal of a value type, as it debug-prints.
    #[error("unsupported value type: {0}")]
    ValueType(String),
    /// The re-encoder's failure on the app, as it debug-prints.
    #[error("re-encoding failed: {0}")]
    Reencode(String),
    /// The re-encoder's failure on the injected shape, as it debug-prints.
    #[error("re-encoding the shape failed: {0}")]
    ReencodeShape(String),
    #[error("export `{name}` has no function type")]
    NoFuncType { name: String },
    #[error("export `{name}` is not a function")]
    NotAFunction { name: String },
    #[error("module has no export `{name}`")]
    NoExport { name: String },
    #[error("function import without a function type")]
    ImportWithoutType,
    #[error("import {module}.{name} is a tag; not supported")]
    TagImport { module: String, name: String },
    #[error("tag imports are not supported")]
    TagImports,
    #[error("{stubs} stub bodies for {imports} imported functions")]
    StubCount { stubs: usize, imports: u32 },
    #[error("module already exports `{name}`, a name loopbench needs")]
    ExportTaken { name: String },
    #[error("unsupported section in app module: {id:?}")]
    UnsupportedSection { id: Option<u8> },
    #[error("rewritten module does not validate (a loopbench bug): {}", one_line(&.0.to_string()))]
    RewriteInvalid(#[source] BinaryReaderError),
    #[error("the app module has no memory")]
    NoMemory,
    #[error("the app's run has type {sig:?}, expected (i32) -> i32")]
    RunType { sig: Sig },
    /// The signatures are boxed to keep every error small.
    #[error("hash-wasm export {name} has type {found:?}, expected {want:?}")]
    HashExport {
        name: String,
        found: Box<Sig>,
        want: Box<Sig>,
    },
    #[error("zstddec's ZSTD_decompress has type {sig:?}, expected (i32 x4) -> i32")]
    ZstdType { sig: Sig },
    #[error("the zstd inputs are empty")]
    EmptyZstdInputs,
    /// A user's WASI command that cannot run, in one line.
    #[error("{}: {why}", path.display())]
    Workload { path: PathBuf, why: String },
    /// Warm mode: what keeps the shape from being injected into the app.
    #[error("{0}")]
    NotInjectable(&'static str),
}

crate::converts_above!(AppError);

impl AppError {
    pub fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        AppError::Io {
            context: context.into(),
            source,
        }
    }
}
