//! A CI gate (`--fail-on slower[:PCT]`): a comparison whose outcome is
//! *changed* in the named direction, by more than PCT, fails the command
//! (exit 1). Unsure is not a failure: the gate does not guess, and the
//! report says which rows are unsure so that a job can measure more.

use crate::stats::outcome::Outcome;
use serde::{Deserialize, Serialize};

/// Which changes fail.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    Slower,
    Faster,
    /// Either direction.
    Changed,
}

/// `--fail-on DIRECTION[:PCT]`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FailOn {
    pub direction: Direction,
    /// The estimate must be beyond this (percent, >= 0).
    pub pct: f64,
}

impl std::str::FromStr for FailOn {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let (word, pct) = match s.split_once(':') {
            Some((w, p)) => (w, Some(p)),
            None => (s, None),
        };
        let direction = match word {
            "slower" => Direction::Slower,
            "faster" => Direction::Faster,
            "changed" => Direction::Changed,
            _ => {
                return Err(format!(
                "`{s}`: expected slower, faster or changed, optionally with :PCT (e.g. slower:2)"
            ))
            }
        };
        let pct = match pct {
            None => 0.0,
            Some(p) => match p.trim_end_matches('%').parse::<f64>() {
                Ok(v) if v.is_finite() && v >= 0.0 => v,
                _ => {
                    return Err(format!(
                        "`{s}`: PCT must be a percentage >= 0, e.g. slower:2"
                    ))
                }
            },
        };
        Ok(FailOn { direction, pct })
    }
}

impl std::fmt::Display for FailOn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let word = match self.direction {
            Direction::Slower => "slower",
            Direction::Faster => "faster",
            Direction::Changed => "changed",
        };
        write!(f, "{word} by more than {}%", self.pct)
    }
}

/// One comparison as the gate sees it.
pub struct Judged<'a> {
    pub shape: &'a str,
    pub arm: &'a str,
    pub outcome: Option<Outcome>,
    pub median_pct: f64,
    pub ci_pct: [f64; 2],
    /// Changed alone, but not a change once the comparison's rows are
    /// counted ([`crate::stats::outcome::discoveries`]): judged unsure.
    pub counted_out: bool,
}

/// What the gate decided.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Gate {
    /// The rule, in words.
    pub rule: String,
    pub failed: bool,
    /// The comparisons that failed it: `shape arm: +x.x% [lo, hi]`.
    pub failing: Vec<String>,
    /// Comparisons that were unsure (no failure, but no pass either).
    pub unsure: usize,
    /// Of those, comparisons changed alone but not among all the rows.
    #[serde(default)]
    pub counted_out: usize,
    pub compared: usize,
}

impl FailOn {
    pub fn judge<'a>(&self, rows: impl IntoIterator<Item = Judged<'a>>) -> Gate {
        let (mut failing, mut unsure, mut compared, mut counted_out) = (Vec::new(), 0, 0, 0);
        for r in rows {
            compared += 1;
            if r.counted_out {
                (unsure, counted_out) = (unsure + 1, counted_out + 1);
                continue;
            }
            match r.outcome {
                Some(Outcome::Changed) => {}
                Some(Outcome::Unsure) | None => {
                    unsure += usize::from(r.outcome.is_some());
                    continue;
                }
                Some(Outcome::Unchanged) => continue,
            }
            let beyond = match self.direction {
                Direction::Slower => r.median_pct > self.pct,
                Direction::Faster => r.median_pct < -self.pct,
                Direction::Changed => r.median_pct.abs() > self.pct,
            };
            if beyond {
                failing.push(format!(
                    "{} {}: {}",
                    r.shape,
                    r.arm,
                    crate::units::interval(r.median_pct, r.ci_pct)
                ));
            }
        }
        Gate {
            rule: self.to_string(),
            failed: !failing.is_empty(),
            failing,
            unsure,
            counted_out,
            compared,
        }
    }
}

impl Gate {
    /// One line for the terminal and the first line of the Markdown.
    pub fn summary(&self) -> String {
        if self.failed {
            format!(
                "gate FAILED ({}): {} of {} comparisons",
                self.rule,
                self.failing.len(),
                self.compared
            )
        } else {
            let counted = match self.counted_out {
                0 => String::new(),
                n => format!(
                    ", {n} of them changed alone but not among all {} rows",
                    self.compared
                ),
            };
            format!(
                "gate passed ({}): none of {} comparisons ({} unsure{counted})",
                self.rule, self.compared, self.unsure
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(outcome: Outcome, median_pct: f64) -> Judged<'static> {
        Judged {
            shape: "s",
            arm: "a",
            outcome: Some(outcome),
            median_pct,
            ci_pct: [median_pct - 1.0, median_pct + 1.0],
            counted_out: false,
        }
    }

    #[test]
    fn only_a_changed_outcome_beyond_the_threshold_fails() {
        let rule: FailOn = "slower:2".parse().unwrap();
        assert_eq!(rule.pct, 2.0);
        let g = rule.judge([row(Outcome::Changed, 1.5), row(Outcome::Unsure, 9.0)]);
        assert!(!g.failed, "1.5% is under the threshold; unsure never fails");
        assert_eq!((g.unsure, g.compared), (1, 2));
        let g = rule.judge([row(Outcome::Changed, 3.0), row(Outcome::Changed, -9.0)]);
        assert!(g.failed);
        assert_eq!(g.failing.len(), 1, "faster does not fail a slower gate");
        let any: FailOn = "changed".parse().unwrap();
        assert!(any.judge([row(Outcome::Changed, -0.3)]).failed);
        assert!(!any.judge([row(Outcome::Unchanged, 0.1)]).failed);
        // Changed alone, counted out among the rows: unsure, never failing.
        let g = any.judge([Judged {
            counted_out: true,
            ..row(Outcome::Changed, 5.0)
        }]);
        assert!(!g.failed);
        assert_eq!((g.unsure, g.counted_out), (1, 1));
        assert!(g
            .summary()
            .contains("changed alone but not among all 1 rows"));
    }

    #[test]
    fn bad_rules_are_refused_in_words() {
        for bad in ["slow", "slower:-1", "slower:x", "faster:nan"] {
            let e = bad.parse::<FailOn>().unwrap_err();
            assert!(e.contains(bad), "{e}");
        }
        assert_eq!("faster:1.5%".parse::<FailOn>().unwrap().pct, 1.5);
    }
}
