//! Integration tests, one binary. Runs with and without the `enabled`
//! feature; modules that only make sense one way are gated.
//!
//! Nothing here asserts on a timing value: counts, structure, formats and
//! what the report admits to are exact, cycles are not.

/// A small JSON parser, so format tests can check that output parses.
mod json;

/// Reports built by hand: the arithmetic, the tree, warnings, text and JSON.
mod format;

/// Built without `enabled`: zero-sized, no destructor, report says disabled.
#[cfg(not(feature = "enabled"))]
mod disabled;

/// Built with `enabled`: exact entry and op counts, nesting, reset, flush.
#[cfg(feature = "enabled")]
mod enabled;

/// Several threads: every thread's entries and ops arrive, exactly.
#[cfg(feature = "enabled")]
mod threads;

use std::sync::{Mutex, MutexGuard, PoisonError};

/// Tests that touch the process-wide totals (ops, reset) take this lock, and
/// leave nothing unflushed on their thread when they release it.
#[cfg_attr(not(feature = "enabled"), allow(dead_code))]
pub fn exclusive() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(PoisonError::into_inner)
}
