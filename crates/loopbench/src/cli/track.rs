//! `loopbench track`: follow an engine's branch over time against a
//! reference arm. `track add` stores a definition (checked like a job
//! before anything is stored), `track run` records one anchored session
//! per shape at the branch's current head on this machine and raises the
//! track's alerts, `track list` shows the definitions and their schedules.

use super::DbArg;
use crate::arm::build::Source;
use crate::arm::ArmSpec;
use crate::error::Error;
use crate::history::sessions::{self, Origin, Provenance};
use crate::history::track::{self, Track};
use crate::report::markup::{Markup, Text};
use clap::{Args, Subcommand};
use std::process::{Command, Stdio};

#[derive(Args, Debug)]
pub struct TrackArgs {
    #[command(subcommand)]
    pub command: TrackCommand,
}

#[derive(Subcommand, Debug)]
pub enum TrackCommand {
    /// Store a track: an arm (typically `wasmi=git:DIR#main`), its reference, its shapes.
    ///
    /// Example: loopbench track add wasmi-main --engine wasmi=git:../wasmi#main --reference wasmi@=2.0.0 --shapes add_chain,load_stream --label epyc-2c --every 24h -- --budget 5
    Add(AddArgs),
    /// Record one anchored session per shape at the branch's current head
    /// on this machine, and raise the track's alerts. An interrupted run
    /// goes on from the shapes it recorded.
    Run(RunTrackArgs),
    /// The stored tracks and their schedules.
    List(ListArgs),
}

#[derive(Args, Debug)]
pub struct AddArgs {
    /// The track's name.
    pub name: String,
    /// The tracked arm; a `git:` arm's branch is resolved when each run starts.
    #[arg(long, value_name = "ARM")]
    pub engine: String,
    /// The reference arm: the yardstick every result is anchored to.
    #[arg(long, value_name = "ARM")]
    pub reference: String,
    /// Shapes, comma-separated (or `all`).
    #[arg(long, value_delimiter = ',', required = true)]
    pub shapes: Vec<String>,
    /// Machine labels whose agents queue the track once per --every.
    #[arg(long = "label", value_delimiter = ',', value_name = "LABEL")]
    pub labels: Vec<String>,
    /// The schedule's period: 24h, 30m, 90s, 1h30m (with --label).
    #[arg(long, value_name = "PERIOD")]
    pub every: Option<String>,
    #[command(flatten)]
    pub db: DbArg,
    /// Other `run` options, after `--` (e.g. -- --budget 5 --precision 1).
    #[arg(last = true, value_name = "RUN OPTIONS")]
    pub run: Vec<String>,
}

#[derive(Args, Debug)]
pub struct RunTrackArgs {
    /// The track's name.
    pub name: String,
    #[command(flatten)]
    pub db: DbArg,
}

#[derive(Args, Debug)]
pub struct ListArgs {
    #[command(flatten)]
    pub db: DbArg,
}

impl TrackArgs {
    pub fn execute(&self) -> Result<bool, Error> {
        match &self.command {
            TrackCommand::Add(a) => a.execute(),
            TrackCommand::Run(a) => a.execute(),
            TrackCommand::List(a) => a.execute(),
        }
    }
}

/// The options a track sets itself, or that would make its sessions no
/// series.
const OWN_OPTIONS: &[&str] = &[
    "--engines",
    "--reference",
    "--shapes",
    "--baseline",
    "--shape-file",
];

/// `arm` parsed, with a `path:` or `git:` directory made absolute: a
/// track runs from wherever `track run` or an agent is started.
fn absolute_arm(option: &str, arm: &str) -> Result<String, Error> {
    let mut spec: ArmSpec = arm.parse()?;
    if let Some(build) = spec.worker.as_mut() {
        let dir = match &mut build.source {
            Source::Path(p) => Some(p),
            Source::Git { repo, .. } => Some(repo),
            Source::Registry(_) | Source::Default => None,
        };
        if let Some(dir) = dir {
            *dir = std::fs::canonicalize(&*dir)
                .map_err(|e| Error::Usage(format!("{option} {arm}: {}: {e}", dir.display())))?;
        }
    }
    Ok(spec.to_string())
}

impl AddArgs {
    pub fn execute(&self) -> Result<bool, Error> {
        super::job::check_name("the track's name", &self.name)?;
        for l in &self.labels {
            super::job::check_name("--label", l)?;
        }
        let every_s = self
            .every
            .as_deref()
            .map(crate::units::parse_period)
            .transpose()
            .map_err(|e| Error::Usage(format!("--every {e}")))?;
        match (every_s.is_some(), self.labels.is_empty()) {
            (true, true) => {
                return Err(Error::Usage(
                    "--every needs --label: the machine labels whose agents run the track".into(),
                ))
            }
            (false, false) => {
                return Err(Error::Usage(
                    "--label needs --every: how often the agents run the track".into(),
                ))
            }
            _ => {}
        }
        if let Some(o) = self.run.iter().find(|a| {
            OWN_OPTIONS
                .iter()
                .any(|o| *a == o || a.starts_with(&format!("{o}=")))
        }) {
            return Err(Error::Usage(format!(
                "{} after `--`: a track sets its arm, reference and shapes itself (--engine, --reference, --shapes)",
                o.split('=').next().unwrap_or(o)
            )));
        }
        let arm = absolute_arm("--engine", &self.engine)?;
        let reference = absolute_arm("--reference", &self.reference)?;
        if arm == reference {
            return Err(Error::Usage(format!(
                "--reference {reference} is the tracked arm itself: a ratio to itself is always 1"
            )));
        }
        let shapes: Vec<String> = crate::shapes::select(&self.shapes, &[])?
            .iter()
            .map(|s| s.name().to_string())
            .collect();
        let t = Track {
            id: 0,
            name: self.name.clone(),
            arm,
            reference,
            shapes,
            args: self.run.clone(),
            labels: self.labels.clone(),
            every_s,
        };
        // The track's job as every agent and `track run` will run it: the
        // arms parse and can be built, the shapes exist, no output or
        // database is named.
        super::job::pack(&t.run_args(&t.shapes))
            .map_err(|e| Error::Usage(format!("track {}: {e}", Text.escape(&t.name))))?;
        let location = self.db.location()?;
        let mut db = location.open()?;
        let Some(id) = track::add(db.as_mut(), &t)? else {
            return Err(Error::Usage(format!(
                "track {} exists already in {location} (`loopbench track list`)",
                Text.escape(&t.name)
            )));
        };
        crate::outln!(
            "track {} ({id}) stored in {location}: {} against {} on {}{}",
            Text.escape(&t.name),
            Text.escape(&t.arm),
            Text.escape(&t.reference),
            t.shapes.join(","),
            schedule(&t)
        );
        Ok(true)
    }
}

fn schedule(t: &Track) -> String {
    match t.every_s {
        Some(e) => format!(
            "; agents of {} queue it every {}",
            Text.escape(&t.labels.join(",")),
            crate::units::show_period(e)
        ),
        None => String::new(),
    }
}

impl ListArgs {
    pub fn execute(&self) -> Result<bool, Error> {
        let location = self.db.location()?;
        let mut db = location.open_read()?;
        // Read-only: a database from before tracks (schema 5) has none.
        let tracks = if crate::history::store::version(db.as_mut())? >= 6 {
            track::list(db.as_mut())?
        } else {
            Vec::new()
        };
        if tracks.is_empty() {
            crate::outln!("no tracks in {location} (`loopbench track add` stores one)");
        }
        for t in tracks {
            crate::outln!(
                "{}: {} against {} on {}{}{}",
                Text.escape(&t.name),
                Text.escape(&t.arm),
                Text.escape(&t.reference),
                Text.escape(&t.shapes.join(",")),
                if t.args.is_empty() {
                    String::new()
                } else {
                    format!(" (run {})", Text.escape(&t.args.join(" ")))
                },
                schedule(&t)
            );
        }
        Ok(true)
    }
}

/// What a git arm's revision asks before it runs.
#[derive(Clone, Copy, PartialEq)]
enum Build {
    /// Checked out in the worker cache already (its build likely too).
    Cached,
    /// A checkout and a build first: minutes.
    Needed,
    /// Nothing is compiled (the mock engine reads its revision's file).
    None,
}

/// The commit a git arm's branch is at now, and what it needs built.
fn head(arm: &str) -> Result<Option<(String, Build)>, Error> {
    let spec: ArmSpec = arm.parse()?;
    match spec.worker.as_ref().map(|b| &b.source) {
        Some(Source::Git { repo, rev }) => {
            let commit = crate::workers::git::resolve(spec.engine, repo, rev)?;
            let build = if !spec.compiles() {
                Build::None
            } else if crate::workers::cache::worktree_dir(&commit)
                .join(".git")
                .exists()
            {
                Build::Cached
            } else {
                Build::Needed
            };
            Ok(Some((commit, build)))
        }
        _ => Ok(None),
    }
}

/// Seconds one shape of the track may take: its `--budget` (default 3 s)
/// and about a second to prepare (counting run, pilot, workers).
fn seconds_per_shape(t: &Track) -> f64 {
    use clap::Parser;
    let argv = std::iter::once("loopbench".to_string()).chain(t.run_args(&t.shapes));
    match super::Cli::try_parse_from(argv).map(|c| c.command) {
        Ok(super::Command::Run(run)) => run.epochs.budget + 1.0,
        _ => 4.0,
    }
}

impl RunTrackArgs {
    pub fn execute(&self) -> Result<bool, Error> {
        let location = self.db.location()?;
        let mut db = location.open()?;
        let t = track::find(db.as_mut(), &self.name)?.ok_or_else(|| {
            Error::Usage(format!(
                "no track {} in {location} (`loopbench track list`)",
                Text.escape(&self.name)
            ))
        })?;
        let name = Text.escape(&t.name);
        let head = head(&t.arm)?;
        let fingerprint = sessions::fingerprint(&crate::machine::Machine::read());
        let run = track::resume(
            db.as_mut(),
            &t,
            &fingerprint,
            head.as_ref().map(|h| h.0.as_str()),
        )?;
        if let Some((id, commit)) = &run.abandoned {
            crate::diag!(
                "track {name}: run {id} (commit {}) did not finish; the branch has moved, so run {} starts afresh",
                commit.as_deref().unwrap_or("-"),
                run.id
            );
        }
        let todo: Vec<String> = t
            .shapes
            .iter()
            .filter(|s| !run.recorded.contains(s))
            .cloned()
            .collect();
        let build = match &head {
            Some((commit, Build::Cached)) => {
                format!(" at commit {commit} (checked out in the worker cache)")
            }
            Some((commit, Build::Needed)) => format!(
                " at commit {commit} (not in the worker cache: a checkout and build first, minutes)"
            ),
            Some((commit, Build::None)) => format!(" at commit {commit} (nothing to build)"),
            None => String::new(),
        };
        let resumed = if run.resumed {
            format!(
                "; resuming run {}: {} recorded already, not measured again",
                run.id,
                run.recorded.join(",")
            )
        } else {
            String::new()
        };
        let per = seconds_per_shape(&t);
        crate::outln!(
            "track {name}: measuring {}{build} against {} on {} shape(s) ({}){resumed}; about {:.0} s ({} x {:.0} s{})",
            Text.escape(&t.arm),
            Text.escape(&t.reference),
            todo.len(),
            todo.join(","),
            per * todo.len() as f64,
            todo.len(),
            per,
            if matches!(head, Some((_, Build::Needed))) { " + the build" } else { "" }
        );
        let exe = std::env::current_exe()
            .map_err(|e| Error::io("cannot find this loopbench binary", e))?;
        let mut raised = Vec::new();
        for (i, shape) in todo.iter().enumerate() {
            let dir = tempfile::tempdir()
                .map_err(|e| Error::io("cannot create a temporary directory", e))?;
            let json = dir.path().join("session.json");
            let mut cmd = Command::new(&exe);
            cmd.args(t.run_args(std::slice::from_ref(shape)))
                .arg("--json")
                .arg(&json)
                .arg("--no-history")
                .env(crate::history::ENV, location_arg(&location))
                .stdin(Stdio::null());
            crate::children::die_with_parent(&mut cmd);
            let status = cmd
                .status()
                .map_err(|e| Error::io(format!("cannot start {}", exe.display()), e))?;
            let session = crate::results::read(&json)
                .ok()
                .and_then(|d| d.session().cloned())
                .filter(|s| s.complete && status.success());
            let Some(session) = session else {
                return Err(Error::Usage(format!(
                    "track {name}: {shape} did not complete ({status}); run {} keeps the {} shape(s) it recorded, \
                     and `loopbench track run {name}` goes on from there",
                    run.id,
                    run.recorded.len() + i
                )));
            };
            let (id, alerts) = track::record(
                db.as_mut(),
                &t,
                Some(run.id),
                &session,
                &Provenance::of(Origin::Run),
            )?;
            crate::outln!(
                "track {name}: {shape}: session {id} recorded in {location}{}",
                match alerts.len() {
                    0 => String::new(),
                    n => format!(", {n} alert(s) raised"),
                }
            );
            raised.extend(alerts);
        }
        track::finish(db.as_mut(), run.id)?;
        let all = crate::history::alerts::list(db.as_mut(), Some(&t.name))?;
        let new: Vec<_> = all.into_iter().filter(|a| raised.contains(&a.id)).collect();
        if new.is_empty() {
            crate::outln!("track {name}: run {} done; no new alert", run.id);
        } else {
            crate::outln!(
                "track {name}: run {} done; {} new alert(s) (`loopbench alerts --track {name} --markdown` for the issue text):",
                run.id,
                new.len()
            );
            crate::out!("{}", crate::history::alerts::text(&new));
        }
        Ok(true)
    }
}

/// The database as the child run names it: it only reads the machine's
/// recorded setting from it (`--no-history`).
fn location_arg(location: &crate::history::Location) -> String {
    match location {
        crate::history::Location::Sqlite(p) => p.display().to_string(),
        crate::history::Location::Postgres(url) => url.clone(),
    }
}
