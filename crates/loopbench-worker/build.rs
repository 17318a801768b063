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
    // The compiler building this binary (cargo passes it as RUSTC), for the
    // machine fingerprint; empty if it cannot say.
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let version = std::process::Command::new(rustc)
        .arg("--version")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    println!("cargo:rustc-env=LOOPBENCH_RUSTC={version}");
    // This binary's RUSTFLAGS (cargo's encoding), which a relink of its own
    // engines in layout variants must repeat to find its library fresh.
    let flags = std::env::var("CARGO_ENCODED_RUSTFLAGS").unwrap_or_default();
    println!("cargo:rustc-env=LOOPBENCH_BUILT_RUSTFLAGS={flags}");
}

/// The highest locked version of `krate` (several majors may be locked).
fn locked_version(lock: &str, krate: &str) -> String {
    let mut best: Option<semver::Version> = None;
    let mut lines = lock.lines();
    while let Some(line) = lines.next() {
        if line.trim() == format!("name = \"{krate}\"") {
            let version = lines
                .next()
                .and_then(|l| l.trim().strip_prefix("version = \""))
                .and_then(|v| semver::Version::parse(v.trim_end_matches('"')).ok());
            if let Some(v) = version {
                if best.as_ref().is_none_or(|b| v > *b) {
                    best = Some(v);
                }
            }
        }
    }
    best.map_or_else(|| "unknown".into(), |v| v.to_string())
}
