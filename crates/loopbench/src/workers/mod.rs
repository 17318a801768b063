//! Arms served from worker processes: any version or checkout of a supported
//! engine, run in a process of its own (and, for layout epochs, fresh
//! processes of any build).
//!
//! Two versions of one crate cannot always link into one binary (two
//! checkouts of the same version never can), and build settings (profile,
//! RUSTFLAGS, features) are per binary. So a build arm is a separate
//! program: a generated Cargo project ([`project`]) that links this library
//! and the requested engine through the adapter of its API family
//! ([`family`], whose sources are in `adapters/` or are the in-process
//! adapters themselves), and serves the session over a pipe ([`protocol`]).
//!
//! The files are named for their end of the pipe:
//!
//! | file | end | owns |
//! |---|---|---|
//! | [`client`] | orchestrator | [`WorkerArm`]: the same [`Arm`] trait as an in-process engine, so rotation, iteration counts, verification (in the worker, on every rep) and statistics are unchanged |
//! | [`supervise`] | orchestrator | the child process: spawn, deadlines, kill, stderr tail |
//! | [`protocol`] | both | the messages, one JSON object per line |
//! | [`server`] | worker | the loop a worker binary runs |
//! | [`project`] | build | the generated Cargo project and its cache key |
//! | [`locate`] | build | where the engine's source is, which adapter family suits it |
//! | `cargo` | build | cargo metadata and cargo build, with progress |
//! | [`cache`] | build | where builds, git worktrees and loopbench's source are |
//! | [`own_build`] | build | the compiled-in engines relinked in code-layout variants |
//! | [`family`], `adapters/` | build | which adapter source suits which version |
//!
//! The build part of an arm (`@0.31`, `=path:DIR`, `+profile:lto`) is
//! parsed with the rest of the arm, in [`crate::arm::build`]; whether it can
//! be built is [`check`]. `loopbench list` prints a summary of the syntax.

pub mod cache;
mod cargo;
pub mod client;
pub mod error;
pub mod family;
pub mod git;
pub mod inventory;
pub mod layout;
pub mod locate;
pub mod mock_source;
pub mod own_build;
pub mod project;
pub mod snapshot;
pub mod supervise;
// The worker's end of the pipe, in the timed path's crate.
pub use loopbench_worker::workers::{barrier, heap, protocol, server};

use crate::arm::build::{self as spec, BuildSpec, Source};
use crate::arm::{Arm, ArmSpec, CounterFactory, EngineKind, InProcessArm};
use crate::measure::counters::CounterSet;
pub use error::{FamilyError, WorkerError};
use std::collections::HashMap;
use std::sync::Mutex;

pub use client::{Recorded, WorkerArm};
pub use supervise::Timing;

/// Validate a build arm before any work: the engine can be built at all and
/// some adapter of it takes the options, it has an adapter family for the
/// requested version, a path holds the crate, the options suit the
/// family, and loopbench's own source (which a worker links) is there.
/// Cheap (a path source runs `cargo metadata --no-deps`).
pub fn check(spec: &ArmSpec) -> Result<(), WorkerError> {
    let Some(build) = &spec.worker else {
        return Ok(());
    };
    if mock_source::resolve(spec)?.is_some() {
        return Ok(());
    }
    let engine = spec.engine;
    if !family::buildable(engine) {
        return Err(WorkerError::NotBuildable {
            arm: spec.to_string(),
            engine: engine.to_string(),
            buildable: family::buildable_names(),
        });
    }
    if let Some(o) = spec
        .options
        .iter()
        .find(|o| !family::any_accepts(engine, o))
    {
        return Err(WorkerError::NoAdapterOption {
            arm: spec.to_string(),
            engine: engine.to_string(),
            option: o.clone(),
        });
    }
    cache::check_source()?;
    let (_, fam) = locate::locate(spec.engine, build).map_err(|e| WorkerError::Arm {
        arm: spec.to_string(),
        source: Box::new(e),
    })?;
    for o in &spec.options {
        if !fam.options.iter().any(|(n, _)| n == o) {
            let valid: Vec<&str> = fam.options.iter().map(|(n, _)| *n).collect();
            return Err(WorkerError::FamilyOption {
                arm: spec.to_string(),
                family: fam.name,
                option: o.clone(),
                valid: if valid.is_empty() {
                    "none".to_string()
                } else {
                    valid.join(", ")
                },
            });
        }
    }
    Ok(())
}

/// Builds already ensured in this process (the null control of a build
/// baseline reuses its baseline's), by engine, build and layout seed.
type Builds = HashMap<(EngineKind, BuildSpec, Option<u64>), Result<project::Built, WorkerError>>;
static BUILT: Mutex<Option<Builds>> = Mutex::new(None);

/// What every arm of a session shares: the baseline's timing (worker
/// deadlines) and the counters.
pub struct ArmContext {
    pub timing: Timing,
    pub counters: CounterFactory,
    /// The available counters by name, for workers to open their own.
    /// In the callgrind child, workers run under callgrind too
    /// ([`crate::measure::callgrind::worker_command`]).
    pub worker_counters: Vec<String>,
    pub isolation: Isolation,
    pub pin: Option<usize>,
    /// The session's seed: each worker process's layout draws come from it.
    pub seed: u64,
    /// The seed build arms' layout variants are linked with.
    pub variant_seed: u64,
    /// Worker processes started so far: each draws its own layout seed.
    started: std::cell::Cell<u64>,
    /// Which in-worker layout randomisations are on.
    pub layout: Randomise,
    /// The duet barrier's page, which every worker maps (duet sessions).
    pub barrier: Option<std::path::PathBuf>,
    /// This binary's engines relinked in layout variants, by variant
    /// ([`own_build`]): what compiled-in arms run from in workers.
    pub own_variants: Vec<std::path::PathBuf>,
}

/// Where arms run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Isolation {
    /// A fresh worker process per arm and epoch: layouts are sampled.
    Workers,
    /// Every arm in this process (debugging, and exact tests with the mock
    /// engine): one layout, so intervals cover rounds only.
    InProcess,
}

impl Isolation {
    pub fn name(self) -> &'static str {
        match self {
            Isolation::Workers => "workers",
            Isolation::InProcess => "in-process",
        }
    }
}

/// The layout randomisations inside a worker, on top of the fresh process
/// itself: all on by default; `LOOPBENCH_LAYOUT=none` or a list such as
/// `env,stack` chooses (to measure what each adds).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Randomise {
    /// A random-length environment variable: shifts where the stack starts.
    pub env: bool,
    /// A random stack depth (0-4 KiB) before each shape's timed calls.
    pub stack: bool,
    /// Every heap block padded by 0-63 cache lines.
    pub heap: bool,
}

impl Randomise {
    pub const ENV: &'static str = "LOOPBENCH_LAYOUT";

    pub fn from_env() -> Result<Self, WorkerError> {
        match std::env::var(Self::ENV) {
            Err(_) => Ok(Randomise {
                env: true,
                stack: true,
                heap: true,
            }),
            Ok(v) => Self::parse(&v),
        }
    }

    pub fn parse(v: &str) -> Result<Self, WorkerError> {
        let mut r = Randomise {
            env: false,
            stack: false,
            heap: false,
        };
        for part in v
            .split(',')
            .map(str::trim)
            .filter(|p| !p.is_empty() && *p != "none")
        {
            match part {
                "env" => r.env = true,
                "stack" => r.stack = true,
                "heap" => r.heap = true,
                "all" => {
                    r = Randomise {
                        env: true,
                        stack: true,
                        heap: true,
                    }
                }
                other => {
                    return Err(WorkerError::UnknownRandomisation {
                        var: Self::ENV,
                        part: other.to_string(),
                    })
                }
            }
        }
        Ok(r)
    }

    /// As recorded in the results.
    pub fn describe(&self) -> String {
        let on: Vec<&str> = [
            ("env", self.env),
            ("stack", self.stack),
            ("heap", self.heap),
        ]
        .iter()
        .filter(|(_, on)| *on)
        .map(|(n, _)| *n)
        .collect();
        if on.is_empty() {
            "none".into()
        } else {
            on.join(",")
        }
    }
}

impl ArmContext {
    pub fn new(set: &CounterSet, counters: CounterFactory) -> Self {
        let worker_counters = set
            .status()
            .iter()
            .filter(|s| s.available)
            .map(|s| s.counter.to_string())
            .collect();
        ArmContext {
            timing: Timing::default(),
            counters,
            worker_counters,
            isolation: Isolation::InProcess,
            pin: None,
            seed: 0,
            variant_seed: 0,
            started: std::cell::Cell::new(0),
            layout: Randomise {
                env: true,
                stack: true,
                heap: true,
            },
            barrier: None,
            own_variants: Vec::new(),
        }
    }

    /// Where arms run, the core their timing thread is pinned to, the
    /// seed of in-worker randomisation and that of build layout variants.
    pub fn with_isolation(
        mut self,
        isolation: Isolation,
        pin: Option<usize>,
        seed: u64,
        variant_seed: u64,
    ) -> Self {
        self.isolation = isolation;
        self.pin = pin;
        self.seed = seed;
        self.variant_seed = variant_seed;
        self
    }

    /// The arm for `spec`: the engine compiled in, or a worker of its build
    /// (built or found in the cache first). A build that fails does not stop
    /// the session: the arm reports the failure on every shape.
    pub fn make(&self, spec: &ArmSpec, label: String) -> Result<Box<dyn Arm>, WorkerError> {
        self.make_with(spec, label, crate::arm::Iters::Shape, None)
    }

    /// [`ArmContext::make`] with an iteration count other than the shape's,
    /// and for a build arm, which of its layout variants ([`layout`]) runs
    /// (`None`: the plain build).
    pub fn make_with(
        &self,
        spec: &ArmSpec,
        label: String,
        iters: crate::arm::Iters,
        variant: Option<usize>,
    ) -> Result<Box<dyn Arm>, WorkerError> {
        if let Some((mock, described)) = mock_source::resolve(spec)? {
            // Nothing to build: a worker of this binary, with the options
            // of the revision, under the arm's own spec and description.
            let arm = WorkerArm::start(label, &mock, described, own_worker(&mock), self);
            return Ok(Box::new(arm.with_iters(iters)));
        }
        let Some(build) = &spec.worker else {
            if self.isolation == Isolation::Workers {
                // Every variant is one build of the arm (its identity in
                // history and compare): the description names the
                // sampling, not the variant.
                let (built, described) = match variant.and_then(|i| self.own_variants.get(i)) {
                    Some(bin) => (
                        own_variant(spec, bin),
                        "this binary, relinked in layout variants",
                    ),
                    None => (own_worker(spec), "this binary"),
                };
                let arm = WorkerArm::start(label, spec, described.into(), built, self);
                return Ok(Box::new(arm.with_iters(iters)));
            }
            if let Some(cpu) = self.pin {
                crate::measure::affinity::pin_current_thread(cpu)?;
            }
            let arm = InProcessArm::new(spec, label)?;
            return Ok(Box::new(
                arm.with_counters(self.counters.clone()).with_iters(iters),
            ));
        };
        let seed = variant.map(|i| layout::seed(self.variant_seed, i));
        let built = ensure_once(spec, build, seed);
        // The variant is not named in the description: it is the arm's
        // version, the build's identity in history and compare, and every
        // variant is that one build (the `builds:` line lists them).
        let described = describe(build, built.as_ref().ok());
        Ok(Box::new(
            WorkerArm::start(label, spec, described, built, self).with_iters(iters),
        ))
    }

    /// The layout seed of the next worker process: distinct per process,
    /// reproducible from the session's seed.
    pub fn next_layout_seed(&self) -> Option<u64> {
        let n = self.started.get();
        self.started.set(n + 1);
        let mut z = self.seed ^ n.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        Some(z ^ (z >> 31))
    }

    /// Wrap the baseline so its rep times set the workers' deadlines.
    pub fn record(&self, baseline: Box<dyn Arm>) -> Box<dyn Arm> {
        Box::new(Recorded {
            inner: baseline,
            timing: self.timing.clone(),
        })
    }
}

/// The build of `spec` (layout variant `seed`), ensured once per process.
fn ensure_once(
    spec: &ArmSpec,
    build: &BuildSpec,
    seed: Option<u64>,
) -> Result<project::Built, WorkerError> {
    let key = (spec.engine, build.clone(), seed);
    let cached = BUILT
        .lock()
        .ok()
        .and_then(|m| m.as_ref().and_then(|m| m.get(&key).cloned()));
    if let Some(b) = cached {
        return b;
    }
    let b = project::ensure(spec.engine, build, &spec.to_string(), seed);
    if let Ok(mut m) = BUILT.lock() {
        m.get_or_insert_with(HashMap::new).insert(key, b.clone());
    }
    b
}

/// Build the first `count` layout variants of a build arm before any
/// epoch (so no compiler runs between measured epochs), and check that
/// they place the engine's code differently ([`layout::differ`]).
pub fn ensure_variants(
    spec: &ArmSpec,
    count: usize,
    session_seed: u64,
) -> Result<layout::Variants, WorkerError> {
    let Some(build) = &spec.worker else {
        return Err(WorkerError::Layout {
            detail: format!("{spec} is not a build arm"),
        });
    };
    let started = std::time::Instant::now();
    let mut variants = Vec::with_capacity(count);
    let mut bins = Vec::with_capacity(count);
    for index in 0..count {
        let seed = layout::seed(session_seed, index);
        let built = ensure_once(spec, build, Some(seed))?;
        variants.push(layout::Variant {
            index,
            seed,
            key: built.key.clone(),
        });
        bins.push(built.bin);
    }
    let paths: Vec<&std::path::Path> = bins.iter().map(|b| b.as_path()).collect();
    let moved = layout::differ(&paths, spec.engine)?;
    Ok(layout::Variants {
        variants,
        moved,
        seconds: started.elapsed().as_secs_f64(),
    })
}

/// This binary as the worker of an engine compiled into it
/// (`loopbench worker ENGINE`): layout epochs need a fresh process per arm.
fn own_worker(spec: &ArmSpec) -> Result<project::Built, WorkerError> {
    let bin =
        std::env::current_exe().map_err(|e| WorkerError::CurrentExe(std::sync::Arc::new(e)))?;
    Ok(project::Built {
        bin,
        args: vec!["worker".into(), spec.engine.name().into()],
        version: spec.engine.version().to_string(),
        family: "compiled in",
        key: String::new(),
        identity: None,
        seconds: 0.0,
        compiled: false,
    })
}

/// A relink of this binary's engines ([`own_build`]) as the worker of one
/// of them (`loopbench-relink ENGINE`).
fn own_variant(spec: &ArmSpec, bin: &std::path::Path) -> Result<project::Built, WorkerError> {
    Ok(project::Built {
        bin: bin.to_path_buf(),
        args: vec![spec.engine.name().into()],
        version: spec.engine.version().to_string(),
        family: "compiled in",
        key: String::new(),
        identity: None,
        seconds: 0.0,
        compiled: false,
    })
}

/// The build as stated next to the version in reports: the profile always
/// (interpreter speed depends on it), and whatever else differs from a
/// plain registry release build.
pub fn describe(build: &BuildSpec, built: Option<&project::Built>) -> String {
    let mut parts = vec![match &build.source {
        Source::Path(p) => format!("path {} {}", p.display(), git::sources_state(p)),
        Source::Git { repo, rev } => match git::resolve(crate::arm::EngineKind::Wasmi, repo, rev) {
            // `commit` and the full id: the history reads it from here.
            Ok(commit) => format!("git {}#{rev} commit {commit}", repo.display()),
            Err(_) => format!("git {}#{rev}", repo.display()),
        },
        Source::Registry(req) => format!("crates.io {req}"),
        Source::Default => "crates.io, this binary's version".to_string(),
    }];
    parts.push(format!("profile {}", build.profile));
    if !build.features.is_empty() {
        parts.push(format!("features {}", build.features.join(" ")));
    }
    if let Some(f) = &build.rustflags {
        parts.push(format!("RUSTFLAGS {f}"));
    }
    if build.ignore_rust_version {
        parts.push("rust-version check relaxed".into());
    }
    if let Some(b) = built {
        parts.push(format!("adapter {}", b.family));
    }
    parts.join(", ")
}

/// The `loopbench list` section on build arms.
pub fn help() -> String {
    let mut out = String::new();
    out.push_str(
        "Build arms (any version or checkout of an engine, run in a worker process of its own):\n",
    );
    out.push_str(
        "  ENGINE@REQ            a crates.io version requirement: wasmi@0.31, wasmi@2, tinywasm@=0.12.0-beta.0\n",
    );
    out.push_str(
        "  ENGINE=path:DIR       a local checkout (the crate, or a workspace holding it): tinywasm=path:../tinywasm\n",
    );
    out.push_str(
        "  +feature:NAME         an extra Cargo feature of the engine (repeat for more)\n",
    );
    for (name, what) in spec::PROFILES {
        out.push_str(&format!("  +profile:{name:<12} {what}\n"));
    }
    out.push_str(
        "  +rustflags:FLAGS      RUSTFLAGS for the worker (spaces, not commas): +rustflags:-Ctarget-cpu=native\n",
    );
    out.push_str("  +ignore-rust-version  build although the crate declares a newer rustc (stated in the results)\n");
    out.push_str(
        "  :OPTION,...           engine options last, as for in-process arms: wasmi@0.31:fuel\n",
    );
    out.push_str(
        "  Settings without a source build this binary's own version (wasmi+profile:lto).\n",
    );
    out.push_str(&format!(
        "  Workers are cached under {} by a hash of their inputs; the first build takes minutes.\n",
        cache::workers_root().display()
    ));
    out.push_str("  Adapter families (picked by version):\n");
    for f in &family::FAMILIES {
        let opts: Vec<&str> = f.options.iter().map(|(n, _)| *n).collect();
        let opts = if opts.is_empty() {
            String::new()
        } else {
            format!("  options: {}", opts.join(", "))
        };
        let line = format!("    {:<9} {:<45}{opts}", f.engine.name(), f.covers);
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_refuses_options_of_another_family() {
        let spec: ArmSpec = "wasmi@0.31:eager".parse().unwrap();
        let e = check(&spec).unwrap_err().to_string();
        assert!(
            e.contains("takes no option `eager`") && e.contains("wasmi_031"),
            "{e}"
        );
        assert!(check(&"wasmi@2:eager".parse().unwrap()).is_ok());
    }

    #[test]
    fn help_lists_every_family() {
        let h = help();
        for f in &family::FAMILIES {
            assert!(h.contains(f.covers), "{}", f.covers);
        }
        assert!(h.contains("+ignore-rust-version"));
    }
}
