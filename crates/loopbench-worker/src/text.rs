//! Messages from engines and parsers may span lines (wasmparser prints the
//! bytes it expected as an indented list); loopbench's errors are one line.

/// `s` with every run of whitespace, newlines included, as one space.
pub fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}
