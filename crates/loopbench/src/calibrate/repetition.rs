//! One repetition of a calibration is one session: epochs of fresh worker
//! processes running every arm, with the same machinery (order, null
//! control, epoch intervals) as `loopbench run`. From its result come one
//! row per effect and metric, each judged against the truth it was built to
//! have.

use super::arms::Arms;
use super::{detects, CalibrateError, Metric, Progress, Repetition, Row, Settings, StopWith};
use crate::arm::Iters;
use crate::error::Error;
use crate::machine;
use crate::results::{self, ShapeResult, StopSettings};
use crate::session;
use crate::shapes;
use crate::stats::{self, LEVEL};
use std::collections::BTreeMap;

/// What one repetition measured.
pub(super) struct RepetitionRun {
    /// Per effect arm (null control included) and metric.
    pub rows: Vec<Row>,
    pub repetition: Repetition,
    /// The baseline's calls, per metric in [`Metric::ALL`] order.
    pub base_calls: [Vec<f64>; 2],
    /// Epochs the session ran.
    pub epochs: usize,
}

impl RepetitionRun {
    /// The progress line that closes the repetition.
    pub fn note(&self, of: usize) -> String {
        let r = &self.repetition;
        let load = r
            .load_end
            .map(|l| format!("{:.2}", l[0]))
            .unwrap_or_else(|| "?".into());
        format!(
            "calibrate: repetition {}/{of} took {:.1} s ({} epochs, load {load})",
            r.repetition, r.session_seconds, self.epochs
        )
    }
}

/// Everything the repetitions measured, in order.
#[derive(Default)]
pub(super) struct Repetitions {
    pub rows: Vec<Row>,
    pub repetitions: Vec<Repetition>,
    /// The baseline's calls of every repetition, per metric.
    pub base_calls: [Vec<f64>; 2],
}

impl Repetitions {
    pub fn push(&mut self, run: RepetitionRun) {
        self.rows.extend(run.rows);
        self.repetitions.push(run.repetition);
        for (all, mine) in self.base_calls.iter_mut().zip(run.base_calls) {
            all.extend(mine);
        }
    }

    /// The rows of one metric.
    pub fn rows_of(&self, metric: Metric) -> Vec<Row> {
        self.rows
            .iter()
            .filter(|r| r.metric == metric)
            .cloned()
            .collect()
    }
}

/// The session of repetition `rep`: the baseline and the effect arms (the
/// session adds the null control), each epoch the same fixed length.
fn plan(s: &Settings, arms: &Arms, rep: usize) -> Result<session::Plan, Error> {
    let mut labels = vec![arms.labels[0].clone()];
    labels.extend(arms.labels[2..].iter().cloned());
    let mut arm_iters = vec![Iters::Shape];
    arm_iters.extend(s.effects.iter().map(|e| e.iters()));
    Ok(session::Plan {
        shapes: vec![shapes::lookup(&s.shape)?],
        arms: vec![s.engine.clone(); labels.len()],
        labels,
        arm_iters,
        params: s.params.clone(),
        rounds: s.rounds,
        warmup: s.warmup,
        stop: StopSettings {
            min_epochs: s.epochs,
            max_epochs: s.epochs,
            precision_pct: 0.0,
            budget_s: f64::INFINITY,
        },
        rep_target: None,
        seed: rep as u64,
        ..Default::default()
    })
}

/// Run repetition `rep` and judge its rows. `base` is the baseline's
/// iterations per call, `overhead` the fixed cost of a call per metric.
/// `None` when `progress` asked to stop before the repetition completed.
pub(super) fn run(
    s: &Settings,
    arms: &Arms,
    base: u64,
    overhead: [f64; 2],
    rep: usize,
    progress: &dyn Progress,
) -> Result<Option<RepetitionRun>, Error> {
    if progress.interrupted() {
        return Ok(None);
    }
    let load_start = machine::load_average();
    let session = session::run(plan(s, arms, rep)?, &mut StopWith(progress))?;
    if !session.complete {
        return Ok(None);
    }
    if let Some(e) = session.errors.first() {
        return Err(CalibrateError::Repetition {
            repetition: rep,
            detail: e.clone(),
        }
        .into());
    }
    let result = session
        .results
        .first()
        .ok_or(CalibrateError::RepetitionWithoutResult { repetition: rep })?;
    let mut repetition = Repetition {
        repetition: rep,
        session_seconds: session.wall_seconds,
        rounds: session.session.rounds * session.epochs.len(),
        reps: result.arms.iter().map(|a| a.verified_reps).sum(),
        base_call_ns: f64::NAN,
        load_start,
        load_end: machine::load_average(),
    };
    let mut rows = Vec::new();
    let mut base_calls: [Vec<f64>; 2] = [Vec::new(), Vec::new()];
    for (m, metric) in Metric::ALL.into_iter().enumerate() {
        let Some(judged) = judge(result, metric, arms, &repetition, base, overhead[m]) else {
            continue;
        };
        if metric == Metric::Wall {
            repetition.base_call_ns = stats::median(&judged.base_calls);
        }
        rows.extend(judged.rows);
        base_calls[m] = judged.base_calls;
    }
    Ok(Some(RepetitionRun {
        rows,
        repetition,
        base_calls,
        epochs: session.epochs.len(),
    }))
}

/// One metric's rows of a repetition, and the baseline's calls they are
/// measured against.
struct Judged {
    rows: Vec<Row>,
    base_calls: Vec<f64>,
}

/// Per arm label, per epoch, the metric of each call; `None` when the arm
/// did not run or a rep lacks the metric.
fn per_call(result: &ShapeResult, metric: Metric, label: &str) -> Option<BTreeMap<u32, Vec<f64>>> {
    let a = result.arms.iter().find(|a| a.arm == label)?;
    let values: Option<Vec<f64>> = a
        .reps
        .iter()
        .map(|r| match metric {
            Metric::Wall => Some(r.ns),
            Metric::ThreadCpu => r.cpu_ns,
        })
        .collect();
    Some(results::group_by_epoch(&values?, &a.reps))
}

/// The rows of `metric`: each effect arm (null control first) against the
/// baseline, its interval judged against the effect's truth. `None` when
/// the baseline has no calls by this metric.
fn judge(
    result: &ShapeResult,
    metric: Metric,
    arms: &Arms,
    repetition: &Repetition,
    base: u64,
    overhead: f64,
) -> Option<Judged> {
    let labels = &arms.labels;
    let base_ns = per_call(result, metric, &labels[0])?;
    let base_flat: Vec<f64> = base_ns.values().flatten().copied().collect();
    if base_flat.is_empty() {
        return None;
    }
    let t_base = stats::median(&base_flat);
    let compare = |label: &str, null: Option<&stats::EpochChange>| {
        let (c, b) = results::paired_epochs(&per_call(result, metric, label)?, &base_ns);
        stats::compare(&c, &b, null, LEVEL)
    };
    let null_change = compare(&labels[1], None).map(|c| c.change);
    let mut rows = Vec::new();
    for (i, label) in labels.iter().enumerate().skip(1) {
        let e = arms.effects[i];
        let Some(stats::Compared { change: c, verdict }) = compare(label, null_change.as_ref())
        else {
            continue;
        };
        let cand_flat: Vec<f64> = per_call(result, metric, label)
            .map(|v| v.values().flatten().copied().collect())
            .unwrap_or_default();
        // Exact by construction: the arm's count resolves e.iters().
        debug_assert_eq!(Ok(arms.iters[i]), e.iters().resolve(base));
        let true_pct = e.pct();
        rows.push(Row {
            repetition: repetition.repetition,
            metric,
            arm: label.clone(),
            true_pct,
            true_time_pct: true_pct * (1.0 - (overhead / t_base).clamp(0.0, 1.0)),
            base_iters: base,
            iters: arms.iters[i],
            median_pct: c.median_pct,
            ci_pct: c.ci_pct,
            confidence: c.confidence,
            pairs: c.pairs,
            min_pct: (stats::min(&cand_flat) / stats::min(&base_flat) - 1.0) * 100.0,
            covered: c.ci_pct[0] <= e.pct() && e.pct() <= c.ci_pct[1],
            detected: detects(c.ci_pct, e.pct()),
            verdict,
            session_seconds: repetition.session_seconds,
            load_start: repetition.load_start,
            load_end: repetition.load_end,
        });
    }
    Some(Judged {
        rows,
        base_calls: base_flat,
    })
}
