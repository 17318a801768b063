//! Integration tests of the counting pass, run through wasmi.
//!
//! Modules:
//! - `util`: instantiate, call, and decode counts in wasmi.
//! - `exact`: hand-written modules with hand-computed dynamic counts.
//! - `traps`: counts read after a trap (exact) and after running out of fuel
//!   (consistent, within one group).
//! - `structure`: index preservation, imports, missing sections, errors.
//! - `random`: wasm-smith modules over a fixed seed range; the instrumented
//!   copy validates and computes the same results as the original.

mod exact;
mod random;
mod structure;
mod traps;
mod util;
