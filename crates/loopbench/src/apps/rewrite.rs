//! Module surgery for apps: remove every import and append functions,
//! globals, tables, element segments and exports.
//!
//! Engines in loopbench run import-free modules only (their adapters link
//! nothing), so an app's imports are turned into *defined* items instead of
//! adding host functions to every adapter:
//!
//! * an imported function becomes a defined stub function of the same type
//!   (its body comes from [`super::stub`]);
//! * an imported memory, table or global becomes a defined one of the same
//!   type (globals start at zero).
//!
//! The trick that keeps this small: the stubs are emitted *first* in the
//! function and code sections, converted memories, tables and globals first
//! in theirs. Imported items occupy the lowest indices of each index space,
//! so every index in the original module keeps its meaning and the original
//! function bodies, element and data segments and the name section are
//! copied byte for byte. Appended items take the indices after the last
//! original one; [`ModuleInfo`] says where that is.

use super::AppError;
use std::collections::HashMap;
use wasm_encoder::reencode::{Reencode, RoundtripReencoder};
use wasm_encoder::{
    CodeSection, ConstExpr, ElementSection, Elements, ExportKind, ExportSection, Function,
    FunctionSection, GlobalSection, GlobalType, MemorySection, MemoryType, Module, RawSection,
    TableSection, TableType, TypeSection, ValType,
};
use wasmparser::{ExternalKind, Parser, Payload, TypeRef};

/// A function signature in wasm-encoder types.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sig {
    pub params: Vec<ValType>,
    pub results: Vec<ValType>,
}

impl Sig {
    pub fn new(params: &[ValType], results: &[ValType]) -> Self {
        Sig {
            params: params.to_vec(),
            results: results.to_vec(),
        }
    }
}

/// One import of the original module.
#[derive(Clone, Debug)]
pub struct Import {
    pub module: String,
    pub name: String,
    pub kind: ImportKind,
}

#[derive(Clone, Debug)]
pub enum ImportKind {
    /// A function import with its signature.
    Func(Sig),
    Memory,
    Table,
    Global,
}

impl Import {
    pub fn qualified(&self) -> String {
        format!("{}.{}", self.module, self.name)
    }
}

/// What the rewrite needs to know about the original module, and where
/// appended items land in each index space.
#[derive(Clone, Debug, Default)]
pub struct ModuleInfo {
    /// Number of types in the type section.
    pub types: u32,
    /// Signature of every function index (imports first); `None` for non-function types.
    pub func_sigs: Vec<Option<Sig>>,
    pub imports: Vec<Import>,
    pub imported_funcs: u32,
    pub globals: u32,
    pub tables: u32,
    pub memories: u32,
    /// Exports by name.
    pub exports: HashMap<String, (ExternalKind, u32)>,
    /// Memory 0's limits (pages) and whether it is shared or 64-bit.
    pub memory0: Option<wasmparser::MemoryType>,
}

impl ModuleInfo {
    /// The function count, imports included: the index of the first appended function.
    pub fn funcs(&self) -> u32 {
        self.func_sigs.len() as u32
    }

    /// An exported function's index and signature.
    pub fn export_func(&self, name: &str) -> Result<(u32, Sig), AppError> {
        let name = name.to_string();
        match self.exports.get(&name) {
            Some((ExternalKind::Func, idx)) => {
                let sig = self.func_sigs.get(*idx as usize).cloned().flatten();
                sig.map(|s| (*idx, s)).ok_or(AppError::NoFuncType { name })
            }
            Some(_) => Err(AppError::NotAFunction { name }),
            None => Err(AppError::NoExport { name }),
        }
    }
}

fn val_type(t: wasmparser::ValType) -> Result<ValType, AppError> {
    RoundtripReencoder
        .val_type(t)
        .map_err(|e| AppError::ValueType(format!("{e:?}")))
}

fn sig_of(f: &wasmparser::FuncType) -> Result<Sig, AppError> {
    Ok(Sig {
        params: f
            .params()
            .iter()
            .map(|t| val_type(*t))
            .collect::<Result<_, _>>()?,
        results: f
            .results()
            .iter()
            .map(|t| val_type(*t))
            .collect::<Result<_, _>>()?,
    })
}

/// Read the facts the rewrite needs. Validates the module first.
pub fn inspect(wasm: &[u8]) -> Result<ModuleInfo, AppError> {
    let mut features = wasmparser::WasmFeatures::all();
    features.remove(wasmparser::WasmFeatures::COMPONENT_MODEL);
    wasmparser::Validator::new_with_features(features)
        .validate_all(wasm)
        .map_err(AppError::Invalid)?;
    let mut info = ModuleInfo::default();
    let mut type_sigs: Vec<Option<Sig>> = Vec::new();
    for payload in Parser::new(0).parse_all(wasm) {
        match payload? {
            Payload::TypeSection(r) => {
                for ty in r.into_iter_err_on_gc_types() {
                    let f = ty.map_err(AppError::TypeSection)?;
                    type_sigs.push(Some(sig_of(&f)?));
                }
                info.types = type_sigs.len() as u32;
            }
            Payload::ImportSection(r) => {
                for imp in r.into_imports() {
                    let imp = imp?;
                    let kind = match imp.ty {
                        TypeRef::Func(t) | TypeRef::FuncExact(t) => {
                            let sig = type_sigs.get(t as usize).cloned().flatten();
                            info.func_sigs.push(sig.clone());
                            info.imported_funcs += 1;
                            ImportKind::Func(sig.ok_or(AppError::ImportWithoutType)?)
                        }
                        TypeRef::Memory(m) => {
                            if info.memories == 0 {
                                info.memory0 = Some(m);
                            }
                            info.memories += 1;
                            ImportKind::Memory
                        }
                        TypeRef::Table(_) => {
                            info.tables += 1;
                            ImportKind::Table
                        }
                        TypeRef::Global(_) => {
                            info.globals += 1;
                            ImportKind::Global
                        }
                        TypeRef::Tag(_) => {
                            return Err(AppError::TagImport {
                                module: imp.module.to_string(),
                                name: imp.name.to_string(),
                            })
                        }
                    };
                    info.imports.push(Import {
                        module: imp.module.to_string(),
                        name: imp.name.to_string(),
                        kind,
                    });
                }
            }
            Payload::FunctionSection(r) => {
                for t in r {
                    let t = t?;
                    info.func_sigs
                        .push(type_sigs.get(t as usize).cloned().flatten());
                }
            }
            Payload::TableSection(r) => info.tables += r.count(),
            Payload::MemorySection(r) => {
                for m in r {
                    let m = m?;
                    if info.memories == 0 {
                        info.memory0 = Some(m);
                    }
                    info.memories += 1;
                }
            }
            Payload::GlobalSection(r) => info.globals += r.count(),
            Payload::ExportSection(r) => {
                for e in r {
                    let e = e?;
                    info.exports.insert(e.name.to_string(), (e.kind, e.index));
                }
            }
            _ => {}
        }
    }
    Ok(info)
}

/// An active element segment to append: `funcs` written into `table` at `offset`.
#[derive(Clone, Debug)]
pub struct ElemSegment {
    pub table: u32,
    pub offset: i32,
    pub funcs: Vec<u32>,
}

/// Everything appended to a module. Indices are absolute: the caller takes
/// them from [`ModuleInfo`] (`types + k`, `funcs() + k`, ...).
#[derive(Default)]
pub struct Additions {
    pub types: Vec<Sig>,
    pub tables: Vec<TableType>,
    pub globals: Vec<(GlobalType, ConstExpr)>,
    /// (type index, body).
    pub functions: Vec<(u32, Function)>,
    pub elements: Vec<ElemSegment>,
    pub exports: Vec<(String, ExportKind, u32)>,
}

impl Additions {
    /// Add a mutable i32 global starting at 0 (the stubs' and drivers'
    /// scratch registers); its index is the module's globals plus those
    /// added before it.
    pub fn push_i32_global(&mut self) {
        self.globals.push((
            GlobalType {
                val_type: ValType::I32,
                mutable: true,
                shared: false,
            },
            ConstExpr::i32_const(0),
        ));
    }
}

fn zero_of(t: ValType) -> ConstExpr {
    match t {
        ValType::I32 => ConstExpr::i32_const(0),
        ValType::I64 => ConstExpr::i64_const(0),
        ValType::F32 => ConstExpr::f32_const(0.0.into()),
        ValType::F64 => ConstExpr::f64_const(0.0.into()),
        ValType::V128 => ConstExpr::v128_const(0),
        ValType::Ref(r) => ConstExpr::ref_null(r.heap_type),
    }
}

fn enc<E: std::fmt::Debug>(e: E) -> AppError {
    AppError::Reencode(format!("{e:?}"))
}

/// Rewrite `wasm`: drop the import section, define a stub (from `stubs`, one
/// body per imported function, in import order) for every imported function
/// and a fresh item for every imported memory, table and global, then append
/// `add`. The result is validated.
pub fn rewrite(
    wasm: &[u8],
    info: &ModuleInfo,
    stubs: Vec<Function>,
    add: &Additions,
) -> Result<Vec<u8>, AppError> {
    if stubs.len() != info.imported_funcs as usize {
        return Err(AppError::StubCount {
            stubs: stubs.len(),
            imports: info.imported_funcs,
        });
    }
    for (name, _, _) in &add.exports {
        if info.exports.contains_key(name) {
            return Err(AppError::ExportTaken { name: name.clone() });
        }
    }
    let mut rt = RoundtripReencoder;
    // Collected pieces, emitted in canonical section order at the end.
    let mut types = TypeSection::new();
    let mut funcs = FunctionSection::new();
    let mut tables = TableSection::new();
    let mut memories = MemorySection::new();
    let mut globals = GlobalSection::new();
    let mut exports = ExportSection::new();
    let mut elements = ElementSection::new();
    let mut code = CodeSection::new();
    let mut start: Option<u32> = None;
    let mut datacount: Option<RawSection> = None;
    let mut data: Option<Vec<u8>> = None;
    let mut customs: Vec<(String, Vec<u8>)> = Vec::new();
    let (mut has_elements, mut has_tables, mut has_memories, mut has_globals) =
        (false, false, false, false);
    let mut original_types: Vec<u32> = Vec::new();
    let mut bodies: Vec<(u32, u32)> = Vec::new();

    // Imported items become defined ones, first in their sections.
    for payload in Parser::new(0).parse_all(wasm) {
        match payload? {
            Payload::TypeSection(r) => rt.parse_type_section(&mut types, r).map_err(enc)?,
            Payload::ImportSection(r) => {
                for imp in r.into_imports() {
                    let imp = imp?;
                    match imp.ty {
                        TypeRef::Func(t) | TypeRef::FuncExact(t) => {
                            funcs.function(t);
                        }
                        TypeRef::Memory(m) => {
                            has_memories = true;
                            memories.memory(rt.memory_type(m).map_err(enc)?);
                        }
                        TypeRef::Table(t) => {
                            has_tables = true;
                            tables.table(rt.table_type(t).map_err(enc)?);
                        }
                        TypeRef::Global(g) => {
                            has_globals = true;
                            let ty = rt.global_type(g).map_err(enc)?;
                            globals.global(ty, &zero_of(ty.val_type));
                        }
                        TypeRef::Tag(_) => return Err(AppError::TagImports),
                    }
                }
            }
            Payload::FunctionSection(r) => {
                for t in r {
                    original_types.push(t?);
                }
            }
            Payload::TableSection(r) => {
                has_tables = true;
                rt.parse_table_section(&mut tables, r).map_err(enc)?
            }
            Payload::MemorySection(r) => {
                has_memories = true;
                rt.parse_memory_section(&mut memories, r).map_err(enc)?
            }
            Payload::GlobalSection(r) => {
                has_globals = true;
                rt.parse_global_section(&mut globals, r).map_err(enc)?
            }
            Payload::ExportSection(r) => rt.parse_export_section(&mut exports, r).map_err(enc)?,
            Payload::StartSection { func, .. } => start = Some(func),
            Payload::ElementSection(r) => {
                has_elements = true;
                rt.parse_element_section(&mut elements, r).map_err(enc)?
            }
            Payload::DataCountSection { range, .. } => {
                datacount = Some(RawSection {
                    id: 12,
                    data: &wasm[range.start as usize..range.end as usize],
                })
            }
            Payload::DataSection(r) => {
                data = Some(wasm[r.range().start as usize..r.range().end as usize].to_vec())
            }
            Payload::CodeSectionEntry(body) => {
                let r = body.range();
                bodies.push((r.start as u32, r.end as u32));
            }
            Payload::CustomSection(c) => customs.push((c.name().to_string(), c.data().to_vec())),
            Payload::Version { .. } | Payload::CodeSectionStart { .. } | Payload::End(_) => {}
            other => {
                return Err(AppError::UnsupportedSection {
                    id: other.as_section().map(|s| s.0),
                });
            }
        }
    }
    for t in &original_types {
        funcs.function(*t);
    }
    for s in &add.types {
        types
            .ty()
            .function(s.params.iter().copied(), s.results.iter().copied());
    }
    for (t, _) in &add.functions {
        funcs.function(*t);
    }
    for t in &add.tables {
        has_tables = true;
        tables.table(*t);
    }
    for (t, init) in &add.globals {
        has_globals = true;
        globals.global(*t, init);
    }
    for (name, kind, idx) in &add.exports {
        exports.export(name, *kind, *idx);
    }
    for e in &add.elements {
        has_elements = true;
        elements.active(
            Some(e.table),
            &ConstExpr::i32_const(e.offset),
            Elements::Functions(std::borrow::Cow::Borrowed(&e.funcs)),
        );
    }
    for s in &stubs {
        code.function(s);
    }
    for (a, b) in &bodies {
        code.raw(&wasm[*a as usize..*b as usize]);
    }
    for (_, f) in &add.functions {
        code.function(f);
    }

    let mut m = Module::new();
    m.section(&types);
    m.section(&funcs);
    if has_tables {
        m.section(&tables);
    }
    if has_memories {
        m.section(&memories);
    }
    if has_globals {
        m.section(&globals);
    }
    m.section(&exports);
    if let Some(f) = start {
        m.section(&wasm_encoder::StartSection { function_index: f });
    }
    if has_elements {
        m.section(&elements);
    }
    if let Some(dc) = &datacount {
        m.section(dc);
    }
    m.section(&code);
    if let Some(d) = &data {
        m.section(&RawSection { id: 11, data: d });
    }
    for (name, d) in &customs {
        m.section(&wasm_encoder::CustomSection {
            name: name.into(),
            data: d.into(),
        });
    }
    let out = m.finish();
    let mut features = wasmparser::WasmFeatures::all();
    features.remove(wasmparser::WasmFeatures::COMPONENT_MODEL);
    wasmparser::Validator::new_with_features(features)
        .validate_all(&out)
        .map_err(AppError::RewriteInvalid)?;
    Ok(out)
}

/// Memory type helper for callers building additions.
pub fn memory_type(pages: u64) -> MemoryType {
    MemoryType {
        minimum: pages,
        maximum: None,
        memory64: false,
        shared: false,
        page_size_log2: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn imports_become_definitions_and_indices_hold() {
        let wasm = wat::parse_str(
            r#"(module
                (import "env" "f" (func $f (param i32) (result i32)))
                (import "env" "g" (global $g (mut i32)))
                (import "env" "mem" (memory 1))
                (func $h (export "run") (param i32) (result i32)
                    (call $f (i32.add (local.get 0) (global.get $g))))
                (data (i32.const 8) "hi"))"#,
        )
        .unwrap();
        let info = inspect(&wasm).unwrap();
        assert_eq!(info.imported_funcs, 1);
        assert_eq!(info.funcs(), 2);
        assert_eq!(info.globals, 1);
        assert_eq!(info.memories, 1);
        let mut stub = Function::new([]);
        stub.instructions()
            .local_get(0)
            .i32_const(100)
            .i32_add()
            .end();
        let mut add = Additions::default();
        add.exports.push(("memory".into(), ExportKind::Memory, 0));
        let out = rewrite(&wasm, &info, vec![stub], &add).unwrap();
        let again = inspect(&out).unwrap();
        assert!(again.imports.is_empty());
        assert_eq!(again.funcs(), 2);
        assert_eq!(again.export_func("run").unwrap().0, 1);
        // Runs with no imports: run(5) = stub(5 + 0) = 105.
        let engine = wasmi::Engine::default();
        let module = wasmi::Module::new(&engine, &out[..]).unwrap();
        let mut store = wasmi::Store::new(&engine, ());
        let inst = wasmi::Linker::<()>::new(&engine)
            .instantiate_and_start(&mut store, &module)
            .unwrap();
        let run = inst.get_typed_func::<i32, i32>(&store, "run").unwrap();
        assert_eq!(run.call(&mut store, 5).unwrap(), 105);
        let mem = inst.get_memory(&store, "memory").unwrap();
        assert_eq!(&mem.data(&store)[8..10], b"hi");
    }

    #[test]
    fn export_collision_is_refused() {
        let wasm = wat::parse_str(r#"(module (func (export "run")))"#).unwrap();
        let info = inspect(&wasm).unwrap();
        let mut add = Additions::default();
        add.exports.push(("run".into(), ExportKind::Func, 0));
        assert!(rewrite(&wasm, &info, vec![], &add)
            .unwrap_err()
            .to_string()
            .contains("already exports `run`"));
    }
}
