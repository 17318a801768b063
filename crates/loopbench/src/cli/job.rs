//! A fleet job as the command line sees it, on both ends of the queue.
//!
//! Whoever may insert into `jobs` chooses what every agent of a label runs,
//! so a job is checked with the real parser of `run` twice: by `submit`
//! (early, for a clear error) and by the agent itself (a row written
//! straight into the table never met `submit`). A job may not name a file
//! on the agent: no output paths (`--json`, `--csv`, `--html`, ...), no
//! `--db`, and its shape files travel as content (`submit` reads them; the
//! agent writes them into the job's private directory). A job may not set
//! build flags (`+rustflags:` can name a linker), and builds come only from
//! sources the agent's operator allows (`agent --allow-builds`): building a
//! crate runs its build script, a crates.io one included.

use super::run::RunArgs;
use crate::arm::build::Source;
use crate::arm::{parse_arms, ArmSpec};
use crate::error::Error;
use crate::history::queue::{JobFile, Work};
use clap::Parser;
use std::path::{Path, PathBuf};

/// A machine label or agent name (`submit --machines`, `agent --label`,
/// `--name`): the key that pairs jobs with agents, so one with a control
/// character, a line break or spaces at its ends would queue jobs that no
/// agent started as the user typed it ever takes. Refused in one line that
/// shows the name escaped.
pub fn check_name(option: &str, name: &str) -> Result<(), Error> {
    let why = if name.trim().is_empty() {
        "is empty"
    } else if name.chars().any(crate::report::markup::acts) {
        "holds a control character"
    } else if name.trim() != name {
        "starts or ends with white space"
    } else {
        return Ok(());
    };
    Err(Error::Usage(format!(
        "{option} `{}` {why}: a label or name is printable text",
        name.escape_default()
    )))
}

/// The build sources an agent's operator allows (`--allow-builds`).
#[derive(Clone, Debug, Default)]
pub struct Allow {
    /// `crates.io`: registry versions (`@REQ`) and builds of the version
    /// this binary was compiled with (`+profile:lto`).
    registry: bool,
    /// Directories (canonical): `=path:` arms inside one, and `=git:`
    /// arms whose repository is inside one.
    dirs: Vec<PathBuf>,
}

/// The word of `--allow-builds` for crates.io.
const REGISTRY: &str = "crates.io";

impl Allow {
    pub fn parse(values: &[String]) -> Result<Self, Error> {
        let mut allow = Allow::default();
        for v in values {
            if v == REGISTRY {
                allow.registry = true;
                continue;
            }
            let dir = std::fs::canonicalize(v).map_err(|e| {
                Error::Usage(format!(
                    "--allow-builds {v}: not a directory ({e}); give directories or `{REGISTRY}`"
                ))
            })?;
            if !dir.is_dir() {
                return Err(Error::Usage(format!(
                    "--allow-builds {v}: not a directory; give directories or `{REGISTRY}`"
                )));
            }
            allow.dirs.push(dir);
        }
        Ok(allow)
    }

    fn describe(&self) -> String {
        let mut parts: Vec<String> = self.dirs.iter().map(|d| d.display().to_string()).collect();
        if self.registry {
            parts.insert(0, REGISTRY.to_string());
        }
        if parts.is_empty() {
            "this agent allows no builds".into()
        } else {
            format!("this agent allows builds from {}", parts.join(", "))
        }
    }

    fn inside(&self, dir: &Path) -> bool {
        std::fs::canonicalize(dir).is_ok_and(|d| self.dirs.iter().any(|a| d.starts_with(a)))
    }

    /// Whether `arm`'s build comes from an allowed source.
    fn admits(&self, arm: &ArmSpec) -> bool {
        match arm.worker.as_ref().map(|b| &b.source) {
            None => true,
            Some(Source::Registry(_) | Source::Default) => self.registry,
            Some(Source::Path(dir)) => self.inside(dir),
            Some(Source::Git { repo, .. }) => self.inside(repo),
        }
    }
}

/// Options of `run` a job may not carry, and why.
fn refused_options(run: &RunArgs) -> Option<&'static str> {
    let o = &run.output;
    [
        (o.json.is_some(), "--json"),
        (o.csv.is_some(), "--csv"),
        (o.markdown.is_some(), "--markdown"),
        (o.html.is_some(), "--html"),
        (!o.export.is_empty(), "--export"),
        (run.keep.db.db.is_some(), "--db"),
        (run.keep.no_history, "--no-history"),
        (run.keep.save_baseline.is_some(), "--save-baseline"),
    ]
    .into_iter()
    .find_map(|(given, name)| given.then_some(name))
}

/// `args` parsed as `run` and held to the rules of a job; with `allow`
/// (on an agent), build arms must come from its allowed sources.
fn check(args: &[String], allow: Option<&Allow>) -> Result<RunArgs, Error> {
    if args.first().map(String::as_str) != Some("run") {
        return Err(Error::Usage(format!(
            "a job is `run ARGS...`, got `{}`",
            args.join(" ")
        )));
    }
    let argv = std::iter::once("loopbench".to_string()).chain(args.iter().cloned());
    let cli = super::Cli::try_parse_from(argv).map_err(|e| {
        let text = e.to_string();
        let first = text
            .lines()
            .next()
            .unwrap_or("")
            .trim_start_matches("error: ");
        Error::Usage(format!("the job's `run` arguments: {first}"))
    })?;
    let super::Command::Run(run) = cli.command else {
        return Err(Error::Usage("a job is `run ARGS...`".into()));
    };
    if let Some(option) = refused_options(&run) {
        return Err(Error::Usage(format!(
            "{option} in a job: a job cannot name files or databases on the agents; \
             the agent stores each job's results in the database itself"
        )));
    }
    let mut arms = parse_arms(&run.engines)?;
    for extra in [&run.baseline, &run.reference].into_iter().flatten() {
        arms.push(extra.parse()?);
    }
    for arm in &arms {
        if arm.worker.as_ref().is_some_and(|b| b.rustflags.is_some()) {
            return Err(Error::Usage(format!(
                "arm {arm}: `+rustflags:` in a job: build flags can run programs (a linker) on the agents"
            )));
        }
        if let Some(allow) = allow.filter(|a| !a.admits(arm)) {
            return Err(Error::Usage(format!(
                "arm {arm}: building it runs its source's build scripts on this machine, and {} \
                 (agent --allow-builds DIR|{REGISTRY})",
                allow.describe()
            )));
        }
    }
    Ok(run)
}

/// `args` with every `--shape-file` value replaced by `f(value)`.
fn map_shape_files(
    args: &[String],
    mut f: impl FnMut(&str) -> Result<String, Error>,
) -> Result<Vec<String>, Error> {
    const OPT: &str = "--shape-file";
    let mut out = Vec::with_capacity(args.len());
    let mut it = args.iter();
    while let Some(a) = it.next() {
        if a == OPT {
            out.push(a.clone());
            if let Some(v) = it.next() {
                out.push(f(v)?);
            }
        } else if let Some(v) = a.strip_prefix("--shape-file=") {
            out.push(format!("{OPT}={}", f(v)?));
        } else {
            out.push(a.clone());
        }
    }
    Ok(out)
}

/// A job's file name: a plain name, so it stays inside the job's directory.
fn plain_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 255
        && !name.starts_with('.')
        && !name.contains(['/', '\\', '\0'])
}

/// `submit`: check `args` (a `run` and its arguments) as a job and carry
/// its shape files as content, each named by its file name.
pub fn pack(args: &[String]) -> Result<Work, Error> {
    let run = check(args, None)?;
    // The session as planned here: shapes and arms that cannot run fail
    // now, not on every machine.
    run.plan()?;
    let mut files: Vec<JobFile> = Vec::new();
    let args = map_shape_files(args, |path| {
        let name = Path::new(path)
            .file_name()
            .and_then(|n| n.to_str())
            .filter(|n| plain_name(n))
            .ok_or_else(|| Error::Usage(format!("--shape-file {path}: not a file name")))?
            .to_string();
        if files.iter().any(|f| f.name == name) {
            return Err(Error::Usage(format!(
                "--shape-file: two files named {name} in one job"
            )));
        }
        let content = crate::shapes::user::read_file(Path::new(path))?;
        files.push(JobFile {
            name: name.clone(),
            content,
        });
        Ok(name)
    })?;
    Ok(Work { args, files })
}

/// The agent: write `work`'s files into `dir` (the job's private
/// directory) and return the arguments to run, checked as a job against
/// `allow`. No message quotes a file's content.
pub fn unpack(work: &Work, dir: &Path, allow: &Allow) -> Result<Vec<String>, Error> {
    for f in &work.files {
        if !plain_name(&f.name) {
            return Err(Error::Usage(format!(
                "the job's file `{}` is not a plain file name",
                f.name.escape_debug()
            )));
        }
        if f.content.len() as u64 > crate::shapes::user::MAX_SHAPE_FILE {
            return Err(Error::Usage(format!(
                "the job's file `{}` is larger than a shape file may be ({} MiB)",
                f.name.escape_debug(),
                crate::shapes::user::MAX_SHAPE_FILE >> 20
            )));
        }
        let path = dir.join(&f.name);
        std::fs::write(&path, &f.content)
            .map_err(|e| Error::io(format!("cannot write {}", path.display()), e))?;
    }
    let args = map_shape_files(&work.args, |name| {
        if work.files.iter().any(|f| f.name == name) {
            Ok(dir.join(name).display().to_string())
        } else {
            Err(Error::Usage(format!(
                "--shape-file {}: a job carries its shape files as content (submit reads them), \
                 and this one carries no file of that name",
                name.escape_debug()
            )))
        }
    })?;
    let run = check(&args, Some(allow))?;
    // Whatever spelling reached the parser, every shape file is the job's own.
    if let Some(f) = run.shape_files.iter().find(|f| !f.starts_with(dir)) {
        return Err(Error::Usage(format!(
            "--shape-file {}: not one of the job's files",
            f.display().to_string().escape_debug()
        )));
    }
    Ok(args)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    fn refused(s: &str, allow: &Allow) -> String {
        let dir = tempfile::tempdir().unwrap();
        unpack(&Work::new(args(s)), dir.path(), allow)
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn outputs_paths_and_flags_are_refused_however_spelled() {
        let none = Allow::default();
        for (job, says) in [
            ("run --engines wasmi --html /tmp/x", "--html in a job"),
            ("run --engines wasmi --csv=/tmp/x", "--csv in a job"),
            ("run --markdown - --engines wasmi", "--markdown in a job"),
            ("run --export json=/tmp/x", "--export in a job"),
            ("run --db /tmp/x.sqlite", "--db in a job"),
            ("run --engines wasmi+rustflags:-Clinker=/x", "+rustflags:"),
            ("run --engines wasmi=path:/tmp", "allows no builds"),
            ("run --engines wasmi@0.31", "allows no builds"),
            ("run --engines wasmi+profile:lto", "allows no builds"),
            (
                "run --shape-file /etc/shadow",
                "carries no file of that name",
            ),
            (
                "run --shape-file=/etc/shadow",
                "carries no file of that name",
            ),
            ("list", "a job is `run"),
        ] {
            let e = refused(job, &none);
            assert!(e.contains(says), "{job}: {e}");
        }
    }

    #[test]
    fn allowed_sources_admit_their_builds_only() {
        let root = tempfile::tempdir().unwrap();
        let inside = root.path().join("wasmi");
        std::fs::create_dir(&inside).unwrap();
        let other = tempfile::tempdir().unwrap();
        let allow = Allow::parse(&[root.path().display().to_string()]).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let job = |arm: String| {
            unpack(
                &Work::new(args(&format!("run --engines {arm}"))),
                dir.path(),
                &allow,
            )
        };
        job(format!("wasmi=path:{}", inside.display())).unwrap();
        job(format!("wasmi=git:{}#main", inside.display())).unwrap();
        let e = job(format!("wasmi=path:{}", other.path().display())).unwrap_err();
        assert!(e.to_string().contains("allows builds from"), "{e}");
        // `..` out of an allowed directory is outside it.
        let e = job(format!("wasmi=path:{}/..", root.path().display())).unwrap_err();
        assert!(e.to_string().contains("allows builds from"), "{e}");
        assert!(job("wasmi@0.31".into()).is_err());
        let registry = Allow::parse(&["crates.io".into()]).unwrap();
        unpack(
            &Work::new(args("run --engines wasmi@0.31")),
            dir.path(),
            &registry,
        )
        .unwrap();
        assert!(Allow::parse(&["/no/such/dir".into()]).is_err());
    }

    #[test]
    fn shape_files_travel_as_content() {
        let src = tempfile::tempdir().unwrap();
        let file = src.path().join("my_loop.wat");
        std::fs::write(&file, "(module)").unwrap();
        let work = pack(&args(&format!(
            "run --engines wasmi --shape-file {}",
            file.display()
        )))
        .unwrap_err();
        // (module) exports no `run`: submit's own plan refuses it.
        assert!(work.to_string().contains("run"), "{work}");
        let work = Work {
            args: args("run --engines wasmi --shape-file my_loop.wat"),
            files: vec![JobFile {
                name: "my_loop.wat".into(),
                content: b"(module)".to_vec(),
            }],
        };
        let dir = tempfile::tempdir().unwrap();
        let out = unpack(&work, dir.path(), &Allow::default()).unwrap();
        let written = dir.path().join("my_loop.wat");
        assert_eq!(out.last().unwrap(), &written.display().to_string());
        assert_eq!(std::fs::read(written).unwrap(), b"(module)");
        let evil = Work {
            args: args("run --shape-file ../x.wat"),
            files: vec![JobFile {
                name: "../x.wat".into(),
                content: Vec::new(),
            }],
        };
        assert!(unpack(&evil, dir.path(), &Allow::default()).is_err());
        // A job row may carry a file no shape file may be: refused unwritten.
        let huge = Work {
            args: args("run --shape-file big.wat"),
            files: vec![JobFile {
                name: "big.wat".into(),
                content: vec![b' '; crate::shapes::user::MAX_SHAPE_FILE as usize + 1],
            }],
        };
        let e = unpack(&huge, dir.path(), &Allow::default()).unwrap_err();
        assert!(
            e.to_string().contains("larger than a shape file may be"),
            "{e}"
        );
        assert!(!dir.path().join("big.wat").exists());
    }

    #[test]
    fn labels_and_names_are_printable_text() {
        assert!(check_name("--label", "epyc-2c").is_ok());
        for bad in ["", " ", "a\n", "a\u{1b}[2J", " a", "a ", "a\u{202e}b"] {
            let e = check_name("--label", bad).unwrap_err().to_string();
            assert!(!e.contains('\u{1b}') && !e.contains('\n'), "{e:?}");
        }
    }
}
