//! The worker cache as a user meets it: `loopbench cache` lists a real
//! session's relinks beside an older loopbench's and prunes the older; a
//! session past the cache's limit prunes it on its own and keeps what it
//! ran from; a disk too full for the relinks is one line before any link.

use assert_cmd::Command;
use std::path::Path;
use std::time::{Duration, SystemTime};

/// A short session of the compiled-in engines in relinked layout variants
/// (two before the first epoch, a third linked before the second), with
/// the worker cache at `cache`; (success, stderr, the variants it ran).
fn session(cache: &Path, env: &[(&str, &str)]) -> (bool, String, usize) {
    let mut cmd = Command::cargo_bin("loopbench").unwrap();
    cmd.env("LOOPBENCH_CACHE_DIR", cache)
        .args(["run", "--no-history", "--engines", "wasmi,wasm3"])
        .args(["--shapes", "add_chain", "--iters", "2048", "--rounds", "3"])
        .args([
            "--min-epochs",
            "2",
            "--max-epochs",
            "2",
            "--layout-builds",
            "2",
        ])
        .args(["--json", "-"]);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(!stderr.contains("panicked"), "{stderr}");
    // A session that fails writes no document: no variants.
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
    let variants = json["session"]["engines"][0]["layout"]["variants"]
        .as_array()
        .map_or(0, Vec::len);
    (out.status.success(), stderr, variants)
}

/// `loopbench cache ARGS` with the cache at `cache`: (success, stdout, stderr).
fn cache_cmd(cache: &Path, args: &[&str]) -> (bool, String, String) {
    let out = Command::cargo_bin("loopbench")
        .unwrap()
        .env("LOOPBENCH_CACHE_DIR", cache)
        .arg("cache")
        .args(args)
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).to_string(),
        String::from_utf8_lossy(&out.stderr).to_string(),
    )
}

/// The relinks an older loopbench left, last used a day ago: 1 MiB.
fn older_relinks(cache: &Path) -> std::path::PathBuf {
    let dir = cache.join("own/000000000000");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("loopbench-relink-1"), vec![0u8; 1 << 20]).unwrap();
    std::fs::write(dir.join("loopbench-relink-1.fnv1a"), "0").unwrap();
    let in_use = std::fs::File::create(dir.join(".in-use")).unwrap();
    in_use
        .set_modified(SystemTime::now() - Duration::from_secs(86400))
        .unwrap();
    dir
}

#[test]
fn cache_lists_and_prunes_the_least_recently_used_first() {
    let cache = tempfile::tempdir().unwrap();
    let (ok, stderr, variants) = session(cache.path(), &[]);
    assert!(ok, "{stderr}");
    assert!((2..=3).contains(&variants), "{variants}");
    let ran = format!(", {variants} layout variants");
    let older = older_relinks(cache.path());
    let (ok, listing, stderr) = cache_cmd(cache.path(), &[]);
    assert!(ok, "{stderr}");
    let rows: Vec<&str> = listing
        .lines()
        .filter(|l| l.contains("relinks of loopbench"))
        .collect();
    assert_eq!(rows.len(), 2, "{listing}");
    // Most recently used first: this session's variants, then the day-old.
    assert!(rows[0].contains(&ran), "{listing}");
    assert!(
        rows[1].contains("relinks of loopbench 000000000000") && rows[1].contains("1d ago"),
        "{listing}"
    );
    assert!(
        listing.starts_with(&format!("worker cache {}: ", cache.path().display())),
        "{listing}"
    );

    // Room for the newest session's relinks only: the older ones go.
    let parts = loopbench::workers::inventory::list(cache.path());
    let newest: u64 = parts
        .iter()
        .filter(|p| !p.paths.iter().any(|q| q == &older))
        .map(|p| p.bytes)
        .sum();
    let (ok, out, stderr) = cache_cmd(cache.path(), &["--max-size", &newest.to_string()]);
    assert!(ok, "{stderr}");
    assert!(out.starts_with("removed 1 part (1.00 MiB)"), "{out}");
    assert!(!older.exists());
    let (ok, listing, _) = cache_cmd(cache.path(), &[]);
    assert!(ok && listing.contains(&ran), "{listing}");

    // Bad input: one line, non-zero.
    for args in [
        &["--max-size", "0"][..],
        &["--older-than", "3"],
        &["--keep-last", "-1"],
    ] {
        let (ok, out, stderr) = cache_cmd(cache.path(), args);
        assert!(!ok && out.is_empty(), "{args:?}: {out}");
        // One error line (clap adds its pointer to --help below it).
        let errors = stderr.lines().filter(|l| l.starts_with("error")).count();
        assert!(
            errors == 1 && stderr.starts_with("error: "),
            "{args:?}: {stderr}"
        );
    }
}

#[test]
fn a_session_past_the_limit_prunes_what_it_did_not_use() {
    let cache = tempfile::tempdir().unwrap();
    let older = older_relinks(cache.path());
    let (ok, stderr, _) = session(cache.path(), &[("LOOPBENCH_CACHE_LIMIT", "1m")]);
    assert!(ok, "{stderr}");
    let said: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("worker cache past its 1 MiB limit (LOOPBENCH_CACHE_LIMIT): removed 1 least recently used part (1.00 MiB)"))
        .collect();
    assert_eq!(said.len(), 1, "{stderr}");
    assert!(!older.exists());
    // What the session ran from is still there: the next finds it.
    let (ok, stderr, _) = session(cache.path(), &[]);
    assert!(ok, "{stderr}");
    assert!(!stderr.contains("relinking"), "{stderr}");
}

/// A 16 MiB tmpfs, unmounted when dropped; `None` where mounting is not
/// permitted (not root).
struct Tiny(tempfile::TempDir);

impl Tiny {
    fn mount() -> Option<Tiny> {
        let dir = tempfile::tempdir().unwrap();
        let ok = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", "size=16m", "tmpfs"])
            .arg(dir.path())
            .status()
            .is_ok_and(|s| s.success());
        ok.then_some(Tiny(dir))
    }
}

impl Drop for Tiny {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg(self.0.path())
            .status();
    }
}

#[test]
fn a_disk_too_full_for_the_relinks_is_one_line_before_any_link() {
    let Some(tiny) = Tiny::mount() else {
        // The check runs wherever the suite runs as root (CI does); as
        // root a failed mount is this test's failure, not a skip.
        // SAFETY: geteuid has no preconditions.
        assert_ne!(unsafe { libc::geteuid() }, 0, "root, and mount failed");
        eprintln!("a_disk_too_full...: cannot mount a tmpfs here (not root): not run");
        return;
    };
    let (ok, stderr, _) = session(tiny.0.path(), &[]);
    assert!(ok, "{stderr}");
    let said: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("compiled-in engines run one code layout: not enough disk space for relinking 2 layout variants: "))
        .collect();
    assert_eq!(said.len(), 1, "{stderr}");
    assert!(
        said[0].contains(&format!(
            "free where the worker cache is ({})",
            tiny.0.path().display()
        )),
        "{stderr}"
    );
    assert!(!stderr.contains("relinking this binary"), "{stderr}");
}

/// A cache root that a file holds (or lies under) is one line, exit 2,
/// before any measuring: `cache` said "0 B in 0 parts" and a session ran
/// every arm to "Not a directory" on its first rep.
#[test]
fn a_cache_root_a_file_holds_is_one_line_before_any_measuring() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("not-a-directory");
    std::fs::write(&file, "").unwrap();
    for root in [file.clone(), file.join("workers")] {
        let (ok, stdout, stderr) = cache_cmd(&root, &[]);
        assert!(!ok && stdout.is_empty(), "{stdout}{stderr}");
        let want = format!("{} is not a directory", file.display());
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(stderr.contains(&want), "{stderr}");

        let (ok, stderr, _) = session(&root, &[]);
        assert!(!ok, "{stderr}");
        let errors = crate::cli::util::assert_one_line_error(stderr.as_bytes());
        assert!(errors.contains(&want) && !errors.contains('\n'), "{stderr}");
        assert!(!stderr.contains("pilot"), "{stderr}");
        assert!(!stderr.contains("relinking"), "{stderr}");
    }
}
