//! `loopbench compare`: two saved sessions, shape by shape and arm by arm.
//!
//! Two sessions are independent samples (different processes, times,
//! perhaps machines), so nothing pairs round by round, and the machine's
//! speed itself moves between them (12-19% on a noisy VM). Each row says
//! what makes its interval true ([`Basis`], rules in
//! [`crate::stats::sessions`]):
//!
//! - **anchored**: both sessions measured the same reference arm (same
//!   label, version and revision). The units are each epoch's median log
//!   ratio of the arm to the reference (or, for builds in layout variants,
//!   the mean per pair of variants), compared by Welch's t;
//! - **between sessions**: Welch's t on the sides' units (layout variants,
//!   epochs, or rounds of a one-epoch session) plus twice the variance of
//!   this machine's repeated sessions of the series, learned from the
//!   history;
//! - **same session**: A and B are one session (the difference is its
//!   own noise only);
//! - **none**: neither; the row is unsure and says how to make it sure.
//!
//! Anchored and between-session intervals are then widened by the
//! machine's calibration ([`Calibration`]): how far beyond such intervals
//! its own pairs of same-build sessions in the history landed.
//!
//! Every row has its three-way outcome from [`crate::stats::outcome`].

use super::{ArmResult, EngineInfo, Session, ShapeResult};
use crate::machine::Machine;
use crate::stats::estimators::Estimator;
use crate::stats::outcome::{self, Outcome};
use crate::stats::sessions::{self as across, Between, Calibration};
use crate::stats::{self, Verdict};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The schema comparisons are written with.
pub const SCHEMA: &str = "loopbench-compare/1";

/// One side of a comparison.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SessionRef {
    /// What the user named it (a path).
    pub label: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    pub machine: Machine,
    pub engines: Vec<EngineInfo>,
}

/// What makes a row's interval true across two sessions.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Basis {
    /// Ratios to `reference`, measured in both sessions, were compared;
    /// with `between`, the shift of those ratios between this machine's
    /// sessions that their own intervals do not explain is in the interval
    /// too.
    Anchored {
        reference: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        between: Option<Between>,
    },
    /// The spread of this machine's repeated sessions of the series is in
    /// the interval.
    BetweenSessions {
        #[serde(flatten)]
        between: Between,
    },
    /// A and B are the same session.
    SameSession,
    /// Nothing spans the two sessions: the interval holds each session's
    /// own noise only, and the outcome is unsure.
    None,
}

impl Basis {
    /// The row's basis in a few words, for the table.
    pub fn short(&self) -> String {
        match self {
            Basis::Anchored {
                reference,
                between: None,
            } => format!("÷ {reference}"),
            Basis::Anchored {
                reference,
                between: Some(b),
            } => format!("÷ {reference}, +{:.1}% sd", b.sd_pct),
            Basis::BetweenSessions { between } => {
                format!("+{:.1}% sd, {} sessions", between.sd_pct, between.sessions)
            }
            Basis::SameSession => "same session".to_string(),
            Basis::None => "none".to_string(),
        }
    }
}

/// One shape and arm, B against A.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct CompareRow {
    pub shape: String,
    pub arm: String,
    /// Median ns per iteration in each session.
    pub a_ns_per_iter: f64,
    pub b_ns_per_iter: f64,
    /// What one unit of each side is (`epochs`, `layout variants`,
    /// `rounds`; anchored: `epochs` or `variant pairs` of ratios).
    pub units: String,
    pub a_units: usize,
    pub b_units: usize,
    pub median_pct: f64,
    pub ci_pct: [f64; 2],
    /// Faster or slower when the interval excludes zero and the change is
    /// beyond both sessions' null floors, else within noise.
    pub verdict: Verdict,
    /// Changed, unchanged (inside the precision) or unsure; absent in
    /// files written before three-way outcomes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<Outcome>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub basis: Option<Basis>,
    /// Why the row is unsure when its interval alone does not say, and
    /// the way out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The machine's calibration the interval was widened by.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub calibration: Option<Calibration>,
    /// The two-sided p-value of no change, on the interval's footing;
    /// absent where nothing spans the sessions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p_value: Option<f64>,
    /// Its interval excludes zero, but among the comparison's rows it is
    /// not a change ([`outcome::discoveries`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub counted_out: bool,
}

impl CompareRow {
    /// What makes the interval true, in a few words (with the machine's
    /// calibration factor when it widened it).
    pub fn basis_text(&self) -> String {
        let basis = self
            .basis
            .as_ref()
            .map_or_else(|| "-".to_string(), |b| b.short());
        match &self.calibration {
            Some(c) => format!("{basis}, ×{:.2}", c.factor),
            None => basis,
        }
    }

    /// What the verdict column says (older files: the verdict alone).
    pub fn verdict_text(&self, precision_pct: f64) -> String {
        match (self.outcome, &self.basis) {
            (Some(Outcome::Unsure), Some(Basis::None)) => {
                "unsure: nothing spans the two sessions".to_string()
            }
            (Some(Outcome::Unsure), _) if self.counted_out => {
                "unsure: not a change among all rows".to_string()
            }
            (Some(o), _) => outcome::describe(self.verdict, o, self.ci_pct, precision_pct),
            (None, _) => self.verdict.to_string(),
        }
    }
}

/// B against A.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SessionComparison {
    pub schema: String,
    pub a: SessionRef,
    pub b: SessionRef,
    pub confidence: f64,
    /// The precision "unchanged" is judged at (interval inside +-it),
    /// percent; absent in older files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub precision_pct: Option<f64>,
    /// The reference arm the rows were anchored to, when both sessions
    /// measured it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference: Option<String>,
    /// How the intervals were built, in words.
    pub method: String,
    /// Fingerprint fields that differ (`field: a vs b`).
    pub mismatches: Vec<String>,
    /// Everything a reader must know before believing a number.
    pub warnings: Vec<String>,
    pub rows: Vec<CompareRow>,
    /// Shapes or arms in only one of the two sessions.
    pub unmatched: Vec<String>,
    /// The result of `--fail-on`, when it was given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gate: Option<super::gate::Gate>,
    /// When every row is unsure: what to run to get an answer
    /// (`results::answer::ways`, which the command adds).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub to_answer: Vec<String>,
}

/// What the comparison of two sessions means, once.
pub const METHOD: &str = "Welch t interval on the difference of mean log units (per-epoch \
medians; per layout variant for builds in variants; per round for a one-epoch session); \
anchored rows use each epoch's ratio to the shared reference arm, other rows add twice the \
variance of this machine's repeated sessions of the series from the history, and rows with \
neither are unsure; with enough history, intervals across sessions are widened by the factor by \
which this machine's pairs of same-build sessions landed beyond such intervals; a row is changed \
only as a Benjamini-Hochberg discovery among the comparison's rows";

/// The warning every comparison without a shared reference carries.
pub const WEAKER: &str = "comparing two sessions is weaker than comparing arms inside one session: \
between them the machine's state, its load and the process layouts changed, and no null control spans both";

/// How a comparison is made: the precision of its outcomes, the reference
/// to anchor on, and where the spread of repeated sessions comes from.
pub struct Options<'a> {
    pub precision_pct: f64,
    /// Anchor on this arm (default: the reference both sessions recorded).
    pub reference: Option<String>,
    /// The spread of this machine's repeated sessions of a series, from
    /// the history ([`SeriesQuery`]); `None` where there is none.
    pub between: &'a dyn Fn(&SeriesQuery) -> Option<Between>,
    /// How much further apart this machine's sessions of one build land
    /// than their intervals claim, learned from the history's series of
    /// the query's kind (anchored when `true`) at a confidence level;
    /// `None` where too few.
    pub calibration: &'a dyn Fn(&SeriesQuery, bool, f64) -> Option<Calibration>,
}

/// The series whose repeated sessions give a row its between-session term.
#[derive(Clone, Debug)]
pub struct SeriesQuery {
    pub machine: Machine,
    pub shape: String,
    /// The row's workload identity, for a user's workload.
    pub workload: Option<String>,
    pub arm: String,
    pub metric: String,
    /// The builds it may be learned from (the arm's version in A, then in B).
    pub versions: Vec<String>,
    /// Sessions that are not history of the series (A and B themselves).
    pub exclude: Vec<String>,
    /// For an anchored row: the reference's label and build; the series
    /// is then the arm's ratio to it.
    pub reference: Option<(String, String)>,
}

/// Why two sides' values give no change: too few of them, or too few
/// that are times at all (a change on the log scale needs two positive,
/// finite values a side; a saved session may hold zeros or negatives).
fn not_comparable(units: &str, a: &[f64], b: &[f64]) -> String {
    let non_positive: Vec<String> = [("A", a), ("B", b)]
        .into_iter()
        .filter_map(|(side, xs)| {
            let positive = xs.iter().filter(|x| **x > 0.0 && x.is_finite()).count();
            (xs.len() >= 2 && positive < 2).then(|| {
                format!(
                    "{} of the {} {units} in {side} have non-positive (or non-finite) samples",
                    xs.len() - positive,
                    xs.len()
                )
            })
        })
        .collect();
    if non_positive.is_empty() {
        format!("fewer than two measured {units} on a side")
    } else {
        format!(
            "{}; a change needs two positive times on a side",
            non_positive.join(", ")
        )
    }
}

/// The arm's build as the session reported it: its version, and the
/// revision of a git arm.
fn build_of(s: &Session, arm: &str) -> Option<String> {
    let e = engine(s, arm)?;
    let version = super::build_identity(&e.version);
    Some(match &e.git {
        Some(g) => format!("{version} ({g})"),
        None => version,
    })
}

/// The arm's build as the history stores it (its version, which names a
/// git arm's commit itself).
fn stored_build_of(s: &Session, arm: &str) -> Option<String> {
    engine(s, arm).map(|e| super::build_identity(&e.version))
}

fn engine<'s>(s: &'s Session, arm: &str) -> Option<&'s super::EngineInfo> {
    s.session.engines.iter().find(|e| e.arm == arm)
}

/// The reference both sessions measured, or why there is none (a warning);
/// an error when the user asked for one that they do not share.
fn shared_reference(
    a: &Session,
    b: &Session,
    asked: Option<&str>,
) -> Result<(Option<String>, Option<String>), String> {
    let same_build = |r: &str| -> Result<(), String> {
        match (build_of(a, r), build_of(b, r)) {
            (Some(x), Some(y)) if x == y => Ok(()),
            (Some(x), Some(y)) => Err(format!(
                "the reference {r} is {x} in A and {y} in B: not the same yardstick"
            )),
            (None, _) => Err(format!("the reference {r} was not measured in A")),
            (_, None) => Err(format!("the reference {r} was not measured in B")),
        }
    };
    if let Some(r) = asked {
        same_build(r)?;
        return Ok((Some(r.to_string()), None));
    }
    match (&a.session.reference, &b.session.reference) {
        (Some(x), Some(y)) if x == y => match same_build(x) {
            Ok(()) => Ok((Some(x.clone()), None)),
            Err(why) => Ok((None, Some(format!("{why}; rows are not anchored")))),
        },
        (Some(x), Some(y)) => Ok((
            None,
            Some(format!(
                "A is anchored to {x} and B to {y}: different yardsticks, rows are not anchored"
            )),
        )),
        (Some(r), None) | (None, Some(r)) => Ok((
            None,
            Some(format!(
                "only one session measured the reference {r}: rows are not anchored"
            )),
        )),
        (None, None) => Ok((None, None)),
    }
}

/// Each epoch's log ratio of `arm` to `reference` by the session's
/// estimator (as ratios), or with layout variants the geometric mean per
/// pair of variants; and what a unit is.
fn anchored_units(
    arm: &ArmResult,
    reference: &ArmResult,
    estimator: Estimator,
) -> (&'static str, Vec<f64>) {
    let (mine, theirs) = (
        arm.samples_against(&reference.arm),
        reference.samples_against(&arm.arm),
    );
    let mut by_pair: BTreeMap<(Option<u32>, Option<u32>), Vec<f64>> = BTreeMap::new();
    for (e, x) in &mine {
        let Some(r) = theirs.get(e) else { continue };
        let pairs: Vec<(f64, f64)> = x.iter().copied().zip(r.iter().copied()).collect();
        let Some(log) = estimator.estimate(&pairs) else {
            continue;
        };
        let key = (
            arm.build_variants.get(e).copied(),
            reference.build_variants.get(e).copied(),
        );
        by_pair.entry(key).or_default().push(log);
    }
    let variants = by_pair.keys().any(|(x, r)| x.is_some() || r.is_some());
    if variants && by_pair.len() >= 2 {
        let units = by_pair
            .values()
            .map(|l| (l.iter().sum::<f64>() / l.len() as f64).exp())
            .collect();
        ("variant pairs", units)
    } else {
        let units = by_pair.into_values().flatten().map(f64::exp).collect();
        ("epochs", units)
    }
}

/// An arm's units for an absolute comparison and what a unit is: its
/// layout variants, else its epochs' medians, else (one epoch) its rounds.
fn absolute_units(arm: &ArmResult) -> (&'static str, Vec<f64>) {
    let variants = by_variant(arm);
    if variants.len() >= 2 {
        // Builds in layout variants: each variant is one draw of the
        // build's layout, so the variants are the units.
        return ("layout variants", variants);
    }
    let epochs = arm.samples_by_epoch();
    if epochs.len() >= 2 {
        let medians = epochs
            .values()
            .filter(|v| !v.is_empty())
            .map(|v| stats::median(v))
            .collect();
        return ("epochs", medians);
    }
    ("rounds", arm.samples_ns_per_iter.clone())
}

/// `b` against `a`; an error when `opts` asks for a reference the two
/// sessions do not share.
pub fn compare(
    a: &Session,
    a_label: &str,
    b: &Session,
    b_label: &str,
    opts: &Options,
) -> Result<SessionComparison, String> {
    let level = a.session.confidence_level;
    let mismatches: Vec<String> = a
        .machine
        .differences(&b.machine)
        .iter()
        .map(|m| m.to_string())
        .collect();
    let (reference, why_not) = shared_reference(a, b, opts.reference.as_deref())?;
    let same_session = a.id.is_some() && a.id == b.id;
    let mut warnings = Vec::new();
    if reference.is_none() && !same_session {
        warnings.push(WEAKER.to_string());
    }
    warnings.extend(why_not);
    if !mismatches.is_empty() {
        warnings.push(format!(
            "MACHINE FINGERPRINTS DIFFER ({}): every change below mixes the machine with the engine",
            mismatches.join("; ")
        ));
    }
    for ea in &a.session.engines {
        if let (Some(va), Some(vb)) = (build_of(a, &ea.arm), build_of(b, &ea.arm)) {
            if va != vb {
                warnings.push(format!("{}: {va} in A, {vb} in B", ea.arm));
            }
        }
    }
    if a.session.metric != b.session.metric {
        warnings.push(format!(
            "A was measured by {}, B by {}",
            a.session.metric.name(),
            b.session.metric.name()
        ));
    }
    let mut rows = Vec::new();
    let mut unmatched = Vec::new();
    for ra in &a.results {
        let Some(rb) = b.results.iter().find(|r| r.shape == ra.shape) else {
            unmatched.push(format!("{}: only in A", ra.shape));
            continue;
        };
        if let (Some(ia), Some(ib)) = (&ra.identity, &rb.identity) {
            if ia != ib {
                unmatched.push(format!(
                    "{}: another workload in B (identity {ia} in A, {ib} in B: module, arguments, environment or files differ)",
                    ra.shape
                ));
                continue;
            }
        }
        for arm_a in ra.arms.iter().filter(|x| !x.role.is_null()) {
            let Some(arm_b) = rb.arms.iter().find(|x| x.arm == arm_a.arm) else {
                unmatched.push(format!("{} {}: only in A", ra.shape, arm_a.arm));
                continue;
            };
            let row = Row {
                a,
                b,
                same_machine: mismatches.is_empty(),
                ra,
                rb,
                arm_a,
                arm_b,
            };
            match row.compare(level, reference.as_deref(), same_session, opts) {
                Ok(r) => rows.push(r),
                Err(why) => unmatched.push(format!("{} {}: {why}", ra.shape, arm_a.arm)),
            }
        }
        for arm_b in rb.arms.iter().filter(|x| !x.role.is_null()) {
            if !ra.arms.iter().any(|x| x.arm == arm_b.arm) {
                unmatched.push(format!("{} {}: only in B", rb.shape, arm_b.arm));
            }
        }
    }
    for rb in &b.results {
        if !a.results.iter().any(|r| r.shape == rb.shape) {
            unmatched.push(format!("{}: only in B", rb.shape));
        }
    }
    count_the_rows(&mut rows, level, opts.precision_pct);
    let side = |s: &Session, label: &str| SessionRef {
        label: label.to_string(),
        id: s.id.clone(),
        machine: s.machine.clone(),
        engines: s.session.engines.clone(),
    };
    Ok(SessionComparison {
        schema: SCHEMA.to_string(),
        a: side(a, a_label),
        b: side(b, b_label),
        confidence: level,
        precision_pct: Some(opts.precision_pct),
        reference,
        method: METHOD.to_string(),
        mismatches,
        warnings,
        rows,
        unmatched,
        gate: None,
        to_answer: Vec::new(),
    })
}

/// A change among many rows is a change once their number is counted
/// ([`outcome::discoveries`], at `1 - level` false discoveries): a row
/// whose own interval excludes zero but is not a discovery among the
/// comparison's rows is unsure, and says so.
fn count_the_rows(rows: &mut [CompareRow], level: f64, precision_pct: f64) {
    let p: Vec<f64> = rows.iter().map(|r| r.p_value.unwrap_or(f64::NAN)).collect();
    let m = p.iter().filter(|p| !p.is_nan()).count();
    let found = outcome::discoveries(&p, 1.0 - level);
    for (r, found) in rows.iter_mut().zip(found) {
        if r.outcome == Some(Outcome::Changed) && !found {
            r.verdict = Verdict::WithinNoise;
            r.counted_out = true;
            r.outcome = Some(outcome::outcome(r.verdict, r.ci_pct, precision_pct));
            r.reason = Some(format!(
                "p = {:.3} alone, not a change among {m} rows (Benjamini-Hochberg at {:.0}% \
                 false discoveries): to decide it, measure both as arms of one session",
                r.p_value.unwrap_or(f64::NAN),
                (1.0 - level) * 100.0
            ));
        }
    }
}

/// One shape and arm in both sessions.
struct Row<'s> {
    a: &'s Session,
    b: &'s Session,
    /// The two machines' fingerprints agree.
    same_machine: bool,
    ra: &'s ShapeResult,
    rb: &'s ShapeResult,
    arm_a: &'s ArmResult,
    arm_b: &'s ArmResult,
}

impl<'s> Row<'s> {
    /// The row, or why it cannot be compared.
    fn compare(
        &self,
        level: f64,
        reference: Option<&str>,
        same_session: bool,
        opts: &Options,
    ) -> Result<CompareRow, String> {
        let arm = &self.arm_a.arm;
        let anchor = reference.filter(|r| *r != arm.as_str()).and_then(|r| {
            let find = |s: &'s ShapeResult| s.arms.iter().find(move |x| x.arm == r);
            Some((r, find(self.ra)?, find(self.rb)?))
        });
        let (units, xa, xb, basis, reason) = if let Some((r, ref_a, ref_b)) = anchor {
            let (units, xa) = anchored_units(self.arm_a, ref_a, self.a.session.estimator());
            let (_, xb) = anchored_units(self.arm_b, ref_b, self.b.session.estimator());
            let build = stored_build_of(self.a, r).unwrap_or_default();
            let query = SeriesQuery {
                reference: Some((r.to_string(), build)),
                ..self.query()
            };
            let basis = Basis::Anchored {
                reference: r.to_string(),
                between: (opts.between)(&query),
            };
            (units.to_string(), xa, xb, basis, None)
        } else {
            let (units, xa) = absolute_units(self.arm_a);
            let (_, xb) = absolute_units(self.arm_b);
            let (basis, reason) = if same_session {
                (Basis::SameSession, None)
            } else {
                self.between(opts)
            };
            (units.to_string(), xa, xb, basis, reason)
        };
        let between = match &basis {
            Basis::BetweenSessions { between } => Some(between),
            Basis::Anchored { between, .. } => between.as_ref(),
            _ => None,
        };
        let calibration = match &basis {
            Basis::Anchored { .. } | Basis::BetweenSessions { .. } => (opts.calibration)(
                &self.query(),
                matches!(basis, Basis::Anchored { .. }),
                level,
            )
            .filter(|c| c.factor > 1.0),
            _ => None,
        };
        let across::Change {
            median_pct,
            ci_pct,
            p_value,
        } = across::change(&xa, &xb, level, between, calibration.as_ref())
            .ok_or_else(|| not_comparable(&units, &xa, &xb))?;
        // A change must also clear both sessions' own nulls, the build
        // null's included: their layouts were drawn apart.
        let floor = [self.ra, self.rb]
            .iter()
            .filter_map(|r| r.both_nulls_pct())
            .fold(0.0, f64::max);
        let verdict = if basis == Basis::None {
            Verdict::WithinNoise
        } else {
            stats::verdict(median_pct, ci_pct, stats::MIN_PAIRS, Some([-floor, floor]))
        };
        let outcome = if basis == Basis::None {
            Outcome::Unsure
        } else {
            outcome::outcome(verdict, ci_pct, opts.precision_pct)
        };
        Ok(CompareRow {
            shape: self.ra.shape.clone(),
            arm: arm.clone(),
            a_ns_per_iter: stats::median(&self.arm_a.samples_ns_per_iter),
            b_ns_per_iter: stats::median(&self.arm_b.samples_ns_per_iter),
            units,
            a_units: xa.len(),
            b_units: xb.len(),
            median_pct,
            ci_pct,
            verdict,
            outcome: Some(outcome),
            p_value: (basis != Basis::None).then_some(p_value),
            basis: Some(basis),
            reason,
            calibration,
            counted_out: false,
        })
    }

    /// The series of this row in the history, as absolute times.
    fn query(&self) -> SeriesQuery {
        SeriesQuery {
            machine: self.a.machine.clone(),
            shape: self.ra.shape.clone(),
            workload: self.ra.identity.clone(),
            arm: self.arm_a.arm.clone(),
            metric: self.a.session.metric.key().to_string(),
            versions: [self.arm_a, self.arm_b]
                .iter()
                .map(|x| super::build_identity(&x.version))
                .collect(),
            exclude: [&self.a.id, &self.b.id]
                .into_iter()
                .flatten()
                .cloned()
                .collect(),
            reference: None,
        }
    }

    /// The between-session term from the history, or why there is none.
    fn between(&self, opts: &Options) -> (Basis, Option<String>) {
        if !self.same_machine {
            return (
                Basis::None,
                Some(
                    "A and B ran on different machines and no history spans both: \
                     measure both arms in one session"
                        .to_string(),
                ),
            );
        }
        let query = self.query();
        match (opts.between)(&query) {
            Some(between) => (Basis::BetweenSessions { between }, None),
            None => (
                Basis::None,
                Some(format!(
                    "no shared reference arm, and fewer than {} other sessions of the shape and \
                     arm on this machine in the history to learn the between-session spread \
                     from: measure both in one session, or give both sessions --reference ARM",
                    across::MIN_SESSIONS,
                )),
            ),
        }
    }
}

impl SessionComparison {
    /// Whether rows were compared and every one is unchanged (e.g. a
    /// session against itself at a loose precision).
    pub fn no_change(&self) -> bool {
        !self.rows.is_empty()
            && self.rows.iter().all(|r| {
                r.outcome
                    .map_or(r.verdict == Verdict::WithinNoise, |o| o != Outcome::Changed)
            })
    }

    /// The rows whose outcome is `o` (older files: taken from the verdict).
    pub fn count(&self, o: Outcome) -> usize {
        self.rows
            .iter()
            .filter(|r| {
                r.outcome.unwrap_or(match r.verdict {
                    Verdict::Faster | Verdict::Slower => Outcome::Changed,
                    _ => Outcome::Unsure,
                }) == o
            })
            .count()
    }
}

/// An arm's value per layout variant of its build (the geometric mean of
/// the medians of the epochs that ran it); empty for a fixed build.
fn by_variant(arm: &super::ArmResult) -> Vec<f64> {
    let mut logs: std::collections::BTreeMap<u32, Vec<f64>> = Default::default();
    let (log_medians, variants) = arm.variant_epochs();
    for (l, v) in log_medians.into_iter().zip(variants) {
        logs.entry(v).or_default().push(l);
    }
    logs.values()
        .map(|l| (l.iter().sum::<f64>() / l.len() as f64).exp())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An arm of 4 epochs, 2 reps each, `values[e]` per epoch, and the
    /// variant each epoch ran.
    fn arm(values: [f64; 4], variants: &[(u32, u32)]) -> super::super::ArmResult {
        let reps: Vec<serde_json::Value> = (0..8)
            .map(|i| serde_json::json!({"epoch": i / 2, "round": i % 2, "slot": 0, "iters": 1, "ns": values[i / 2]}))
            .collect();
        let samples: Vec<f64> = (0..8).map(|i| values[i / 2]).collect();
        let variants: std::collections::BTreeMap<String, u32> =
            variants.iter().map(|(e, v)| (e.to_string(), *v)).collect();
        serde_json::from_value(serde_json::json!({
            "arm": "a", "role": "candidate", "version": "v", "verified_reps": 8,
            "samples_ns_per_iter": samples, "reps": reps, "build_variants": variants,
        }))
        .unwrap()
    }

    #[test]
    fn variants_are_the_units_of_an_arm_in_layout_variants() {
        // Epochs 0 and 2 ran variant 0, epochs 1 and 3 variant 1.
        let a = arm([1.0, 2.0, 4.0, 8.0], &[(0, 0), (1, 1), (2, 0), (3, 1)]);
        let v = by_variant(&a);
        assert_eq!(v.len(), 2);
        assert!(
            (v[0] - 2.0).abs() < 1e-12,
            "geometric mean of 1 and 4: {v:?}"
        );
        assert!(
            (v[1] - 4.0).abs() < 1e-12,
            "geometric mean of 2 and 8: {v:?}"
        );
        // A fixed build has no variants.
        assert!(by_variant(&arm([1.0, 2.0, 4.0, 8.0], &[])).is_empty());
    }
}
