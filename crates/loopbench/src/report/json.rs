//! JSON: every value of the results model under its versioned schema
//! (`loopbench/2` for sessions; see [`crate::results`]). It reads back with
//! [`crate::results::read`]. Written to a file, its reps go to a compressed
//! file beside it ([`crate::results::reps`]).

use super::{Exporter, ReportError};
use crate::results::Document;
use serde::Serialize;

pub struct Json;

impl Exporter for Json {
    fn render(&self, doc: &Document) -> Result<Vec<u8>, ReportError> {
        let value = doc
            .to_json_value()
            .map_err(|source| ReportError::Json { source })?;
        to_json(&value)
    }

    fn beside(&self, name: &str) -> Option<(String, &'static str)> {
        Some((crate::results::reps::file_name(name), "its reps, gzip"))
    }

    /// The summaries, pretty, citing `beside`; the reps there, compressed
    /// ([`crate::results::reps::zip`]).
    fn render_apart(
        &self,
        doc: &Document,
        beside: &str,
        key: &str,
    ) -> Result<(Vec<u8>, Option<Vec<u8>>), ReportError> {
        let json = |source| ReportError::Json { source };
        let value = doc.to_json_value().map_err(json)?;
        let (summary, reps) = crate::results::reps::split(value, beside, key);
        let reps = reps
            .map(|r| crate::results::reps::zip(&r))
            .transpose()
            .map_err(|e| json(serde_json::Error::io(e)))?;
        Ok((to_json(&summary)?, reps))
    }
}

/// Pretty JSON with a final newline.
pub fn to_json<T: Serialize>(value: &T) -> Result<Vec<u8>, ReportError> {
    let mut v = serde_json::to_vec_pretty(value).map_err(|source| ReportError::Json { source })?;
    v.push(b'\n');
    Ok(v)
}
