//! loopbench's timed path, and only it: the shapes (generated loops with
//! their host-side setup and verification), the engine adapters, an arm's
//! rep loop with the clock and counters around the timed call, and the
//! worker that serves all of that to a session over a pipe.
//!
//! It is small on purpose. A worker build of an engine (another version, a
//! checkout, other flags) links this crate and nothing else of loopbench,
//! so an edit to a report, the statistics, the history or the command line
//! leaves every cached worker build as it was; and the session's host
//! binary runs its in-process arms through this same crate, so there is
//! one timed path. Nothing here reduces, stores or prints results.
//!
//! | stage | module |
//! |---|---|
//! | generated loops ("shapes") with host-side setup and verify | [`shapes`] |
//! | which proposals a module needs | [`proposals`] |
//! | engine adapters, one per engine, and a mock for exact tests | [`engines`] |
//! | arms: an engine + configuration + build, prepared per shape; the rep loop | [`arm`] |
//! | the clock and counters around the timed call | [`measure`] |
//! | where the time of a session goes, per phase | [`phases`] |
//! | the worker process: its protocol, server loop, duet barrier, heap padding | [`workers`] |
//! | child processes that die with their parent, stop signals | [`children`] |
//! | engine versions and this binary's build id | [`versions`] |
//! | the one stable hash (cache keys, module identity, seeds) | [`hash`] |
//! | the WASI host a user's own workload runs against | [`wasi`] |

// The engine adapters shared with worker templates name this crate as
// `loopbench_worker::...` (see `engines`), here as in a worker project.
extern crate self as loopbench_worker;

/// `eprintln!` for diagnostics: a closed stderr (e.g. `2>&1 | head`) is
/// ignored instead of panicking; the exit code still tells what happened.
#[macro_export]
macro_rules! diag {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr().lock(), $($arg)*);
    }};
}

/// `eprint!` for diagnostics; see [`diag!`].
#[macro_export]
macro_rules! diag_part {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = write!(std::io::stderr().lock(), $($arg)*);
    }};
}

/// This crate's source directory as it was built: worker projects depend
/// on it by path, so a worker links exactly this timed path.
pub const SOURCE_DIR: &str = env!("CARGO_MANIFEST_DIR");

pub mod arm;
pub mod children;
pub mod engines;
pub mod hash;
pub mod measure;
pub mod phases;
pub mod proposals;
pub mod shapes;
pub mod text;
pub mod units;
pub mod versions;
pub mod wasi;
pub mod workers;
