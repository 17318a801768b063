//! User-supplied loops (`--shape-file loop.wat` or `.wasm`).
//!
//! The module must export `run(iters: i32)` (returning nothing or an i32) and
//! may export `setup(iters: i32)` (called before every rep, untimed) and
//! `verify() -> i32` (called after every rep, untimed; nonzero means the work
//! was done). The exports are checked with wasmparser before any engine sees
//! the module, so a missing or mistyped export is one clear line.

use super::error::{ModuleError, ShapeError};
use super::*;
use crate::text::one_line;
use std::path::Path;
use wasmparser::{ExternalKind, Parser, Payload, ValType};

pub struct UserShape {
    name: String,
    wasm: Vec<u8>,
    text: Option<String>,
    has_setup: bool,
    has_verify: bool,
}

/// The largest shape file read: a loop is kilobytes, a whole program's
/// module a few megabytes. A device or stream without end (`/dev/zero`)
/// is refused at this size, not read until memory runs out.
pub const MAX_SHAPE_FILE: u64 = 64 << 20;

/// A shape file's bytes, at most [`MAX_SHAPE_FILE`] of them.
pub fn read_file(path: &Path) -> Result<Vec<u8>, ShapeError> {
    use std::io::Read;
    let read_error = |source| ShapeError::Read {
        path: path.to_path_buf(),
        source: std::sync::Arc::new(source),
    };
    let mut bytes = Vec::new();
    let file = open_without_waiting(path).map_err(read_error)?;
    file.take(MAX_SHAPE_FILE + 1)
        .read_to_end(&mut bytes)
        .map_err(read_error)?;
    if bytes.is_empty() && is_fifo(path) {
        return Err(ShapeError::NoWriter(path.to_path_buf()));
    }
    if bytes.len() as u64 > MAX_SHAPE_FILE {
        return Err(ShapeError::TooLarge {
            path: path.to_path_buf(),
            limit: MAX_SHAPE_FILE,
        });
    }
    Ok(bytes)
}

/// `path` opened for reading without waiting for a FIFO's writer (opening
/// a FIFO blocks until one comes): then reads wait for its data as usual,
/// and a FIFO nobody writes to reads as empty at once.
fn open_without_waiting(path: &Path) -> std::io::Result<std::fs::File> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        use std::os::unix::io::AsRawFd;
        let file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(path)?;
        // SAFETY: fcntl on a descriptor this function owns.
        unsafe {
            let flags = libc::fcntl(file.as_raw_fd(), libc::F_GETFL);
            if flags >= 0 {
                libc::fcntl(file.as_raw_fd(), libc::F_SETFL, flags & !libc::O_NONBLOCK);
            }
        }
        Ok(file)
    }
    #[cfg(not(unix))]
    {
        std::fs::File::open(path)
    }
}

fn is_fifo(path: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        std::fs::metadata(path).is_ok_and(|m| m.file_type().is_fifo())
    }
    #[cfg(not(unix))]
    {
        let _ = path;
        false
    }
}

/// A .wasm or .wat file as module bytes, with the WAT text when it was text.
pub fn read_module(path: &Path) -> Result<(Vec<u8>, Option<String>), ShapeError> {
    let bytes = read_file(path)?;
    if bytes.starts_with(b"\0asm") {
        return Ok((bytes, None));
    }
    let text = String::from_utf8(bytes).map_err(|_| ShapeError::NotText(path.to_path_buf()))?;
    let wasm = wat::parse_str(&text).map_err(|mut e| {
        e.set_path(path);
        ShapeError::Wat(wat_error_line(&e.to_string()))
    })?;
    Ok((wasm, Some(text)))
}

/// Iterations when the user gives none: a loop of unknown cost, so modest.
pub const DEFAULT_USER_ITERS: u64 = 1_000_000;

impl UserShape {
    pub fn load(path: &Path) -> Result<Self, ShapeError> {
        let shown = path.display().to_string();
        let (wasm, text) = read_module(path)?;
        let name = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| shown.clone());
        Self::from_wasm(name, wasm, text).map_err(|source| ShapeError::Module {
            path: path.to_path_buf(),
            source,
        })
    }

    pub fn from_wasm(
        name: String,
        wasm: Vec<u8>,
        text: Option<String>,
    ) -> Result<Self, ModuleError> {
        let sigs = export_signatures(&wasm)?;
        // Every arm instantiates the shape with nothing to link against.
        if let Some(i) = first_import(&wasm)? {
            return Err(ModuleError::Import(i));
        }
        let sig = |n: &str| {
            sigs.iter()
                .find(|(name, _, _)| name == n)
                .map(|(_, p, r)| (p.clone(), r.clone()))
        };
        match sig("run") {
            None => return Err(ModuleError::MissingRun),
            Some((p, r))
                if p != [ValType::I32] || r.len() > 1 || r.iter().any(|t| *t != ValType::I32) =>
            {
                return Err(ModuleError::BadRun {
                    params: p,
                    results: r,
                })
            }
            _ => {}
        }
        let has_setup = match sig("setup") {
            None => false,
            Some((p, r)) if p == [ValType::I32] && r.is_empty() => true,
            Some((p, r)) => {
                return Err(ModuleError::BadSetup {
                    params: p,
                    results: r,
                })
            }
        };
        let has_verify = match sig("verify") {
            None => false,
            Some((p, r)) if p.is_empty() && r == [ValType::I32] => true,
            Some((p, r)) => {
                return Err(ModuleError::BadVerify {
                    params: p,
                    results: r,
                })
            }
        };
        Ok(UserShape {
            name,
            wasm,
            text,
            has_setup,
            has_verify,
        })
    }
}

/// wat's multi-line error (message, `--> file:line:col`, the source line
/// and a caret) as one line: `file:line:col: malformed WAT: message: `source``.
fn wat_error_line(rendered: &str) -> String {
    let mut lines = rendered.lines();
    let message = lines.next().unwrap_or_default().trim();
    let mut at = None;
    let mut source = None;
    for l in lines {
        let l = l.trim();
        if let Some(loc) = l.strip_prefix("--> ") {
            at = Some(loc.trim());
        } else if let Some((n, text)) = l.split_once(" | ") {
            if source.is_none() && n.trim().parse::<u64>().is_ok() {
                source = Some(text.trim());
            }
        }
    }
    match (at, source) {
        (Some(at), Some(src)) => format!("{at}: malformed WAT: {message}: `{src}`"),
        (Some(at), None) => format!("{at}: malformed WAT: {message}"),
        _ => format!("malformed WAT: {}", one_line(rendered)),
    }
}

type Signature = (String, Vec<ValType>, Vec<ValType>);

/// The module's first import as `module.name (kind)`, if it has any.
fn first_import(wasm: &[u8]) -> Result<Option<String>, ModuleError> {
    for payload in Parser::new(0).parse_all(wasm) {
        if let Payload::ImportSection(r) = payload? {
            if let Some(imp) = r.into_imports().next() {
                let imp = imp?;
                let kind = match imp.ty {
                    wasmparser::TypeRef::Func(_) | wasmparser::TypeRef::FuncExact(_) => "function",
                    wasmparser::TypeRef::Table(_) => "table",
                    wasmparser::TypeRef::Memory(_) => "memory",
                    wasmparser::TypeRef::Global(_) => "global",
                    wasmparser::TypeRef::Tag(_) => "tag",
                };
                return Ok(Some(format!("{}.{} ({kind})", imp.module, imp.name)));
            }
        }
    }
    Ok(None)
}

/// Exported functions and their types. Validates the module first, so
/// malformed input fails here with the validator's message.
pub fn export_signatures(wasm: &[u8]) -> Result<Vec<Signature>, ModuleError> {
    let mut validator = wasmparser::Validator::new_with_features(wasmparser::WasmFeatures::all());
    validator
        .validate_all(wasm)
        .map_err(|e| ModuleError::Invalid(one_line(&e.to_string())))?;
    let mut types: Vec<(Vec<ValType>, Vec<ValType>)> = Vec::new();
    let mut funcs: Vec<u32> = Vec::new();
    let mut out = Vec::new();
    for payload in Parser::new(0).parse_all(wasm) {
        match payload? {
            Payload::TypeSection(r) => {
                for rec in r.into_iter_err_on_gc_types() {
                    let f = rec?;
                    types.push((f.params().to_vec(), f.results().to_vec()));
                }
            }
            Payload::ImportSection(r) => {
                for imp in r.into_imports() {
                    if let wasmparser::TypeRef::Func(t) = imp?.ty {
                        funcs.push(t);
                    }
                }
            }
            Payload::FunctionSection(r) => {
                for t in r {
                    funcs.push(t?);
                }
            }
            Payload::ExportSection(r) => {
                for e in r {
                    let e = e?;
                    if e.kind == ExternalKind::Func {
                        let ty = funcs
                            .get(e.index as usize)
                            .and_then(|t| types.get(*t as usize));
                        if let Some((p, r)) = ty {
                            out.push((e.name.to_string(), p.clone(), r.clone()));
                        }
                    }
                }
            }
            _ => {}
        }
    }
    Ok(out)
}

impl Shape for UserShape {
    fn name(&self) -> &str {
        &self.name
    }
    fn prices(&self) -> &str {
        if self.has_verify {
            "user loop (--shape-file)"
        } else {
            "user loop (--shape-file); no verify(): a rep is checked only for running to its end"
        }
    }
    fn default_iters(&self, _p: &Params) -> u64 {
        DEFAULT_USER_ITERS
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
    fn wasm(&self, _p: &Params) -> Result<Vec<u8>, String> {
        Ok(self.wasm.clone())
    }
    fn wat(&self, _p: &Params, _body: Body) -> String {
        match &self.text {
            Some(t) => t.clone(),
            None => wasmprinter::print_bytes(&self.wasm)
                .unwrap_or_else(|e| format!(";; cannot print module: {e}")),
        }
    }
    fn memory_bytes(&self, _p: &Params) -> u64 {
        0
    }
    fn init(&self, _p: &Params, _inst: &mut dyn Instance) -> Result<(), HookError> {
        Ok(())
    }
    fn reset(&self, _p: &Params, iters: u64, inst: &mut dyn Instance) -> Result<(), HookError> {
        if self.has_setup {
            inst.call("setup", Some(iters as i32), None)?;
        }
        Ok(())
    }
    fn verify(
        &self,
        _p: &Params,
        _iters: u64,
        _ret: Option<i32>,
        inst: &mut dyn Instance,
    ) -> Result<(), HookError> {
        if self.has_verify {
            match inst.call("verify", None, None)? {
                Some(v) if v != 0 => Ok(()),
                got => Err(HookError::Mismatch(Mismatch::new(
                    "verify()",
                    "nonzero",
                    got.map(|v| v.to_string())
                        .unwrap_or_else(|| "no result".into()),
                ))),
            }
        } else {
            Ok(())
        }
    }
}
