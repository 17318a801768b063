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
//! | reading what a command is given: one opener, no device, a cap | [`input`] |
//! | a lock on a sidecar file holding its owner's pid (outputs, bisects) | [`pid_lock`] |
//! | the one stable hash (cache keys, module identity, seeds) | [`hash`] |
//! | error text from engines and parsers as one line | [`text`] |
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
//! let table = loopbench::report::table::Table::default().render(&Document::Session(session)).unwrap();
//! print!("{}", String::from_utf8_lossy(&table));
//! ```

// The timed path is its own crate (worker builds link it and nothing
// else); its modules are this library's, under the same names.
pub use loopbench_worker::{
    arm, children, diag, diag_part, engines, hash, measure, phases, proposals, shapes, text, units,
    versions, wasi,
};

pub mod apps;
pub mod bisect;
pub mod calibrate;
pub mod cli;
pub mod count;
pub mod error;
#[cfg(feature = "history")]
pub mod history;
pub mod input;
pub mod machine;
pub mod model;
pub mod pid_lock;
pub mod replay;
pub mod report;
pub mod results;
pub mod schedule;
pub mod session;
pub mod stats;
pub mod workers;
