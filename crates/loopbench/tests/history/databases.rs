use super::pg::PgServer;
use super::util::{count, fixture, loopbench, one_line_failure, SHORT_RUN};
use loopbench::history::Location;

#[test]
fn a_scheme_typo_is_refused_and_never_becomes_a_path() {
    let dir = tempfile::tempdir().unwrap();
    let typo = "postgress://bench:secret@127.0.0.1:55432/loopbench";
    let commands: &[&[&str]] = &[
        &[
            "submit",
            "--machines",
            "lab",
            "--",
            "run",
            "--engines",
            "wasmi",
        ],
        &["history"],
        &["jobs"],
    ];
    for args in commands {
        // Through --db and through LOOPBENCH_DB alike.
        for via_env in [false, true] {
            let mut cmd = loopbench(if via_env { typo } else { "unused.sqlite" });
            cmd.current_dir(dir.path()).arg(args[0]);
            if !via_env {
                cmd.args(["--db", typo]);
            }
            cmd.args(&args[1..]);
            let stderr = one_line_failure(&mut cmd);
            assert!(stderr.contains("unknown scheme `postgress`"), "{stderr}");
            assert!(!stderr.contains("secret"), "{stderr}");
        }
    }
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert!(left.is_empty(), "{left:?}");
}

/// Import the same files twice, on the database at `url`: each session is
/// stored once, also in a database written before sessions had an id
/// column (the column is filled from the stored documents).
fn import_twice(url: &str) {
    let dir = tempfile::tempdir().unwrap();
    let s1 = dir.path().join("s1.json");
    loopbench(url)
        .args(SHORT_RUN)
        .arg("--no-history")
        .arg("--json")
        .arg(&s1)
        .assert()
        .success();
    let schema1 = fixture("schema1/session.json");
    let import = |files: &[&std::path::Path]| {
        let out = loopbench(url)
            .args(["history", "import"])
            .args(files)
            .assert()
            .success();
        String::from_utf8_lossy(&out.get_output().stdout).to_string()
    };
    let out = import(&[&s1, &s1, &schema1, &schema1]);
    let lines: Vec<&str> = out.lines().collect();
    assert!(lines[0].contains(": stored as session 1"), "{out}");
    assert!(lines[1].contains("already stored as session 1"), "{out}");
    assert!(lines[2].contains(": stored as session 2"), "{out}");
    assert!(lines[3].contains("already stored as session 2"), "{out}");
    let mut db = Location::parse(url).unwrap().connect().unwrap();
    assert_eq!(count(db.as_mut(), "SELECT count(*) FROM sessions"), 2);

    // A database from before: no uid column, schema version 2 (so nothing
    // that migrations 3 to 11 add).
    for undo in [
        "ALTER TABLE sessions DROP COLUMN reps",
        "ALTER TABLE summaries DROP COLUMN workload",
        "ALTER TABLE summaries DROP COLUMN inside_layout_spread",
        "ALTER TABLE summaries DROP COLUMN layout_sd_high_pct",
        "ALTER TABLE summaries DROP COLUMN layout_sd_low_pct",
        "ALTER TABLE summaries DROP COLUMN layout_sd_pct",
        "ALTER TABLE summaries DROP COLUMN layout_variants",
        "DROP TABLE alerts",
        "DROP TABLE track_runs",
        "DROP TABLE track_periods",
        "ALTER TABLE jobs DROP COLUMN track_id",
        "DROP INDEX sessions_by_track",
        "ALTER TABLE sessions DROP COLUMN track_run_id",
        "ALTER TABLE sessions DROP COLUMN track_id",
        "DROP TABLE tracks",
        "DROP TABLE bisect_steps",
        "DROP TABLE bisects",
        "DROP TABLE machine_settings",
        "ALTER TABLE summaries DROP COLUMN instructions_per_iter",
        "ALTER TABLE summaries DROP COLUMN ref_ci_high_pct",
        "ALTER TABLE summaries DROP COLUMN ref_ci_low_pct",
        "ALTER TABLE summaries DROP COLUMN ref_change_pct",
        "ALTER TABLE sessions DROP COLUMN reference_arm",
        "DROP INDEX sessions_by_uid",
        "ALTER TABLE sessions DROP COLUMN uid",
        "DELETE FROM schema_migrations WHERE version >= 3",
    ] {
        db.batch(undo).unwrap();
    }
    let out = import(&[&s1]);
    assert!(out.contains("already stored as session 1"), "{out}");
    assert_eq!(count(db.as_mut(), "SELECT count(*) FROM sessions"), 2);
}

#[test]
fn importing_a_stored_session_again_stores_nothing_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    import_twice(dir.path().join("h.sqlite").to_str().unwrap());
}

#[test]
fn importing_a_stored_session_again_stores_nothing_on_postgres() {
    let server = PgServer::start();
    import_twice(&server.url);
}

/// Every byte and every file of the directory holding a database.
fn snapshot(dir: &std::path::Path) -> Vec<(String, Vec<u8>)> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let p = e.unwrap().path();
            (p.display().to_string(), std::fs::read(&p).unwrap())
        })
        .collect();
    files.sort();
    files
}

#[test]
fn another_program_s_database_is_never_touched() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("other_app.sqlite");
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch("CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT); INSERT INTO notes (text) VALUES ('mine');")
        .unwrap();
    drop(conn);
    let before = snapshot(dir.path());
    let url = path.to_str().unwrap();
    let commands: &[&[&str]] = &[
        &["history"],
        &["trend", "--shape", "add_chain", "--arm", "wasmi"],
        &["leaderboard"],
        &["jobs"],
        &["compare", "@last", "@last"],
        &["db", "init"],
        &["history", "import", "nothing.json"],
    ];
    for args in commands {
        let stderr = one_line_failure(loopbench(url).current_dir(dir.path()).args(*args));
        if args.get(1) != Some(&"import") {
            assert!(
                stderr.contains("is not a loopbench history database (it holds tables loopbench does not make: notes)"),
                "{args:?}: {stderr}"
            );
        }
        assert_eq!(snapshot(dir.path()), before, "{args:?} changed the file");
    }
    // Issue 53.10: tables named like loopbench's but no migrations table
    // were refused with an empty list of odd tables.
    let lookalike = dir.path().join("lookalike.sqlite");
    rusqlite::Connection::open(&lookalike)
        .unwrap()
        .execute_batch(
            "CREATE TABLE sessions (id INTEGER PRIMARY KEY); CREATE TABLE arms (id INTEGER);",
        )
        .unwrap();
    let stderr = one_line_failure(loopbench(lookalike.to_str().unwrap()).arg("history"));
    assert!(
        stderr.contains("its tables (arms, sessions) are named like loopbench's, but it has no schema_migrations table"),
        "{stderr}"
    );
    // Another program's mark is refused as well.
    rusqlite::Connection::open(&path)
        .unwrap()
        .execute_batch("PRAGMA application_id = 42; DROP TABLE notes;")
        .unwrap();
    let stderr = one_line_failure(loopbench(url).arg("history"));
    assert!(stderr.contains("its application_id is 0x2a"), "{stderr}");
}

#[test]
fn read_only_commands_leave_a_loopbench_database_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("h.sqlite");
    let url = path.to_str().unwrap();
    // Nothing there yet: an empty history, and still nothing there.
    loopbench(url)
        .arg("history")
        .assert()
        .success()
        .stdout(predicates::str::contains("no sessions stored"));
    assert!(!path.exists());

    // A database of a loopbench from before the mark: its tables, no mark.
    loopbench(url).args(SHORT_RUN).assert().success();
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch("PRAGMA application_id = 0; PRAGMA journal_mode = DELETE;")
        .unwrap();
    drop(conn);
    let before = snapshot(dir.path());
    for args in [
        &["history"][..],
        &["trend", "--shape", "add_chain", "--arm", "wasmi"],
    ] {
        loopbench(url).args(args).assert().success();
        assert_eq!(snapshot(dir.path()), before, "{args:?} changed the file");
    }
    // The next write marks it.
    loopbench(url).args(SHORT_RUN).assert().success();
    let conn = rusqlite::Connection::open(&path).unwrap();
    let id: i32 = conn
        .pragma_query_value(None, "application_id", |r| r.get(0))
        .unwrap();
    assert_eq!(id, loopbench::history::sqlite::APPLICATION_ID);
    assert_eq!(count_sessions(&conn), 2);
}

fn count_sessions(conn: &rusqlite::Connection) -> i64 {
    conn.query_row("SELECT count(*) FROM sessions", [], |r| r.get(0))
        .unwrap()
}

/// A listener on 127.0.0.1 that accepts every connection, holds it and
/// never says a word. Each connection's end (the client closing it) is
/// sent on the returned channel.
fn silent_server() -> (u16, std::sync::mpsc::Receiver<()>) {
    use std::io::Read;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let (closed, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for s in listener.incoming() {
            let Ok(mut s) = s else { continue };
            let closed = closed.clone();
            std::thread::spawn(move || {
                let mut buf = [0u8; 1024];
                while matches!(s.read(&mut buf), Ok(n) if n > 0) {}
                let _ = closed.send(());
            });
        }
    });
    (port, rx)
}

#[test]
fn a_server_that_never_answers_is_one_line_not_a_hang() {
    let (port, _closed) = silent_server();
    let url = format!("postgres://bench:secret@127.0.0.1:{port}/loopbench");
    let commands: &[&[&str]] = &[
        &["jobs"],
        &[
            "submit",
            "--machines",
            "lab",
            "--",
            "run",
            "--engines",
            "wasmi",
        ],
    ];
    for args in commands {
        // A generous limit only to turn a hang into a failure.
        let stderr = one_line_failure(
            loopbench(&url)
                .args(*args)
                .timeout(std::time::Duration::from_secs(120)),
        );
        assert!(
            stderr.contains("no answer within 10 s (connect timeout"),
            "{args:?}: {stderr}"
        );
        assert!(!stderr.contains("secret"), "{stderr}");
    }
}

#[test]
fn a_connect_that_times_out_leaves_nothing_on_the_socket() {
    // Every attempt against the silent server gives up and closes its
    // socket: nothing (a thread, a socket) stays blocked per retry.
    let (port, closed) = silent_server();
    let url = format!("postgres://bench@127.0.0.1:{port}/loopbench?connect_timeout=1");
    let location = Location::parse(&url).unwrap();
    for _ in 0..3 {
        let e = location
            .connect()
            .err()
            .expect("a silent server cannot connect");
        assert!(e.to_string().contains("no answer within 1 s"), "{e}");
    }
    for i in 0..3 {
        // Generous: the sockets are closed when connect returns.
        closed
            .recv_timeout(std::time::Duration::from_secs(60))
            .unwrap_or_else(|_| panic!("connection {i} still open after its connect gave up"));
    }
}

#[test]
fn postgres_says_why_it_refused() {
    let server = PgServer::start();
    let mut db = Location::parse(&server.url).unwrap().connect().unwrap();
    db.batch("CREATE ROLE bench LOGIN PASSWORD 'right-one'")
        .unwrap();
    drop(db);
    server.require_passwords();
    let base = server.url.strip_suffix("/postgres").unwrap();
    let host = base.strip_prefix("postgres://postgres@").unwrap();

    let wrong = format!("postgres://bench:wrong-one@{host}/postgres");
    let stderr = one_line_failure(loopbench(&wrong).arg("jobs"));
    assert!(
        stderr.contains("password authentication failed for user \"bench\""),
        "{stderr}"
    );
    assert!(!stderr.contains("wrong-one"), "{stderr}");

    let missing = format!("{base}/nope");
    let stderr = one_line_failure(loopbench(&missing).arg("jobs"));
    assert!(
        stderr.contains("database \"nope\" does not exist"),
        "{stderr}"
    );
}
