//! The stop rule: when a shape has taken enough epochs.
//!
//! A shape stops when its interval is as narrow as `--precision` asks, from
//! at least `--min-epochs` epochs (a one-epoch interval is precise and can
//! still be 10% off: only more layouts reveal the layout component), or when
//! its `--budget` of seconds is spent; a session never runs more than
//! `--max-epochs`. These four numbers are one value, [`StopRule`], with one
//! set of defaults: the command line's, recorded in every session.

use serde::{Deserialize, Serialize};

use super::EpochChange;

/// Why a session stopped (or may stop) collecting epochs for a comparison.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// The interval's half-width is within the requested precision and the
    /// interval includes the layout component.
    PrecisionReached,
    /// The time (or epoch) budget is spent; the interval is what it is.
    BudgetExhausted,
    /// No comparison can be made (the baseline and the null control did not
    /// run): more epochs would narrow nothing.
    NothingToCompare,
    /// Every comparison is changed or unchanged ([`super::outcome`]): no
    /// epoch more would change an answer's kind.
    Decided,
}

impl std::fmt::Display for StopReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            StopReason::PrecisionReached => "precision reached",
            StopReason::BudgetExhausted => "budget exhausted",
            StopReason::NothingToCompare => "nothing to compare",
            StopReason::Decided => "every comparison decided",
        })
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    Continue,
    Stop(StopReason),
}

/// When a shape stops taking epochs. The defaults are the command line's
/// (`--precision 0.5 --budget 3 --min-epochs 5 --max-epochs 200`); a session
/// records the rule it ran under (field order is the JSON's).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StopRule {
    /// Precision only counts once the interval has a layout component from
    /// at least this many epochs (a one-epoch interval is precise and can
    /// still be 10% off).
    pub min_epochs: usize,
    /// Epochs at most, precise or not.
    pub max_epochs: usize,
    /// Target half-width of the interval, percent.
    pub precision_pct: f64,
    /// Seconds each shape may take in all.
    pub budget_s: f64,
}

impl Default for StopRule {
    fn default() -> Self {
        StopRule {
            min_epochs: 5,
            max_epochs: 200,
            precision_pct: 0.5,
            budget_s: 3.0,
        }
    }
}

impl StopRule {
    /// Continue, or stop and why, after `epochs` epochs that took `spent_s`
    /// seconds. `half_width_pct`: the current interval's half-width (e.g.
    /// [`EpochChange::half_width_pct`]). Nothing stops before two epochs,
    /// so every interval a shape stops on has a layout component; precision
    /// wins when both it and the budget hold.
    pub fn decide(&self, half_width_pct: f64, epochs: usize, spent_s: f64) -> Decision {
        if epochs < 2 {
            Decision::Continue
        } else if epochs >= self.min_epochs
            && half_width_pct.is_finite()
            && half_width_pct <= self.precision_pct
        {
            Decision::Stop(StopReason::PrecisionReached)
        } else if spent_s >= self.budget_s {
            Decision::Stop(StopReason::BudgetExhausted)
        } else {
            Decision::Continue
        }
    }

    /// The epochs at which outcomes may stop a shape: `min_epochs` (at
    /// least 2), then doubling, up to `max_epochs`. Looking after every
    /// epoch and stopping at the first "changed" would find changes that
    /// are not there (optional stopping); a few planned looks, each at a
    /// stricter level ([`StopRule::look_level`]), keep the false rate of
    /// the stop within the stated one.
    pub fn is_look(&self, epochs: usize) -> bool {
        let mut look = self.min_epochs.max(2);
        while look < epochs {
            look = look.saturating_mul(2);
        }
        look == epochs
    }

    /// The confidence level of each look's stop check: Bonferroni over
    /// the planned looks, `1 - (1 - level) / looks`.
    pub fn look_level(&self, level: f64) -> f64 {
        let mut looks = 0usize;
        let mut look = self.min_epochs.max(2);
        while look <= self.max_epochs.max(2) {
            looks += 1;
            look = look.saturating_mul(2);
        }
        1.0 - (1.0 - level) / looks.max(1) as f64
    }

    /// With comparisons to decide (rule 16): stop once every one is changed
    /// or unchanged (`decided`, judged at [`StopRule::look_level`]) at a
    /// planned look ([`StopRule::is_look`]), else at the budget. Unsure
    /// comparisons keep their shape taking epochs, decided ones stop it
    /// early, so the time goes where it decides something.
    pub fn decide_outcomes(&self, decided: bool, epochs: usize, spent_s: f64) -> Decision {
        if epochs < 2 {
            Decision::Continue
        } else if self.is_look(epochs) && decided {
            Decision::Stop(StopReason::Decided)
        } else if spent_s >= self.budget_s {
            Decision::Stop(StopReason::BudgetExhausted)
        } else {
            Decision::Continue
        }
    }

    /// [`StopRule::decide`] for an [`EpochChange`].
    pub fn decide_change(&self, change: &EpochChange, spent_s: f64) -> Decision {
        let hw = if change.includes_layout {
            change.half_width_pct()
        } else {
            f64::INFINITY
        };
        self.decide(hw, change.epochs, spent_s)
    }

    /// A rough guess of the epochs needed for the target precision, from the
    /// `1/sqrt(E)` law: `E * (half_width / target)^2`, at least `min_epochs`.
    pub fn epochs_needed(&self, half_width_pct: f64, epochs: usize) -> usize {
        let r = half_width_pct / self.precision_pct;
        ((epochs as f64 * r * r).ceil() as usize).max(self.min_epochs)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn outcomes_stop_only_at_planned_looks_at_a_stricter_level() {
        let rule = StopRule {
            min_epochs: 5,
            max_epochs: 200,
            ..Default::default()
        };
        let looks: Vec<usize> = (0..=200).filter(|&e| rule.is_look(e)).collect();
        assert_eq!(looks, [5, 10, 20, 40, 80, 160]);
        assert!((rule.look_level(0.95) - (1.0 - 0.05 / 6.0)).abs() < 1e-12);
        assert_eq!(rule.decide_outcomes(true, 6, 0.0), Decision::Continue);
        assert_eq!(
            rule.decide_outcomes(true, 10, 0.0),
            Decision::Stop(StopReason::Decided)
        );
        assert_eq!(rule.decide_outcomes(false, 10, 0.0), Decision::Continue);
        assert_eq!(
            rule.decide_outcomes(false, 7, 99.0),
            Decision::Stop(StopReason::BudgetExhausted)
        );
    }

    use super::*;
    use crate::stats::epochs::{epoch_change, Options};
    use crate::stats::simulate::session;
    use rand::rngs::Xoshiro256PlusPlus;
    use rand::SeedableRng;

    #[test]
    fn stop_rule() {
        let rule = StopRule {
            budget_s: 60.0,
            ..StopRule::default()
        };
        assert_eq!(rule.precision_pct, 0.5);
        assert_eq!(
            rule.decide(0.4, 5, 10.0),
            Decision::Stop(StopReason::PrecisionReached)
        );
        assert_eq!(rule.decide(0.9, 5, 10.0), Decision::Continue);
        assert_eq!(
            rule.decide(0.9, 5, 60.0),
            Decision::Stop(StopReason::BudgetExhausted)
        );
        // Precise but too few epochs: not a precision we believe.
        assert_eq!(rule.decide(0.1, 1, 10.0), Decision::Continue);
        assert_eq!(rule.decide(0.4, 4, 10.0), Decision::Continue);
        assert_eq!(
            rule.decide(0.1, 2, 60.0),
            Decision::Stop(StopReason::BudgetExhausted)
        );
        // One epoch never stops, not even on its budget.
        assert_eq!(rule.decide(0.1, 1, 60.0), Decision::Continue);
        assert_eq!(rule.decide(f64::NAN, 5, 1.0), Decision::Continue);
        assert_eq!(
            StopReason::PrecisionReached.to_string(),
            "precision reached"
        );
        assert_eq!(StopReason::BudgetExhausted.to_string(), "budget exhausted");
        assert_eq!(rule.epochs_needed(1.0, 4), 16);
        // A one-epoch change never reaches precision, however narrow.
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(1);
        let one = epoch_change(
            &session(&mut rng, 0.0, 1, 500, 0.0, false, 0.001),
            &Options::default(),
        )
        .unwrap();
        assert!(one.half_width_pct() < 0.5);
        assert_eq!(rule.decide_change(&one, 0.0), Decision::Continue);
        let many = epoch_change(
            &session(&mut rng, 0.0, 6, 50, 0.0, false, 0.001),
            &Options::default(),
        )
        .unwrap();
        assert_eq!(
            rule.decide_change(&many, 0.0),
            Decision::Stop(StopReason::PrecisionReached)
        );
    }
}
