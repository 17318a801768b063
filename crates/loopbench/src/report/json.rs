//! JSON: every value of the results model under its versioned schema
//! (`loopbench/1` for sessions; see [`crate::results`]). It reads back with
//! [`crate::results::read`].

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
}

/// Pretty JSON with a final newline.
pub fn to_json<T: Serialize>(value: &T) -> Result<Vec<u8>, ReportError> {
    let mut v = serde_json::to_vec_pretty(value).map_err(|source| ReportError::Json { source })?;
    v.push(b'\n');
    Ok(v)
}
