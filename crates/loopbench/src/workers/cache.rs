//! Where worker builds live: the cache root (`$LOOPBENCH_CACHE_DIR`, else
//! the user's cache directory), the git worktrees under it, and loopbench's
//! own source, which every worker links. Paths only: the project, the git
//! checkout and the cargo runs all ask here, so none of them asks another.

use super::error::WorkerError;
use std::path::{Path, PathBuf};

/// Overrides the worker cache directory (tests point it at a scratch
/// directory so they never write into the user's cache).
pub const CACHE_DIR_VAR: &str = "LOOPBENCH_CACHE_DIR";

/// The directory that holds every worker project: `$LOOPBENCH_CACHE_DIR`,
/// else the user's cache directory (`$XDG_CACHE_HOME`, else `~/.cache`, on
/// Linux) plus `loopbench/workers`. Never a path from the build machine.
pub fn workers_root() -> PathBuf {
    cache_root(
        std::env::var_os(CACHE_DIR_VAR).map(PathBuf::from),
        dirs::cache_dir(),
    )
}

/// [`workers_root`] from its inputs: the override, the user's cache
/// directory. With neither (no home directory), the system's temporary
/// directory.
fn cache_root(overridden: Option<PathBuf>, user_cache: Option<PathBuf>) -> PathBuf {
    match overridden.filter(|d| !d.as_os_str().is_empty()) {
        Some(dir) => dir,
        None => user_cache
            .unwrap_or_else(std::env::temp_dir)
            .join("loopbench")
            .join("workers"),
    }
}

/// Overrides where the timed path's source is (the `crates/loopbench-worker`
/// directory).
pub const SOURCE_VAR: &str = "LOOPBENCH_SOURCE";

/// The timed path's source directory (`loopbench-worker`), which workers
/// depend on by path: the checkout this binary was built from (the one
/// build-time path: a worker must link the same timed path), or
/// `$LOOPBENCH_SOURCE`.
pub fn source_dir() -> PathBuf {
    std::env::var_os(SOURCE_VAR)
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(loopbench_worker::SOURCE_DIR))
}

/// [`source_dir`], or a one-line error when it no longer holds the crate.
pub fn check_source() -> Result<PathBuf, WorkerError> {
    let dir = source_dir();
    if dir.join("Cargo.toml").is_file() && dir.join("src/lib.rs").is_file() {
        Ok(dir)
    } else {
        Err(WorkerError::SourceGone {
            dir,
            var: SOURCE_VAR,
        })
    }
}

/// The file a built worker's hash is kept in, beside it.
pub fn hash_file(bin: &Path) -> PathBuf {
    bin.with_extension("fnv1a")
}

/// A file's FNV-1a hash, hex.
pub fn hash_of(path: &Path) -> Result<String, WorkerError> {
    let bytes = std::fs::read(path).map_err(|e| WorkerError::io(path, e))?;
    Ok(format!("{:016x}", crate::hash::fnv1a(&[&bytes])))
}

/// Record `bin`'s hash as the one it was built with.
pub fn record_hash(bin: &Path) -> Result<(), WorkerError> {
    let hash = hash_of(bin)?;
    let path = hash_file(bin);
    std::fs::write(&path, hash).map_err(|e| WorkerError::io(&path, e))
}

/// Whether the cached `bin` is unchanged since its hash was recorded:
/// `Some(true)`; `Some(false)` when it changed (truncated, overwritten,
/// gone), said in one line naming `what` it is and what happens `next`;
/// `None` when no hash was recorded.
pub fn verify(bin: &Path, what: &str, next: &str) -> Option<bool> {
    let recorded = std::fs::read_to_string(hash_file(bin)).ok()?;
    let same = hash_of(bin).is_ok_and(|h| h == recorded.trim());
    if !same {
        crate::diag!(
            "{what} {} changed since it was built (hash differs): {next}",
            bin.display()
        );
    }
    Some(same)
}

/// The bytes an unprivileged writer may still use on the disk that holds
/// `path` (or its nearest existing ancestor); `None` if it cannot say.
#[cfg(target_os = "linux")]
pub fn free_bytes(path: &Path) -> Option<u64> {
    let mut at = path;
    while !at.exists() {
        at = at.parent()?;
    }
    let c = std::ffi::CString::new(at.as_os_str().as_encoded_bytes()).ok()?;
    // SAFETY: `c` is a valid C string and `stat` a zeroed out-parameter
    // statvfs fills in.
    let mut stat: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statvfs(c.as_ptr(), &mut stat) } != 0 {
        return None;
    }
    Some((stat.f_bavail as u64).saturating_mul(stat.f_frsize as u64))
}

#[cfg(not(target_os = "linux"))]
pub fn free_bytes(_: &Path) -> Option<u64> {
    None
}

/// Refuse `what` before it starts when the disk of the worker cache has
/// less than `need` bytes free (a full disk otherwise ends in a linker's
/// crash report half way through).
pub fn check_space(what: &str, need: u64) -> Result<(), WorkerError> {
    let root = workers_root();
    match free_bytes(&root) {
        Some(free) if free < need => Err(WorkerError::NoSpace {
            what: what.to_string(),
            root,
            free,
            need,
        }),
        _ => Ok(()),
    }
}

/// The cache root, refused in one line when something that is not a
/// directory holds its place or an ancestor's (a file, a device): every
/// arm would otherwise fail on its first rep with "Not a directory", and
/// `loopbench cache` would report it empty.
pub fn check_root() -> Result<PathBuf, WorkerError> {
    let root = workers_root();
    check_dir(&root)?;
    Ok(root)
}

/// [`check_root`] of `root`: the nearest part of it that exists is a
/// directory (what does not exist yet is made when needed).
fn check_dir(root: &Path) -> Result<(), WorkerError> {
    use std::io::ErrorKind::{NotADirectory, NotFound};
    let mut at = root;
    loop {
        match std::fs::metadata(at) {
            Ok(m) if m.is_dir() => return Ok(()),
            Ok(_) => {
                return Err(WorkerError::CacheNotADirectory {
                    root: root.to_path_buf(),
                    blocker: at.to_path_buf(),
                    var: CACHE_DIR_VAR,
                })
            }
            Err(e) if matches!(e.kind(), NotFound | NotADirectory) => match at.parent() {
                Some(up) if !up.as_os_str().is_empty() => at = up,
                _ => return Ok(()),
            },
            Err(e) => return Err(WorkerError::io(at, e)),
        }
    }
}

/// Where `commit`'s worktree of a git arm lives.
pub fn worktree_dir(commit: &str) -> PathBuf {
    workers_root().join("git").join(commit)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cache_root_is_the_override_else_the_users_cache() {
        let user = Some(PathBuf::from("/home/u/.cache"));
        assert_eq!(
            cache_root(Some("/scratch".into()), user.clone()),
            PathBuf::from("/scratch")
        );
        assert_eq!(
            cache_root(None, user.clone()),
            PathBuf::from("/home/u/.cache/loopbench/workers")
        );
        assert_eq!(
            cache_root(Some("".into()), user),
            PathBuf::from("/home/u/.cache/loopbench/workers"),
            "an empty override is no override"
        );
        assert!(cache_root(None, None).ends_with("loopbench/workers"));
    }

    #[test]
    fn a_cache_root_under_a_file_is_refused_and_one_not_made_yet_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("file");
        std::fs::write(&file, "").unwrap();
        let check = |root: &Path| check_dir(root).map_err(|e| e.to_string());
        assert_eq!(check(&dir.path().join("a/b")), Ok(()));
        for root in [file.clone(), file.join("workers")] {
            let e = check(&root).unwrap_err();
            assert!(
                e.contains(&format!("{} is not a directory", file.display())),
                "{e}"
            );
        }
    }
}
