//! Engine crate versions and the build profile, recorded by build.rs from
//! Cargo.lock so results name exactly what ran.

pub const WASMI: &str = env!("LOOPBENCH_VERSION_WASMI");
pub const TINYWASM: &str = env!("LOOPBENCH_VERSION_TINYWASM");
pub const WASM3: &str = env!("LOOPBENCH_VERSION_WASM3");
pub const WASMTIME: &str = env!("LOOPBENCH_VERSION_WASMTIME");
pub const WASMER: &str = env!("LOOPBENCH_VERSION_WASMER");
/// Cargo profile and optimisation level of this binary. Interpreter speed
/// depends on it (wasmi 0.31 moved by a quarter with fat LTO), so every
/// result states it.
pub const BUILD_PROFILE: &str = env!("LOOPBENCH_BUILD_PROFILE");
