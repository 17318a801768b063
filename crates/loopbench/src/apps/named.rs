//! The apps a command names: recipe names (or `all`) and your own WASI
//! command modules (a file, a directory of them, or a directory of
//! directories as Sightglass's `benchmarks/`), loaded in that order, and
//! where a session of them runs.

use super::project::Subject;
use super::{workload, AppShape, AppSpec, Invocation, Workload, APPS};
use crate::arm::ArmSpec;
use crate::error::Error;
use crate::results::ShapeResult;
use crate::session::Isolation;
use crate::shapes::Shape;
use std::path::Path;

/// One named app.
pub enum Named {
    /// Built, read and prepared (its counting run comes with the subject).
    Recipe(Box<AppShape>),
    /// Loaded, checked and counted (the counting run is done).
    Command(Box<Workload>),
}

impl Named {
    pub fn into_shape(self) -> Result<Box<dyn Shape>, Error> {
        Ok(match self {
            Named::Recipe(app) => Box::new(app.into_recipe()),
            Named::Command(w) => (*w).into_shape(),
        })
    }

    /// What a projection is made onto (a recipe is counted and traced now).
    pub fn subject(&self) -> Result<Subject, Error> {
        match self {
            Named::Recipe(app) => Subject::recipe(app),
            Named::Command(w) => Ok(Subject::workload(w)),
        }
    }
}

/// The recipes among `named`, for [`name_known_defects`].
pub fn recipes_of(named: &[Named]) -> Vec<&'static AppSpec> {
    named
        .iter()
        .filter_map(|n| match n {
            Named::Recipe(app) => Some(app.spec),
            Named::Command(_) => None,
        })
        .collect()
}

/// Each arm whose verification of a recipe failed on an engine known to run
/// that recipe to a wrong answer says so in its error (and in the session's
/// line of that error), with the module the defect was reduced to: the
/// wrong answer is the engine's, not loopbench's.
pub fn name_known_defects(
    recipes: &[&'static AppSpec],
    results: &mut [ShapeResult],
    errors: &mut [String],
) {
    for r in results {
        let Some(spec) = recipes.iter().find(|s| s.name == r.shape) else {
            continue;
        };
        for a in &mut r.arms {
            let (Some(error), Some(d)) = (&mut a.error, spec.known_defect(&a.version)) else {
                continue;
            };
            if !error.contains("verify failed") {
                continue;
            }
            let note = format!(
                " (a known defect of {}x, which {}: reduced to {})",
                d.engine, d.what, d.reduced
            );
            let this_arm = format!("shape {}, arm {},", r.shape, a.arm);
            let same = |e: &&mut String| e.contains(&this_arm) && e.contains("verify failed");
            for e in errors.iter_mut().filter(same) {
                e.push_str(&note);
            }
            error.push_str(&note);
        }
    }
}

/// The recipes named (`all`: every one).
pub fn recipes(names: &[String]) -> Result<Vec<&'static AppSpec>, Error> {
    if names.iter().any(|n| n == "all") {
        return Ok(APPS.iter().collect());
    }
    Ok(names
        .iter()
        .map(|n| super::find(n))
        .collect::<Result<_, _>>()?)
}

/// Every app `args` names, recipes first, each read (a recipe built if
/// missing) before anything is measured. A module named on the command
/// line must run; one found in a directory (a suite as it is, Sightglass's
/// with its components and wasi-nn) is skipped with its line.
pub fn load(args: &[String], invocation: &Invocation) -> Result<Vec<Named>, Error> {
    let (files, names): (Vec<&String>, Vec<&String>) =
        args.iter().partition(|a| workload::is_path(a));
    let names: Vec<String> = names.into_iter().cloned().collect();
    let mut named: Vec<Named> = if names.is_empty() {
        Vec::new()
    } else {
        recipes(&names)?
            .into_iter()
            .map(|spec| Ok(Named::Recipe(Box::new(AppShape::load(spec)?))))
            .collect::<Result<_, Error>>()?
    };
    for f in files {
        let path = Path::new(f);
        let modules = workload::modules(path)?;
        let in_directory = path.is_dir();
        let mut loaded = 0;
        for module in &modules {
            match Workload::load(module, invocation) {
                Ok(w) => {
                    named.push(Named::Command(Box::new(w)));
                    loaded += 1;
                }
                Err(e) if in_directory => crate::diag!("skipped: {e}"),
                Err(e) => return Err(e.into()),
            }
        }
        if in_directory && loaded < modules.len() {
            crate::diag!(
                "{}: {loaded} of {} modules run (the others are skipped above)",
                path.display(),
                modules.len()
            );
        }
        if loaded == 0 {
            return Err(Error::Usage(format!(
                "{}: none of its {} modules can run here",
                path.display(),
                modules.len()
            )));
        }
    }
    Ok(named)
}

/// A build arm runs in worker processes: with `--in-process` it is refused
/// before any work.
pub fn check_builds(arms: &[ArmSpec], in_process: bool) -> Result<(), Error> {
    match arms.iter().find(|a| a.worker.is_some()) {
        Some(build) if in_process => Err(Error::Usage(format!(
            "{build} is a build, which runs in worker processes: run the session without --in-process"
        ))),
        _ => Ok(()),
    }
}

/// The shapes of a session of `named`, and where it runs ([`isolation`]).
pub fn into_session(
    named: Vec<Named>,
    in_process: bool,
) -> Result<(Vec<Box<dyn Shape>>, Isolation), Error> {
    let isolation = isolation(in_process);
    let shapes = named
        .into_iter()
        .map(Named::into_shape)
        .collect::<Result<Vec<_>, _>>()?;
    Ok((shapes, isolation))
}

/// Where a session of `named` runs: a recipe (its prepared module, inputs
/// and checksum) and a WASI command (its module, invocation and directory)
/// both carry all they need to a worker process, so they run as `run`'s
/// shapes do, a process per arm in layout variants, unless `--in-process`.
fn isolation(in_process: bool) -> Isolation {
    if in_process {
        Isolation::InProcess
    } else {
        Isolation::Workers
    }
}
