//! `loopbench app ...`: list, run, profile, project and warm mode for the
//! real workloads in `apps/`.

use super::profile::{count_app, hot_classes, shape_mixes};
use super::project::{app_features, project, Prices};
use super::warm::{self, WarmArm};
use super::{AppShape, AppSpec, APPS};
use crate::arm::{parse_arms, skip_reason, Arm, ArmSpec, EngineKind};
use crate::error::Error;
use crate::measure::counters::CounterSet;
use crate::report::{self, JsonTarget};
use crate::session::{self, Plan, ShapeResult, LEVEL};
use crate::shapes::{self, Params, ShapeModule};
use crate::stats;
use clap::{Args, Subcommand};
use std::fmt::Write;
use std::sync::{Arc, Mutex};

#[derive(Args, Debug)]
pub struct AppArgs {
    #[command(subcommand)]
    pub command: AppCommand,
}

#[derive(Subcommand, Debug)]
pub enum AppCommand {
    /// List the app recipes: source, version pin, license, workload.
    List,
    /// Whole-app A/B: interleaved rounds, null control, every rep verified.
    ///
    /// Example: loopbench app run zlib,lua --engines wasmi,tinywasm,wasm3
    Run(AppRunArgs),
    /// The app's exact op mix (counting run): each class's share, transfers,
    /// hottest functions and loops, and which shapes price the hot classes.
    ///
    /// Example: loopbench app profile lua
    Profile(AppProfileArgs),
    /// Predicted app change from per-primitive prices x the app's op mix,
    /// beside the measured app change.
    ///
    /// Example: loopbench app project zlib --engines wasmi,wasmi:fuel
    Project(AppProjectArgs),
    /// Warm mode: run the app N steps, then the shape's loop once, in a fresh
    /// instance per rep; compared with the same loop in a cold instance.
    ///
    /// Example: loopbench app warm zlib --shape store_stream --after 1
    Warm(AppWarmArgs),
}

#[derive(Args, Debug)]
pub struct ArmArgs {
    /// Arms, comma-separated: engine[:option,...] (default: wasmi,tinywasm,wasm3 as compiled in).
    #[arg(long, value_delimiter = ',')]
    pub engines: Vec<String>,
    /// Measured rounds (rounded up to a multiple of the arm count).
    #[arg(long, default_value_t = 6)]
    pub rounds: usize,
    /// Warm-up rounds, run and verified but discarded.
    #[arg(long, default_value_t = 1)]
    pub warmup: usize,
}

impl ArmArgs {
    fn arms(&self, default: Vec<ArmSpec>) -> Result<Vec<ArmSpec>, Error> {
        let arms = if self.engines.is_empty() {
            default
        } else {
            parse_arms(&self.engines)?
        };
        if arms.is_empty() {
            return Err(Error::Usage("no engines given".into()));
        }
        for (i, a) in arms.iter().enumerate() {
            if arms[..i].contains(a) {
                return Err(Error::Usage(format!(
                    "arm {a} is listed twice; the null control is added automatically"
                )));
            }
            a.build().map_err(|e| Error::Usage(e.to_string()))?;
        }
        if self.rounds == 0 {
            return Err(Error::Usage("--rounds must be at least 1".into()));
        }
        Ok(arms)
    }
}

#[derive(Args, Debug)]
pub struct AppRunArgs {
    /// Apps, comma-separated, or `all`.
    #[arg(value_delimiter = ',', required = true)]
    pub apps: Vec<String>,
    #[command(flatten)]
    pub arms: ArmArgs,
    /// Write the session as JSON to FILE (`-` for stdout).
    #[arg(long)]
    pub json: Option<String>,
}

#[derive(Args, Debug)]
pub struct AppProfileArgs {
    /// App name (see `loopbench app list`).
    pub app: String,
    /// Write the counts as JSON to FILE (`-` for stdout).
    #[arg(long)]
    pub json: Option<String>,
}

#[derive(Args, Debug)]
pub struct AppProjectArgs {
    /// Apps, comma-separated, or `all`.
    #[arg(value_delimiter = ',', required = true)]
    pub apps: Vec<String>,
    /// Exactly two arms: baseline,candidate (e.g. wasmi,wasmi:fuel).
    #[arg(long, value_delimiter = ',', required = true)]
    pub engines: Vec<String>,
    /// Working set of the pricing session's shapes.
    #[arg(long, default_value = "1m", value_parser = crate::units::working_set)]
    pub bytes: u64,
    /// Measured rounds of the pricing session and of the app session.
    #[arg(long, default_value_t = 6)]
    pub rounds: usize,
    #[arg(long, default_value_t = 1)]
    pub warmup: usize,
}

#[derive(Args, Debug)]
pub struct AppWarmArgs {
    /// App name.
    pub app: String,
    /// The shape whose loop is injected (see `loopbench list`).
    #[arg(long)]
    pub shape: String,
    /// App workload steps run before the loop in the warm arm.
    #[arg(long, default_value_t = 1)]
    pub after: u64,
    /// Working set of the shape.
    #[arg(long, default_value = "1m", value_parser = crate::units::working_set)]
    pub bytes: u64,
    /// Override the shape's iteration count.
    #[arg(long)]
    pub iters: Option<u64>,
    #[command(flatten)]
    pub arms: ArmArgs,
}

impl AppArgs {
    pub fn execute(&self) -> Result<bool, Error> {
        match &self.command {
            AppCommand::List => list(),
            AppCommand::Run(a) => a.execute(),
            AppCommand::Profile(a) => a.execute(),
            AppCommand::Project(a) => a.execute(),
            AppCommand::Warm(a) => a.execute(),
        }
    }
}

fn select(names: &[String]) -> Result<Vec<&'static AppSpec>, Error> {
    if names.iter().any(|n| n == "all") {
        return Ok(APPS.iter().collect());
    }
    names.iter().map(|n| super::find(n)).collect()
}

fn list() -> Result<bool, Error> {
    crate::outln!(
        "Apps (recipes in apps/<name>/, built by scripts/apps/build.sh into {}):",
        super::artifacts_dir().display()
    );
    for a in APPS {
        let built = super::artifacts_dir()
            .join(format!("{}.wasm", a.name))
            .is_file();
        crate::outln!("  {:<8} {}", a.name, a.about);
        crate::outln!("           source:  {}", a.source);
        crate::outln!("           license: {}", a.license);
        let expected = match a.driver {
            super::Driver::Zstd => "checksum computed from the input".to_string(),
            _ => format!("{:#010x}", a.expected as u32),
        };
        crate::outln!(
            "           workload: run({}) -> {expected}{}",
            a.steps,
            if built {
                ""
            } else {
                "   (not built yet: built on first use)"
            }
        );
    }
    Ok(true)
}

struct Quiet;
impl crate::schedule::Progress for Quiet {}
impl session::Sink for Quiet {}

fn app_plan(
    apps: &[&'static AppSpec],
    arms: Vec<ArmSpec>,
    rounds: usize,
    warmup: usize,
) -> Result<Plan, Error> {
    let mut shapes: Vec<Box<dyn shapes::Shape>> = Vec::new();
    for a in apps {
        shapes.push(Box::new(AppShape::load(a)?));
    }
    Ok(Plan {
        shapes,
        arms,
        params: Params::default(),
        rounds,
        warmup,
        counters: CounterSet::none(),
    })
}

/// One app's result as text: ms per rep per arm, changes with intervals, null control.
pub fn render_app(r: &ShapeResult, steps: u64) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "app {} (run({steps}) per rep; every rep verified)",
        r.shape
    );
    let _ = writeln!(
        out,
        "  {:<16} {:>12} {:>12} {:>6}  ",
        "arm", "median ms", "min ms", "reps"
    );
    for a in &r.arms {
        let t = a
            .ns_per_iter
            .as_ref()
            .map(|t| {
                format!(
                    "{:>12.3} {:>12.3}",
                    t.median * steps as f64 / 1e6,
                    t.min * steps as f64 / 1e6
                )
            })
            .unwrap_or_else(|| format!("{:>12} {:>12}", "-", "-"));
        let note = a
            .skipped
            .clone()
            .or_else(|| a.error.clone())
            .unwrap_or_default();
        let _ = writeln!(out, "  {:<16} {t} {:>6}  {note}", a.arm, a.verified_reps);
    }
    for c in &r.comparisons {
        let _ = writeln!(
            out,
            "  {} vs {}: {:+.1}% [{:+.1}%, {:+.1}%] ({:.0}% CI), {}",
            c.arm,
            c.vs,
            c.median_pct,
            c.ci_pct[0],
            c.ci_pct[1],
            c.confidence * 100.0,
            c.verdict
        );
    }
    match &r.null_control {
        Some(n) => {
            let _ = writeln!(
                out,
                "  null control (second {} instance): {:+.1}% [{:+.1}%, {:+.1}%]",
                r.arms.first().map(|a| a.arm.as_str()).unwrap_or("baseline"),
                n.median_pct,
                n.ci_pct[0],
                n.ci_pct[1]
            );
        }
        None => {
            let _ = writeln!(
                out,
                "  null control: unavailable (the baseline or its copy did not run)"
            );
        }
    }
    out
}

fn write_json<T: serde::Serialize>(target: &str, value: &T) -> Result<(), Error> {
    let t = JsonTarget::parse(target);
    t.check()?;
    let bytes = report::json::to_json(value)?;
    match t {
        JsonTarget::Stdout => crate::out!("{}", String::from_utf8_lossy(&bytes)),
        JsonTarget::File(p) => report::write_atomic(&p, &bytes)?,
    }
    Ok(())
}

impl AppRunArgs {
    pub fn execute(&self) -> Result<bool, Error> {
        let apps = select(&self.apps)?;
        let arms = self.arms.arms(EngineKind::defaults())?;
        let plan = app_plan(&apps, arms, self.arms.rounds, self.arms.warmup)?;
        let report = session::run(plan, &mut Quiet)?;
        let to_stdout = self.json.as_deref() == Some("-");
        if !to_stdout {
            for (r, a) in report.results.iter().zip(&apps) {
                crate::out!("{}", render_app(r, a.steps));
            }
        }
        if let Some(j) = &self.json {
            write_json(j, &report)?;
        }
        for e in &report.errors {
            eprintln!("error: {e}");
        }
        Ok(report.errors.is_empty())
    }
}

impl AppProfileArgs {
    pub fn execute(&self) -> Result<bool, Error> {
        let spec = super::find(&self.app)?;
        let app = AppShape::load(spec)?;
        let (counts, _) = count_app(&app, spec.steps)?;
        let (mixes, skipped) = shape_mixes();
        let hot = hot_classes(&counts, &mixes);
        if let Some(j) = &self.json {
            #[derive(serde::Serialize)]
            struct Out<'a> {
                app: &'a str,
                steps: u64,
                counts: &'a loopbench_count::Counts,
                hot_classes: &'a [super::profile::HotClass],
            }
            write_json(
                j,
                &Out {
                    app: spec.name,
                    steps: spec.steps,
                    counts: &counts,
                    hot_classes: &hot,
                },
            )?;
            if j == "-" {
                return Ok(true);
            }
        }
        crate::out!(
            "{}",
            super::profile::render(&app, spec.steps, &counts, &hot, &skipped)
        );
        Ok(true)
    }
}

fn median_of(r: &ShapeResult, arm: &str) -> Option<f64> {
    r.arms
        .iter()
        .find(|a| a.arm == arm)
        .and_then(|a| a.ns_per_iter.as_ref())
        .map(|t| t.median)
}

impl AppProjectArgs {
    pub fn execute(&self) -> Result<bool, Error> {
        let apps = select(&self.apps)?;
        let arms = ArmArgs {
            engines: self.engines.clone(),
            rounds: self.rounds,
            warmup: self.warmup,
        }
        .arms(Vec::new())?;
        if arms.len() != 2 {
            return Err(Error::Usage(
                "--engines takes exactly two arms: baseline,candidate".into(),
            ));
        }
        let (a, b) = (arms[0].to_string(), arms[1].to_string());
        // 1. Prices: the cost model fitted on the shape catalog, both arms, this session.
        eprintln!(
            "pricing primitives: shape session on {a}, {b} (--bytes {})",
            crate::units::format_bytes(self.bytes)
        );
        let shapes: Vec<Box<dyn shapes::Shape>> = shapes::catalog()
            .into_iter()
            .filter(|s| !s.name().starts_with("shared_"))
            .collect();
        let plan = Plan {
            shapes,
            arms: arms.clone(),
            params: Params {
                bytes: self.bytes,
                iters: None,
                k: 8,
            },
            rounds: self.rounds,
            warmup: self.warmup,
            counters: CounterSet::none(),
        };
        let price_report = session::run(plan, &mut Quiet)?;
        let models = crate::model::build(&price_report);
        let prices_of = |arm: &str| models.iter().find(|m| m.arm == arm).map(Prices::from_model);
        let (pa, pb) = match (prices_of(&a), prices_of(&b)) {
            (Some(x), Some(y)) => (x, y),
            _ => {
                return Err(Error::Usage(
                    "the cost model priced neither or only one of the two arms".into(),
                ))
            }
        };
        // 2. The apps, measured.
        eprintln!(
            "measuring apps: {}",
            apps.iter().map(|s| s.name).collect::<Vec<_>>().join(", ")
        );
        let report = session::run(
            app_plan(&apps, arms.clone(), self.rounds, self.warmup)?,
            &mut Quiet,
        )?;
        let mut out = String::new();
        let _ = writeln!(
            out,
            "prices (ns per unit; least-squares fit over the shapes, this session):"
        );
        let _ = writeln!(out, "  {:<14} {:>10} {:>10}", "feature", a, b);
        for (f, va) in &pa.ns {
            let vb = pb
                .ns
                .get(f)
                .map(|v| format!("{v:>10.3}"))
                .unwrap_or_else(|| format!("{:>10}", "-"));
            let _ = writeln!(out, "  {f:<14} {va:>10.3} {vb}");
        }
        for (r, spec) in report.results.iter().zip(&apps) {
            let _ = writeln!(out);
            out += &project_one(r, spec, &a, &b, &pa, &pb)?;
        }
        crate::out!("{out}");
        let mut errors = price_report.errors.clone();
        errors.extend(report.errors.iter().cloned());
        for e in &errors {
            eprintln!("error: {e}");
        }
        Ok(errors.is_empty())
    }
}

fn project_one(
    r: &ShapeResult,
    spec: &AppSpec,
    a: &str,
    b: &str,
    pa: &Prices,
    pb: &Prices,
) -> Result<String, Error> {
    let mut out = String::new();
    let app = AppShape::load(super::find(spec.name)?)?;
    let (counts, _) = count_app(&app, spec.steps)?;
    let x = app_features(&counts);
    let _ = writeln!(
        out,
        "app {} ({b} vs {a}; one rep = run({}), {} wasm ops)",
        spec.name, spec.steps, counts.total_ops
    );
    let Some(measured_a) = median_of(r, a).map(|ns_per_step| ns_per_step * spec.steps as f64)
    else {
        let _ = writeln!(out, "  not measured: {a} did not run the app");
        return Ok(out);
    };
    let p = project(pa, pb, &x, measured_a);
    let _ = writeln!(
        out,
        "  predicted app change: {:+.1}%  ({:+.3} ms per rep = sum over features of price change x the app's count)",
        p.predicted_pct,
        p.predicted_delta_ns / 1e6
    );
    match r.comparisons.iter().find(|c| c.arm == b) {
        Some(c) => {
            let _ = writeln!(
                out,
                "  measured app change:  {:+.1}% [{:+.1}%, {:+.1}%] ({:.0}% CI), {}",
                c.median_pct,
                c.ci_pct[0],
                c.ci_pct[1],
                c.confidence * 100.0,
                c.verdict
            );
            let _ = writeln!(
                out,
                "  difference (measured - predicted): {:+.1} points",
                c.median_pct - p.predicted_pct
            );
        }
        None => {
            let _ = writeln!(
                out,
                "  measured app change: unavailable ({b} did not run the app)"
            );
        }
    }
    if let Some(n) = &r.null_control {
        let _ = writeln!(
            out,
            "  null control: {:+.1}% [{:+.1}%, {:+.1}%]",
            n.median_pct, n.ci_pct[0], n.ci_pct[1]
        );
    }
    let _ = writeln!(
        out,
        "  model coverage: prices reproduce {:.3} ms of {a}'s measured {:.3} ms per rep ({:.0}%)",
        p.predicted_a_ns / 1e6,
        measured_a / 1e6,
        100.0 * p.predicted_a_ns / measured_a
    );
    let _ = writeln!(
        out,
        "  largest terms (feature: app count x price change = ms per rep):"
    );
    for t in p.terms.iter().take(5) {
        let _ = writeln!(
            out,
            "    {:<14} {:>14.0} x {:+.3} ns = {:+.3} ms",
            t.feature,
            t.count,
            t.price_b - t.price_a,
            t.delta_ns / 1e6
        );
    }
    let classes: Vec<String> = p
        .unpriced
        .iter()
        .filter(|(_, s)| s.is_finite() && *s > 0.0)
        .map(|(f, s)| format!("{f} {:.1}%", s * 100.0))
        .collect();
    if !classes.is_empty() {
        let _ = writeln!(
            out,
            "  ops with no price (left out of the prediction): {}",
            classes.join(", ")
        );
    }
    Ok(out)
}

impl AppWarmArgs {
    pub fn execute(&self) -> Result<bool, Error> {
        let spec = super::find(&self.app)?;
        let shape = shapes::find(&self.shape).ok_or_else(|| {
            Error::Usage(format!(
                "unknown shape `{}` (valid: {})",
                self.shape,
                shapes::names().join(", ")
            ))
        })?;
        if self.after == 0 {
            return Err(Error::Usage(
                "--after must be at least 1 (0 is the cold arm)".into(),
            ));
        }
        if self.after > i32::MAX as u64 {
            return Err(Error::Usage("--after must be below 2^31".into()));
        }
        let arms = self
            .arms
            .arms(vec!["wasmi".parse().map_err(Error::Usage)?])?;
        let params = Params {
            bytes: self.bytes,
            iters: self.iters,
            k: 8,
        };
        let module = ShapeModule::build(shape, &params)?;
        let setup = warm::setup(spec, module)?;
        let mut ok = true;
        for spec_arm in &arms {
            let (result, errors) = run_warm(
                &setup,
                spec_arm,
                self.after,
                self.arms.rounds,
                self.arms.warmup,
            )?;
            crate::out!("{}", render_warm(&result, spec.name, self.after));
            for e in &errors {
                eprintln!("error: {e}");
            }
            ok &= errors.is_empty();
        }
        Ok(ok)
    }
}

/// Outcome of one warm-mode comparison on one engine.
pub struct WarmResult {
    pub engine: String,
    pub shape: String,
    pub iters: u64,
    /// (label, samples ns per iteration, skipped reason)
    pub arms: Vec<(String, Vec<f64>, Option<String>)>,
    pub change: Option<stats::Change>,
    pub null: Option<stats::Change>,
    pub verdict: Option<stats::Verdict>,
    /// Instances created per arm (one per rep, warm-up included).
    pub instances: Vec<usize>,
}

/// Cold (baseline), warm and a second cold copy (null control) on one
/// engine, interleaved like any session.
pub fn run_warm(
    setup: &warm::WarmSetup,
    engine: &ArmSpec,
    after: u64,
    rounds: usize,
    warmup: usize,
) -> Result<(WarmResult, Vec<String>), Error> {
    let prefix = Arc::new(Mutex::new(None));
    let label = engine.to_string();
    let arms = [
        WarmArm::new(
            engine,
            format!("{label} cold"),
            setup.app.clone(),
            0,
            prefix.clone(),
        )?,
        WarmArm::new(
            engine,
            format!("{label} warm({after})"),
            setup.app.clone(),
            after,
            prefix.clone(),
        )?,
        WarmArm::new(
            engine,
            format!("{label} cold#null"),
            setup.app.clone(),
            0,
            prefix,
        )?,
    ];
    let refs: Vec<&dyn Arm> = arms.iter().map(|a| a as &dyn Arm).collect();
    let skips: Vec<Option<String>> = refs
        .iter()
        .map(|a| skip_reason(*a, &setup.module))
        .collect::<Result<_, _>>()?;
    let rounds = crate::schedule::balanced_rounds(rounds, refs.len());
    let outcomes =
        crate::schedule::run_shape(&setup.module, &refs, &skips, warmup, rounds, &mut ());
    let iters = setup.module.iters as f64;
    let mut errors = Vec::new();
    let mut samples = Vec::new();
    for ((arm, outcome), _) in arms.iter().zip(outcomes).zip(&skips) {
        let (reps, skipped) = match outcome {
            crate::schedule::ArmOutcome::Ran(r) => (r, None),
            crate::schedule::ArmOutcome::Skipped(s) => (Vec::new(), Some(format!("skipped: {s}"))),
            crate::schedule::ArmOutcome::Failed { error, completed } => {
                errors.push(error.to_string());
                (completed, Some(format!("failed: {error}")))
            }
        };
        samples.push((
            arm.label().to_string(),
            reps.iter()
                .map(|r| r.reading.ns / iters)
                .collect::<Vec<f64>>(),
            skipped,
        ));
    }
    let change_of = |i: usize| {
        let (b, c) = (&samples[0].1, &samples[i].1);
        let n = b.len().min(c.len());
        stats::paired_change(&c[..n], &b[..n], LEVEL)
    };
    let change = change_of(1);
    let null = change_of(2);
    let verdict = change.as_ref().map(|c| stats::verdict(c, null.as_ref()));
    let instances = arms
        .iter()
        .map(|a| a.instances.load(std::sync::atomic::Ordering::SeqCst))
        .collect();
    Ok((
        WarmResult {
            engine: label,
            shape: setup.module.name().to_string(),
            iters: setup.module.iters,
            arms: samples,
            change,
            null,
            verdict,
            instances,
        },
        errors,
    ))
}

pub fn render_warm(r: &WarmResult, app: &str, after: u64) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "warm mode: shape {} ({} iterations) inside app {app}, {}; a fresh instance per rep",
        r.shape, r.iters, r.engine
    );
    for ((label, s, note), n) in r.arms.iter().zip(&r.instances) {
        let t = if s.is_empty() {
            format!("{:>10} {:>10}", "-", "-")
        } else {
            format!("{:>10.3} {:>10.3}", stats::median(s), stats::min(s))
        };
        let _ = writeln!(
            out,
            "  {label:<24} {t} ns/iter  {} reps, {n} instances  {}",
            s.len(),
            note.clone().unwrap_or_default()
        );
    }
    match (&r.change, &r.verdict) {
        (Some(c), Some(v)) => {
            let _ = writeln!(
                out,
                "  warm({after}) vs cold: {:+.1}% [{:+.1}%, {:+.1}%] ({:.0}% CI), {v}",
                c.median_pct,
                c.ci_pct[0],
                c.ci_pct[1],
                c.confidence * 100.0
            );
        }
        _ => {
            let _ = writeln!(out, "  warm vs cold: unavailable");
        }
    }
    if let Some(n) = &r.null {
        let _ = writeln!(
            out,
            "  null control (second cold instance): {:+.1}% [{:+.1}%, {:+.1}%]",
            n.median_pct, n.ci_pct[0], n.ci_pct[1]
        );
    }
    out
}
