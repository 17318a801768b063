//! `loopbench model`: a session, then the price of each primitive per engine.

use super::progress::TerminalSink;
use super::run::RunArgs;
use crate::arm::{ArmSpec, EngineKind};
use crate::error::Error;
use crate::measure::counters::{CounterChoice, CounterKind};
use crate::model::EngineModel;
use crate::results::{Document, ModelResults, MODEL_SCHEMA};
use crate::session;
use clap::Args;
use std::io::IsTerminal;

#[derive(Args, Debug)]
pub struct ModelArgs {
    /// Fit the prices to a session measured before instead of running one:
    /// a saved session or model JSON, or a stored session (@last,
    /// @baseline:NAME, @ID). Only the output options apply then.
    #[arg(long, value_name = "SESSION")]
    pub from: Option<String>,
    /// Price a counter per iteration instead of the time: `callgrind_ir`
    /// (with --counters callgrind) gives each feature's host instructions,
    /// exact and untouched by the memory or code layout, so what the model
    /// misses there is the model's and not the machine's.
    ///
    /// Example: loopbench model --engines wasmi,wasm3 --counters callgrind --iters 2000 --rounds 2 --price-in callgrind_ir
    #[arg(long, value_name = "COUNTER")]
    pub price_in: Option<String>,
    /// Also explain each shape's time from the engine's exact host
    /// instructions per iteration, read from SESSION (a session or model
    /// JSON measured with --counters callgrind) plus the simulated
    /// mispredictions: what the op classes miss because the engine fuses,
    /// against what the CPU adds.
    ///
    /// Example: loopbench model --engines wasmi,wasm3 --budget 8 --instructions-from ir.json
    #[arg(long, value_name = "SESSION")]
    pub instructions_from: Option<String>,
    #[command(flatten)]
    pub run: RunArgs,
}

impl ModelArgs {
    pub fn execute(&self) -> Result<bool, Error> {
        if let Some(from) = &self.from {
            return self.refit(from);
        }
        check_price_in(self.price_in.as_deref(), &self.run.counters)?;
        let mut plan = match self.run.counted_plan()? {
            Ok(plan) => plan,
            Err(outcome) => return Ok(outcome),
        };
        if self.run.engines.is_empty() {
            // The interpreters by default, and every compiler and Pulley
            // that this build carries: each gets its own prices (with the
            // caveat that a compiler's price is not per instruction).
            for a in compiled_arms() {
                if !plan.arms.contains(&a) {
                    plan.arms.push(a);
                }
            }
        }
        let exports = self.run.output.exports()?;
        let quiet = self.run.quiet || exports.stdout_is_data() || !std::io::stderr().is_terminal();
        // No partial files: a model document exists only once the session is done.
        let names: Vec<String> = plan.shapes.iter().map(|s| s.name().to_string()).collect();
        let planned = names.len();
        let mut sink = TerminalSink::new(quiet, None).with_eta(&names, plan.stop.clone());
        let session = session::run(plan, &mut sink)?;
        let (interrupted, completed) = (!session.complete, session.results.len());
        sink.finish();
        let models = self.models(&session)?;
        let errors = session.errors.clone();
        exports.finish(&Document::Model(ModelResults {
            schema: MODEL_SCHEMA.to_string(),
            session,
            models,
        }))?;
        for e in &errors {
            crate::diag!("error: {e}");
        }
        if interrupted {
            return Err(Error::interrupted(completed, planned, "shapes"));
        }
        Ok(errors.is_empty())
    }

    /// The models of a session's arms, priced in ns or in `--price-in`.
    fn models(&self, session: &crate::results::Session) -> Result<Vec<EngineModel>, Error> {
        let mut models = crate::model::build(session, self.price_in.as_deref())
            .map_err(|e| Error::Usage(format!("--price-in: {e}")))?;
        if let Some(from) = &self.instructions_from {
            let ir = super::compare::load_session(from, None)?;
            crate::model::instructions::add(session, &ir, &mut models)
                .map_err(|e| Error::Usage(format!("--instructions-from {from}: {e}")))?;
        }
        Ok(models)
    }

    /// The model of a session measured before: nothing is run.
    fn refit(&self, from: &str) -> Result<bool, Error> {
        if !self.run.engines.is_empty() || !self.run.shapes.is_empty() {
            return Err(Error::Usage(format!(
                "--from {from} fits the session as it was measured; --engines and --shapes do not apply"
            )));
        }
        let exports = self.run.output.exports()?;
        let session = super::compare::load_session(from, None)?;
        let models = self.models(&session)?;
        if models.is_empty() {
            return Err(Error::Usage(format!(
                "{from}: the session has no arm to model"
            )));
        }
        exports.finish(&Document::Model(ModelResults {
            schema: MODEL_SCHEMA.to_string(),
            session,
            models,
        }))?;
        Ok(true)
    }
}

/// Before a session is run for it: `--price-in` names a reading that one of
/// the requested `--counters` takes (not an error after minutes).
pub fn check_price_in(price_in: Option<&str>, counters: &CounterChoice) -> Result<(), Error> {
    let Some(metric) = price_in else {
        return Ok(());
    };
    match CounterKind::of_metric(metric) {
        None => {
            let all: Vec<&str> = CounterKind::ALL
                .iter()
                .flat_map(|k| k.metrics().iter().copied())
                .collect();
            Err(Error::Usage(format!(
                "--price-in {metric}: no counter reads it (readings: {})",
                all.join(", ")
            )))
        }
        Some(kind) if !counters.wants(kind) => Err(Error::Usage(format!(
            "--price-in {metric} needs --counters {kind}"
        ))),
        Some(_) => Ok(()),
    }
}

/// One arm per backend of every optional engine compiled in (wasmtime
/// cranelift, winch and pulley; wasmer singlepass and cranelift).
pub fn compiled_arms() -> Vec<ArmSpec> {
    [EngineKind::Wasmtime, EngineKind::Wasmer]
        .into_iter()
        .filter(|k| k.compiled_in())
        .flat_map(|k| {
            k.options().iter().map(move |(opt, _)| ArmSpec {
                engine: k,
                options: vec![opt.to_string()],
                worker: None,
            })
        })
        .collect()
}
