//! A minimal JSON writer, because the crate takes no dependencies.
//!
//! Only what the report needs: objects, arrays, strings, integers, floats,
//! booleans and null, written straight into a `String`. Strings are escaped per
//! RFC 8259 §7 (quote, backslash and every control character below U+0020;
//! U+2028/U+2029 too, so the output is also safe inside JavaScript). Floats
//! that JSON cannot represent (NaN, ±infinity) are written as `null`.

use std::fmt::Write as _;

/// Appends `s` as a quoted, escaped JSON string.
pub(crate) fn string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{08}' => out.push_str("\\b"),
            '\u{0c}' => out.push_str("\\f"),
            c if u32::from(c) < 0x20 || c == '\u{2028}' || c == '\u{2029}' => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Appends a finite float, or `null`.
pub(crate) fn float(out: &mut String, x: f64) {
    if x.is_finite() {
        // `Display` for f64 never uses exponent notation and prints the
        // shortest digits that round-trip; both are valid JSON numbers.
        let _ = write!(out, "{x}");
    } else {
        out.push_str("null");
    }
}

/// Appends an optional float, `null` for `None`.
pub(crate) fn opt_float(out: &mut String, x: Option<f64>) {
    match x {
        Some(x) => float(out, x),
        None => out.push_str("null"),
    }
}

/// Builds one JSON object, handling the commas.
pub(crate) struct Object<'a> {
    out: &'a mut String,
    first: bool,
}

impl<'a> Object<'a> {
    pub(crate) fn new(out: &'a mut String) -> Object<'a> {
        out.push('{');
        Object { out, first: true }
    }

    /// Writes `"key":` and returns the buffer for the value.
    pub(crate) fn key(&mut self, key: &str) -> &mut String {
        if !self.first {
            self.out.push(',');
        }
        self.first = false;
        string(self.out, key);
        self.out.push(':');
        self.out
    }

    pub(crate) fn str(&mut self, key: &str, value: &str) -> &mut Self {
        let out = self.key(key);
        string(out, value);
        self
    }

    pub(crate) fn uint(&mut self, key: &str, value: u64) -> &mut Self {
        let out = self.key(key);
        let _ = write!(out, "{value}");
        self
    }

    pub(crate) fn float(&mut self, key: &str, value: f64) -> &mut Self {
        float(self.key(key), value);
        self
    }

    pub(crate) fn opt_float(&mut self, key: &str, value: Option<f64>) -> &mut Self {
        opt_float(self.key(key), value);
        self
    }

    pub(crate) fn bool(&mut self, key: &str, value: bool) -> &mut Self {
        self.key(key).push_str(if value { "true" } else { "false" });
        self
    }

    pub(crate) fn opt_bool(&mut self, key: &str, value: Option<bool>) -> &mut Self {
        self.key(key).push_str(match value {
            Some(true) => "true",
            Some(false) => "false",
            None => "null",
        });
        self
    }

    pub(crate) fn null(&mut self, key: &str) -> &mut Self {
        self.key(key).push_str("null");
        self
    }

    pub(crate) fn finish(self) {
        self.out.push('}');
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn quoted(s: &str) -> String {
        let mut out = String::new();
        string(&mut out, s);
        out
    }

    #[test]
    fn escapes_quotes_backslashes_and_controls() {
        assert_eq!(quoted(r#"a"b\c"#), r#""a\"b\\c""#);
        assert_eq!(quoted("x\ny\tz\r"), r#""x\ny\tz\r""#);
        assert_eq!(quoted("\u{0}\u{1f}\u{7f}"), "\"\\u0000\\u001f\u{7f}\"");
        assert_eq!(quoted("\u{8}\u{c}"), r#""\b\f""#);
        assert_eq!(quoted("\u{2028}é"), "\"\\u2028é\"");
    }

    #[test]
    fn non_finite_floats_are_null() {
        for (x, want) in [
            (f64::NAN, "null"),
            (f64::INFINITY, "null"),
            (1.5, "1.5"),
            (3.0, "3"),
        ] {
            let mut out = String::new();
            float(&mut out, x);
            assert_eq!(out, want);
        }
    }

    #[test]
    fn object_places_commas() {
        let mut out = String::new();
        let mut o = Object::new(&mut out);
        o.str("a", "x")
            .uint("b", 2)
            .null("c")
            .opt_bool("d", Some(true));
        o.finish();
        assert_eq!(out, r#"{"a":"x","b":2,"c":null,"d":true}"#);
    }
}
