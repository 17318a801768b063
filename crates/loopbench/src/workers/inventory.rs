//! What the worker cache holds, how much disk each part takes and when it
//! was last used, and pruning: least recently used first, never a part a
//! running session uses (each session holds a shared lock on what it runs
//! from, [`hold`]; pruning takes the lock exclusively or leaves the part).
//!
//! The parts: each worker build (its generated project and, in the cargo
//! target directory it was built in, its binary and the files cargo keeps
//! for it; a build's layout variants are one part with it), the relinks
//! of each loopbench binary (`own/`), the timed path's source snapshots
//! (`source/`), and per target directory the compiled dependencies its
//! builds share (removed with the last build that used them). Git
//! worktrees (`git/`) are listed and left alone: their repositories
//! record them.

use super::cache::workers_root;
use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// The file whose shared lock marks a part in use, and whose modification
/// time is its last use.
pub const IN_USE: &str = ".in-use";

/// The cache's size past which a session prunes it on its own, unless
/// `LOOPBENCH_CACHE_LIMIT` says otherwise (a size such as `20g`).
pub const DEFAULT_LIMIT: u64 = 8 << 30;
pub const LIMIT_VAR: &str = "LOOPBENCH_CACHE_LIMIT";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Build,
    Relinks,
    Source,
    Dependencies,
    Worktree,
}

/// One part of the cache.
#[derive(Clone, Debug)]
pub struct Part {
    pub kind: Kind,
    /// What it is, for people: `wasmi 2.0.0 (registry =2.0.0, release), 8 layout variants`.
    pub what: String,
    pub bytes: u64,
    pub used: SystemTime,
    /// Everything removed with it.
    pub paths: Vec<PathBuf>,
    /// Its in-use locks (a build's: one per layout variant).
    pub locks: Vec<PathBuf>,
    /// The target directory a build's binaries are in.
    pub target: Option<PathBuf>,
}

impl Part {
    fn prunable(&self) -> bool {
        matches!(self.kind, Kind::Build | Kind::Relinks | Kind::Source)
    }
}

/// The in-use locks this process holds (until it exits).
static HELD: std::sync::Mutex<Vec<std::fs::File>> = std::sync::Mutex::new(Vec::new());

/// Mark `dir` used now and in use by this process until it exits.
pub fn hold(dir: &Path) {
    let path = dir.join(IN_USE);
    let Ok(file) = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
    else {
        return;
    };
    if file.lock_shared().is_ok() {
        let _ = file.set_modified(SystemTime::now());
        if let Ok(mut held) = HELD.lock() {
            held.push(file);
        }
    }
}

/// In-use locks taken exclusively (kept while what they guard is
/// removed); `None` when a session holds one of them.
pub fn take_unused(locks: &[PathBuf]) -> Option<Vec<std::fs::File>> {
    let mut taken = Vec::new();
    for path in locks {
        // No lock file: nothing ever held it.
        let Ok(f) = std::fs::OpenOptions::new().write(true).open(path) else {
            continue;
        };
        f.try_lock().ok()?;
        taken.push(f);
    }
    Some(taken)
}

/// The bytes under `path` (a file or a directory), hard links once.
pub fn bytes(path: &Path) -> u64 {
    size(path, &mut HashSet::new())
}

/// The bytes under `path`, each inode not in `seen` once.
fn size(path: &Path, seen: &mut HashSet<(u64, u64)>) -> u64 {
    use std::os::unix::fs::MetadataExt;
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return 0;
    };
    if meta.is_dir() {
        std::fs::read_dir(path)
            .map(|entries| {
                entries
                    .flatten()
                    .map(|e| size(&e.path(), seen))
                    .sum::<u64>()
            })
            .unwrap_or(0)
    } else if seen.insert((meta.dev(), meta.ino())) {
        meta.len()
    } else {
        0
    }
}

fn modified(path: &Path) -> SystemTime {
    std::fs::metadata(path)
        .and_then(|m| m.modified())
        .unwrap_or(SystemTime::UNIX_EPOCH)
}

/// A build key in a file name cargo made for it: `lbw-KEY`, `lbw_KEY-…`,
/// `loopbench-worker-KEY-…`.
fn key_in(name: &str) -> Option<&str> {
    let rest = ["lbw-", "lbw_", "loopbench-worker-"]
        .iter()
        .find_map(|p| name.strip_prefix(p))?;
    let key = rest.get(..16)?;
    key.bytes().all(|b| b.is_ascii_hexdigit()).then_some(key)
}

fn is_key(name: &str) -> bool {
    name.len() == 16 && name.bytes().all(|b| b.is_ascii_hexdigit())
}

/// Every file cargo keeps for a build, by key, in the target directory
/// `target` (all its profiles).
fn build_files(target: &Path) -> BTreeMap<String, Vec<PathBuf>> {
    let mut out: BTreeMap<String, Vec<PathBuf>> = BTreeMap::new();
    let profiles = std::fs::read_dir(target).into_iter().flatten().flatten();
    for profile in profiles.map(|e| e.path()).filter(|p| p.is_dir()) {
        for sub in ["", "deps", ".fingerprint", "build"] {
            let dir = profile.join(sub);
            for path in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
                let path = path.path();
                let name = path.file_name().unwrap_or_default().to_string_lossy();
                if let Some(key) = key_in(&name) {
                    out.entry(key.to_string()).or_default().push(path.clone());
                }
            }
        }
    }
    out
}

/// Remove every file cargo keeps for the build `key` in the target
/// directory `target` (its binary, the `deps/` file it is a hard link of,
/// its fingerprint and build-script output), so that cargo builds it
/// again; the dependencies stay compiled.
pub fn remove_build_files(target: &Path, key: &str) {
    for path in build_files(target).remove(key).unwrap_or_default() {
        if path.is_dir() {
            let _ = std::fs::remove_dir_all(&path);
        } else {
            let _ = std::fs::remove_file(&path);
        }
    }
}

/// The inputs a build recorded (`inputs.json`), by name.
fn inputs(dir: &Path) -> Option<BTreeMap<String, String>> {
    let bytes = std::fs::read(dir.join("inputs.json")).ok()?;
    let pairs: Vec<(String, String)> = serde_json::from_slice(&bytes).ok()?;
    Some(pairs.into_iter().collect())
}

/// Every part of the cache at `root`, largest kinds first, then by last use.
pub fn list(root: &Path) -> Vec<Part> {
    let mut seen = HashSet::new();
    let mut parts = Vec::new();
    let entries: Vec<PathBuf> = std::fs::read_dir(root)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .collect();
    let targets: Vec<PathBuf> = entries
        .iter()
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("target"))
        })
        .cloned()
        .collect();
    let files: Vec<(PathBuf, BTreeMap<String, Vec<PathBuf>>)> = targets
        .iter()
        .map(|t| (t.clone(), build_files(t)))
        .collect();
    // Builds: a plain build and its layout variants are one part.
    // Each build's part and how many layout variants it has.
    let mut builds: BTreeMap<String, (Part, usize)> = BTreeMap::new();
    for dir in entries.iter().filter(|p| {
        p.is_dir()
            && is_key(&p.file_name().unwrap_or_default().to_string_lossy())
            && p.join("Cargo.toml").is_file()
    }) {
        let key = dir
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .to_string();
        let recorded = inputs(dir);
        let of = |name: &str| {
            recorded
                .as_ref()
                .and_then(|i| i.get(name).cloned())
                .unwrap_or_default()
        };
        let variant = !of("the layout script").is_empty();
        let group = match &recorded {
            Some(i) => {
                let text: Vec<String> = i
                    .iter()
                    .filter(|(n, _)| n.as_str() != "the layout script")
                    .map(|(n, v)| format!("{n}={v}"))
                    .collect();
                format!("{:016x}", crate::hash::fnv1a(&[text.join("\n").as_bytes()]))
            }
            None => key.clone(),
        };
        let version = std::fs::read(dir.join("resolution.json"))
            .ok()
            .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
            .and_then(|v| v["version"].as_str().map(str::to_string))
            .unwrap_or_else(|| "unresolved".into());
        let mut paths = vec![dir.clone()];
        let mut target = None;
        for (t, by_key) in &files {
            if let Some(f) = by_key.get(&key) {
                paths.extend(f.iter().cloned());
                target = Some(t.clone());
            }
        }
        let bytes = paths.iter().map(|p| size(p, &mut seen)).sum::<u64>();
        let used = modified(&dir.join(IN_USE)).max(modified(dir));
        let (part, variants) = builds.entry(group).or_insert_with(|| {
            let part = Part {
                kind: Kind::Build,
                what: String::new(),
                bytes: 0,
                used: SystemTime::UNIX_EPOCH,
                paths: Vec::new(),
                locks: Vec::new(),
                target: target.clone(),
            };
            (part, 0)
        });
        part.bytes += bytes;
        part.used = part.used.max(used);
        part.paths.extend(paths);
        part.locks.push(dir.join(IN_USE));
        *variants += usize::from(variant);
        // Any of its directories describes the build (a session in layout
        // variants makes no plain one).
        if part.what.is_empty() {
            part.what = match recorded {
                Some(_) => format!(
                    "{} {version} ({}, {}{}{})",
                    of("engine"),
                    of("source"),
                    of("profile"),
                    Some(of("features"))
                        .filter(|f| !f.is_empty())
                        .map(|f| format!(", features {f}"))
                        .unwrap_or_default(),
                    Some(of("RUSTFLAGS"))
                        .filter(|f| !f.is_empty())
                        .map(|f| format!(", RUSTFLAGS {f}"))
                        .unwrap_or_default(),
                ),
                None => format!("build {key} ({version}, made by an older loopbench)"),
            };
        }
    }
    for (part, variants) in builds.values_mut() {
        if *variants > 0 {
            part.what = format!("{}, {}", part.what, layout_variants(*variants));
        }
    }
    parts.extend(builds.into_values().map(|(part, _)| part));
    // This binary's (and older binaries') relinks.
    for dir in dirs_in(&root.join("own")) {
        let id = dir
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .to_string();
        let variants = std::fs::read_dir(&dir)
            .into_iter()
            .flatten()
            .flatten()
            .filter(|e| e.path().extension().is_some_and(|x| x == "fnv1a"))
            .count();
        if variants == 0 && bytes(&dir) == 0 {
            continue; // made for a session that relinked nothing
        }
        parts.push(Part {
            kind: Kind::Relinks,
            what: format!("relinks of loopbench {id}, {}", layout_variants(variants)),
            bytes: size(&dir, &mut seen),
            used: modified(&dir.join(IN_USE)),
            locks: vec![dir.join(IN_USE)],
            paths: vec![dir],
            target: None,
        });
    }
    for dir in dirs_in(&root.join("source")) {
        let hash = dir
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .to_string();
        parts.push(Part {
            kind: Kind::Source,
            what: format!("the timed path's source {hash}"),
            bytes: size(&dir, &mut seen),
            used: modified(&dir.join(IN_USE)).max(modified(&dir)),
            locks: vec![dir.join(IN_USE)],
            paths: vec![dir],
            target: None,
        });
    }
    for dir in dirs_in(&root.join("git")) {
        parts.push(Part {
            kind: Kind::Worktree,
            what: format!(
                "git worktree {} (left alone: `git worktree remove` it)",
                dir.file_name().unwrap_or_default().to_string_lossy()
            ),
            bytes: size(&dir, &mut seen),
            used: modified(&dir),
            paths: vec![dir],
            locks: Vec::new(),
            target: None,
        });
    }
    // What is left in each target directory: the builds' shared
    // dependencies.
    for t in targets {
        let users = parts
            .iter()
            .filter(|p| p.target.as_ref() == Some(&t))
            .count();
        let used = parts
            .iter()
            .filter(|p| p.target.as_ref() == Some(&t))
            .map(|p| p.used)
            .max()
            .unwrap_or_else(|| modified(&t));
        parts.push(Part {
            kind: Kind::Dependencies,
            what: format!(
                "compiled dependencies in {} shared by {users} build{}",
                t.file_name().unwrap_or_default().to_string_lossy(),
                if users == 1 { "" } else { "s" }
            ),
            bytes: size(&t, &mut seen),
            used,
            paths: vec![t.clone()],
            locks: Vec::new(),
            target: Some(t),
        });
    }
    parts
}

fn layout_variants(n: usize) -> String {
    format!("{n} layout variant{}", if n == 1 { "" } else { "s" })
}

fn dirs_in(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect()
}

/// What to remove: parts unused for longer than `older_than`, all but the
/// `keep_last` most recently used builds and relinks, and least recently
/// used parts until the cache fits `max_bytes`.
#[derive(Clone, Debug, Default)]
pub struct Policy {
    pub older_than: Option<Duration>,
    pub keep_last: Option<usize>,
    pub max_bytes: Option<u64>,
}

/// What a prune removed and what it left because a session uses it.
#[derive(Debug, Default)]
pub struct Pruned {
    pub removed: Vec<Part>,
    pub bytes: u64,
    pub in_use: usize,
    /// The cache's size after.
    pub left: u64,
}

/// Prune the cache at `root` by `policy`, as of `now`.
pub fn prune(root: &Path, policy: &Policy, now: SystemTime) -> Pruned {
    let parts = list(root);
    let mut total: u64 = parts.iter().map(|p| p.bytes).sum();
    let mut order: Vec<&Part> = parts.iter().filter(|p| p.prunable()).collect();
    order.sort_by_key(|p| p.used);
    let recent: HashSet<PathBuf> = {
        let mut kept: Vec<&Part> = order
            .iter()
            .copied()
            .filter(|p| matches!(p.kind, Kind::Build | Kind::Relinks))
            .collect();
        kept.sort_by_key(|p| std::cmp::Reverse(p.used));
        kept.into_iter()
            .take(policy.keep_last.unwrap_or(usize::MAX))
            .map(|p| p.paths[0].clone())
            .collect()
    };
    let mut pruned = Pruned::default();
    for part in order {
        let old = policy
            .older_than
            .is_some_and(|d| now.duration_since(part.used).unwrap_or_default() > d);
        let beyond_last = policy.keep_last.is_some()
            && matches!(part.kind, Kind::Build | Kind::Relinks)
            && !recent.contains(&part.paths[0]);
        let too_big = policy.max_bytes.is_some_and(|max| total > max);
        if !(old || beyond_last || too_big) {
            continue;
        }
        let Some(_lock) = take_unused(&part.locks) else {
            pruned.in_use += 1;
            continue;
        };
        for path in &part.paths {
            if path.is_dir() {
                let _ = std::fs::remove_dir_all(path);
            } else {
                let _ = std::fs::remove_file(path);
            }
        }
        total = total.saturating_sub(part.bytes);
        pruned.bytes += part.bytes;
        pruned.removed.push(part.clone());
    }
    // A target directory no build uses any more goes with its last build.
    for deps in parts.iter().filter(|p| p.kind == Kind::Dependencies) {
        let users = parts
            .iter()
            .filter(|p| p.kind == Kind::Build && p.target == deps.target)
            .count();
        let gone = pruned
            .removed
            .iter()
            .filter(|p| p.kind == Kind::Build && p.target == deps.target)
            .count();
        if users > 0 && users == gone && std::fs::remove_dir_all(&deps.paths[0]).is_ok() {
            total = total.saturating_sub(deps.bytes);
            pruned.bytes += deps.bytes;
            pruned.removed.push(deps.clone());
        }
    }
    pruned.left = total;
    pruned
}

/// The limit a session keeps the cache under: `$LOOPBENCH_CACHE_LIMIT`,
/// else [`DEFAULT_LIMIT`].
pub fn limit() -> Result<u64, crate::units::SizeError> {
    match std::env::var(LIMIT_VAR) {
        Ok(v) if !v.trim().is_empty() => crate::units::parse_bytes(&v),
        _ => Ok(DEFAULT_LIMIT),
    }
}

/// After a session that ran from the cache: past the limit, remove the
/// least recently used parts (never one a running session holds) and say
/// so in one line. A session that used nothing of it leaves it alone.
pub fn auto_prune() {
    if HELD.lock().map_or(true, |held| held.is_empty()) {
        return;
    }
    let root = workers_root();
    let Ok(max) = limit() else {
        crate::diag!("{LIMIT_VAR} is not a size (such as 20g): the worker cache is not pruned");
        return;
    };
    let policy = Policy {
        max_bytes: Some(max),
        ..Policy::default()
    };
    let pruned = prune(&root, &policy, SystemTime::now());
    if !pruned.removed.is_empty() {
        crate::diag!(
            "worker cache past its {} limit ({LIMIT_VAR}): removed {} least recently used part{} ({}), {} left in {}",
            crate::units::format_bytes(max),
            pruned.removed.len(),
            if pruned.removed.len() == 1 { "" } else { "s" },
            crate::units::format_bytes(pruned.bytes),
            crate::units::format_bytes(pruned.left),
            root.display()
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(path: &Path, bytes: usize) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, vec![1u8; bytes]).unwrap();
    }

    fn age(path: &Path, seconds: u64) {
        // Read-only: a directory opens no other way (its owner may set times).
        let f = std::fs::File::open(path).unwrap();
        f.set_modified(SystemTime::now() - Duration::from_secs(seconds))
            .unwrap();
    }

    /// A generated build `key` of wasmi `version` (a layout variant when
    /// `layout` is set) with its binary, last used `seconds` ago.
    fn build(root: &Path, key: &str, version: &str, layout: &str, seconds: u64) {
        let dir = root.join(key);
        write(&dir.join("Cargo.toml"), 10);
        let inputs = vec![
            ("engine", "wasmi".to_string()),
            ("source", format!("registry ={version}")),
            ("profile", "release".into()),
            ("the layout script", layout.to_string()),
        ];
        std::fs::write(
            dir.join("inputs.json"),
            serde_json::to_vec(&inputs).unwrap(),
        )
        .unwrap();
        let resolution = format!(r#"{{"version":"{version}"}}"#);
        std::fs::write(dir.join("resolution.json"), resolution).unwrap();
        let bin = root.join(format!("target/release/deps/lbw_{key}-0123"));
        write(&bin, 1000);
        std::fs::hard_link(&bin, root.join(format!("target/release/lbw-{key}"))).unwrap();
        write(&dir.join(IN_USE), 0);
        age(&dir.join(IN_USE), seconds);
        age(&dir, seconds);
    }

    /// wasmi 2.0.0 and a layout variant of it, an hour old; wasmi 1.0.0
    /// a minute old; relinks of a loopbench two hours old.
    fn cache() -> tempfile::TempDir {
        let root = tempfile::tempdir().unwrap();
        let r = root.path();
        build(r, "aaaaaaaaaaaaaaaa", "2.0.0", "", 3600);
        build(r, "bbbbbbbbbbbbbbbb", "2.0.0", "seed 1", 3600);
        build(r, "cccccccccccccccc", "1.0.0", "", 60);
        write(&r.join("target/release/deps/libwasmi-1.rlib"), 5000);
        let own = r.join("own/0123456789ab");
        write(&own.join("loopbench-relink-1"), 2000);
        write(&own.join("loopbench-relink-1.fnv1a"), 16);
        write(&own.join(IN_USE), 0);
        age(&own.join(IN_USE), 7200);
        root
    }

    #[test]
    fn a_build_and_its_variants_are_one_part_with_their_binaries() {
        let root = cache();
        let parts = list(root.path());
        let builds: Vec<&Part> = parts.iter().filter(|p| p.kind == Kind::Build).collect();
        assert_eq!(builds.len(), 2, "{parts:#?}");
        let with_variant = builds.iter().find(|p| p.what.contains("2.0.0")).unwrap();
        assert_eq!(
            with_variant.what,
            "wasmi 2.0.0 (registry =2.0.0, release), 1 layout variant"
        );
        // Two project dirs, two binaries (each a hard link counted once).
        assert!(
            with_variant.bytes >= 2000 && with_variant.bytes < 3000,
            "{with_variant:?}"
        );
        let deps = parts.iter().find(|p| p.kind == Kind::Dependencies).unwrap();
        assert!(deps.what.contains("shared by 2 builds"), "{deps:?}");
        assert_eq!(deps.bytes, 5000);
        let own = parts.iter().find(|p| p.kind == Kind::Relinks).unwrap();
        assert!(own.what.ends_with(", 1 layout variant"), "{own:?}");
        // A session in layout variants makes no plain build: the variants
        // describe it.
        std::fs::remove_dir_all(root.path().join("aaaaaaaaaaaaaaaa")).unwrap();
        let parts = list(root.path());
        assert!(
            parts
                .iter()
                .any(|p| p.what == "wasmi 2.0.0 (registry =2.0.0, release), 1 layout variant"),
            "{parts:#?}"
        );
    }

    #[test]
    fn pruning_goes_least_recently_used_first_and_leaves_what_is_held() {
        let root = cache();
        let r = root.path();
        let total: u64 = list(r).iter().map(|p| p.bytes).sum();
        // A little too big: the oldest part goes, the relinks.
        let pruned = prune(
            r,
            &Policy {
                max_bytes: Some(total - 1),
                ..Policy::default()
            },
            SystemTime::now(),
        );
        assert_eq!(pruned.removed.len(), 1, "{pruned:#?}");
        assert_eq!(pruned.removed[0].kind, Kind::Relinks);
        assert!(!r.join("own/0123456789ab").exists());
        // Nothing unused for a day.
        let day = Policy {
            older_than: Some(Duration::from_secs(86400)),
            ..Policy::default()
        };
        assert!(prune(r, &day, SystemTime::now()).removed.is_empty());
        // Everything, but a session holds wasmi 1.0.0: it stays, and so do
        // the dependencies it was built with.
        hold(&r.join("cccccccccccccccc"));
        let all = Policy {
            max_bytes: Some(0),
            ..Policy::default()
        };
        let pruned = prune(r, &all, SystemTime::now());
        assert_eq!(pruned.in_use, 1);
        let kinds: Vec<Kind> = pruned.removed.iter().map(|p| p.kind).collect();
        assert_eq!(kinds, [Kind::Build], "{pruned:#?}");
        assert!(!r.join("aaaaaaaaaaaaaaaa").exists());
        assert!(!r.join("bbbbbbbbbbbbbbbb").exists());
        assert!(!r.join("target/release/lbw-aaaaaaaaaaaaaaaa").exists());
        assert!(r.join("cccccccccccccccc").exists());
        assert!(r.join("target/release/lbw-cccccccccccccccc").exists());
        assert!(r.join("target/release/deps/libwasmi-1.rlib").exists());
    }

    #[test]
    fn the_dependencies_go_with_the_last_build_that_used_them() {
        let root = cache();
        let r = root.path();
        let last = Policy {
            keep_last: Some(0),
            ..Policy::default()
        };
        let pruned = prune(r, &last, SystemTime::now());
        let kinds: Vec<Kind> = pruned.removed.iter().map(|p| p.kind).collect();
        assert_eq!(
            kinds,
            [Kind::Relinks, Kind::Build, Kind::Build, Kind::Dependencies],
            "{pruned:#?}"
        );
        assert!(!r.join("target").exists());
        assert_eq!(pruned.left, 0);
    }
}
