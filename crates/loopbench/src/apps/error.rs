//! What preparing an app module can fail with: reading it, rewriting its
//! imports into stubs, adding the driver, injecting a shape (warm mode).

use super::rewrite::Sig;
use thiserror::Error;
use wasmparser::BinaryReaderError;

/// Why an app module (or a shape injected into it) cannot be prepared.
#[derive(Debug, Error)]
pub enum AppError {
    /// wasmparser's reading of a section or item.
    #[error("{0}")]
    Wasm(#[from] BinaryReaderError),
    #[error("invalid module: {0}")]
    Invalid(#[source] BinaryReaderError),
    #[error("unsupported type section: {0}")]
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
    #[error("rewritten module does not validate (a loopbench bug): {0}")]
    RewriteInvalid(#[source] BinaryReaderError),
    #[error("the app module has no memory")]
    NoMemory,
    #[error("the app's run has type {sig:?}, expected (i32) -> i32")]
    RunType { sig: Sig },
    #[error("hash-wasm export {name} has type {found:?}, expected {want:?}")]
    HashExport { name: String, found: Sig, want: Sig },
    #[error("zstddec's ZSTD_decompress has type {sig:?}, expected (i32 x4) -> i32")]
    ZstdType { sig: Sig },
    #[error("the zstd inputs are empty")]
    EmptyZstdInputs,
    /// Warm mode: what keeps the shape from being injected into the app.
    #[error("{0}")]
    NotInjectable(&'static str),
}
