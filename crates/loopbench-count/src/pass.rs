//! The instrumenting pass: validate, cut every function body into counting
//! groups, and re-encode the module with one counter per group and site.
//!
//! # Groups
//!
//! A *group* is a run of instructions of one function body that, once its
//! first instruction runs, runs to its last one unless that last one traps.
//! A group therefore ends at every instruction that may trap or transfer
//! control (loads, stores, `div`/`rem`, trapping `trunc`, calls, branches,
//! `unreachable`, atomics, bulk and table operators, ...; see
//! `class::is_straight_line`), and a new group starts at every place control
//! can arrive other than by falling through: function entry, after `loop`
//! (the loop header, target of back-edges), after `if` and `else` (the arm
//! bodies) and after every `end` (the join point that branches to a block
//! land on). The pass increments the group's counter at its start, and the
//! decoder multiplies each group's execution count by the static class
//! counts of its instructions.
//!
//! Why groups end *at* (not before) a trapping instruction: a trap counts as
//! an executed instruction (it was attempted), and the instructions after it
//! did not run. Ending the group there makes a count read after a trap exact:
//! the trapping group contributed exactly the instructions up to and including
//! the one that trapped. The same holds when a callee traps: the `call` is the
//! last counted instruction of the caller's group.
//!
//! # Sites
//!
//! What a group count cannot tell is counted at the site, with the condition
//! copied through a fresh scratch local appended to the function's locals
//! (appending locals does not move any existing local index):
//!
//! * `br_if`: `local.tee $c; i32.eqz; i32.eqz; i64.extend_i32_u` is added to
//!   the site's counter, so it counts the executions that took the branch.
//! * `if`: `i32.eqz` of the condition is added, counting the executions whose
//!   condition was false (which jump to the `else` arm or past `end`).
//! * bulk operators: the length operand is copied to a scratch local (i32 or
//!   i64, following the memory's or table's index type) and added to the
//!   site's counter *after* the operator, so a trapping `memory.copy` (which
//!   copies nothing) adds nothing.
//!
//! # Cost
//!
//! Counting adds 4 instructions per executed group (`global.get`,
//! `i64.const 1`, `i64.add`, `global.set`), 8 per `br_if` and 7 per `if`,
//! and 6 per bulk operator. The counting run is untimed, so this only costs
//! wall-clock time; it never touches the timed runs, which use the original
//! module.
//!
//! # Why globals
//!
//! Counters are mutable `i64` globals appended after all existing globals,
//! read back through one appended exported function. Globals are private to
//! the instance, need no address arithmetic, cannot be clobbered by the
//! program's own stores, and exist in every engine, unlike a second memory.
//! All additions go at the end of their index spaces (types, functions,
//! globals, locals), and only as definitions, never as imports, so every
//! index the original module uses keeps its meaning.

use crate::class::{access_bytes, classify, is_straight_line, proposal_of, OpClass};
use crate::fold::Folder;
use crate::CountError;
use std::collections::{HashMap, HashSet};
use wasm_encoder::reencode::{Reencode, RoundtripReencoder};
use wasm_encoder::{
    BlockType, CodeSection, ConstExpr, ExportKind, ExportSection, Function, FunctionSection,
    GlobalSection, GlobalType, Instruction, Module, SectionId, TypeSection, ValType,
};
use wasmparser::{FunctionBody, KnownCustom, Name, Operator, Parser, Payload, Validator};

/// wasmparser's limit on globals per module.
const MAX_GLOBALS: u64 = 1_000_000;

/// Static facts about one counting group.
#[derive(Clone, Debug, Default)]
pub(crate) struct Group {
    /// Index into `Layout::functions`.
    pub func: u32,
    /// Innermost enclosing loop (index into `Layout::loops`).
    pub innermost_loop: Option<u32>,
    /// Instructions per class, sparse.
    pub classes: Vec<(OpClass, u32)>,
    /// Of those, instructions a register-based translation folds (see
    /// `fold`), per class, sparse.
    pub folded: Vec<(OpClass, u32)>,
    pub ops: u32,
    pub loaded: u64,
    pub stored: u64,
    /// Unconditional taken branches: `br`, `br_table`, `else`.
    pub taken: u32,
    pub calls: u32,
    pub returns: u32,
    /// Block entries this group stands for (see `Counts::block_entries`):
    /// 1 for a function's entry group and a loop header group, plus the
    /// `if`s it ends with.
    pub entries: u32,
}

impl Group {
    fn add_class(&mut self, class: OpClass) {
        self.ops += 1;
        bump(&mut self.classes, class);
    }
}

fn bump(sparse: &mut Vec<(OpClass, u32)>, class: OpClass) {
    match sparse.iter_mut().find(|(c, _)| *c == class) {
        Some((_, n)) => *n += 1,
        None => sparse.push((class, 1)),
    }
}

/// What one counter slot counts.
#[derive(Clone, Debug)]
pub(crate) enum Slot {
    /// Executions of a group.
    Group(Group),
    /// Executions of a `br_if` that took the branch, or of an `if` whose
    /// condition was false.
    Taken,
    /// Bytes moved by a `memory.copy/fill/init` site.
    BulkBytes,
    /// Bytes written by a `memory.fill` site (also bulk bytes).
    FillBytes,
    /// Elements moved by a `table.copy/fill/init` site.
    TableElements,
}

#[derive(Clone, Debug)]
pub(crate) struct FuncMeta {
    pub index: u32,
    pub name: Option<String>,
    pub entry_slot: Option<u32>,
}

#[derive(Clone, Debug)]
pub(crate) struct LoopMeta {
    pub func: u32,
    pub offset: u64,
    pub parent: Option<u32>,
    pub depth: u32,
    /// The group whose last instruction is the `loop` itself.
    pub entry_slot: u32,
    /// The group that starts the loop body (target of back-edges).
    pub header_slot: u32,
}

/// The private map from counter slots to what they mean.
#[derive(Clone, Debug, Default)]
pub(crate) struct Layout {
    pub slots: Vec<Slot>,
    pub functions: Vec<FuncMeta>,
    pub loops: Vec<LoopMeta>,
}

/// Facts gathered from the original module before rewriting it.
struct ModuleInfo<'a> {
    present: HashSet<u8>,
    exports: Vec<String>,
    bodies: Vec<FunctionBody<'a>>,
    names: HashMap<u32, String>,
    export_names: HashMap<u32, String>,
}

fn gather(wasm: &[u8]) -> Result<ModuleInfo<'_>, CountError> {
    let mut info = ModuleInfo {
        present: HashSet::new(),
        exports: Vec::new(),
        bodies: Vec::new(),
        names: HashMap::new(),
        export_names: HashMap::new(),
    };
    for payload in Parser::new(0).parse_all(wasm) {
        let payload = payload.map_err(CountError::Invalid)?;
        if let Some((id, _)) = payload.as_section() {
            info.present.insert(id);
        }
        match payload {
            Payload::ExportSection(reader) => {
                for export in reader {
                    let export = export.map_err(CountError::Invalid)?;
                    if export.kind == wasmparser::ExternalKind::Func {
                        info.export_names
                            .entry(export.index)
                            .or_insert_with(|| export.name.to_string());
                    }
                    info.exports.push(export.name.to_string());
                }
            }
            Payload::CodeSectionEntry(body) => info.bodies.push(body),
            Payload::CustomSection(section) => {
                // Names are a convenience for reports: a malformed name
                // section is ignored, not an error.
                if let KnownCustom::Name(reader) = section.as_known() {
                    for name in reader.into_iter().flatten() {
                        if let Name::Function(map) = name {
                            info.names.extend(
                                map.into_iter()
                                    .flatten()
                                    .map(|n| (n.index, n.name.to_string())),
                            );
                        }
                    }
                }
            }
            _ => {}
        }
    }
    Ok(info)
}

/// Result of the pass, before it is wrapped into the public type.
pub(crate) struct Output {
    pub wasm: Vec<u8>,
    pub layout: Layout,
}

pub(crate) fn run(wasm: &[u8]) -> Result<Output, CountError> {
    let features = wasmparser::WasmFeatures::all();
    let types = Validator::new_with_features(features)
        .validate_all(wasm)
        .map_err(CountError::Invalid)?;
    let types = types.as_ref();
    let info = gather(wasm)?;
    for name in [
        crate::Instrumented::COUNTER_EXPORT,
        crate::Instrumented::LEN_EXPORT,
    ] {
        if info.exports.iter().any(|e| e == name) {
            return Err(CountError::ExportCollision(name.to_string()));
        }
    }

    let num_funcs = types.function_count();
    let num_imported_funcs = num_funcs - info.bodies.len() as u32;
    let global_base = types.global_count();

    let mut layout = Layout::default();
    let mut functions = Vec::with_capacity(info.bodies.len());
    for (i, body) in info.bodies.iter().enumerate() {
        let func_index = num_imported_funcs + i as u32;
        let name = info
            .names
            .get(&func_index)
            .or_else(|| info.export_names.get(&func_index))
            .cloned();
        let ty = &types[types.core_function_at(func_index)];
        let params = match &ty.composite_type.inner {
            wasmparser::CompositeInnerType::Func(f) => f.params().len() as u32,
            _ => return Err(CountError::Internal("function type is not a func".into())),
        };
        let mut walker = Walker {
            types: &types,
            layout: &mut layout,
            global_base,
            func_index,
            meta_index: i as u32,
        };
        layout_push_func(walker.layout, func_index, name);
        functions.push(walker.body(body, params)?);
    }

    let slots = layout.slots.len() as u64;
    if u64::from(global_base) + slots > MAX_GLOBALS {
        return Err(CountError::TooManyCounters {
            counters: slots,
            existing_globals: global_base,
            limit: MAX_GLOBALS,
        });
    }
    let slots = slots as u32;

    let mut emitter = Emitter {
        present: info.present,
        emitted: HashSet::new(),
        bodies: functions.into_iter(),
        slots,
        global_base,
        counter_type: types.core_type_count_in_module(),
        counter_func: num_funcs,
    };
    let mut module = Module::new();
    emitter
        .parse_core_module(&mut module, Parser::new(0), wasm)
        .map_err(|e| CountError::Internal(format!("re-encoding failed: {e}")))?;
    let out = module.finish();

    // A safety net: the pass must never hand an invalid module to an engine.
    Validator::new_with_features(features)
        .validate_all(&out)
        .map_err(|e| CountError::Internal(format!("instrumented module does not validate: {e}")))?;
    Ok(Output { wasm: out, layout })
}

fn layout_push_func(layout: &mut Layout, index: u32, name: Option<String>) {
    layout.functions.push(FuncMeta {
        index,
        name,
        entry_slot: None,
    });
}

/// Why the pass refuses an operator, or `None` if it handles it.
fn unsupported(op: &Operator<'_>) -> Option<&'static str> {
    match op {
        Operator::BrOnNull { .. }
        | Operator::BrOnNonNull { .. }
        | Operator::BrOnCast { .. }
        | Operator::BrOnCastFail { .. }
        | Operator::BrOnCastDescEq { .. }
        | Operator::BrOnCastDescEqFail { .. } => {
            Some("typed-reference branches (br_on_*) are not instrumented yet")
        }
        _ => match proposal_of(op) {
            "exceptions" | "legacy_exceptions" => {
                Some("exception handling is not supported by the counting pass")
            }
            "stack_switching" => Some("stack switching is not supported by the counting pass"),
            "shared_everything_threads" => {
                Some("shared-everything threads are not supported by the counting pass")
            }
            "unknown" => Some("operator unknown to the counting pass"),
            _ => None,
        },
    }
}

#[derive(Clone, Copy)]
struct Frame {
    loop_id: Option<u32>,
}

/// Instruments one function body.
struct Walker<'t, 'l> {
    types: &'t wasmparser::types::TypesRef<'t>,
    layout: &'l mut Layout,
    global_base: u32,
    func_index: u32,
    meta_index: u32,
}

impl Walker<'_, '_> {
    fn counter(&self, slot: u32) -> u32 {
        self.global_base + slot
    }

    fn new_slot(&mut self, slot: Slot) -> u32 {
        self.layout.slots.push(slot);
        (self.layout.slots.len() - 1) as u32
    }

    fn group_mut(&mut self, slot: u32) -> &mut Group {
        match &mut self.layout.slots[slot as usize] {
            Slot::Group(g) => g,
            _ => unreachable!("slot {slot} is a group"),
        }
    }

    fn body(&mut self, body: &FunctionBody<'_>, params: u32) -> Result<Function, CountError> {
        let mut locals = Vec::new();
        let mut num_locals = params;
        for pair in body.get_locals_reader().map_err(CountError::Invalid)? {
            let (count, ty) = pair.map_err(CountError::Invalid)?;
            num_locals += count;
            let ty = RoundtripReencoder
                .val_type(ty)
                .map_err(|e| CountError::Internal(e.to_string()))?;
            locals.push((count, ty));
        }
        let scratch32 = num_locals;
        let scratch64 = num_locals + 1;
        locals.push((1, ValType::I32));
        locals.push((1, ValType::I64));
        let mut f = Function::new(locals);

        let mut frames = vec![Frame { loop_id: None }];
        let mut group: u32 = 0;
        let mut start_group = true;
        let mut pending_header: Option<u32> = None;
        // Operand folding is decided when a value is consumed, possibly in a
        // later group: remember each operator's group and class, and credit
        // the folded ones to their own group once the body is read.
        let mut folder = Folder::default();
        let mut placed: Vec<(u32, OpClass)> = Vec::new();
        let mut reader = body.get_operators_reader().map_err(CountError::Invalid)?;
        while !reader.eof() {
            let (op, offset) = reader.read_with_offset().map_err(CountError::Invalid)?;
            if let Some(why) = unsupported(&op) {
                return Err(CountError::Unsupported {
                    function: self.func_index,
                    offset,
                    operator: format!("{op:?}"),
                    reason: why,
                });
            }
            if start_group {
                let innermost_loop = frames.iter().rev().find_map(|f| f.loop_id);
                group = self.new_slot(Slot::Group(Group {
                    func: self.meta_index,
                    innermost_loop,
                    ..Group::default()
                }));
                let header = pending_header.take();
                if let Some(l) = header {
                    self.layout.loops[l as usize].header_slot = group;
                }
                let meta = &mut self.layout.functions[self.meta_index as usize];
                let entry = meta.entry_slot.is_none();
                meta.entry_slot.get_or_insert(group);
                if header.is_some() || entry {
                    self.group_mut(group).entries += 1;
                }
                add_to_counter(&mut f, self.counter(group), |f| {
                    f.instruction(&Instruction::I64Const(1));
                });
                start_group = false;
            }

            let at_function_end = matches!(op, Operator::End) && frames.len() == 1;
            let class = classify(&op);
            folder.push(&op, class);
            placed.push((group, class));
            {
                let g = self.group_mut(group);
                g.add_class(class);
                if let Some(access) = access_bytes(&op) {
                    g.loaded += u64::from(access.loaded);
                    g.stored += u64::from(access.stored);
                }
                match op {
                    Operator::Br { .. } | Operator::BrTable { .. } | Operator::Else => g.taken += 1,
                    Operator::Call { .. }
                    | Operator::CallIndirect { .. }
                    | Operator::CallRef { .. }
                    | Operator::ReturnCall { .. }
                    | Operator::ReturnCallIndirect { .. }
                    | Operator::ReturnCallRef { .. } => g.calls += 1,
                    Operator::Return => g.returns += 1,
                    Operator::If { .. } => g.entries += 1,
                    _ if at_function_end => g.returns += 1,
                    _ => {}
                }
            }

            let bulk = self.bulk_site(&op, scratch32, scratch64);
            match &op {
                Operator::BrIf { .. } => {
                    let slot = self.new_slot(Slot::Taken);
                    f.instruction(&Instruction::LocalTee(scratch32));
                    f.instruction(&Instruction::I32Eqz);
                    f.instruction(&Instruction::I32Eqz);
                    f.instruction(&Instruction::I64ExtendI32U);
                    add_top_to_counter(&mut f, self.counter(slot));
                    f.instruction(&Instruction::LocalGet(scratch32));
                }
                Operator::If { .. } => {
                    let slot = self.new_slot(Slot::Taken);
                    f.instruction(&Instruction::LocalTee(scratch32));
                    f.instruction(&Instruction::I32Eqz);
                    f.instruction(&Instruction::I64ExtendI32U);
                    add_top_to_counter(&mut f, self.counter(slot));
                    f.instruction(&Instruction::LocalGet(scratch32));
                }
                _ => {}
            }
            if let Some((_, local, _)) = bulk {
                f.instruction(&Instruction::LocalTee(local));
            }

            // Structure bookkeeping, and where the next group starts.
            match &op {
                Operator::Loop { .. } => {
                    let parent = frames.iter().rev().find_map(|f| f.loop_id);
                    let depth = frames.iter().filter(|f| f.loop_id.is_some()).count() as u32;
                    self.layout.loops.push(LoopMeta {
                        func: self.func_index,
                        offset,
                        parent,
                        depth,
                        entry_slot: group,
                        header_slot: u32::MAX,
                    });
                    let id = (self.layout.loops.len() - 1) as u32;
                    frames.push(Frame { loop_id: Some(id) });
                    pending_header = Some(id);
                    start_group = true;
                }
                Operator::Block { .. } | Operator::If { .. } | Operator::TryTable { .. } => {
                    frames.push(Frame { loop_id: None });
                    start_group |= matches!(op, Operator::If { .. });
                }
                Operator::Else => start_group = true,
                Operator::End => {
                    frames.pop();
                    start_group = true;
                }
                other => start_group |= !is_straight_line(other),
            }

            let inst = RoundtripReencoder
                .instruction(op)
                .map_err(|e| CountError::Internal(e.to_string()))?;
            f.instruction(&inst);

            if let Some((slot, local, is64)) = bulk {
                let counter = self.counter(slot);
                add_to_counter(&mut f, counter, |f| {
                    f.instruction(&Instruction::LocalGet(local));
                    if !is64 {
                        f.instruction(&Instruction::I64ExtendI32U);
                    }
                });
            }
        }
        for ((group, class), folded) in placed.into_iter().zip(folder.finish()) {
            if folded {
                bump(&mut self.group_mut(group).folded, class);
            }
        }
        Ok(f)
    }

    /// For a bulk operator with a dynamic length: (counter slot, scratch
    /// local holding the length, whether the length is i64).
    fn bulk_site(&mut self, op: &Operator<'_>, s32: u32, s64: u32) -> Option<(u32, u32, bool)> {
        let mem64 = |m: u32| self.types.memory_at(m).memory64;
        let table64 = |t: u32| self.types.table_at(t).table64;
        let (kind, is64) = match *op {
            Operator::MemoryCopy { dst_mem, src_mem } => {
                (Slot::BulkBytes, mem64(dst_mem) && mem64(src_mem))
            }
            Operator::MemoryFill { mem } => (Slot::FillBytes, mem64(mem)),
            Operator::MemoryInit { .. } => (Slot::BulkBytes, false),
            Operator::TableCopy {
                dst_table,
                src_table,
            } => (
                Slot::TableElements,
                table64(dst_table) && table64(src_table),
            ),
            Operator::TableFill { table } => (Slot::TableElements, table64(table)),
            Operator::TableInit { .. } => (Slot::TableElements, false),
            _ => return None,
        };
        let slot = self.new_slot(kind);
        Some((slot, if is64 { s64 } else { s32 }, is64))
    }
}

/// `counter += <value pushed by push>`.
fn add_to_counter(f: &mut Function, global: u32, push: impl FnOnce(&mut Function)) {
    f.instruction(&Instruction::GlobalGet(global));
    push(f);
    f.instruction(&Instruction::I64Add);
    f.instruction(&Instruction::GlobalSet(global));
}

/// `counter += <i64 on top of the stack>`.
fn add_top_to_counter(f: &mut Function, global: u32) {
    f.instruction(&Instruction::GlobalGet(global));
    f.instruction(&Instruction::I64Add);
    f.instruction(&Instruction::GlobalSet(global));
}

/// Re-encodes the original module, appending the counters, the two
/// accessor functions and their exports; everything else is copied.
struct Emitter<I: Iterator<Item = Function>> {
    present: HashSet<u8>,
    emitted: HashSet<u8>,
    bodies: I,
    slots: u32,
    global_base: u32,
    counter_type: u32,
    counter_func: u32,
}

/// Position of a section in the binary format's required order.
pub(crate) fn rank(id: Option<SectionId>, at_end: bool) -> u32 {
    match id {
        None if at_end => u32::MAX,
        None => 0,
        Some(SectionId::Type) => 1,
        Some(SectionId::Import) => 2,
        Some(SectionId::Function) => 3,
        Some(SectionId::Table) => 4,
        Some(SectionId::Memory) => 5,
        Some(SectionId::Tag) => 6,
        Some(SectionId::Global) => 7,
        Some(SectionId::Export) => 8,
        Some(SectionId::Start) => 9,
        Some(SectionId::Element) => 10,
        Some(SectionId::DataCount) => 11,
        Some(SectionId::Code) => 12,
        Some(SectionId::Data) => 13,
        Some(_) => 0,
    }
}

impl<I: Iterator<Item = Function>> Emitter<I> {
    fn add_types(&self, types: &mut TypeSection) {
        types.ty().function([ValType::I32], [ValType::I64]);
        types.ty().function([], [ValType::I32]);
    }

    fn add_functions(&self, functions: &mut FunctionSection) {
        functions.function(self.counter_type);
        functions.function(self.counter_type + 1);
    }

    fn add_globals(&self, globals: &mut GlobalSection) {
        let ty = GlobalType {
            val_type: ValType::I64,
            mutable: true,
            shared: false,
        };
        for _ in 0..self.slots {
            globals.global(ty, &ConstExpr::i64_const(0));
        }
    }

    fn add_exports(&self, exports: &mut ExportSection) {
        exports.export(
            crate::Instrumented::COUNTER_EXPORT,
            ExportKind::Func,
            self.counter_func,
        );
        exports.export(
            crate::Instrumented::LEN_EXPORT,
            ExportKind::Func,
            self.counter_func + 1,
        );
    }

    fn add_code(&self, code: &mut CodeSection) {
        // (func (param $i i32) (result i64)): a binary search over the slot
        // index, so the nesting depth is log2(slots) whatever the count.
        let mut f = Function::new([]);
        f.instruction(&Instruction::LocalGet(0));
        f.instruction(&Instruction::I32Const(self.slots as i32));
        f.instruction(&Instruction::I32GeU);
        f.instruction(&Instruction::If(BlockType::Empty));
        f.instruction(&Instruction::I64Const(0));
        f.instruction(&Instruction::Return);
        f.instruction(&Instruction::End);
        if self.slots == 0 {
            f.instruction(&Instruction::I64Const(0));
        } else {
            self.search(&mut f, 0, self.slots);
        }
        f.instruction(&Instruction::End);
        code.function(&f);

        let mut len = Function::new([]);
        len.instruction(&Instruction::I32Const(self.slots as i32));
        len.instruction(&Instruction::End);
        code.function(&len);
    }

    fn search(&self, f: &mut Function, lo: u32, hi: u32) {
        if hi - lo == 1 {
            f.instruction(&Instruction::GlobalGet(self.global_base + lo));
            return;
        }
        let mid = lo + (hi - lo) / 2;
        f.instruction(&Instruction::LocalGet(0));
        f.instruction(&Instruction::I32Const(mid as i32));
        f.instruction(&Instruction::I32LtU);
        f.instruction(&Instruction::If(BlockType::Result(ValType::I64)));
        self.search(f, lo, mid);
        f.instruction(&Instruction::Else);
        self.search(f, mid, hi);
        f.instruction(&Instruction::End);
    }
}

type ReError = wasm_encoder::reencode::Error<std::convert::Infallible>;

impl<I: Iterator<Item = Function>> Reencode for Emitter<I> {
    type Error = std::convert::Infallible;

    fn intersperse_section_hook(
        &mut self,
        module: &mut Module,
        after: Option<SectionId>,
        before: Option<SectionId>,
    ) -> Result<(), ReError> {
        let (lo, hi) = (rank(after, false), rank(before, true));
        for id in [
            SectionId::Type,
            SectionId::Function,
            SectionId::Global,
            SectionId::Export,
            SectionId::Code,
        ] {
            let r = rank(Some(id), false);
            if lo < r
                && r < hi
                && !self.present.contains(&(id as u8))
                && self.emitted.insert(id as u8)
            {
                match id {
                    SectionId::Type => {
                        let mut s = TypeSection::new();
                        self.add_types(&mut s);
                        module.section(&s);
                    }
                    SectionId::Function => {
                        let mut s = FunctionSection::new();
                        self.add_functions(&mut s);
                        module.section(&s);
                    }
                    SectionId::Global => {
                        let mut s = GlobalSection::new();
                        self.add_globals(&mut s);
                        module.section(&s);
                    }
                    SectionId::Export => {
                        let mut s = ExportSection::new();
                        self.add_exports(&mut s);
                        module.section(&s);
                    }
                    _ => {
                        let mut s = CodeSection::new();
                        self.add_code(&mut s);
                        module.section(&s);
                    }
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
        self.add_types(types);
        Ok(())
    }

    fn parse_function_section(
        &mut self,
        functions: &mut FunctionSection,
        section: wasmparser::FunctionSectionReader<'_>,
    ) -> Result<(), ReError> {
        wasm_encoder::reencode::utils::parse_function_section(self, functions, section)?;
        self.add_functions(functions);
        Ok(())
    }

    fn parse_global_section(
        &mut self,
        globals: &mut GlobalSection,
        section: wasmparser::GlobalSectionReader<'_>,
    ) -> Result<(), ReError> {
        wasm_encoder::reencode::utils::parse_global_section(self, globals, section)?;
        self.add_globals(globals);
        Ok(())
    }

    fn parse_export_section(
        &mut self,
        exports: &mut ExportSection,
        section: wasmparser::ExportSectionReader<'_>,
    ) -> Result<(), ReError> {
        wasm_encoder::reencode::utils::parse_export_section(self, exports, section)?;
        self.add_exports(exports);
        Ok(())
    }

    fn parse_code_section(
        &mut self,
        code: &mut CodeSection,
        section: wasmparser::CodeSectionReader<'_>,
    ) -> Result<(), ReError> {
        for _ in 0..section.count() {
            if let Some(f) = self.bodies.next() {
                code.function(&f);
            }
        }
        self.add_code(code);
        Ok(())
    }

    fn parse_custom_section(
        &mut self,
        module: &mut Module,
        section: wasmparser::CustomSectionReader<'_>,
    ) -> Result<(), ReError> {
        // Copied byte for byte: re-encoding a name section could fail on
        // contents the validator does not check.
        module.section(&wasm_encoder::CustomSection {
            name: section.name().into(),
            data: section.data().into(),
        });
        Ok(())
    }
}
