//! Code-layout variants of the engines compiled into this binary: the
//! `loopbench-relink` crate (this library and nothing else) relinked with
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

use super::cache::{hash_file, source_dir, verify, workers_root};
use super::error::WorkerError;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// The workspace member that is relinked.
pub const CRATE: &str = "loopbench-relink";

/// The variants made for a session: binaries by variant index, their seeds.
#[derive(Debug)]
pub struct OwnVariants {
    pub bins: Vec<PathBuf>,
    pub seeds: Vec<u64>,
    /// Wall time to build or find them all.
    pub seconds: f64,
    /// Where they are cached (one directory per host binary; in use by
    /// this process, so that no other session prunes it, see [`prune`]).
    pub dir: PathBuf,
}

/// The newest directories of other loopbench builds' variants kept beside
/// this build's (a user switching between two checkouts relinks nothing);
/// older ones, about 100-450 MB each, are removed once no session uses
/// them.
const KEEP_OTHER_BUILDS: usize = 1;

// The file whose shared locks mark a variants directory in use, and whose
// modification time says when a session last used it.
use super::inventory::IN_USE;

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

/// Whether the cached variant `bin` is there and unchanged since it was
/// built; a changed one is said in one line (and then relinked).
fn cached(bin: &Path) -> bool {
    verify(bin, "cached layout variant", "relinking it") == Some(true)
}

/// Relinks in the pool a machine keeps per loopbench build, at most:
/// sessions draw their variants from it (a fresh one per epoch while they
/// last), so repeated sessions sample layouts rather than rerun one draw.
/// A relink takes 0.4-0.6 s.
pub const POOL: usize = 64;

/// The disk the pool may take: fewer than [`POOL`] variants when they are
/// large (13 MB each with the default engines, measured; several times
/// that with wasmtime and wasmer in).
pub const POOL_BYTES: u64 = 1 << 30;

/// How many variants the pool holds: [`POOL`], or fewer so that they fit
/// in [`POOL_BYTES`] at the size of the largest one linked so far (at
/// least 8, the default `--layout-builds`).
fn pool_len(dir: &Path) -> usize {
    let largest = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_str()
                .and_then(|n| n.strip_prefix(&format!("{CRATE}-")))
                .is_some_and(|seed| seed.parse::<u64>().is_ok())
        })
        .filter_map(|e| e.metadata().ok().map(|m| m.len()))
        .max();
    match largest {
        Some(size) if size > 0 => ((POOL_BYTES / size) as usize).clamp(8, POOL),
        _ => POOL,
    }
}

/// The directory of this binary's variants.
fn variants_dir() -> PathBuf {
    workers_root()
        .join("own")
        .join(crate::versions::binary_id())
}

/// The link seed of each of the first `len` variants of this machine's
/// pool ([`super::layout::seed`] of `pool_seed`, the session's variant
/// seed).
pub fn pool_seeds(pool_seed: u64, len: usize) -> Vec<u64> {
    (0..len)
        .map(|i| super::layout::seed(pool_seed, i))
        .collect()
}

/// The order in which a session seeded `session_seed` takes the pool's
/// variants: those already linked first, then the rest, each part in a
/// random order of the session's own. The linked ones are themselves the
/// random draws of earlier sessions, so a session's variants are a random
/// sample of the pool either way, and only the first sessions on a
/// machine pay for relinks.
pub fn draw(pool_seed: u64, session_seed: u64) -> Vec<u64> {
    draw_in(&variants_dir(), pool_seed, session_seed)
}

/// [`draw`] from the variants linked in `dir`.
fn draw_in(dir: &Path, pool_seed: u64, session_seed: u64) -> Vec<u64> {
    use rand::seq::SliceRandom;
    use rand::SeedableRng;
    let linked = |s: &u64| {
        let bin = dir.join(format!("{CRATE}-{s}"));
        bin.is_file() && hash_file(&bin).is_file()
    };
    let (mut have, mut rest): (Vec<u64>, Vec<u64>) =
        pool_seeds(pool_seed, POOL).into_iter().partition(linked);
    let mut rng = rand::rngs::StdRng::seed_from_u64(session_seed ^ 0x706f_6f6c);
    have.shuffle(&mut rng);
    rest.shuffle(&mut rng);
    // What is linked stays in the pool; it grows to its bound at most.
    rest.truncate(pool_len(dir).saturating_sub(have.len()));
    have.extend(rest);
    have
}

/// Make (or find) the variants of this binary's engines linked with
/// `seeds`; `announce`: say so in two lines when any is linked (a session
/// growing its pool between epochs links quietly, under its progress bar).
pub fn ensure(seeds: &[u64], announce: bool) -> Result<OwnVariants, WorkerError> {
    let started = Instant::now();
    let exe =
        std::env::current_exe().map_err(|e| WorkerError::CurrentExe(std::sync::Arc::new(e)))?;
    let dir = variants_dir();
    std::fs::create_dir_all(&dir).map_err(|e| WorkerError::io(&dir, e))?;
    super::inventory::hold(&dir);
    // One session fills this cache at a time.
    let _cache = exclusive(&dir.join(".lock"))?;
    if let Some(root) = dir.parent() {
        prune(root, &dir);
    }
    let count = seeds.len();
    let seeds = seeds.to_vec();
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
        // Each variant is about a third of this binary, kept in the cache
        // after cargo links it in the target directory.
        let each = std::fs::metadata(&exe).map_or(64 << 20, |m| m.len() / 3);
        super::cache::check_space(
            &format!("relinking {} layout variants", missing.len()),
            each * missing.len() as u64,
        )?;
        // Cargo's output path is shared by every relink from this target
        // directory, whichever cache asked for it: a link and its copy out
        // belong together.
        let _target = exclusive(&host.target.join(".loopbench-relink.lock"))?;
        if announce {
            crate::diag!(
                "relinking this binary's engines in {} code-layout variants (about 0.5 s each, cached for later sessions)",
                missing.len()
            );
        }
        let bar = if announce {
            relink_bar(missing.len())
        } else {
            indicatif::ProgressBar::hidden()
        };
        for &i in &missing {
            relink(&host, &workspace, seeds[i], &bins[i])?;
            bar.inc(1);
        }
        bar.finish_and_clear();
        if announce {
            crate::diag!(
                "relinked {} variants in {:.1} s",
                missing.len(),
                started.elapsed().as_secs_f64()
            );
        }
    }
    Ok(OwnVariants {
        bins,
        seeds,
        seconds: started.elapsed().as_secs_f64(),
        dir,
    })
}

/// Remove the variants of other loopbench builds under `root` but the
/// [`KEEP_OTHER_BUILDS`] most recently used and those a session holds,
/// and say so in one line. Best effort: what cannot be read or removed
/// stays.
fn prune(root: &Path, current: &Path) {
    let Ok(entries) = std::fs::read_dir(root) else {
        return;
    };
    let mut others: Vec<(std::time::SystemTime, PathBuf)> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_dir() && p != current)
        .map(|p| {
            let used = std::fs::metadata(p.join(IN_USE))
                .and_then(|m| m.modified())
                .unwrap_or(std::time::UNIX_EPOCH);
            (used, p)
        })
        .collect();
    others.sort_by_key(|(used, _)| std::cmp::Reverse(*used));
    let (mut removed, mut bytes) = (0, 0u64);
    for (_, dir) in others.into_iter().skip(KEEP_OTHER_BUILDS) {
        let Some(_lock) = super::inventory::take_unused(&[dir.join(IN_USE)]) else {
            continue; // a session runs from it
        };
        let size = super::inventory::bytes(&dir);
        if std::fs::remove_dir_all(&dir).is_ok() {
            removed += 1;
            bytes += size;
        }
    }
    if removed > 0 {
        crate::diag!(
            "removed the layout variants of {removed} older loopbench build{} ({}) from {}",
            if removed == 1 { "" } else { "s" },
            crate::units::format_bytes(bytes),
            root.display()
        );
    }
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
    let flags = crate::versions::BUILT_RUSTFLAGS;
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

    /// A variant linked in an earlier session stays in the draw, first,
    /// even when the pool's bound (read off a larger variant) is smaller
    /// than its place in the pool; the rest fill the pool to its bound.
    #[test]
    fn linked_variants_stay_in_the_draw_whatever_the_bound() {
        let dir = tempfile::tempdir().unwrap();
        let far = pool_seeds(7, POOL)[50];
        let bin = dir.path().join(format!("{CRATE}-{far}"));
        // 200 MB, sparse: a bound of 1 GiB / 200 MB, at least 8.
        std::fs::File::create(&bin)
            .unwrap()
            .set_len(200 << 20)
            .unwrap();
        std::fs::write(hash_file(&bin), "0").unwrap();
        assert_eq!(pool_len(dir.path()), 8);
        let order = draw_in(dir.path(), 7, 1);
        assert_eq!(order.len(), 8);
        assert_eq!(order[0], far, "{order:?}");
        let pool = pool_seeds(7, POOL);
        assert!(order.iter().all(|s| pool.contains(s)));
        // Another session seed, another order of the rest.
        assert_ne!(draw_in(dir.path(), 7, 2)[1..], order[1..]);
        // Nothing linked: the whole pool, in the session's order.
        let empty = tempfile::tempdir().unwrap();
        assert_eq!(draw_in(empty.path(), 7, 1).len(), POOL);
    }

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
        let out = t.path().join("loopbench-relink-7");
        keep(&built, &out).unwrap();
        assert!(cached(&out));
        // Truncated in the cache: rebuilt, not run.
        std::fs::write(&out, b"\x7fELF").unwrap();
        assert!(!cached(&out));
        std::fs::remove_file(hash_file(&out)).unwrap();
        assert!(!cached(&out), "no recorded hash, no trust");
    }

    #[test]
    fn older_builds_variants_are_pruned_unless_in_use_or_recent() {
        let root = tempfile::tempdir().unwrap();
        let at = |name: &str, age_s: u64| {
            let dir = root.path().join(name);
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join("loopbench-relink-1"), vec![0u8; 1000]).unwrap();
            let f = std::fs::File::create(dir.join(IN_USE)).unwrap();
            let when = std::time::SystemTime::now() - std::time::Duration::from_secs(age_s);
            f.set_modified(when).unwrap();
            dir
        };
        let current = at("current", 0);
        let recent = at("recent", 10);
        let old = at("old", 100);
        let older_in_use = at("older-in-use", 200);
        let oldest = at("oldest", 300);
        let held = std::fs::File::open(older_in_use.join(IN_USE)).unwrap();
        held.lock_shared().unwrap();
        prune(root.path(), &current);
        assert!(
            current.is_dir() && recent.is_dir(),
            "this build and the newest other stay"
        );
        assert!(older_in_use.is_dir(), "a session runs from it");
        assert!(!old.exists() && !oldest.exists());
        drop(held);
        prune(root.path(), &current);
        assert!(!older_in_use.exists() && recent.is_dir());
    }

    #[test]
    fn the_features_are_this_binarys() {
        let f = features();
        assert_eq!(f.contains(&"loopbench/wasm3"), cfg!(feature = "wasm3"));
        assert_eq!(f.contains(&"loopbench/history"), cfg!(feature = "history"));
    }
}
