//! Steps in a series of sessions, judged by the windows before and after
//! each point.
//!
//! The rule: at point `i`, learn the series' noise from the logs of up to
//! [`BEFORE`] values before it: their mean `m` and SD `s` (never below
//! [`SD_FLOOR_PCT`], so that exact counts, whose SD is zero, still give a
//! finite test). Then each of the [`AFTER`] values from `i` on is a new
//! value to predict, with standard error `s * sqrt(1 + 1/n_before)`. The
//! step is flagged when
//!
//! - **every** value after lies beyond the two-sided [`P`] prediction
//!   bound (Student's t, `n_before - 1` degrees of freedom) on the same
//!   side, so that one disturbed session is not a step;
//! - the change, `exp(mean(after) - m) - 1`, is at least the series kind's
//!   smallest step ([`Kind::min_step_pct`]); and
//! - the smaller of the after values' distances, in units of the standard
//!   error, is the largest of its neighbours, so that one step is flagged
//!   once and not at each point whose windows straddle it (a step flagged
//!   one session after a new build's first session, [`Value::new_build`],
//!   which leaned the same way within the bound, is moved back to it:
//!   measured on a tracked wasmi branch, the flag otherwise named a commit
//!   range of one commit); and
//! - where the history stores the session's own 95% interval ([`Value`]:
//!   an anchored session's interval of its ratio to the reference), that
//!   interval lies wholly beyond the level before the point, on the step's
//!   side. When the arm was at the reference's build before, that level is
//!   the reference itself: the session's own anchored comparison must be a
//!   change in the step's direction.
//!
//! Why the last condition: the noise above is learned from the sessions
//! before the point, and a new build brings noise they never saw. A
//! commit that only moves code around changes the layout, and with it the
//! speed, by a few percent; a session whose arm and reference are two
//! builds carries that spread between layouts in its own interval (its
//! epochs are fresh workers), sessions where both were one build do not.
//! On a recorded track, four sessions of arm and reference at one commit
//! (ratio +-1%) were followed by a layout-only commit whose two sessions
//! agreed on -2.94% [-4.01, -1.86]: beyond the bound, yet inside the step's
//! session itself the arm against the reference was -3.12% [-10.25, +4.58]
//! (`docs/measured/2026-12-02-tracked-series`). Such a step is reported,
//! not flagged ([`Step::inside_own_ci`]). A session without a stored
//! interval (absolute time, instruction counts, older databases) is judged
//! by its value alone.
//!
//! With one value after a point (the newest session) nothing is flagged
//! yet: the step is *pending* until the next session confirms it.
//!
//! A step lands with a build. Where the history knows each session's build
//! ([`Value::new_build`]: the arm's version, commit, uncommitted changes of
//! a `path:` checkout and the loopbench binary that hosted or built it; the
//! reference's build is one per anchored series), a step where neither
//! its session nor the one before brought a new build is the machine's:
//! shown ([`Step::same_build`]), not flagged (one session late is still
//! the build's, as above: its first session may come out inside the
//! bound). Why: on a 2-vCPU EPYC VM, 20 A/A sessions of tinywasm anchored
//! on wasm3 (one binary, nothing changed) gave one step the values flag,
//! tinywasm's locals_traffic -1.8% over the last two sessions, when both
//! engines' absolute times moved by 2-4% and the next session ran both
//! engines' lut in 20% less time: two sessions of another machine are a
//! step to any rule that names a step the day after it lands. The values alone would still flag it were every session a new
//! build (a commit per session, as on a busy branch): that is the rule's
//! false-flag rate at a build, measured and stated in
//! `docs/measured/2026-12-04-machine-steps`.
//!
//! Why this rule and not rustc-perf's (flag `|x_i/x_(i-1) - 1|` beyond
//! `Q3 + 3 IQR` of the series' earlier adjacent changes), which loopbench
//! used before: the IQR rule judges one adjacent pair, so a single
//! disturbed session is a flagged step, and on the 20 recorded A/A
//! sessions per engine of a noisy VM (absolute time, no change anywhere)
//! it flagged 24 of 152 steps. Perfherder's rule (Welch's t >= 7 between
//! 12 values back and 12 forward) needs 12 sessions after a regression
//! before it names it; two agreeing sessions name it the day after it
//! lands, at the cost of a larger smallest step on noisy series.

use crate::stats::dist::{mean, t_quantile, variance};

/// Values before a point the noise is learned from.
pub const BEFORE: usize = 12;
/// Values from the point on that the step is measured over.
pub const AFTER: usize = 2;
/// The fewest values before a point for it to be judged.
pub const MIN_BEFORE: usize = 4;
/// Two-sided p-value each value after a point must reach: with
/// [`AFTER`] = 2 agreeing values, about 1 false flag in 20,000 steps of
/// independent normal noise.
pub const P: f64 = 0.01;
/// The smallest SD of a series, percent: exact counts have none.
pub const SD_FLOOR_PCT: f64 = 0.01;

/// What a series' values are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Median ns per iteration: moves with the machine between sessions.
    Time,
    /// The ratio to the session's reference arm: carries across sessions.
    Anchored,
    /// Exact instructions per iteration (callgrind): deterministic.
    Instructions,
}

impl Kind {
    /// A smaller step is taken as the instrument's resolution, not news.
    pub fn min_step_pct(self) -> f64 {
        match self {
            Kind::Time | Kind::Anchored => 1.0,
            Kind::Instructions => 0.1,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Kind::Time => "absolute time",
            Kind::Anchored => "anchored ratio",
            Kind::Instructions => "instructions",
        }
    }
}

/// The rule in one line, for `--help` and output.
pub const RULE: &str = "a step at a session is flagged when it and the next session both lie \
beyond the 99% prediction bound of up to 12 sessions before it, on the same side (Student t on \
logs, the SD of the sessions before as the noise), the change is at least 1% (0.1% for \
instruction counts), it is the clearest of its neighbours (moved back one session to a new build's \
first session that leaned the same way) and, for an anchored series, the session's \
own 95% interval of its ratio to the reference lies beyond the level before it on the same side (a \
new build's layout spread is in that interval, not in the sessions before); a step where \
neither its session nor the one before it brought a new build (version, commit, uncommitted \
changes, loopbench binary) is the machine's: shown, not flagged; the newest session alone is \
pending";

/// One step of a series.
#[derive(Clone, Debug, PartialEq)]
pub struct Step {
    /// Index of the point this step arrives at.
    pub index: usize,
    /// Signed change of the window after against the window before, percent.
    pub change_pct: f64,
    /// 95% interval of that change, percent: the difference of the two
    /// windows' mean logs, with the noise learned before the point as the
    /// SD of both (Student's t, `history - 1` degrees of freedom; `NaN`
    /// while fewer than [`MIN_BEFORE`] values precede the point).
    pub ci_pct: [f64; 2],
    /// The smallest change flagged at this point, percent (`NaN` while
    /// fewer than [`MIN_BEFORE`] values precede it).
    pub threshold_pct: f64,
    /// Values before the point the noise was learned from.
    pub history: usize,
    /// Values after the point (with it) the step was measured over: below
    /// [`AFTER`] the step is not yet confirmed.
    pub after: usize,
    pub flagged: bool,
    /// Beyond the bound with too few values after it to confirm (the
    /// newest session).
    pub pending: bool,
    /// The values would flag this step (or hold it pending), but the
    /// session's own interval does not lie beyond the level before it on
    /// the step's side: not flagged, not pending.
    pub inside_own_ci: bool,
    /// The values would flag this step (or hold it pending), but neither
    /// its session nor the one before it brought a new build: a change of
    /// the machine, not of the arm. Not flagged, not pending.
    pub same_build: bool,
}

/// One session's value in a series, with the session's own 95% interval of
/// it where the history stores one (in the value's units: for an anchored
/// series the ratio to the reference, `1 + ref_ci_*_pct / 100`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Value {
    pub value: f64,
    pub own_ci: Option<[f64; 2]>,
    /// The session measured another build of the arm than the session
    /// before it in the series (a new commit, version, set of uncommitted
    /// changes or loopbench binary): where a step can land. `None` where
    /// the builds are not known (the values alone decide).
    pub new_build: Option<bool>,
}

impl From<f64> for Value {
    /// A value without an interval of its own: judged by the values alone.
    fn from(value: f64) -> Value {
        Value {
            value,
            own_ci: None,
            new_build: None,
        }
    }
}

impl Value {
    /// An anchored session's value: its change against the reference and
    /// that change's own interval, percent (an interval with a bound not
    /// stored, `NaN`, is none).
    pub fn anchored(change_pct: f64, ci_pct: Option<[f64; 2]>) -> Value {
        Value {
            value: 1.0 + change_pct / 100.0,
            own_ci: ci_pct
                .filter(|c| c.iter().all(|x| !x.is_nan()))
                .map(|c| c.map(|x| 1.0 + x / 100.0)),
            new_build: None,
        }
    }

    /// The value, marked as the first of a new build (or not).
    pub fn with_new_build(self, new_build: bool) -> Value {
        Value {
            new_build: Some(new_build),
            ..self
        }
    }
}

/// Every step of `values` (in time order), judged by the rule above.
pub fn steps(values: &[Value], kind: Kind) -> Vec<Step> {
    let logs: Vec<f64> = values.iter().map(|v| v.value.ln()).collect();
    let floor = (SD_FLOOR_PCT / 100.0).ln_1p();
    // Per point: its step, its score (the weakest value after it, in
    // standard errors), whether its own interval supports the step, and
    // its own value's lean from the level before it (log).
    let judged: Vec<(Step, f64, bool, f64)> = (1..logs.len())
        .map(|i| {
            let before = &logs[i.saturating_sub(BEFORE)..i];
            let after = &logs[i..(i + AFTER).min(logs.len())];
            let m = mean(before);
            let change_pct = (mean(after) - m).exp_m1() * 100.0;
            let mut step = Step {
                index: i,
                change_pct,
                ci_pct: [f64::NAN; 2],
                threshold_pct: f64::NAN,
                history: before.len(),
                after: after.len(),
                flagged: false,
                pending: false,
                inside_own_ci: false,
                same_build: false,
            };
            let finite = before.iter().chain(after).all(|x| x.is_finite());
            if before.len() < MIN_BEFORE || !finite {
                return (step, 0.0, true, 0.0);
            }
            let nb = before.len() as f64;
            let se = variance(before).sqrt().max(floor) * (1.0 + 1.0 / nb).sqrt();
            let critical = t_quantile(1.0 - P / 2.0, nb - 1.0);
            let sd = variance(before).sqrt().max(floor);
            let half =
                t_quantile(0.975, nb - 1.0) * sd * (1.0 / nb + 1.0 / after.len() as f64).sqrt();
            let diff = mean(after) - m;
            step.ci_pct = [
                (diff - half).exp_m1() * 100.0,
                (diff + half).exp_m1() * 100.0,
            ];
            step.threshold_pct = (critical * se).exp_m1().max(kind.min_step_pct() / 100.0) * 100.0;
            // The weakest of the values after, signed: a step needs all of
            // them on one side.
            let devs: Vec<f64> = after.iter().map(|x| (x - m) / se).collect();
            let same_side = devs.iter().all(|d| *d > 0.0) || devs.iter().all(|d| *d < 0.0);
            let weakest = if same_side {
                devs.iter().map(|d| d.abs()).fold(f64::INFINITY, f64::min)
            } else {
                0.0
            };
            let beyond = weakest >= critical && change_pct.abs() >= kind.min_step_pct();
            step.pending = beyond && after.len() < AFTER;
            step.flagged = beyond && after.len() == AFTER;
            (
                step,
                weakest,
                supported(values[i].own_ci, m, diff),
                logs[i] - m,
            )
        })
        .collect();
    let mut steps: Vec<Step> = (0..judged.len())
        .map(|j| {
            // One step, one flag: the point where the windows split it
            // best. Only then the session's own interval, so that a step it
            // does not support is not moved to the next session (of the
            // same build) either.
            let t = judged[j].1;
            let left = j.checked_sub(1).map_or(0.0, |k| judged[k].1);
            let right = judged.get(j + 1).map_or(0.0, |r| r.1);
            let (mut step, own) = (judged[j].0.clone(), judged[j].2);
            step.flagged &= t >= left && t > right;
            step.inside_own_ci = (step.flagged || step.pending) && !own;
            step.flagged &= own;
            step.pending &= own;
            step
        })
        .collect();
    // A step lands with a build. Flagged one session after a new build's
    // first session, which leaned the same way (and whose own interval
    // supports it) but stayed inside the bound by noise, the step is that
    // session's: else the flag names a commit range of one commit.
    for j in 1..steps.len() {
        let (i, k) = (steps[j].index, j - 1);
        let leans = judged[k].3.signum() == steps[j].change_pct.signum();
        if steps[j].flagged
            && values[i].new_build != Some(true)
            && values[i - 1].new_build == Some(true)
            && leans
            && judged[k].2
            && !steps[k].threshold_pct.is_nan()
        {
            steps[j].flagged = false;
            steps[k].flagged = true;
            steps[k].inside_own_ci = false;
        }
    }
    // A step at a session that ran the same build as the one before it,
    // and that one as well, is the machine's: nothing the series tracks
    // changed there. (One session late is the build's: the values place a
    // step there when its first session came out inside the bound.)
    for step in &mut steps {
        let i = step.index;
        let built = values[i].new_build != Some(false) || values[i - 1].new_build == Some(true);
        if (step.flagged || step.pending) && !built {
            step.flagged = false;
            step.pending = false;
            step.same_build = true;
        }
    }
    steps
}

/// Whether a session's own interval `own_ci` (value units) supports a step
/// of `diff` (log) from the level `level` (log) before it: the interval
/// lies wholly beyond the level on the step's side. No interval (or one
/// whose bounds are not numbers): the values alone decide.
fn supported(own_ci: Option<[f64; 2]>, level: f64, diff: f64) -> bool {
    let Some([lo, hi]) = own_ci.map(|c| c.map(f64::ln)) else {
        return true;
    };
    if lo.is_nan() || hi.is_nan() {
        return true;
    }
    if diff > 0.0 {
        lo > level
    } else {
        hi < level
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A flat series with +-0.4% noise, deterministic.
    fn flat(n: usize) -> Vec<f64> {
        (0..n)
            .map(|i| 100.0 * (1.0 + 0.004 * ((i * 7 % 5) as f64 - 2.0) / 2.0))
            .collect()
    }

    fn flagged(s: &[Step]) -> Vec<usize> {
        s.iter().filter(|s| s.flagged).map(|s| s.index).collect()
    }

    /// Values without intervals of their own.
    fn bare(v: &[f64]) -> Vec<Value> {
        v.iter().map(|&x| x.into()).collect()
    }

    /// branch_periodic's ratio to its reference over 16 sessions of a
    /// tracked wasmi branch (Xeon VM, 2026-12-04): from session 13 on, the
    /// commit of wasmi #2010 (+2.5-3.2% in one session of both builds); 13
    /// itself came out low, inside the bound.
    const TRACKED: [f64; 16] = [
        1.013, 1.006, 1.005, 0.999, 1.001, 1.004, 0.996, 1.003, 1.008, 1.011, 1.003, 0.998, 1.018,
        1.032, 1.031, 1.026,
    ];

    #[test]
    fn a_step_lands_with_the_build_that_brought_it() {
        // Without builds: the values alone place it one session late.
        let s = steps(&bare(&TRACKED), Kind::Anchored);
        assert_eq!(flagged(&s), vec![13], "{s:?}");
        // The commit changed at session 13 (index 12): the step is its.
        let built = |v: &[f64], at: usize| -> Vec<Value> {
            v.iter()
                .enumerate()
                .map(|(i, &x)| Value::from(x).with_new_build(i == at))
                .collect()
        };
        let s = steps(&built(&TRACKED, 12), Kind::Anchored);
        assert_eq!(flagged(&s), vec![12], "{s:?}");
        assert!(s[11].change_pct > 1.5, "{:?}", s[11]);
        // A new build two sessions back is not moved to: the step came
        // after it, at sessions that ran the build before them: the
        // machine's.
        let s = steps(&built(&TRACKED, 11), Kind::Anchored);
        assert!(flagged(&s).is_empty(), "{s:?}");
        assert!(s[12].same_build && s[12].index == 13, "{:?}", s[12]);
        // A new build's session that leaned the other way keeps nothing.
        let mut against = TRACKED;
        against[12] = 0.995;
        let s = steps(&built(&against, 12), Kind::Anchored);
        assert_eq!(flagged(&s), vec![13], "{s:?}");
        // Its own interval must support it, as any flagged session's.
        let mut v = built(&TRACKED, 12);
        v[12].own_ci = Some([0.99, 1.03]);
        assert_eq!(flagged(&steps(&v, Kind::Anchored)), vec![13]);
        // Moving never adds a flag: a flat series with builds changing.
        let flat_built: Vec<Value> = flat(40)
            .iter()
            .enumerate()
            .map(|(i, &x)| Value::from(x).with_new_build(i % 3 == 0))
            .collect();
        assert!(flagged(&steps(&flat_built, Kind::Anchored)).is_empty());
    }

    #[test]
    fn a_step_where_no_build_changed_is_the_machine_s() {
        let mut v = flat(20);
        for x in &mut v[12..] {
            *x *= 1.02;
        }
        let at = |builds: &[usize]| -> Vec<Value> {
            v.iter()
                .enumerate()
                .map(|(i, &x)| Value::from(x).with_new_build(builds.contains(&i)))
                .collect()
        };
        // One build throughout: shown, not flagged.
        let s = steps(&at(&[]), Kind::Anchored);
        assert!(flagged(&s).is_empty(), "{s:?}");
        let machine: Vec<usize> = s.iter().filter(|s| s.same_build).map(|s| s.index).collect();
        assert_eq!(machine, vec![12]);
        // A build at the step, or one session before it: the build's
        // (moved back to it here, where that session leaned up by noise).
        for b in [12, 11] {
            let s = steps(&at(&[b]), Kind::Anchored);
            assert_eq!(flagged(&s), vec![b], "build at {b}: {s:?}");
            assert!(s.iter().all(|s| !s.same_build));
        }
        // A build two sessions before, or after it: the machine's.
        for b in [10, 13] {
            let s = steps(&at(&[b]), Kind::Anchored);
            assert!(flagged(&s).is_empty(), "build at {b}: {s:?}");
        }
        // The newest session is not held pending at the same build.
        let mut tail = flat(12);
        tail[11] *= 1.05;
        let built: Vec<Value> = tail
            .iter()
            .map(|&x| Value::from(x).with_new_build(false))
            .collect();
        let s = steps(&built, Kind::Anchored);
        assert!(!s[10].pending && s[10].same_build, "{:?}", s[10]);
        assert!(steps(&bare(&tail), Kind::Anchored)[10].pending);
    }

    #[test]
    fn a_flat_series_is_not_flagged() {
        let s = steps(&bare(&flat(40)), Kind::Anchored);
        assert_eq!(s.len(), 39);
        assert!(flagged(&s).is_empty(), "{s:?}");
    }

    #[test]
    fn a_two_percent_step_is_flagged_once_at_its_point() {
        let mut v = flat(20);
        for x in &mut v[12..] {
            *x *= 1.02;
        }
        let s = steps(&bare(&v), Kind::Anchored);
        assert_eq!(flagged(&s), vec![12], "{s:?}");
        let at = &s[11];
        assert!((at.change_pct - 2.0).abs() < 0.3, "{at:?}");
        assert!(
            at.ci_pct[0] < at.change_pct && at.change_pct < at.ci_pct[1],
            "{at:?}"
        );
        assert!(at.ci_pct[0] > 0.0, "{at:?}");
        assert_eq!((at.history, at.after), (12, 2));
        // The same step as the newest point: pending, not yet flagged.
        let s = steps(&bare(&v[..13]), Kind::Anchored);
        assert!(flagged(&s).is_empty());
        assert!(s[11].pending && s[11].after == 1, "{:?}", s[11]);
    }

    #[test]
    fn one_disturbed_session_is_not_a_step() {
        // A single session 6% slow (the absolute time of a noisy VM), then
        // back: the window after holds it and its normal successor.
        let mut v = flat(20);
        v[10] *= 1.06;
        let s = steps(&bare(&v), Kind::Time);
        assert!(flagged(&s).is_empty(), "{s:?}");
    }

    #[test]
    fn exact_counts_flag_small_steps_and_nothing_else() {
        let mut v = vec![1000.0; 10];
        v.extend([1003.0; 5]);
        let s = steps(&bare(&v), Kind::Instructions);
        assert_eq!(flagged(&s), vec![10]);
        // Under the smallest step of the kind: not news.
        let mut v = vec![1000.0; 10];
        v.extend([1000.5; 5]);
        assert!(flagged(&steps(&bare(&v), Kind::Instructions)).is_empty());
    }

    #[test]
    fn short_history_is_not_judged() {
        let s = steps(&bare(&[100.0, 104.0, 100.0, 150.0]), Kind::Time);
        assert!(s.iter().all(|s| !s.flagged && s.threshold_pct.is_nan()));
    }

    /// The recorded layout-only step: an anchored ratio at 1.0 (+-0.4%)
    /// for 12 sessions, then 0.969 (-3.1%), each session with its own
    /// interval of the change against the reference, percent: `before`
    /// for the sessions at the old level, `after` from the step on.
    fn anchored(before: [f64; 2], after: [f64; 2]) -> Vec<Value> {
        let mut v: Vec<f64> = flat(12).iter().map(|x| x / 100.0).collect();
        v.extend([0.969, 0.9695, 0.9685, 0.969]);
        v.iter()
            .enumerate()
            .map(|(i, &x)| {
                let ci = if i < 12 { before } else { after };
                Value::anchored((x - 1.0) * 100.0, Some(ci))
            })
            .collect()
    }

    #[test]
    fn a_step_inside_its_session_s_own_interval_is_not_flagged() {
        // -3.12% [-10.25, +4.58] inside the session: the two builds'
        // layouts differ by that much, which the sessions before (one
        // build, +-1%) never showed.
        let v = anchored([-1.0, 1.0], [-10.25, 4.58]);
        let s = steps(&v, Kind::Anchored);
        assert!(flagged(&s).is_empty(), "{s:?}");
        // Reported, not dropped: the values alone flag it at the step.
        let inside: Vec<usize> = s
            .iter()
            .filter(|s| s.inside_own_ci)
            .map(|s| s.index)
            .collect();
        assert_eq!(inside, vec![12], "{s:?}");
        assert!((s[11].change_pct + 3.1).abs() < 0.2, "{:?}", s[11]);
        // And as the newest session: not pending either.
        let s = steps(&v[..13], Kind::Anchored);
        assert!(s.iter().all(|s| !s.pending && !s.flagged), "{s:?}");
        assert!(s[11].inside_own_ci, "{:?}", s[11]);
    }

    #[test]
    fn a_step_its_session_s_own_interval_supports_is_flagged_once() {
        let v = anchored([-1.0, 1.0], [-4.01, -1.86]);
        let s = steps(&v, Kind::Anchored);
        assert_eq!(flagged(&s), vec![12], "{s:?}");
        assert!(s.iter().all(|s| !s.inside_own_ci), "{s:?}");
        let s = steps(&v[..13], Kind::Anchored);
        assert!(s[11].pending && !s[11].inside_own_ci, "{:?}", s[11]);
        // An interval that excludes zero on the other side is no support.
        let v = anchored([-1.0, 1.0], [0.5, 2.0]);
        assert!(flagged(&steps(&v, Kind::Anchored)).is_empty());
    }

    #[test]
    fn without_stored_intervals_the_values_alone_decide() {
        // Older databases: no interval stored (NULL, read as NaN).
        let v = anchored([f64::NAN, f64::NAN], [f64::NAN, f64::NAN]);
        assert!(v.iter().all(|v| v.own_ci.is_none()));
        let bare: Vec<Value> = v.iter().map(|v| v.value.into()).collect();
        let (a, b) = (steps(&v, Kind::Anchored), steps(&bare, Kind::Anchored));
        // Equal step for step (NaN thresholds and all: compared as printed).
        assert_eq!(format!("{a:?}"), format!("{b:?}"));
        assert_eq!(flagged(&a), vec![12], "{a:?}");
        assert!(a.iter().all(|s| !s.inside_own_ci));
    }

    #[test]
    fn the_own_interval_is_judged_against_the_level_before_not_the_reference() {
        // A tracked arm twice as fast as its reference (-50%), then a +5%
        // regression: every session's own interval excludes zero, on the
        // faster side. What supports the step is that the step's session
        // lies beyond the level before it (-50%), slower.
        let mut v: Vec<Value> = flat(12)
            .iter()
            .map(|x| Value::anchored(x / 2.0 - 100.0, Some([-50.5, -49.5])))
            .collect();
        v.extend((0..4).map(|_| Value::anchored(-47.5, Some([-48.0, -47.0]))));
        let s = steps(&v, Kind::Anchored);
        assert_eq!(flagged(&s), vec![12], "{s:?}");
        assert!(s[11].change_pct > 4.5, "{:?}", s[11]);
        // The same step whose session's own interval reaches back to the
        // level before: not flagged.
        for x in &mut v[12..] {
            *x = Value::anchored(-47.5, Some([-52.0, -43.0]));
        }
        let s = steps(&v, Kind::Anchored);
        assert!(flagged(&s).is_empty(), "{s:?}");
        assert!(s[11].inside_own_ci, "{:?}", s[11]);
    }
}
