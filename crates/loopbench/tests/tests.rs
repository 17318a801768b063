//! loopbench's integration tests, one binary with a module per subject.
//!
//! One binary links the library and its dependencies once instead of twelve
//! times. Run one subject with its module path as the filter, e.g.
//! `cargo test --release -p loopbench --test integration exporters::`.
//! Snapshots are named after the module path (`integration__exporters__*`).

/// Real applications: recipes build, run and verify; profiles add up; warm mode.
mod apps;
/// Build arms: two registry versions of wasmi in worker processes.
mod builds;
/// The worker cache: `loopbench cache` lists and prunes, a session keeps
/// it under its limit, a full disk is one line.
mod cache;
/// `loopbench calibrate`: effect arms do exactly their work; the command end to end.
mod calibrate;
/// The binary's behaviour, end to end: counters, errors, JSON, reliability, reports.
mod cli;
/// The counting run is exact for every shape.
mod counts;
/// Duet schedules end to end: pairs released together on two cores, kept together.
mod duet;
/// Engine defects the apps found, each reduced to a small module.
mod engine_defects;
/// Layout epochs end to end: fresh workers per epoch, a dying worker, the stop rule.
mod epochs;
/// Every exporter on a fixed results value (insta snapshots), and the export manager.
mod exporters;
/// Arbitrary user input and misbehaving workers: never a panic.
mod fuzz;
/// History, trends and the fleet, on SQLite files and a private PostgreSQL server.
#[cfg(feature = "history")]
mod history;
/// Compiled-in engines in relinked layout variants, and the one-layout fallback.
mod layouts;
/// Scheduling, statistics and verdicts through the mock engine, exactly.
mod mock;
/// The optional engine adapters (features `wasmtime`, `wasmer`).
#[cfg(any(feature = "wasmtime", feature = "wasmer"))]
mod optional_engines;
/// `loopbench replay`: known effects injected into recorded noise, coverage and determinism.
mod replay;
/// Every built-in shape verifies on every engine, and fails with its body disabled.
mod shapes;
/// Your own workload: WASI commands run, verified and refused in one line.
mod workload;
