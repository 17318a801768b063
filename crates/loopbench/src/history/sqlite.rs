//! The local store: a SQLite file (the SQLite bundled into `rusqlite`, so
//! no system library is needed).

use super::store::{self, Dialect, Row, Sql, StoreError, Value};
use rusqlite::types::{ToSqlOutput, ValueRef};
use std::path::Path;
use std::time::Duration;

pub struct Sqlite {
    conn: rusqlite::Connection,
}

fn query_error(e: rusqlite::Error) -> StoreError {
    StoreError::Query(e.to_string())
}

/// loopbench's mark in a SQLite file's header (`PRAGMA application_id`):
/// "loop" in ASCII. Another program's database is never touched.
pub const APPLICATION_ID: i32 = 0x6c6f_6f70;

/// Whose database a SQLite file is.
enum Identity {
    /// Marked as loopbench's.
    Ours,
    /// No tables yet.
    Empty,
    /// Made by a loopbench from before the mark: only loopbench's tables.
    Unmarked,
    /// Another program's, and why that is plain.
    Foreign(String),
}

fn identify(conn: &rusqlite::Connection) -> Result<Identity, rusqlite::Error> {
    let id: i32 = conn.pragma_query_value(None, "application_id", |r| r.get(0))?;
    if id == APPLICATION_ID {
        return Ok(Identity::Ours);
    }
    if id != 0 {
        return Ok(Identity::Foreign(format!(
            "its application_id is {id:#x}, not loopbench's"
        )));
    }
    let mut stmt = conn.prepare(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name",
    )?;
    let tables = stmt
        .query_map([], |r| r.get::<_, String>(0))?
        .collect::<Result<Vec<_>, _>>()?;
    let ours = store::tables();
    let foreign: Vec<&str> = tables
        .iter()
        .map(String::as_str)
        .filter(|t| !ours.contains(t))
        .collect();
    Ok(if tables.is_empty() {
        Identity::Empty
    } else if foreign.is_empty() && tables.iter().any(|t| t == "schema_migrations") {
        Identity::Unmarked
    } else if foreign.is_empty() {
        // Names alone are no proof: loopbench always keeps its migrations.
        Identity::Foreign(format!(
            "its tables ({}) are named like loopbench's, but it has no schema_migrations table, which every loopbench history has",
            tables.join(", ")
        ))
    } else {
        Identity::Foreign(format!(
            "it holds tables loopbench does not make: {}",
            foreign.join(", ")
        ))
    })
}

/// Why `path`, when it exists, cannot hold a SQLite database: SQLite would
/// block forever opening a FIFO, and calls a directory a "disk I/O error".
fn not_a_file(path: &Path) -> Option<String> {
    let meta = std::fs::metadata(path).ok()?;
    let t = meta.file_type();
    if t.is_file() {
        return None;
    }
    let what = if t.is_dir() {
        "a directory"
    } else {
        #[cfg(unix)]
        {
            use std::os::unix::fs::FileTypeExt;
            if t.is_fifo() {
                "a FIFO"
            } else if t.is_char_device() || t.is_block_device() {
                "a device"
            } else {
                "not a regular file"
            }
        }
        #[cfg(not(unix))]
        "not a regular file"
    };
    Some(format!("it is {what}; a history database is a file"))
}

impl Sqlite {
    /// Open to record: the file is created if missing and marked as
    /// loopbench's (also one made before the mark), and switched to WAL.
    pub fn open(path: &Path) -> Result<Self, StoreError> {
        let open_error = |detail: String| StoreError::Open {
            location: path.display().to_string(),
            detail,
        };
        if let Some(why) = not_a_file(path) {
            return Err(open_error(why));
        }
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| open_error(e.to_string()))?;
        }
        let conn = rusqlite::Connection::open(path).map_err(|e| open_error(e.to_string()))?;
        // Two loopbench processes recording at once wait for each other
        // instead of failing; WAL lets readers go on meanwhile.
        conn.busy_timeout(Duration::from_secs(30))
            .map_err(|e| open_error(e.to_string()))?;
        match identify(&conn).map_err(|e| open_error(e.to_string()))? {
            Identity::Ours => {}
            Identity::Empty | Identity::Unmarked => conn
                .pragma_update(None, "application_id", APPLICATION_ID)
                .map_err(|e| open_error(e.to_string()))?,
            Identity::Foreign(why) => return Err(foreign(path, why)),
        }
        conn.execute_batch("PRAGMA journal_mode = WAL; PRAGMA foreign_keys = ON;")
            .map_err(|e| open_error(e.to_string()))?;
        Ok(Sqlite { conn })
    }

    /// Open to read: nothing is created, marked, migrated or switched to
    /// WAL. A missing or empty file reads as an empty history.
    pub fn open_read(path: &Path) -> Result<Self, StoreError> {
        let open_error = |detail: String| StoreError::Open {
            location: path.display().to_string(),
            detail,
        };
        if !path.exists() {
            return Self::empty();
        }
        if let Some(why) = not_a_file(path) {
            return Err(open_error(why));
        }
        let read_only =
            rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = rusqlite::Connection::open_with_flags(path, read_only)
            .map_err(|e| open_error(e.to_string()))?;
        conn.busy_timeout(Duration::from_secs(30))
            .map_err(|e| open_error(e.to_string()))?;
        let (conn, identity) = match identify(&conn) {
            // A WAL database in a directory this user cannot write (a
            // read-only mount, another user's history): SQLite cannot make
            // the shared-memory file beside it, so it reads the file as
            // immutable instead (no writer can reach it through that
            // directory).
            Err(rusqlite::Error::SqliteFailure(e, _))
                if matches!(
                    e.code,
                    rusqlite::ErrorCode::CannotOpen | rusqlite::ErrorCode::ReadOnly
                ) =>
            {
                drop(conn);
                let conn = rusqlite::Connection::open_with_flags(
                    immutable_uri(path),
                    read_only | rusqlite::OpenFlags::SQLITE_OPEN_URI,
                )
                .map_err(|e| open_error(e.to_string()))?;
                let identity = identify(&conn).map_err(|e| open_error(e.to_string()))?;
                (conn, identity)
            }
            other => (conn, other.map_err(|e| open_error(e.to_string()))?),
        };
        match identity {
            Identity::Ours | Identity::Unmarked => {}
            Identity::Empty => return Self::empty(),
            Identity::Foreign(why) => return Err(foreign(path, why)),
        }
        let mut db = Sqlite { conn };
        store::check_version(&mut db)?;
        Ok(db)
    }

    /// An empty history in memory, at the current schema.
    fn empty() -> Result<Self, StoreError> {
        let conn = rusqlite::Connection::open_in_memory().map_err(query_error)?;
        let mut db = Sqlite { conn };
        store::migrate(&mut db)?;
        Ok(db)
    }
}

/// `path` as a SQLite URI that opens it immutable (`%`, `?` and `#` are
/// the characters a URI's path must escape).
fn immutable_uri(path: &Path) -> String {
    let mut uri = String::from("file:");
    for c in path.display().to_string().chars() {
        match c {
            '%' => uri.push_str("%25"),
            '?' => uri.push_str("%3f"),
            '#' => uri.push_str("%23"),
            c => uri.push(c),
        }
    }
    uri.push_str("?immutable=1");
    uri
}

fn foreign(path: &Path, why: String) -> StoreError {
    StoreError::Foreign {
        location: path.display().to_string(),
        why,
    }
}

impl rusqlite::ToSql for Value {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(match self {
            Value::Null => ToSqlOutput::Borrowed(ValueRef::Null),
            Value::Int(v) => ToSqlOutput::Borrowed(ValueRef::Integer(*v)),
            Value::Real(v) => ToSqlOutput::Borrowed(ValueRef::Real(*v)),
            Value::Text(v) => ToSqlOutput::Borrowed(ValueRef::Text(v.as_bytes())),
            Value::Bytes(v) => ToSqlOutput::Borrowed(ValueRef::Blob(v)),
        })
    }
}

impl Sql for Sqlite {
    fn dialect(&self) -> Dialect {
        Dialect::Sqlite
    }

    fn batch(&mut self, sql: &str) -> Result<(), StoreError> {
        // A write transaction takes the lock up front, so two writers wait
        // on the busy timeout instead of failing at their first write.
        let sql = if sql == "BEGIN" {
            "BEGIN IMMEDIATE"
        } else {
            sql
        };
        self.conn.execute_batch(sql).map_err(query_error)
    }

    fn execute(&mut self, sql: &str, params: &[Value]) -> Result<u64, StoreError> {
        let n = self
            .conn
            .execute(sql, rusqlite::params_from_iter(params))
            .map_err(query_error)?;
        Ok(n as u64)
    }

    fn query(&mut self, sql: &str, params: &[Value]) -> Result<Vec<Row>, StoreError> {
        let mut stmt = self.conn.prepare(sql).map_err(query_error)?;
        let columns = stmt.column_count();
        let mut rows = stmt
            .query(rusqlite::params_from_iter(params))
            .map_err(query_error)?;
        let mut out = Vec::new();
        while let Some(r) = rows.next().map_err(query_error)? {
            let mut values = Vec::with_capacity(columns);
            for i in 0..columns {
                values.push(match r.get_ref(i).map_err(query_error)? {
                    ValueRef::Null => Value::Null,
                    ValueRef::Integer(v) => Value::Int(v),
                    ValueRef::Real(v) => Value::Real(v),
                    ValueRef::Text(t) => Value::Text(String::from_utf8_lossy(t).into_owned()),
                    ValueRef::Blob(b) => Value::Bytes(b.to_vec()),
                });
            }
            out.push(Row(values));
        }
        Ok(out)
    }
}
