//! Real applications as workloads: the recipes in `apps/`, turned into
//! shapes so that whole-app A/B uses the same scheduler, statistics,
//! counters and null control as the synthetic loops.
//!
//! An app is a module that, after loopbench's rewrite, exports
//! `run(n) -> i32` (n workload steps, returning a checksum) and `memory`,
//! and imports nothing:
//!
//! * C libraries (zlib, Lua) are built by their recipes behind a small C
//!   wrapper of ours that exports `run` itself.
//! * Prebuilt modules from npm (hash-wasm's SHA-256, zstddec) export their
//!   own API; a [`Driver`] injects a `run(n)` function that calls that API
//!   the way its JavaScript glue does, plus setters for the pointers the host
//!   obtains from the module's own allocator during the untimed init.
//! * Imports become stubs ([`stub`]); the rewrite ([`rewrite`]) keeps every
//!   original index, so the app's own code is copied byte for byte.
//!
//! Every rep is verified: the checksum must equal the recipe's expected
//! value, and for the prebuilt modules the output in memory is compared with
//! an independent reference (the SHA-256 digest, the bytes zstd was given).
//!
//! Artifacts are built by `scripts/apps/build.sh` into `target/apps/` (or
//! `$LOOPBENCH_APPS_OUT`); when one is missing, loopbench runs the recipe
//! and passes on its one-line error (which names what to install).

pub mod catalog;
pub mod error;
pub mod named;
pub mod prepare;
pub mod profile;
pub mod project;
pub mod rewrite;
pub mod shape;
pub mod stub;
pub mod warm;
pub mod workload;

pub use crate::shapes::recipe::zstd_checksum;
pub use catalog::{artifact, artifacts_dir, find, names, root, AppSpec, Driver, APPS, HASH_CHUNK};
pub use error::AppError;
pub use prepare::{prepare, Injector, Inputs, Prepared, GET_DST, SET_DST, SET_SRC};
pub use shape::AppShape;
pub use workload::{Invocation, Workload};
