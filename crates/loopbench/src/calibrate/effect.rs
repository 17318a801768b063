//! Known effects by construction: `x`% more loop iterations, exact in
//! hundredths of a percent, so the truth of every calibration row is known.

use crate::arm::Iters;
use std::fmt;
use std::str::FromStr;

/// Effects are exact in hundredths of a percent: `BP` of them make 100%.
const BP: u64 = 10_000;
/// The largest effect accepted (1000%, i.e. 11 times the work).
const MAX_BP: u32 = 100_000;

/// A known effect: `bp` hundredths of a percent more loop iterations.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Effect {
    bp: u32,
}

impl Effect {
    pub const NULL: Effect = Effect { bp: 0 };

    pub fn from_bp(bp: u32) -> Self {
        Effect { bp }
    }
    pub fn bp(self) -> u32 {
        self.bp
    }
    pub fn pct(self) -> f64 {
        f64::from(self.bp) / 100.0
    }
    pub fn is_null(self) -> bool {
        self.bp == 0
    }

    /// The smallest base count whose scaled count is exact and, like the
    /// base, a multiple of `per` (the shape's iteration group).
    pub fn unit(self, per: u64) -> u64 {
        let per = per.max(1);
        let step = BP / gcd(u64::from(self.bp), BP);
        lcm(per, per * step)
    }

    /// `base * (1 + x/100)`, or `None` when that is not an integer.
    pub fn scale(self, base: u64) -> Option<u64> {
        let extra = u128::from(base) * u128::from(self.bp);
        (extra % u128::from(BP) == 0).then(|| base + (extra / u128::from(BP)) as u64)
    }
}

/// An effect size that does not parse.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum EffectError {
    #[error(
        "bad effect `{text}`: expected a percentage with at most two decimals, e.g. 0.5, 1 or 2.25"
    )]
    NotAPercentage { text: String },
    #[error("bad effect `{text}`: at most {max_percent}%")]
    TooLarge { text: String, max_percent: u32 },
}

crate::converts_above!(EffectError);

impl FromStr for Effect {
    type Err = EffectError;
    /// `0`, `0.5`, `1`, `2.25`, `5%`: a percentage with at most two decimals.
    fn from_str(s: &str) -> Result<Self, EffectError> {
        let t = s.trim().trim_end_matches('%').trim_start_matches('+');
        let bad = || EffectError::NotAPercentage {
            text: s.to_string(),
        };
        let (int, frac) = t.split_once('.').unwrap_or((t, ""));
        if int.is_empty() && frac.is_empty()
            || frac.len() > 2
            || !int.chars().all(|c| c.is_ascii_digit())
            || !frac.chars().all(|c| c.is_ascii_digit())
        {
            return Err(bad());
        }
        let int: u64 = if int.is_empty() {
            0
        } else {
            int.parse().map_err(|_| bad())?
        };
        let frac: u64 = format!("{frac:0<2}").parse().map_err(|_| bad())?;
        let bp = int
            .checked_mul(100)
            .and_then(|i| i.checked_add(frac))
            .ok_or_else(bad)?;
        if bp > u64::from(MAX_BP) {
            return Err(EffectError::TooLarge {
                text: s.to_string(),
                max_percent: MAX_BP / 100,
            });
        }
        Ok(Effect { bp: bp as u32 })
    }
}

impl fmt::Display for Effect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (i, r) = (self.bp / 100, self.bp % 100);
        match r {
            0 => write!(f, "+{i}%"),
            r if r % 10 == 0 => write!(f, "+{i}.{}%", r / 10),
            r => write!(f, "+{i}.{r:02}%"),
        }
    }
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

pub(crate) fn lcm(a: u64, b: u64) -> u64 {
    a / gcd(a, b) * b
}

impl Effect {
    /// The iteration override that runs this effect: exactly `1 + x/100`
    /// times the shape's count.
    pub fn iters(self) -> Iters {
        Iters::Ratio {
            num: BP + u64::from(self.bp),
            den: BP,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn effects_parse_exactly() {
        assert_eq!("0.5".parse::<Effect>().unwrap().bp(), 50);
        assert_eq!("1".parse::<Effect>().unwrap().bp(), 100);
        assert_eq!("+2.25%".parse::<Effect>().unwrap().bp(), 225);
        assert_eq!(".5".parse::<Effect>().unwrap().bp(), 50);
        assert_eq!("0".parse::<Effect>().unwrap(), Effect::NULL);
        for bad in ["", "x", "0.125", "-1", "1.2.3", "2000", "."] {
            assert!(bad.parse::<Effect>().is_err(), "{bad}");
        }
        assert_eq!(Effect::from_bp(50).to_string(), "+0.5%");
        assert_eq!(Effect::from_bp(225).to_string(), "+2.25%");
        assert_eq!(Effect::from_bp(500).to_string(), "+5%");
    }

    #[test]
    fn scaling_is_exact_or_refused() {
        let half = Effect::from_bp(50);
        assert_eq!(half.unit(1), 200);
        assert_eq!(half.scale(200), Some(201));
        assert_eq!(half.scale(100), None);
        assert_eq!(Effect::from_bp(100).scale(524_200), Some(529_442));
        assert_eq!(Effect::NULL.scale(7), Some(7));
        // A shape whose counts repeat every 8 iterations: both counts stay multiples of 8.
        let u = Effect::from_bp(100).unit(8);
        assert_eq!(u % 8, 0);
        assert_eq!(Effect::from_bp(100).scale(u).unwrap() % 8, 0);
    }
}
