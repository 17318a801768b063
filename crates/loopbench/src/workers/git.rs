//! Revisions as arms: `ENGINE=git:DIR#REV` resolves REV in the local
//! repository DIR to a commit id and checks that commit out into a
//! detached worktree under the worker cache, keyed by the commit id (so a
//! branch that moves gets a new worktree, and a commit already checked out
//! is reused). The worktree is then built like a `path:` arm; the commit id
//! is stated with the arm's version, so results and history record it.

use super::cache::worktree_dir;
use super::WorkerError;
use crate::arm::EngineKind;
use std::path::{Path, PathBuf};
use std::process::Command;

fn git(
    engine: EngineKind,
    repo: &Path,
    rev: &str,
    args: &[&std::ffi::OsStr],
) -> Result<String, WorkerError> {
    let fail = |detail: String| WorkerError::Git {
        engine,
        repo: repo.to_path_buf(),
        rev: rev.to_string(),
        detail,
    };
    let out = crate::children::die_with_parent(&mut Command::new("git"))
        .arg("-C")
        .arg(repo)
        .args(args)
        .output()
        .map_err(|e| fail(format!("cannot run git: {e}")))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let line = err
            .lines()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("failed");
        return Err(fail(line.trim().to_string()));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// The full commit id `rev` names in `repo`.
pub fn resolve(engine: EngineKind, repo: &Path, rev: &str) -> Result<String, WorkerError> {
    if !repo.is_dir() {
        return Err(WorkerError::Git {
            engine,
            repo: repo.to_path_buf(),
            rev: rev.to_string(),
            detail: "no such directory".into(),
        });
    }
    let spec = format!("{rev}^{{commit}}");
    git(
        engine,
        repo,
        rev,
        &[
            "rev-parse".as_ref(),
            "--verify".as_ref(),
            "--quiet".as_ref(),
            spec.as_ref(),
        ],
    )
    .map_err(|_| WorkerError::Git {
        engine,
        repo: repo.to_path_buf(),
        rev: rev.to_string(),
        detail: "no such revision in this repository".into(),
    })
}

/// A worktree of `repo` at `commit` (created once, then reused).
pub fn checkout(
    engine: EngineKind,
    repo: &Path,
    rev: &str,
    commit: &str,
) -> Result<PathBuf, WorkerError> {
    let dir = worktree_dir(commit);
    // A worktree has a `.git` file; one that is there is at this commit
    // (it is detached and named by it).
    if dir.join(".git").exists() {
        return Ok(dir);
    }
    if let Some(parent) = dir.parent() {
        std::fs::create_dir_all(parent).map_err(|e| WorkerError::io(parent, e))?;
    }
    // A directory left by an interrupted checkout: git refuses to reuse it.
    if dir.exists() {
        std::fs::remove_dir_all(&dir).map_err(|e| WorkerError::io(&dir, e))?;
    }
    git(
        engine,
        repo,
        rev,
        &[
            "worktree".as_ref(),
            "add".as_ref(),
            "--detach".as_ref(),
            "--quiet".as_ref(),
            dir.as_os_str(),
            commit.as_ref(),
        ],
    )?;
    own_workspace(engine, repo, rev, &dir)?;
    Ok(dir)
}

/// Cargo looks upwards from a package for a workspace root, so a checkout
/// of a single-package repository inside someone else's workspace (a cache
/// under a project's `target/`, as in CI) would be refused as a stray
/// member. Such a checkout is made its own workspace root; git is told to
/// ignore that line, so the worktree still reads as the clean commit.
fn own_workspace(
    engine: EngineKind,
    repo: &Path,
    rev: &str,
    dir: &Path,
) -> Result<(), WorkerError> {
    let manifest = dir.join("Cargo.toml");
    let Ok(text) = std::fs::read_to_string(&manifest) else {
        return Ok(());
    };
    let is_root = |t: &str| t.lines().any(|l| l.trim() == "[workspace]");
    let enclosed = dir
        .ancestors()
        .skip(1)
        .filter_map(|a| std::fs::read_to_string(a.join("Cargo.toml")).ok())
        .any(|t| is_root(&t));
    if is_root(&text) || !enclosed {
        return Ok(());
    }
    let text =
        format!("{text}\n# loopbench: this checkout is its own workspace root\n[workspace]\n");
    std::fs::write(&manifest, text).map_err(|e| WorkerError::io(&manifest, e))?;
    git(
        engine,
        dir,
        rev,
        &[
            "update-index".as_ref(),
            "--skip-worktree".as_ref(),
            "Cargo.toml".as_ref(),
        ],
    )
    .map_err(|e| match e {
        WorkerError::Git { detail, .. } => WorkerError::Git {
            engine,
            repo: repo.to_path_buf(),
            rev: rev.to_string(),
            detail,
        },
        other => other,
    })?;
    Ok(())
}

/// The text of `file` at `commit` of `repo` (`git show COMMIT:FILE`).
pub fn show(
    engine: EngineKind,
    repo: &Path,
    rev: &str,
    commit: &str,
    file: &str,
) -> Result<String, WorkerError> {
    let object = format!("{commit}:{file}");
    git(engine, repo, rev, &["show".as_ref(), object.as_ref()])
}

/// The commits after `good` up to and including `bad`, oldest first, along
/// the first-parent line from `good` to `bad` (a merge is one step, as a
/// branch's history shows it). Empty when `bad` is `good`; an error when
/// `good` is not an ancestor of `bad`.
pub fn between(
    engine: EngineKind,
    repo: &Path,
    good: &str,
    bad: &str,
) -> Result<Vec<String>, WorkerError> {
    let ancestor = crate::children::die_with_parent(&mut Command::new("git"))
        .arg("-C")
        .arg(repo)
        .args(["merge-base", "--is-ancestor", good, bad])
        .status()
        .map_err(|e| WorkerError::Git {
            engine,
            repo: repo.to_path_buf(),
            rev: bad.to_string(),
            detail: format!("cannot run git: {e}"),
        })?;
    if !ancestor.success() {
        return Err(WorkerError::Git {
            engine,
            repo: repo.to_path_buf(),
            rev: bad.to_string(),
            detail: format!("the good revision {good} is not an ancestor of it"),
        });
    }
    let range = format!("{good}..{bad}");
    let out = git(
        engine,
        repo,
        bad,
        &[
            "rev-list".as_ref(),
            "--reverse".as_ref(),
            "--first-parent".as_ref(),
            "--ancestry-path".as_ref(),
            range.as_ref(),
        ],
    )?;
    Ok(out.lines().map(str::to_string).collect())
}

/// The subject line of `commit`, if git can tell.
pub fn subject(repo: &Path, commit: &str) -> Option<String> {
    git(
        EngineKind::Wasmi,
        repo,
        commit,
        &[
            "log".as_ref(),
            "-1".as_ref(),
            "--format=%s".as_ref(),
            commit.as_ref(),
        ],
    )
    .ok()
    .filter(|s| !s.is_empty())
}

/// What a `path:` arm's directory holds, as its build identity: `at
/// COMMIT` for a clean git checkout, `at COMMIT with changes HASH` when
/// files differ from the commit or are new (HASH covers their contents),
/// and `sources HASH` of every file outside `target/` and hidden
/// directories when it is not a git checkout. A `path:` arm is built from
/// whatever the directory holds when the session runs, so two sessions of
/// one path are one build only when this is the same. Read once per
/// process, as the build is made once per process.
pub fn sources_state(dir: &Path) -> String {
    static SEEN: std::sync::Mutex<Vec<(PathBuf, String)>> = std::sync::Mutex::new(Vec::new());
    let mut seen = SEEN.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, state)) = seen.iter().find(|(d, _)| d == dir) {
        return state.clone();
    }
    let state = read_sources_state(dir);
    seen.push((dir.to_path_buf(), state.clone()));
    state
}

fn read_sources_state(dir: &Path) -> String {
    let run = |args: &[&str]| -> Option<Vec<u8>> {
        let out = crate::children::die_with_parent(&mut Command::new("git"))
            .arg("-C")
            .arg(dir)
            .args(args)
            .output()
            .ok()?;
        out.status.success().then_some(out.stdout)
    };
    let hex = |h: u64| format!("{h:016x}")[..12].to_string();
    let Some(head) = run(&["rev-parse", "HEAD"]) else {
        let mut files = Vec::new();
        walk(dir, dir, &mut files);
        files.sort();
        let mut parts: Vec<Vec<u8>> = Vec::new();
        for f in files {
            parts.push(f.to_string_lossy().into_owned().into_bytes());
            parts.push(std::fs::read(dir.join(&f)).unwrap_or_default());
        }
        let parts: Vec<&[u8]> = parts.iter().map(Vec::as_slice).collect();
        return format!("sources {}", hex(crate::hash::fnv1a(&parts)));
    };
    let head = String::from_utf8_lossy(&head).trim().to_string();
    let short: String = head.chars().take(12).collect();
    let diff = run(&["diff", "HEAD", "--binary"]).unwrap_or_default();
    let untracked = run(&["ls-files", "--others", "--exclude-standard", "-z"]).unwrap_or_default();
    if diff.is_empty() && untracked.is_empty() {
        return format!("at {short}");
    }
    let mut parts: Vec<Vec<u8>> = vec![diff];
    for name in untracked.split(|b| *b == 0).filter(|n| !n.is_empty()) {
        let name = String::from_utf8_lossy(name).into_owned();
        parts.push(std::fs::read(dir.join(&name)).unwrap_or_default());
        parts.push(name.into_bytes());
    }
    let parts: Vec<&[u8]> = parts.iter().map(Vec::as_slice).collect();
    format!(
        "at {short} with changes {}",
        hex(crate::hash::fnv1a(&parts))
    )
}

/// Every file under `dir` (relative to `root`), but build output and
/// hidden directories.
fn walk(root: &Path, dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name();
        let path = e.path();
        if name.to_string_lossy().starts_with('.') || name == "target" {
            continue;
        }
        match e.file_type() {
            Ok(t) if t.is_dir() => walk(root, &path, out),
            Ok(t) if t.is_file() => {
                out.extend(path.strip_prefix(root).ok().map(Path::to_path_buf));
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::read_sources_state as state;
    use std::process::Command;

    fn git(dir: &std::path::Path, args: &[&str]) {
        let ok = Command::new("git")
            .arg("-C")
            .arg(dir)
            .args(["-c", "user.name=t", "-c", "user.email=t@t"])
            .args(args)
            .status()
            .unwrap()
            .success();
        assert!(ok, "git {args:?}");
    }

    #[test]
    fn a_checkout_s_state_names_its_commit_and_every_change() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::write(d.join("lib.rs"), "fn a() {}").unwrap();
        std::fs::create_dir(d.join("target")).unwrap();
        std::fs::write(d.join("target/out"), "x").unwrap();
        // Not a checkout: the files' contents, build output left out.
        let plain = state(d);
        assert!(plain.starts_with("sources "), "{plain}");
        std::fs::write(d.join("target/out"), "y").unwrap();
        assert_eq!(state(d), plain);
        std::fs::write(d.join("lib.rs"), "fn b() {}").unwrap();
        assert_ne!(state(d), plain);

        std::fs::write(d.join(".gitignore"), "target\n").unwrap();
        git(d, &["init", "-q"]);
        git(d, &["add", "."]);
        git(d, &["commit", "-qm", "one"]);
        let clean = state(d);
        assert!(
            clean.starts_with("at ") && !clean.contains("changes"),
            "{clean}"
        );
        // An edit, another edit, a new file: each its own state.
        std::fs::write(d.join("lib.rs"), "fn c() {}").unwrap();
        let edited = state(d);
        assert!(
            edited.starts_with(&format!("{clean} with changes ")),
            "{edited}"
        );
        std::fs::write(d.join("lib.rs"), "fn d() {}").unwrap();
        let edited_again = state(d);
        assert_ne!(edited_again, edited);
        std::fs::write(d.join("new.rs"), "fn e() {}").unwrap();
        assert_ne!(state(d), edited_again);
        // Ignored build output is not a change; undoing the edits is clean.
        std::fs::remove_file(d.join("new.rs")).unwrap();
        std::fs::write(d.join("lib.rs"), "fn b() {}").unwrap();
        std::fs::write(d.join("target/out"), "z").unwrap();
        assert_eq!(state(d), clean);
    }
}
