//! JSON export with a versioned schema (`loopbench/1`). The keys are the
//! serde names of [`crate::session::Report`]; see the README for the list.

use crate::error::Error;
use serde::Serialize;

pub fn to_json<T: Serialize>(value: &T) -> Result<Vec<u8>, Error> {
    let mut v = serde_json::to_vec_pretty(value)
        .map_err(|e| Error::Usage(format!("cannot encode JSON: {e}")))?;
    v.push(b'\n');
    Ok(v)
}
