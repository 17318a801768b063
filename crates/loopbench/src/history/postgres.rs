//! The shared store of a fleet: PostgreSQL through `tokio-postgres`, each
//! call driven to completion on a current-thread runtime of this
//! connection's own (loopbench has no async runtime otherwise). Driving
//! the futures here, not through the synchronous `postgres` wrapper, is
//! what lets every call carry a deadline: on expiry the future, and with it
//! the socket, is dropped, so nothing is left blocked on a dead server.

use super::store::{Dialect, Row, Sql, StoreError, Value};
use std::future::Future;
use std::time::Duration;
use tokio::runtime::Runtime;
use tokio_postgres::types::{IsNull, ToSql, Type};
use tokio_postgres::{Client, NoTls};

pub struct Postgres {
    runtime: Runtime,
    client: Client,
}

/// How long connecting may take, TCP and the startup handshake together,
/// unless the URL says (`?connect_timeout=SECONDS`).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// The server cancels a statement running longer than this (a lock held
/// elsewhere); the URL's own `options` come after it and so win.
const STATEMENT_TIMEOUT: Duration = Duration::from_secs(120);

/// A statement's answer is given up on this long after the server should
/// have cancelled it: a server that stalls cancels nothing.
const ANSWER_GRACE: Duration = Duration::from_secs(30);

/// What went wrong, in words: the server's own message (`password
/// authentication failed for user "bench"`, `database "x" does not
/// exist`, `relation "jobs" does not exist`), else the client's error with
/// its cause; the client's text alone is often just "db error" or "error
/// connecting to server".
fn describe(e: &tokio_postgres::Error) -> String {
    if let Some(db) = e.as_db_error() {
        return db.message().to_string();
    }
    match std::error::Error::source(e) {
        Some(cause) => format!("{e}: {cause}"),
        None => e.to_string(),
    }
}

fn query_error(e: tokio_postgres::Error) -> StoreError {
    let detail = describe(&e);
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
    /// Connect to `url` (`postgres://user@host:port/db`); no TLS. Gives up
    /// after [`CONNECT_TIMEOUT`] (or the URL's `connect_timeout`), also
    /// when a server accepts the connection and never answers.
    pub fn connect(url: &str) -> Result<Self, StoreError> {
        let open_error = |detail: String| StoreError::Open {
            location: redact(url),
            detail,
        };
        let mut config: tokio_postgres::Config = url
            .parse()
            .map_err(|e: tokio_postgres::Error| open_error(e.to_string()))?;
        let limit = config
            .get_connect_timeout()
            .copied()
            .unwrap_or(CONNECT_TIMEOUT);
        // Per TCP attempt (the client's own), and the whole below.
        config.connect_timeout(limit);
        let options = format!(
            "-c statement_timeout={} {}",
            STATEMENT_TIMEOUT.as_millis(),
            config.get_options().unwrap_or("")
        );
        config.options(options.trim_end());
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| open_error(format!("cannot start the client's runtime: {e}")))?;
        let connected =
            runtime.block_on(async { tokio::time::timeout(limit, config.connect(NoTls)).await });
        let (client, connection) = match connected {
            Ok(Ok(pair)) => pair,
            Ok(Err(e)) => return Err(open_error(describe(&e))),
            Err(_) => {
                return Err(open_error(format!(
                    "no answer within {} s (connect timeout; ?connect_timeout=SECONDS in the URL waits longer)",
                    limit.as_secs_f64()
                )))
            }
        };
        // The connection task reads and writes the socket; it runs whenever
        // a call below drives the runtime, and ends with the socket.
        runtime.spawn(async move {
            let _ = connection.await;
        });
        Ok(Postgres { runtime, client })
    }

    /// `call` driven to its end, or to the statement deadline: a server
    /// that stops answering is a lost connection, not a hang.
    fn drive<T>(
        &self,
        call: impl Future<Output = Result<T, tokio_postgres::Error>>,
    ) -> Result<T, StoreError> {
        let limit = STATEMENT_TIMEOUT + ANSWER_GRACE;
        match self
            .runtime
            .block_on(async { tokio::time::timeout(limit, call).await })
        {
            Ok(r) => r.map_err(query_error),
            Err(_) => Err(StoreError::Connection(format!(
                "no answer within {} s (statement timeout)",
                limit.as_secs()
            ))),
        }
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
            Value::Bytes(v) => v.as_slice().to_sql(ty, out),
        }
    }

    fn accepts(_: &Type) -> bool {
        true
    }

    tokio_postgres::types::to_sql_checked!();
}

fn refs(params: &[Value]) -> Vec<&(dyn ToSql + Sync)> {
    params.iter().map(|p| p as &(dyn ToSql + Sync)).collect()
}

impl Sql for Postgres {
    fn dialect(&self) -> Dialect {
        Dialect::Postgres
    }

    fn batch(&mut self, sql: &str) -> Result<(), StoreError> {
        self.drive(self.client.batch_execute(sql))
    }

    fn execute(&mut self, sql: &str, params: &[Value]) -> Result<u64, StoreError> {
        self.drive(self.client.execute(sql, &refs(params)))
    }

    fn query(&mut self, sql: &str, params: &[Value]) -> Result<Vec<Row>, StoreError> {
        let rows = self.drive(self.client.query(sql, &refs(params)))?;
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
                    Type::BYTEA => r
                        .try_get::<_, Option<Vec<u8>>>(i)
                        .map(|v| v.map(Value::Bytes)),
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
