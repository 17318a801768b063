//! Decoded counts: what one counting run executed.
//!
//! # Definitions
//!
//! * `total_ops`: executed wasm instructions of the original module, each
//!   counted once per execution, `end` and `else` included when they run
//!   (an `end` runs when control falls through it; a branch out of a block
//!   skips its `end`). `total_ops` is always the sum of `classes`.
//! * `folded`: of the executed instructions of each class, those a
//!   register-based translation (wasmi, wasm3) folds into the instruction
//!   next to them: `local.get`s and constants read in place as operands of a
//!   computation, and `local.set`/`local.tee`s that receive a computation's
//!   result directly (see the `fold` module for the exact rules). Every class
//!   is present like in `classes`, but only `local` and `const` can be
//!   non-zero, and `folded[c] <= classes[c]` always. `classes[c] - folded[c]`
//!   is what such an engine still executes: real moves, `global.*`, and
//!   operands it has to copy.
//! * `taken_branches`: control transfers inside a function: every `br` and
//!   `br_table`, every `br_if` whose condition was non-zero, every `if` whose
//!   condition was zero (it jumps to its `else` arm or past its `end`), and
//!   every `else` reached by falling off the end of the `then` arm (it jumps
//!   past the `else` arm). This is the machine view of structured control:
//!   an `if`/`else` costs exactly one taken jump per execution whichever arm
//!   runs. A loop back-edge is the taken `br`/`br_if` that targets the loop.
//! * `calls`: executed `call`, `call_indirect`, `call_ref` and tail calls
//!   (`return_call*`): every instruction that enters another function.
//! * `returns`: executed `return` instructions plus function bodies that
//!   finish by falling through their final `end`. A branch to a function's
//!   outermost label also returns, but is counted as a taken branch, and a
//!   tail call is counted as a call only.
//! * `transfers` = `taken_branches + calls + returns`.
//! * `block_entries`: executed function entries, loop headers (once per
//!   iteration: the entry and every back-edge) and `if`s (one arm runs per
//!   execution). These are the places a one-pass translator opens a block
//!   it meters as a whole: wasmi with fuel charges a block's fuel there, and
//!   checks of this kind (fuel, epochs, interrupts) cost per block entry,
//!   not per instruction. A plain `block` is entered by falling through and
//!   is not one.
//! * `bytes_loaded` / `bytes_stored`: static access width times executions for
//!   every load and store, atomic ones included (see [`crate::access_bytes`]).
//! * `bulk_bytes`: the dynamic length operand of every `memory.copy`,
//!   `memory.fill` and `memory.init` that completed (a trapping bulk operator
//!   adds nothing). `bulk_table_elements` is the same for `table.copy/fill/init`.
//!
//! Counts cover everything the instance executed between instantiation and
//! the read, the start function included. Scaling to "per iteration" is a
//! division the caller does; [`Counts::delta`] subtracts a baseline run, so
//! `(run(n2) - run(n1)) / (n2 - n1)` removes fixed prologue costs exactly.

use crate::class::OpClass;
use crate::pass::{Layout, Slot};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Exact dynamic counts of one counting run. See the module docs for the
/// definition of every field.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Default)]
pub struct Counts {
    /// Executed instructions; the sum of `classes`.
    pub total_ops: u64,
    /// Executed instructions per class. Every class is present (zero
    /// included), so tables built from it have stable columns.
    pub classes: BTreeMap<OpClass, u64>,
    /// Of `classes`, the instructions a register-based translation folds
    /// (see module docs). Every class present; absent in files written
    /// before it existed.
    #[serde(default)]
    pub folded: BTreeMap<OpClass, u64>,
    /// Taken branches (see module docs).
    pub taken_branches: u64,
    /// Executed call instructions (direct, indirect, by reference, tail).
    pub calls: u64,
    /// Executed `return`s plus fall-through function exits.
    pub returns: u64,
    /// `taken_branches + calls + returns`.
    pub transfers: u64,
    /// Function entries, loop header executions and `if`s (see module
    /// docs); absent in files written before it existed.
    #[serde(default)]
    pub block_entries: u64,
    /// Bytes read by loads (plain, SIMD and atomic).
    pub bytes_loaded: u64,
    /// Bytes written by stores (plain, SIMD and atomic).
    pub bytes_stored: u64,
    /// Bytes moved by `memory.copy/fill/init`.
    pub bulk_bytes: u64,
    /// Of `bulk_bytes`, those written by `memory.fill` (written only, where
    /// a copy reads each byte too).
    #[serde(default)]
    pub bulk_fill_bytes: u64,
    /// Elements moved by `table.copy/fill/init`.
    pub bulk_table_elements: u64,
    /// Per defined function that executed at least one instruction, in
    /// function-index order.
    pub functions: Vec<FunctionCount>,
    /// Per loop whose `loop` instruction executed at least once, in code order.
    pub loops: Vec<LoopCount>,
}

/// Execution counts of one function (its own instructions, callees excluded).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct FunctionCount {
    /// Index in the module's function index space (imports first).
    pub index: u32,
    /// From the name section, else the first export name, if any.
    pub name: Option<String>,
    /// How many times the function was entered.
    pub entries: u64,
    /// Instructions executed in this function's body.
    pub ops: u64,
}

/// Execution counts of one `loop`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct LoopCount {
    /// Function index containing the loop.
    pub function: u32,
    /// Byte offset of the `loop` opcode in the original module.
    pub offset: u64,
    /// Loop nesting depth within its function (0 = outermost loop).
    pub depth: u32,
    /// Times the `loop` instruction itself ran (entries from outside).
    pub entries: u64,
    /// Times the loop header (first instruction of the body) ran: entries
    /// plus back-edges taken.
    pub iterations: u64,
    /// Instructions executed inside the loop body, nested loops included,
    /// callees excluded.
    pub ops: u64,
}

impl Counts {
    /// Count of one class.
    pub fn class(&self, class: OpClass) -> u64 {
        self.classes.get(&class).copied().unwrap_or(0)
    }

    /// Folded count of one class (see module docs).
    pub fn folded(&self, class: OpClass) -> u64 {
        self.folded.get(&class).copied().unwrap_or(0)
    }

    /// `self - base` for every scalar and class count (saturating at zero);
    /// `functions` and `loops` are subtracted by key (index, offset) and kept
    /// where the difference is non-zero. Use it to remove the fixed cost of a
    /// shorter run: `(run(n2).delta(&run(n1)))` counts `n2 - n1` iterations.
    pub fn delta(&self, base: &Counts) -> Counts {
        let classes = OpClass::ALL
            .into_iter()
            .map(|c| (c, self.class(c).saturating_sub(base.class(c))))
            .collect();
        let folded = OpClass::ALL
            .into_iter()
            .map(|c| (c, self.folded(c).saturating_sub(base.folded(c))))
            .collect();
        let functions = self
            .functions
            .iter()
            .map(|f| {
                let b = base.functions.iter().find(|b| b.index == f.index);
                FunctionCount {
                    entries: f.entries.saturating_sub(b.map_or(0, |b| b.entries)),
                    ops: f.ops.saturating_sub(b.map_or(0, |b| b.ops)),
                    ..f.clone()
                }
            })
            .filter(|f| f.ops > 0)
            .collect();
        let loops = self
            .loops
            .iter()
            .map(|l| {
                let b = base.loops.iter().find(|b| b.offset == l.offset);
                LoopCount {
                    entries: l.entries.saturating_sub(b.map_or(0, |b| b.entries)),
                    iterations: l.iterations.saturating_sub(b.map_or(0, |b| b.iterations)),
                    ops: l.ops.saturating_sub(b.map_or(0, |b| b.ops)),
                    ..l.clone()
                }
            })
            .filter(|l| l.ops > 0 || l.entries > 0)
            .collect();
        Counts {
            total_ops: self.total_ops.saturating_sub(base.total_ops),
            classes,
            folded,
            taken_branches: self.taken_branches.saturating_sub(base.taken_branches),
            calls: self.calls.saturating_sub(base.calls),
            returns: self.returns.saturating_sub(base.returns),
            transfers: self.transfers.saturating_sub(base.transfers),
            block_entries: self.block_entries.saturating_sub(base.block_entries),
            bytes_loaded: self.bytes_loaded.saturating_sub(base.bytes_loaded),
            bytes_stored: self.bytes_stored.saturating_sub(base.bytes_stored),
            bulk_bytes: self.bulk_bytes.saturating_sub(base.bulk_bytes),
            bulk_fill_bytes: self.bulk_fill_bytes.saturating_sub(base.bulk_fill_bytes),
            bulk_table_elements: self
                .bulk_table_elements
                .saturating_sub(base.bulk_table_elements),
            functions,
            loops,
        }
    }

    /// Average per iteration: `value / iters` as `f64` for each scalar and
    /// class count (`iters == 0` gives infinities/NaN, as f64 division does).
    pub fn per_iter(&self, iters: u64) -> PerIter {
        let d = iters as f64;
        PerIter {
            total_ops: self.total_ops as f64 / d,
            classes: self
                .classes
                .iter()
                .map(|(c, n)| (*c, *n as f64 / d))
                .collect(),
            folded: self
                .folded
                .iter()
                .map(|(c, n)| (*c, *n as f64 / d))
                .collect(),
            taken_branches: self.taken_branches as f64 / d,
            calls: self.calls as f64 / d,
            returns: self.returns as f64 / d,
            transfers: self.transfers as f64 / d,
            block_entries: self.block_entries as f64 / d,
            bytes_loaded: self.bytes_loaded as f64 / d,
            bytes_stored: self.bytes_stored as f64 / d,
            bulk_bytes: self.bulk_bytes as f64 / d,
            bulk_fill_bytes: self.bulk_fill_bytes as f64 / d,
            bulk_table_elements: self.bulk_table_elements as f64 / d,
        }
    }
}

/// [`Counts`] scalars divided by an iteration count.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[allow(missing_docs)]
pub struct PerIter {
    pub total_ops: f64,
    pub classes: BTreeMap<OpClass, f64>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub folded: BTreeMap<OpClass, f64>,
    pub taken_branches: f64,
    pub calls: f64,
    pub returns: f64,
    pub transfers: f64,
    #[serde(default)]
    pub block_entries: f64,
    pub bytes_loaded: f64,
    pub bytes_stored: f64,
    pub bulk_bytes: f64,
    #[serde(default)]
    pub bulk_fill_bytes: f64,
    pub bulk_table_elements: f64,
}

/// Turns raw counter values into [`Counts`]. Counters are `i64` globals that
/// wrap; they are reinterpreted as `u64`, and products wrap too (a run would
/// need 2^64 executions to notice).
pub(crate) fn decode(layout: &Layout, values: &[u64]) -> Counts {
    let mut classes = [0u64; OpClass::ALL.len()];
    let mut folded = [0u64; OpClass::ALL.len()];
    let mut c = Counts::default();
    let mut func_ops = vec![0u64; layout.functions.len()];
    let mut loop_ops = vec![0u64; layout.loops.len()];
    for (slot, &n) in layout.slots.iter().zip(values) {
        match slot {
            Slot::Group(g) => {
                if n == 0 {
                    continue;
                }
                for (class, k) in &g.classes {
                    classes[class.index()] =
                        classes[class.index()].wrapping_add(n.wrapping_mul(u64::from(*k)));
                }
                for (class, k) in &g.folded {
                    folded[class.index()] =
                        folded[class.index()].wrapping_add(n.wrapping_mul(u64::from(*k)));
                }
                let ops = n.wrapping_mul(u64::from(g.ops));
                func_ops[g.func as usize] = func_ops[g.func as usize].wrapping_add(ops);
                if let Some(l) = g.innermost_loop {
                    loop_ops[l as usize] = loop_ops[l as usize].wrapping_add(ops);
                }
                c.taken_branches = c
                    .taken_branches
                    .wrapping_add(n.wrapping_mul(u64::from(g.taken)));
                c.calls = c.calls.wrapping_add(n.wrapping_mul(u64::from(g.calls)));
                c.returns = c.returns.wrapping_add(n.wrapping_mul(u64::from(g.returns)));
                c.block_entries = c
                    .block_entries
                    .wrapping_add(n.wrapping_mul(u64::from(g.entries)));
                c.bytes_loaded = c.bytes_loaded.wrapping_add(n.wrapping_mul(g.loaded));
                c.bytes_stored = c.bytes_stored.wrapping_add(n.wrapping_mul(g.stored));
            }
            Slot::Taken => c.taken_branches = c.taken_branches.wrapping_add(n),
            Slot::BulkBytes => c.bulk_bytes = c.bulk_bytes.wrapping_add(n),
            Slot::FillBytes => {
                c.bulk_bytes = c.bulk_bytes.wrapping_add(n);
                c.bulk_fill_bytes = c.bulk_fill_bytes.wrapping_add(n);
            }
            Slot::TableElements => c.bulk_table_elements = c.bulk_table_elements.wrapping_add(n),
        }
    }
    c.classes = OpClass::ALL
        .into_iter()
        .map(|cl| (cl, classes[cl.index()]))
        .collect();
    c.folded = OpClass::ALL
        .into_iter()
        .map(|cl| (cl, folded[cl.index()]))
        .collect();
    c.total_ops = classes.iter().fold(0u64, |a, b| a.wrapping_add(*b));
    c.transfers = c
        .taken_branches
        .wrapping_add(c.calls)
        .wrapping_add(c.returns);

    let value = |slot: u32| values.get(slot as usize).copied().unwrap_or(0);
    c.functions = layout
        .functions
        .iter()
        .zip(&func_ops)
        .filter(|(_, ops)| **ops > 0)
        .map(|(f, ops)| FunctionCount {
            index: f.index,
            name: f.name.clone(),
            entries: f.entry_slot.map_or(0, value),
            ops: *ops,
        })
        .collect();
    // Loops are pushed in code order, so every loop's parent precedes it:
    // walking backwards folds nested loops' ops into their parents.
    for i in (0..layout.loops.len()).rev() {
        if let Some(p) = layout.loops[i].parent {
            loop_ops[p as usize] = loop_ops[p as usize].wrapping_add(loop_ops[i]);
        }
    }
    c.loops = layout
        .loops
        .iter()
        .zip(&loop_ops)
        .filter(|(l, _)| value(l.entry_slot) > 0)
        .map(|(l, ops)| LoopCount {
            function: l.func,
            offset: l.offset,
            depth: l.depth,
            entries: value(l.entry_slot),
            iterations: value(l.header_slot),
            ops: *ops,
        })
        .collect();
    c
}
