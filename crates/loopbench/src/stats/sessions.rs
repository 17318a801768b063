//! Across sessions: what a change between two separate sessions can claim.
//!
//! Inside a session every arm ran on the same machine state, interleaved
//! round by round, so paired ratios cancel the machine's drift. Between two
//! sessions nothing pairs: on a noisy VM the absolute time of the same
//! binary moves 12-19% from one session to the next, far outside either
//! session's own interval. Two ways give a true interval:
//!
//! - **anchoring**: both sessions measured the same reference arm, and
//!   what is compared is each arm's ratio to it, per epoch. The ratio to an
//!   arm of the same session survives the machine's drift (on that VM its
//!   spread across sessions was inside each session's own interval);
//! - **a between-session term**: the spread of this machine's repeated
//!   sessions of the same shape, arm and build, learned from the history
//!   ([`Between::learn`]), added to the variance of the difference.
//!
//! Without either the comparison is unsure, and says how to make it sure.

use super::dist::{mean, t_quantile, variance};
use serde::{Deserialize, Serialize};

/// The spread of repeated sessions of one series, learned from history.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Between {
    /// 100 x the SD of the log session values (with `excess`, only the
    /// part the sessions' own intervals do not explain).
    pub sd_pct: f64,
    /// Sessions it was learned from.
    pub sessions: usize,
    /// The sessions' own noise was taken out (their standard errors were
    /// known), so `sd_pct` is the session-to-session shift alone.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub excess: bool,
    /// With `excess`: 100 x the whole SD of the log session values, own
    /// noise included. Two sessions of one build differ by about
    /// `sqrt(2)` times it, whatever their own epochs claim: the floor of
    /// [`change`]'s interval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_sd_pct: Option<f64>,
}

/// The fewest earlier sessions a between-session term is learned from
/// (two degrees of freedom: fewer is a guess, not an estimate).
pub const MIN_SESSIONS: usize = 3;

impl Between {
    /// From the values (e.g. median ns/iter) of repeated sessions of one
    /// series; `None` with fewer than [`MIN_SESSIONS`] positive values.
    ///
    /// The SD of whole-session values holds each session's own noise as
    /// well as the session-to-session shift; adding it in full to a
    /// difference that already carries both sessions' own variance counts
    /// that noise twice. The error is on the safe side and small where it
    /// matters (own intervals of 1-3% against shifts of 12-19%).
    pub fn learn(values: &[f64]) -> Option<Between> {
        Self::learn_excess(values, &[])
    }

    /// [`Between::learn`], knowing each session's own standard error on
    /// the log scale (`own_se`, parallel to `values`): the term is then the
    /// variance the sessions' own noise does not explain,
    /// `max(0, s^2 - mean(se_i^2))` (Kalibera and Jones' variance
    /// components, one level up). Anchored ratios need this: their shift
    /// between sessions is small beside each session's own interval, and
    /// the full spread would count that interval twice over.
    pub fn learn_excess(values: &[f64], own_se: &[f64]) -> Option<Between> {
        let kept: Vec<(f64, Option<f64>)> = values
            .iter()
            .enumerate()
            .filter(|(_, v)| **v > 0.0 && v.is_finite())
            .map(|(i, v)| (v.ln(), own_se.get(i).copied().filter(|s| s.is_finite())))
            .collect();
        if kept.len() < MIN_SESSIONS {
            return None;
        }
        let logs: Vec<f64> = kept.iter().map(|(l, _)| *l).collect();
        let total = variance(&logs);
        let own: Vec<f64> = kept.iter().filter_map(|(_, s)| s.map(|s| s * s)).collect();
        let excess = !own.is_empty() && own.len() == kept.len();
        let var = if excess {
            (total - mean(&own)).max(0.0)
        } else {
            total
        };
        Some(Between {
            sd_pct: var.sqrt() * 100.0,
            sessions: logs.len(),
            excess,
            total_sd_pct: excess.then(|| total.sqrt() * 100.0),
        })
    }

    /// Its variance on the log scale and the degrees of freedom it has.
    fn term(&self) -> (f64, f64) {
        let sd = self.sd_pct / 100.0;
        (sd * sd, self.sessions as f64 - 1.0)
    }
}

fn pct(log_ratio: f64) -> f64 {
    (log_ratio.exp() - 1.0) * 100.0
}

/// The change from sample `a` to sample `b` of two separate sessions:
/// Welch's t interval on the difference of the means of the logs,
/// `d = mean(ln b) - mean(ln a)`, `se^2 = s_a^2/n_a + s_b^2/n_b`, plus, with
/// `between`, each session's own shift: `2 tau^2` (`tau` = `between.sd_pct`).
/// Degrees of freedom by Welch-Satterthwaite over the two or three terms.
///
/// With the history's whole spread of session values (`total_sd_pct`),
/// `se^2` is at least `2 s_total^2` (`sessions - 1` degrees of freedom):
/// the history says how far two sessions of one build land apart, own
/// noise included, and a session's own estimate of that noise from 4-5
/// epochs can fall far short of it (measured: tinywasm's br_table_switch,
/// bimodal per process, gave 3 of 19 A/A pairs "changed" by ±15% with
/// Welch intervals of ±11% while its sessions spread by 6%).
/// Returned as percentages `exp(d) - 1`: `(median_pct, [lo_pct, hi_pct])`.
/// Needs two positive values on each side.
pub fn change(
    a: &[f64],
    b: &[f64],
    level: f64,
    between: Option<&Between>,
) -> Option<(f64, [f64; 2])> {
    let logs = |xs: &[f64]| -> Option<Vec<f64>> {
        let v: Vec<f64> = xs
            .iter()
            .filter(|x| **x > 0.0 && x.is_finite())
            .map(|x| x.ln())
            .collect();
        (v.len() >= 2).then_some(v)
    };
    let (la, lb) = (logs(a)?, logs(b)?);
    let (na, nb) = (la.len() as f64, lb.len() as f64);
    let d = mean(&lb) - mean(&la);
    let mut terms = vec![
        (variance(&la) / na, na - 1.0),
        (variance(&lb) / nb, nb - 1.0),
    ];
    if let Some(t) = between {
        let (v, df) = t.term();
        terms.push((2.0 * v, df));
    }
    let se2: f64 = terms.iter().map(|(v, _)| v).sum();
    let denom: f64 = terms.iter().map(|(v, df)| v * v / df).sum();
    let mut df = se2 * se2 / denom;
    let mut se2 = se2;
    if let Some((total, sessions)) = between.and_then(|b| Some((b.total_sd_pct?, b.sessions))) {
        let floor = 2.0 * (total / 100.0).powi(2);
        if floor > se2 {
            se2 = floor;
            df = sessions as f64 - 1.0;
        }
    }
    let half = if se2 > 0.0 {
        t_quantile(0.5 + level / 2.0, df) * se2.sqrt()
    } else {
        0.0
    };
    Some((pct(d), [pct(d - half), pct(d + half)]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sample_against_itself_is_no_change_and_a_shift_is_found() {
        let a = [10.0, 10.4, 9.8, 10.1, 10.2];
        let (m, [lo, hi]) = change(&a, &a, 0.95, None).unwrap();
        assert_eq!(m, 0.0);
        // Symmetric around no change on the log scale.
        let log = |p: f64| (1.0 + p / 100.0).ln();
        assert!(
            lo < 0.0 && hi > 0.0 && (log(lo) + log(hi)).abs() < 1e-9,
            "{lo} {hi}"
        );
        // 10% slower, same spread: the interval holds +10% and excludes 0.
        let b: Vec<f64> = a.iter().map(|x| x * 1.1).collect();
        let (m, [lo, hi]) = change(&a, &b, 0.95, None).unwrap();
        assert!((m - 10.0).abs() < 1e-9, "{m}");
        assert!(lo > 0.0 && lo < 10.0 && hi > 10.0, "{lo} {hi}");
        // Fewer than two values on a side: no interval.
        assert!(change(&a[..1], &a, 0.95, None).is_none());
    }

    #[test]
    fn the_between_session_term_widens_the_interval() {
        let a = [10.0, 10.1, 9.9, 10.05, 9.95, 10.0];
        let b: Vec<f64> = a.iter().map(|x| x * 1.10).collect();
        let (_, tight) = change(&a, &b, 0.95, None).unwrap();
        assert!(tight[0] > 5.0, "10% on 0.5% noise: {tight:?}");
        // Sessions of this series moved by about 8% (sd of logs).
        let history = [100.0, 108.0, 93.0, 101.0, 110.0, 95.0, 104.0];
        let between = Between::learn(&history).unwrap();
        assert_eq!(between.sessions, 7);
        assert!(!between.excess);
        assert!((6.0..8.0).contains(&between.sd_pct), "{between:?}");
        let (m, wide) = change(&a, &b, 0.95, Some(&between)).unwrap();
        assert!((m - 10.0).abs() < 1e-9);
        assert!(wide[0] < 0.0 && wide[1] > 20.0, "{wide:?}");
        // Too short a history is no term at all.
        assert!(Between::learn(&history[..2]).is_none());
        assert!(Between::learn(&[1.0, -1.0, f64::NAN, 2.0]).is_none());
    }

    #[test]
    fn the_excess_is_what_the_sessions_own_noise_does_not_explain() {
        // Sessions spread by about 2% (sd of logs), each with a 2% standard
        // error of its own: no shift between sessions beyond it.
        let values = [1.00, 1.02, 0.98, 1.01, 0.99, 1.03, 0.97];
        let sd = Between::learn(&values).unwrap().sd_pct;
        let own = vec![sd / 100.0; values.len()];
        let b = Between::learn_excess(&values, &own).unwrap();
        assert!(b.excess && b.sd_pct < 1e-9, "{b:?}");
        // The whole spread is kept beside the excess, as the floor of a
        // difference: two A/A sessions their own epochs call apart are not
        // apart when the history's sessions spread that far.
        assert!((b.total_sd_pct.unwrap() - sd).abs() < 1e-9, "{b:?}");
        let tight = [1.0, 1.001, 0.999, 1.0005];
        let apart: Vec<f64> = tight.iter().map(|x| x * 1.03).collect();
        let no_floor = Between {
            total_sd_pct: None,
            ..b.clone()
        };
        let (_, alone) = change(&tight, &apart, 0.95, Some(&no_floor)).unwrap();
        assert!(alone[0] > 0.0, "3% on 0.1% own noise: {alone:?}");
        let (_, floored) = change(&tight, &apart, 0.95, Some(&b)).unwrap();
        let half = t_quantile(0.975, 6.0) * (2.0 * (sd / 100.0).powi(2)).sqrt();
        let d = 1.03f64.ln();
        assert!((floored[0] - pct(d - half)).abs() < 1e-9, "{floored:?}");
        assert!(floored[0] < 0.0, "{floored:?}");
        // Half of the spread unexplained: the term is sqrt(s^2 - se^2).
        let own = vec![sd / 100.0 / 2f64.sqrt(); values.len()];
        let b = Between::learn_excess(&values, &own).unwrap();
        assert!((b.sd_pct - sd / 2f64.sqrt()).abs() < 1e-9, "{b:?} {sd}");
        // A session without its standard error: the whole spread, as learn.
        let mut own = own;
        own[3] = f64::NAN;
        assert_eq!(
            Between::learn_excess(&values, &own),
            Between::learn(&values)
        );
    }
}
