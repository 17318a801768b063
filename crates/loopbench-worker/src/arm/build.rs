//! The build part of an arm, as written on the command line.
//!
//! ```text
//! ENGINE[@REQ | =path:DIR][+SETTING...][:OPTION,...]
//!
//!   wasmi@0.31                     registry version requirement (Cargo syntax)
//!   tinywasm@=0.12.0-beta.0        an exact pre-release
//!   tinywasm=path:../tinywasm      a local checkout (the crate, or a workspace holding it)
//!   wasmi@2+feature:simd           extra Cargo features (repeat for more)
//!   wasmi@0.31+profile:lto         release (default), dev, or lto (fat LTO, one codegen unit)
//!   wasmi+rustflags:-Ctarget-cpu=native   RUSTFLAGS for the worker build (use spaces, not commas)
//!   tinywasm@0.12.0-beta.0+ignore-rust-version   build although the crate declares a newer rustc
//!   wasmi@0.31:fuel                engine options after the last `:`, as for in-process arms
//! ```
//!
//! A setting without a source (`wasmi+profile:lto`) builds the version this
//! binary was compiled with. Options are recognised after the last `:` unless
//! that colon belongs to `path:`, `feature:`, `profile:` or `rustflags:`, so
//! paths containing `:` are not supported.

use super::error::{RequirementError, SpecError};
use semver::{Op, Version, VersionReq};
use std::fmt;
use std::path::PathBuf;

/// Where the engine's source comes from.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Source {
    /// A crates.io version requirement, in Cargo's syntax (`0.31`, `=2.0.0`).
    Registry(String),
    /// A local directory: the crate itself or a workspace that contains it.
    Path(PathBuf),
    /// A revision of a local git repository (`=git:DIR#REV`), checked out
    /// into a worktree under the cache, keyed by its commit id.
    Git { repo: PathBuf, rev: String },
    /// The version this binary was compiled with.
    Default,
}

/// Cargo profiles a worker can be built with.
pub const PROFILES: [(&str, &str); 3] = [
    (
        "release",
        "the default; the same settings as loopbench's own release build",
    ),
    ("dev", "unoptimised, quick to build"),
    ("lto", "release with fat LTO and one codegen unit"),
];

/// An engine build: the source plus Cargo settings.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct BuildSpec {
    pub source: Source,
    /// Extra Cargo features of the engine crate, in the order given.
    pub features: Vec<String>,
    /// One of [`PROFILES`].
    pub profile: String,
    /// RUSTFLAGS for the worker build (none: the environment's RUSTFLAGS is
    /// cleared so the build does not depend on it).
    pub rustflags: Option<String>,
    /// Pass `--ignore-rust-version` to cargo.
    pub ignore_rust_version: bool,
}

impl Default for BuildSpec {
    fn default() -> Self {
        BuildSpec {
            source: Source::Default,
            features: Vec::new(),
            profile: "release".into(),
            rustflags: None,
            ignore_rust_version: false,
        }
    }
}

impl fmt::Display for BuildSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.source {
            Source::Registry(req) => write!(f, "@{req}")?,
            Source::Path(p) => write!(f, "=path:{}", p.display())?,
            // An empty revision (never parsed: see `ArmSpec::at_revision`)
            // is the repository alone, as `bisect --engine` takes it.
            Source::Git { repo, rev } if rev.is_empty() => write!(f, "=git:{}", repo.display())?,
            Source::Git { repo, rev } => write!(f, "=git:{}#{rev}", repo.display())?,
            Source::Default => {}
        }
        for feat in &self.features {
            write!(f, "+feature:{feat}")?;
        }
        if self.profile != "release" {
            write!(f, "+profile:{}", self.profile)?;
        }
        if let Some(flags) = &self.rustflags {
            write!(f, "+rustflags:{flags}")?;
        }
        if self.ignore_rust_version {
            f.write_str("+ignore-rust-version")?;
        }
        Ok(())
    }
}

/// The parts of one arm string: engine name, build (if any), options.
#[derive(Debug, PartialEq)]
pub struct Parsed<'a> {
    pub engine: &'a str,
    pub build: Option<BuildSpec>,
    pub options: Vec<String>,
}

const KEYS: [&str; 5] = ["path", "git", "feature", "profile", "rustflags"];

/// True when the arm string uses build syntax at all: in the part before
/// the first `:` (so option values such as `mock:cost=12.5` are not builds).
pub fn is_build(s: &str) -> bool {
    s.split(':').next().unwrap_or(s).contains(['@', '=', '+'])
}

/// Split an arm string into engine, build and options.
pub fn parse(s: &str) -> Result<Parsed<'_>, SpecError> {
    if !is_build(s) {
        let (engine, opts) = s.split_once(':').unwrap_or((s, ""));
        return Ok(Parsed {
            engine,
            build: None,
            options: split_options(opts),
        });
    }
    let (rest, opts) = split_trailing_options(s);
    let mut parts = rest.split('+');
    let head = parts.next().unwrap_or_default();
    let mut build = BuildSpec::default();
    let engine = if let Some((engine, req)) = head.split_once('@') {
        check_requirement(req).map_err(|source| SpecError::Requirement {
            arm: s.to_string(),
            source,
        })?;
        build.source = Source::Registry(req.to_string());
        engine
    } else if let Some((engine, git)) = head
        .split_once('=')
        .and_then(|(e, src)| Some((e, src.strip_prefix("git:")?)))
    {
        let (repo, rev) = git
            .rsplit_once('#')
            .filter(|(repo, rev)| !repo.is_empty() && !rev.is_empty())
            .ok_or_else(|| SpecError::GitRevision {
                arm: s.to_string(),
                got: git.to_string(),
            })?;
        build.source = Source::Git {
            repo: PathBuf::from(repo),
            rev: rev.to_string(),
        };
        engine
    } else if let Some((engine, src)) = head.split_once('=') {
        let dir = src
            .strip_prefix("path:")
            .ok_or_else(|| SpecError::NotAPath {
                arm: s.to_string(),
                engine: engine.to_string(),
                got: src.to_string(),
            })?;
        if dir.is_empty() {
            return Err(SpecError::EmptyPath { arm: s.to_string() });
        }
        build.source = Source::Path(PathBuf::from(dir));
        engine
    } else {
        head
    };
    if engine.is_empty() {
        return Err(SpecError::MissingEngine { arm: s.to_string() });
    }
    for setting in parts {
        match setting.split_once(':') {
            Some(("feature", f)) if !f.is_empty() && !f.contains(char::is_whitespace) => {
                if !build.features.iter().any(|x| x == f) {
                    build.features.push(f.to_string());
                }
            }
            Some(("profile", p)) => {
                if !PROFILES.iter().any(|(n, _)| *n == p) {
                    let valid: Vec<_> = PROFILES.iter().map(|(n, _)| *n).collect();
                    return Err(SpecError::UnknownProfile {
                        arm: s.to_string(),
                        profile: p.to_string(),
                        valid: valid.join(", "),
                    });
                }
                build.profile = p.to_string();
            }
            Some(("rustflags", flags)) if !flags.trim().is_empty() => {
                build.rustflags = Some(flags.to_string())
            }
            None if setting == "ignore-rust-version" => build.ignore_rust_version = true,
            _ => {
                return Err(SpecError::UnknownSetting {
                    arm: s.to_string(),
                    setting: setting.to_string(),
                })
            }
        }
    }
    Ok(Parsed {
        engine,
        build: Some(build),
        options: split_options(opts),
    })
}

fn split_options(opts: &str) -> Vec<String> {
    opts.split(',')
        .filter(|o| !o.is_empty())
        .map(str::to_string)
        .collect()
}

/// Separate `:options` at the end of `s`, unless that last colon belongs to
/// a `key:` of the build syntax.
fn split_trailing_options(s: &str) -> (&str, &str) {
    let Some(i) = s.rfind(':') else {
        return (s, "");
    };
    let (head, tail) = (&s[..i], &s[i + 1..]);
    let last_word = head.rsplit(['+', '=']).next().unwrap_or(head);
    if KEYS.contains(&last_word) {
        (s, "")
    } else {
        (head, tail)
    }
}

/// A Cargo version requirement, checked with Cargo's own parser (`semver`),
/// and with a version to pick the adapter family by.
fn check_requirement(req: &str) -> Result<(), RequirementError> {
    if req.trim().is_empty() {
        return Err(RequirementError::Empty);
    }
    match VersionReq::parse(req) {
        Ok(_) if lowest_version(req).is_some() => Ok(()),
        Err(e) if req.chars().any(|c| c.is_ascii_digit()) => Err(RequirementError::Invalid {
            req: req.to_string(),
            detail: e.to_string(),
        }),
        _ => Err(RequirementError::NoVersion {
            req: req.to_string(),
        }),
    }
}

/// The lowest version a requirement admits, from its first comparator
/// (`^0.31` -> 0.31.0, `=0.12.0-beta.0` -> itself; `*` and `<2` name
/// none), used to pick the adapter family before resolution; the resolved
/// version is checked again after it.
pub fn lowest_version(req: &str) -> Option<Version> {
    let req = VersionReq::parse(req).ok()?;
    let c = req.comparators.first()?;
    if matches!(c.op, Op::Less | Op::LessEq) {
        return None;
    }
    Some(Version {
        major: c.major,
        minor: c.minor.unwrap_or(0),
        patch: c.patch.unwrap_or(0),
        pre: c.pre.clone(),
        build: semver::BuildMetadata::EMPTY,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn build(s: &str) -> BuildSpec {
        parse(s).unwrap().build.unwrap()
    }

    #[test]
    fn registry_path_and_settings() {
        let p = parse("wasmi@0.31:fuel").unwrap();
        assert_eq!(p.engine, "wasmi");
        assert_eq!(p.options, ["fuel"]);
        assert_eq!(p.build.unwrap().source, Source::Registry("0.31".into()));

        let b = build("tinywasm=path:../tw+feature:simd-intrinsics+feature:std+profile:lto+ignore-rust-version");
        assert_eq!(b.source, Source::Path("../tw".into()));
        let g = parse("wasmi=git:../wasmi#main:fuel").unwrap();
        assert_eq!(
            g.build.unwrap().source,
            Source::Git {
                repo: "../wasmi".into(),
                rev: "main".into()
            }
        );
        assert_eq!(g.options, ["fuel"]);
        assert!(matches!(
            parse("wasmi=git:../wasmi"),
            Err(SpecError::GitRevision { .. })
        ));
        assert_eq!(b.features, ["simd-intrinsics", "std"]);
        assert_eq!(b.profile, "lto");
        assert!(b.ignore_rust_version);

        let p = parse("wasmi=path:/src/wasmi:fuel,eager").unwrap();
        assert_eq!(p.options, ["fuel", "eager"]);
        assert_eq!(p.build.unwrap().source, Source::Path("/src/wasmi".into()));

        let b = build("wasmi+rustflags:-Ctarget-cpu=native");
        assert_eq!(b.source, Source::Default);
        assert_eq!(b.rustflags.as_deref(), Some("-Ctarget-cpu=native"));

        let p = parse("wasmi@2+feature:simd:fuel").unwrap();
        assert_eq!(p.options, ["fuel"]);
        assert_eq!(p.build.unwrap().features, ["simd"]);
    }

    #[test]
    fn display_round_trips() {
        for s in [
            "@0.31",
            "=path:../x+feature:a+profile:dev",
            "@=0.12.0-beta.0+rustflags:-Ctarget-cpu=native+ignore-rust-version",
        ] {
            let b = build(&format!("tinywasm{s}"));
            assert_eq!(b.to_string(), s);
        }
    }

    #[test]
    fn plain_arms_have_no_build() {
        let p = parse("wasmi:fuel").unwrap();
        assert_eq!(
            (p.engine, p.build, p.options),
            ("wasmi", None, vec!["fuel".to_string()])
        );
    }

    #[test]
    fn bad_input_is_one_clear_line() {
        for (s, needle) in [
            ("wasmi=../x", "expected `path:DIR`"),
            ("wasmi@", "empty version requirement"),
            ("wasmi@abc", "no version number"),
            ("wasmi@0.31+profile:fast", "unknown profile `fast`"),
            ("wasmi@0.31+turbo", "unknown build setting `+turbo`"),
            ("@0.31", "missing engine name"),
            ("wasmi=path:", "empty path"),
        ] {
            let e = parse(s).unwrap_err().to_string();
            assert!(e.contains(needle), "{s}: {e}");
            assert!(!e.contains('\n'));
        }
    }

    #[test]
    fn versions() {
        assert_eq!(lowest_version("0.31").unwrap(), Version::new(0, 31, 0));
        assert_eq!(
            lowest_version("=0.12.0-beta.0").unwrap().pre.as_str(),
            "beta.0"
        );
        assert_eq!(lowest_version("^2").unwrap().major, 2);
        assert_eq!(lowest_version("~1.2.3").unwrap(), Version::new(1, 2, 3));
        assert_eq!(lowest_version(">=1.1, <2").unwrap(), Version::new(1, 1, 0));
        assert!(lowest_version("*").is_none());
        assert!(lowest_version("<2").is_none());
        assert!(lowest_version("1.2.3.4").is_none());
        assert_eq!(
            lowest_version("=0.12.0-beta.0").unwrap().to_string(),
            "0.12.0-beta.0"
        );
        let e = check_requirement("0.31;x").unwrap_err().to_string();
        assert!(e.contains("is not a version requirement"), "{e}");
    }
}
