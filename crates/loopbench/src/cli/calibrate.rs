//! `loopbench calibrate`: known effects through the real instrument.

use super::{OutputArgs, ShapeParams};
use crate::arm::ArmSpec;
use crate::calibrate::{base_iters, one_shot, run, Calibration, Effect, Progress, Settings};
use crate::error::Error;
use crate::report::Exports;
use crate::results::Document;
use crate::shapes::{self, Params};
use clap::Args;

/// Prove the harness measures known effects, and find the smallest it resolves.
///
/// Arms run the same shape on the same engine; the arm for effect x runs
/// exactly x% more loop iterations (verified every rep). Reports, per effect,
/// the measured change, its 95% interval, whether it covers the truth, and
/// over --repeat repetitions the coverage and the smallest effect detected in
/// at least 9 of 10. Ends with wasmi vs wasmi:fuel, whose sign is known.
///
/// Example: loopbench calibrate --repeat 10 --load 1 --json cal.json
#[derive(Args, Debug)]
pub struct CalibrateArgs {
    /// Shape to calibrate on (see `loopbench list`).
    #[arg(long, default_value = "add_chain")]
    pub shape: String,
    /// Arm to calibrate: engine[:option,...].
    #[arg(long, default_value = "wasmi")]
    pub engine: String,
    /// Known effects in percent (at most two decimals), comma-separated; the
    /// null (0) is always included.
    #[arg(long, value_delimiter = ',', default_value = "0.5,1,2,5")]
    pub effects: Vec<String>,
    /// Repetitions of the whole calibration.
    #[arg(long, default_value_t = 10)]
    pub repeat: usize,
    /// Epochs per repetition: each a fresh worker process per arm, so every
    /// repetition's intervals include the layout, as a session's do. Ten,
    /// not five: with five the t interval's own SD estimate swung a
    /// repetition's width between ±0.15% and ±3% and +1% was found in
    /// 6/10; with ten, 9/10 at 15 s a repetition (2-vCPU Xeon VM).
    #[arg(long, default_value_t = 10)]
    pub epochs: usize,
    /// Measured rounds per epoch (rounded up to a whole order design).
    #[arg(long, default_value_t = 30, value_parser = super::rounds_count)]
    pub rounds: usize,
    /// Warm-up rounds per epoch, run and verified but discarded.
    #[arg(long, default_value_t = 1, value_parser = super::rounds_count)]
    pub warmup: usize,
    #[command(flatten)]
    pub params: ShapeParams,
    /// Start N busy threads (spinning) for the whole calibration; at most
    /// the number of cores this process may use.
    #[arg(long, default_value_t = 0)]
    pub load: usize,
    /// Shapes of the wasmi vs wasmi:fuel known-sign toggle, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "add_chain,load_stream")]
    pub toggle_shapes: Vec<String>,
    /// Skip the known-sign toggle.
    #[arg(long)]
    pub no_toggle: bool,
    /// Every row and the per-effect coverage: --json FILE, --export FORMAT=FILE.
    #[command(flatten)]
    pub output: OutputArgs,
    /// No progress lines on stderr.
    #[arg(long, short)]
    pub quiet: bool,
    /// Run one arm at this effect in this process and exit (for tools that
    /// time whole processes, such as hyperfine).
    #[arg(long, hide = true)]
    pub one_shot: Option<String>,
    /// Verified calls of the one-shot run (0: setup only).
    #[arg(long, hide = true, default_value_t = 10)]
    pub calls: usize,
}

/// Progress on stderr (unless quiet), the files rewritten after every
/// repetition, and the stop that SIGINT or SIGTERM asks for.
struct Stderr<'a> {
    quiet: bool,
    exports: &'a Exports,
}

impl Progress for Stderr<'_> {
    fn note(&mut self, line: &str) {
        if !self.quiet {
            crate::diag!("{line}");
        }
    }
    fn update(&mut self, so_far: &Calibration) -> Result<(), Error> {
        self.exports.partial(&Document::Calibration(so_far.clone()))
    }
    fn interrupted(&self) -> bool {
        super::progress::stop_requested()
    }
}

impl CalibrateArgs {
    fn shape_params(&self) -> Params {
        Params {
            bytes: self.params.bytes,
            iters: self.params.iters,
            k: self.params.k,
        }
    }

    pub fn settings(&self) -> Result<Settings, Error> {
        let engine: ArmSpec = self.engine.parse()?;
        if !engine.engine.compiled_in() {
            return Err(Error::Usage(format!(
                "{} is not compiled into this binary; rebuild with --features {}",
                engine.engine,
                engine.engine.feature()
            )));
        }
        let mut effects: Vec<Effect> = self
            .effects
            .iter()
            .map(|e| e.parse::<Effect>())
            .collect::<Result<_, _>>()?;
        effects.retain(|e| !e.is_null());
        effects.sort();
        effects.dedup();
        if self.repeat == 0 {
            return Err(Error::Usage("--repeat must be at least 1".into()));
        }
        if self.epochs == 0 {
            return Err(Error::Usage("--epochs must be at least 1".into()));
        }
        if self.rounds == 0 {
            return Err(Error::Usage("--rounds must be at least 1".into()));
        }
        // More spinning threads than cores measure nothing more and stall
        // the machine.
        let cores = crate::measure::affinity::allowed().len();
        if self.load > cores {
            return Err(Error::Usage(format!(
                "--load {}: at most {cores}, the cores this process may use",
                self.load
            )));
        }
        let shape = shapes::lookup(&self.shape)?;
        let mut params = self.shape_params();
        params.iters = Some(base_iters(shape.as_ref(), &params, &effects)?);
        let toggle_shapes = if self.no_toggle {
            Vec::new()
        } else {
            self.toggle_shapes.clone()
        };
        for t in &toggle_shapes {
            shapes::lookup(t)?;
        }
        Ok(Settings {
            shape: self.shape.clone(),
            engine,
            params,
            effects,
            repeat: self.repeat,
            rounds: self.rounds,
            warmup: self.warmup,
            epochs: self.epochs,
            load_threads: self.load,
            toggle_shapes,
        })
    }

    pub fn execute(&self) -> Result<bool, Error> {
        if let Some(x) = &self.one_shot {
            let effect: Effect = x.parse()?;
            let engine: ArmSpec = self.engine.parse()?;
            let shape = shapes::lookup(&self.shape)?;
            let mut params = self.shape_params();
            params.iters = Some(base_iters(shape.as_ref(), &params, &[effect])?);
            let done = one_shot(&self.shape, &engine, &params, effect, self.calls)?;
            crate::outln!("{done} iterations verified");
            return Ok(true);
        }
        let settings = self.settings()?;
        let exports = self.output.exports()?;
        // Installs the handler: from here SIGINT and SIGTERM stop between
        // repetitions with what completed.
        super::progress::stop_requested();
        let cal = run(
            &settings,
            &mut Stderr {
                quiet: self.quiet,
                exports: &exports,
            },
        )?;
        let (complete, completed) = (cal.complete, cal.repetitions.len());
        let disagree: Vec<String> = cal
            .toggle
            .iter()
            .filter(|t| t.time_agrees == Some(false))
            .map(|t| t.shape.clone())
            .collect();
        let uncounted = cal.toggle.iter().any(|t| t.instructions_pct.is_none());
        let exported = exports.finish(&Document::Calibration(cal));
        if !complete {
            if let Err(e) = exported {
                crate::diag!("error: {e}");
            }
            return Err(Error::interrupted(
                completed,
                settings.repeat,
                "repetitions",
            ));
        }
        exported?;
        if !disagree.is_empty() {
            crate::diag!(
                "note: wasmi:fuel changed time against its instruction count on {}: an alignment or prediction effect, not fuel's cost",
                disagree.join(", ")
            );
        }
        if uncounted {
            crate::diag!(
                "note: fuel's known sign is for executed instructions, which no counter read here; its time change is reported, not judged"
            );
        }
        Ok(true)
    }
}
