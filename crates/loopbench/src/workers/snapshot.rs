//! The timed path's source as a worker build sees it: a snapshot of the
//! `loopbench-worker` crate and the two crates it depends on by path,
//! copied into the worker cache under the hash of their files and built
//! from there, never from the live tree (an edit during a session cannot
//! break or change a build, and a rebuild of loopbench that leaves these
//! files alone finds every cached worker build as it was).
//!
//! `<cache>/source/<hash>/` holds `crates/{loopbench-worker,loopbench-count,
//! loopbench-probe}` (their manifests, build scripts and `src/`), the
//! workspace's Cargo.lock (the build script reads engine versions from it)
//! and a root manifest naming just those three crates, whose package
//! settings the crates inherit.

use super::cache::{check_source, workers_root};
use super::error::WorkerError;
use std::path::{Path, PathBuf};

/// The crates a worker links by path, relative to the workspace root.
const CRATES: [&str; 3] = [
    "crates/loopbench-worker",
    "crates/loopbench-count",
    "crates/loopbench-probe",
];

/// A snapshot of the timed path's source.
#[derive(Clone, Debug)]
pub struct Snapshot {
    /// 16 hex digits: the hash of every file in it (paths and contents).
    pub hash: String,
    /// Its `crates/loopbench-worker` directory, which worker projects
    /// depend on.
    pub worker_crate: PathBuf,
}

/// The files of the snapshot from the workspace at `root`, by path relative
/// to it, in a stable order: each crate's manifest, build script and
/// `src/`, the lock file and the root manifest (members rewritten).
fn files(root: &Path) -> Result<Vec<(PathBuf, Vec<u8>)>, WorkerError> {
    let mut out = Vec::new();
    for krate in CRATES {
        let dir = root.join(krate);
        for name in ["Cargo.toml", "build.rs"] {
            let path = dir.join(name);
            if path.is_file() {
                out.push((Path::new(krate).join(name), read(&path)?));
            }
        }
        walk(root, &dir.join("src"), &mut out)?;
    }
    out.push(("Cargo.lock".into(), read(&root.join("Cargo.lock"))?));
    let manifest = String::from_utf8_lossy(&read(&root.join("Cargo.toml"))?).to_string();
    out.push(("Cargo.toml".into(), root_manifest(&manifest).into_bytes()));
    out.sort();
    Ok(out)
}

/// The workspace's root manifest with its members narrowed to [`CRATES`]
/// (the rest are not in the snapshot), everything else as it is.
fn root_manifest(text: &str) -> String {
    let members = CRATES
        .iter()
        .map(|c| format!("\"{c}\""))
        .collect::<Vec<_>>()
        .join(", ");
    text.lines()
        .map(|l| {
            if l.trim_start().starts_with("members") {
                format!("members = [{members}]")
            } else {
                l.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
        + "\n"
}

fn read(path: &Path) -> Result<Vec<u8>, WorkerError> {
    std::fs::read(path).map_err(|e| WorkerError::io(path, e))
}

/// Every regular file under `dir`, by path relative to `root`.
fn walk(root: &Path, dir: &Path, out: &mut Vec<(PathBuf, Vec<u8>)>) -> Result<(), WorkerError> {
    let entries = std::fs::read_dir(dir).map_err(|e| WorkerError::io(dir, e))?;
    for entry in entries {
        let path = entry.map_err(|e| WorkerError::io(dir, e))?.path();
        let kind = std::fs::symlink_metadata(&path).map_err(|e| WorkerError::io(&path, e))?;
        if kind.is_dir() {
            walk(root, &path, out)?;
        } else if kind.is_file() {
            let rel = path.strip_prefix(root).unwrap_or(&path).to_path_buf();
            out.push((rel, read(&path)?));
        }
    }
    Ok(())
}

/// The hash of `files`: paths and contents, each length-prefixed so no
/// two different sets of files hash alike by concatenation.
fn hash(files: &[(PathBuf, Vec<u8>)]) -> String {
    let mut parts: Vec<Vec<u8>> = Vec::with_capacity(files.len() * 2);
    for (path, bytes) in files {
        let p = path.to_string_lossy();
        parts.push(format!("{}:{}:{}", p.len(), p, bytes.len()).into_bytes());
        parts.push(bytes.clone());
    }
    let refs: Vec<&[u8]> = parts.iter().map(Vec::as_slice).collect();
    format!("{:016x}", crate::hash::fnv1a(&refs))
}

/// The snapshot of the timed path's current source, made once per
/// process (a session's builds all use the source as it was when the
/// first asked) and kept in the cache for every later session with the
/// same files.
pub fn current() -> Result<Snapshot, WorkerError> {
    static MADE: std::sync::OnceLock<Result<Snapshot, WorkerError>> = std::sync::OnceLock::new();
    MADE.get_or_init(|| {
        make(
            &check_source()?.join("../.."),
            &workers_root().join("source"),
        )
    })
    .clone()
}

/// Snapshot the workspace at `root` into `<under>/<hash>/` unless that is
/// there already; copied into a temporary directory first and renamed, so
/// a snapshot is whole or absent.
fn make(root: &Path, under: &Path) -> Result<Snapshot, WorkerError> {
    let files = files(root)?;
    let hash = hash(&files);
    let dir = under.join(&hash);
    let snapshot = Snapshot {
        worker_crate: dir.join(CRATES[0]),
        hash,
    };
    if dir.join("Cargo.toml").is_file() {
        super::inventory::hold(&dir);
        return Ok(snapshot);
    }
    std::fs::create_dir_all(under).map_err(|e| WorkerError::io(under, e))?;
    let tmp = tempfile::Builder::new()
        .prefix(".snapshot-")
        .tempdir_in(under)
        .map_err(|e| WorkerError::io(under, e))?;
    for (rel, bytes) in &files {
        let path = tmp.path().join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| WorkerError::io(parent, e))?;
        }
        std::fs::write(&path, bytes).map_err(|e| WorkerError::io(&path, e))?;
    }
    let made = tmp.keep();
    if let Err(e) = std::fs::rename(&made, &dir) {
        // Another session made the same snapshot first: theirs is whole.
        let _ = std::fs::remove_dir_all(&made);
        if !dir.join("Cargo.toml").is_file() {
            return Err(WorkerError::io(&dir, e));
        }
    }
    super::inventory::hold(&dir);
    Ok(snapshot)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A workspace of the three crates with one file each.
    fn workspace(at: &Path) {
        std::fs::write(
            at.join("Cargo.toml"),
            "[workspace]\nmembers = [\"crates/loopbench\", \"crates/loopbench-worker\"]\n\n[workspace.package]\nedition = \"2021\"\n",
        )
        .unwrap();
        std::fs::write(at.join("Cargo.lock"), "# lock\n").unwrap();
        for c in CRATES {
            std::fs::create_dir_all(at.join(c).join("src")).unwrap();
            std::fs::write(at.join(c).join("Cargo.toml"), "[package]\n").unwrap();
            std::fs::write(at.join(c).join("src/lib.rs"), "// lib\n").unwrap();
        }
        std::fs::create_dir_all(at.join("crates/loopbench/src")).unwrap();
        std::fs::write(at.join("crates/loopbench/src/lib.rs"), "// host\n").unwrap();
    }

    #[test]
    fn a_snapshot_follows_the_timed_path_s_files_and_nothing_else() {
        let (live, cache) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        workspace(live.path());
        let first = make(live.path(), cache.path()).unwrap();
        let root = first.worker_crate.join("../..");
        let manifest = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
        assert!(
            manifest.contains("members = [\"crates/loopbench-worker\", \"crates/loopbench-count\", \"crates/loopbench-probe\"]"),
            "{manifest}"
        );
        assert!(manifest.contains("edition = \"2021\""), "{manifest}");
        assert!(root.join("Cargo.lock").is_file());
        assert!(
            !root.join("crates/loopbench").exists(),
            "the host is not in it"
        );
        // The host's files are not the timed path: same snapshot.
        std::fs::write(
            live.path().join("crates/loopbench/src/lib.rs"),
            "// edited\n",
        )
        .unwrap();
        assert_eq!(make(live.path(), cache.path()).unwrap().hash, first.hash);
        // An edit to the timed path is a new snapshot; the old one stays
        // as it was (a build made from it is never changed under it).
        let lib = live.path().join("crates/loopbench-worker/src/lib.rs");
        std::fs::write(&lib, "// edited\n").unwrap();
        let second = make(live.path(), cache.path()).unwrap();
        assert_ne!(second.hash, first.hash);
        assert_eq!(
            std::fs::read_to_string(first.worker_crate.join("src/lib.rs")).unwrap(),
            "// lib\n"
        );
        assert_eq!(
            std::fs::read_to_string(second.worker_crate.join("src/lib.rs")).unwrap(),
            "// edited\n"
        );
        // A new file in a path crate counts too.
        std::fs::write(live.path().join("crates/loopbench-count/src/new.rs"), "").unwrap();
        assert_ne!(make(live.path(), cache.path()).unwrap().hash, second.hash);
    }
}
