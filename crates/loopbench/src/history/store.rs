//! The store: one small SQL trait that SQLite and PostgreSQL both implement
//! ([`Sql`]), the schema as numbered migrations, and every history
//! operation written once against that trait.
//!
//! Why a low-level trait rather than one method per query per backend (as
//! rustc-perf does): loopbench's queries are few and plain, so writing them
//! once keeps the two backends from drifting apart. The dialects differ only
//! in a few words, substituted by [`Dialect::sql`]: the id column, the clock
//! (`{now}`: the database's clock, so a fleet's machines never compare their
//! own clocks) and the parameter marks. Integers are BIGINT and reals
//! DOUBLE PRECISION on both, so one [`Value`] type fits every column.

use thiserror::Error as ThisError;

/// What the store fails with.
#[derive(Debug, ThisError)]
pub enum StoreError {
    #[error("cannot open the history database {location}: {detail}")]
    Open { location: String, detail: String },
    #[error("history database: {0}")]
    Query(String),
    /// The connection to the server is gone (the server restarted, the
    /// network failed): a new connection may succeed where this one cannot.
    #[error("history database: connection lost: {0}")]
    Connection(String),
    #[error("{location} is not a loopbench history database ({why}); refusing to touch it")]
    Foreign { location: String, why: String },
    #[error("{location} holds no loopbench history yet (`loopbench db init --db URL` creates its tables)")]
    NoSchema { location: String },
    /// Only the scheme is named: the rest of the URL may hold a password.
    #[error("history database `{scheme}://...`: unknown scheme `{scheme}`; give a SQLite file path or a postgres:// URL")]
    Scheme { scheme: String },
    #[error("history database: column {column}: expected {expected}")]
    Column {
        column: usize,
        expected: &'static str,
    },
    #[error("history database is at schema version {found}, newer than this loopbench knows ({known}); upgrade loopbench")]
    TooNew { found: i64, known: i64 },
    #[error("no data directory for the history database; name one with --db PATH or {var}")]
    NoDataDir { var: &'static str },
    /// A failure that names the database it happened in.
    #[error("{source} (history database {location})")]
    In {
        location: String,
        #[source]
        source: Box<StoreError>,
    },
}

crate::converts_above!(StoreError);

/// The two SQL dialects.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dialect {
    Sqlite,
    Postgres,
}

impl Dialect {
    /// `text` with the dialect's words in place of `{id}` (an auto-numbered
    /// primary key), `{bytes}` (a binary column), `{now}` (seconds since the epoch, fractional, from the
    /// database's clock), `{document_id}` (the `id` field of a session's
    /// stored document) and `$N` parameter marks (SQLite numbers them `?N`).
    pub fn sql(self, text: &str) -> String {
        match self {
            // Marks first: the JSON path of `{document_id}` has a `$` of its own.
            Dialect::Sqlite => text
                .replace('$', "?")
                .replace("{id}", "INTEGER PRIMARY KEY AUTOINCREMENT")
                .replace("{bytes}", "BLOB")
                .replace("{now}", "((julianday('now') - 2440587.5) * 86400.0)")
                .replace("{document_id}", "json_extract(document, '$.id')"),
            Dialect::Postgres => text
                .replace("{id}", "BIGSERIAL PRIMARY KEY")
                .replace("{bytes}", "BYTEA")
                .replace("{now}", "(extract(epoch from clock_timestamp())::float8)")
                .replace("{document_id}", "(document::json ->> 'id')"),
        }
    }

    /// `column` (seconds since the epoch) as `YYYY-MM-DD HH:MM:SS` UTC, or
    /// `?` for a time no calendar holds (NaN, infinite, before 1970 or
    /// after 9999): a row written straight into the table must not make
    /// every listing fail ("timestamp cannot be NaN").
    pub fn datetime(self, column: &str) -> String {
        let shown = match self {
            Dialect::Sqlite => format!("datetime({column}, 'unixepoch')"),
            Dialect::Postgres => format!(
                "to_char(to_timestamp({column}) AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS')"
            ),
        };
        format!(
            "COALESCE(CASE WHEN {column} >= 0 AND {column} < 253402300800 THEN {shown} END, '?')"
        )
    }
}

/// One SQL value: every column is one of these.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Null,
    Int(i64),
    Real(f64),
    Text(String),
    Bytes(Vec<u8>),
}

impl From<i64> for Value {
    fn from(v: i64) -> Self {
        Value::Int(v)
    }
}
impl From<f64> for Value {
    fn from(v: f64) -> Self {
        Value::Real(v)
    }
}
impl From<&str> for Value {
    fn from(v: &str) -> Self {
        Value::Text(v.to_string())
    }
}
impl From<String> for Value {
    fn from(v: String) -> Self {
        Value::Text(v)
    }
}
impl<T: Into<Value>> From<Option<T>> for Value {
    fn from(v: Option<T>) -> Self {
        v.map_or(Value::Null, Into::into)
    }
}

/// A result row.
pub struct Row(pub Vec<Value>);

impl Row {
    pub fn int(&self, i: usize) -> Result<i64, StoreError> {
        match self.0.get(i) {
            Some(Value::Int(v)) => Ok(*v),
            _ => Err(StoreError::Column {
                column: i,
                expected: "an integer",
            }),
        }
    }
    pub fn opt_int(&self, i: usize) -> Result<Option<i64>, StoreError> {
        match self.0.get(i) {
            Some(Value::Null) => Ok(None),
            _ => self.int(i).map(Some),
        }
    }
    pub fn real(&self, i: usize) -> Result<f64, StoreError> {
        match self.0.get(i) {
            Some(Value::Real(v)) => Ok(*v),
            Some(Value::Int(v)) => Ok(*v as f64),
            _ => Err(StoreError::Column {
                column: i,
                expected: "a number",
            }),
        }
    }
    pub fn opt_real(&self, i: usize) -> Result<Option<f64>, StoreError> {
        match self.0.get(i) {
            Some(Value::Null) => Ok(None),
            _ => self.real(i).map(Some),
        }
    }
    /// A binary column's bytes, `None` where it is NULL.
    pub fn opt_bytes(&self, i: usize) -> Result<Option<&[u8]>, StoreError> {
        match self.0.get(i) {
            Some(Value::Null) => Ok(None),
            Some(Value::Bytes(v)) => Ok(Some(v)),
            _ => Err(StoreError::Column {
                column: i,
                expected: "bytes",
            }),
        }
    }
    pub fn text(&self, i: usize) -> Result<String, StoreError> {
        match self.0.get(i) {
            Some(Value::Text(v)) => Ok(v.clone()),
            _ => Err(StoreError::Column {
                column: i,
                expected: "text",
            }),
        }
    }
    pub fn opt_text(&self, i: usize) -> Result<Option<String>, StoreError> {
        match self.0.get(i) {
            Some(Value::Null) => Ok(None),
            _ => self.text(i).map(Some),
        }
    }
}

/// The little SQL both backends speak. Statements are written once with
/// `$N` marks and the `{...}` words of [`Dialect::sql`].
pub trait Sql: Send {
    fn dialect(&self) -> Dialect;
    /// Statements without parameters or results (schema, BEGIN/COMMIT).
    fn batch(&mut self, sql: &str) -> Result<(), StoreError>;
    /// One statement; the number of rows it changed.
    fn execute(&mut self, sql: &str, params: &[Value]) -> Result<u64, StoreError>;
    /// One statement's rows.
    fn query(&mut self, sql: &str, params: &[Value]) -> Result<Vec<Row>, StoreError>;
}

/// Run `f` in one transaction: committed if it returns `Ok`, rolled back
/// otherwise.
pub fn transaction<T>(
    db: &mut dyn Sql,
    f: impl FnOnce(&mut dyn Sql) -> Result<T, StoreError>,
) -> Result<T, StoreError> {
    db.batch("BEGIN")?;
    match f(db) {
        Ok(v) => {
            db.batch("COMMIT")?;
            Ok(v)
        }
        Err(e) => {
            // The error that matters is the first one.
            let _ = db.batch("ROLLBACK");
            Err(e)
        }
    }
}

/// The schema, one migration per version, applied in order and recorded in
/// `schema_migrations`. Never edit a released migration: add the next one.
///
/// Parameters live in narrow tables keyed by id (machines, shapes, arms,
/// sessions), numbers in the summary and rep tables, as in rustc-perf's
/// schema. A session row also keeps the document as it was saved
/// (`document`), so that a stored session loads back exactly, every field
/// of every schema version, for `compare @last` and friends; queries never
/// read it.
pub const MIGRATIONS: &[&str] = &[
    // 1: sessions, machines, arms, shapes, summaries, reps, baselines.
    "CREATE TABLE machines (
        id {id},
        fingerprint TEXT NOT NULL UNIQUE,
        hostname TEXT NOT NULL,
        cpu TEXT NOT NULL,
        cores BIGINT NOT NULL,
        arch TEXT NOT NULL,
        os TEXT NOT NULL,
        machine_json TEXT NOT NULL
    );
    CREATE TABLE sessions (
        id {id},
        machine_id BIGINT NOT NULL REFERENCES machines(id),
        recorded_at DOUBLE PRECISION NOT NULL,
        origin TEXT NOT NULL,
        label TEXT,
        job_id BIGINT,
        schema_name TEXT NOT NULL,
        complete BIGINT NOT NULL,
        metric TEXT NOT NULL,
        baseline_arm TEXT NOT NULL,
        null_arm TEXT NOT NULL,
        build_profile TEXT NOT NULL,
        wall_seconds DOUBLE PRECISION NOT NULL,
        errors BIGINT NOT NULL,
        document TEXT NOT NULL
    );
    CREATE TABLE arms (
        id {id},
        session_id BIGINT NOT NULL REFERENCES sessions(id),
        label TEXT NOT NULL,
        engine TEXT NOT NULL,
        options TEXT NOT NULL,
        version TEXT NOT NULL,
        source TEXT NOT NULL,
        commit_id TEXT,
        UNIQUE (session_id, label)
    );
    CREATE TABLE shapes (
        id {id},
        name TEXT NOT NULL UNIQUE,
        prices TEXT NOT NULL
    );
    CREATE TABLE summaries (
        id {id},
        session_id BIGINT NOT NULL REFERENCES sessions(id),
        shape_id BIGINT NOT NULL REFERENCES shapes(id),
        arm_id BIGINT NOT NULL REFERENCES arms(id),
        role TEXT NOT NULL,
        iters BIGINT NOT NULL,
        verified_reps BIGINT NOT NULL,
        median_ns DOUBLE PRECISION,
        min_ns DOUBLE PRECISION,
        ns_per_op DOUBLE PRECISION,
        vs_arm TEXT,
        change_pct DOUBLE PRECISION,
        ci_low_pct DOUBLE PRECISION,
        ci_high_pct DOUBLE PRECISION,
        verdict TEXT,
        epochs BIGINT,
        skipped TEXT,
        error TEXT
    );
    CREATE INDEX summaries_by_shape ON summaries (shape_id, arm_id);
    CREATE TABLE reps (
        summary_id BIGINT NOT NULL REFERENCES summaries(id),
        epoch BIGINT NOT NULL,
        round BIGINT NOT NULL,
        slot BIGINT NOT NULL,
        iters BIGINT NOT NULL,
        ns DOUBLE PRECISION NOT NULL,
        cpu_ns DOUBLE PRECISION,
        involuntary_switches BIGINT
    );
    CREATE INDEX reps_by_summary ON reps (summary_id);
    CREATE TABLE baselines (
        name TEXT PRIMARY KEY,
        session_id BIGINT NOT NULL REFERENCES sessions(id)
    );",
    // 2: the job queue of a fleet, and what happened to each job.
    "CREATE TABLE jobs (
        id {id},
        label TEXT NOT NULL,
        args TEXT NOT NULL,
        loopbench_version TEXT NOT NULL,
        state TEXT NOT NULL,
        agent TEXT,
        attempts BIGINT NOT NULL,
        submitted_at DOUBLE PRECISION NOT NULL,
        started_at DOUBLE PRECISION,
        heartbeat_at DOUBLE PRECISION,
        finished_at DOUBLE PRECISION,
        session_id BIGINT REFERENCES sessions(id),
        error TEXT
    );
    CREATE INDEX jobs_by_state ON jobs (label, state, id);
    CREATE TABLE job_events (
        id {id},
        job_id BIGINT NOT NULL REFERENCES jobs(id),
        at DOUBLE PRECISION NOT NULL,
        agent TEXT,
        event TEXT NOT NULL
    );",
    // 3: a session's own id (the document's `id`), so that importing a
    // session already stored stores nothing. Not UNIQUE: databases written
    // before may already hold a session twice.
    "ALTER TABLE sessions ADD COLUMN uid TEXT;
    UPDATE sessions SET uid = {document_id};
    CREATE INDEX sessions_by_uid ON sessions (uid);",
    // 4: anchored sessions: the reference arm of a session, each result's
    // ratio to it (the series that carries across sessions), and the exact
    // instruction count per iteration of a callgrind session; the setting
    // `noise --record` chose for a machine.
    "ALTER TABLE sessions ADD COLUMN reference_arm TEXT;
    ALTER TABLE summaries ADD COLUMN ref_change_pct DOUBLE PRECISION;
    ALTER TABLE summaries ADD COLUMN ref_ci_low_pct DOUBLE PRECISION;
    ALTER TABLE summaries ADD COLUMN ref_ci_high_pct DOUBLE PRECISION;
    ALTER TABLE summaries ADD COLUMN instructions_per_iter DOUBLE PRECISION;
    CREATE TABLE machine_settings (
        fingerprint TEXT PRIMARY KEY,
        rep_ms DOUBLE PRECISION NOT NULL,
        source TEXT NOT NULL,
        recorded_at DOUBLE PRECISION NOT NULL
    );",
    // 5: bisects, resumable: one row per bisect (keyed by what it
    // measures), one per measured revision with its verdict, so a bisect
    // run again goes on from the steps it finished.
    "CREATE TABLE bisects (
        id {id},
        key TEXT NOT NULL UNIQUE,
        engine TEXT NOT NULL,
        good_commit TEXT NOT NULL,
        bad_commit TEXT NOT NULL,
        shapes TEXT NOT NULL,
        metric TEXT NOT NULL,
        started_at DOUBLE PRECISION NOT NULL,
        finished_at DOUBLE PRECISION,
        result TEXT
    );
    CREATE TABLE bisect_steps (
        bisect_id BIGINT NOT NULL REFERENCES bisects(id),
        commit_id TEXT NOT NULL,
        position BIGINT NOT NULL,
        verdict TEXT NOT NULL,
        detail TEXT NOT NULL,
        session_id BIGINT REFERENCES sessions(id),
        seconds DOUBLE PRECISION NOT NULL,
        measured_at DOUBLE PRECISION NOT NULL,
        PRIMARY KEY (bisect_id, commit_id)
    );",
    // 6: tracking: an engine's branch followed over time (`tracks`: what
    // to measure, the exact job it queues, the machine labels and the
    // period of its schedule), a schedule that queues one job per period
    // and machine label (`track_periods`: the primary key is the claim),
    // the tracked runs of `track run` (one session per shape, so an
    // interrupted run goes on from the shapes it recorded), and the alerts
    // the track's anchored series raise (one row per flagged step).
    "CREATE TABLE tracks (
        id {id},
        name TEXT NOT NULL UNIQUE,
        arm TEXT NOT NULL,
        reference TEXT NOT NULL,
        shapes TEXT NOT NULL,
        args TEXT NOT NULL,
        job TEXT NOT NULL,
        labels TEXT NOT NULL,
        every_s DOUBLE PRECISION,
        created_at DOUBLE PRECISION NOT NULL
    );
    CREATE TABLE track_periods (
        track_id BIGINT NOT NULL REFERENCES tracks(id),
        label TEXT NOT NULL,
        period BIGINT NOT NULL,
        job_id BIGINT REFERENCES jobs(id),
        queued_at DOUBLE PRECISION NOT NULL,
        PRIMARY KEY (track_id, label, period)
    );
    CREATE TABLE track_runs (
        id {id},
        track_id BIGINT NOT NULL REFERENCES tracks(id),
        fingerprint TEXT NOT NULL,
        commit_id TEXT,
        started_at DOUBLE PRECISION NOT NULL,
        finished_at DOUBLE PRECISION
    );
    ALTER TABLE sessions ADD COLUMN track_id BIGINT;
    ALTER TABLE sessions ADD COLUMN track_run_id BIGINT;
    CREATE INDEX sessions_by_track ON sessions (track_id, machine_id);
    ALTER TABLE jobs ADD COLUMN track_id BIGINT;
    CREATE TABLE alerts (
        id {id},
        track_id BIGINT NOT NULL REFERENCES tracks(id),
        machine_id BIGINT NOT NULL REFERENCES machines(id),
        shape TEXT NOT NULL,
        arm TEXT NOT NULL,
        series TEXT NOT NULL,
        session_id BIGINT NOT NULL REFERENCES sessions(id),
        before_session_id BIGINT NOT NULL REFERENCES sessions(id),
        before_commit TEXT,
        after_commit TEXT,
        change_pct DOUBLE PRECISION NOT NULL,
        ci_low_pct DOUBLE PRECISION NOT NULL,
        ci_high_pct DOUBLE PRECISION NOT NULL,
        created_at DOUBLE PRECISION NOT NULL,
        UNIQUE (track_id, machine_id, shape, arm, series, session_id)
    );",
    // 7: a machine's recorded setting names its schedule too (`noise
    // --record` may choose duets); absent: sequential.
    "ALTER TABLE machine_settings ADD COLUMN schedule TEXT;",
    // 8: and its estimator (`noise --record` replays its own reps through
    // each); absent: the median.
    "ALTER TABLE machine_settings ADD COLUMN estimator TEXT;",
    // 9: an arm's spread across code layouts (the SD of its time between
    // layout variants of its build, with its interval, and how many ran),
    // and whether its change moves less than that spread.
    "ALTER TABLE summaries ADD COLUMN layout_variants BIGINT;
    ALTER TABLE summaries ADD COLUMN layout_sd_pct DOUBLE PRECISION;
    ALTER TABLE summaries ADD COLUMN layout_sd_low_pct DOUBLE PRECISION;
    ALTER TABLE summaries ADD COLUMN layout_sd_high_pct DOUBLE PRECISION;
    ALTER TABLE summaries ADD COLUMN inside_layout_spread BIGINT;",
    // 10: a user's workload (a WASI command) is its module, invocation and
    // inputs as well as its name: its identity keys its series, so that
    // two workloads of one name never share one.
    "ALTER TABLE summaries ADD COLUMN workload TEXT;",
    // 11: a session's reps (every rep, and the values of which there is one
    // per epoch) are kept compressed beside its document, no longer inline
    // in it nor one row each in `reps` (which stays, filled by sessions
    // stored before): a tenth of the room.
    "ALTER TABLE sessions ADD COLUMN reps {bytes};",
];

/// The PostgreSQL advisory lock that serialises migrations ("loop").
const MIGRATION_LOCK: i64 = 0x6c6f_6f70;

/// Bring the schema up to date; the versions applied now. Agents starting
/// together on an empty PostgreSQL database take turns (an advisory lock);
/// SQLite's write transactions already do.
pub fn migrate(db: &mut dyn Sql) -> Result<Vec<i64>, StoreError> {
    // Up to date is the common case, and it only reads: a role without
    // CREATE on the schema (the README's submitter and agent) gets through.
    if has_schema(db)? && version(db)? == MIGRATIONS.len() as i64 {
        return Ok(Vec::new());
    }
    if db.dialect() == Dialect::Sqlite {
        return migrate_locked(db);
    }
    db.batch(&format!("SELECT pg_advisory_lock({MIGRATION_LOCK})"))?;
    let result = migrate_locked(db);
    let unlocked = db.batch(&format!("SELECT pg_advisory_unlock({MIGRATION_LOCK})"));
    let applied = result?;
    unlocked?;
    Ok(applied)
}

fn migrate_locked(db: &mut dyn Sql) -> Result<Vec<i64>, StoreError> {
    let d = db.dialect();
    db.batch(&d.sql(
        "CREATE TABLE IF NOT EXISTS schema_migrations (
            version BIGINT PRIMARY KEY,
            applied_at DOUBLE PRECISION NOT NULL
        )",
    ))?;
    let known = MIGRATIONS.len() as i64;
    let mut applied = Vec::new();
    for (i, m) in MIGRATIONS.iter().enumerate() {
        let version = i as i64 + 1;
        let done = transaction(db, |db| {
            let have = db.query("SELECT max(version) FROM schema_migrations", &[])?;
            let current = have.first().map(|r| r.opt_int(0)).transpose()?.flatten();
            let current = current.unwrap_or(0);
            if current > known {
                return Err(StoreError::TooNew {
                    found: current,
                    known,
                });
            }
            if current >= version {
                return Ok(false);
            }
            db.batch(&d.sql(m))?;
            db.execute(
                &d.sql("INSERT INTO schema_migrations (version, applied_at) VALUES ($1, {now})"),
                &[Value::Int(version)],
            )?;
            Ok(true)
        })?;
        if done {
            applied.push(version);
        }
    }
    Ok(applied)
}

/// Every table loopbench makes.
pub fn tables() -> Vec<&'static str> {
    let created = MIGRATIONS.iter().flat_map(|m| {
        m.split("CREATE TABLE ")
            .skip(1)
            .filter_map(|rest| rest.split_whitespace().next())
    });
    std::iter::once("schema_migrations")
        .chain(created)
        .collect()
}

/// Refuse a database newer than this loopbench, without changing it (the
/// check of read-only commands, which never migrate).
pub fn check_version(db: &mut dyn Sql) -> Result<(), StoreError> {
    let (found, known) = (version(db)?, MIGRATIONS.len() as i64);
    if found > known {
        return Err(StoreError::TooNew { found, known });
    }
    Ok(())
}

/// Whether the database has loopbench's schema (its `schema_migrations`
/// table), asked of the catalog, so that nothing is created or fails.
pub fn has_schema(db: &mut dyn Sql) -> Result<bool, StoreError> {
    let sql = match db.dialect() {
        Dialect::Sqlite => {
            "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'"
        }
        Dialect::Postgres => {
            "SELECT count(*) FROM information_schema.tables
             WHERE table_schema = current_schema() AND table_name = 'schema_migrations'"
        }
    };
    let rows = db.query(sql, &[])?;
    Ok(rows.first().map(|r| r.int(0)).transpose()? == Some(1))
}

/// The schema version of the database (0: empty).
pub fn version(db: &mut dyn Sql) -> Result<i64, StoreError> {
    let rows = db.query("SELECT max(version) FROM schema_migrations", &[])?;
    Ok(rows
        .first()
        .map(|r| r.opt_int(0))
        .transpose()?
        .flatten()
        .unwrap_or(0))
}
