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

use super::dist::{mean, normal_quantile, t_cdf, t_quantile, variance};
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

/// One side's own term of a difference: the variance of its mean on the
/// log scale and the degrees of freedom that estimate has.
type Term = (f64, f64);

/// The standard error, on the log scale, of a difference whose sides
/// carry the `own` variances, plus with `between` each session's shift
/// (`2 tau^2`), and its degrees of freedom: Welch-Satterthwaite over the
/// terms, and, with the history's whole spread (`total_sd_pct`), a floor
/// of `2 s_total^2` (see [`change`]).
fn standard_error(own: [Term; 2], between: Option<&Between>) -> (f64, f64) {
    let mut terms = own.to_vec();
    if let Some(t) = between {
        let (v, df) = t.term();
        terms.push((2.0 * v, df));
    }
    let mut se2: f64 = terms.iter().map(|(v, _)| v).sum();
    let denom: f64 = terms
        .iter()
        .filter(|(v, _)| *v > 0.0)
        .map(|(v, df)| v * v / df)
        .sum();
    let mut df = if denom > 0.0 { se2 * se2 / denom } else { 1e9 };
    if let Some((total, sessions)) = between.and_then(|b| Some((b.total_sd_pct?, b.sessions))) {
        let floor = 2.0 * (total / 100.0).powi(2);
        if floor > se2 {
            se2 = floor;
            df = sessions as f64 - 1.0;
        }
    }
    (se2.sqrt(), df)
}

/// A change between two sessions.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Change {
    /// `exp(d) - 1`, percent.
    pub median_pct: f64,
    /// Its interval at the level asked for, percent.
    pub ci_pct: [f64; 2],
    /// The two-sided p-value of no change, on the same footing as the
    /// interval (calibration included): what a correction for the many
    /// rows of one comparison ([`super::outcome::discoveries`]) reads.
    pub p_value: f64,
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
///
/// With `calibration`, the standard error is multiplied by its factor:
/// this machine's sessions of one build land that much further apart
/// than the normal model above claims ([`Calibration`]).
/// Needs two positive values on each side.
pub fn change(
    a: &[f64],
    b: &[f64],
    level: f64,
    between: Option<&Between>,
    calibration: Option<&Calibration>,
) -> Option<Change> {
    let logs = |xs: &[f64]| -> Option<Vec<f64>> {
        let v: Vec<f64> = xs
            .iter()
            .filter(|x| **x > 0.0 && x.is_finite())
            .map(|x| x.ln())
            .collect();
        (v.len() >= 2).then_some(v)
    };
    let (la, lb) = (logs(a)?, logs(b)?);
    let own = |l: &[f64]| -> Term {
        let n = l.len() as f64;
        (variance(l) / n, n - 1.0)
    };
    let d = mean(&lb) - mean(&la);
    let (se, df) = standard_error([own(&la), own(&lb)], between);
    let se = se * calibration.map_or(1.0, |c| c.factor);
    let (half, p_value) = if se > 0.0 {
        let t = d.abs() / se;
        (
            t_quantile(0.5 + level / 2.0, df) * se,
            2.0 * (1.0 - t_cdf(t, df)),
        )
    } else {
        (0.0, if d == 0.0 { 1.0 } else { 0.0 })
    };
    Some(Change {
        median_pct: pct(d),
        ci_pct: [pct(d - half), pct(d + half)],
        p_value,
    })
}

/// One stored session of a series, as [`Calibration::learn`] reads it:
/// its value (e.g. a ratio to the reference, or ns/iter) and, where the
/// history kept its interval, the standard error of its log and that
/// estimate's degrees of freedom.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Stored {
    pub value: f64,
    pub own: Option<(f64, f64)>,
}

/// How much further apart this machine's sessions of one build land than
/// the normal model of [`change`] claims.
///
/// The between-session term is learned per series as a normal spread, but
/// a VM's sessions are not normal: now and then a whole session (dozens
/// of fresh processes) runs one engine several percent off against the
/// other, at three or more of its standard errors, and the next session
/// is back. One series' history rarely holds such a session, so its own
/// term cannot learn it; the machine's history as a whole does. Every
/// pair of stored sessions of one build is an A/A comparison the machine
/// already made, with a z-score under the model (its difference over the
/// standard error [`change`] would give it, from the sessions' own errors
/// and the term the rest of its series gives). Under the model those
/// z-scores are half-normal; the factor is the largest ratio of their
/// quantile to the half-normal's, over the tail from `level` out to where
/// the history still holds five pairs beyond, and at least 1. A standard
/// error widened by it keeps this machine's own A/A pairs inside every
/// interval and p-value of that tail as often as the level says, whatever
/// the shape of its tails (an empirical null, as Efron's, one level up);
/// the tail matters because a comparison of many rows decides at p-values
/// far below `1 - level` ([`super::outcome::discoveries`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Calibration {
    /// What every standard error across sessions is multiplied by (>= 1).
    pub factor: f64,
    /// Pairs of same-build sessions it was learned from.
    pub pairs: usize,
    /// Series (shape, arm, build, reference) they came from.
    pub series: usize,
    /// The most extreme two-sided level the factor was matched at.
    pub tail_level: f64,
}

/// The fewest pairs a calibration is learned from: five beyond the 95th
/// percentile, where its tail starts.
pub const CALIBRATION_MIN_PAIRS: usize = 100;

/// Pairs beyond the most extreme quantile a calibration matches.
const CALIBRATION_BEYOND: f64 = 5.0;

/// The newest sessions of a series a calibration reads: the machine as it
/// is now, and pairs that grow with the square of it.
pub const CALIBRATION_RECENT: usize = 24;

impl Calibration {
    /// From the stored sessions of every series of one kind on one
    /// machine (each series one build, oldest first); `None` with fewer
    /// than [`CALIBRATION_MIN_PAIRS`] pairs.
    pub fn learn(series: &[Vec<Stored>], level: f64) -> Option<Calibration> {
        let mut z = Vec::new();
        let mut used = 0;
        for s in series {
            let s: Vec<&Stored> = s
                .iter()
                .filter(|p| p.value > 0.0 && p.value.is_finite())
                .collect();
            let s = &s[s.len().saturating_sub(CALIBRATION_RECENT)..];
            // A pair needs the rest of its series to learn a term from.
            if s.len() < MIN_SESSIONS + 2 {
                continue;
            }
            used += 1;
            for i in 0..s.len() {
                for j in i + 1..s.len() {
                    let rest = s
                        .iter()
                        .enumerate()
                        .filter(|(k, _)| *k != i && *k != j)
                        .map(|(_, p)| p);
                    let values: Vec<f64> = rest.clone().map(|p| p.value).collect();
                    let own_se: Vec<f64> =
                        rest.map(|p| p.own.map_or(f64::NAN, |(se, _)| se)).collect();
                    let between = Between::learn_excess(&values, &own_se);
                    let own = |p: &Stored| p.own.map_or((0.0, 1.0), |(se, df)| (se * se, df));
                    let (se, df) = standard_error([own(s[i]), own(s[j])], between.as_ref());
                    let d = (s[j].value.ln() - s[i].value.ln()).abs();
                    if se > 0.0 {
                        z.push(half_normal_score(d / se, df));
                    }
                }
            }
        }
        if z.len() < CALIBRATION_MIN_PAIRS {
            return None;
        }
        z.sort_by(f64::total_cmp);
        let n = z.len() as f64;
        let (mut factor, mut q, mut tail_level) = (1.0f64, level, level);
        while (1.0 - q) * n >= CALIBRATION_BEYOND {
            let at = ((q * n).ceil() as usize).clamp(1, z.len()) - 1;
            factor = factor.max(z[at] / normal_quantile(0.5 + q / 2.0));
            tail_level = q;
            q = 1.0 - (1.0 - q) * 0.8;
        }
        Some(Calibration {
            factor,
            pairs: z.len(),
            series: used,
            tail_level,
        })
    }
}

/// A t statistic with `df` degrees of freedom as the half-normal score of
/// the same two-sided p-value, so that pairs of every df share one scale.
fn half_normal_score(t: f64, df: f64) -> f64 {
    let p = 2.0 * (1.0 - t_cdf(t, df));
    if p > 0.0 {
        normal_quantile(1.0 - p / 2.0)
    } else {
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::simulate::normal;

    #[test]
    fn a_sample_against_itself_is_no_change_and_a_shift_is_found() {
        let a = [10.0, 10.4, 9.8, 10.1, 10.2];
        let Change {
            median_pct: m,
            ci_pct: [lo, hi],
            ..
        } = change(&a, &a, 0.95, None, None).unwrap();
        assert_eq!(m, 0.0);
        // Symmetric around no change on the log scale.
        let log = |p: f64| (1.0 + p / 100.0).ln();
        assert!(
            lo < 0.0 && hi > 0.0 && (log(lo) + log(hi)).abs() < 1e-9,
            "{lo} {hi}"
        );
        // 10% slower, same spread: the interval holds +10% and excludes 0.
        let b: Vec<f64> = a.iter().map(|x| x * 1.1).collect();
        let Change {
            median_pct: m,
            ci_pct: [lo, hi],
            ..
        } = change(&a, &b, 0.95, None, None).unwrap();
        assert!((m - 10.0).abs() < 1e-9, "{m}");
        assert!(lo > 0.0 && lo < 10.0 && hi > 10.0, "{lo} {hi}");
        // Fewer than two values on a side: no interval.
        assert!(change(&a[..1], &a, 0.95, None, None).is_none());
    }

    #[test]
    fn the_between_session_term_widens_the_interval() {
        let a = [10.0, 10.1, 9.9, 10.05, 9.95, 10.0];
        let b: Vec<f64> = a.iter().map(|x| x * 1.10).collect();
        let tight = change(&a, &b, 0.95, None, None).unwrap().ci_pct;
        assert!(tight[0] > 5.0, "10% on 0.5% noise: {tight:?}");
        // Sessions of this series moved by about 8% (sd of logs).
        let history = [100.0, 108.0, 93.0, 101.0, 110.0, 95.0, 104.0];
        let between = Between::learn(&history).unwrap();
        assert_eq!(between.sessions, 7);
        assert!(!between.excess);
        assert!((6.0..8.0).contains(&between.sd_pct), "{between:?}");
        let Change {
            median_pct: m,
            ci_pct: wide,
            ..
        } = change(&a, &b, 0.95, Some(&between), None).unwrap();
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
        let alone = change(&tight, &apart, 0.95, Some(&no_floor), None)
            .unwrap()
            .ci_pct;
        assert!(alone[0] > 0.0, "3% on 0.1% own noise: {alone:?}");
        let floored = change(&tight, &apart, 0.95, Some(&b), None).unwrap().ci_pct;
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

    /// `n` stored sessions of `series` series: each session's log value is
    /// `tau` (between sessions) plus its own noise of standard error `se`,
    /// and every `every`-th session of a series (if any) is off by `jump`.
    fn machine(
        series: usize,
        n: usize,
        se: f64,
        tau: f64,
        jump: Option<(usize, f64)>,
    ) -> Vec<Vec<Stored>> {
        use rand::SeedableRng;
        let mut rng = rand::rngs::Xoshiro256PlusPlus::seed_from_u64(7);
        (0..series)
            .map(|k| {
                (0..n)
                    .map(|i| {
                        let off = match jump {
                            Some((every, j)) if (i + k) % every == 0 => j,
                            _ => 0.0,
                        };
                        let noise = se * normal(&mut rng) + tau * normal(&mut rng);
                        Stored {
                            value: (noise + off).exp(),
                            own: Some((se, 30.0)),
                        }
                    })
                    .collect()
            })
            .collect()
    }

    #[test]
    fn a_machine_whose_sessions_are_normal_needs_no_calibration() {
        let normal_machine = machine(12, 20, 0.005, 0.003, None);
        let c = Calibration::learn(&normal_machine, 0.95).unwrap();
        assert_eq!(c.series, 12);
        assert_eq!(c.pairs, 12 * 20 * 19 / 2);
        // The z-scores of the pairs are half-normal when the model is
        // right: their tail matches, up to the sampling of a few pairs.
        assert!(c.factor < 1.25, "{c:?}");
    }

    #[test]
    fn sessions_that_jump_now_and_then_widen_every_interval() {
        // One session in twenty runs 4% off: about 6 standard errors of a
        // difference, and a tenth of the pairs hold such a session, while
        // the rest of a series, which gives a pair its term, holds one at
        // most.
        let jumpy = machine(12, 20, 0.005, 0.003, Some((20, 0.04)));
        let c = Calibration::learn(&jumpy, 0.95).unwrap();
        assert!(c.factor > 1.5, "{c:?}");
        // Two ordinary sessions 3% apart (their epochs say +-0.5%): a change
        // by the series' own term, not one with the machine's calibration.
        let a = [1.0, 1.004, 0.996, 1.002, 0.998, 1.001];
        let b: Vec<f64> = a.iter().map(|x| x * 1.03).collect();
        let values: Vec<f64> = jumpy[0].iter().map(|s| s.value).collect();
        let se: Vec<f64> = jumpy[0].iter().map(|s| s.own.unwrap().0).collect();
        let between = Between::learn_excess(&values[1..10], &se[1..10]).unwrap();
        let own = change(&a, &b, 0.95, Some(&between), None).unwrap().ci_pct;
        assert!(own[0] > 0.0, "{own:?}");
        let calibrated = change(&a, &b, 0.95, Some(&between), Some(&c))
            .unwrap()
            .ci_pct;
        assert!(calibrated[0] < 0.0, "{calibrated:?} {c:?} {own:?}");
    }

    #[test]
    fn a_calibration_needs_enough_pairs_and_reads_recent_sessions() {
        // Four series of eight sessions: 112 pairs; three: 84, too few for
        // five beyond the 95th percentile.
        assert!(Calibration::learn(&machine(4, 8, 0.005, 0.003, None), 0.95).is_some());
        assert!(Calibration::learn(&machine(3, 8, 0.005, 0.003, None), 0.95).is_none());
        // Series too short to learn a term for a pair from are skipped.
        assert!(Calibration::learn(&machine(40, 4, 0.005, 0.003, None), 0.95).is_none());
        // A long series counts its newest CALIBRATION_RECENT sessions only.
        let c = Calibration::learn(&machine(1, 100, 0.005, 0.003, None), 0.95).unwrap();
        let n = CALIBRATION_RECENT;
        assert_eq!((c.pairs, c.series), (n * (n - 1) / 2, 1));
        // Values that are not times are left out, not counted as pairs.
        let mut broken = machine(1, 12, 0.005, 0.003, None).remove(0);
        broken[3].value = f64::NAN;
        broken[4].value = -1.0;
        let c = Calibration::learn(&[broken.clone(), broken.clone(), broken], 0.95).unwrap();
        assert_eq!(c.pairs, 3 * 10 * 9 / 2);
    }
}
