//! `loopbench app ...`: list, run, profile, project and warm mode for the
//! real workloads in `apps/`.

use crate::apps::profile::{count_app, hot_classes, shape_mixes};
use crate::apps::project::{app_features, project, Prices};
use crate::apps::warm;
use crate::apps::{self, AppShape, AppSpec, APPS};

use super::OutputArgs;
use crate::arm::{parse_arms, ArmSpec, EngineKind};
use crate::error::Error;
use crate::report;
use crate::results::Document;
use crate::results::ShapeResult;
use crate::session::{self, Plan};
use crate::shapes::{self, Params, ShapeModule};

use clap::{Args, Subcommand};
use std::fmt::Write;

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
    #[command(flatten)]
    pub output: OutputArgs,
}

#[derive(Args, Debug)]
pub struct AppProfileArgs {
    /// App name (see `loopbench app list`).
    pub app: String,
    #[command(flatten)]
    pub output: OutputArgs,
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
    #[command(flatten)]
    pub output: OutputArgs,
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
    #[command(flatten)]
    pub output: OutputArgs,
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
    names.iter().map(|n| apps::find(n)).collect()
}

fn list() -> Result<bool, Error> {
    crate::outln!(
        "Apps (recipes in apps/<name>/, built by scripts/apps/build.sh into {}):",
        apps::artifacts_dir().display()
    );
    for a in APPS {
        let built = apps::artifacts_dir()
            .join(format!("{}.wasm", a.name))
            .is_file();
        crate::outln!("  {:<8} {}", a.name, a.about);
        crate::outln!("           source:  {}", a.source);
        crate::outln!("           license: {}", a.license);
        let expected = match a.driver {
            apps::Driver::Zstd => "checksum computed from the input".to_string(),
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
        // An app's host-side inputs and checksum live in this process, and
        // its step count is the workload: no pilot.
        isolation: crate::session::Isolation::InProcess,
        rep_target: None,
        ..Default::default()
    })
}

impl AppRunArgs {
    pub fn execute(&self) -> Result<bool, Error> {
        let apps = select(&self.apps)?;
        let arms = self.arms.arms(EngineKind::defaults())?;
        let plan = app_plan(&apps, arms, self.arms.rounds, self.arms.warmup)?;
        let exports = self.output.exports()?;
        let report = session::run(plan, &mut Quiet)?;
        let errors = report.errors.clone();
        exports.finish(&Document::Session(report))?;
        for e in &errors {
            crate::diag!("error: {e}");
        }
        Ok(errors.is_empty())
    }
}

impl AppProfileArgs {
    pub fn execute(&self) -> Result<bool, Error> {
        let spec = apps::find(&self.app)?;
        let app = AppShape::load(spec)?;
        let (counts, _) = count_app(&app, spec.steps)?;
        let (mixes, skipped) = shape_mixes();
        let hot = hot_classes(&counts, &mixes);
        #[derive(serde::Serialize)]
        struct Profile<'a> {
            schema: &'static str,
            app: &'a str,
            steps: u64,
            counts: &'a loopbench_count::Counts,
            hot_classes: &'a [apps::profile::HotClass],
        }
        let json = serde_json::to_value(Profile {
            schema: "loopbench-app-profile/1",
            app: spec.name,
            steps: spec.steps,
            counts: &counts,
            hot_classes: &hot,
        })
        .map_err(|e| Error::Usage(format!("cannot encode JSON: {e}")))?;
        let text = apps::profile::render(&app, spec.steps, &counts, &hot, &skipped);
        self.output
            .exports()?
            .finish(&Document::Text { json, text })?;
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
        let exports = self.output.exports()?;
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
        crate::diag!(
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
            ..Default::default()
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
        crate::diag!(
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
        let mut projections = Vec::new();
        for (r, spec) in report.results.iter().zip(&apps) {
            let _ = writeln!(out);
            let (text, projection) = project_one(r, spec, &a, &b, &pa, &pb)?;
            out += &text;
            projections.extend(projection);
        }
        let json = serde_json::json!({
            "schema": "loopbench-app-project/1",
            "projections": projections,
            "pricing_session": price_report,
            "app_session": report,
        });
        let mut errors = price_report.errors.clone();
        errors.extend(report.errors.iter().cloned());
        exports.finish(&Document::Text { json, text: out })?;
        for e in &errors {
            crate::diag!("error: {e}");
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
) -> Result<(String, Option<serde_json::Value>), Error> {
    let mut out = String::new();
    let app = AppShape::load(apps::find(spec.name)?)?;
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
        return Ok((out, None));
    };
    let p = project(pa, pb, &x, measured_a);
    let measured = r.comparisons.iter().find(|c| c.arm == b);
    // Predicted beside measured, for the HTML report's projection chart.
    let projection = serde_json::json!({
        "app": spec.name,
        "predicted_pct": p.predicted_pct,
        "measured_pct": measured.map(|c| c.median_pct),
        "ci_pct": measured.map(|c| c.ci_pct),
        "verdict": measured.map(|c| c.verdict),
    });
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
    Ok((out, Some(projection)))
}

impl AppWarmArgs {
    pub fn execute(&self) -> Result<bool, Error> {
        let spec = apps::find(&self.app)?;
        let shape = shapes::lookup(&self.shape)?;
        if self.after == 0 {
            return Err(Error::Usage(
                "--after must be at least 1 (0 is the cold arm)".into(),
            ));
        }
        if self.after > i32::MAX as u64 {
            return Err(Error::Usage("--after must be below 2^31".into()));
        }
        let arms = self.arms.arms(vec!["wasmi".parse()?])?;
        let params = Params {
            bytes: self.bytes,
            iters: self.iters,
            k: 8,
        };
        let module = ShapeModule::build(shape, &params)?;
        let setup = warm::setup(spec, module)?;
        let exports = self.output.exports()?;
        let mut errors = Vec::new();
        let mut results = Vec::new();
        let mut text = String::new();
        for spec_arm in &arms {
            let (result, e) = warm::run_warm(
                &setup,
                spec_arm,
                self.after,
                self.arms.rounds,
                self.arms.warmup,
            )?;
            text += &report::app::render_warm(&result, spec.name, self.after);
            results.push(result);
            errors.extend(e);
        }
        let json = serde_json::json!({
            "schema": "loopbench-app-warm/1",
            "app": spec.name,
            "after": self.after,
            "results": results,
        });
        exports.finish(&Document::Text { json, text })?;
        for e in &errors {
            crate::diag!("error: {e}");
        }
        Ok(errors.is_empty())
    }
}
