//! `loopbench replay FILE`: inject known effects into a recorded session's
//! null control and measure each estimator's coverage, interval width and
//! detection on that real noise.

use crate::error::Error;
use crate::replay::{self, read::METRICS, ReplayError};
use crate::stats::estimators;
use clap::Args;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct ReplayArgs {
    /// A per-rep CSV written by `loopbench run --csv` (plain or gzipped).
    pub file: PathBuf,
    /// Effects to inject into the null's reps: fractions (0.01 is +1%) or
    /// percentages (1%), comma-separated, each above -1.
    #[arg(long, default_value = "0,0.01,0.05", allow_hyphen_values = true)]
    pub effects: String,
    /// Estimators to evaluate: `all`, or a list of median, mean,
    /// hodges_lehmann, trimNN, min, qNN.
    #[arg(long, default_value = "all")]
    pub estimators: String,
    /// Resampled sessions per shape.
    #[arg(long, default_value_t = 400)]
    pub resamples: usize,
    /// Seed of the resampling (Xoshiro256++): the same seed, the same output.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Only these shapes (comma-separated; default: every shape in FILE).
    #[arg(long)]
    pub shapes: Option<String>,
    /// Epochs per resampled session (default: each shape's recorded number).
    #[arg(long)]
    pub epochs: Option<usize>,
    /// Skip shapes with fewer recorded epochs than this.
    #[arg(long, default_value_t = 5)]
    pub min_epochs: usize,
    /// The null arm, for a file whose shapes have several.
    #[arg(long)]
    pub null: Option<String>,
    /// The time to compare: ns (wall clock) or cpu_ns (thread CPU time).
    #[arg(long, default_value = "ns")]
    pub metric: String,
    /// Keep baseline and null as recorded instead of swapping them per
    /// drawn epoch at random (the recorded null's offset then stays in
    /// every resample and coverage of the exact effect falls).
    #[arg(long)]
    pub no_swap: bool,
    /// Print every shape's rows after the summary.
    #[arg(long)]
    pub per_shape: bool,
    /// Write the replay as JSON to FILE (`-` for stdout, instead of the table).
    #[arg(long, value_name = "FILE")]
    pub json: Option<String>,
}

impl ReplayArgs {
    pub fn execute(&self) -> Result<bool, Error> {
        if !METRICS.contains(&self.metric.as_str()) {
            return Err(ReplayError::BadOption {
                option: "--metric",
                value: self.metric.clone(),
                reason: "use ns or cpu_ns",
            }
            .into());
        }
        let opts = replay::Options {
            effects: replay::parse_effects(&self.effects)?,
            estimators: estimators::parse_list(&self.estimators).map_err(ReplayError::from)?,
            resamples: self.resamples,
            seed: self.seed,
            shapes: self.shapes.as_ref().map(|s| {
                s.split(',')
                    .map(|x| x.trim().to_string())
                    .filter(|x| !x.is_empty())
                    .collect()
            }),
            epochs: self.epochs,
            min_epochs: self.min_epochs,
            swap: !self.no_swap,
            null: self.null.clone(),
            ..Default::default()
        };
        // Options are checked before the file is read: a bad option is
        // reported as such, however large the file.
        opts.check()?;
        if let Some(out) = self.json.as_deref().filter(|p| *p != "-") {
            crate::report::refuse_input(std::path::Path::new(out), &[&self.file])?;
        }
        let rec = replay::read(&self.file, &self.metric)?;
        let r = replay::replay(&rec, &opts)?;
        let mut json = serde_json::to_vec_pretty(&r)
            .map_err(|e| Error::Usage(format!("cannot encode the replay as JSON: {e}")))?;
        json.push(b'\n');
        match self.json.as_deref() {
            Some("-") => {
                use std::io::Write as _;
                std::io::stdout()
                    .lock()
                    .write_all(&json)
                    .map_err(|e| Error::io("cannot write to stdout", e))?;
            }
            Some(path) => {
                crate::report::write_atomic(std::path::Path::new(path), &json)?;
                crate::out!("{}", crate::report::replay::render(&r, self.per_shape));
            }
            None => crate::out!("{}", crate::report::replay::render(&r, self.per_shape)),
        }
        Ok(true)
    }
}
