//! Sizes on the command line (`8m`, `64k`, `1g`, `4096`) and back.

use thiserror::Error;

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
        b => format!("{b} B"),
    }
}

#[cfg(test)]
mod tests {
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
    }
}
