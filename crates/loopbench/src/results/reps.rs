//! Every rep of a saved document, kept beside it rather than in it.
//!
//! The reps are most of a session's JSON (every arm's per-rep times and
//! records, and each counter's value per rep), and no reader looks at them
//! by eye. A JSON file therefore keeps the summaries and names, in its
//! `reps_file` field, a gzip-compressed JSON file beside it that holds the
//! reps; [`super::read`] puts them back where they were, so every command
//! sees the document as it was measured. A document written to a stream,
//! or with `--json-reps`, keeps them inline and has no `reps_file`.
//!
//! With the reps go the other values of which there is one per epoch (each
//! epoch's median change, its layout variant), so the JSON's size does not
//! grow with the session's length.
//!
//! The split works on the JSON value, not the types: any document holding
//! arms (a session, a model's session, an app projection's two sessions)
//! is split alike, and the in-memory results never change.

use serde_json::{Map, Value};

/// The schema of the file beside the JSON.
pub const SCHEMA: &str = "loopbench-reps/1";

/// The field of a document that names the file holding its reps.
pub const FIELD: &str = "reps_file";

/// An arm's fields that go beside: its per-rep times and records, and the
/// layout variant of each epoch.
const ARM_FIELDS: [&str; 3] = ["samples_ns_per_iter", "reps", "build_variants"];

/// Fields that go beside wherever they are: a counter's value per rep, and
/// the per-epoch (and per-layout-cluster) values behind an interval.
const FIELDS: [&str; 5] = [
    "samples_per_iter",
    "epoch_median_pct",
    "epoch_ids",
    "epoch_clusters",
    "cluster_mean_pct",
];

/// The name of the reps file beside a JSON file named `json_name`:
/// `s.json` keeps `s.reps.json.gz`, any other name gains `.reps.json.gz`.
/// A stem too long for a file name with that ending (255 bytes) keeps its
/// first 128 bytes and a hash of the whole.
pub fn file_name(json_name: &str) -> String {
    const ENDING: &str = ".reps.json.gz";
    let stem = json_name.strip_suffix(".json").unwrap_or(json_name);
    if stem.len() + ENDING.len() <= 255 {
        return format!("{stem}{ENDING}");
    }
    let mut cut = 128;
    while !stem.is_char_boundary(cut) {
        cut -= 1;
    }
    let hash = crate::hash::fnv1a(&[stem.as_bytes()]);
    format!("{}~{hash:016x}{ENDING}", &stem[..cut])
}

/// `doc` without its reps, and the reps file's value (`None`, and `doc`
/// unchanged, when there are none). `file` is the reps file's name as the
/// document will cite it; `key` ties the two files of one write together.
pub fn split(mut doc: Value, file: &str, key: &str) -> (Value, Option<Value>) {
    let mut parts = Vec::new();
    take(&mut doc, &mut String::new(), &mut parts);
    if parts.is_empty() {
        return (doc, None);
    }
    let count = parts.len();
    if let Value::Object(map) = &mut doc {
        map.insert(
            FIELD.to_string(),
            serde_json::json!({ "file": file, "key": key, "parts": count }),
        );
    }
    let reps = serde_json::json!({ "schema": SCHEMA, "key": key, "parts": parts });
    (doc, Some(reps))
}

/// The reps file a document cites: its name, if the document has one.
pub fn cited(doc: &Value) -> Option<&str> {
    doc.get(FIELD)?.get("file")?.as_str()
}

/// Put the reps of `reps` (a reps file's value) back into `doc`, which
/// cites it. Refused, in words, when the file is not this write's: its key
/// differs, or a part of it does not fit the document.
pub fn merge(doc: &mut Value, mut reps: Value) -> Result<(), String> {
    let Some(cite) = doc.as_object_mut().and_then(|m| m.remove(FIELD)) else {
        return Ok(());
    };
    if reps.get("schema").and_then(Value::as_str) != Some(SCHEMA) {
        return Err(format!("is not a {SCHEMA} file"));
    }
    let key = |v: &Value| {
        v.get("key")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    let (theirs, ours) = (key(&reps), key(&cite));
    if theirs != ours {
        let writer = |k: &str| k.rsplit_once('/').map(|(w, _)| w.to_string());
        return Err(
            match writer(&theirs) == writer(&ours) && writer(&ours).is_some() {
                true => "was written after it (the session was killed between writing the two)",
                false => "belongs to another document (its key differs)",
            }
            .to_string(),
        );
    }
    let wanted = cite.get("parts").and_then(Value::as_u64);
    // Taken, not copied: the parts are most of the file.
    let Some(Value::Array(parts)) = reps.get_mut("parts").map(Value::take) else {
        return Err("holds no list of parts".to_string());
    };
    if wanted != Some(parts.len() as u64) {
        return Err(format!(
            "holds {} parts where the document cites {}",
            parts.len(),
            wanted.map_or("none".to_string(), |n| n.to_string())
        ));
    }
    for mut part in parts {
        let at = part
            .get("at")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let Some(Value::Object(into)) = doc.pointer_mut(&at) else {
            return Err(format!("has a part for {at:?}, which the document lacks"));
        };
        if let Some(arm) = part.get("arm") {
            if into.get("arm") != Some(arm) {
                return Err(format!(
                    "has arm {arm} at {at}, where the document has another"
                ));
            }
        }
        if let Some(Value::Object(fields)) = part.get_mut("fields").map(Value::take) {
            into.extend(fields);
        }
    }
    Ok(())
}

/// A reps file's value as its bytes: compact JSON compressed with gzip
/// (fast: a session's file is rewritten after every epoch).
pub fn zip(reps: &Value) -> std::io::Result<Vec<u8>> {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    serde_json::to_writer(&mut gz, reps)?;
    gz.finish()
}

/// A reps file's value from its bytes, at most
/// [`crate::input::INPUT_CAP`] of them decompressed; why not, in words.
pub fn unzip(bytes: impl std::io::Read) -> Result<Value, String> {
    let unzipped = crate::input::Capped::new(
        flate2::read::GzDecoder::new(std::io::BufReader::new(bytes)),
        crate::input::INPUT_CAP,
    );
    serde_json::from_reader(std::io::BufReader::new(unzipped))
        .map_err(|e| format!("is not a gzip-compressed JSON file of reps: {e}"))
}

/// Whether `map` is an arm's result: an `arm` name and its samples.
fn is_arm(map: &Map<String, Value>) -> bool {
    map.get("arm").is_some_and(Value::is_string)
        && map.get(ARM_FIELDS[0]).is_some_and(Value::is_array)
}

/// Move the fields that go beside from every object under `value` (at
/// JSON pointer `at`) into `parts`, each with its place (and an arm's
/// name, to check it against on the way back).
fn take(value: &mut Value, at: &mut String, parts: &mut Vec<Value>) {
    let len = at.len();
    match value {
        Value::Object(map) => {
            let arm = is_arm(map);
            let mut fields = Map::new();
            for k in FIELDS.iter().chain(if arm { &ARM_FIELDS[..] } else { &[] }) {
                if let Some(v) = map.remove(*k) {
                    fields.insert(k.to_string(), v);
                }
            }
            if !fields.is_empty() {
                let mut part = serde_json::json!({ "at": at.as_str(), "fields": fields });
                if arm {
                    part["arm"] = map["arm"].clone();
                }
                parts.push(part);
            }
            for (k, v) in map.iter_mut() {
                at.push('/');
                at.push_str(&k.replace('~', "~0").replace('/', "~1"));
                take(v, at, parts);
                at.truncate(len);
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter_mut().enumerate() {
                at.push_str(&format!("/{i}"));
                take(v, at, parts);
                at.truncate(len);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn session() -> Value {
        json!({
            "schema": "loopbench/2",
            "results": [{
                "shape": "lut",
                "arms": [
                    {"arm": "wasmi", "verified_reps": 2, "samples_ns_per_iter": [1.0, 2.0],
                     "reps": [{"epoch": 0}, {"epoch": 1}], "build_variants": {"0": 3},
                     "counters": {"values": {"tsc": {"reps": 2, "samples_per_iter": [3.0, null]}}}},
                    {"arm": "a/b~c", "verified_reps": 0, "samples_ns_per_iter": []}
                ],
                "comparisons": [{"arm": "a/b~c", "epoch_median_pct": [1.5], "epoch_ids": [0],
                                 "build": {"clusters": 2, "cluster_mean_pct": [1.0, 2.0]}}]
            }]
        })
    }

    #[test]
    fn a_split_document_merges_back_to_what_it_was() {
        let (mut summary, reps) = split(session(), "s.reps.json.gz", "k1");
        let reps = reps.expect("arms to move");
        assert_eq!(cited(&summary), Some("s.reps.json.gz"));
        let text = summary.to_string();
        for field in FIELDS.iter().chain(&ARM_FIELDS) {
            assert!(
                !text.contains(&format!("\"{field}\":[")),
                "{field} in {text}"
            );
        }
        assert!(summary["results"][0]["arms"][0]
            .get("build_variants")
            .is_none());
        // What a reader looks at stays.
        assert_eq!(
            summary["results"][0]["comparisons"][0]["build"]["clusters"],
            2
        );
        assert_eq!(
            summary["results"][0]["arms"][0]["counters"]["values"]["tsc"]["reps"],
            2
        );
        merge(&mut summary, reps).unwrap();
        assert_eq!(summary, session());
    }

    #[test]
    fn a_document_without_arms_is_left_whole() {
        let doc = json!({"schema": "loopbench-counts/1", "shapes": []});
        let (same, reps) = split(doc.clone(), "x", "k");
        assert_eq!((same, reps), (doc, None));
    }

    #[test]
    fn a_reps_file_of_another_document_or_write_is_refused() {
        let (summary, _) = split(session(), "s.reps.json.gz", "w1/1");
        let refused = |key: &str| {
            let (_, other) = split(session(), "s.reps.json.gz", key);
            merge(&mut summary.clone(), other.unwrap()).unwrap_err()
        };
        assert!(refused("w2/1").contains("another document"));
        assert!(refused("w1/2").contains("killed between writing the two"));
    }

    #[test]
    fn a_reps_file_that_does_not_fit_is_refused() {
        let (summary, reps) = split(session(), "s.reps.json.gz", "k");
        let mut short = reps.clone().unwrap();
        short["parts"].as_array_mut().unwrap().pop();
        let err = merge(&mut summary.clone(), short).unwrap_err();
        assert!(err.contains("where the document cites"), "{err}");
        let mut moved = reps.unwrap();
        moved["parts"][0]["at"] = json!("/results/0/arms/1");
        let err = merge(&mut summary.clone(), moved).unwrap_err();
        assert!(err.contains("where the document has another"), "{err}");
    }

    #[test]
    fn the_reps_file_is_named_after_the_json_file() {
        assert_eq!(file_name("s.json"), "s.reps.json.gz");
        assert_eq!(file_name("out"), "out.reps.json.gz");
        let long = file_name(&format!("{}.json", "n".repeat(245)));
        assert!(
            long.len() <= 255 && long.ends_with(".reps.json.gz"),
            "{long}"
        );
    }
}
