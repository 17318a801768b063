//! The shared store of a fleet: PostgreSQL through the synchronous
//! `postgres` client (loopbench has no async runtime of its own).

use super::store::{Dialect, Row, Sql, StoreError, Value};
use postgres::types::{IsNull, ToSql, Type};
use postgres::{Client, NoTls};

pub struct Postgres {
    client: Client,
}

fn query_error(e: postgres::Error) -> StoreError {
    // The server's own message (e.g. "relation jobs does not exist") is in
    // the source; the outer text alone is often just "db error".
    let detail = match e.as_db_error() {
        Some(db) => db.message().to_string(),
        None => e.to_string(),
    };
    // Closed, an I/O failure, or the server's connection exception (08) and
    // shutdown (57P) classes: the connection is gone, not the statement wrong.
    let class = e.code().map(|c| c.code().to_string()).unwrap_or_default();
    let io = std::error::Error::source(&e).is_some_and(|s| s.is::<std::io::Error>());
    if e.is_closed() || io || class.starts_with("08") || class.starts_with("57P") {
        return StoreError::Connection(detail);
    }
    StoreError::Query(detail)
}

impl Postgres {
    /// Connect to `url` (`postgres://user@host:port/db`); no TLS.
    pub fn connect(url: &str) -> Result<Self, StoreError> {
        let client = Client::connect(url, NoTls).map_err(|e| StoreError::Open {
            location: redact(url),
            detail: e.to_string(),
        })?;
        Ok(Postgres { client })
    }
}

/// `url` without its password (`user:PASSWORD@` or `password=` in the
/// query), for messages.
pub fn redact(url: &str) -> String {
    let (base, query) = match url.split_once('?') {
        Some((b, q)) => (b, Some(q)),
        None => (url, None),
    };
    let mut out = match (base.find("://"), base.rfind('@')) {
        (Some(s), Some(at)) if at > s => match base[s + 3..at].split_once(':') {
            Some((user, _)) => format!("{}{user}:***{}", &base[..s + 3], &base[at..]),
            None => base.to_string(),
        },
        _ => base.to_string(),
    };
    if let Some(q) = query {
        let params: Vec<String> = q
            .split('&')
            .map(|p| match p.split_once('=') {
                Some((k, _)) if k.eq_ignore_ascii_case("password") => format!("{k}=***"),
                _ => p.to_string(),
            })
            .collect();
        out.push('?');
        out.push_str(&params.join("&"));
    }
    out
}

/// Values go to the server typed by the column they meet: integers are
/// BIGINT and reals DOUBLE PRECISION in the schema, but a parameter may
/// meet an INT4 or NUMERIC expression, so the conversion follows `ty`.
impl ToSql for Value {
    fn to_sql(
        &self,
        ty: &Type,
        out: &mut bytes::BytesMut,
    ) -> Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
        match self {
            Value::Null => Ok(IsNull::Yes),
            Value::Int(v) => match *ty {
                Type::INT4 => i32::try_from(*v)?.to_sql(ty, out),
                Type::FLOAT8 => (*v as f64).to_sql(ty, out),
                _ => v.to_sql(ty, out),
            },
            Value::Real(v) => v.to_sql(ty, out),
            Value::Text(v) => v.as_str().to_sql(ty, out),
        }
    }

    fn accepts(_: &Type) -> bool {
        true
    }

    postgres::types::to_sql_checked!();
}

fn refs(params: &[Value]) -> Vec<&(dyn ToSql + Sync)> {
    params.iter().map(|p| p as &(dyn ToSql + Sync)).collect()
}

impl Sql for Postgres {
    fn dialect(&self) -> Dialect {
        Dialect::Postgres
    }

    fn batch(&mut self, sql: &str) -> Result<(), StoreError> {
        self.client.batch_execute(sql).map_err(query_error)
    }

    fn execute(&mut self, sql: &str, params: &[Value]) -> Result<u64, StoreError> {
        self.client.execute(sql, &refs(params)).map_err(query_error)
    }

    fn query(&mut self, sql: &str, params: &[Value]) -> Result<Vec<Row>, StoreError> {
        let rows = self.client.query(sql, &refs(params)).map_err(query_error)?;
        let mut out = Vec::with_capacity(rows.len());
        for r in rows {
            let mut values = Vec::with_capacity(r.len());
            for (i, c) in r.columns().iter().enumerate() {
                let v = match *c.type_() {
                    Type::INT8 => r.try_get::<_, Option<i64>>(i).map(|v| v.map(Value::Int)),
                    Type::INT4 => r
                        .try_get::<_, Option<i32>>(i)
                        .map(|v| v.map(|v| Value::Int(v.into()))),
                    Type::FLOAT8 => r.try_get::<_, Option<f64>>(i).map(|v| v.map(Value::Real)),
                    Type::FLOAT4 => r
                        .try_get::<_, Option<f32>>(i)
                        .map(|v| v.map(|v| Value::Real(v.into()))),
                    _ => r
                        .try_get::<_, Option<String>>(i)
                        .map(|v| v.map(Value::Text)),
                };
                values.push(v.map_err(query_error)?.unwrap_or(Value::Null));
            }
            out.push(Row(values));
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::redact;

    #[test]
    fn passwords_never_reach_messages() {
        assert_eq!(
            redact("postgres://bench:s3cr:et@host:5432/db"),
            "postgres://bench:***@host:5432/db"
        );
        assert_eq!(
            redact("postgres://bench@host/db?password=s3cret&sslmode=disable"),
            "postgres://bench@host/db?password=***&sslmode=disable"
        );
        assert_eq!(redact("postgres://host/db"), "postgres://host/db");
    }
}
