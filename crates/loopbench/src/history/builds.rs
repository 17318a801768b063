//! A stored arm's build: its engine, its source and commit read from the
//! label and version a session recorded, how it is shown, and whether two
//! sessions ran the same build (trend and alerts ask).

use crate::arm::build::Source;
use crate::arm::ArmSpec;

/// The build an arm label names, as stored: engine, options, source.
pub(super) struct ArmParts {
    pub(super) engine: String,
    pub(super) options: String,
    pub(super) source: String,
    pub(super) commit: Option<String>,
}

/// The commit id a git arm's version states (`... commit <40 hex>`).
fn commit_in(version: &str) -> Option<String> {
    version.match_indices("commit ").find_map(|(i, m)| {
        let id: String = version[i + m.len()..].chars().take(40).collect();
        (id.len() == 40 && id.chars().all(|c| c.is_ascii_hexdigit())).then_some(id)
    })
}

/// A stored arm's build as the listings show it: its version, and the
/// first 12 characters of its commit (a row written straight into the
/// database may hold any text there, so characters, not bytes).
pub fn build_label(version: &str, commit: Option<&str>) -> String {
    match commit {
        Some(c) => format!("{version} {}", short_commit(c)),
        None => version.to_string(),
    }
}

/// Whether a session brought a new build of an arm, from the stored
/// builds (version and commit) of the session before and its own:
/// `Some(true)` when they differ, `Some(false)` when they agree and both
/// name the loopbench binary that hosted them (`loopbench ID`, recorded
/// since 2026-12-04) or the timed path that built them (`loopbench-worker
/// ID`, since 2026-12-06), `None` otherwise: an older version string
/// says `this binary` whichever binary it was, and two loopbench binaries
/// are two builds of a compiled-in engine (tinywasm 0.10.0's
/// locals_traffic ran at 3.6x and 2.6x wasm3 in two binaries that differed
/// in report code only, both recorded as one version).
pub fn new_build(before: (&str, Option<&str>), at: (&str, Option<&str>)) -> Option<bool> {
    if before != at {
        return Some(true);
    }
    let names_binary = |v: &str| {
        ["loopbench ", "loopbench-worker "].iter().any(|by| {
            v.match_indices(by).any(|(i, m)| {
                let id = &v[i + m.len()..];
                id.len() >= 12 && id.bytes().take(12).all(|b| b.is_ascii_hexdigit())
            })
        })
    };
    names_binary(at.0).then_some(false)
}

/// A commit as listings show it: `@` and its first 12 characters.
pub fn short_commit(commit: &str) -> String {
    format!("@{}", commit.chars().take(12).collect::<String>())
}

pub(super) fn arm_parts(label: &str, version: &str) -> ArmParts {
    // The null control is the baseline arm again, under a marked label.
    let spec_text = label.strip_suffix("#null").unwrap_or(label);
    match spec_text.parse::<ArmSpec>() {
        Ok(spec) => {
            let (source, commit) = match spec.worker.as_ref().map(|w| &w.source) {
                None | Some(Source::Default) => ("built-in".to_string(), None),
                Some(Source::Registry(req)) => (format!("crates.io {req}"), None),
                Some(Source::Path(p)) => (format!("path {}", p.display()), None),
                Some(Source::Git { repo, rev }) => {
                    (format!("git {}#{rev}", repo.display()), commit_in(version))
                }
            };
            ArmParts {
                engine: spec.engine.name().to_string(),
                options: spec.options.join(","),
                source,
                commit,
            }
        }
        // An arm this loopbench no longer parses (an older file): keep
        // its label as the engine so nothing is lost.
        Err(_) => ArmParts {
            engine: spec_text.to_string(),
            options: String::new(),
            source: "unknown".to_string(),
            commit: None,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_build_is_known_the_same_only_when_it_names_its_binary() {
        let named = "tinywasm 0.10.0 [worker: this binary, loopbench 50b46371cb88]";
        let other = "tinywasm 0.10.0 [worker: this binary, loopbench 201b50a9afc4]";
        let old = "tinywasm 0.10.0 [worker: this binary]";
        assert_eq!(new_build((named, None), (named, None)), Some(false));
        assert_eq!(new_build((named, None), (other, None)), Some(true));
        assert_eq!(new_build((old, None), (named, None)), Some(true));
        // Recorded before versions named the binary: which one is unknown.
        assert_eq!(new_build((old, None), (old, None)), None);
        assert_eq!(new_build((old, Some("a")), (old, Some("b"))), Some(true));
        assert_eq!(
            new_build(("x [loopbench 12ab]", None), ("x [loopbench 12ab]", None)),
            None,
            "not an id"
        );
        // A worker build names the timed path that built it, not the
        // host: two loopbench binaries, one build.
        let built = "wasmi 2.0.0 [worker: crates.io =2.0.0, profile release, adapter wasmi_1x, loopbench-worker 166d3ae1d031]";
        let rebuilt = "wasmi 2.0.0 [worker: crates.io =2.0.0, profile release, adapter wasmi_1x, loopbench-worker 4992372ae973]";
        assert_eq!(new_build((built, None), (built, None)), Some(false));
        assert_eq!(new_build((built, None), (rebuilt, None)), Some(true));
    }

    #[test]
    fn git_arms_keep_their_commit() {
        let id = "0123456789abcdef0123456789abcdef01234567";
        let p = arm_parts(
            "wasmi=git:../wasmi#main#null",
            &format!("2.0.0 [worker: git ../wasmi#main commit {id}, profile release]"),
        );
        assert_eq!(p.engine, "wasmi");
        assert_eq!(p.source, "git ../wasmi#main");
        assert_eq!(p.commit.as_deref(), Some(id));
        assert_eq!(commit_in("2.0.0 commit 0123"), None);
        let old = arm_parts("gone-engine:x", "1");
        assert_eq!(
            (old.engine.as_str(), old.source.as_str()),
            ("gone-engine:x", "unknown")
        );
    }
}
