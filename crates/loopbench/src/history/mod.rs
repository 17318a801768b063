//! History: every session stored, on one machine (SQLite, the default) or
//! for a fleet (PostgreSQL), with the fleet's job queue.
//!
//! | concern | file |
//! |---|---|
//! | the SQL trait, the schema and its migrations | [`store`] |
//! | the two backends | [`sqlite`], [`postgres`] |
//! | sessions: record, list, series, baselines, load back | [`sessions`] |
//! | the job queue (`FOR UPDATE SKIP LOCKED`, heartbeats) | [`queue`] |
//! | the agent that runs jobs | [`agent`] |
//! | changes in a series judged against its own history | [`trend`] |
//! | engines x shapes x machines | [`leaderboard`] |
//! | the setting recorded for a machine (`noise --record`) | [`settings`] |
//! | tracks: definitions, their schedule, resumable tracked runs | [`track`] |
//! | alerts: the flagged steps of a track's anchored series | [`alerts`] |
//!
//! Where the database is: `--db PATH|postgres://...`, else the environment
//! variable `LOOPBENCH_DB`, else `history.sqlite` in the user's data
//! directory (e.g. `~/.local/share/loopbench/`).

pub mod agent;
pub mod alerts;
pub mod builds;
pub mod leaderboard;
pub mod postgres;
pub mod queue;
pub mod series;
pub mod sessions;
pub mod settings;
pub mod sqlite;
pub mod store;
pub mod track;
pub mod trend;

use crate::error::Error;
use std::fmt;
use std::path::PathBuf;
use store::{Sql, StoreError};

/// The environment variable naming the database when `--db` is not given.
pub const ENV: &str = "LOOPBENCH_DB";

/// Where the history database is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Location {
    Sqlite(PathBuf),
    Postgres(String),
}

impl Location {
    /// `--db` if given, else `$LOOPBENCH_DB`, else the default file.
    pub fn resolve(arg: Option<&str>) -> Result<Self, StoreError> {
        let env = std::env::var(ENV).ok().filter(|s| !s.is_empty());
        match arg.map(str::to_string).or(env) {
            Some(s) => Location::parse(&s),
            None => {
                let dir = dirs::data_dir().ok_or(StoreError::NoDataDir { var: ENV })?;
                Ok(Location::Sqlite(
                    dir.join("loopbench").join("history.sqlite"),
                ))
            }
        }
    }

    /// A `postgres://` or `postgresql://` URL, or a file path. Any other
    /// `scheme://` is refused: a typo such as `postgress://user:pw@host`
    /// would otherwise become a SQLite file, its directories named with the
    /// password.
    pub fn parse(s: &str) -> Result<Self, StoreError> {
        if s.starts_with("postgres://") || s.starts_with("postgresql://") {
            return Ok(Location::Postgres(s.to_string()));
        }
        match s.split_once("://") {
            Some((scheme, _)) if is_scheme(scheme) => Err(StoreError::Scheme {
                scheme: scheme.to_string(),
            }),
            _ => Ok(Location::Sqlite(PathBuf::from(s))),
        }
    }

    /// Connect, and bring the schema up to date.
    pub fn open(&self) -> Result<Box<dyn Sql>, StoreError> {
        let mut db = self.connect()?;
        store::migrate(db.as_mut())?;
        Ok(db)
    }

    /// Connect to read only: nothing created, marked, migrated or switched
    /// to WAL, for the commands that only read (`history`, `trend`,
    /// `leaderboard`, `jobs`, `compare @...`).
    pub fn open_read(&self) -> Result<Box<dyn Sql>, StoreError> {
        Ok(match self {
            Location::Sqlite(p) => Box::new(sqlite::Sqlite::open_read(p)?),
            Location::Postgres(url) => {
                let mut db = postgres::Postgres::connect(url)?;
                if !store::has_schema(&mut db)? {
                    return Err(StoreError::NoSchema {
                        location: self.to_string(),
                    });
                }
                store::check_version(&mut db)?;
                Box::new(db)
            }
        })
    }

    /// Connect without touching the schema (a SQLite file is created and
    /// marked as loopbench's).
    pub fn connect(&self) -> Result<Box<dyn Sql>, StoreError> {
        Ok(match self {
            Location::Sqlite(p) => Box::new(sqlite::Sqlite::open(p)?),
            Location::Postgres(url) => Box::new(postgres::Postgres::connect(url)?),
        })
    }
}

/// A URL scheme as RFC 3986 spells it: a letter, then letters, digits,
/// `+`, `-` or `.`.
fn is_scheme(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Location::Sqlite(p) => write!(f, "{}", p.display()),
            Location::Postgres(url) => f.write_str(&postgres::redact(url)),
        }
    }
}

/// A stored session named on the command line (`@last`, `@baseline:NAME`,
/// `@ID`), loaded back into the results model; `None` if `reference` does
/// not start with `@` (it is then a file).
pub fn load_reference(
    reference: &str,
    db: Option<&str>,
) -> Result<Option<crate::results::Session>, Error> {
    if !reference.starts_with('@') {
        return Ok(None);
    }
    let location = Location::resolve(db)?;
    let mut conn = location.open_read()?;
    let id = sessions::resolve(conn.as_mut(), reference).map_err(|e| StoreError::In {
        location: location.to_string(),
        source: Box::new(e),
    })?;
    Ok(Some(sessions::load(conn.as_mut(), id)?))
}
