//! JSON: every value of the results model under its versioned schema
//! (`loopbench/1` for sessions; see [`crate::results`]). It reads back with
//! [`crate::results::read`].

use super::Exporter;
use crate::error::Error;
use crate::results::Document;
use serde::Serialize;

pub struct Json;

impl Exporter for Json {
    fn render(&self, doc: &Document) -> Result<Vec<u8>, Error> {
        let value = doc
            .to_json_value()
            .map_err(|e| Error::Usage(format!("cannot encode JSON: {e}")))?;
        to_json(&value)
    }
}

/// Pretty JSON with a final newline.
pub fn to_json<T: Serialize>(value: &T) -> Result<Vec<u8>, Error> {
    let mut v = serde_json::to_vec_pretty(value)
        .map_err(|e| Error::Usage(format!("cannot encode JSON: {e}")))?;
    v.push(b'\n');
    Ok(v)
}
