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
/// The compiler that built this binary (`rustc --version`), empty if it
/// could not say: part of the machine's fingerprint.
pub const RUSTC: &str = env!("LOOPBENCH_RUSTC");
/// This binary's RUSTFLAGS (cargo's encoding), which a relink of its own
/// engines in layout variants must repeat to find its library fresh.
pub const BUILT_RUSTFLAGS: &str = env!("LOOPBENCH_BUILT_RUSTFLAGS");

/// This binary's build id: 12 hex digits of its GNU build id (the linker's
/// hash of the code as laid out), else of a hash of the whole file.
///
/// A built-in engine is compiled into loopbench, so a rebuild of loopbench
/// is a new build of the engine: on a 2-vCPU EPYC VM the same tinywasm
/// 0.10.0 in two loopbench binaries that differed only in report code ran
/// locals_traffic at 5.00x and 3.6x wasm3. Its identity in results and
/// history therefore names the binary, and a worker build names the
/// loopbench that built it (its library is linked into every worker).
pub fn binary_id() -> &'static str {
    static ID: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    ID.get_or_init(|| {
        std::env::current_exe()
            .ok()
            .and_then(|exe| build_id_of(&exe))
            .unwrap_or_else(|| "unknown".to_string())
    })
}

/// [`binary_id`] of the executable at `path`; `None` when it cannot be read.
pub fn build_id_of(path: &std::path::Path) -> Option<String> {
    use object::Object;
    let file = std::fs::File::open(path).ok()?;
    let cache = object::ReadCache::new(file);
    let noted = object::File::parse(&cache)
        .ok()
        .and_then(|f| f.build_id().ok().flatten().map(<[u8]>::to_vec));
    let bytes = match noted {
        Some(id) if !id.is_empty() => id,
        // No note (another linker): the file itself.
        _ => crate::hash::fnv1a(&[&std::fs::read(path).ok()?])
            .to_be_bytes()
            .to_vec(),
    };
    Some(bytes.iter().take(6).map(|b| format!("{b:02x}")).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_binary_is_named_by_its_build_id_else_its_bytes() {
        let id = binary_id();
        assert_eq!(id.len(), 12, "{id}");
        assert!(id.bytes().all(|b| b.is_ascii_hexdigit()), "{id}");
        assert_eq!(binary_id(), id);
        // Not an executable: a hash of the file, which follows its bytes.
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("f");
        std::fs::write(&f, "one").unwrap();
        let one = build_id_of(&f).unwrap();
        std::fs::write(&f, "two").unwrap();
        assert_ne!(build_id_of(&f).unwrap(), one);
        assert_eq!(build_id_of(&dir.path().join("missing")), None);
    }
}
