//! Operator classes: which bucket every wasm instruction is counted in.
//!
//! The classes are the primitives loopbench prices (one dispatch, one taken
//! branch, one load, one call, ...), so the split follows the machinery an
//! engine needs for an instruction rather than the spec's chapter layout:
//!
//! | class           | operators |
//! |-----------------|-----------|
//! | `control`       | `block` `loop` `end` `nop` `unreachable`, and the exception / stack-switching control operators (`try_table` `throw` `throw_ref` `try` `catch` `catch_all` `rethrow` `delegate` `resume*` `suspend` `switch` `cont.bind`) |
//! | `branch`        | `if` (a conditional branch over its body) and `else` (the jump past the other arm), `br` `br_if` `br_table` `br_on_null` `br_on_non_null` `br_on_cast*` |
//! | `local`         | `local.get` `local.set` `local.tee` |
//! | `global`        | `global.get` `global.set` (an access through the instance, not a register or stack slot) |
//! | `const`         | `i32.const` `i64.const` `f32.const` `f64.const` (`v128.const` is `simd`) |
//! | `int`           | i32/i64 operators that stay in their type and cost one ALU operation: `eqz`, comparisons, `add` `sub`, `and` `or` `xor`, the sign-extension operators (`i32.extend8_s` ... `i64.extend32_s`) and `i64.add128` `i64.sub128` |
//! | `int_shift`     | shifts, rotates and bit counts: `shl` `shr_*` `rotl` `rotr` `clz` `ctz` `popcnt` (an interpreter masks the count or calls out) |
//! | `int_mul`       | multiplication and division: `mul` `div_*` `rem_*`, `i64.mul_wide_*` (multi-cycle, and division checks for traps) |
//! | `float`         | every f32/f64 operator that stays in its type: comparisons, `abs` `neg` `ceil` `floor` `trunc` `nearest` `sqrt` `add` `sub` `mul` `div` `min` `max` `copysign` |
//! | `conversion`    | operators that change the value type: `i32.wrap_i64`, `i64.extend_i32_*`, `*.trunc_f*` (trapping and `_sat`), `*.convert_*`, `f32.demote_f64`, `f64.promote_f32`, `*.reinterpret_*` |
//! | `load`          | every non-atomic linear-memory load, scalar and SIMD (`v128.load*`, `v128.load*_splat`, `v128.load*_zero`, `v128.load*_lane`) |
//! | `store`         | every non-atomic linear-memory store, scalar and SIMD (`v128.store`, `v128.store*_lane`) |
//! | `bulk_memory`   | `memory.copy` `memory.fill` `memory.init` `data.drop` `table.copy` `table.init` `table.fill` `elem.drop` |
//! | `atomic`        | the whole threads proposal (`*.atomic.load*`, `*.atomic.store*`, `*.atomic.rmw*`, `memory.atomic.wait32/64`, `memory.atomic.notify`, `atomic.fence`), `pause`, and the shared-everything `global/table/struct/array.atomic.*` operators |
//! | `call`          | `call` |
//! | `call_indirect` | `call_indirect` `call_ref` |
//! | `return`        | `return` |
//! | `tail_call`     | `return_call` `return_call_indirect` `return_call_ref` (a call that replaces the frame, far dearer than a `return`) |
//! | `simd`          | every other `0xFD`-prefixed operator (`v128.const`, lane ops, shuffles, arithmetic, relaxed SIMD) |
//! | `other`         | `drop` `select` (both forms), `memory.size` `memory.grow` `memory.discard`, `table.get` `table.set` `table.size` `table.grow`, `ref.null` `ref.is_null` `ref.func` `ref.as_non_null` `ref.eq`, and the GC object operators (`struct.*` `array.*` `ref.test` `ref.cast` `ref.i31` `i31.get_*` `any.convert_extern` `extern.convert_any` `cont.new` ...) |
//!
//! [`crate::Counts::folded`] refines `local` and `const` for register-based
//! engines: the instructions of those two classes that such an engine folds
//! into a neighbouring computation (an operand read in place, a result written
//! straight into its local). No other class is ever folded.
//!
//! Atomic accesses are deliberately *not* in `load`/`store`: an atomic RMW on
//! shared memory is a different primitive from a plain load. Their bytes are
//! still counted (see [`access_bytes`]).

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::str::FromStr;
use wasmparser::Operator;

/// The class an executed wasm instruction is counted in. See the module docs
/// for the exact operator lists.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum OpClass {
    /// Structured control: block, loop, end, nop, unreachable.
    Control,
    /// if, else, br, br_if, br_table (and the typed-reference branches).
    Branch,
    /// local.get/set/tee.
    Local,
    /// global.get/set.
    Global,
    /// Scalar constants.
    Const,
    /// Integer add/sub, logic, comparisons, sign extension.
    Int,
    /// Integer shifts, rotates and bit counts.
    IntShift,
    /// Integer multiplication and division.
    IntMul,
    /// Float arithmetic and comparison operators.
    Float,
    /// Value-type conversions.
    Conversion,
    /// Non-atomic linear-memory loads (scalar and SIMD).
    Load,
    /// Non-atomic linear-memory stores (scalar and SIMD).
    Store,
    /// memory.copy/fill/init, data.drop and the table bulk operators.
    BulkMemory,
    /// Threads-proposal operators.
    Atomic,
    /// Direct calls.
    Call,
    /// call_indirect and call_ref.
    CallIndirect,
    /// return.
    Return,
    /// return_call, return_call_indirect, return_call_ref.
    TailCall,
    /// SIMD operators other than loads and stores.
    Simd,
    /// Everything else (drop, select, memory.size/grow, table and reference operators).
    Other,
}

impl OpClass {
    /// Every class, in the order of the enum (and of [`OpClass::index`]).
    pub const ALL: [OpClass; 20] = [
        OpClass::Control,
        OpClass::Branch,
        OpClass::Local,
        OpClass::Global,
        OpClass::Const,
        OpClass::Int,
        OpClass::IntShift,
        OpClass::IntMul,
        OpClass::Float,
        OpClass::Conversion,
        OpClass::Load,
        OpClass::Store,
        OpClass::BulkMemory,
        OpClass::Atomic,
        OpClass::Call,
        OpClass::CallIndirect,
        OpClass::Return,
        OpClass::TailCall,
        OpClass::Simd,
        OpClass::Other,
    ];

    /// The stable lowercase name used in JSON, CSV and on the command line.
    pub const fn name(self) -> &'static str {
        match self {
            OpClass::Control => "control",
            OpClass::Branch => "branch",
            OpClass::Local => "local",
            OpClass::Global => "global",
            OpClass::Const => "const",
            OpClass::Int => "int",
            OpClass::IntShift => "int_shift",
            OpClass::IntMul => "int_mul",
            OpClass::Float => "float",
            OpClass::Conversion => "conversion",
            OpClass::Load => "load",
            OpClass::Store => "store",
            OpClass::BulkMemory => "bulk_memory",
            OpClass::Atomic => "atomic",
            OpClass::Call => "call",
            OpClass::CallIndirect => "call_indirect",
            OpClass::Return => "return",
            OpClass::TailCall => "tail_call",
            OpClass::Simd => "simd",
            OpClass::Other => "other",
        }
    }

    /// Position of this class in [`OpClass::ALL`].
    pub const fn index(self) -> usize {
        self as usize
    }
}

impl fmt::Display for OpClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Error returned when parsing an unknown class name.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown op class `{0}` (expected one of control, branch, local, global, const, int, int_shift, int_mul, float, conversion, load, store, bulk_memory, atomic, call, call_indirect, return, tail_call, simd, other)")]
pub struct UnknownClass(pub String);

impl FromStr for OpClass {
    type Err = UnknownClass;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        OpClass::ALL
            .into_iter()
            .find(|c| c.name() == s)
            .ok_or_else(|| UnknownClass(s.to_string()))
    }
}

impl Serialize for OpClass {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for OpClass {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = String::deserialize(d)?;
        name.parse().map_err(serde::de::Error::custom)
    }
}

macro_rules! define_proposal_of {
    ($( @$proposal:ident $op:ident $({ $($arg:ident: $argty:ty),* })? => $visit:ident ($($ann:tt)*))*) => {
        /// The wasmparser proposal group an operator belongs to (`mvp`,
        /// `simd`, `threads`, `gc`, ...), as named by
        /// [`wasmparser::for_each_operator`].
        pub(crate) fn proposal_of(op: &Operator<'_>) -> &'static str {
            match op {
                $( Operator::$op { .. } => stringify!($proposal), )*
                _ => "unknown",
            }
        }
    };
}
wasmparser::for_each_operator!(define_proposal_of);

/// Classify one operator. Total: every operator wasmparser can decode has a
/// class (unknown future operators are `other`).
pub fn classify(op: &Operator<'_>) -> OpClass {
    use Operator as O;
    match op {
        O::Block { .. }
        | O::Loop { .. }
        | O::End
        | O::Nop
        | O::Unreachable
        | O::TryTable { .. }
        | O::Throw { .. }
        | O::ThrowRef
        | O::Try { .. }
        | O::Catch { .. }
        | O::CatchAll
        | O::Rethrow { .. }
        | O::Delegate { .. }
        | O::ContBind { .. }
        | O::Suspend { .. }
        | O::Resume { .. }
        | O::ResumeThrow { .. }
        | O::ResumeThrowRef { .. }
        | O::Switch { .. } => OpClass::Control,

        O::If { .. }
        | O::Else
        | O::Br { .. }
        | O::BrIf { .. }
        | O::BrTable { .. }
        | O::BrOnNull { .. }
        | O::BrOnNonNull { .. }
        | O::BrOnCast { .. }
        | O::BrOnCastFail { .. }
        | O::BrOnCastDescEq { .. }
        | O::BrOnCastDescEqFail { .. } => OpClass::Branch,

        O::LocalGet { .. } | O::LocalSet { .. } | O::LocalTee { .. } => OpClass::Local,
        O::GlobalGet { .. } | O::GlobalSet { .. } => OpClass::Global,

        O::I32Const { .. } | O::I64Const { .. } | O::F32Const { .. } | O::F64Const { .. } => {
            OpClass::Const
        }

        O::Call { .. } => OpClass::Call,
        O::CallIndirect { .. } | O::CallRef { .. } => OpClass::CallIndirect,
        O::Return => OpClass::Return,
        O::ReturnCall { .. } | O::ReturnCallIndirect { .. } | O::ReturnCallRef { .. } => {
            OpClass::TailCall
        }

        O::MemoryCopy { .. }
        | O::MemoryFill { .. }
        | O::MemoryInit { .. }
        | O::DataDrop { .. }
        | O::TableCopy { .. }
        | O::TableInit { .. }
        | O::TableFill { .. }
        | O::ElemDrop { .. } => OpClass::BulkMemory,

        O::I32WrapI64
        | O::I64ExtendI32S
        | O::I64ExtendI32U
        | O::I32TruncF32S
        | O::I32TruncF32U
        | O::I32TruncF64S
        | O::I32TruncF64U
        | O::I64TruncF32S
        | O::I64TruncF32U
        | O::I64TruncF64S
        | O::I64TruncF64U
        | O::I32TruncSatF32S
        | O::I32TruncSatF32U
        | O::I32TruncSatF64S
        | O::I32TruncSatF64U
        | O::I64TruncSatF32S
        | O::I64TruncSatF32U
        | O::I64TruncSatF64S
        | O::I64TruncSatF64U
        | O::F32ConvertI32S
        | O::F32ConvertI32U
        | O::F32ConvertI64S
        | O::F32ConvertI64U
        | O::F32DemoteF64
        | O::F64ConvertI32S
        | O::F64ConvertI32U
        | O::F64ConvertI64S
        | O::F64ConvertI64U
        | O::F64PromoteF32
        | O::I32ReinterpretF32
        | O::I64ReinterpretF64
        | O::F32ReinterpretI32
        | O::F64ReinterpretI64 => OpClass::Conversion,

        O::I32Eqz
        | O::I32Eq
        | O::I32Ne
        | O::I32LtS
        | O::I32LtU
        | O::I32GtS
        | O::I32GtU
        | O::I32LeS
        | O::I32LeU
        | O::I32GeS
        | O::I32GeU
        | O::I64Eqz
        | O::I64Eq
        | O::I64Ne
        | O::I64LtS
        | O::I64LtU
        | O::I64GtS
        | O::I64GtU
        | O::I64LeS
        | O::I64LeU
        | O::I64GeS
        | O::I64GeU
        | O::I32Add
        | O::I32Sub
        | O::I32And
        | O::I32Or
        | O::I32Xor
        | O::I64Add
        | O::I64Sub
        | O::I64And
        | O::I64Or
        | O::I64Xor
        | O::I32Extend8S
        | O::I32Extend16S
        | O::I64Extend8S
        | O::I64Extend16S
        | O::I64Extend32S
        | O::I64Add128
        | O::I64Sub128 => OpClass::Int,

        O::I32Clz
        | O::I32Ctz
        | O::I32Popcnt
        | O::I32Shl
        | O::I32ShrS
        | O::I32ShrU
        | O::I32Rotl
        | O::I32Rotr
        | O::I64Clz
        | O::I64Ctz
        | O::I64Popcnt
        | O::I64Shl
        | O::I64ShrS
        | O::I64ShrU
        | O::I64Rotl
        | O::I64Rotr => OpClass::IntShift,

        O::I32Mul
        | O::I32DivS
        | O::I32DivU
        | O::I32RemS
        | O::I32RemU
        | O::I64Mul
        | O::I64DivS
        | O::I64DivU
        | O::I64RemS
        | O::I64RemU
        | O::I64MulWideS
        | O::I64MulWideU => OpClass::IntMul,

        O::F32Eq
        | O::F32Ne
        | O::F32Lt
        | O::F32Gt
        | O::F32Le
        | O::F32Ge
        | O::F64Eq
        | O::F64Ne
        | O::F64Lt
        | O::F64Gt
        | O::F64Le
        | O::F64Ge
        | O::F32Abs
        | O::F32Neg
        | O::F32Ceil
        | O::F32Floor
        | O::F32Trunc
        | O::F32Nearest
        | O::F32Sqrt
        | O::F32Add
        | O::F32Sub
        | O::F32Mul
        | O::F32Div
        | O::F32Min
        | O::F32Max
        | O::F32Copysign
        | O::F64Abs
        | O::F64Neg
        | O::F64Ceil
        | O::F64Floor
        | O::F64Trunc
        | O::F64Nearest
        | O::F64Sqrt
        | O::F64Add
        | O::F64Sub
        | O::F64Mul
        | O::F64Div
        | O::F64Min
        | O::F64Max
        | O::F64Copysign => OpClass::Float,

        _ => match access_bytes(op) {
            Some(Access {
                atomic: false,
                loaded,
                ..
            }) if loaded > 0 => OpClass::Load,
            Some(Access {
                atomic: false,
                stored,
                ..
            }) if stored > 0 => OpClass::Store,
            _ => match proposal_of(op) {
                "threads" | "shared_everything_threads" | "acquire_release_atomics" => {
                    OpClass::Atomic
                }
                "simd" | "relaxed_simd" => OpClass::Simd,
                _ => OpClass::Other,
            },
        },
    }
}

/// Bytes of linear memory one execution of a memory-access operator reads
/// and writes, from its static width.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Access {
    /// Bytes read.
    pub loaded: u32,
    /// Bytes written.
    pub stored: u32,
    /// Whether the operator is from the threads proposal.
    pub atomic: bool,
}

/// Static bytes moved by one execution of `op`, or `None` if `op` does not
/// access linear memory with a static width.
///
/// Conventions: a SIMD lane load reads only its lane (`v128.load8_lane`
/// reads 1 byte), a lane store writes only its lane; `v128.load*_splat` and
/// `_zero` read their scalar width and `v128.load8x8_s` reads 8 bytes. An
/// atomic RMW (including `cmpxchg`, whatever the comparison's outcome) both
/// reads and writes its width; `memory.atomic.wait32/64` read 4/8 bytes;
/// `memory.atomic.notify` and `atomic.fence` move nothing. Bulk operators
/// have dynamic lengths and are counted separately (`bulk_bytes`).
pub fn access_bytes(op: &Operator<'_>) -> Option<Access> {
    use Operator as O;
    let plain = |loaded, stored| {
        Some(Access {
            loaded,
            stored,
            atomic: false,
        })
    };
    let atomic = |loaded, stored| {
        Some(Access {
            loaded,
            stored,
            atomic: true,
        })
    };
    match op {
        O::I32Load8S { .. } | O::I32Load8U { .. } | O::I64Load8S { .. } | O::I64Load8U { .. } => {
            plain(1, 0)
        }
        O::I32Load16S { .. }
        | O::I32Load16U { .. }
        | O::I64Load16S { .. }
        | O::I64Load16U { .. } => plain(2, 0),
        O::I32Load { .. } | O::F32Load { .. } | O::I64Load32S { .. } | O::I64Load32U { .. } => {
            plain(4, 0)
        }
        O::I64Load { .. } | O::F64Load { .. } => plain(8, 0),
        O::I32Store8 { .. } | O::I64Store8 { .. } => plain(0, 1),
        O::I32Store16 { .. } | O::I64Store16 { .. } => plain(0, 2),
        O::I32Store { .. } | O::F32Store { .. } | O::I64Store32 { .. } => plain(0, 4),
        O::I64Store { .. } | O::F64Store { .. } => plain(0, 8),

        O::V128Load { .. } => plain(16, 0),
        O::V128Load8x8S { .. }
        | O::V128Load8x8U { .. }
        | O::V128Load16x4S { .. }
        | O::V128Load16x4U { .. }
        | O::V128Load32x2S { .. }
        | O::V128Load32x2U { .. }
        | O::V128Load64Splat { .. }
        | O::V128Load64Zero { .. }
        | O::V128Load64Lane { .. } => plain(8, 0),
        O::V128Load8Splat { .. } | O::V128Load8Lane { .. } => plain(1, 0),
        O::V128Load16Splat { .. } | O::V128Load16Lane { .. } => plain(2, 0),
        O::V128Load32Splat { .. } | O::V128Load32Zero { .. } | O::V128Load32Lane { .. } => {
            plain(4, 0)
        }
        O::V128Store { .. } => plain(0, 16),
        O::V128Store8Lane { .. } => plain(0, 1),
        O::V128Store16Lane { .. } => plain(0, 2),
        O::V128Store32Lane { .. } => plain(0, 4),
        O::V128Store64Lane { .. } => plain(0, 8),

        O::I32AtomicLoad8U { .. } | O::I64AtomicLoad8U { .. } => atomic(1, 0),
        O::I32AtomicLoad16U { .. } | O::I64AtomicLoad16U { .. } => atomic(2, 0),
        O::I32AtomicLoad { .. } | O::I64AtomicLoad32U { .. } => atomic(4, 0),
        O::I64AtomicLoad { .. } => atomic(8, 0),
        O::I32AtomicStore8 { .. } | O::I64AtomicStore8 { .. } => atomic(0, 1),
        O::I32AtomicStore16 { .. } | O::I64AtomicStore16 { .. } => atomic(0, 2),
        O::I32AtomicStore { .. } | O::I64AtomicStore32 { .. } => atomic(0, 4),
        O::I64AtomicStore { .. } => atomic(0, 8),
        O::MemoryAtomicWait32 { .. } => atomic(4, 0),
        O::MemoryAtomicWait64 { .. } => atomic(8, 0),

        O::I32AtomicRmw8AddU { .. }
        | O::I64AtomicRmw8AddU { .. }
        | O::I32AtomicRmw8SubU { .. }
        | O::I64AtomicRmw8SubU { .. }
        | O::I32AtomicRmw8AndU { .. }
        | O::I64AtomicRmw8AndU { .. }
        | O::I32AtomicRmw8OrU { .. }
        | O::I64AtomicRmw8OrU { .. }
        | O::I32AtomicRmw8XorU { .. }
        | O::I64AtomicRmw8XorU { .. }
        | O::I32AtomicRmw8XchgU { .. }
        | O::I64AtomicRmw8XchgU { .. }
        | O::I32AtomicRmw8CmpxchgU { .. }
        | O::I64AtomicRmw8CmpxchgU { .. } => atomic(1, 1),
        O::I32AtomicRmw16AddU { .. }
        | O::I64AtomicRmw16AddU { .. }
        | O::I32AtomicRmw16SubU { .. }
        | O::I64AtomicRmw16SubU { .. }
        | O::I32AtomicRmw16AndU { .. }
        | O::I64AtomicRmw16AndU { .. }
        | O::I32AtomicRmw16OrU { .. }
        | O::I64AtomicRmw16OrU { .. }
        | O::I32AtomicRmw16XorU { .. }
        | O::I64AtomicRmw16XorU { .. }
        | O::I32AtomicRmw16XchgU { .. }
        | O::I64AtomicRmw16XchgU { .. }
        | O::I32AtomicRmw16CmpxchgU { .. }
        | O::I64AtomicRmw16CmpxchgU { .. } => atomic(2, 2),
        O::I32AtomicRmwAdd { .. }
        | O::I64AtomicRmw32AddU { .. }
        | O::I32AtomicRmwSub { .. }
        | O::I64AtomicRmw32SubU { .. }
        | O::I32AtomicRmwAnd { .. }
        | O::I64AtomicRmw32AndU { .. }
        | O::I32AtomicRmwOr { .. }
        | O::I64AtomicRmw32OrU { .. }
        | O::I32AtomicRmwXor { .. }
        | O::I64AtomicRmw32XorU { .. }
        | O::I32AtomicRmwXchg { .. }
        | O::I64AtomicRmw32XchgU { .. }
        | O::I32AtomicRmwCmpxchg { .. }
        | O::I64AtomicRmw32CmpxchgU { .. } => atomic(4, 4),
        O::I64AtomicRmwAdd { .. }
        | O::I64AtomicRmwSub { .. }
        | O::I64AtomicRmwAnd { .. }
        | O::I64AtomicRmwOr { .. }
        | O::I64AtomicRmwXor { .. }
        | O::I64AtomicRmwXchg { .. }
        | O::I64AtomicRmwCmpxchg { .. } => atomic(8, 8),
        _ => None,
    }
}

/// Whether `op` can neither trap nor transfer control, so the instruction
/// after it runs exactly as often as it does. The instrumenting pass keeps
/// such operators inside one counting group; everything else ends a group.
///
/// Conservative by design: an operator missing here only costs an extra
/// counter, never a wrong count.
pub(crate) fn is_straight_line(op: &Operator<'_>) -> bool {
    use Operator as O;
    match op {
        // Control that neither traps nor jumps. `loop`, `if`, `else` and
        // `end` are handled by the pass itself (they start new groups).
        O::Nop | O::Block { .. } => true,
        O::Drop | O::Select | O::TypedSelect { .. } | O::TypedSelectMulti { .. } => true,
        O::LocalGet { .. }
        | O::LocalSet { .. }
        | O::LocalTee { .. }
        | O::GlobalGet { .. }
        | O::GlobalSet { .. } => true,
        O::MemorySize { .. } | O::MemoryGrow { .. } | O::TableSize { .. } => true,
        O::RefNull { .. } | O::RefIsNull | O::RefFunc { .. } | O::RefEq => true,
        // Integer division and remainder trap on zero (and overflow).
        O::I32DivS
        | O::I32DivU
        | O::I32RemS
        | O::I32RemU
        | O::I64DivS
        | O::I64DivU
        | O::I64RemS
        | O::I64RemU => false,
        // Non-saturating float-to-int conversions trap on NaN / overflow.
        O::I32TruncF32S
        | O::I32TruncF32U
        | O::I32TruncF64S
        | O::I32TruncF64U
        | O::I64TruncF32S
        | O::I64TruncF32U
        | O::I64TruncF64S
        | O::I64TruncF64U => false,
        _ => match classify(op) {
            OpClass::Const
            | OpClass::Int
            | OpClass::IntShift
            | OpClass::IntMul
            | OpClass::Float
            | OpClass::Conversion => true,
            // SIMD arithmetic cannot trap; SIMD memory access is `load`/`store`.
            OpClass::Simd => true,
            _ => false,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for (i, c) in OpClass::ALL.into_iter().enumerate() {
            assert_eq!(c.index(), i);
            assert_eq!(c.name().parse::<OpClass>().unwrap(), c);
            assert_eq!(
                serde_json::to_string(&c).unwrap(),
                format!("\"{}\"", c.name())
            );
        }
        assert!("bogus".parse::<OpClass>().is_err());
    }

    #[test]
    fn representative_classes() {
        use wasmparser::{BlockType, Ieee32, MemArg, MemArgTarget};
        let m = MemArg {
            align: 0,
            max_align: 0,
            offset: 0,
            target: MemArgTarget::Memory(0),
            ordering: None,
        };
        let cases: Vec<(Operator<'static>, OpClass)> = vec![
            (
                Operator::Loop {
                    blockty: BlockType::Empty,
                },
                OpClass::Control,
            ),
            (Operator::BrIf { relative_depth: 0 }, OpClass::Branch),
            (Operator::GlobalSet { global_index: 0 }, OpClass::Global),
            (Operator::LocalTee { local_index: 0 }, OpClass::Local),
            (
                Operator::If {
                    blockty: BlockType::Empty,
                },
                OpClass::Branch,
            ),
            (
                Operator::F32Const {
                    value: Ieee32::from(1.0f32),
                },
                OpClass::Const,
            ),
            (Operator::I64Extend8S, OpClass::Int),
            (Operator::I32Rotl, OpClass::IntShift),
            (Operator::I64Popcnt, OpClass::IntShift),
            (Operator::I32RemU, OpClass::IntMul),
            (Operator::I64MulWideS, OpClass::IntMul),
            (Operator::F64Copysign, OpClass::Float),
            (Operator::I32TruncSatF64U, OpClass::Conversion),
            (Operator::V128Load32Splat { memarg: m }, OpClass::Load),
            (
                Operator::V128Store8Lane { memarg: m, lane: 1 },
                OpClass::Store,
            ),
            (Operator::I64Load32U { memarg: m }, OpClass::Load),
            (Operator::MemoryFill { mem: 0 }, OpClass::BulkMemory),
            (Operator::I32AtomicRmwCmpxchg { memarg: m }, OpClass::Atomic),
            (
                Operator::AtomicFence {
                    ordering: wasmparser::Ordering::SeqCst,
                },
                OpClass::Atomic,
            ),
            (Operator::Call { function_index: 0 }, OpClass::Call),
            (Operator::CallRef { type_index: 0 }, OpClass::CallIndirect),
            (
                Operator::ReturnCallIndirect {
                    type_index: 0,
                    table_index: 0,
                },
                OpClass::TailCall,
            ),
            (Operator::Return, OpClass::Return),
            (Operator::I8x16Swizzle, OpClass::Simd),
            (Operator::Select, OpClass::Other),
            (Operator::MemoryGrow { mem: 0 }, OpClass::Other),
            (Operator::TableGet { table: 0 }, OpClass::Other),
        ];
        for (op, class) in cases {
            assert_eq!(classify(&op), class, "{op:?}");
        }
        assert_eq!(
            access_bytes(&Operator::I64AtomicRmw16XchgU { memarg: m }),
            Some(Access {
                loaded: 2,
                stored: 2,
                atomic: true
            })
        );
    }
}
