//! The branch trace: a copy of a module that reports every data-dependent
//! decision to the host, for the simulated predictor ([`crate::Predictor`]).
//!
//! Counters (the `pass` module) say how often a site went each way, not in
//! what order, and order is what a predictor learns. So this second,
//! independent rewrite imports one host function,
//! `(import "loopbench" "branch" (func (param $value i32) (param $site i32) (result i32)))`,
//! and calls it right before every `br_if`, `if`, `br_table`,
//! `call_indirect` and `return_call_indirect` with the operand that decides
//! it (condition, table index or function-table index) and a site number;
//! the function returns the operand unchanged (calls through a 64-bit table
//! are not traced). The import is the first
//! function, so every other function index moves up by one (the re-encoder
//! renumbers calls, exports, elements, `ref.func` and the start function);
//! the name section, whose indices would be stale, is dropped.

use crate::CountError;
use std::collections::HashSet;
use wasm_encoder::reencode::Reencode;
use wasm_encoder::{
    CodeSection, EntityType, ImportSection, Instruction, Module, SectionId, TypeSection, ValType,
};
use wasmparser::{Operator, Parser, Validator};

/// Module and field of the imported trace function.
pub const TRACE_IMPORT: (&str, &str) = ("loopbench", "branch");

/// What decides a traced site.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Site {
    /// `br_if` or `if`: taken when the value is non-zero.
    Conditional,
    /// `br_table` with this many explicit targets (larger values take the
    /// default, target `targets`).
    Table { targets: u32 },
    /// `call_indirect`/`return_call_indirect`: the value is the table slot.
    Indirect,
}

/// A module rewritten to report its decisions, and its site table.
#[derive(Clone, Debug)]
pub struct Traced {
    pub wasm: Vec<u8>,
    /// Indexed by the site number the module passes.
    pub sites: Vec<Site>,
}

impl Traced {
    /// The decision a traced `(value, site)` call stands for: `Ok(taken)`
    /// for two-way sites, `Err(target)` for multi-way ones; `None` for a
    /// site number this module never passes.
    pub fn decision(&self, value: i32, site: u32) -> Option<Result<bool, u32>> {
        Some(match self.sites.get(site as usize)? {
            Site::Conditional => Ok(value != 0),
            Site::Table { targets } => Err((value as u32).min(*targets)),
            Site::Indirect => Err(value as u32),
        })
    }
}

/// Rewrite `wasm` to call the trace import before every decision.
pub fn trace_branches(wasm: &[u8]) -> Result<Traced, CountError> {
    let features = wasmparser::WasmFeatures::all();
    let types = Validator::new_with_features(features)
        .validate_all(wasm)
        .map_err(CountError::Invalid)?;
    let mut present = HashSet::new();
    for payload in Parser::new(0).parse_all(wasm) {
        if let Some((id, _)) = payload.map_err(CountError::Invalid)?.as_section() {
            present.insert(id);
        }
    }
    let types = types.as_ref();
    let mut tracer = Tracer {
        present,
        emitted: HashSet::new(),
        trace_type: types.core_type_count_in_module(),
        table64: (0..types.table_count())
            .map(|t| types.table_at(t).table64)
            .collect(),
        sites: Vec::new(),
    };
    let mut module = Module::new();
    tracer
        .parse_core_module(&mut module, Parser::new(0), wasm)
        .map_err(|e| CountError::Internal(format!("re-encoding the trace failed: {e}")))?;
    let out = module.finish();
    Validator::new_with_features(features)
        .validate_all(&out)
        .map_err(|e| CountError::Internal(format!("traced module does not validate: {e}")))?;
    Ok(Traced {
        wasm: out,
        sites: tracer.sites,
    })
}

struct Tracer {
    present: HashSet<u8>,
    emitted: HashSet<u8>,
    trace_type: u32,
    /// Per table: indexed by i64 (memory64's table64), whose calls are not
    /// traced (the hook takes an i32).
    table64: Vec<bool>,
    sites: Vec<Site>,
}

type ReError = wasm_encoder::reencode::Error<std::convert::Infallible>;

impl Tracer {
    fn add_type(&self, types: &mut TypeSection) {
        types
            .ty()
            .function([ValType::I32, ValType::I32], [ValType::I32]);
    }
    fn add_import(&self, imports: &mut ImportSection) {
        imports.import(
            TRACE_IMPORT.0,
            TRACE_IMPORT.1,
            EntityType::Function(self.trace_type),
        );
    }
    fn site(&self, op: &Operator<'_>) -> Option<Site> {
        match op {
            Operator::BrIf { .. } | Operator::If { .. } => Some(Site::Conditional),
            Operator::BrTable { targets } => Some(Site::Table {
                targets: targets.len(),
            }),
            Operator::CallIndirect { table_index, .. }
            | Operator::ReturnCallIndirect { table_index, .. } => (!self
                .table64
                .get(*table_index as usize)
                .copied()
                .unwrap_or(false))
            .then_some(Site::Indirect),
            _ => None,
        }
    }
}

impl Reencode for Tracer {
    type Error = std::convert::Infallible;

    fn function_index(&mut self, func: u32) -> Result<u32, ReError> {
        Ok(func + 1)
    }

    fn intersperse_section_hook(
        &mut self,
        module: &mut Module,
        after: Option<SectionId>,
        before: Option<SectionId>,
    ) -> Result<(), ReError> {
        let (lo, hi) = (
            crate::pass::rank(after, false),
            crate::pass::rank(before, true),
        );
        for id in [SectionId::Type, SectionId::Import] {
            let r = crate::pass::rank(Some(id), false);
            if lo < r
                && r < hi
                && !self.present.contains(&(id as u8))
                && self.emitted.insert(id as u8)
            {
                if id == SectionId::Type {
                    let mut s = TypeSection::new();
                    self.add_type(&mut s);
                    module.section(&s);
                } else {
                    let mut s = ImportSection::new();
                    self.add_import(&mut s);
                    module.section(&s);
                }
            }
        }
        Ok(())
    }

    fn parse_type_section(
        &mut self,
        types: &mut TypeSection,
        section: wasmparser::TypeSectionReader<'_>,
    ) -> Result<(), ReError> {
        wasm_encoder::reencode::utils::parse_type_section(self, types, section)?;
        self.add_type(types);
        Ok(())
    }

    fn parse_import_section(
        &mut self,
        imports: &mut ImportSection,
        section: wasmparser::ImportSectionReader<'_>,
    ) -> Result<(), ReError> {
        // First, so it is function 0 whatever the module imports.
        self.add_import(imports);
        wasm_encoder::reencode::utils::parse_import_section(self, imports, section)
    }

    fn parse_function_body(
        &mut self,
        code: &mut CodeSection,
        func: wasmparser::FunctionBody<'_>,
    ) -> Result<(), ReError> {
        let mut f = self.new_function_with_parsed_locals(&func)?;
        let mut reader = func.get_operators_reader()?;
        while !reader.eof() {
            let op = reader.read()?;
            if let Some(site) = self.site(&op) {
                f.instruction(&Instruction::I32Const(self.sites.len() as i32));
                f.instruction(&Instruction::Call(0));
                self.sites.push(site);
            }
            f.instruction(&self.instruction(op)?);
        }
        code.function(&f);
        Ok(())
    }

    fn parse_custom_section(
        &mut self,
        module: &mut Module,
        section: wasmparser::CustomSectionReader<'_>,
    ) -> Result<(), ReError> {
        if section.name() != "name" {
            module.section(&wasm_encoder::CustomSection {
                name: section.name().into(),
                data: section.data().into(),
            });
        }
        Ok(())
    }
}
