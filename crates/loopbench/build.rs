//! Records the resolved versions of the engine crates (from the workspace's
//! Cargo.lock), so every result names exactly what it measured.

use std::path::PathBuf;

fn main() {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default());
    let lock = manifest.join("../../Cargo.lock");
    println!("cargo:rerun-if-changed={}", lock.display());
    let text = std::fs::read_to_string(&lock).unwrap_or_default();
    for (krate, var) in [
        ("wasmi", "LOOPBENCH_VERSION_WASMI"),
        ("tinywasm", "LOOPBENCH_VERSION_TINYWASM"),
        ("wasm3", "LOOPBENCH_VERSION_WASM3"),
        ("wasmtime", "LOOPBENCH_VERSION_WASMTIME"),
        ("wasmer", "LOOPBENCH_VERSION_WASMER"),
    ] {
        println!("cargo:rustc-env={var}={}", locked_version(&text, krate));
    }
    let profile = std::env::var("PROFILE").unwrap_or_default();
    let opt = std::env::var("OPT_LEVEL").unwrap_or_default();
    println!("cargo:rustc-env=LOOPBENCH_BUILD_PROFILE={profile} (opt-level {opt})");
}

/// The highest locked version of `krate` (several majors may be locked).
fn locked_version(lock: &str, krate: &str) -> String {
    let mut best: Option<String> = None;
    let mut lines = lock.lines();
    while let Some(line) = lines.next() {
        if line.trim() == format!("name = \"{krate}\"") {
            if let Some(v) = lines
                .next()
                .and_then(|l| l.trim().strip_prefix("version = \""))
            {
                let v = v.trim_end_matches('"').to_string();
                if best.as_ref().is_none_or(|b| semver_key(&v) > semver_key(b)) {
                    best = Some(v);
                }
            }
        }
    }
    best.unwrap_or_else(|| "unknown".into())
}

fn semver_key(v: &str) -> Vec<u64> {
    v.split(['.', '-'])
        .map(|p| p.parse().unwrap_or(0))
        .collect()
}
