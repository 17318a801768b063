//! The estimator a machine's own replayed reps favour: among those that
//! kept their coverage of the true zero and whose recorded interval holds
//! zero, the narrowest, when it is clearly narrower than the default.

use super::{Row, ShapeReplay};
use serde::{Deserialize, Serialize};

/// The least coverage of the true zero an estimator must keep on A/A
/// resamples to be chosen: the lower end of the 95% binomial band around
/// 95% for 400 resampled sessions (0.95 - 1.96 sqrt(0.95 x 0.05 / 400)).
pub const MIN_COVERAGE: f64 = 0.93;

/// Another estimator replaces the default only when its median A/A
/// half-width is at most this fraction of the default's: choosing the
/// narrowest of eight on the same reps favours luck, and a margin this
/// size is beyond what resampling the same 20 epochs moves.
pub const NARROWER: f64 = 0.9;

/// The estimator a machine's own replayed reps favour, and why.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EstimatorChoice {
    pub estimator: String,
    pub reason: String,
}

/// Choose among the estimators of `s` (a replay with effect 0 among its
/// effects): those that kept [`MIN_COVERAGE`] and whose interval over
/// all the recorded epochs holds zero are eligible; the narrowest of them
/// replaces the default (the median) only when it is [`NARROWER`] than
/// the default, or when the default itself was not eligible.
pub fn choose_estimator(s: &ShapeReplay) -> EstimatorChoice {
    let default = crate::stats::estimators::DEFAULT.name();
    let aa = |name: &str| {
        s.rows
            .iter()
            .find(|r| r.estimator == name && r.effect == 0.0)
    };
    let holds_zero = |name: &str| {
        s.recorded
            .iter()
            .any(|r| r.estimator == name && !r.excludes_zero)
    };
    let eligible: Vec<&Row> = s
        .rows
        .iter()
        .filter(|r| r.effect == 0.0 && r.coverage >= MIN_COVERAGE && holds_zero(&r.estimator))
        .collect();
    let narrowest = eligible
        .iter()
        .filter(|r| r.median_half_width_pct.is_finite())
        .min_by(|a, b| a.median_half_width_pct.total_cmp(&b.median_half_width_pct));
    let base = aa(&default).filter(|d| eligible.iter().any(|r| r.estimator == d.estimator));
    let (Some(best), Some(base)) = (narrowest, base) else {
        return match narrowest {
            Some(best) => EstimatorChoice {
                estimator: best.estimator.clone(),
                reason: format!(
                    "{default} lost its A/A coverage here; {} kept {:.1}% with ±{:.2}%",
                    best.estimator,
                    100.0 * best.coverage,
                    best.median_half_width_pct
                ),
            },
            None => EstimatorChoice {
                estimator: default.clone(),
                reason: format!(
                    "no estimator kept {:.0}% A/A coverage here: {default} stays",
                    100.0 * MIN_COVERAGE
                ),
            },
        };
    };
    let ratio = best.median_half_width_pct / base.median_half_width_pct;
    if best.estimator != base.estimator && ratio <= NARROWER {
        EstimatorChoice {
            estimator: best.estimator.clone(),
            reason: format!(
                "{}: ±{:.2}% against {default}'s ±{:.2}% ({:.0}% as wide), A/A coverage {:.1}%",
                best.estimator,
                best.median_half_width_pct,
                base.median_half_width_pct,
                100.0 * ratio,
                100.0 * best.coverage
            ),
        }
    } else {
        EstimatorChoice {
            estimator: default.clone(),
            reason: format!(
                "{default} (±{:.2}%, A/A coverage {:.1}%): no estimator was {:.0}% as wide or narrower",
                base.median_half_width_pct,
                100.0 * base.coverage,
                100.0 * NARROWER
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replay::RecordedNull;

    /// A replay of three estimators at effect 0: `(name, coverage,
    /// half-width, recorded interval holds zero)`.
    fn replayed(rows: &[(&str, f64, f64, bool)]) -> ShapeReplay {
        ShapeReplay {
            shape: "s".into(),
            baseline: "b".into(),
            null: "n".into(),
            epochs: 20,
            rounds: 160,
            resampled_epochs: 20,
            rows: rows
                .iter()
                .map(|&(estimator, coverage, hw, _)| Row {
                    estimator: estimator.into(),
                    effect: 0.0,
                    coverage,
                    covered: (coverage * 400.0) as usize,
                    sessions: 400,
                    median_half_width_pct: hw,
                    detection: None,
                    shapes: 1,
                    width_vs_default: None,
                    narrowest_on: None,
                })
                .collect(),
            recorded: rows
                .iter()
                .map(|&(estimator, _, _, holds)| RecordedNull {
                    estimator: estimator.into(),
                    change_pct: 0.0,
                    ci_pct: if holds { [-1.0, 1.0] } else { [0.5, 1.5] },
                    excludes_zero: !holds,
                })
                .collect(),
        }
    }

    #[test]
    fn the_median_stays_unless_another_is_clearly_narrower_and_true() {
        let pick = |rows: &[(&str, f64, f64, bool)]| choose_estimator(&replayed(rows)).estimator;
        // Narrower, but not by the margin.
        assert_eq!(
            pick(&[
                ("median", 0.95, 1.0, true),
                ("hodges_lehmann", 0.95, 0.95, true)
            ]),
            "median"
        );
        // Narrower by the margin and true: chosen.
        assert_eq!(
            pick(&[
                ("median", 0.95, 1.0, true),
                ("hodges_lehmann", 0.95, 0.8, true),
                ("mean", 0.94, 0.85, true)
            ]),
            "hodges_lehmann"
        );
        // Narrowest, but its A/A coverage fell short, or the recorded null
        // excluded zero: not eligible.
        assert_eq!(
            pick(&[("median", 0.95, 1.0, true), ("min", 0.90, 0.5, true)]),
            "median"
        );
        assert_eq!(
            pick(&[("median", 0.95, 1.0, true), ("min", 0.95, 0.5, false)]),
            "median"
        );
        // The median itself untrue: the narrowest true one.
        assert_eq!(
            pick(&[
                ("median", 0.88, 1.0, true),
                ("q25", 0.95, 1.2, true),
                ("mean", 0.96, 1.1, true)
            ]),
            "mean"
        );
        // None true: the median, and the reason says so.
        let c = choose_estimator(&replayed(&[
            ("median", 0.80, 1.0, true),
            ("min", 0.7, 1.0, true),
        ]));
        assert_eq!(c.estimator, "median");
        assert!(c.reason.contains("no estimator kept 93%"), "{}", c.reason);
    }
}
