//! Sizes on the command line (`8m`, `64k`, `1g`, `4096`) and back, and
//! the numbers every report prints.
//!
//! One formatter for measured values ([`significant`]) and one for changes
//! ([`percent`], [`interval`]), so the terminal table, the Markdown and the
//! HTML print the same number the same way.

use thiserror::Error;

/// The longest time a saved session or per-rep file may hold, per
/// iteration or per rep: about 11.6 days. What is read back beyond it
/// (or below 0, or not finite) is refused, never printed.
pub const MAX_NS: f64 = 1e15;

/// A size on the command line that loopbench cannot use.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum SizeError {
    #[error("bad size `{text}`: expected e.g. 8m, 64k, 1g or 4096")]
    NotASize { text: String },
    #[error("bad size `{text}`: must be positive and fit in 64 bits")]
    OutOfRange { text: String },
    #[error("bad --bytes `{text}`: the working set must be a power of two of at least 64k (shapes mask addresses with bytes - 1)")]
    WorkingSet { text: String },
}

/// Parse a byte size: a number with an optional k/m/g suffix (binary units).
pub fn parse_bytes(s: &str) -> Result<u64, SizeError> {
    let t = s.trim().to_ascii_lowercase();
    let t = t
        .strip_suffix("ib")
        .or_else(|| t.strip_suffix('b'))
        .unwrap_or(&t);
    let (num, mult) = match t.chars().last() {
        Some('k') => (&t[..t.len() - 1], 1u64 << 10),
        Some('m') => (&t[..t.len() - 1], 1 << 20),
        Some('g') => (&t[..t.len() - 1], 1 << 30),
        _ => (t, 1),
    };
    let n: u64 = num.trim().parse().map_err(|_| SizeError::NotASize {
        text: s.to_string(),
    })?;
    n.checked_mul(mult)
        .filter(|&b| b > 0)
        .ok_or_else(|| SizeError::OutOfRange {
            text: s.to_string(),
        })
}

/// Validate a working-set size: a power of two, at least 64 KiB.
pub fn working_set(s: &str) -> Result<u64, SizeError> {
    let b = parse_bytes(s)?;
    if !b.is_power_of_two() || b < 65536 {
        return Err(SizeError::WorkingSet {
            text: s.to_string(),
        });
    }
    Ok(b)
}

/// A size in its largest exact unit; a size that is not a whole number of
/// any unit above its remainder is a sum (`4 GiB + 64 KiB`), so a limit
/// and what exceeds it read in the same unit.
pub fn format_bytes(b: u64) -> String {
    const GIB: u64 = 1 << 30;
    if b > GIB && !b.is_multiple_of(GIB) && b.is_multiple_of(1 << 10) {
        return format!(
            "{} + {}",
            format_bytes(b / GIB * GIB),
            format_bytes(b % GIB)
        );
    }
    match b {
        b if b >= 1 << 30 && b % (1 << 30) == 0 => format!("{} GiB", b >> 30),
        b if b >= 1 << 20 && b % (1 << 20) == 0 => format!("{} MiB", b >> 20),
        b if b >= 1 << 10 && b % (1 << 10) == 0 => format!("{} KiB", b >> 10),
        b if b >= 1 << 30 => format!("{:.2} GiB", b as f64 / (1u64 << 30) as f64),
        b if b >= 1 << 20 => format!("{:.2} MiB", b as f64 / (1u64 << 20) as f64),
        b if b >= 1 << 10 => format!("{:.2} KiB", b as f64 / (1u64 << 10) as f64),
        b => format!("{b} B"),
    }
}

/// A measured value (ns, ops, bytes, counts) as reports print it: four
/// significant digits, except that the integer part is never rounded
/// (`1234`, `123.4`, `12.34`, `1.234`, `0.123`). A rep's median is rarely
/// better than a few parts in ten thousand, so a fifth digit would be noise;
/// below 1 three decimals keep the sub-nanosecond prices readable. The
/// decimals follow the rounded value, so 99.996 reads `100.0`, not `100.00`.
/// Not finite (no value): `-`.
pub fn significant(x: f64) -> String {
    fn decimals(x: f64) -> usize {
        match x.abs() {
            a if a >= 1000.0 => 0,
            a if a >= 100.0 => 1,
            a if a >= 10.0 => 2,
            _ => 3,
        }
    }
    if !x.is_finite() {
        return "-".into();
    }
    let d = decimals(x);
    let text = format!("{x:.d$}");
    // Rounding may carry into the next decade (9.9996 -> 10.000).
    match text.parse::<f64>().map(decimals) {
        Ok(fewer) if fewer < d => format!("{x:.fewer$}"),
        _ => text,
    }
}

/// A change in percent, signed, one decimal (`+2.5%`, `-0.3%`): intervals
/// on a shared machine are seldom tighter than a tenth of a percent.
pub fn percent(x: f64) -> String {
    format!("{x:+.1}%")
}

/// A change with its interval: `+2.5% [+1.9%, +3.1%]`.
pub fn interval(median: f64, ci: [f64; 2]) -> String {
    format!(
        "{} [{}, {}]",
        percent(median),
        percent(ci[0]),
        percent(ci[1])
    )
}

/// The longest period a schedule takes: ten years (a longer one is a
/// slip of the keyboard, and far longer ones overflow what is shown).
pub const MAX_PERIOD_S: f64 = 3650.0 * 86400.0;

/// Parse a period: `24h`, `30m`, `90s`, `2d`, `1h30m`; seconds, from one
/// second to [`MAX_PERIOD_S`].
pub fn parse_period(text: &str) -> Result<f64, String> {
    let bad = || {
        format!(
            "`{}`: expected a period such as 24h, 30m, 90s or 1h30m",
            text.escape_default()
        )
    };
    let mut total = 0.0;
    let mut number = String::new();
    for c in text.trim().chars() {
        if c.is_ascii_digit() || c == '.' {
            number.push(c);
            continue;
        }
        let unit = match c {
            's' => 1.0,
            'm' => 60.0,
            'h' => 3600.0,
            'd' => 86400.0,
            _ => return Err(bad()),
        };
        let n: f64 = number.parse().map_err(|_| bad())?;
        total += n * unit;
        number.clear();
    }
    if !(number.is_empty() && total.is_finite()) {
        return Err(bad());
    }
    if total < 1.0 {
        return Err(format!(
            "`{}`: shorter than a second (the shortest period is 1s)",
            text.escape_default()
        ));
    }
    if total > MAX_PERIOD_S {
        return Err(format!(
            "`{}`: longer than ten years (3650d)",
            text.escape_default()
        ));
    }
    Ok(total)
}

/// A period as [`parse_period`] reads it.
pub fn show_period(seconds: f64) -> String {
    let s = seconds.round() as u64;
    let mut out = String::new();
    let (d, h, m, sec) = (s / 86400, s % 86400 / 3600, s % 3600 / 60, s % 60);
    for (v, u) in [(d, "d"), (h, "h"), (m, "m"), (sec, "s")] {
        if v > 0 {
            out.push_str(&format!("{v}{u}"));
        }
    }
    if out.is_empty() {
        out.push_str("0s");
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn periods_parse_and_show() {
        assert_eq!(super::parse_period("24h"), Ok(86400.0));
        assert_eq!(super::parse_period("30m"), Ok(1800.0));
        assert_eq!(super::parse_period("90s"), Ok(90.0));
        assert_eq!(super::parse_period("1h30m"), Ok(5400.0));
        assert_eq!(super::parse_period("2d"), Ok(172800.0));
        assert_eq!(super::parse_period("3650d"), Ok(super::MAX_PERIOD_S));
        let far = super::parse_period("99999999999999999999h").unwrap_err();
        assert!(far.contains("longer than ten years"), "{far}");
        let zero = super::parse_period("0d").unwrap_err();
        assert!(zero.contains("shorter than a second"), "{zero}");
        for bad in [
            "", "24", "h", "0s", "-1h", "1x", "1h 30m", "1..5h", "3651d", "1e12",
        ] {
            assert!(super::parse_period(bad).is_err(), "{bad}");
        }
        assert_eq!(super::show_period(86400.0), "1d");
        assert_eq!(super::show_period(5400.0), "1h30m");
        assert_eq!(super::show_period(90.0), "1m30s");
    }

    #[test]
    fn measured_values_keep_four_significant_digits() {
        use super::significant;
        assert_eq!(significant(12345.6), "12346");
        assert_eq!(significant(1234.5), "1234");
        assert_eq!(significant(123.45), "123.5");
        assert_eq!(significant(12.345), "12.35");
        assert_eq!(significant(8.0), "8.000");
        assert_eq!(significant(0.1406), "0.141");
        assert_eq!(significant(-123.45), "-123.5");
        assert_eq!(significant(f64::NAN), "-");
        assert_eq!(significant(f64::INFINITY), "-");
        // A carry into the next decade takes the next decade's decimals.
        assert_eq!(significant(9.9996), "10.00");
        assert_eq!(significant(99.996), "100.0");
        assert_eq!(significant(999.96), "1000");
    }

    #[test]
    fn changes_read_in_percent_with_their_interval() {
        assert_eq!(super::percent(2.54), "+2.5%");
        assert_eq!(super::percent(-0.04), "-0.0%");
        assert_eq!(super::interval(25.0, [-1.26, 3.0]), "+25.0% [-1.3%, +3.0%]");
    }

    #[test]
    fn sizes_over_a_gib_read_in_whole_units() {
        assert_eq!(
            super::format_bytes((4 << 30) + (64 << 10)),
            "4 GiB + 64 KiB"
        );
        assert_eq!(super::format_bytes(4 << 30), "4 GiB");
        assert_eq!(super::format_bytes(64 << 10), "64 KiB");
    }

    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_bytes("8m"), Ok(8 << 20));
        assert_eq!(parse_bytes("64KiB"), Ok(64 << 10));
        assert_eq!(parse_bytes("4096"), Ok(4096));
        assert!(parse_bytes("eight").is_err());
        assert!(parse_bytes("0").is_err());
        assert!(working_set("3m").is_err());
        assert!(working_set("1k").is_err());
        assert_eq!(working_set("1m"), Ok(1 << 20));
        assert_eq!(format_bytes(8 << 20), "8 MiB");
        assert_eq!(format_bytes(693185), "676.94 KiB");
        assert_eq!(format_bytes(1000), "1000 B");
    }
}
