//! Locating a build's engine source: a registry requirement, the version
//! compiled into this binary, a local crate or workspace, or a git revision
//! checked out into the cache; and picking the adapter family for its
//! version. Cheap enough to run before any work ([`super::check`]).

use super::cargo::metadata;
use super::error::WorkerError;
use super::family::{self, Family};
use super::supervise::tail;
use crate::arm::build::{self, BuildSpec, Source};
use crate::arm::RequirementError;
use crate::engines::EngineKind;
use cargo_metadata::MetadataCommand;
use semver::Version;
use std::path::{Path, PathBuf};

/// The engine dependency after looking at the source.
#[derive(Clone, Debug, PartialEq)]
pub enum Dependency {
    Registry(String),
    /// The crate's directory, its declared version and the features it
    /// declares.
    Path(PathBuf, Version, Vec<String>),
}

/// Resolve the source into a dependency and pick the adapter family; for
/// registry sources the family follows the requirement's lowest version and
/// is checked again against the resolved version after resolution.
pub fn locate(
    engine: EngineKind,
    build: &BuildSpec,
) -> Result<(Dependency, &'static Family), WorkerError> {
    let (dep, version) = match &build.source {
        Source::Registry(req) => {
            let v = build::lowest_version(req)
                .ok_or_else(|| RequirementError::NoVersion { req: req.clone() })?;
            (Dependency::Registry(req.clone()), v)
        }
        Source::Default => {
            let v = compiled_in_version(engine).ok_or(WorkerError::NotCompiledIn { engine })?;
            (Dependency::Registry(format!("={v}")), v)
        }
        Source::Path(p) => {
            let (dir, v, features) = package_in(engine, p)?;
            (Dependency::Path(dir, v.clone(), features), v)
        }
        Source::Git { repo, rev } => {
            let commit = super::git::resolve(engine, repo, rev)?;
            let tree = super::git::checkout(engine, repo, rev, &commit)?;
            let (dir, v, features) = package_in(engine, &tree)?;
            (Dependency::Path(dir, v.clone(), features), v)
        }
    };
    Ok((dep, family::pick(engine, &version)?))
}

pub(super) fn compiled_in_version(engine: EngineKind) -> Option<Version> {
    if engine == EngineKind::Mock {
        return None;
    }
    Version::parse(engine.version()).ok()
}

/// Check a path source before any work: the directory exists and holds a
/// Cargo manifest.
pub fn check_path(engine: EngineKind, dir: &Path) -> Result<(), WorkerError> {
    if !dir.is_dir() {
        return Err(WorkerError::NoDirectory {
            engine,
            dir: dir.to_path_buf(),
        });
    }
    if !dir.join("Cargo.toml").is_file() {
        return Err(WorkerError::NoManifest {
            engine,
            dir: dir.to_path_buf(),
        });
    }
    Ok(())
}

/// The directory, version and declared features of the package named
/// `engine` at `dir` (the crate itself, or a member of the workspace at
/// `dir`).
fn package_in(
    engine: EngineKind,
    dir: &Path,
) -> Result<(PathBuf, Version, Vec<String>), WorkerError> {
    check_path(engine, dir)?;
    let dir = dir.canonicalize().map_err(|e| WorkerError::io(dir, e))?;
    let mut cmd = MetadataCommand::new();
    cmd.no_deps().manifest_path(dir.join("Cargo.toml"));
    let meta = metadata(cmd, None).map_err(|e| WorkerError::BadManifest {
        engine,
        dir: dir.clone(),
        detail: tail(&e, 3).join(" | "),
    })?;
    let found = meta
        .packages
        .iter()
        .find(|p| p.name.as_str() == engine.name())
        .ok_or_else(|| {
            let names: Vec<&str> = meta.packages.iter().map(|p| p.name.as_str()).collect();
            WorkerError::NoPackage {
                engine,
                dir: dir.clone(),
                found: if names.is_empty() {
                    "none".to_string()
                } else {
                    names.join(", ")
                },
            }
        })?;
    let crate_dir = found
        .manifest_path
        .parent()
        .map(|p| p.as_std_path().to_path_buf())
        .unwrap_or(dir);
    let features = found.features.keys().cloned().collect();
    Ok((crate_dir, found.version.clone(), features))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(s: &str) -> (EngineKind, BuildSpec) {
        let p = build::parse(s).unwrap();
        (p.engine.parse().unwrap(), p.build.unwrap())
    }

    #[test]
    fn a_directory_without_a_crate_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let e = check_path(EngineKind::Wasmi, dir.path())
            .unwrap_err()
            .to_string();
        assert!(e.contains("no Cargo.toml there"), "{e}");
        let e = check_path(EngineKind::Wasmi, &dir.path().join("missing"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("no such directory"), "{e}");
    }

    #[test]
    fn versions_outside_the_families_are_refused_before_building() {
        let (e, b) = spec("wasmi@0.40");
        let err = locate(e, &b).unwrap_err().to_string();
        assert!(err.contains("outside every adapter family"), "{err}");
    }
}
