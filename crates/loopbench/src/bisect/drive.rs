//! A bisect as it runs: the range resolved in the engine's repository,
//! the steps stored before taken up again, each step measured as a
//! `loopbench run` (or, for WASI command modules, `loopbench app run`) of
//! this binary in a child process (good and one revision, the null
//! control, the stop rule adding epochs while the comparison is unsure),
//! so a step is exactly a session a user could have run, and `--counters
//! callgrind` re-runs it under valgrind as `run` does.
//! The search and the judgement are the parent module's; the steps are
//! kept by `store`.

use super::store::{self as bisects, Key, Step};
use super::{Endpoints, Next, Search, ShapeStep, Target, Verdict};
use crate::arm::build::Source;
use crate::arm::ArmSpec;
use crate::error::Error;
use crate::results::Session;
use crate::workers::git;
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// What to bisect and how, as checked by the command line.
#[derive(Clone, Debug)]
pub struct Options {
    /// The engine's repository as an arm without a revision
    /// (`ENGINE=git:DIR[+SETTING...][:OPTION,...]`).
    pub engine: String,
    /// A revision without the change, and a later one with it.
    pub good: String,
    pub bad: String,
    /// What shows the change.
    pub subject: Subject,
    /// Judge exact instruction counts (callgrind) instead of wall time.
    pub exact: bool,
    /// The endpoint step's precision, percent.
    pub precision: f64,
    /// Seconds each shape may take per step.
    pub budget: f64,
    /// Measure at most this many steps now.
    pub max_steps: Option<usize>,
    /// Where the JSON of the bisect goes.
    pub json: Option<PathBuf>,
    /// The history database as given (`--db`), else the default.
    pub db: Option<String>,
    /// Further `run` options for every step's session.
    pub run_args: Vec<String>,
}

/// What each step measures.
#[derive(Clone, Debug)]
pub enum Subject {
    /// Shapes, in a `loopbench run`.
    Shapes(Vec<String>),
    /// WASI command modules (files or directories), in a `loopbench app
    /// run`, as invoked.
    Commands {
        paths: Vec<String>,
        invocation: crate::apps::Invocation,
    },
}

/// A subject as the steps see it: the rows each step judges, what keys
/// the bisect in the database, and the step's subcommand.
struct Judged {
    /// The rows of a step's session that are judged (shapes, or modules).
    names: Vec<String>,
    /// What two bisects must share to share their steps.
    key: String,
    /// The subcommand and what it measures, before the common options.
    command: Vec<String>,
}

impl Subject {
    /// Shapes as given (sorted); commands loaded now, so that a module
    /// that cannot run is one line before any build, and keyed by their
    /// identity (module, arguments, environment, the files they read), so
    /// that a changed input starts another bisect.
    fn judged(&self) -> Result<Judged, Error> {
        match self {
            Subject::Shapes(shapes) => {
                let mut names = shapes.clone();
                names.sort();
                names.dedup();
                Ok(Judged {
                    key: names.join(","),
                    command: vec!["run".into(), "--shapes".into(), names.join(",")],
                    names,
                })
            }
            Subject::Commands { paths, invocation } => {
                let mut names = Vec::new();
                let mut identities = Vec::new();
                for named in crate::apps::named::load(paths, invocation)? {
                    if let crate::apps::named::Named::Command(w) = named {
                        crate::diag!("{}", w.about());
                        names.push(w.name().to_string());
                        identities.push(w.identity());
                    }
                }
                Ok(Judged {
                    key: format!("app:{}", identities.join(",")),
                    command: vec!["app".into(), "run".into(), paths.join(",")],
                    names,
                })
            }
        }
    }
}

/// Runs the bisect `opts` asks for: resolves the range, goes on from the
/// steps stored before, measures what is left (each step a `loopbench
/// run` of this binary), prints each step and the outcome, stores them,
/// and writes the JSON. `Ok(true)` when the first bad revision was found.
pub fn run(opts: &Options) -> Result<bool, Error> {
    let probe: ArmSpec = at_revision(&opts.engine, &opts.good)?.parse()?;
    let Some(Source::Git { repo, .. }) = probe.worker.as_ref().map(|w| &w.source) else {
        return Err(Error::Usage(format!(
            "--engine `{}`: expected ENGINE=git:DIR",
            opts.engine
        )));
    };
    let repo = repo.clone();
    let engine = probe.engine;
    let good = git::resolve(engine, &repo, &opts.good)?;
    let bad = git::resolve(engine, &repo, &opts.bad)?;
    if good == bad {
        return Err(Error::Usage(format!(
            "--good {} and --bad {} are the same commit {}",
            opts.good,
            opts.bad,
            short(&good)
        )));
    }
    let after = git::between(engine, &repo, &good, &bad)?;
    if after.is_empty() {
        return Err(Error::Usage(format!(
            "no commits from {} to {} along the first-parent line",
            opts.good, opts.bad
        )));
    }
    let good_arm: ArmSpec = at_revision(&opts.engine, &good)?.parse()?;
    crate::workers::check(&good_arm)?;
    let exact = opts.exact;
    let judged = opts.subject.judged()?;
    let key = Key {
        key: format!(
            "{}|{good}|{bad}|{}|{}|{}|{}",
            opts.engine,
            judged.key,
            if exact { "callgrind" } else { "time" },
            opts.precision,
            opts.run_args.join(" ")
        ),
        engine: opts.engine.clone(),
        good: good.clone(),
        bad: bad.clone(),
        shapes: judged.names.join(","),
        metric: if exact { "instructions" } else { "time" }.into(),
    };
    let location = crate::history::Location::resolve(opts.db.as_deref())?;
    let mut db = location.open()?;
    let (id, _running, stored) = bisects::open(db.as_mut(), &location, &key)?;
    let typical = bisects::typical_step_seconds(db.as_mut(), &opts.engine)?;
    let mut revs = vec![good.clone()];
    revs.extend(after);
    let mut b = Bisect {
        args: opts,
        judged,
        exact,
        compiles: probe.compiles(),
        repo,
        revs,
        good_arm: good_arm.to_string(),
        db,
        id,
        known: stored.into_iter().map(|s| (s.commit.clone(), s)).collect(),
        taken: Vec::new(),
        measured: 0,
    };
    crate::diag!("{}", b.plan_line(typical));
    let outcome = b.run()?;
    let line = outcome.line();
    b.print(&outcome)?;
    if !matches!(outcome, Outcome::Unfinished { .. }) {
        bisects::finish(b.db.as_mut(), b.id, &line)?;
    }
    if let Some(path) = &opts.json {
        let report = Report {
            engine: &opts.engine,
            good: &b.revs[0],
            bad: b.revs.last().expect("bad"),
            revisions: b.revs.len() - 1,
            steps: b
                .taken
                .iter()
                .map(|(s, reused)| StepOut {
                    commit: &s.commit,
                    position: s.position,
                    verdict: s.verdict,
                    reused: *reused,
                    shapes: &s.shapes,
                    reason: s.reason.as_deref(),
                    session_id: s.session_id,
                    seconds: s.seconds,
                })
                .collect(),
            outcome: &outcome,
        };
        let text = serde_json::to_vec_pretty(&report)
            .map_err(|e| Error::Usage(format!("cannot encode the bisect: {e}")))?;
        crate::report::write_atomic(path, &text)?;
    }
    if crate::children::stop_requested() {
        return Err(Error::interrupted(
            b.taken.len(),
            b.taken.len() + b.steps_left(),
            "steps",
        ));
    }
    Ok(matches!(outcome, Outcome::Found { .. }))
}

/// The engine arm at revision `rev`: `ENGINE=git:DIR...` with `#rev` after
/// DIR (which ends at the first build setting `+` or option `:`).
fn at_revision(engine: &str, rev: &str) -> Result<String, Error> {
    const GIT: &str = "=git:";
    let Some(i) = engine.find(GIT).map(|i| i + GIT.len()) else {
        return Err(Error::Usage(format!(
            "--engine `{engine}`: expected ENGINE=git:DIR, a local repository of the engine"
        )));
    };
    let tail = &engine[i..];
    let end = tail.find(['+', ':']).unwrap_or(tail.len());
    let dir = &tail[..end];
    if dir.is_empty() {
        return Err(Error::Usage(format!(
            "--engine `{engine}`: no repository after `git:`"
        )));
    }
    if dir.contains('#') {
        return Err(Error::Usage(format!(
            "--engine `{engine}`: give the revisions with --good and --bad, not #REV"
        )));
    }
    Ok(format!("{}{dir}#{rev}{}", &engine[..i], &tail[end..]))
}

/// The bisect's outcome.
#[derive(Clone, Debug, Serialize)]
#[serde(tag = "result", rename_all = "snake_case")]
enum Outcome {
    /// The first bad revision.
    Found {
        commit: String,
        position: usize,
        subject: Option<String>,
        last_good: String,
    },
    /// Good and bad do not differ: nothing to bisect.
    NoChange { reason: String },
    /// A step could not decide: the first bad revision is in this range.
    Unsure {
        reason: String,
        after: String,
        up_to: String,
        revisions: usize,
    },
    /// Stopped by --max-steps (or an interrupt) before the end.
    Unfinished { steps_left: usize },
}

impl Outcome {
    fn line(&self) -> String {
        match self {
            Outcome::Found {
                commit,
                position,
                subject,
                last_good,
            } => format!(
                "first bad revision: {commit} (position {position}){}; last good {}",
                subject
                    .as_ref()
                    .map(|s| format!(" \"{}\"", { use crate::report::markup::Markup as _; crate::report::markup::Text.escape(s) }))
                    .unwrap_or_default(),
                short(last_good)
            ),
            Outcome::NoChange { reason } => format!("no revision named: {reason}"),
            Outcome::Unsure {
                reason,
                after,
                up_to,
                revisions,
            } => format!(
                "unsure: the first bad revision is one of the {revisions} after {} up to {} ({reason})",
                short(after),
                short(up_to)
            ),
            Outcome::Unfinished { steps_left } => format!(
                "unfinished: at most {steps_left} more steps; run the same command again to go on"
            ),
        }
    }
}

#[derive(Serialize)]
struct Report<'a> {
    engine: &'a str,
    good: &'a str,
    bad: &'a str,
    revisions: usize,
    steps: Vec<StepOut<'a>>,
    #[serde(flatten)]
    outcome: &'a Outcome,
}

#[derive(Serialize)]
struct StepOut<'a> {
    commit: &'a str,
    position: usize,
    verdict: Verdict,
    reused: bool,
    shapes: &'a [ShapeStep],
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<&'a str>,
    session_id: Option<i64>,
    seconds: f64,
}

/// Seconds as a reader wants them: seconds under two minutes, else minutes.
fn duration(s: f64) -> String {
    if s < 120.0 {
        format!("{s:.0} s")
    } else {
        format!("{:.0} min", s / 60.0)
    }
}

fn short(commit: &str) -> &str {
    &commit[..commit.len().min(12)]
}

/// Everything one bisect needs while it runs.
struct Bisect<'a> {
    args: &'a Options,
    judged: Judged,
    exact: bool,
    /// The engine is compiled per revision (not a mock).
    compiles: bool,
    repo: PathBuf,
    /// Position 0 is good, the last is bad.
    revs: Vec<String>,
    good_arm: String,
    db: Box<dyn crate::history::store::Sql>,
    id: i64,
    known: BTreeMap<String, Step>,
    /// Steps in the order taken, and whether each was reused.
    taken: Vec<(Step, bool)>,
    measured: usize,
}

impl Bisect<'_> {
    fn n(&self) -> usize {
        self.revs.len() - 1
    }

    /// Steps still to measure at most, from what is stored.
    fn steps_left(&self) -> usize {
        let mut search = Search::new(self.n());
        let endpoint_done = self.known.contains_key(&self.revs[self.n()]);
        // Replay the stored midpoints: the search they lead to is the
        // search still to do.
        while let Next::Measure(p) = search.next() {
            match self.known.get(&self.revs[p]) {
                Some(s) if search.take(p, s.verdict) => {}
                _ => break,
            }
        }
        search.steps_left() + usize::from(!endpoint_done)
    }

    /// What the bisect will build and measure, and for about how long.
    fn plan_line(&self, typical: Option<f64>) -> String {
        let args = self.args;
        let left = self.steps_left();
        let reused = self.known.len();
        let layouts = if self.exact {
            1
        } else {
            self.args
                .run_args
                .iter()
                .position(|a| a == "--layout-builds")
                .and_then(|i| self.args.run_args.get(i + 1))
                .and_then(|k| k.parse().ok())
                .unwrap_or(crate::workers::layout::DEFAULT_LAYOUT_BUILDS)
        };
        let build = if !self.compiles {
            "nothing to build (a mock)".to_string()
        } else if layouts > 1 {
            format!("building the revision in {layouts} layout variants")
        } else {
            "building the revision".to_string()
        };
        let measure = self.judged.names.len() as f64 * args.budget;
        let estimate = match typical {
            Some(s) => format!(
                "about {} ({s:.0} s per step as measured here before)",
                duration(left as f64 * s)
            ),
            None if !self.compiles => format!("up to {}", duration(left as f64 * measure)),
            None => format!(
                "up to {} of measuring plus the builds (none timed here yet)",
                duration(left as f64 * measure)
            ),
        };
        format!(
            "bisect: {} revisions after good {} up to bad {} in {}; at most {left} steps{}, \
             each one {} of {} ({} s per {} at most) against good, {}, {build}; {estimate}",
            self.n(),
            short(&self.revs[0]),
            short(&self.revs[self.n()]),
            self.repo.display(),
            if reused > 0 {
                format!(" ({reused} measured before, reused)")
            } else {
                String::new()
            },
            match args.subject {
                Subject::Shapes(_) => "session",
                Subject::Commands { .. } => "`app run`",
            },
            self.judged.names.join(","),
            args.budget,
            match args.subject {
                Subject::Shapes(_) => "shape",
                Subject::Commands { .. } => "module",
            },
            if self.exact {
                "exact instruction counts (callgrind)"
            } else {
                "wall time with the null control"
            },
        )
    }

    fn run(&mut self) -> Result<Outcome, Error> {
        let n = self.n();
        let endpoint = self.step(n, None)?;
        let Some(endpoint) = endpoint else {
            return Ok(Outcome::Unfinished {
                steps_left: self.steps_left(),
            });
        };
        let target = match super::endpoints(&endpoint.shapes, self.exact) {
            Endpoints::Differ(t) => t,
            Endpoints::Same(reason) => return Ok(Outcome::NoChange { reason }),
            Endpoints::Unsure(reason) => {
                return Ok(Outcome::Unsure {
                    reason,
                    after: self.revs[0].clone(),
                    up_to: self.revs[n].clone(),
                    revisions: n,
                })
            }
        };
        let mut search = Search::new(n);
        loop {
            match search.next() {
                Next::Found(p) => {
                    return Ok(Outcome::Found {
                        commit: self.revs[p].clone(),
                        position: p,
                        subject: git::subject(&self.repo, &self.revs[p]),
                        last_good: self.revs[p - 1].clone(),
                    })
                }
                Next::Measure(p) => {
                    let Some(step) = self.step(p, Some(&target))? else {
                        return Ok(Outcome::Unfinished {
                            steps_left: self.steps_left(),
                        });
                    };
                    if !search.take(p, step.verdict) {
                        return Ok(Outcome::Unsure {
                            reason: step.reason.unwrap_or_else(|| "unsure".into()),
                            after: self.revs[search.lo].clone(),
                            up_to: self.revs[search.hi].clone(),
                            revisions: search.hi - search.lo,
                        });
                    }
                }
            }
        }
    }

    /// The step at `position`: stored, or measured now (`None` when
    /// `--max-steps` or an interrupt stops the bisect first). `target`:
    /// the change a midpoint is judged against (none for the endpoints).
    fn step(&mut self, position: usize, target: Option<&Target>) -> Result<Option<Step>, Error> {
        let commit = self.revs[position].clone();
        if let Some(s) = self.known.get(&commit).cloned() {
            crate::diag!("{}", self.describe(&s, true));
            self.taken.push((s.clone(), true));
            return Ok(Some(s));
        }
        if crate::children::stop_requested()
            || self.args.max_steps.is_some_and(|m| self.measured >= m)
        {
            return Ok(None);
        }
        let precision = target.map_or(self.args.precision, |t| {
            if self.exact {
                self.args.precision
            } else {
                t.midpoint_precision_pct()
            }
        });
        let started = Instant::now();
        let arm = at_revision(&self.args.engine, &commit)?;
        let Some(session) = self.measure(&arm, precision)? else {
            return Ok(None);
        };
        let shapes = self.shape_steps(&session, &arm);
        let (verdict, reason) = match target {
            Some(t) => super::classify(t, &shapes),
            None => match super::endpoints(&shapes, self.exact) {
                Endpoints::Differ(_) => (Verdict::Bad, None),
                Endpoints::Same(r) => (Verdict::Good, Some(r)),
                Endpoints::Unsure(r) => (Verdict::Unsure, Some(r)),
            },
        };
        let mut step = Step {
            commit: commit.clone(),
            position,
            verdict,
            shapes,
            reason,
            session_id: None,
            seconds: started.elapsed().as_secs_f64(),
        };
        step.session_id = Some(bisects::save_step(
            self.db.as_mut(),
            self.id,
            &step,
            &session,
        )?);
        self.measured += 1;
        crate::diag!("{}", self.describe(&step, false));
        self.known.insert(commit, step.clone());
        self.taken.push((step.clone(), false));
        Ok(Some(step))
    }

    fn describe(&self, s: &Step, reused: bool) -> String {
        format!(
            "bisect: {} {} (position {} of {}){}: {} -> {}{}",
            if s.position == self.n() {
                "bad"
            } else {
                "revision"
            },
            short(&s.commit),
            s.position,
            self.n(),
            if reused { ", from the database" } else { "" },
            changes(s),
            s.verdict,
            s.reason
                .as_ref()
                .map(|r| format!(" ({r})"))
                .unwrap_or_default()
        )
    }

    /// One session of good and `arm` in a child `loopbench run`; `None`
    /// when it was interrupted.
    fn measure(&self, arm: &str, precision: f64) -> Result<Option<Session>, Error> {
        let dir =
            tempfile::tempdir().map_err(|e| Error::io("cannot create a temporary directory", e))?;
        let json = dir.path().join("step.json");
        let exe = std::env::current_exe()
            .map_err(|e| Error::io("cannot find this loopbench binary", e))?;
        let mut cmd = Command::new(exe);
        cmd.args(&self.judged.command)
            .arg("--engines")
            .arg(format!("{},{arm}", self.good_arm))
            .arg("--precision")
            .arg(precision.to_string())
            .arg("--budget")
            .arg(self.args.budget.to_string())
            .arg("--no-history")
            .arg("--json")
            .arg(&json);
        // Only the counter the judgement needs (no note per step about
        // counters this machine lacks).
        cmd.args(["--counters", if self.exact { "callgrind" } else { "none" }]);
        if self.exact && !self.args.run_args.iter().any(|a| a.starts_with("--rounds")) {
            // Exact counts do not vary from rep to rep: one round (one
            // whole order design) is enough, and valgrind is slow.
            cmd.args(["--rounds", "1"]);
        }
        if let Some(db) = &self.args.db {
            // The recorded setting of this machine is read from the same
            // database the bisect keeps its steps in.
            cmd.env(crate::history::ENV, db);
        }
        cmd.args(&self.args.run_args)
            .stdin(Stdio::null())
            .stdout(Stdio::null());
        crate::children::die_with_parent(&mut cmd);
        let mut child = cmd
            .spawn()
            .map_err(|e| Error::io("cannot start the step's loopbench run", e))?;
        let status = loop {
            if let Some(status) = child
                .try_wait()
                .map_err(|e| Error::io("cannot wait for the step's run", e))?
            {
                break status;
            }
            if crate::children::stop_requested() {
                // The terminal's SIGINT reached the run too; a SIGTERM for
                // this process alone is passed on.
                #[cfg(unix)]
                // SAFETY: signals the child this process started.
                unsafe {
                    libc::kill(child.id() as libc::pid_t, libc::SIGTERM);
                }
                let _ = child.wait();
                return Ok(None);
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        let session = crate::results::read(&json)
            .ok()
            .and_then(|d| d.session().cloned())
            .filter(|s| s.complete);
        match session {
            Some(s) if s.errors.is_empty() => Ok(Some(s)),
            Some(s) => Err(Error::Usage(format!(
                "the step of {} failed: {}",
                short_arm(arm),
                s.errors.join("; ")
            ))),
            None => Err(Error::Usage(format!(
                "the step of {} did not complete ({status}); its error is above",
                short_arm(arm)
            ))),
        }
    }

    /// Each requested shape's comparison of `arm` against good.
    fn shape_steps(&self, session: &Session, arm: &str) -> Vec<ShapeStep> {
        let label: String = arm
            .parse::<ArmSpec>()
            .map_or_else(|_| arm.to_string(), |a| a.to_string());
        let per_iter = |r: &crate::results::ShapeResult, arm: &str| {
            r.arms
                .iter()
                .find(|a| a.arm == arm)?
                .counters
                .values
                .get(crate::measure::callgrind::NAME)
                .map(|c| c.per_iter.median)
        };
        session
            .results
            .iter()
            .filter(|r| self.judged.names.contains(&r.shape))
            .map(|r| {
                let c = r
                    .comparisons
                    .iter()
                    .find(|c| c.arm == label && c.vs == self.good_arm);
                ShapeStep {
                    shape: r.shape.clone(),
                    median_pct: c.map_or(f64::NAN, |c| c.median_pct),
                    ci_pct: c.map_or([f64::NAN; 2], |c| c.ci_pct),
                    outcome: c.and_then(|c| c.outcome),
                    instructions: match (per_iter(r, &self.good_arm), per_iter(r, &label)) {
                        (Some(g), Some(t)) if self.exact => Some([g, t]),
                        _ => None,
                    },
                }
            })
            .collect()
    }

    /// The steps by position, then the outcome.
    fn print(&self, outcome: &Outcome) -> Result<(), Error> {
        let mut steps: Vec<&(Step, bool)> = self.taken.iter().collect();
        steps.sort_by_key(|(s, _)| s.position);
        crate::outln!("position  revision      verdict  change against good");
        for (s, reused) in steps {
            crate::outln!(
                "{:>8}  {:<12}  {:<7}  {}{}",
                s.position,
                short(&s.commit),
                s.verdict.to_string(),
                changes(s),
                if *reused { "  (from the database)" } else { "" }
            );
        }
        crate::outln!("{}", outcome.line());
        Ok(())
    }
}

/// A step's change per shape against good: exact counts, else the
/// interval.
fn changes(s: &Step) -> String {
    let each: Vec<String> = s
        .shapes
        .iter()
        .map(|x| match x.exact_pct() {
            Some(e) => format!("{} {e:+.3}% instructions", x.shape),
            None => format!(
                "{} {:+.1}% [{:+.1}, {:+.1}]",
                x.shape, x.median_pct, x.ci_pct[0], x.ci_pct[1]
            ),
        })
        .collect();
    each.join(", ")
}

/// An arm for messages: its repository path shortened.
fn short_arm(arm: &str) -> String {
    match arm.rsplit_once('#') {
        Some((_, rev)) => format!(
            "revision {}",
            short(rev.split(['+', ':']).next().unwrap_or(rev))
        ),
        None => arm.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_revision_goes_after_the_repository() {
        assert_eq!(
            at_revision("wasmi=git:../w", "abc").unwrap(),
            "wasmi=git:../w#abc"
        );
        assert_eq!(
            at_revision("wasmi=git:/r/w+profile:dev:fuel", "abc").unwrap(),
            "wasmi=git:/r/w#abc+profile:dev:fuel"
        );
        assert!(at_revision("wasmi@2", "abc").is_err());
        assert!(at_revision("wasmi=git:../w#main", "abc")
            .unwrap_err()
            .to_string()
            .contains("--good and --bad"));
    }
}
