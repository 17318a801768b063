//! `loopbench app ...`: list, run, profile, project and warm mode for the
//! real workloads in `apps/`.

use crate::apps::profile::{count_app, hot_classes, shape_mixes, trace_app};
use crate::apps::project::{app_features, coverage, project, Prices};
use crate::apps::warm;
use crate::apps::{self, AppShape, AppSpec, APPS};

use super::model::check_price_in;
use super::run::{count_with, rerun_under_callgrind};
use super::OutputArgs;
use crate::arm::{parse_arms, ArmSpec};
use crate::error::Error;
use crate::measure::counters::{CounterChoice, CounterKind};
use crate::model::EngineModel;
use crate::report;
use crate::results::Document;
use crate::results::{Session, ShapeResult, APP_PROJECT_SCHEMA as PROJECT_SCHEMA};
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
    /// Two or more arms, the baseline first (e.g. wasmi,wasmi:fuel,wasm3):
    /// every pair is projected.
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
    /// Seconds per shape and per app, in both sessions: more epochs (fresh
    /// processes) for the twins that price mispredictions and for the
    /// apps, whose layout moves their times between processes.
    #[arg(long, default_value_t = 3.0, value_name = "SECONDS")]
    pub budget: f64,
    /// Epochs every shape and app takes at least, budget permitting.
    #[arg(long, default_value_t = 5)]
    pub min_epochs: usize,
    /// Iterations per rep of the pricing shapes (default: each shape's
    /// own; a few thousand are plenty under --counters callgrind).
    #[arg(long)]
    pub iters: Option<u64>,
    /// Counters read in both sessions (see `loopbench run --counters`);
    /// `callgrind` runs them under valgrind for exact host instructions.
    #[arg(long, default_value = "auto", value_parser = clap::builder::ValueParser::new(|s: &str| s.parse::<CounterChoice>()))]
    pub counters: CounterChoice,
    /// Price and measure a counter instead of the time: with --counters
    /// callgrind, `callgrind_ir` says how much of each app's exact host
    /// instructions the op-class prices reproduce (what the engine's
    /// translation adds or fuses away), apart from what the CPU adds.
    ///
    /// Example: loopbench app project lua --engines wasmi,wasm3 --counters callgrind --iters 2000 --rounds 2 --price-in callgrind_ir --json app-ir.json
    #[arg(long, value_name = "COUNTER")]
    pub price_in: Option<String>,
    /// Also reproduce each app's time from its exact host instructions and
    /// simulated mispredictions, at the ns per instruction and per
    /// misprediction that this session's shapes cost: SESSION is the JSON
    /// of this command run with --counters callgrind (the shapes' and the
    /// apps' instructions).
    ///
    /// Example: loopbench app project lua --engines wasmi,wasm3 --budget 8 --instructions-from app-ir.json
    #[arg(long, value_name = "SESSION")]
    pub instructions_from: Option<String>,
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
        let arms = self.arms.arms(ArmSpec::defaults())?;
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

/// An arm's median per iteration (per app step): the time, or `counter`.
fn median_of(r: &ShapeResult, arm: &str, counter: Option<&str>) -> Option<f64> {
    let a = r.arms.iter().find(|a| a.arm == arm)?;
    match counter {
        None => a.ns_per_iter.as_ref().map(|t| t.median),
        Some(c) => a.counters.values.get(c).map(|v| v.per_iter.median),
    }
}

/// A per-rep amount in the projection's unit: ms of time, or millions of
/// the counter's units.
fn amount(v: f64, counter: Option<&str>) -> String {
    match counter {
        None => format!("{:.3} ms", v / 1e6),
        Some(c) => format!("{:.3}M {c}", v / 1e6),
    }
}

fn signed(v: f64, counter: Option<&str>) -> String {
    let a = amount(v, counter);
    if v >= 0.0 {
        format!("+{a}")
    } else {
        a
    }
}

/// The two sessions of an `app project` document saved with
/// `--counters callgrind`: the shapes' and the apps' host instructions.
fn instruction_sessions(from: &str) -> Result<(Session, Session), Error> {
    let bad = |why: String| Error::Usage(format!("--instructions-from {from}: {why}"));
    let json = match crate::results::read(std::path::Path::new(from))? {
        Document::Text { json, .. }
            if json.get("schema").and_then(|s| s.as_str()) == Some(PROJECT_SCHEMA) =>
        {
            json
        }
        other => {
            return Err(bad(format!(
                "a {} document, not the JSON of `app project --counters callgrind`",
                other.kind()
            )))
        }
    };
    let session = |key: &str| -> Result<Session, Error> {
        serde_json::from_value(json.get(key).cloned().unwrap_or_default())
            .map_err(|e| bad(format!("its {key} does not read: {e}")))
    };
    let (shapes, apps) = (session("pricing_session")?, session("app_session")?);
    if let Some(what) = crate::model::missing_counter(&apps, INSTRUCTIONS) {
        return Err(bad(format!(
            "the app session has no `{INSTRUCTIONS}` {what}"
        )));
    }
    Ok((shapes, apps))
}

const INSTRUCTIONS: &str = crate::model::instructions::COUNTER;

impl AppProjectArgs {
    /// The stop rule of both sessions.
    fn stop(&self) -> Result<crate::results::StopSettings, Error> {
        super::run::check_budget(self.budget)?;
        if self.min_epochs == 0 {
            return Err(Error::Usage("--min-epochs must be at least 1".into()));
        }
        Ok(crate::results::StopSettings {
            budget_s: self.budget,
            min_epochs: self.min_epochs,
            ..Plan::default().stop
        })
    }

    pub fn execute(&self) -> Result<bool, Error> {
        let apps = select(&self.apps)?;
        let stop = self.stop()?;
        check_price_in(self.price_in.as_deref(), &self.counters)?;
        if self.instructions_from.is_some()
            && (self.price_in.is_some() || self.counters.wants(CounterKind::Callgrind))
        {
            return Err(Error::Usage(
                "--instructions-from reproduces the measured time: it does not go with --price-in or --counters callgrind".into(),
            ));
        }
        let from_instructions = self
            .instructions_from
            .as_deref()
            .map(instruction_sessions)
            .transpose()?;
        // The child of a callgrind re-run writes the outputs.
        if let Some(outcome) = rerun_under_callgrind(&self.counters)? {
            return Ok(outcome);
        }
        let exports = self.output.exports()?;
        let counter = self.price_in.as_deref();
        let arms = ArmArgs {
            engines: self.engines.clone(),
            rounds: self.rounds,
            warmup: self.warmup,
        }
        .arms(Vec::new())?;
        if arms.len() < 2 {
            return Err(Error::Usage(
                "--engines takes at least two arms: baseline,candidate[,...]".into(),
            ));
        }
        let labels: Vec<String> = arms.iter().map(|a| a.to_string()).collect();
        // 1. Prices: the cost model fitted on the shape catalog, every arm, this session.
        crate::diag!(
            "pricing primitives: shape session on {} (--bytes {})",
            labels.join(", "),
            crate::units::format_bytes(self.bytes)
        );
        let shapes: Vec<Box<dyn shapes::Shape>> = shapes::catalog()
            .into_iter()
            .filter(|s| !s.name().starts_with("shared_"))
            .collect();
        let mut plan = Plan {
            shapes,
            arms: arms.clone(),
            params: Params {
                bytes: self.bytes,
                iters: self.iters,
                k: 8,
            },
            rounds: self.rounds,
            warmup: self.warmup,
            stop: stop.clone(),
            ..Default::default()
        };
        count_with(&mut plan, &self.counters);
        let price_report = session::run(plan, &mut Quiet)?;
        let mut models = crate::model::build(&price_report, counter)
            .map_err(|e| Error::Usage(format!("--price-in: {e}")))?;
        if let Some((shapes_ir, _)) = &from_instructions {
            crate::model::instructions::add(&price_report, shapes_ir, &mut models)
                .map_err(|e| Error::Usage(format!("--instructions-from: {e}")))?;
        }
        // Every arm's model, in label order.
        let arm_models = labels
            .iter()
            .map(|l| {
                models.iter().find(|m| &m.arm == l).ok_or_else(|| {
                    Error::Usage(format!(
                        "the cost model could not price {l} (no shape ran on it)"
                    ))
                })
            })
            .collect::<Result<Vec<&EngineModel>, Error>>()?;
        let prices: Vec<Prices> = arm_models.iter().map(|m| Prices::from_model(m)).collect();
        // 2. The apps, measured.
        crate::diag!(
            "measuring apps: {}",
            apps.iter().map(|s| s.name).collect::<Vec<_>>().join(", ")
        );
        let mut plan = app_plan(&apps, arms.clone(), self.rounds, self.warmup)?;
        plan.stop = stop;
        count_with(&mut plan, &self.counters);
        let report = session::run(plan, &mut Quiet)?;
        let mut out = String::new();
        let _ = writeln!(
            out,
            "prices ({} per unit; least-squares fit over the shapes, this session):",
            counter.unwrap_or("ns")
        );
        let mut head = format!("  {:<14}", "feature");
        for l in &labels {
            head += &format!(" {l:>12}");
        }
        let _ = writeln!(out, "{head}");
        for f in crate::model::FEATURES {
            let mut row = format!("  {f:<14}");
            for p in &prices {
                row += &match p.ns.get(*f) {
                    Some(v) => format!(" {v:>12.3}"),
                    None => format!(" {:>12}", "-"),
                };
            }
            let _ = writeln!(out, "{row}");
        }
        for l in labels.iter().filter(|l| crate::model::is_compiler(l)) {
            let _ = writeln!(out, "  caveat ({l}): {}", crate::model::JIT_CAVEAT);
        }
        let mut projections = Vec::new();
        for (r, spec) in report.results.iter().zip(&apps) {
            let _ = writeln!(out);
            let by_instructions = from_instructions
                .as_ref()
                .map(|(_, apps_ir)| (apps_ir, arm_models.as_slice()));
            let (text, json) = project_app(r, spec, &labels, &prices, counter, by_instructions)?;
            out += &text;
            projections.push(json);
        }
        let json = serde_json::json!({
            "schema": PROJECT_SCHEMA,
            "unit": counter.unwrap_or("ns"),
            "pricing_session": price_report,
            "app_session": report,
            "projections": projections,
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

/// Below this share of an app's time, the prices do not explain the app,
/// and the projection says where the time is missing.
const EXPLAINED: f64 = 0.8;

/// One app: what each arm's prices reproduce of its measured time, and for
/// every pair of arms the projected change beside the measured one.
fn project_app(
    r: &ShapeResult,
    spec: &AppSpec,
    labels: &[String],
    prices: &[Prices],
    counter: Option<&str>,
    by_instructions: Option<(&Session, &[&EngineModel])>,
) -> Result<(String, serde_json::Value), Error> {
    let mut out = String::new();
    let app = AppShape::load(apps::find(spec.name)?)?;
    let (counts, _) = count_app(&app, spec.steps)?;
    let predictor = trace_app(&app, spec.steps)?;
    let x = app_features(&counts, Some(&predictor));
    let _ = writeln!(
        out,
        "app {} (one rep = run({}), {} wasm ops, {} simulated mispredictions of {} decisions)",
        spec.name,
        spec.steps,
        counts.total_ops,
        predictor.mispredicts,
        predictor.conditional + predictor.multiway
    );
    let measured: Vec<Option<f64>> = labels
        .iter()
        .map(|l| median_of(r, l, counter).map(|per_step| per_step * spec.steps as f64))
        .collect();
    let mut coverages = Vec::new();
    let _ = writeln!(
        out,
        "  share of the app's {} the prices reproduce:",
        counter.unwrap_or("time")
    );
    for (p, m) in prices.iter().zip(&measured) {
        let Some(m) = m else {
            let _ = writeln!(
                out,
                "    {:<18} not measured (the arm did not run the app)",
                p.arm
            );
            continue;
        };
        let c = coverage(p, &x, *m);
        let _ = writeln!(
            out,
            "    {:<18} {:>5.0}%  ({} of {} per rep)",
            p.arm,
            100.0 * c.share,
            amount(c.reproduced_ns, counter),
            amount(*m, counter)
        );
        if c.share < EXPLAINED {
            let classes: Vec<String> = c
                .unpriced
                .iter()
                .take(5)
                .map(|(f, s)| format!("{f} {:.1}%", s * 100.0))
                .collect();
            let _ = writeln!(
                out,
                "      unexplained {} ({:+.2} {} per op if spread evenly); ops with no time in the model: {}",
                amount(m - c.reproduced_ns, counter),
                c.gap_ns_per_op,
                counter.unwrap_or("ns"),
                if classes.is_empty() { "none".to_string() } else { classes.join(", ") }
            );
        }
        coverages.push(c);
    }
    let mut from_instructions = Vec::new();
    if let Some((apps_ir, models)) = &by_instructions {
        let counted = apps_ir.results.iter().find(|i| i.shape == r.shape);
        let _ = writeln!(
            out,
            "  share of the app's time its host instructions reproduce (ns per instruction and per misprediction from the shapes):"
        );
        for ((l, m), model) in labels.iter().zip(&measured).zip(models.iter()) {
            let fit = model.from_instructions.as_ref();
            let ir = counted.and_then(|c| median_of(c, l, Some(INSTRUCTIONS)));
            let (Some(m), Some(fit), Some(ir)) = (m, fit, ir) else {
                let _ = writeln!(
                    out,
                    "    {l:<18} unavailable (no time, no instruction fit or no instruction count for this arm)"
                );
                continue;
            };
            let instructions = ir * spec.steps as f64;
            let reproduced = crate::model::instructions::time(
                [fit.ns_per_instruction, fit.ns_per_mispredict],
                instructions,
                predictor.mispredicts as f64,
            );
            let _ = writeln!(
                out,
                "    {l:<18} {:>5.0}%  ({} of {} per rep: {:.1}M instructions x {:.4} ns, {} mispredictions x {:.2} ns)",
                100.0 * reproduced / m,
                amount(reproduced, None),
                amount(*m, None),
                instructions / 1e6,
                fit.ns_per_instruction,
                predictor.mispredicts,
                fit.ns_per_mispredict
            );
            from_instructions.push(serde_json::json!({
                "arm": l,
                "measured_ns": m,
                "instructions": instructions,
                "ns_per_instruction": fit.ns_per_instruction,
                "mispredicts": predictor.mispredicts,
                "ns_per_mispredict": fit.ns_per_mispredict,
                "reproduced_ns": reproduced,
                "share": reproduced / m,
            }));
        }
    }
    let _ = writeln!(out, "  projected vs measured change, every pair (B vs A):");
    let mut pairs = Vec::new();
    for i in 0..labels.len() {
        for j in i + 1..labels.len() {
            let (a, b) = (&labels[i], &labels[j]);
            let Some(ma) = measured[i] else { continue };
            let p = project(&prices[i], &prices[j], &x, ma);
            // Against the baseline, the session's paired comparison (with
            // its interval); between two candidates, the ratio of medians.
            let measured_pct = if i == 0 && counter.is_none() {
                r.comparisons
                    .iter()
                    .find(|c| &c.arm == b)
                    .map(|c| (c.median_pct, Some(c.ci_pct)))
            } else {
                measured[j].map(|mb| (100.0 * (mb / ma - 1.0), None))
            };
            let shown = match measured_pct {
                Some((v, Some(ci))) => format!("{v:+7.1}% [{:+.1}%, {:+.1}%]", ci[0], ci[1]),
                Some((v, None)) => format!("{v:+7.1}% (ratio of medians)"),
                None => "unavailable".to_string(),
            };
            let top: Vec<String> = p
                .terms
                .iter()
                .take(3)
                .map(|t| format!("{} {}", t.feature, signed(t.delta_ns, counter)))
                .collect();
            let projected = match p.predicted_ci_pct {
                Some([lo, hi]) => format!("{:+7.1}% [{lo:+.1}%, {hi:+.1}%]", p.predicted_pct),
                None => format!("{:+7.1}%", p.predicted_pct),
            };
            let _ = writeln!(
                out,
                "    {b:>18} vs {a:<18} projected {projected}  measured {shown}  (largest terms: {})",
                top.join(", ")
            );
            pairs.push(serde_json::json!({
                "a": a,
                "b": b,
                "projected_pct": p.predicted_pct,
                "projected_ci_pct": p.predicted_ci_pct,
                "measured_pct": measured_pct.map(|m| m.0),
                "measured_ci_pct": measured_pct.and_then(|m| m.1),
                "projection": p,
            }));
        }
    }
    // The null control of what was priced: the time, or the counter.
    let null = match counter {
        None => r.null_control.as_ref(),
        Some(c) => r.counter_null_control.get(c),
    };
    if let Some(n) = null {
        let _ = writeln!(
            out,
            "  null control ({}): {:+.1}% [{:+.1}%, {:+.1}%]",
            counter.unwrap_or("time"),
            n.median_pct,
            n.ci_pct[0],
            n.ci_pct[1]
        );
    }
    let json = serde_json::json!({
        "app": spec.name,
        "steps": spec.steps,
        "features": x,
        "predictor": predictor,
        "coverage": coverages,
        "from_instructions": from_instructions,
        "pairs": pairs,
    });
    Ok((out, json))
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
