//! Warnings are data: each says what should change how far a report is
//! trusted, and its `Display` gives the advice that fits.

use super::{MIN_RUNS, SHARE_SPREAD_WARN, UNACCOUNTED_WARN};
use crate::counter::Read;
use std::fmt;

/// Something in a report that should change how far it is trusted.
#[derive(Clone, Debug, PartialEq)]
pub enum Warning {
    /// Built without the `enabled` feature.
    Disabled,
    /// No phase recorded an entry.
    NoEntries,
    /// Entries were recorded but no ops were counted.
    NoOps,
    /// A parent's children leave more than [`UNACCOUNTED_WARN`] of it
    /// uncovered.
    Unaccounted {
        /// Path of the parent.
        phase: String,
        /// Unaccounted ticks / the parent's ticks.
        fraction: f64,
        /// The part of the parent the probes themselves explain (see
        /// [`Report::probe_fraction_of_unaccounted`](super::Report::probe_fraction_of_unaccounted)).
        probe_fraction: Option<f64>,
    },
    /// The probe's own in-region cost is more than [`PROBE_DOMINATED_WARN`](super::PROBE_DOMINATED_WARN)
    /// of what a phase recorded.
    ProbeDominated {
        /// Path of the phase.
        phase: String,
        /// Estimated probe ticks / recorded ticks.
        fraction: f64,
        /// The phase's read mode.
        read: Read,
        /// Whether the report subtracts overhead.
        subtracted: bool,
    },
    /// CPUID does not declare an invariant TSC.
    TscNotInvariant,
    /// Calibration windows disagreed by more than 5%.
    UnsteadyClock {
        /// (max - min) / median of the calibration rates.
        spread: f64,
    },
    /// Fewer than [`MIN_RUNS`] runs in a [`Runs`](super::Runs).
    FewRuns {
        /// How many there were.
        runs: usize,
    },
    /// A phase's share moved by more than [`SHARE_SPREAD_WARN`] points
    /// across runs.
    UnstableShare {
        /// Path of the phase.
        phase: String,
        /// Smallest share seen, percent.
        min: f64,
        /// Largest share seen, percent.
        max: f64,
    },
}

impl Warning {
    /// Short machine-readable name, as used in JSON.
    pub fn kind(&self) -> &'static str {
        match self {
            Warning::Disabled => "disabled",
            Warning::NoEntries => "no_entries",
            Warning::NoOps => "no_ops",
            Warning::Unaccounted { .. } => "unaccounted",
            Warning::ProbeDominated { .. } => "probe_dominated",
            Warning::TscNotInvariant => "tsc_not_invariant",
            Warning::UnsteadyClock { .. } => "unsteady_clock",
            Warning::FewRuns { .. } => "few_runs",
            Warning::UnstableShare { .. } => "unstable_share",
        }
    }
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Warning::Disabled => f.write_str(
                "probes are disabled: loopbench-probe was built without its `enabled` feature, so nothing was measured",
            ),
            Warning::NoEntries => f.write_str(
                "no phase recorded an entry: did the bracketed code run, and did its threads exit or call flush() before the report?",
            ),
            Warning::NoOps => f.write_str(
                "no ops counted: call count_ops(n) once per operation, or the per-op columns stay empty",
            ),
            Warning::Unaccounted {
                phase,
                fraction,
                probe_fraction,
            } => {
                write!(
                    f,
                    "{:.1}% of `{phase}` is not covered by its children (over {:.0}%)",
                    100.0 * fraction,
                    100.0 * UNACCOUNTED_WARN
                )?;
                if let Some(p) = probe_fraction.filter(|p| *p >= 0.01) {
                    write!(
                        f,
                        "; the probes themselves explain at least {:.0} points of it (fences also stall the work around them, so likely more)",
                        100.0 * p.min(*fraction)
                    )?;
                    if p > 0.5 * fraction {
                        return f.write_str(": bracket fewer, larger regions");
                    }
                }
                f.write_str(": bracket the rest before choosing a fix")
            }
            Warning::ProbeDominated { phase, fraction, read, subtracted } => {
                write!(
                    f,
                    "`{phase}`: the probe's own cost is ~{:.0}% of what it recorded",
                    100.0 * fraction
                )?;
                match (read, subtracted) {
                    (Read::Fenced, _) => f.write_str(
                        "; declare it .serialising() for regions this short, or bracket a larger region",
                    ),
                    (Read::Serialising, false) => f.write_str(
                        "; compare with Report::subtracting_overhead(), or bracket a larger region",
                    ),
                    (Read::Serialising, true) => f.write_str(
                        "; already subtracted, but the estimate is as large as the signal: bracket a larger region",
                    ),
                }
            }
            Warning::TscNotInvariant => f.write_str(
                "CPUID does not declare an invariant TSC: its rate may follow the core clock, so counts and the ns conversion can drift",
            ),
            Warning::UnsteadyClock { spread } => write!(
                f,
                "the counter rate varied {:.1}% across calibration windows: the ns conversion is approximate",
                100.0 * spread
            ),
            Warning::FewRuns { runs } => write!(
                f,
                "only {runs} run(s): take at least {MIN_RUNS} to confirm the shares are stable"
            ),
            Warning::UnstableShare { phase, min, max } => write!(
                f,
                "share of `{phase}` ranged {min:.1}%..{max:.1}% across runs (over {SHARE_SPREAD_WARN:.0} points): run longer, single-threaded, and drop warm-up before trusting it"
            ),
        }
    }
}
