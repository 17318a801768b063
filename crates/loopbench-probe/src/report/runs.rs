//! Several reports of the same workload, and whether each phase's share is
//! stable across them.

use super::{Report, Warning, MIN_RUNS, SHARE_SPREAD_WARN};

/// Reports of repeated runs of the same workload, to check that shares are
/// stable before acting on them.
///
/// ```
/// use loopbench_probe::{reset, Report, Runs};
///
/// let mut runs = Runs::new();
/// for _ in 0..3 {
///     reset();
///     // ... run the workload ...
///     runs.push(Report::capture());
/// }
/// print!("{}", runs.to_text());
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Runs {
    reports: Vec<Report>,
}

/// One phase's share in each run of a [`Runs`].
#[derive(Clone, Debug, PartialEq)]
pub struct ShareSeries {
    /// `parent/child` path of the phase.
    pub path: String,
    /// Share in percent per run; `None` where the phase is absent or the run
    /// has no ticks.
    pub shares: Vec<Option<f64>>,
}

impl ShareSeries {
    /// Largest minus smallest share, in percentage points; `None` with fewer
    /// than two values.
    pub fn spread(&self) -> Option<f64> {
        let values: Vec<f64> = self.shares.iter().flatten().copied().collect();
        if values.len() < 2 {
            return None;
        }
        let min = values.iter().copied().fold(f64::INFINITY, f64::min);
        let max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        Some(max - min)
    }
}

impl Runs {
    /// No runs yet.
    pub fn new() -> Runs {
        Runs::default()
    }

    /// Adds one run's report.
    pub fn push(&mut self, report: Report) {
        self.reports.push(report);
    }

    /// The reports, in the order pushed.
    pub fn reports(&self) -> &[Report] {
        &self.reports
    }

    /// Each phase's share across the runs, phases in order of first
    /// appearance (matched by path).
    pub fn shares(&self) -> Vec<ShareSeries> {
        let mut series: Vec<ShareSeries> = Vec::new();
        for (run, report) in self.reports.iter().enumerate() {
            for i in 0..report.phases.len() {
                let path = report.path(i);
                let at = match series.iter().position(|s| s.path == path) {
                    Some(at) => at,
                    None => {
                        series.push(ShareSeries {
                            path,
                            shares: vec![None; self.reports.len()],
                        });
                        series.len() - 1
                    }
                };
                series[at].shares[run] = report.share(i);
            }
        }
        series
    }

    /// [`Warning::FewRuns`] and one [`Warning::UnstableShare`] per phase
    /// whose share spread exceeds [`SHARE_SPREAD_WARN`].
    pub fn warnings(&self) -> Vec<Warning> {
        let mut warnings = Vec::new();
        if self.reports.iter().any(|r| !r.enabled) {
            warnings.push(Warning::Disabled);
            return warnings;
        }
        if self.reports.len() < MIN_RUNS {
            warnings.push(Warning::FewRuns {
                runs: self.reports.len(),
            });
        }
        for s in self.shares() {
            if s.spread().is_some_and(|spread| spread > SHARE_SPREAD_WARN) {
                let values = s.shares.iter().flatten().copied();
                warnings.push(Warning::UnstableShare {
                    min: values.clone().fold(f64::INFINITY, f64::min),
                    max: values.fold(f64::NEG_INFINITY, f64::max),
                    phase: s.path,
                });
            }
        }
        warnings
    }
}
