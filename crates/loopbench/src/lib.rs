//! loopbench: interleaved, verified, null-controlled loop micro-benchmarks
//! for WebAssembly engines.
//!
//! The modules follow the data flow:
//!
//! | stage | module |
//! |---|---|
//! | command line, one file per command (nothing imports from it) | [`cli`] |
//! | generated loops ("shapes") with host-side setup and verify | [`shapes`] |
//! | which proposals a module needs | [`proposals`] |
//! | exact dynamic counts (untimed counting run) | [`count`] |
//! | engine adapters, one per engine, and a mock for exact tests; the engines loopbench knows ([`engines::EngineKind`]) | [`engines`] |
//! | arms: an engine + configuration + build (the arm syntax), prepared per shape; the rep loop | [`arm`] |
//! | arms served from worker processes: layout epochs, other builds | [`workers`] |
//! | the clock and counters around the timed call | [`measure`] |
//! | the order of arms in a round (Williams design) | [`schedule`] |
//! | a whole session in epochs, reduced to results | [`session`] |
//! | known effects: how well the instrument measures them | [`calibrate`] |
//! | paired ratios, intervals across epochs, bootstraps, estimators, the stop rule, verdicts | [`stats`] |
//! | estimators proven on recorded noise: known effects injected into a session's null control | [`replay`] |
//! | prices per primitive | [`model`] |
//! | the results model: owned, versioned, read back | [`results`] |
//! | exporters (table, JSON, CSV, Markdown, HTML) over one markup layer, and the export manager | [`report`] |
//! | real applications as workloads: profile, projection, warm mode | [`apps`] |
//! | history (SQLite, PostgreSQL), trends, the fleet's job queue | [`history`] |
//! | the first changed revision of a range: the search and its three-way judgement, the run of a bisect and its stored steps | [`bisect`] |
//! | the one stable hash (cache keys, module identity, seeds) | [`hash`] |
//!
//! Each area owns its errors in a leaf file (`engines/error.rs`,
//! `shapes/error.rs`, `arm/error.rs`, ...); [`error::Error`], above those
//! below a session, wraps them for the binary, and the areas above it
//! convert theirs into it ([`error::Error::Above`]).
//!
//! ```no_run
//! use loopbench::{session, shapes, arm::ArmSpec, results::Document};
//! use loopbench::report::Exporter;
//! let plan = session::Plan {
//!     shapes: vec![shapes::find("add_chain").unwrap()],
//!     arms: vec!["wasmi".parse::<ArmSpec>().unwrap()],
//!     ..Default::default()
//! };
//! // `()` is the sink that reports nothing as the session goes.
//! let session = session::run(plan, &mut ()).unwrap();
//! let table = loopbench::report::table::Table.render(&Document::Session(session)).unwrap();
//! print!("{}", String::from_utf8_lossy(&table));
//! ```

// The engine adapters shared with worker templates name this library as
// `loopbench::...` (see `engines`), in this crate as in a worker.
extern crate self as loopbench;

pub mod apps;
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

pub mod arm;
pub mod bisect;
pub mod calibrate;
pub mod children;
pub mod cli;
pub mod count;
pub mod engines;
pub mod error;
pub mod hash;
#[cfg(feature = "history")]
pub mod history;
pub mod machine;
pub mod measure;
pub mod model;
pub mod phases;
pub mod proposals;
pub mod replay;
pub mod report;
pub mod results;
pub mod schedule;
pub mod session;
pub mod shapes;
pub mod stats;
pub mod units;
pub mod versions;
pub mod workers;
