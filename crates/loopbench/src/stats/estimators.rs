//! Per-epoch estimators of a paired change, made for contention
//! (methodology rules 3 and 14).
//!
//! One epoch gives `(candidate, baseline)` pairs, one per round: the two
//! arms' reps that ran in the same round, in ns (or any time). An
//! [`Estimator`] turns them into one **log ratio** for the epoch; the
//! interval is then always taken *across* epochs, by the t interval of
//! [`super::epochs`] on the per-epoch estimates ([`across_epochs`]), so
//! every estimator keeps the layout component in its interval.
//!
//! Contention (another tenant, a core taken away, a frequency dip) only
//! ever adds time, and it adds it to one rep at a time. The candidates:
//!
//! - [`Estimator::Median`]: the median of the per-round log ratios, what
//!   [`super::epochs`] uses today. Robust to a disturbed round, but with
//!   8 rounds an epoch it uses little of the data (the median's efficiency
//!   under normal noise is 64%).
//! - [`Estimator::Mean`]: the mean of the per-round log ratios. Not robust
//!   (one preempted rep moves it); the efficient reference.
//! - [`Estimator::HodgesLehmann`]: the median of the Walsh averages
//!   `(y_i + y_j) / 2, i <= j` of the per-round log ratios (Hodges and
//!   Lehmann 1963). 95% efficient under normal noise and still robust
//!   (breakdown point 29%: one or two disturbed rounds of eight do not
//!   carry it), so it should beat the median when most rounds are clean.
//! - [`Estimator::Trimmed`]: the mean of the per-round log ratios with
//!   `p`% cut from each end (`trim20`: one of eight at each end).
//! - [`Estimator::Min`]: the ratio of the arms' per-epoch minima, the least
//!   disturbed rep of each (rule 3 quotes minima). Unpaired: it gives up
//!   the pairing of rounds for immunity to any added time.
//! - [`Estimator::Quantile`]: the ratio of the arms' `p`-th percentiles
//!   (linear interpolation between order statistics, "type 7" of Hyndman
//!   and Fan 1996): a low quantile sits between the minimum's immunity and
//!   the median's stability. `q50` is the ratio of the arms' medians, which
//!   against [`Estimator::Median`] shows what pairing by round buys.
//!
//! Every estimator is equivariant (multiplying the candidate's reps by `c`
//! adds exactly `ln c`) and antisymmetric (swapping the arms negates it),
//! so a null control that is a second copy of the baseline has an expected
//! estimate of exactly zero, and an effect injected into the null's reps is
//! known exactly; [`crate::replay`] measures each estimator's coverage and
//! power that way on recorded noise.

use std::fmt;
use std::str::FromStr;

use super::dist::t_interval;
use super::epochs::log_ratios;
use super::median;

/// One way to reduce an epoch's paired reps to a log ratio.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Estimator {
    /// Median of per-round log ratios (today's default).
    Median,
    /// Mean of per-round log ratios.
    Mean,
    /// Median of the Walsh averages of per-round log ratios.
    HodgesLehmann,
    /// Mean of per-round log ratios, this percentage (1-49) cut from each end.
    Trimmed(u8),
    /// Ratio of the arms' minima.
    Min,
    /// Ratio of the arms' percentiles (1-99).
    Quantile(u8),
}

/// The estimator [`super::epochs`] uses (and `run` reports) today.
pub const DEFAULT: Estimator = Estimator::Median;

/// The estimators `--estimators all` evaluates, in table order.
pub const ALL: &[Estimator] = &[
    Estimator::Median,
    Estimator::Mean,
    Estimator::HodgesLehmann,
    Estimator::Trimmed(20),
    Estimator::Min,
    Estimator::Quantile(10),
    Estimator::Quantile(25),
    Estimator::Quantile(50),
];

/// The names [`FromStr`] accepts, for its error message.
pub const VALID: &str = "median, mean, hodges_lehmann (or hl), trimNN (1-49, e.g. trim20), min, qNN (1-99, e.g. q10, q25)";

/// A name [`FromStr`] does not know.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown estimator `{name}` (valid: {VALID})")]
pub struct UnknownEstimator {
    pub name: String,
}

impl Estimator {
    /// The name the command line takes and the tables and JSON print.
    pub fn name(&self) -> String {
        match self {
            Estimator::Median => "median".into(),
            Estimator::Mean => "mean".into(),
            Estimator::HodgesLehmann => "hodges_lehmann".into(),
            Estimator::Trimmed(p) => format!("trim{p}"),
            Estimator::Min => "min".into(),
            Estimator::Quantile(p) => format!("q{p}"),
        }
    }

    /// The epoch's log ratio `ln(candidate / baseline)` by this estimator,
    /// from its `(candidate, baseline)` pairs, one per round. Pairs with a
    /// value that is not a positive finite time are left out; `None` when
    /// none is left.
    pub fn estimate(&self, pairs: &[(f64, f64)]) -> Option<f64> {
        let ok = |x: f64| x.is_finite() && x > 0.0;
        let (cand, base): (Vec<f64>, Vec<f64>) = pairs
            .iter()
            .copied()
            .filter(|&(c, b)| ok(c) && ok(b))
            .unzip();
        if cand.is_empty() {
            return None;
        }
        let per_arm = |stat: &dyn Fn(&mut [f64]) -> f64| {
            let (mut c, mut b) = (cand.clone(), base.clone());
            (stat(&mut c) / stat(&mut b)).ln()
        };
        Some(match *self {
            Estimator::Median => median(&log_ratios(&cand, &base)),
            Estimator::Mean => mean(&log_ratios(&cand, &base)),
            Estimator::HodgesLehmann => hodges_lehmann(&log_ratios(&cand, &base)),
            Estimator::Trimmed(p) => trimmed_mean(&mut log_ratios(&cand, &base), p),
            Estimator::Min => per_arm(&|xs| super::min(xs)),
            Estimator::Quantile(p) => per_arm(&|xs| quantile(xs, f64::from(p) / 100.0)),
        })
    }
}

impl fmt::Display for Estimator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

impl FromStr for Estimator {
    type Err = UnknownEstimator;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let unknown = || UnknownEstimator {
            name: s.to_string(),
        };
        let pct = |digits: &str, max: u8| -> Option<u8> {
            // Digits only: no sign, no `+`, no spaces.
            if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            digits.parse::<u8>().ok().filter(|p| (1..=max).contains(p))
        };
        match s {
            "median" => Ok(Estimator::Median),
            "mean" => Ok(Estimator::Mean),
            "hodges_lehmann" | "hl" => Ok(Estimator::HodgesLehmann),
            "min" => Ok(Estimator::Min),
            _ => {
                if let Some(d) = s.strip_prefix("trim") {
                    pct(d, 49).map(Estimator::Trimmed).ok_or_else(unknown)
                } else if let Some(d) = s.strip_prefix('q') {
                    pct(d, 99).map(Estimator::Quantile).ok_or_else(unknown)
                } else {
                    Err(unknown())
                }
            }
        }
    }
}

/// `all`, or a comma-separated list of names (duplicates dropped, order
/// kept).
pub fn parse_list(s: &str) -> Result<Vec<Estimator>, UnknownEstimator> {
    if s.trim() == "all" {
        return Ok(ALL.to_vec());
    }
    let mut out = Vec::new();
    for name in s.split(',').map(str::trim) {
        let e: Estimator = name.parse()?;
        if !out.contains(&e) {
            out.push(e);
        }
    }
    Ok(out)
}

/// A change across epochs from per-epoch log-ratio estimates: their mean,
/// and the t interval of [`super::epochs`] around it, all in logs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Across {
    pub estimate: f64,
    pub lo: f64,
    pub hi: f64,
}

/// The mean of the per-epoch `estimates` with its t interval at `level`
/// (`E - 1` degrees of freedom): the interval [`super::epochs`] builds on
/// epoch medians, for any estimator. `None` for fewer than two epochs.
pub fn across_epochs(estimates: &[f64], level: f64) -> Option<Across> {
    if estimates.len() < 2 {
        return None;
    }
    let (lo, hi) = t_interval(estimates, level);
    Some(Across {
        estimate: mean(estimates),
        lo,
        hi,
    })
}

fn mean(xs: &[f64]) -> f64 {
    xs.iter().sum::<f64>() / xs.len() as f64
}

/// The `p` quantile of non-empty `xs` (sorted in place), linear
/// interpolation between order statistics (Hyndman and Fan's type 7, R's
/// and NumPy's default): position `(n - 1) p`.
fn quantile(xs: &mut [f64], p: f64) -> f64 {
    xs.sort_by(f64::total_cmp);
    let h = (xs.len() - 1) as f64 * p;
    let i = h.floor() as usize;
    match xs.get(i + 1) {
        Some(next) => xs[i] + (h - i as f64) * (next - xs[i]),
        None => xs[i],
    }
}

/// The mean of non-empty `ys` (sorted in place) with `floor(n p / 100)`
/// values cut from each end, always leaving one or two.
fn trimmed_mean(ys: &mut [f64], p: u8) -> f64 {
    ys.sort_by(f64::total_cmp);
    let n = ys.len();
    let cut = (n * usize::from(p) / 100).min((n - 1) / 2);
    mean(&ys[cut..n - cut])
}

/// The median of the `n (n + 1) / 2` Walsh averages of non-empty `ys`.
fn hodges_lehmann(ys: &[f64]) -> f64 {
    let mut walsh = Vec::with_capacity(ys.len() * (ys.len() + 1) / 2);
    for (i, a) in ys.iter().enumerate() {
        for b in &ys[i..] {
            walsh.push((a + b) / 2.0);
        }
    }
    median(&walsh)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pairs whose per-round ratios are `exp(ys)`, on a baseline of 100.
    fn pairs(ys: &[f64]) -> Vec<(f64, f64)> {
        ys.iter().map(|y| (100.0 * y.exp(), 100.0)).collect()
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-12
    }

    #[test]
    fn median_and_mean_of_log_ratios() {
        // Ratios 2, 1, 4, 1 (cand, base): logs ln2, 0, ln4, 0.
        let p = [(2.0, 1.0), (3.0, 3.0), (8.0, 2.0), (5.0, 5.0)];
        let ln2 = 2f64.ln();
        assert!(close(Estimator::Median.estimate(&p).unwrap(), ln2 / 2.0));
        assert!(close(
            Estimator::Mean.estimate(&p).unwrap(),
            3.0 * ln2 / 4.0
        ));
        // Odd count: the middle one.
        let p = pairs(&[0.3, -0.1, 0.05]);
        assert!(close(Estimator::Median.estimate(&p).unwrap(), 0.05));
        assert!(close(Estimator::Mean.estimate(&p).unwrap(), 0.25 / 3.0));
    }

    /// The median estimator is the per-epoch statistic of `stats::epochs`:
    /// its t interval on epoch medians is the interval `compare` reports.
    /// A session's comparison by any estimator is that estimator per
    /// epoch and the t interval across epochs, exactly what a replay
    /// checks; the median is what sessions used before estimators could
    /// be chosen.
    #[test]
    fn a_session_compares_by_what_replay_checks() {
        let epochs: Vec<Vec<(f64, f64)>> = vec![
            pairs(&[0.01, 0.03, -0.02, 0.05, 0.0]),
            pairs(&[0.02, 0.04, 0.01]),
            pairs(&[-0.01, 0.0, 0.02, 0.01]),
        ];
        let (c, b): (Vec<Vec<f64>>, Vec<Vec<f64>>) =
            epochs.iter().map(|e| e.iter().copied().unzip()).unzip();
        let pct = |y: f64| (y.exp() - 1.0) * 100.0;
        let mut estimates = Vec::new();
        for k in ALL {
            let ests: Vec<f64> = epochs.iter().map(|e| k.estimate(e).unwrap()).collect();
            let a = across_epochs(&ests, 0.95).unwrap();
            let change = crate::stats::compare_by(&c, &b, None, None, 0.95, *k)
                .unwrap()
                .change;
            assert!((pct(a.estimate) - change.median_pct).abs() < 1e-9, "{k}");
            assert!((pct(a.lo) - change.ci_pct[0]).abs() < 1e-9, "{k}");
            assert!((pct(a.hi) - change.ci_pct[1]).abs() < 1e-9, "{k}");
            estimates.push(change.median_pct);
        }
        // The comparison sessions made before is the median's.
        let before = crate::stats::compare(&c, &b, None, 0.95).unwrap().change;
        assert_eq!(before.median_pct, estimates[0]);
        // The estimators are not one number in eight names.
        estimates.sort_by(f64::total_cmp);
        estimates.dedup();
        assert!(estimates.len() >= 5, "{estimates:?}");
    }

    #[test]
    fn hodges_lehmann_is_the_median_of_walsh_averages() {
        // ys 0, 1, 5: Walsh averages 0, 0.5, 2.5, 1, 3, 5 -> median (1 + 2.5) / 2.
        let p = pairs(&[0.0, 1.0, 5.0]);
        assert!(close(Estimator::HodgesLehmann.estimate(&p).unwrap(), 1.75));
        // One value: itself.
        assert!(close(
            Estimator::HodgesLehmann.estimate(&pairs(&[0.2])).unwrap(),
            0.2
        ));
        // One wild round of eight does not carry it far.
        let p = pairs(&[0.0, 0.01, -0.01, 0.02, 0.0, 0.01, -0.01, 0.9]);
        let hl = Estimator::HodgesLehmann.estimate(&p).unwrap();
        assert!(hl < 0.02, "{hl}");
        assert!(Estimator::Mean.estimate(&p).unwrap() > 0.1);
    }

    #[test]
    fn trimmed_mean_cuts_each_end() {
        // 8 rounds, 20%: floor(1.6) = 1 cut from each end.
        let ys = [0.9, -0.5, 0.01, 0.02, 0.03, 0.04, 0.05, 0.06];
        let t = Estimator::Trimmed(20).estimate(&pairs(&ys)).unwrap();
        assert!(close(t, 0.21 / 6.0), "{t}");
        // 25%: 2 from each end.
        let t = Estimator::Trimmed(25).estimate(&pairs(&ys)).unwrap();
        assert!(close(t, (0.02 + 0.03 + 0.04 + 0.05) / 4.0), "{t}");
        // Two values: never cut to nothing.
        let t = Estimator::Trimmed(49)
            .estimate(&pairs(&[0.1, 0.3]))
            .unwrap();
        assert!(close(t, 0.2), "{t}");
    }

    #[test]
    fn minima_and_quantiles_are_per_arm() {
        // Candidate 10, 12, 30, 11; baseline 8, 20, 9, 40.
        let p = [(10.0, 8.0), (12.0, 20.0), (30.0, 9.0), (11.0, 40.0)];
        assert!(close(
            Estimator::Min.estimate(&p).unwrap(),
            (10.0f64 / 8.0).ln()
        ));
        // q25 of 4 values: position 0.75: candidate 10 + 0.75 (11 - 10),
        // baseline 8 + 0.75 (9 - 8).
        assert!(close(
            Estimator::Quantile(25).estimate(&p).unwrap(),
            (10.75f64 / 8.75).ln()
        ));
        // q50 is the ratio of the arms' medians: 11.5 / 14.5.
        assert!(close(
            Estimator::Quantile(50).estimate(&p).unwrap(),
            (11.5f64 / 14.5).ln()
        ));
        // q99 of 4: position 2.97.
        let q = Estimator::Quantile(99).estimate(&p).unwrap();
        assert!(close(
            q,
            ((12.0f64 + 0.97 * 18.0) / (20.0 + 0.97 * 20.0)).ln()
        ));
    }

    /// Scaling the candidate by c adds ln c; swapping the arms negates.
    #[test]
    fn every_estimator_is_equivariant_and_antisymmetric() {
        let p = [
            (10.0, 8.0),
            (12.0, 20.0),
            (30.0, 9.0),
            (11.0, 40.0),
            (9.5, 9.0),
        ];
        let swapped: Vec<(f64, f64)> = p.iter().map(|&(c, b)| (b, c)).collect();
        let scaled: Vec<(f64, f64)> = p.iter().map(|&(c, b)| (c * 1.05, b)).collect();
        for e in ALL
            .iter()
            .chain(&[Estimator::Trimmed(10), Estimator::Quantile(90)])
        {
            let x = e.estimate(&p).unwrap();
            let s = e.estimate(&swapped).unwrap();
            let k = e.estimate(&scaled).unwrap();
            assert!((x + s).abs() < 1e-12, "{e}: {x} vs swapped {s}");
            assert!((k - x - 1.05f64.ln()).abs() < 1e-12, "{e}: {x} scaled {k}");
        }
    }

    #[test]
    fn bad_times_are_left_out_and_empty_is_none() {
        let p = [(10.0, 8.0), (0.0, 5.0), (f64::NAN, 1.0), (7.0, -1.0)];
        for e in ALL {
            let x = e.estimate(&p).unwrap();
            assert!(close(x, (10.0f64 / 8.0).ln()), "{e}: {x}");
            assert_eq!(e.estimate(&[]), None);
            assert_eq!(e.estimate(&p[1..]), None);
        }
    }

    #[test]
    fn names_parse_back_and_unknown_names_list_the_valid_ones() {
        for e in ALL {
            assert_eq!(e.name().parse::<Estimator>().unwrap(), *e);
        }
        assert_eq!("hl".parse::<Estimator>().unwrap(), Estimator::HodgesLehmann);
        assert_eq!("trim5".parse::<Estimator>().unwrap(), Estimator::Trimmed(5));
        for bad in [
            "", "max", "q0", "q100", "trim50", "trim", "q+5", "trim-1", "Median",
        ] {
            let err = bad.parse::<Estimator>().unwrap_err().to_string();
            assert_eq!(
                err,
                format!("unknown estimator `{bad}` (valid: {VALID})"),
                "{bad}"
            );
            assert!(!err.contains('\n'));
        }
        assert_eq!(parse_list("all").unwrap(), ALL);
        assert_eq!(
            parse_list("min, q10,min").unwrap(),
            [Estimator::Min, Estimator::Quantile(10)]
        );
        assert!(parse_list("min,nope").is_err());
    }

    #[test]
    fn across_epochs_is_the_t_interval() {
        // 1, 2, 3: mean 2, s = 1, t(2, 0.975) = 4.302653.
        let a = across_epochs(&[1.0, 2.0, 3.0], 0.95).unwrap();
        assert!(close(a.estimate, 2.0));
        let half = 4.302_652_729_7 / 3f64.sqrt();
        assert!((a.hi - 2.0 - half).abs() < 1e-6 && (2.0 - a.lo - half).abs() < 1e-6);
        assert_eq!(across_epochs(&[1.0], 0.95), None);
    }
}
