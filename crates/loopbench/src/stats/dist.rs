//! Distribution functions: enough of the normal, Student t and chi-square
//! for the intervals and the layout test of [`super::epochs`].
//!
//! Everything rests on the log-gamma function (Lanczos, g = 7, n = 9) and
//! the regularised incomplete gamma and beta functions by series and
//! continued fractions (Numerical Recipes, 3rd ed., §6.1-6.4). Written out
//! here rather than taken from a crate because the harness needs a handful
//! of quantiles and tail probabilities, each checked against published
//! tables in the tests below.

pub(super) fn ln_gamma(x: f64) -> f64 {
    // Lanczos approximation, g = 7, n = 9.
    const C: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        let pi = std::f64::consts::PI;
        return (pi / (pi * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut a = C[0];
    let t = x + 7.5;
    for (i, c) in C.iter().enumerate().skip(1) {
        a += c / (x + i as f64);
    }
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + a.ln()
}

/// Regularised lower incomplete gamma P(a, x).
fn gamma_p(a: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x < a + 1.0 {
        let mut sum = 1.0 / a;
        let mut del = sum;
        let mut ap = a;
        for _ in 0..1000 {
            ap += 1.0;
            del *= x / ap;
            sum += del;
            if del.abs() < sum.abs() * 1e-15 {
                break;
            }
        }
        sum * (-x + a * x.ln() - ln_gamma(a)).exp()
    } else {
        1.0 - gamma_q_cf(a, x)
    }
}

/// Upper incomplete gamma Q(a, x) by Lentz's continued fraction (x >= a+1).
fn gamma_q_cf(a: f64, x: f64) -> f64 {
    let tiny = 1e-300;
    let mut b = x + 1.0 - a;
    let mut c = 1.0 / tiny;
    let mut d = 1.0 / b;
    let mut h = d;
    for i in 1..1000 {
        let an = -(i as f64) * (i as f64 - a);
        b += 2.0;
        d = an * d + b;
        if d.abs() < tiny {
            d = tiny;
        }
        c = b + an / c;
        if c.abs() < tiny {
            c = tiny;
        }
        d = 1.0 / d;
        let del = d * c;
        h *= del;
        if (del - 1.0).abs() < 1e-15 {
            break;
        }
    }
    (-x + a * x.ln() - ln_gamma(a)).exp() * h
}

/// P(chi-square(df) >= x).
pub fn chi2_sf(x: f64, df: f64) -> f64 {
    if x <= 0.0 {
        return 1.0;
    }
    let (a, h) = (df / 2.0, x / 2.0);
    if h < a + 1.0 {
        1.0 - gamma_p(a, h)
    } else {
        gamma_q_cf(a, h)
    }
}

/// Standard normal CDF.
pub fn normal_cdf(z: f64) -> f64 {
    let p = gamma_p(0.5, z * z / 2.0) / 2.0; // erf(|z|/sqrt 2) / 2
    if z >= 0.0 {
        0.5 + p
    } else {
        0.5 - p
    }
}

/// Standard normal quantile (Acklam's rational approximation, relative
/// error below 1.2e-9).
pub fn normal_quantile(p: f64) -> f64 {
    const A: [f64; 6] = [
        -3.969_683_028_665_376e1,
        2.209_460_984_245_205e2,
        -2.759_285_104_469_687e2,
        1.383_577_518_672_69e2,
        -3.066_479_806_614_716e1,
        2.506_628_277_459_239,
    ];
    const B: [f64; 5] = [
        -5.447_609_879_822_406e1,
        1.615_858_368_580_409e2,
        -1.556_989_798_598_866e2,
        6.680_131_188_771_972e1,
        -1.328_068_155_288_572e1,
    ];
    const C: [f64; 6] = [
        -7.784_894_002_430_293e-3,
        -3.223_964_580_411_365e-1,
        -2.400_758_277_161_838,
        -2.549_732_539_343_734,
        4.374_664_141_464_968,
        2.938_163_982_698_783,
    ];
    const D: [f64; 4] = [
        7.784_695_709_041_462e-3,
        3.224_671_290_700_398e-1,
        2.445_134_137_142_996,
        3.754_408_661_907_416,
    ];
    if p <= 0.0 {
        return f64::NEG_INFINITY;
    }
    if p >= 1.0 {
        return f64::INFINITY;
    }
    let pl = 0.024_25;
    if p < pl {
        let q = (-2.0 * p.ln()).sqrt();
        (((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5])
            / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    } else if p <= 1.0 - pl {
        let q = p - 0.5;
        let r = q * q;
        (((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * q
            / (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1.0)
    } else {
        -normal_quantile(1.0 - p)
    }
}

/// Regularised incomplete beta I_x(a, b) (continued fraction).
fn beta_inc(a: f64, b: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let front =
        (ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * x.ln() + b * (1.0 - x).ln()).exp();
    if x < (a + 1.0) / (a + b + 2.0) {
        front * beta_cf(a, b, x) / a
    } else {
        1.0 - front * beta_cf(b, a, 1.0 - x) / b
    }
}

fn beta_cf(a: f64, b: f64, x: f64) -> f64 {
    let tiny = 1e-300;
    let (qab, qap, qam) = (a + b, a + 1.0, a - 1.0);
    let mut c = 1.0;
    let mut d = 1.0 - qab * x / qap;
    if d.abs() < tiny {
        d = tiny;
    }
    d = 1.0 / d;
    let mut h = d;
    for m in 1..1000 {
        let m = m as f64;
        let m2 = 2.0 * m;
        let aa = m * (b - m) * x / ((qam + m2) * (a + m2));
        d = 1.0 + aa * d;
        if d.abs() < tiny {
            d = tiny;
        }
        c = 1.0 + aa / c;
        if c.abs() < tiny {
            c = tiny;
        }
        d = 1.0 / d;
        h *= d * c;
        let aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
        d = 1.0 + aa * d;
        if d.abs() < tiny {
            d = tiny;
        }
        c = 1.0 + aa / c;
        if c.abs() < tiny {
            c = tiny;
        }
        d = 1.0 / d;
        let del = d * c;
        h *= del;
        if (del - 1.0).abs() < 1e-15 {
            break;
        }
    }
    h
}

/// Student t CDF with `df` degrees of freedom.
pub fn t_cdf(t: f64, df: f64) -> f64 {
    let tail = 0.5 * beta_inc(df / 2.0, 0.5, df / (df + t * t));
    if t >= 0.0 {
        1.0 - tail
    } else {
        tail
    }
}

/// Student t quantile (bisection on the CDF; plenty fast for a few calls).
pub fn t_quantile(p: f64, df: f64) -> f64 {
    if p == 0.5 {
        return 0.0;
    }
    if p < 0.5 {
        return -t_quantile(1.0 - p, df);
    }
    invert_cdf(|x| t_cdf(x, df), p, 1.0)
}

/// The `x >= 0` where the increasing `cdf` reaches `p`: doubling from
/// `start`, then bisection; infinite past 1e12.
fn invert_cdf(cdf: impl Fn(f64) -> f64, p: f64, start: f64) -> f64 {
    let (mut lo, mut hi) = (0.0, start);
    while cdf(hi) < p {
        hi *= 2.0;
        if hi > 1e12 {
            return f64::INFINITY;
        }
    }
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if cdf(mid) < p {
            lo = mid;
        } else {
            hi = mid;
        }
        if hi - lo < 1e-12 * hi.max(1.0) {
            break;
        }
    }
    0.5 * (lo + hi)
}

/// The `p` quantile of chi-square(df).
pub fn chi2_quantile(p: f64, df: f64) -> f64 {
    invert_cdf(|x| 1.0 - chi2_sf(x, df), p, df.max(1.0))
}

/// Mean of a non-empty slice.
pub fn mean(xs: &[f64]) -> f64 {
    xs.iter().sum::<f64>() / xs.len() as f64
}

/// Sample variance (divisor n - 1); 0 for fewer than two values.
pub fn variance(xs: &[f64]) -> f64 {
    if xs.len() < 2 {
        return 0.0;
    }
    let m = mean(xs);
    xs.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (xs.len() - 1) as f64
}

/// `mean +- t(n-1, (1+level)/2) s / sqrt(n)` (n >= 2).
pub fn t_interval(xs: &[f64], level: f64) -> (f64, f64) {
    let n = xs.len() as f64;
    let m = mean(xs);
    let half = t_quantile(0.5 + level / 2.0, n - 1.0) * (variance(xs) / n).sqrt();
    (m - half, m + half)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distribution_functions() {
        assert!((normal_quantile(0.975) - 1.959_963_985).abs() < 1e-8);
        assert!((normal_cdf(1.959_963_985) - 0.975).abs() < 1e-8);
        assert!((normal_cdf(-1.0) - 0.158_655_254).abs() < 1e-8);
        assert!((t_quantile(0.975, 9.0) - 2.262_157_163).abs() < 1e-7);
        assert!((t_quantile(0.975, 1.0) - 12.706_204_736).abs() < 1e-6);
        assert!((t_quantile(0.025, 4.0) + 2.776_445_105).abs() < 1e-7);
        assert!((chi2_sf(21.665_994, 9.0) - 0.01).abs() < 1e-6);
        assert!((chi2_sf(3.841_459, 1.0) - 0.05).abs() < 1e-6);
        assert!((chi2_sf(2.0, 2.0) - (-1.0f64).exp()).abs() < 1e-10);
        assert!((chi2_quantile(0.99, 9.0) - 21.665_994).abs() < 1e-5);
        assert!((chi2_quantile(0.95, 1.0) - 3.841_459).abs() < 1e-5);
        assert!((chi2_quantile(0.025, 7.0) - 1.689_869).abs() < 1e-5);
    }
}
