//! The results model: what every command produces, owned and versioned.
//!
//! A command builds one [`Document`] and hands it to the export manager
//! ([`crate::report::Exports`]); the exporters (table, JSON, ...) only read
//! it. Every document carries its `schema` name, and [`read`] accepts every
//! schema version loopbench has written, so a saved file can be reported
//! again in any format, compared or stored.

pub mod answer;
pub mod app;
pub mod calibration;
pub mod compare;
pub mod counts;
pub mod gate;
pub mod layout;
pub mod model;
pub(crate) mod nan;
pub mod noise;
pub mod reps;
pub mod sane;
pub mod session;
pub mod shape;

pub use session::*;
pub use shape::*;

use serde::{Deserialize, Serialize};
use std::path::Path;
use thiserror::Error as ThisError;

/// Why text is not a saved document this loopbench reads.
#[derive(Debug, ThisError)]
pub enum ReadError {
    #[error("{}: {}", path.display(), crate::input::NOT_A_FILE)]
    NotAFile { path: std::path::PathBuf },
    #[error("not JSON: {0}")]
    NotJson(#[source] serde_json::Error),
    #[error("no `schema` field: not a loopbench results file")]
    NoSchema,
    /// Valid JSON of another shape (an array, a number, a `schema` that is
    /// not a string): what it holds, in words.
    #[error("not a loopbench document: it holds {0}, not an object with a `schema` string")]
    NotADocument(&'static str),
    #[error("a {schema} document, but {source}")]
    Malformed {
        schema: String,
        #[source]
        source: serde_json::Error,
    },
    #[error(
        "schema `{schema}` is not one this loopbench reads (it reads {}, {MODEL_SCHEMA}, {}, {}, {}, {}, {}, {})",
        SESSION_SCHEMAS_READ.join(", "),
        counts::SCHEMA,
        calibration::SCHEMA,
        compare::SCHEMA,
        app::PROFILE_SCHEMA,
        app::PROJECT_SCHEMAS_READ.join(", "),
        app::WARM_SCHEMA
    )]
    UnknownSchema { schema: String },
    /// A value no measurement can have (a hand-edited file).
    #[error("impossible value: {0}")]
    Impossible(String),
    /// The document's reps are in a file beside it that cannot be had.
    #[error("its reps are in {file} beside it, which {why} (a JSON file written with --json-reps holds them inline)")]
    Reps { file: String, why: String },
    #[error("cannot read {}: {source}", path.display())]
    Io {
        path: std::path::PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A file's content is not a document: the path, then why.
    #[error("{}: {source}", path.display())]
    File {
        path: std::path::PathBuf,
        #[source]
        source: Box<ReadError>,
    },
}

/// The schema a session is written with. 2 added epochs (fresh processes),
/// per-rep records, the layout part of every interval and the stop rule.
pub const SESSION_SCHEMA: &str = "loopbench/2";
/// Session schemas this version reads: 1 reads as a single epoch.
pub const SESSION_SCHEMAS_READ: &[&str] = &["loopbench/1", "loopbench/2"];
/// The schema of `loopbench model` output: a session and its price models.
pub const MODEL_SCHEMA: &str = "loopbench-model/1";
/// `app project`'s document (see [`app::PROJECT_SCHEMA`]).
pub const APP_PROJECT_SCHEMA: &str = app::PROJECT_SCHEMA;

/// `loopbench model`: the session it measured and a price model per engine.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ModelResults {
    pub schema: String,
    pub session: Session,
    pub models: Vec<model::EngineModel>,
}

/// One command's results, whatever the command.
#[derive(Clone, Debug)]
pub enum Document {
    Session(Session),
    Model(ModelResults),
    Counts(counts::Counts),
    Calibration(calibration::Calibration),
    /// Two saved sessions compared (`loopbench compare`).
    Compare(compare::SessionComparison),
    /// An app's op mix (`loopbench app profile`).
    AppProfile(app::AppProfile),
    /// Prices projected onto apps (`loopbench app project`).
    AppProject(Box<app::AppProjection>),
    /// A shape's loop inside a live app (`loopbench app warm`).
    AppWarm(app::AppWarm),
    /// This machine's noise per level (`loopbench noise`).
    Noise(Box<noise::Noise>),
}

impl Document {
    /// The value as JSON (the document's own schema, unchanged).
    pub fn to_json_value(&self) -> Result<serde_json::Value, serde_json::Error> {
        match self {
            Document::Session(s) => serde_json::to_value(s),
            Document::Model(m) => serde_json::to_value(m),
            Document::Counts(c) => serde_json::to_value(c),
            Document::Calibration(c) => serde_json::to_value(c),
            Document::Compare(c) => serde_json::to_value(c),
            Document::AppProfile(p) => serde_json::to_value(p),
            Document::AppProject(p) => serde_json::to_value(p),
            Document::AppWarm(w) => serde_json::to_value(w),
            Document::Noise(n) => serde_json::to_value(n),
        }
    }

    /// The session inside, where there is one.
    pub fn session(&self) -> Option<&Session> {
        match self {
            Document::Session(s) => Some(s),
            Document::Model(m) => Some(&m.session),
            _ => None,
        }
    }
}

/// Parse a saved document of any schema version written so far. A
/// document whose reps are in a file beside it is refused here (there is
/// no beside); [`read`] reads it.
pub fn parse(text: &str) -> Result<Document, ReadError> {
    parse_with(text, &|_| {
        Err("a document read from here cannot reach".into())
    })
}

/// [`parse`], the reps of a document that keeps them apart taken from
/// `reps_of` (given the file it cites: its value, or why not in words).
pub fn parse_with(
    text: &str,
    reps_of: &dyn Fn(&str) -> Result<serde_json::Value, String>,
) -> Result<Document, ReadError> {
    #[derive(Deserialize)]
    struct Probe {
        schema: Option<String>,
        #[serde(default)]
        reps_file: Option<serde::de::IgnoredAny>,
    }
    let probe: Probe = serde_json::from_str(text).map_err(|e| {
        if !e.is_data() {
            return ReadError::NotJson(e);
        }
        // Well-formed JSON that is not an object with a string `schema`:
        // say what it is rather than what the probe expected.
        ReadError::NotADocument(match serde_json::from_str(text) {
            Ok(serde_json::Value::Array(_)) => "a JSON array",
            Ok(serde_json::Value::Object(_)) => "an object whose `schema` is not a string",
            Ok(serde_json::Value::String(_)) => "a JSON string",
            Ok(serde_json::Value::Number(_)) => "a JSON number",
            Ok(serde_json::Value::Bool(_)) => "a JSON boolean",
            Ok(serde_json::Value::Null) => "JSON null",
            Err(_) => "JSON of another shape",
        })
    })?;
    let schema = probe.schema.ok_or(ReadError::NoSchema)?;
    if probe.reps_file.is_none() {
        return typed(&schema, text);
    }
    // The reps are apart: put back into the whole value, which is then
    // read as any document is.
    let mut value: serde_json::Value = serde_json::from_str(text).map_err(ReadError::NotJson)?;
    let file = reps::cited(&value).unwrap_or_default().to_string();
    let refuse = |why: String| ReadError::Reps {
        file: file.clone(),
        why,
    };
    let reps = reps_of(&file).map_err(refuse)?;
    reps::merge(&mut value, reps).map_err(refuse)?;
    typed(&schema, &value.to_string())
}

/// The document of `schema` that `text` holds.
fn typed(schema: &str, text: &str) -> Result<Document, ReadError> {
    let bad = |source: serde_json::Error| ReadError::Malformed {
        schema: schema.to_string(),
        source,
    };
    match schema {
        s if SESSION_SCHEMAS_READ.contains(&s) => {
            let session: Session = serde_json::from_str(text).map_err(bad)?;
            sane::check(&session).map_err(ReadError::Impossible)?;
            Ok(Document::Session(session))
        }
        MODEL_SCHEMA => serde_json::from_str(text).map(Document::Model).map_err(bad),
        counts::SCHEMA => serde_json::from_str(text)
            .map(Document::Counts)
            .map_err(bad),
        calibration::SCHEMA => serde_json::from_str(text)
            .map(Document::Calibration)
            .map_err(bad),
        compare::SCHEMA => serde_json::from_str(text)
            .map(Document::Compare)
            .map_err(bad),
        app::PROFILE_SCHEMA => serde_json::from_str(text)
            .map(Document::AppProfile)
            .map_err(bad),
        s if app::PROJECT_SCHEMAS_READ.contains(&s) => serde_json::from_str(text)
            .map(|p| Document::AppProject(Box::new(p)))
            .map_err(bad),
        app::WARM_SCHEMA => serde_json::from_str(text)
            .map(Document::AppWarm)
            .map_err(bad),
        noise::SCHEMA => serde_json::from_str(text)
            .map(|n| Document::Noise(Box::new(n)))
            .map_err(bad),
        other => Err(ReadError::UnknownSchema {
            schema: other.to_string(),
        }),
    }
}

/// The reps file `file` beside a document in `dir`: a plain file name (a
/// path in a document is not followed), read as [`reps::unzip`] does.
fn reps_beside(dir: Option<&Path>, file: &str) -> Result<serde_json::Value, String> {
    if file.is_empty() || file == "." || file == ".." || file.contains(['/', '\\']) {
        return Err("is not the name of a file beside it".into());
    }
    let dir = dir.ok_or("a document read from here cannot reach")?;
    let opened = crate::input::open(&dir.join(file)).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => "is missing".to_string(),
        _ => format!("cannot be read: {e}"),
    })?;
    reps::unzip(opened)
}

/// Read a saved document from `path` (a file, or a pipe such as `<(...)`;
/// a device is refused, [`input`]).
pub fn read(path: &Path) -> Result<Document, ReadError> {
    let io = |source: std::io::Error| match source.kind() {
        std::io::ErrorKind::InvalidInput if source.to_string() == crate::input::NOT_A_FILE => {
            ReadError::NotAFile {
                path: path.to_path_buf(),
            }
        }
        _ => ReadError::Io {
            path: path.to_path_buf(),
            source,
        },
    };
    let mut text = String::new();
    std::io::Read::read_to_string(&mut crate::input::open(path).map_err(io)?, &mut text)
        .map_err(io)?;
    // The reps file is beside the file itself, wherever a link to it is.
    let real = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    parse_with(&text, &|file| reps_beside(real.parent(), file)).map_err(|e| ReadError::File {
        path: path.to_path_buf(),
        source: Box::new(e),
    })
}

impl Document {
    /// What kind of document this is, in a word or two.
    pub fn kind(&self) -> &'static str {
        match self {
            Document::Session(_) => "session",
            Document::Model(_) => "model",
            Document::Counts(_) => "count",
            Document::Calibration(_) => "calibration",
            Document::Compare(_) => "comparison",
            Document::AppProfile(_) | Document::AppProject(_) | Document::AppWarm(_) => "app",
            Document::Noise(_) => "noise",
        }
    }
}
