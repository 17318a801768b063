//! The local store: a SQLite file (the SQLite bundled into `rusqlite`, so
//! no system library is needed).

use super::store::{Dialect, Row, Sql, StoreError, Value};
use rusqlite::types::{ToSqlOutput, ValueRef};
use std::path::Path;
use std::time::Duration;

pub struct Sqlite {
    conn: rusqlite::Connection,
}

fn query_error(e: rusqlite::Error) -> StoreError {
    StoreError::Query(e.to_string())
}

impl Sqlite {
    pub fn open(path: &Path) -> Result<Self, StoreError> {
        let open_error = |detail: String| StoreError::Open {
            location: path.display().to_string(),
            detail,
        };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| open_error(e.to_string()))?;
        }
        let conn = rusqlite::Connection::open(path).map_err(|e| open_error(e.to_string()))?;
        // Two loopbench processes recording at once wait for each other
        // instead of failing; WAL lets readers go on meanwhile.
        conn.busy_timeout(Duration::from_secs(30))
            .map_err(|e| open_error(e.to_string()))?;
        conn.execute_batch("PRAGMA journal_mode = WAL; PRAGMA foreign_keys = ON;")
            .map_err(|e| open_error(e.to_string()))?;
        Ok(Sqlite { conn })
    }
}

impl rusqlite::ToSql for Value {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(match self {
            Value::Null => ToSqlOutput::Borrowed(ValueRef::Null),
            Value::Int(v) => ToSqlOutput::Borrowed(ValueRef::Integer(*v)),
            Value::Real(v) => ToSqlOutput::Borrowed(ValueRef::Real(*v)),
            Value::Text(v) => ToSqlOutput::Borrowed(ValueRef::Text(v.as_bytes())),
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
                    ValueRef::Text(t) | ValueRef::Blob(t) => {
                        Value::Text(String::from_utf8_lossy(t).into_owned())
                    }
                });
            }
            out.push(Row(values));
        }
        Ok(out)
    }
}
