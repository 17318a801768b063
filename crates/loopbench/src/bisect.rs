//! Bisect: the first revision of a range whose cost differs from the good
//! revision's, judged with in-session comparisons only and three outcomes.
//!
//! Revisions are positions: 0 is the good revision, 1..=n the commits after
//! it along the first-parent line, n the bad one. A step measures one
//! revision against the good one **in one session** (interleaved, with the
//! null control), so no step compares across sessions, whose absolute
//! times move by more than the changes hunted here.
//!
//! 1. The endpoints first: bad against good. That change (per shape, with
//!    its direction) is the target; when it is not there ("unchanged"), or
//!    the measurement cannot tell ("unsure"), the bisect says so and names
//!    no revision.
//! 2. Then midpoints of the open range. A midpoint is **bad** when it has
//!    changed in the target's direction, **good** when it is unchanged at
//!    half the target's size (its interval lies inside +-|change|/2), and
//!    **unsure** otherwise. The session's stop rule keeps adding epochs
//!    while a comparison is unsure, up to the budget (Chromium's Pinpoint
//!    repeats while a comparison is UNKNOWN); an unsure midpoint after that
//!    stops the bisect, which then names the range the first bad revision
//!    is in rather than guessing.
//! 3. With exact instruction counts (callgrind) one rep decides: a
//!    revision is good or bad by which endpoint's count it is nearer.
//!
//! Binary search over n revisions needs ceil(log2(n)) midpoints, so a
//! bisect measures at most ceil(log2(n)) + 1 steps. This module is the
//! search and the judgement, free of processes and databases; [`drive`]
//! runs the sessions and [`store`] keeps the steps, so that an interrupted
//! bisect goes on from the steps it finished.

#[cfg(feature = "history")]
pub mod drive;
#[cfg(feature = "history")]
pub mod store;

use crate::stats::outcome::Outcome;
use serde::{Deserialize, Serialize};

/// Instruction counts that differ by less than this fraction are equal:
/// a rebuild may move a few instructions (alignment padding executed,
/// panic locations), a change of an operation moves many.
pub const EXACT_MIN: f64 = 1e-4;

/// What one shape of a step measured: the revision against the good one.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ShapeStep {
    pub shape: String,
    /// The revision's change against the good revision, percent (time).
    pub median_pct: f64,
    pub ci_pct: [f64; 2],
    /// The session's outcome of that comparison; `None` when the session
    /// could not compare (an arm failed).
    pub outcome: Option<Outcome>,
    /// Exact instructions per iteration of the good revision and of this
    /// one (callgrind sessions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<[f64; 2]>,
}

impl ShapeStep {
    /// The change by exact counts, percent, when there are counts.
    pub fn exact_pct(&self) -> Option<f64> {
        let [good, this] = self.instructions?;
        (good > 0.0 && this.is_finite()).then(|| (this / good - 1.0) * 100.0)
    }

    /// The change the step is judged on: exact when counted, else timed.
    pub fn change_pct(&self) -> f64 {
        self.exact_pct().unwrap_or(self.median_pct)
    }
}

/// A revision's verdict.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Like the good revision.
    Good,
    /// Changed as the bad revision is.
    Bad,
    /// Neither could be shown.
    Unsure,
}

impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Verdict::Good => "good",
            Verdict::Bad => "bad",
            Verdict::Unsure => "unsure",
        })
    }
}

impl std::str::FromStr for Verdict {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "good" => Ok(Verdict::Good),
            "bad" => Ok(Verdict::Bad),
            "unsure" => Ok(Verdict::Unsure),
            other => Err(format!("unknown bisect verdict `{other}`")),
        }
    }
}

/// The change from good to bad that the bisect hunts: per shape that
/// changed, its size in percent (the sign is the direction).
#[derive(Clone, Debug, PartialEq)]
pub struct Target {
    pub shapes: Vec<(String, f64)>,
    /// Judged on exact instruction counts.
    pub exact: bool,
}

impl Target {
    /// The precision a midpoint's "unchanged" is judged at: half the
    /// smallest target change, so that "good" means nearer good than bad.
    pub fn midpoint_precision_pct(&self) -> f64 {
        self.shapes
            .iter()
            .map(|(_, d)| d.abs() / 2.0)
            .fold(f64::INFINITY, f64::min)
    }
}

/// What the endpoints say.
#[derive(Clone, Debug, PartialEq)]
pub enum Endpoints {
    /// Bad differs from good: bisect for this.
    Differ(Target),
    /// Bad is like good (the reason says how sure): nothing to bisect.
    Same(String),
    /// The measurement cannot tell: nothing is named.
    Unsure(String),
}

/// Judge the endpoint step (bad against good).
pub fn endpoints(step: &[ShapeStep], exact: bool) -> Endpoints {
    if exact {
        let counted: Vec<&ShapeStep> = step.iter().filter(|s| s.exact_pct().is_some()).collect();
        if counted.is_empty() {
            return Endpoints::Unsure("no instruction counts were measured".into());
        }
        let shapes: Vec<(String, f64)> = counted
            .iter()
            .filter_map(|s| {
                let d = s.exact_pct()?;
                (d.abs() >= EXACT_MIN * 100.0).then(|| (s.shape.clone(), d))
            })
            .collect();
        return if shapes.is_empty() {
            Endpoints::Same(format!(
                "the instruction counts of good and bad are equal (within {}%) on every shape",
                EXACT_MIN * 100.0
            ))
        } else {
            Endpoints::Differ(Target {
                shapes,
                exact: true,
            })
        };
    }
    let shapes: Vec<(String, f64)> = step
        .iter()
        .filter(|s| s.outcome == Some(Outcome::Changed))
        .map(|s| (s.shape.clone(), s.median_pct))
        .collect();
    if !shapes.is_empty() {
        return Endpoints::Differ(Target {
            shapes,
            exact: false,
        });
    }
    if !step.is_empty() && step.iter().all(|s| s.outcome == Some(Outcome::Unchanged)) {
        Endpoints::Same("bad is unchanged against good on every shape".into())
    } else {
        Endpoints::Unsure(
            "the session could not show whether bad differs from good (unsure): \
             give it a larger --budget, or for shapes count instructions (--counters callgrind)"
                .into(),
        )
    }
}

/// Judge a midpoint against the target; the reason when it is unsure.
pub fn classify(target: &Target, step: &[ShapeStep]) -> (Verdict, Option<String>) {
    let mut bad = Vec::new();
    let mut unsure = Vec::new();
    for (shape, d) in &target.shapes {
        let Some(s) = step.iter().find(|s| &s.shape == shape) else {
            unsure.push(format!("{shape} was not measured"));
            continue;
        };
        let v = if target.exact {
            match s.exact_pct() {
                None => Verdict::Unsure,
                Some(m) => {
                    let (to_good, to_bad) = (m.abs(), (m - d).abs());
                    // Halfway (to rounding) is neither.
                    if (to_good - to_bad).abs() <= 1e-9 * d.abs() {
                        Verdict::Unsure
                    } else if to_bad < to_good {
                        Verdict::Bad
                    } else if to_good < to_bad {
                        Verdict::Good
                    } else {
                        Verdict::Unsure
                    }
                }
            }
        } else {
            match s.outcome {
                Some(Outcome::Changed) if s.median_pct.signum() == d.signum() => Verdict::Bad,
                Some(Outcome::Unchanged) => Verdict::Good,
                Some(Outcome::Changed) => {
                    unsure.push(format!(
                        "{shape} moved the other way ({:+.1}%)",
                        s.median_pct
                    ));
                    continue;
                }
                _ => Verdict::Unsure,
            }
        };
        match v {
            Verdict::Bad => bad.push(shape.clone()),
            Verdict::Unsure => unsure.push(format!(
                "{shape} {:+.1}% [{:+.1}, {:+.1}] is neither like good nor like bad",
                s.median_pct, s.ci_pct[0], s.ci_pct[1]
            )),
            Verdict::Good => {}
        }
    }
    if !unsure.is_empty() {
        (Verdict::Unsure, Some(unsure.join("; ")))
    } else if !bad.is_empty() {
        // A shape that is bad here already changed at or before this
        // revision: the first change of any target shape is the one found.
        (Verdict::Bad, None)
    } else {
        (Verdict::Good, None)
    }
}

/// The binary search over positions 0 (good) ..= n (bad).
#[derive(Clone, Debug, PartialEq)]
pub struct Search {
    /// The last position known good.
    pub lo: usize,
    /// The first position known bad.
    pub hi: usize,
}

/// What the search needs next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Next {
    /// Measure the revision at this position.
    Measure(usize),
    /// The revision at this position is the first bad one.
    Found(usize),
}

impl Search {
    /// A range of `n` revisions after the good one (the last is the bad).
    pub fn new(n: usize) -> Self {
        Search { lo: 0, hi: n }
    }

    pub fn next(&self) -> Next {
        if self.hi <= self.lo + 1 {
            Next::Found(self.hi)
        } else {
            Next::Measure(self.lo + (self.hi - self.lo) / 2)
        }
    }

    /// Take a verdict for `position`; `false` when it is unsure (the search
    /// cannot go on).
    pub fn take(&mut self, position: usize, verdict: Verdict) -> bool {
        match verdict {
            Verdict::Good => self.lo = self.lo.max(position),
            Verdict::Bad => self.hi = self.hi.min(position),
            Verdict::Unsure => return false,
        }
        true
    }

    /// Midpoints still to measure at most (ceil(log2) of the open range).
    pub fn steps_left(&self) -> usize {
        let open = self.hi.saturating_sub(self.lo);
        if open <= 1 {
            0
        } else {
            (usize::BITS - (open - 1).leading_zeros()) as usize
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn timed(shape: &str, pct: f64, ci: [f64; 2], outcome: Outcome) -> ShapeStep {
        ShapeStep {
            shape: shape.into(),
            median_pct: pct,
            ci_pct: ci,
            outcome: Some(outcome),
            instructions: None,
        }
    }

    fn counted(shape: &str, good: f64, this: f64) -> ShapeStep {
        ShapeStep {
            instructions: Some([good, this]),
            ..timed(shape, 0.0, [0.0, 0.0], Outcome::Unsure)
        }
    }

    #[test]
    fn the_search_finds_every_first_bad_position_within_log2_steps() {
        for n in 1..=40usize {
            for first_bad in 1..=n {
                let mut s = Search::new(n);
                let bound = s.steps_left();
                let mut steps = 0;
                let found = loop {
                    match s.next() {
                        Next::Found(p) => break p,
                        Next::Measure(p) => {
                            steps += 1;
                            let v = if p >= first_bad {
                                Verdict::Bad
                            } else {
                                Verdict::Good
                            };
                            assert!(s.take(p, v));
                        }
                    }
                };
                assert_eq!(found, first_bad, "n {n}");
                let log2 = (n as f64).log2().ceil() as usize;
                assert!(steps <= log2 && bound == log2, "n {n}: {steps} steps");
            }
        }
        let mut s = Search::new(8);
        assert!(!s.take(4, Verdict::Unsure));
        assert_eq!(s, Search::new(8), "an unsure step moves nothing");
    }

    #[test]
    fn endpoints_name_the_change_or_say_there_is_none() {
        let step = [
            timed("a", 5.0, [3.0, 7.0], Outcome::Changed),
            timed("b", 0.1, [-0.4, 0.6], Outcome::Unchanged),
        ];
        assert_eq!(
            endpoints(&step, false),
            Endpoints::Differ(Target {
                shapes: vec![("a".into(), 5.0)],
                exact: false
            })
        );
        let same = [timed("b", 0.1, [-0.4, 0.6], Outcome::Unchanged)];
        assert!(matches!(endpoints(&same, false), Endpoints::Same(_)));
        let unsure = [timed("b", 2.0, [-1.0, 5.0], Outcome::Unsure)];
        assert!(matches!(endpoints(&unsure, false), Endpoints::Unsure(_)));
        assert!(matches!(endpoints(&[], false), Endpoints::Unsure(_)));
        // Exact counts: equal is equal, a change of 1% is a change.
        assert!(matches!(
            endpoints(&[counted("a", 1000.0, 1000.05)], true),
            Endpoints::Same(_)
        ));
        let Endpoints::Differ(t) = endpoints(&[counted("a", 1000.0, 1010.0)], true) else {
            panic!()
        };
        assert!((t.shapes[0].1 - 1.0).abs() < 1e-9 && t.exact);
    }

    #[test]
    fn midpoints_are_bad_good_or_unsure() {
        let target = Target {
            shapes: vec![("a".into(), 5.0)],
            exact: false,
        };
        assert_eq!(target.midpoint_precision_pct(), 2.5);
        let judge = |s: ShapeStep| classify(&target, &[s]).0;
        assert_eq!(
            judge(timed("a", 4.8, [3.0, 6.5], Outcome::Changed)),
            Verdict::Bad
        );
        assert_eq!(
            judge(timed("a", 0.3, [-1.5, 2.0], Outcome::Unchanged)),
            Verdict::Good
        );
        assert_eq!(
            judge(timed("a", 2.0, [-1.0, 5.0], Outcome::Unsure)),
            Verdict::Unsure
        );
        assert_eq!(
            judge(timed("a", -4.0, [-6.0, -2.0], Outcome::Changed)),
            Verdict::Unsure,
            "a change the other way is not this change"
        );
        let (v, why) = classify(&target, &[]);
        assert_eq!(v, Verdict::Unsure);
        assert!(why.unwrap().contains("not measured"));

        let exact = Target {
            shapes: vec![("a".into(), 2.0)],
            exact: true,
        };
        let judge = |s: ShapeStep| classify(&exact, &[s]).0;
        assert_eq!(judge(counted("a", 1000.0, 1019.0)), Verdict::Bad);
        assert_eq!(judge(counted("a", 1000.0, 1001.0 - 0.5)), Verdict::Good);
        assert_eq!(judge(counted("a", 1000.0, 1010.0)), Verdict::Unsure);
    }
}
