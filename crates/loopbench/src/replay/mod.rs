//! Replay: prove an estimator on recorded noise (issue 24, rule 14).
//!
//! A session's per-rep CSV holds, for every shape, the reps of the baseline
//! arm and of its null control, a second process of the same engine. Their
//! difference is real noise of this machine with a true effect of zero.
//! Multiply the null's reps by `1 + x` and the true effect is exactly
//! `ln(1 + x)`; resample the recorded epochs and every estimator's interval
//! can be checked against it: **coverage** (the fraction of resampled
//! sessions whose 95% interval holds the truth), **median half-width**
//! and, for `x != 0`, **detection** (the fraction whose interval excludes
//! zero on the side of the effect).
//!
//! # The resampled session
//!
//! Epochs are the unit (a fresh process: its layout and its moment), so
//! they are drawn whole, with replacement, `epochs` of them per resampled
//! session (default: as many as were recorded); inside an epoch the rounds
//! stay as recorded, each baseline rep paired with the null rep of its
//! round. Each drawn epoch gives one estimate per estimator
//! ([`Estimator::estimate`]) and the interval is the t interval across the
//! drawn epochs ([`crate::stats::estimators::across_epochs`]), as a session
//! builds it. The same draws serve every estimator and effect (common
//! random numbers), so differences between estimators are not draw luck.
//!
//! # Why the roles are swapped at random
//!
//! The recorded null's estimate over all its epochs is not exactly zero:
//! it is one draw, about one standard error from zero. Resampling those
//! epochs centres every resampled session on that draw, so a perfectly
//! calibrated interval would cover the exact truth well below 95% (for an
//! offset of z standard errors, about `P(|z + Z| < 1.96)`, which averages
//! to 83% over z ~ N(0, 1); measured on the noisy-vm session with `swap:
//! false`, 87% for the median). The baseline and the null are two processes of the
//! same engine in the same rounds, so which of them is called "null" is
//! arbitrary: each drawn epoch swaps them with probability 1/2 (the effect
//! then goes into the baseline process's reps, measured against the null
//! process). Every estimator here is antisymmetric (swapping negates it),
//! so the resampled world's true null effect is then exactly zero and its
//! true effect exactly `ln(1 + x)`, whatever the recorded offset. What the
//! swap cannot show, a real offset between the two processes, is checked
//! on the recorded data directly: each shape's own interval over all its
//! epochs ([`ShapeReplay::recorded`]), of which about 5% should exclude
//! zero. `swap: false` resamples the roles as recorded.

pub mod choice;
pub mod error;
pub mod options;
pub mod read;

use rand::rngs::Xoshiro256PlusPlus;
use rand::{RngExt, SeedableRng};
use serde::{Deserialize, Serialize};

pub use choice::{choose_estimator, EstimatorChoice, MIN_COVERAGE, NARROWER};
pub use error::ReplayError;
pub use options::{parse_effects, Options};
pub use read::{read, Recorded};

use crate::stats::estimators::{across_epochs, Estimator};
use crate::stats::median;

/// The `kind` of a replay JSON document.
pub const KIND: &str = "replay";
/// Its schema version.
pub const VERSION: u32 = 1;

/// The most resampled sessions per shape, and epochs per resampled session,
/// a replay accepts (each is held in memory).
pub const MAX_RESAMPLES: usize = 1_000_000;
pub const MAX_EPOCHS: usize = 100_000;

/// A whole replay, as JSON records it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Replay {
    pub kind: &'static str,
    pub version: u32,
    pub source: String,
    pub sessions: Vec<String>,
    pub metric: String,
    pub settings: Settings,
    /// Over the shapes replayed: per estimator and effect.
    pub summary: Vec<Row>,
    /// Over the shapes replayed: per estimator, the recorded nulls.
    pub recorded_summary: Vec<RecordedSummary>,
    pub shapes: Vec<ShapeReplay>,
    pub skipped: Vec<Skipped>,
}

/// The options a replay ran with.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Settings {
    pub effects: Vec<f64>,
    pub estimators: Vec<String>,
    pub resamples: usize,
    pub seed: u64,
    /// `None`: each shape's recorded number.
    pub epochs: Option<usize>,
    pub min_epochs: usize,
    pub swap: bool,
    pub level: f64,
    pub interval: &'static str,
}

/// One estimator at one effect: on one shape, or over shapes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Row {
    pub estimator: String,
    /// The injected effect, a fraction.
    pub effect: f64,
    /// The fraction of resampled sessions whose interval holds `ln(1 +
    /// effect)` (over shapes: of all resampled sessions of all shapes).
    pub coverage: f64,
    pub covered: usize,
    pub sessions: usize,
    /// The median half-width of the intervals, in percent (over shapes:
    /// the median of the shapes' medians).
    pub median_half_width_pct: f64,
    /// The fraction whose interval excludes zero on the effect's side;
    /// `None` for effect 0 (there `1 - coverage` is the false alarm rate).
    pub detection: Option<f64>,
    /// Shapes summarised (1 on a shape's own row).
    pub shapes: usize,
    /// Over shapes: the geometric mean of this estimator's median
    /// half-width over the default estimator's (median) on the same shape
    /// and effect; `None` on a shape's row or without the default.
    pub width_vs_default: Option<f64>,
    /// Over shapes: on how many this estimator's median half-width is the
    /// narrowest of those evaluated (ties count for each).
    pub narrowest_on: Option<usize>,
}

/// One shape's null against its baseline on all its recorded epochs, by
/// one estimator (no effect, no resampling, roles as recorded).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RecordedNull {
    pub estimator: String,
    pub change_pct: f64,
    pub ci_pct: [f64; 2],
    pub excludes_zero: bool,
}

/// Over shapes: how many recorded null intervals exclude zero.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RecordedSummary {
    pub estimator: String,
    pub shapes: usize,
    pub excluding_zero: usize,
    /// The median over shapes of the recorded interval's half-width, %.
    pub median_half_width_pct: f64,
}

/// One shape's replay.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ShapeReplay {
    pub shape: String,
    pub baseline: String,
    pub null: String,
    /// Recorded epochs with paired baseline and null reps.
    pub epochs: usize,
    /// Paired rounds over those epochs.
    pub rounds: usize,
    /// Epochs per resampled session.
    pub resampled_epochs: usize,
    pub rows: Vec<Row>,
    pub recorded: Vec<RecordedNull>,
}

/// A shape left out, and why.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Skipped {
    pub shape: String,
    pub epochs: usize,
    pub reason: String,
}

fn pct(log_ratio: f64) -> f64 {
    (log_ratio.exp() - 1.0) * 100.0
}

/// The larger distance from the estimate to an interval end, in percent
/// (as [`crate::stats::EpochChange::half_width_pct`]).
fn half_width_pct(estimate: f64, lo: f64, hi: f64) -> f64 {
    (pct(hi) - pct(estimate)).max(pct(estimate) - pct(lo))
}

/// Replay `rec` with `opts`.
pub fn replay(rec: &Recorded, opts: &Options) -> Result<Replay, ReplayError> {
    opts.check()?;
    let chosen: Vec<&read::ShapeReps> = match &opts.shapes {
        None => rec.shapes.iter().collect(),
        Some(names) => names
            .iter()
            .map(|n| {
                rec.shapes
                    .iter()
                    .find(|s| &s.shape == n)
                    .ok_or_else(|| ReplayError::UnknownShape {
                        path: rec.path.clone(),
                        shape: n.clone(),
                        has: rec.shapes.iter().map(|s| s.shape.clone()).collect(),
                    })
            })
            .collect::<Result<_, _>>()?,
    };
    let mut shapes = Vec::new();
    let mut skipped = Vec::new();
    for reps in chosen {
        let (base, null) = arms(rec, reps, opts)?;
        // Epochs are non-empty with positive times (see `read`), so every
        // estimator has a value on each; one where any had none is left
        // out by all.
        let epochs: Vec<Vec<(f64, f64)>> = reps
            .paired(null, base)
            .into_iter()
            .filter(|e| opts.estimators.iter().all(|k| k.estimate(e).is_some()))
            .collect();
        if epochs.len() < opts.min_epochs {
            skipped.push(Skipped {
                shape: reps.shape.clone(),
                epochs: epochs.len(),
                reason: format!(
                    "{} epochs with paired reps, fewer than --min-epochs {}",
                    epochs.len(),
                    opts.min_epochs
                ),
            });
            continue;
        }
        let mut s = replay_shape(&reps.shape, &epochs, opts);
        s.baseline = reps.arms[base].name.clone();
        s.null = reps.arms[null].name.clone();
        shapes.push(s);
    }
    if shapes.is_empty() {
        return Err(ReplayError::TooFewEpochs {
            min_epochs: opts.min_epochs,
            most: skipped.iter().map(|s| s.epochs).max().unwrap_or(0),
        });
    }
    let summary = summarise(&shapes, opts);
    let recorded_summary = opts
        .estimators
        .iter()
        .enumerate()
        .map(|(k, e)| {
            let recs: Vec<&RecordedNull> = shapes.iter().map(|s| &s.recorded[k]).collect();
            RecordedSummary {
                estimator: e.name(),
                shapes: recs.len(),
                excluding_zero: recs.iter().filter(|r| r.excludes_zero).count(),
                median_half_width_pct: median(
                    &recs
                        .iter()
                        .map(|r| (r.ci_pct[1] - r.change_pct).max(r.change_pct - r.ci_pct[0]))
                        .collect::<Vec<_>>(),
                ),
            }
        })
        .collect();
    Ok(Replay {
        kind: KIND,
        version: VERSION,
        source: rec.path.display().to_string(),
        sessions: rec.sessions.clone(),
        metric: rec.metric.clone(),
        settings: Settings {
            effects: opts.effects.clone(),
            estimators: opts.estimators.iter().map(Estimator::name).collect(),
            resamples: opts.resamples,
            seed: opts.seed,
            epochs: opts.epochs,
            min_epochs: opts.min_epochs,
            swap: opts.swap,
            level: opts.level,
            interval: "student_t",
        },
        summary,
        recorded_summary,
        shapes,
        skipped,
    })
}

/// The baseline and null arms of a shape.
fn arms(
    rec: &Recorded,
    reps: &read::ShapeReps,
    opts: &Options,
) -> Result<(usize, usize), ReplayError> {
    let base = *reps
        .with_role("baseline")
        .first()
        .ok_or_else(|| ReplayError::NoBaseline {
            path: rec.path.clone(),
            shape: reps.shape.clone(),
        })?;
    let nulls = reps.with_role("null");
    let names = || nulls.iter().map(|&i| reps.arms[i].name.clone()).collect();
    let null = match (&opts.null, nulls.as_slice()) {
        (_, []) => {
            return Err(ReplayError::NoNull {
                path: rec.path.clone(),
                shape: reps.shape.clone(),
            })
        }
        (Some(want), _) => *nulls
            .iter()
            .find(|&&i| &reps.arms[i].name == want)
            .ok_or_else(|| ReplayError::UnknownNull {
                arm: want.clone(),
                shape: reps.shape.clone(),
                nulls: names(),
            })?,
        (None, [one]) => *one,
        (None, _) => {
            return Err(ReplayError::SeveralNulls {
                shape: reps.shape.clone(),
                arms: names(),
            })
        }
    };
    Ok((base, null))
}

/// The seed of one shape's draws: the run's seed and the shape's name, so a
/// shape draws the same whichever other shapes are replayed with it.
fn shape_seed(seed: u64, shape: &str) -> u64 {
    crate::hash::fnv1a(&[&seed.to_le_bytes(), shape.as_bytes()])
}

/// One shape: `epochs[e]` holds epoch e's `(null, baseline)` pairs (at
/// least two epochs, each with a value by every estimator). `noise
/// --record` replays its own reps through this to choose an estimator
/// ([`choose_estimator`]).
pub fn replay_shape(shape: &str, epochs: &[Vec<(f64, f64)>], opts: &Options) -> ShapeReplay {
    let (ne, nf) = (opts.estimators.len(), opts.effects.len());
    // est[k][f][e][swapped]: each drawn epoch is a recorded one, so every
    // estimate a resample needs is computed once here.
    let one = |k: usize, f: usize, e: usize, swapped: bool| {
        let factor = 1.0 + opts.effects[f];
        let pairs: Vec<(f64, f64)> = epochs[e]
            .iter()
            .map(|&(null, base)| {
                if swapped {
                    (base * factor, null)
                } else {
                    (null * factor, base)
                }
            })
            .collect();
        opts.estimators[k].estimate(&pairs).unwrap_or(f64::NAN)
    };
    let est: Vec<Vec<Vec<[f64; 2]>>> = (0..ne)
        .map(|k| {
            (0..nf)
                .map(|f| {
                    (0..epochs.len())
                        .map(|e| [false, true].map(|s| one(k, f, e, s)))
                        .collect()
                })
                .collect()
        })
        .collect();
    let n = epochs.len();
    let draw_n = opts.epochs.unwrap_or(n);

    let mut rng = Xoshiro256PlusPlus::seed_from_u64(shape_seed(opts.seed, shape));
    let mut covered = vec![vec![0usize; nf]; ne];
    let mut detected = vec![vec![0usize; nf]; ne];
    let mut widths = vec![vec![Vec::with_capacity(opts.resamples); nf]; ne];
    let mut draws = vec![(0usize, 0usize); draw_n];
    let mut xs = vec![0.0; draw_n];
    for _ in 0..opts.resamples {
        for d in draws.iter_mut() {
            let e = rng.random_range(0..n);
            let s = if opts.swap {
                usize::from(rng.random_bool(0.5))
            } else {
                0
            };
            *d = (e, s);
        }
        for k in 0..ne {
            for f in 0..nf {
                for (x, &(e, s)) in xs.iter_mut().zip(&draws) {
                    *x = est[k][f][e][s];
                }
                let Some(a) = across_epochs(&xs, opts.level) else {
                    continue;
                };
                let truth = opts.effects[f].ln_1p();
                covered[k][f] += usize::from(a.lo <= truth && truth <= a.hi);
                let effect = opts.effects[f];
                detected[k][f] +=
                    usize::from((effect > 0.0 && a.lo > 0.0) || (effect < 0.0 && a.hi < 0.0));
                widths[k][f].push(half_width_pct(a.estimate, a.lo, a.hi));
            }
        }
    }
    let r = opts.resamples;
    let rows = (0..ne)
        .flat_map(|k| (0..nf).map(move |f| (k, f)))
        .map(|(k, f)| Row {
            estimator: opts.estimators[k].name(),
            effect: opts.effects[f],
            coverage: covered[k][f] as f64 / r as f64,
            covered: covered[k][f],
            sessions: r,
            median_half_width_pct: median(&widths[k][f]),
            detection: (opts.effects[f] != 0.0).then(|| detected[k][f] as f64 / r as f64),
            shapes: 1,
            width_vs_default: None,
            narrowest_on: None,
        })
        .collect();
    let recorded = (0..ne)
        .map(|k| {
            let xs: Vec<f64> = epochs
                .iter()
                .map(|e| opts.estimators[k].estimate(e).unwrap_or(f64::NAN))
                .collect();
            let (change_pct, ci_pct, excludes_zero) = match across_epochs(&xs, opts.level) {
                Some(a) => (
                    pct(a.estimate),
                    [pct(a.lo), pct(a.hi)],
                    a.lo > 0.0 || a.hi < 0.0,
                ),
                None => (f64::NAN, [f64::NAN; 2], false),
            };
            RecordedNull {
                estimator: opts.estimators[k].name(),
                change_pct,
                ci_pct,
                excludes_zero,
            }
        })
        .collect();
    ShapeReplay {
        shape: shape.to_string(),
        baseline: String::new(),
        null: String::new(),
        epochs: n,
        rounds: epochs.iter().map(Vec::len).sum(),
        resampled_epochs: draw_n,
        rows,
        recorded,
    }
}

/// Per estimator and effect over `shapes`: pooled coverage and detection,
/// the median of the shapes' median half-widths, the width against the
/// default estimator's and how often each is the narrowest.
fn summarise(shapes: &[ShapeReplay], opts: &Options) -> Vec<Row> {
    let nf = opts.effects.len();
    let ne = opts.estimators.len();
    let default = opts
        .estimators
        .iter()
        .position(|e| *e == crate::stats::estimators::DEFAULT);
    let width = |s: &ShapeReplay, k: usize, f: usize| s.rows[k * nf + f].median_half_width_pct;
    (0..ne * nf)
        .map(|i| {
            let (k, f) = (i / nf, i % nf);
            let rows: Vec<&Row> = shapes.iter().map(|s| &s.rows[i]).collect();
            let sessions: usize = rows.iter().map(|r| r.sessions).sum();
            let covered: usize = rows.iter().map(|r| r.covered).sum();
            let detection = rows[0].detection.map(|_| {
                rows.iter()
                    .map(|r| r.detection.unwrap_or(0.0) * r.sessions as f64)
                    .sum::<f64>()
                    / sessions as f64
            });
            // Shapes whose widths are both 0 (no spread) have no ratio;
            // with none left, there is nothing to show ("-", not NaNx).
            let width_vs_default = default.and_then(|d| {
                let logs: Vec<f64> = shapes
                    .iter()
                    .map(|s| (width(s, k, f) / width(s, d, f)).ln())
                    .filter(|x| x.is_finite())
                    .collect();
                (!logs.is_empty()).then(|| (logs.iter().sum::<f64>() / logs.len() as f64).exp())
            });
            let narrowest_on = shapes
                .iter()
                .filter(|s| (0..ne).all(|j| width(s, k, f) <= width(s, j, f)))
                .count();
            Row {
                estimator: rows[0].estimator.clone(),
                effect: rows[0].effect,
                coverage: covered as f64 / sessions as f64,
                covered,
                sessions,
                median_half_width_pct: median(
                    &rows
                        .iter()
                        .map(|r| r.median_half_width_pct)
                        .collect::<Vec<_>>(),
                ),
                detection,
                shapes: rows.len(),
                width_vs_default,
                narrowest_on: Some(narrowest_on),
            }
        })
        .collect()
}
