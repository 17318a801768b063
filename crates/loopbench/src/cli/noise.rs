//! `loopbench noise`: a session of the arm and its null control per rep
//! length of a sweep, split into the noise of each level
//! ([`crate::stats::components`]), with the smallest change a session of
//! `--budget` finds at each and the rep length that finds the smallest.

use super::OutputArgs;
use crate::arm::ArmSpec;
use crate::error::Error;
use crate::results::noise::{Noise, NoiseRow, SCHEMA};
use crate::results::{Document, Role, Schedule, StopSettings};
use crate::session;
use crate::shapes;
use crate::stats::components::Components;
use clap::Args;
use std::time::{Duration, Instant};

/// The fewest epochs a recorded choice is made on: an SD from E epochs is
/// uncertain by about 1/sqrt(2(E-1)) of itself (25% at E = 8, 16% at 20),
/// and the sweep's rows differ by less than that.
pub const MIN_RECORD_EPOCHS: usize = 20;

#[derive(Args, Debug)]
pub struct NoiseArgs {
    /// The arm whose noise is measured (against its null control).
    #[arg(long, default_value = "wasmi")]
    pub engine: String,
    /// The shape it runs.
    #[arg(long, default_value = "add_chain")]
    pub shape: String,
    /// Rep lengths to sweep, milliseconds, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "0.05,0.2,1,5,10")]
    pub rep_ms: Vec<f64>,
    /// Schedules to sweep, comma-separated: `sequential` (the arm and its
    /// null one after the other on one core), `duet` (both at the same
    /// moment on the first two cores this process may use). Duets are
    /// opt-in: measured here they paired worse on one VM and biased
    /// another shape's null on a second (see the README). `duet:A,B`
    /// names the two cores (`--schedules sequential,duet:0,1`).
    #[arg(long, default_value = "sequential")]
    pub schedules: String,
    /// Epochs (fresh process pairs) per rep length.
    #[arg(long, default_value_t = 8)]
    pub epochs: usize,
    /// Measured rounds per epoch. Default: what `run` takes at each rep
    /// length (enough for 8 ms of reps, at least 8), so the predictions are
    /// for the sessions `run` would hold.
    #[arg(long, value_parser = super::rounds_count)]
    pub rounds: Option<usize>,
    /// The session budget per shape the predictions are for, seconds
    /// (run's --budget).
    #[arg(long, default_value_t = 3.0)]
    pub budget: f64,
    /// Record the rep length that finds the smallest change as this
    /// machine's setting in the history: `run` then uses it by default
    /// (and says so; --rep-ms overrides).
    #[arg(long)]
    pub record: bool,
    #[command(flatten)]
    pub output: OutputArgs,
    /// The history the session level is learned from.
    #[command(flatten)]
    pub db: super::DbArg,
}

/// A comma-separated list of schedules, where `duet:A,B`'s comma is part
/// of the duet: a bare number after a `duet:` item is its second core.
fn split_schedules(list: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for item in list.split(',').map(str::trim) {
        match out.last_mut() {
            Some(last)
                if last.starts_with("duet:")
                    && !last.contains(',')
                    && !item.is_empty()
                    && item.bytes().all(|b| b.is_ascii_digit()) =>
            {
                last.push(',');
                last.push_str(item);
            }
            _ => out.push(item.to_string()),
        }
    }
    out
}

impl NoiseArgs {
    /// The schedules of the sweep; a machine with one core skips duets
    /// and says so.
    fn schedules(&self, notes: &mut Vec<String>) -> Result<Vec<Schedule>, Error> {
        let allowed = crate::measure::affinity::allowed();
        let mut out = Vec::new();
        for text in &split_schedules(&self.schedules) {
            match super::run::parse_schedule(text, &allowed) {
                Ok(s) => out.push(s),
                Err(_) if text == "duet" && allowed.len() < 2 => notes.push(format!(
                    "duet skipped: this process may run on {allowed:?} only, a duet needs two cores"
                )),
                Err(e) => return Err(e),
            }
        }
        out.dedup();
        if out.is_empty() {
            return Err(Error::Usage("--schedules: nothing to measure".into()));
        }
        Ok(out)
    }

    fn check(&self) -> Result<ArmSpec, Error> {
        if self.epochs < 2 || self.epochs > 200 {
            return Err(Error::Usage(
                "--epochs must be 2 to 200: the epoch level needs two".into(),
            ));
        }
        if self.rounds.is_some_and(|r| !(2..=1000).contains(&r)) {
            return Err(Error::Usage("--rounds must be 2 to 1000".into()));
        }
        if self.rep_ms.is_empty()
            || self
                .rep_ms
                .iter()
                .any(|r| !(r.is_finite() && (0.01..=1000.0).contains(r)))
        {
            return Err(Error::Usage(
                "--rep-ms: each rep length must be 0.01 to 1000 ms".into(),
            ));
        }
        if self.record && self.epochs < MIN_RECORD_EPOCHS {
            return Err(Error::Usage(format!(
                "--record needs --epochs {MIN_RECORD_EPOCHS} or more: with fewer, the epoch level's \
                 SD is too uncertain to choose a setting by"
            )));
        }
        if !(self.budget.is_finite() && self.budget > 0.0) {
            return Err(Error::Usage(
                "--budget must be a positive number of seconds".into(),
            ));
        }
        shapes::lookup(&self.shape)?;
        let arm: ArmSpec = self.engine.parse()?;
        if arm.worker.is_some() {
            crate::workers::check(&arm)?;
        }
        Ok(arm)
    }

    pub fn execute(&self) -> Result<bool, Error> {
        let arm = self.check()?;
        let exports = self.output.exports()?;
        let started = Instant::now();
        let mut rows = Vec::new();
        // Each row's epochs as `(null, baseline)` pairs, for the replay.
        let mut paired = Vec::new();
        let mut version = String::new();
        let mut notes = Vec::new();
        let schedules = self.schedules(&mut notes)?;
        let sweep: Vec<(Schedule, f64)> = schedules
            .iter()
            .flat_map(|s| self.rep_ms.iter().map(move |r| (*s, *r)))
            .collect();
        for (i, &(schedule, rep_ms)) in sweep.iter().enumerate() {
            let rounds = self
                .rounds
                .unwrap_or_else(|| session::default_rounds(Some(rep_ms)));
            crate::diag!(
                "noise: {} ms reps, {} ({} of {}), {} epochs x {} rounds",
                rep_ms,
                schedule.name(),
                i + 1,
                sweep.len(),
                self.epochs,
                rounds
            );
            let plan = session::Plan {
                shapes: vec![shapes::lookup(&self.shape)?],
                arms: vec![arm.clone()],
                rounds,
                stop: StopSettings {
                    min_epochs: self.epochs,
                    max_epochs: self.epochs,
                    precision_pct: 0.0,
                    budget_s: f64::INFINITY,
                },
                rep_target: Some(Duration::from_secs_f64(rep_ms / 1e3)),
                seed: i as u64,
                schedule,
                // A duet pins each pair itself; sequential sessions pin
                // to the last core, as `run` does.
                pin: match schedule {
                    Schedule::Sequential => crate::measure::affinity::allowed().last().copied(),
                    Schedule::Duet { .. } => None,
                },
                ..Default::default()
            };
            let s = session::run(plan, &mut ())?;
            if let Some(e) = s.errors.first() {
                return Err(Error::Usage(format!("noise at {rep_ms} ms reps: {e}")));
            }
            let Some(r) = s.results.first() else {
                return Err(Error::Usage(format!(
                    "noise at {rep_ms} ms reps: no result"
                )));
            };
            let of = |role: Role| r.arms.iter().find(|a| a.role == role);
            let (Some(base), Some(null)) = (of(Role::Baseline), of(Role::Null)) else {
                return Err(Error::Usage(format!(
                    "noise at {rep_ms} ms reps: no null control"
                )));
            };
            version = base.version.clone();
            let (b, n) = crate::results::paired_epochs(
                &base.samples_against(&null.arm),
                &null.samples_against(&base.arm),
            );
            let Some(components) = Components::of(&b, &n) else {
                return Err(Error::Usage(format!(
                    "noise at {rep_ms} ms reps: fewer than two epochs of paired rounds"
                )));
            };
            let epochs = s.epochs.len().max(1);
            let epoch_seconds = s.wall_seconds / epochs as f64;
            let budget_epochs = ((self.budget / epoch_seconds).floor() as usize).max(2);
            let (half_width_pct, smallest_change_pct) =
                components.predict(budget_epochs, components.rounds);
            let ns: Vec<f64> = base.reps.iter().map(|r| r.ns).collect();
            paired.push(
                n.iter()
                    .zip(&b)
                    .map(|(n, b)| n.iter().copied().zip(b.iter().copied()).collect())
                    .collect::<Vec<Vec<(f64, f64)>>>(),
            );
            rows.push(NoiseRow {
                rep_ms,
                measured_rep_ms: crate::stats::median(&ns) / 1e6,
                schedule: schedule.name().into(),
                components,
                epoch_seconds,
                budget_epochs,
                half_width_pct,
                smallest_change_pct,
            });
        }
        let chosen_at = rows
            .iter()
            .enumerate()
            .filter(|(_, r)| r.smallest_change_pct.is_finite())
            .min_by(|(_, a), (_, b)| a.smallest_change_pct.total_cmp(&b.smallest_change_pct))
            .map(|(i, _)| i);
        let chosen = chosen_at.map(|i| &rows[i]);
        let choice = chosen.map(|r| r.rep_ms);
        let choice_schedule = chosen.map(|r| r.schedule.clone());
        // The estimators, on the chosen row's own reps: a known effect
        // injected into the null's reps, its epochs resampled.
        let estimators = chosen_at.map(|i| {
            let opts = crate::replay::Options {
                effects: vec![0.0, 0.01],
                min_epochs: 2,
                ..Default::default()
            };
            crate::replay::replay_shape(&self.shape, &paired[i], &opts)
        });
        let choice_estimator = estimators.as_ref().map(crate::replay::choose_estimator);
        let machine = crate::machine::Machine::read();
        let (session_level, more) = self.session_level(&machine, &arm, &version);
        notes.extend(more);
        if schedules.iter().any(|s| matches!(s, Schedule::Duet { .. })) {
            notes.push(
                "duet: the arm and its null control at the same moment on two cores, swapped \
                 every round; the round level is the pair's log ratio"
                    .into(),
            );
        }
        let doc = Noise {
            schema: SCHEMA.to_string(),
            machine,
            arm: arm.to_string(),
            version,
            shape: self.shape.clone(),
            metric: crate::results::Metric::Wall,
            budget_s: self.budget,
            rows,
            session_level,
            choice,
            choice_schedule,
            estimators,
            choice_estimator,
            notes,
            wall_seconds: started.elapsed().as_secs_f64(),
        };
        if self.record {
            self.record(&doc)?;
        }
        exports.finish(&Document::Noise(Box::new(doc)))?;
        Ok(true)
    }

    /// Store the choice as this machine's setting, and say where.
    fn record(&self, doc: &Noise) -> Result<(), Error> {
        let Some(row) = doc.chosen() else {
            return Err(Error::Usage(
                "noise --record: no rep length gave a prediction".into(),
            ));
        };
        #[cfg(feature = "history")]
        {
            let location = self.db.location()?;
            let mut db = location.open()?;
            let source = format!(
                "`loopbench noise` ({} on {}, {}: finds {:.2}% in {} s)",
                doc.arm, doc.shape, row.schedule, row.smallest_change_pct, doc.budget_s
            );
            let estimator = doc
                .choice_estimator
                .as_ref()
                .map(|c| c.estimator.clone())
                .unwrap_or_else(|| crate::stats::estimators::DEFAULT.name());
            crate::history::settings::record(
                db.as_mut(),
                &doc.machine,
                row.rep_ms,
                &row.schedule,
                &estimator,
                &source,
            )?;
            crate::diag!(
                "noise: --rep-ms {} recorded for this machine (schedule {}, estimator {estimator}) in {location}; run uses it by default",
                row.rep_ms,
                row.schedule
            );
            Ok(())
        }
        #[cfg(not(feature = "history"))]
        {
            let _ = row;
            Err(Error::Usage(
                "noise --record needs the history feature".into(),
            ))
        }
    }

    /// The spread of this machine's repeated sessions of the shape and arm,
    /// from the history, and why there is none.
    fn session_level(
        &self,
        machine: &crate::machine::Machine,
        arm: &ArmSpec,
        version: &str,
    ) -> (Option<crate::stats::sessions::Between>, Vec<String>) {
        #[cfg(feature = "history")]
        {
            let query = crate::results::compare::SeriesQuery {
                machine: machine.clone(),
                shape: self.shape.clone(),
                workload: None,
                arm: arm.to_string(),
                metric: crate::results::Metric::Wall.key().to_string(),
                versions: vec![version.to_string()],
                exclude: Vec::new(),
                reference: None,
            };
            let found = self.db.location().and_then(|l| {
                let mut db = l.open_read()?;
                Ok(crate::history::series::repeated(db.as_mut(), &query)?)
            });
            match found {
                Ok((values, se)) => (
                    crate::stats::sessions::Between::learn_excess(&values, &se),
                    Vec::new(),
                ),
                Err(e) => (None, vec![format!("no session level: {e}")]),
            }
        }
        #[cfg(not(feature = "history"))]
        {
            let _ = (machine, arm, version);
            (
                None,
                vec!["no session level: built without the history feature".into()],
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::split_schedules;

    #[test]
    fn a_duets_cores_stay_with_it() {
        assert_eq!(
            split_schedules("sequential,duet:0,1"),
            ["sequential", "duet:0,1"]
        );
        assert_eq!(split_schedules("duet:2,3,duet"), ["duet:2,3", "duet"]);
        assert_eq!(split_schedules("duet,sequential"), ["duet", "sequential"]);
        // A third number is not the duet's: it is refused as a schedule.
        assert_eq!(split_schedules("duet:0,1,2"), ["duet:0,1", "2"]);
    }
}
