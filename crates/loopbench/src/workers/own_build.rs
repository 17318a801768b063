//! Code-layout variants of the engines compiled into this binary: the
//! `loopbench-worker` crate (this library and nothing else) relinked with
//! lld's `--shuffle-sections=*=SEED`, so every engine's functions, wasm3's
//! C included (cc-rs compiles one section per function), land elsewhere.
//!
//! A compiled-in engine is otherwise one draw of the layout lottery: three
//! relinks of one loopbench source put wasm3/wasmi on locals_traffic at
//! 1.46, 2.07 and 1.78 (EPYC VM, issue 41). Relinking the worker crate
//! against the running binary's own compiled library is a link and nothing
//! else (0.4-0.5 s a variant on a 2-vCPU Xeon VM, measured): the library,
//! the engines and their dependencies are the rlibs cargo made for this
//! binary, found fresh in its target directory. So the build asks cargo
//! for the worker crate alone, with this binary's profile, features and
//! RUSTFLAGS, and stops at once if cargo would compile anything else
//! (the source was edited since, or this binary was built with other
//! features): that variant would not be this binary's engines.
//!
//! Variants are cached under [`workers_root`]`/own/BINARY_ID/` by seed,
//! each with the FNV-1a hash it had when built, checked before reuse.

use super::cache::{source_dir, workers_root};
use super::error::WorkerError;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// The workspace member that is relinked.
pub const CRATE: &str = "loopbench-worker";

/// The variants made for a session: binaries by variant index, their seeds.
#[derive(Clone, Debug)]
pub struct OwnVariants {
    pub bins: Vec<PathBuf>,
    pub seeds: Vec<u64>,
    /// Wall time to build or find them all.
    pub seconds: f64,
    /// Where they are cached (one directory per host binary).
    pub dir: PathBuf,
}

/// Why variants of this binary cannot be made, in one line.
fn cannot(why: impl Into<String>) -> WorkerError {
    WorkerError::Relink(why.into())
}

/// How this binary was built, read off where it is and what it holds.
#[derive(Clone, Debug, PartialEq, Eq)]
struct HostBuild {
    /// The cargo target directory holding this binary.
    target: PathBuf,
    /// cargo's profile arguments (`--release`, `--profile NAME`).
    profile: Vec<String>,
}

/// The target directory and profile of the cargo build that made `exe`
/// (`TARGET/PROFILE/loopbench`, or `TARGET/PROFILE/deps/NAME` for a test
/// harness); `None` when it is not in one (installed, copied).
fn host_build(exe: &Path) -> Option<HostBuild> {
    let mut dir = exe.parent()?;
    if dir.file_name()? == "deps" {
        dir = dir.parent()?;
    }
    let target = dir.parent()?;
    if !target.join("CACHEDIR.TAG").is_file() {
        return None;
    }
    let profile = match dir.file_name()?.to_str()? {
        "release" => vec!["--release".to_string()],
        "debug" => vec!["--profile".into(), "dev".into()],
        other => vec!["--profile".into(), other.to_string()],
    };
    Some(HostBuild {
        target: target.to_path_buf(),
        profile,
    })
}

/// This binary's cargo features that the worker crate must turn on, so
/// that cargo finds this binary's library fresh. `default` is one of them:
/// cargo hashes the feature list, named defaults included.
fn features() -> Vec<&'static str> {
    [
        ("loopbench/default", cfg!(feature = "default")),
        ("loopbench/history", cfg!(feature = "history")),
        ("loopbench/tinywasm", cfg!(feature = "tinywasm")),
        ("loopbench/wasm3", cfg!(feature = "wasm3")),
        ("loopbench/wasmtime", cfg!(feature = "wasmtime")),
        ("loopbench/wasmer", cfg!(feature = "wasmer")),
    ]
    .into_iter()
    .filter_map(|(f, on)| on.then_some(f))
    .collect()
}

/// The file a variant's hash is kept in.
fn hash_file(bin: &Path) -> PathBuf {
    bin.with_extension("fnv1a")
}

/// A file's FNV-1a hash, hex.
fn hash_of(path: &Path) -> Result<String, WorkerError> {
    let bytes = std::fs::read(path).map_err(|e| WorkerError::io(path, e))?;
    Ok(format!("{:016x}", crate::hash::fnv1a(&[&bytes])))
}

/// Whether the cached variant `bin` is there and unchanged since it was
/// built; a changed one is said in one line (and then rebuilt).
fn cached(bin: &Path) -> bool {
    let Ok(recorded) = std::fs::read_to_string(hash_file(bin)) else {
        return false;
    };
    match hash_of(bin) {
        Ok(h) if h == recorded.trim() => true,
        Ok(_) => {
            crate::diag!(
                "cached layout variant {} changed since it was built (hash differs): relinking it",
                bin.display()
            );
            false
        }
        Err(_) => false,
    }
}

/// Make (or find) `count` variants of this binary's engines for a
/// session seeded `session_seed` ([`super::layout::seed`]).
pub fn ensure(count: usize, session_seed: u64) -> Result<OwnVariants, WorkerError> {
    let started = Instant::now();
    let exe =
        std::env::current_exe().map_err(|e| WorkerError::CurrentExe(std::sync::Arc::new(e)))?;
    let dir = workers_root()
        .join("own")
        .join(crate::versions::binary_id());
    std::fs::create_dir_all(&dir).map_err(|e| WorkerError::io(&dir, e))?;
    // One session fills this cache at a time.
    let _cache = exclusive(&dir.join(".lock"))?;
    let seeds: Vec<u64> = (0..count)
        .map(|i| super::layout::seed(session_seed, i))
        .collect();
    let bins: Vec<PathBuf> = seeds
        .iter()
        .map(|s| dir.join(format!("{CRATE}-{s}")))
        .collect();
    let missing: Vec<usize> = (0..count).filter(|&i| !cached(&bins[i])).collect();
    if !missing.is_empty() {
        let host = host_build(&exe).ok_or_else(|| {
            cannot(format!(
                "{} is not in a cargo target directory, so there is nothing to relink it from",
                exe.display()
            ))
        })?;
        let workspace = source_dir().join("../..");
        if !workspace
            .join("crates")
            .join(CRATE)
            .join("Cargo.toml")
            .is_file()
        {
            return Err(cannot(format!(
                "loopbench's workspace is not at {} (no crates/{CRATE})",
                workspace.display()
            )));
        }
        // Cargo's output path is shared by every relink from this target
        // directory, whichever cache asked for it: a link and its copy out
        // belong together.
        let _target = exclusive(&host.target.join(".loopbench-relink.lock"))?;
        crate::diag!(
            "relinking this binary's engines in {} code-layout variants (about 0.5 s each, cached for later sessions)",
            missing.len()
        );
        let bar = relink_bar(missing.len());
        for &i in &missing {
            relink(&host, &workspace, seeds[i], &bins[i])?;
            bar.inc(1);
        }
        bar.finish_and_clear();
        crate::diag!(
            "relinked {} variants in {:.1} s",
            missing.len(),
            started.elapsed().as_secs_f64()
        );
    }
    Ok(OwnVariants {
        bins,
        seeds,
        seconds: started.elapsed().as_secs_f64(),
        dir,
    })
}

/// On a terminal, variant i of N with the time left; hidden otherwise.
fn relink_bar(len: usize) -> indicatif::ProgressBar {
    use std::io::IsTerminal;
    if !std::io::stderr().is_terminal() {
        return indicatif::ProgressBar::hidden();
    }
    let bar = indicatif::ProgressBar::new(len as u64);
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "{pos} of {len} variants relinked [{bar:20}] {eta} left",
        )
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    bar
}

/// An exclusive lock on `path` (created if need be), held until dropped.
fn exclusive(path: &Path) -> Result<std::fs::File, WorkerError> {
    let file = std::fs::File::create(path).map_err(|e| WorkerError::io(path, e))?;
    file.lock().map_err(|e| WorkerError::io(path, e))?;
    Ok(file)
}

/// Link the worker crate with function order `seed` and keep it at `out`.
fn relink(host: &HostBuild, workspace: &Path, seed: u64, out: &Path) -> Result<(), WorkerError> {
    let started = Instant::now();
    let mut cmd = super::cargo::cargo();
    cmd.current_dir(workspace)
        .args(["rustc", "--locked", "--offline"])
        .args(&host.profile)
        .args(["-p", CRATE, "--bin", CRATE, "--no-default-features"])
        .args(["--features", &features().join(",")])
        .env("CARGO_TARGET_DIR", &host.target);
    // This binary's own flags, so cargo finds its library fresh.
    let flags = env!("LOOPBENCH_BUILT_RUSTFLAGS");
    if !flags.is_empty() {
        cmd.env("CARGO_ENCODED_RUSTFLAGS", flags);
    }
    let link_args = [
        "-C".to_string(),
        format!("link-arg=-Wl,--shuffle-sections=*={seed}"),
        // The symbol table stays (layout::differ reads it); line tables go.
        "-C".to_string(),
        "link-arg=-Wl,--strip-debug".to_string(),
    ];
    let label = format!("variant {seed}");
    super::cargo::run(
        cmd,
        workspace,
        &label,
        "this binary's engines, relinked",
        started,
        Some((CRATE, &link_args)),
        None,
    )
    .map_err(|e| match e {
        WorkerError::Build(why) => cannot(why),
        other => other,
    })?;
    let built = host.target.join(profile_dir(&host.profile)).join(CRATE);
    if !built.is_file() {
        return Err(WorkerError::NoBinary { bin: built });
    }
    keep(&built, out)
}

/// The directory cargo writes a profile's binaries to.
fn profile_dir(profile: &[String]) -> &str {
    match profile {
        [flag] if flag == "--release" => "release",
        [_, name] if name == "dev" => "debug",
        [_, name] => name,
        _ => "release",
    }
}

/// Copy `built` to `out` atomically, its hash beside it.
fn keep(built: &Path, out: &Path) -> Result<(), WorkerError> {
    let dir = out.parent().ok_or(WorkerError::NoParent)?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(|e| WorkerError::io(dir, e))?;
    let bytes = std::fs::read(built).map_err(|e| WorkerError::io(built, e))?;
    tmp.write_all(&bytes).map_err(|e| WorkerError::io(out, e))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o755))
            .map_err(|e| WorkerError::io(out, e))?;
    }
    let hash = format!("{:016x}", crate::hash::fnv1a(&[&bytes]));
    tmp.persist(out)
        .map_err(|e| WorkerError::io(out, e.error))?;
    std::fs::write(hash_file(out), hash).map_err(|e| WorkerError::io(out, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_host_build_is_read_off_the_binary_path() {
        let t = tempfile::tempdir().unwrap();
        std::fs::write(t.path().join("CACHEDIR.TAG"), "").unwrap();
        let at = |rel: &str| host_build(&t.path().join(rel));
        let release = at("release/loopbench").unwrap();
        assert_eq!(release.target, t.path());
        assert_eq!(release.profile, ["--release"]);
        assert_eq!(
            at("release/deps/loopbench-0123").unwrap().profile,
            ["--release"]
        );
        assert_eq!(at("debug/loopbench").unwrap().profile, ["--profile", "dev"]);
        assert_eq!(
            at("bench/loopbench").unwrap().profile,
            ["--profile", "bench"]
        );
        for p in [
            &release.profile[..],
            &["--profile".into(), "dev".into()],
            &["--profile".into(), "bench".into()],
        ] {
            assert!(
                ["release", "debug", "bench"].contains(&profile_dir(p)),
                "{p:?}"
            );
        }
        // Not a target directory: an installed binary.
        assert_eq!(host_build(Path::new("/usr/local/bin/loopbench")), None);
    }

    #[test]
    fn a_changed_variant_is_not_trusted() {
        let t = tempfile::tempdir().unwrap();
        let built = t.path().join("built");
        std::fs::write(&built, b"\x7fELF variant").unwrap();
        let out = t.path().join("loopbench-worker-7");
        keep(&built, &out).unwrap();
        assert!(cached(&out));
        // Truncated in the cache: rebuilt, not run.
        std::fs::write(&out, b"\x7fELF").unwrap();
        assert!(!cached(&out));
        std::fs::remove_file(hash_file(&out)).unwrap();
        assert!(!cached(&out), "no recorded hash, no trust");
    }

    #[test]
    fn the_features_are_this_binarys() {
        let f = features();
        assert_eq!(f.contains(&"loopbench/wasm3"), cfg!(feature = "wasm3"));
        assert_eq!(f.contains(&"loopbench/history"), cfg!(feature = "history"));
    }
}
