//! Mock arms with a source: `mock=git:DIR#REV` is the mock engine with the
//! options written in the file `loopbench-mock` of that revision
//! (`mock=path:DIR`: of that directory), followed by the arm's own. A
//! repository whose revisions change a synthetic cost can then be bisected
//! and tracked exactly, through the same revision plumbing (resolve, commit
//! id in the version, history) a real engine's revisions take. Nothing is
//! compiled: the arm runs in a worker process of this binary.

use super::error::WorkerError;
use super::git;
use crate::arm::build::Source;
use crate::arm::{ArmSpec, EngineKind};
use crate::engines::mock::MockConfig;

/// The file of a revision that holds the mock's options (`cost=2,noise=0.1`).
pub const FILE: &str = "loopbench-mock";

/// The in-binary mock arm a mock arm with a source stands for, and how its
/// build is described (the commit id included, as for an engine's
/// revision). `None` for an arm that is not a mock with a source.
pub fn resolve(spec: &ArmSpec) -> Result<Option<(ArmSpec, String)>, WorkerError> {
    let Some(build) = spec
        .worker
        .as_ref()
        .filter(|_| spec.engine == EngineKind::Mock)
    else {
        return Ok(None);
    };
    let refuse = |detail: String| WorkerError::MockSource {
        arm: spec.to_string(),
        detail,
    };
    let (text, described) = match &build.source {
        Source::Git { repo, rev } => {
            let commit = git::resolve(EngineKind::Mock, repo, rev)?;
            let text = git::show(EngineKind::Mock, repo, rev, &commit, FILE)
                .map_err(|_| refuse(format!("commit {commit} has no file `{FILE}`")))?;
            (
                text,
                format!("git {}#{rev} commit {commit}", repo.display()),
            )
        }
        Source::Path(dir) => {
            let path = dir.join(FILE);
            let text = std::fs::read_to_string(&path)
                .map_err(|e| refuse(format!("cannot read {}: {e}", path.display())))?;
            (text, format!("path {}", dir.display()))
        }
        Source::Registry(_) | Source::Default => {
            return Err(refuse(format!(
                "the mock engine is not built; give it a revision (=git:DIR#REV) or a \
                 directory (=path:DIR) whose file `{FILE}` holds its options"
            )))
        }
    };
    let mut options: Vec<String> = text
        .split([',', '\n'])
        .map(str::trim)
        .filter(|o| !o.is_empty() && !o.starts_with('#'))
        .map(str::to_string)
        .collect();
    options.extend(spec.options.iter().cloned());
    MockConfig::parse(&options).map_err(|e| refuse(format!("`{FILE}`: {e}")))?;
    let derived = ArmSpec {
        engine: EngineKind::Mock,
        options: options.clone(),
        worker: None,
    };
    Ok(Some((
        derived,
        format!("{described}, synthetic costs {}", options.join(",")),
    )))
}
