//! What to replay and how: the options, their defaults and their bounds,
//! and the effects to inject as written on the command line.

use super::{ReplayError, MAX_EPOCHS, MAX_RESAMPLES};
use crate::stats::estimators::Estimator;
use crate::stats::LEVEL;

/// What to replay and how.
#[derive(Clone, Debug, PartialEq)]
pub struct Options {
    /// Effects injected into the null's reps, as fractions (`0.01` is +1%).
    pub effects: Vec<f64>,
    pub estimators: Vec<Estimator>,
    /// Resampled sessions per shape.
    pub resamples: usize,
    pub seed: u64,
    /// Only these shapes (all when `None`).
    pub shapes: Option<Vec<String>>,
    /// Epochs per resampled session (`None`: as many as recorded).
    pub epochs: Option<usize>,
    /// Shapes with fewer recorded epochs are listed as skipped.
    pub min_epochs: usize,
    /// Swap baseline and null per drawn epoch at random (see the module doc).
    pub swap: bool,
    /// The null arm, when a shape has several.
    pub null: Option<String>,
    pub level: f64,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            effects: vec![0.0, 0.01, 0.05],
            estimators: crate::stats::estimators::ALL.to_vec(),
            resamples: 400,
            seed: 1,
            shapes: None,
            epochs: None,
            min_epochs: 5,
            swap: true,
            null: None,
            level: LEVEL,
        }
    }
}

/// The smallest and largest time ratio an effect may give.
const MIN_RATIO: f64 = 1e-3;
const MAX_RATIO: f64 = 1e3;

/// `--effects`: fractions (`0.01`) or percentages (`1%`), comma-separated;
/// each above -1 (no time falls by 100%) and within a thousandfold.
/// Duplicates dropped, order kept.
pub fn parse_effects(text: &str) -> Result<Vec<f64>, ReplayError> {
    let mut out: Vec<f64> = Vec::new();
    for item in text.split(',').map(str::trim) {
        let bad = |reason: &str| ReplayError::BadEffect {
            value: item.to_string(),
            reason: reason.to_string(),
        };
        let (number, scale) = match item.strip_suffix('%') {
            Some(n) => (n.trim(), 0.01),
            None => (item, 1.0),
        };
        let x = number
            .parse::<f64>()
            .map_err(|_| bad("not a number (use fractions, 0.01 for +1%, or percentages, 1%)"))?
            * scale;
        if !x.is_finite() || x <= -1.0 {
            return Err(bad(
                "an effect must be above -1 (-100%): a time cannot fall by all of itself",
            ));
        }
        // A ratio beyond a thousandfold either way is no change a session
        // measures, and far ones overflow the arithmetic (+inf%, NaN).
        if !(MIN_RATIO..=MAX_RATIO).contains(&(1.0 + x)) {
            return Err(bad(
                "an effect must keep the time within a thousandfold (-99.9% to +99900%)",
            ));
        }
        if !out.contains(&x) {
            out.push(x);
        }
    }
    Ok(out)
}

impl Options {
    /// Every option in range (`replay` checks them too).
    pub fn check(&self) -> Result<(), ReplayError> {
        let bad = |option, value: String, reason| ReplayError::BadOption {
            option,
            value,
            reason,
        };
        if self.resamples == 0 {
            return Err(bad("--resamples", "0".into(), "needs at least 1"));
        }
        if self.resamples > MAX_RESAMPLES {
            return Err(bad(
                "--resamples",
                self.resamples.to_string(),
                "at most 1000000 (the coverage of 1000000 is known to +-0.05%)",
            ));
        }
        if let Some(e) = self.epochs.filter(|&e| e < 2) {
            return Err(bad(
                "--epochs",
                e.to_string(),
                "an interval across epochs needs at least 2",
            ));
        }
        if let Some(e) = self.epochs.filter(|&e| e > MAX_EPOCHS) {
            return Err(bad("--epochs", e.to_string(), "at most 100000"));
        }
        if self.min_epochs < 2 {
            return Err(bad(
                "--min-epochs",
                self.min_epochs.to_string(),
                "an interval across epochs needs at least 2",
            ));
        }
        if self.effects.is_empty() {
            return Err(bad("--effects", String::new(), "needs at least one effect"));
        }
        if let Some(x) = self.effects.iter().find(|x| !x.is_finite() || **x <= -1.0) {
            return Err(ReplayError::BadEffect {
                value: x.to_string(),
                reason: "an effect must be above -1 (-100%)".into(),
            });
        }
        if self.shapes.as_ref().is_some_and(Vec::is_empty) {
            return Err(bad("--shapes", String::new(), "needs at least one shape"));
        }
        if self.estimators.is_empty() {
            return Err(bad("--estimators", String::new(), "needs at least one"));
        }
        if !(self.level > 0.0 && self.level < 1.0) {
            return Err(bad("level", self.level.to_string(), "must lie in (0, 1)"));
        }
        Ok(())
    }
}
