//! JSON has no NaN: serde_json writes it as `null`, and these read `null`
//! back as NaN where a value can be undefined (a share of nothing, a
//! feature that is not an op class).

use serde::{Deserialize, Deserializer};

pub fn f64<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::NAN))
}

pub fn shares<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<(String, f64)>, D::Error> {
    Ok(Vec::<(String, Option<f64>)>::deserialize(d)?
        .into_iter()
        .map(|(k, v)| (k, v.unwrap_or(f64::NAN)))
        .collect())
}
