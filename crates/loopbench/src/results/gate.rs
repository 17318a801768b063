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

/// Every decided-or-not candidate comparison of a session, for the gate
/// of `run --fail-on`,
/// counted: a row changed alone is a change only as a discovery among all
/// of them at the session's level (as `compare` counts its rows), or two
/// builds of one engine over 39 shapes fail an A/A gate now and then.
pub fn rows(s: &crate::results::Session) -> Vec<Judged<'_>> {
    use crate::stats::outcome::discoveries;
    let rows: Vec<(&str, &crate::results::Comparison)> = s
        .results
        .iter()
        .flat_map(|r| {
            r.comparisons
                .iter()
                .filter(|c| c.outcome.is_some())
                .map(move |c| (r.shape.as_str(), c))
        })
        .collect();
    let p: Vec<f64> = rows.iter().map(|(_, c)| c.check().p_value()).collect();
    let found = discoveries(&p, 1.0 - s.session.confidence_level);
    // A row without a p-value (an interval over the rounds of one process)
    // is not in the family and keeps its own outcome.
    rows.into_iter()
        .zip(found.into_iter().zip(&p))
        .map(|((shape, c), (found, p))| Judged {
            shape,
            arm: &c.arm,
            outcome: c.outcome,
            median_pct: c.median_pct,
            ci_pct: c.ci_pct,
            counted_out: c.outcome == Some(Outcome::Changed) && !p.is_nan() && !found,
        })
        .collect()
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

#[cfg(test)]
mod run_gate_tests {
    use super::rows as gate_rows;
    use crate::stats::outcome::Outcome;

    /// A session of 20 comparisons, 19 of them no change; the twentieth
    /// `moved` percent with an interval of +-0.9% of its log (10 epochs).
    fn session(moved: f64) -> crate::results::Session {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/schema1/session.json"
        );
        let mut s = crate::results::read(std::path::Path::new(path))
            .unwrap()
            .session()
            .unwrap()
            .clone();
        let template = s.results[0].comparisons[0].clone();
        for (i, r) in s.results.iter_mut().enumerate() {
            r.comparisons = (0..4)
                .map(|k| {
                    let mut c = template.clone();
                    c.arm = format!("arm{k}");
                    c.layout.epochs = 10;
                    let (mid, outcome) = match (i, k) {
                        (0, 0) => ((1.0 + moved / 100.0f64).ln(), Outcome::Changed),
                        _ => (0.001, Outcome::Unchanged),
                    };
                    let pct = |y: f64| (y.exp() - 1.0) * 100.0;
                    c.median_pct = pct(mid);
                    c.ci_pct = [pct(mid - 0.009), pct(mid + 0.009)];
                    c.outcome = Some(outcome);
                    c
                })
                .collect();
        }
        s
    }

    #[test]
    fn the_gate_of_a_run_counts_its_rows() {
        let rule: crate::results::gate::FailOn = "slower".parse().unwrap();
        // +1%, p about 0.03 alone: not a change among 20 rows.
        let s = session(1.0);
        let rows = gate_rows(&s);
        assert_eq!(rows.len(), 20);
        assert_eq!(rows.iter().filter(|r| r.counted_out).count(), 1);
        let g = rule.judge(rows);
        assert!(!g.failed, "{g:?}");
        assert_eq!(g.counted_out, 1);
        // +5%, far beyond its interval: a change among them all.
        let s = session(5.0);
        let rows = gate_rows(&s);
        assert!(rows.iter().all(|r| !r.counted_out));
        assert!(rule.judge(rows).failed);
    }
}
