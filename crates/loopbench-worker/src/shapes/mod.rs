//! The shape catalog: generated wasm loops that each isolate one piece of
//! engine machinery.
//!
//! A shape is data plus three host-side hooks. The module exports
//! `run(iters) -> i32`, the loop itself, and `memory`. The host fills sources
//! once (`init`), clears destinations before every rep (`reset`) and checks
//! every rep afterwards (`verify`), all outside the timed region. Host-side
//! setup and verification run at memcpy speed, so a slow interpreter does not
//! spend the session filling 8 MiB through its own dispatch loop, and the
//! expected values come from a Rust reference of the same loop rather than from
//! the engine under test.
//!
//! Every built-in shape keeps its per-iteration counts constant by
//! construction (or constant over a group of [`Declared::per`] iterations), so
//! the exact counting run can check them: `counted(2n) - counted(n) == n *
//! declared`.

mod branches;
mod bulk;
mod calls;
mod chase;
pub mod command;
mod data;
mod dispatch;
pub mod error;
mod float;
mod frames;
mod locals;
mod memory;
mod predict;
pub mod recipe;
mod scalar;
mod shared;
mod simd;
mod skeleton;
pub mod user;
pub use error::{ModuleError, ShapeError};

use crate::engines::EngineError;
use crate::engines::Instance;
use serde::Serialize;
use std::fmt;

/// Working-set layout shared by every built-in shape: page 0 holds small
/// parameters (flags, seeds, tables), sources and destinations follow.
pub const PARAM_BASE: u64 = 0;
pub const TABLE_BASE: u64 = 1024;
pub const DATA_BASE: u64 = 65536;

/// Parameters a user can set on the command line.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Params {
    /// Working-set bytes each shape streams over (a power of two).
    pub bytes: u64,
    /// Overrides the shape's own iteration count.
    pub iters: Option<u64>,
    /// Chain length for add_chain / br_chain.
    pub k: u32,
}

impl Default for Params {
    fn default() -> Self {
        Params {
            bytes: 8 << 20,
            iters: None,
            k: 8,
        }
    }
}

/// Whether the loop body is generated. `Disabled` keeps only the loop
/// skeleton; the tests use it to prove that every verifier fails on a loop
/// that did no work.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Body {
    Enabled,
    Disabled,
}

/// Counts the shape declares for `per` iterations of its loop (most shapes:
/// per = 1). Instruction counting follows `loopbench-count`'s rules, which the
/// counting run checks exactly.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Declared {
    /// Executed wasm instructions.
    pub ops: u64,
    /// Taken branches, loop back-edges included.
    pub taken_branches: u64,
    /// Linear-memory loads (plain and atomic).
    pub loads: u64,
    /// Linear-memory stores (plain and atomic).
    pub stores: u64,
    /// Atomic instructions (threads proposal).
    pub atomics: u64,
    /// Calls, direct and indirect.
    pub calls: u64,
    /// Bytes written or read by the loop's payload (what MB/s is computed on).
    pub bytes: u64,
    /// The number of iterations these counts cover.
    pub per: u64,
}

impl Declared {
    pub fn per_iter(&self, n: u64) -> f64 {
        n as f64 / self.per.max(1) as f64
    }
}

/// A verification failure: what differed, where.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mismatch {
    pub what: String,
    pub expected: String,
    pub got: String,
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: expected {}, got {}",
            self.what, self.expected, self.got
        )
    }
}

impl Mismatch {
    pub fn new(
        what: impl Into<String>,
        expected: impl fmt::Display,
        got: impl fmt::Display,
    ) -> Self {
        Mismatch {
            what: what.into(),
            expected: expected.to_string(),
            got: got.to_string(),
        }
    }
}

/// Errors from a shape's host hooks: the engine failed, or the work is wrong.
#[derive(Debug)]
pub enum HookError {
    Engine(EngineError),
    Mismatch(Mismatch),
}

impl From<EngineError> for HookError {
    fn from(e: EngineError) -> Self {
        HookError::Engine(e)
    }
}

/// One shape family member. Implementations live one file per family.
pub trait Shape: Sync + Send {
    fn name(&self) -> &str;
    /// What this shape prices, one line.
    fn prices(&self) -> &str;
    /// The default iteration count for a working set.
    fn default_iters(&self, p: &Params) -> u64;
    fn declared(&self, p: &Params) -> Declared;
    /// False for user shapes, whose counts come from the counting run only.
    fn has_declared_counts(&self) -> bool {
        true
    }
    /// False for shapes whose counts the session must not derive from
    /// `run(16)` and `run(32)` (whole apps: `loopbench app profile` counts
    /// them over their real workload instead).
    /// For a real application run as a shape: the steps per rep.
    fn app_steps(&self) -> Option<u64> {
        None
    }

    fn counted_in_session(&self) -> bool {
        true
    }
    /// For a user's workload: what identifies it beyond its name (the hash
    /// of its module and invocation), so rows of one name that measured
    /// different workloads are never compared.
    fn identity(&self) -> Option<String> {
        None
    }
    /// After a failed timed call: an explanation the shape can give from
    /// the instance (e.g. which stubbed import an app called), if any.
    fn explain_failure(&self, _inst: &mut dyn Instance) -> Option<String> {
        None
    }
    /// The export each rep calls: `run(iters)` for every shape but a WASI
    /// command's `_start`.
    fn entry(&self) -> &'static str {
        "run"
    }
    /// For a WASI command: the command. The arm then runs every rep as a
    /// fresh process on the WASI host ([`crate::wasi`]), and a worker is
    /// sent the command itself rather than a module.
    fn command(&self) -> Option<&command::Command> {
        None
    }
    /// For an app recipe: the recipe, which a worker is sent whole.
    fn recipe(&self) -> Option<&recipe::Recipe> {
        None
    }
    /// The module bytes; built-in shapes assemble their WAT.
    fn wasm(&self, p: &Params) -> Result<Vec<u8>, String> {
        wat::parse_str(self.wat(p, Body::Enabled))
            .map_err(|e| format!("generated WAT does not parse: {e}"))
    }
    /// The module text. `iters` is only a hint for layout; the loop takes its
    /// count as the argument of `run`.
    fn wat(&self, p: &Params, body: Body) -> String;
    /// Linear memory the module needs, in bytes (wasm pages are derived).
    /// One page by default: the loops that touch no working set keep their
    /// parameters there.
    fn memory_bytes(&self, _p: &Params) -> u64 {
        65536
    }
    /// Fill sources and parameters once per fresh instance.
    fn init(&self, p: &Params, inst: &mut dyn Instance) -> Result<(), HookError>;
    /// Clear destinations before every rep (nothing, for shapes whose rep
    /// leaves no memory effect to check).
    fn reset(&self, _p: &Params, _iters: u64, _inst: &mut dyn Instance) -> Result<(), HookError> {
        Ok(())
    }
    /// Check the rep's return value and memory effects.
    fn verify(
        &self,
        p: &Params,
        iters: u64,
        ret: Option<i32>,
        inst: &mut dyn Instance,
    ) -> Result<(), HookError>;
}

/// Every built-in shape, in catalog order.
pub fn catalog() -> Vec<Box<dyn Shape>> {
    let mut all: Vec<Box<dyn Shape>> = Vec::new();
    all.extend(branches::shapes());
    all.extend(dispatch::shapes());
    all.extend(memory::shapes());
    all.extend(bulk::shapes());
    all.extend(locals::shapes());
    all.extend(calls::shapes());
    all.extend(shared::shapes());
    all.extend(float::shapes());
    all.extend(scalar::shapes());
    all.extend(frames::shapes());
    all.extend(simd::shapes());
    all.extend(chase::shapes());
    all.extend(predict::shapes());
    all
}

pub fn names() -> Vec<String> {
    catalog().iter().map(|s| s.name().to_string()).collect()
}

pub fn find(name: &str) -> Option<Box<dyn Shape>> {
    catalog().into_iter().find(|s| s.name() == name)
}

/// The built-in shape `name`, or an error listing the valid names: the one
/// "unknown shape" message of every command.
pub fn lookup(name: &str) -> Result<Box<dyn Shape>, ShapeError> {
    find(name).ok_or_else(|| ShapeError::Unknown {
        name: name.to_string(),
        valid: names().join(", "),
    })
}

/// Resolve `--shapes` (names or `all`; none means all) and `--shape-file`
/// paths into shapes.
pub fn select(
    names: &[String],
    files: &[std::path::PathBuf],
) -> Result<Vec<Box<dyn Shape>>, ShapeError> {
    let mut out: Vec<Box<dyn Shape>> = Vec::new();
    let all = names.is_empty() && files.is_empty() || names.iter().any(|n| n == "all");
    if all {
        out.extend(catalog());
    } else {
        for n in names {
            out.push(lookup(n)?);
        }
    }
    for f in files {
        out.push(Box::new(user::UserShape::load(f)?));
    }
    // Results, the table and the model all key on the name: two shapes of
    // one name would mix, and a user's loop named like a built-in would be
    // priced as that built-in by `model`.
    for (i, s) in out.iter().enumerate() {
        let file = i.checked_sub(out.len() - files.len()).map(|f| &files[f]);
        if let Some(f) = file.filter(|_| find(s.name()).is_some()) {
            return Err(ShapeError::ShadowsBuiltin {
                path: f.clone(),
                name: s.name().to_string(),
            });
        }
        if out[..i].iter().any(|o| o.name() == s.name()) {
            return Err(ShapeError::Twice(s.name().to_string()));
        }
    }
    Ok(out)
}

/// The iteration count and linear memory of `shape` with `params`, or why
/// they cannot run (each message names the option to change).
pub fn check_params(shape: &dyn Shape, params: &Params) -> Result<(u64, u64), ShapeError> {
    let declared = shape.declared(params);
    let per = declared.per.max(1);
    let iters = params.iters.unwrap_or_else(|| shape.default_iters(params));
    if iters == 0 || !iters.is_multiple_of(per) || iters > i32::MAX as u64 {
        return Err(match params.iters {
            Some(_) => ShapeError::Iters {
                shape: shape.name().to_string(),
                option: "--iters",
                per,
                iters,
            },
            None => ShapeError::TooManyIters {
                shape: shape.name().to_string(),
                bytes: crate::units::format_bytes(params.bytes),
                iters,
            },
        });
    }
    let mem = shape.memory_bytes(params);
    if mem > MAX_WASM32_MEMORY {
        return Err(ShapeError::Memory {
            shape: shape.name().to_string(),
            needs: crate::units::format_bytes(mem),
            bytes: crate::units::format_bytes(params.bytes),
            max: crate::units::format_bytes(MAX_WASM32_MEMORY),
        });
    }
    Ok((iters, mem))
}

/// A shape made concrete: parameters fixed, module bytes built once.
pub struct ShapeModule {
    pub shape: Box<dyn Shape>,
    pub params: Params,
    pub iters: u64,
    pub wasm: Vec<u8>,
    /// Per-iteration counts the shape declares (absent for user shapes).
    pub declared: Option<Declared>,
}

impl ShapeModule {
    pub fn build(shape: Box<dyn Shape>, params: &Params) -> Result<Self, ShapeError> {
        let (iters, _) = check_params(shape.as_ref(), params)?;
        let declared = shape.declared(params);
        let wasm = shape.wasm(params).map_err(|detail| ShapeError::Generate {
            shape: shape.name().to_string(),
            detail,
        })?;
        let declared = shape.has_declared_counts().then_some(declared);
        Ok(ShapeModule {
            shape,
            params: params.clone(),
            iters,
            wasm,
            declared,
        })
    }

    pub fn name(&self) -> &str {
        self.shape.name()
    }

    /// Run `iters` iterations per call from now on (the module bytes do not
    /// depend on it); a positive multiple of the shape's group below 2^31.
    pub fn set_iters(&mut self, iters: u64) -> Result<(), ShapeError> {
        let per = self.shape.declared(&self.params).per.max(1);
        if iters == 0 || !iters.is_multiple_of(per) || iters > i32::MAX as u64 {
            return Err(ShapeError::Iters {
                shape: self.name().to_string(),
                option: "iterations",
                per,
                iters,
            });
        }
        self.iters = iters;
        self.params.iters = Some(iters);
        Ok(())
    }

    pub fn shape_ref(&self) -> ShapeRef<'_> {
        ShapeRef {
            name: self.shape.name(),
            shape: self.shape.as_ref(),
            params: &self.params,
            iters: self.iters,
        }
    }
}

/// A borrowed view of a [`ShapeModule`] that a prepared arm keeps.
#[derive(Clone, Copy)]
pub struct ShapeRef<'a> {
    pub name: &'a str,
    pub shape: &'a dyn Shape,
    pub params: &'a Params,
    pub iters: u64,
}

pub const MAX_WASM32_MEMORY: u64 = 1 << 32;

/// wasm pages needed to hold `bytes` (at least one).
pub fn pages_for(bytes: u64) -> u64 {
    bytes.div_ceil(65536).max(1)
}

/// A deterministic byte stream (xorshift64*), so sources are the same on every
/// engine and every run, without short periods and never all zero.
pub struct Stream(u64);

impl Stream {
    pub fn new(seed: u64) -> Self {
        Stream(seed | 1)
    }
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    pub fn bytes(&mut self, n: usize) -> Vec<u8> {
        let mut v = Vec::with_capacity(n + 8);
        while v.len() < n {
            v.extend_from_slice(&self.next_u64().to_le_bytes());
        }
        v.truncate(n);
        v
    }
}

/// A prologue loading locals from consecutive words at the parameter
/// base: `ty` is `i32` or `i64` (4 or 8 bytes apart).
pub fn load_locals(ty: &str, locals: &[&str]) -> String {
    let width = if ty == "i64" { 8 } else { 4 };
    locals
        .iter()
        .enumerate()
        .map(|(j, l)| {
            format!(
                "    i32.const {}\n    {ty}.load\n    local.set {l}\n",
                width * j
            )
        })
        .collect()
}

/// The i32 locals xor-ed together: a result that depends on every one.
pub fn xor_of(locals: &[&str]) -> String {
    let mut out = format!("    local.get {}", locals[0]);
    for l in &locals[1..] {
        out += &format!("\n    local.get {l}\n    i32.xor");
    }
    out
}

/// Write little-endian i32 words.
pub fn words_to_bytes(words: &[i32]) -> Vec<u8> {
    words.iter().flat_map(|w| w.to_le_bytes()).collect()
}

/// Little-endian i32 word `i` of `bytes`, wrapping around its whole words.
pub fn word_at(bytes: &[u8], i: usize) -> i32 {
    let at = (i % (bytes.len() / 4)) * 4;
    i32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]])
}

pub fn read_i32(inst: &mut dyn Instance, offset: u64) -> Result<i32, EngineError> {
    Ok(word_at(&inst.read_memory(offset, 4)?, 0))
}

/// Compare a region with its expected bytes; report the first differing word.
pub fn expect_region(
    inst: &mut dyn Instance,
    what: &str,
    offset: u64,
    expected: &[u8],
) -> Result<(), HookError> {
    let got = inst.read_memory(offset, expected.len())?;
    if let Some(i) = got.iter().zip(expected).position(|(a, b)| a != b) {
        let w = i & !3;
        let word = |v: &[u8]| {
            let end = (w + 4).min(v.len());
            let mut b = [0u8; 4];
            b[..end - w].copy_from_slice(&v[w..end]);
            format!("0x{:08x}", u32::from_le_bytes(b))
        };
        return Err(HookError::Mismatch(Mismatch::new(
            format!("{what} word at byte {}", offset + w as u64),
            word(expected),
            word(&got),
        )));
    }
    Ok(())
}

/// The check every shape that returns an accumulator makes.
pub fn expect_return(what: &str, expected: i32, ret: Option<i32>) -> Result<(), HookError> {
    match ret {
        Some(v) if v == expected => Ok(()),
        Some(v) => Err(HookError::Mismatch(Mismatch::new(what, expected, v))),
        None => Err(HookError::Mismatch(Mismatch::new(
            what,
            expected,
            "no result",
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_wrap_around_the_whole_words() {
        let b = [1, 0, 0, 0, 2, 0, 0, 0, 9];
        assert_eq!((word_at(&b, 0), word_at(&b, 1), word_at(&b, 2)), (1, 2, 1));
    }
}
