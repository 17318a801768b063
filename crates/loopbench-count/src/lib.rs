//! Exact dynamic instruction counts for any valid wasm module, by
//! instrumentation.
//!
//! loopbench quotes "ns per wasm op", "ns per taken branch", "ns per byte
//! copied". Those denominators must be exact, not estimated from a shape's
//! declaration, and they must come from the very module that was timed. This
//! crate rewrites a module into a copy that computes the same results and, in
//! an untimed *counting run*, also counts what the original executes:
//! instructions by [`OpClass`], taken branches, calls, returns, bytes loaded
//! and stored, and bytes moved by bulk operators, plus per-function and
//! per-loop execution counts for app profiles.
//!
//! The pipeline is three steps, each in its own module:
//!
//! 1. [`classify`] (module `class`): which class every operator counts in.
//! 2. [`instrument`] (module `pass`): validate, cut each function into
//!    counting groups, append one `i64` counter global per group and per
//!    conditional or bulk site, and export a reader function.
//!    Module `fold` marks the operands a register-based translation folds.
//! 3. [`Instrumented::decode`] (module `counts`): read every counter through
//!    the engine of your choice and turn them into [`Counts`].
//!
//! Counting is engine-independent: the caller runs the instrumented module in
//! any engine and hands [`Instrumented::decode`] a closure that calls the
//! exported [`Instrumented::COUNTER_EXPORT`] function.
//!
//! # Exactness
//!
//! Counts are exact for runs that return, and for runs that trap: a trapping
//! instruction counts as executed, nothing after it does (see the `pass`
//! module docs for why groups end at trapping instructions). A run stopped by
//! an engine's fuel or epoch limit stops at a point the engine chooses inside
//! the instrumented code, so its counts are exact only to within one group of
//! straight-line code per active frame.
//!
//! # Example
//!
//! ```
//! use loopbench_count::{instrument, Instrumented, OpClass};
//!
//! let wasm = wat::parse_str(r#"
//!     (module (func (export "run") (param $n i32) (result i32)
//!       (local $acc i32)
//!       (loop $l
//!         (local.set $acc (i32.add (local.get $acc) (local.get $n)))
//!         (br_if $l (local.tee $n (i32.sub (local.get $n) (i32.const 1)))))
//!       (local.get $acc)))
//! "#).unwrap();
//! let inst = instrument(&wasm).unwrap();
//!
//! // Run it in any engine; here wasmi.
//! let engine = wasmi::Engine::default();
//! let module = wasmi::Module::new(&engine, &inst.wasm[..]).unwrap();
//! let mut store = wasmi::Store::new(&engine, ());
//! let instance = wasmi::Linker::<()>::new(&engine)
//!     .instantiate_and_start(&mut store, &module)
//!     .unwrap();
//! let run = instance.get_typed_func::<i32, i32>(&store, "run").unwrap();
//! assert_eq!(run.call(&mut store, 10).unwrap(), 55);
//!
//! let read = instance
//!     .get_typed_func::<i32, i64>(&store, Instrumented::COUNTER_EXPORT)
//!     .unwrap();
//! let counts = inst.decode(|slot| read.call(&mut store, slot as i32)).unwrap();
//! // 10 iterations of 9 ops (5 local, 1 const, 2 int, 1 br_if), plus `loop`,
//! // the loop's `end`, the final `local.get` and the function's `end`.
//! assert_eq!(counts.total_ops, 94);
//! assert_eq!(counts.class(OpClass::Local), 51);
//! assert_eq!(counts.class(OpClass::Branch), 10);
//! assert_eq!(counts.taken_branches, 9); // back-edges: 10 iterations - 1
//! assert_eq!(counts.returns, 1); // falling off the final `end`
//! assert_eq!(counts.loops[0].iterations, 10);
//! assert_eq!(counts.block_entries, 11); // the function's entry, 10 loop headers
//! assert_eq!(counts.total_ops, counts.classes.values().sum::<u64>());
//! // A register machine folds every local and constant of the loop body
//! // into the add, the sub and the branch; only the final `local.get` runs.
//! assert_eq!(counts.folded(OpClass::Local), 50);
//! assert_eq!(counts.folded(OpClass::Const), 10);
//! ```
//!
//! # Folded operands
//!
//! [`Counts::folded`] splits the `local` and `const` counts further for
//! register-based engines (wasmi, wasm3), which read most operands in place
//! and write most results straight into their local: the `fold` module's
//! static analysis marks each such instruction, and the counting run
//! multiplies the marks by executions like the classes. `classes[c] -
//! folded[c]` is what such an engine still executes as real moves.

mod class;
mod counts;
mod fold;
mod pass;
mod predict;
mod trace;

pub use class::{access_bytes, classify, Access, OpClass, UnknownClass};
pub use counts::{Counts, FunctionCount, LoopCount, PerIter};
pub use predict::{Predictor, PredictorStats, HISTORY_BITS};
pub use trace::{trace_branches, Site, Traced, TRACE_IMPORT};

/// Why a module could not be instrumented.
#[derive(Debug, thiserror::Error)]
pub enum CountError {
    /// The input is not a valid wasm module (wasmparser's message).
    #[error("invalid wasm module: {0}")]
    Invalid(#[source] wasmparser::BinaryReaderError),
    /// The module uses an operator the pass cannot count exactly.
    #[error("function {function}, offset {offset:#x}: {reason} (`{operator}`)")]
    Unsupported {
        /// Function index containing the operator.
        function: u32,
        /// Byte offset of the operator in the module.
        offset: u64,
        /// The operator, as wasmparser prints it.
        operator: String,
        /// Which proposal or construct is missing.
        reason: &'static str,
    },
    /// The module already exports a name the pass needs.
    #[error("module already exports `{0}`, a name the counting pass reserves")]
    ExportCollision(String),
    /// The module is too large to get one global per counter.
    #[error(
        "{counters} counters plus {existing_globals} existing globals exceed the limit of {limit} globals"
    )]
    TooManyCounters {
        /// Counters the pass needs.
        counters: u64,
        /// Globals the module already has.
        existing_globals: u32,
        /// wasmparser's global limit.
        limit: u64,
    },
    /// A bug in the pass (the output failed to encode or validate).
    #[error("internal error in the counting pass: {0}")]
    Internal(String),
}

/// An instrumented copy of a module and the private map of its counters.
#[derive(Clone, Debug)]
pub struct Instrumented {
    /// The instrumented module. Same imports, same exports (plus the two
    /// below), same index spaces for everything the original defines.
    pub wasm: Vec<u8>,
    layout: pass::Layout,
}

/// Instrument `wasm` for counting. Validates with every wasmparser feature
/// enabled; an invalid module is [`CountError::Invalid`], a construct the
/// pass does not handle is [`CountError::Unsupported`]. Never panics on bad
/// input.
pub fn instrument(wasm: &[u8]) -> Result<Instrumented, CountError> {
    let out = pass::run(wasm)?;
    Ok(Instrumented {
        wasm: out.wasm,
        layout: out.layout,
    })
}

impl Instrumented {
    /// Exported `(func (param i32) (result i64))` returning counter slot `i`
    /// (0 for `i >= slots()`).
    pub const COUNTER_EXPORT: &'static str = "__loopbench_count";
    /// Exported `(func (result i32))` returning [`Instrumented::slots`].
    pub const LEN_EXPORT: &'static str = "__loopbench_count_len";

    /// Number of counter slots; `decode` reads slots `0..slots()`.
    pub fn slots(&self) -> u32 {
        self.layout.slots.len() as u32
    }

    /// Read every counter slot through `read` (which calls
    /// [`Instrumented::COUNTER_EXPORT`] in the caller's engine) and decode
    /// them. The first error from `read` is returned unchanged.
    pub fn decode<E>(&self, mut read: impl FnMut(u32) -> Result<i64, E>) -> Result<Counts, E> {
        let mut values = Vec::with_capacity(self.layout.slots.len());
        for slot in 0..self.slots() {
            values.push(read(slot)? as u64);
        }
        Ok(counts::decode(&self.layout, &values))
    }
}
