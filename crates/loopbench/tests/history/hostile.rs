//! Issue 26's own hostile and broken inputs on the history and the fleet,
//! through the real binary (and a private PostgreSQL server where the
//! fleet is involved). Each ends in one line or in a correct listing:
//! never a hang, a panic, raw escape codes or a listing that fails for
//! everyone because of one row.

use super::fleet::{agent, wait};
use super::pg::{is_root, PgServer};
use super::util::{count, loopbench, one_line_failure, SHORT_RUN};
use loopbench::history::Location;
use std::path::Path;
use std::time::Duration;

/// A hang guard only: every command here ends in seconds.
const HANG: Duration = Duration::from_secs(120);

fn stdout(cmd: &mut assert_cmd::Command) -> String {
    let out = cmd.timeout(HANG).assert().success();
    String::from_utf8_lossy(&out.get_output().stdout).to_string()
}

/// No byte of `text` would act on a terminal.
fn assert_no_escapes(text: &str) {
    assert!(
        !text.contains('\u{1b}') && !text.contains('\u{7}'),
        "raw control characters: {text:?}"
    );
}

/// A FIFO as the history database hung `history` forever (SQLite blocks
/// opening it), a directory was a "disk I/O error", and a device given as
/// a document (`report /dev/zero`) was read until memory ran out. Each is
/// one line now, and `run` refuses before measuring.
#[test]
fn a_fifo_a_directory_or_a_device_is_neither_a_database_nor_a_document() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo.sqlite");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a path this test owns.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
    let fifo = fifo.to_str().unwrap();
    for args in [&["history"][..], &["jobs"], &["run", "--engines", "wasmi"]] {
        let e = one_line_failure(loopbench(fifo).args(args).timeout(HANG));
        assert!(
            e.contains("it is a FIFO; a history database is a file"),
            "{e}"
        );
    }
    let here = dir.path().to_str().unwrap();
    let e = one_line_failure(loopbench(here).arg("history").timeout(HANG));
    assert!(e.contains("it is a directory"), "{e}");
    for args in [
        &["report", "/dev/zero"][..],
        &["history", "import", "/dev/zero"],
        &["compare", "/dev/zero", "/dev/zero"],
    ] {
        let e = one_line_failure(loopbench("unused.sqlite").args(args).timeout(HANG));
        assert!(
            e.contains("/dev/zero: a device, not a document file"),
            "{e}"
        );
    }
}

/// `--shape-file /dev/zero` was read without end by `submit` (and `run`);
/// a shape file is refused past 64 MiB, and nothing is queued.
#[test]
fn a_shape_file_without_end_is_refused_at_its_size_limit() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("q.sqlite");
    let db = db.to_str().unwrap();
    for args in [
        &[
            "submit",
            "--machines",
            "lab",
            "--",
            "run",
            "--engines",
            "wasmi",
        ][..],
        &["run", "--engines", "wasmi"],
    ] {
        let e = one_line_failure(
            loopbench(db)
                .args(args)
                .args(["--shape-file", "/dev/zero"])
                .timeout(HANG),
        );
        assert!(
            e.contains("/dev/zero: larger than 64 MiB, the most a shape file may hold"),
            "{e}"
        );
    }
    assert!(!Path::new(db).exists(), "a database was made");
}

/// A label or agent name with an escape sequence, a line break or spaces
/// at its ends was queued (or taken) as typed: a job no agent started as
/// the user meant ever takes, printed raw by `submit` and `jobs`. Refused
/// in one line that shows it escaped; nothing is queued.
#[test]
fn labels_and_names_that_are_not_printable_text_are_refused() {
    let server = PgServer::start();
    let url = server.url.as_str();
    loopbench(url).args(["db", "init"]).assert().success();
    for label in ["lab\u{1b}[31m", "lab\nother", " lab", "lab\u{202e}"] {
        let e = one_line_failure(
            loopbench(url)
                .args(["submit", "--machines", &format!("ok,{label}"), "--"])
                .args(SHORT_RUN),
        );
        assert!(e.contains("--machines `"), "{e}");
        assert_no_escapes(&e);
        let e = one_line_failure(loopbench(url).args(["agent", "--label", label]));
        assert!(e.contains("--label `"), "{e}");
        let e = one_line_failure(loopbench(url).args(["agent", "--label", "ok", "--name", label]));
        assert!(e.contains("--name `"), "{e}");
    }
    let mut db = Location::parse(url).unwrap().connect().unwrap();
    assert_eq!(count(db.as_mut(), "SELECT count(*) FROM jobs"), 0);
}

/// Rows written straight into the queue (whoever may insert into `jobs`
/// can): control characters in a label, an agent's name, the arguments
/// and the error were printed raw by `jobs`; a `submitted_at` of NaN or
/// 1e300 made `jobs` fail for everyone ("timestamp cannot be NaN"), and a
/// session's `recorded_at` did the same to `history`, `trend` and the
/// leaderboard. Each is shown escaped, and a time no calendar holds is `?`.
#[test]
fn odd_rows_in_the_queue_and_the_history_are_listed_not_obeyed() {
    let server = PgServer::start();
    let url = server.url.as_str();
    loopbench(url).args(SHORT_RUN).assert().success();
    let mut db = Location::parse(url).unwrap().connect().unwrap();
    db.batch(
        "INSERT INTO jobs (label, args, loopbench_version, state, agent, attempts, submitted_at, error)
         VALUES (E'lab\\x1b[2J', E'[\"run\", \"--shapes\", \"\\u001b]0;pwn\\u0007\"]', 'x', 'failed',
                 E'agent\\x1b[31m', 1, 'NaN', E'boom\\x1b[0m\\nsecond line'),
                ('lab', '[\"run\"]', 'x', 'queued', NULL, 0, 1e300, NULL);
         INSERT INTO job_events (job_id, at, agent, event) VALUES (1, 0, E'a\\x07', E'odd\\x1b[1m');
         UPDATE sessions SET recorded_at = 'NaN';",
    )
    .unwrap();
    let jobs = stdout(loopbench(url).args(["jobs", "--events"]));
    assert_no_escapes(&jobs);
    assert!(jobs.contains("lab\\u{1b}[2J"), "{jobs}");
    assert!(
        jobs.contains("by agent\\u{1b}[31m: boom\\u{1b}[0m\\nsecond line"),
        "{jobs}"
    );
    assert!(jobs.contains("submitted ?"), "{jobs}");
    assert!(jobs.contains("odd\\u{1b}[1m"), "{jobs}");
    for args in [
        &["history"][..],
        &["trend", "--shape", "add_chain", "--arm", "wasmi"],
        &["leaderboard"],
    ] {
        let out = stdout(loopbench(url).args(args));
        assert!(out.contains(" ?") || out.contains("(?)"), "{args:?}: {out}");
    }
}

/// A stored shape name with an escape sequence and a line break reached
/// the terminal raw from `trend` and broke the leaderboard's Markdown row
/// (it escaped `|` only), and an arm's commit of multi-byte characters (a
/// row written into `arms`) made both panic, cut at byte 12. Now both go
/// through the markup layer, and the commit is cut at 12 characters.
#[test]
fn stored_names_and_commits_are_text_to_trend_and_the_leaderboard() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.sqlite");
    let url = db.to_str().unwrap();
    let s1 = dir.path().join("s1.json");
    loopbench(url)
        .args(SHORT_RUN)
        .arg("--no-history")
        .arg("--json")
        .arg(&s1)
        .assert()
        .success();
    let name = "red\u{1b}[31m|\nshape";
    let mut doc: serde_json::Value = serde_json::from_slice(&std::fs::read(&s1).unwrap()).unwrap();
    doc["id"] = "hostile-names".into();
    doc["results"][0]["shape"] = name.into();
    std::fs::write(&s1, doc.to_string()).unwrap();
    loopbench(url)
        .args(["history", "import"])
        .arg(&s1)
        .assert()
        .success();
    let conn = rusqlite::Connection::open(&db).unwrap();
    // Byte 12 falls inside a character.
    let commit = format!("a{}", "é".repeat(20));
    conn.execute("UPDATE arms SET commit_id = ?1", [&commit])
        .unwrap();
    drop(conn);
    let trend = stdout(loopbench(url).args(["trend", "--shape", name, "--arm", "wasmi"]));
    assert_no_escapes(&trend);
    assert!(trend.contains("red\\u{1b}[31m|\\nshape"), "{trend}");
    let cut = format!("@a{}", "é".repeat(11));
    assert!(trend.contains(&cut), "{trend}");
    let board = stdout(loopbench(url).args(["leaderboard", "--markdown", "-"]));
    assert_no_escapes(&board);
    assert!(board.contains("| red\\u{1b}[31m\\|<br>shape |"), "{board}");
    assert!(board.contains(&format!("{cut} |")), "{board}");
}

/// A history in a directory this user cannot write (a read-only mount,
/// another user's directory): SQLite cannot make the WAL's shared-memory
/// file beside it, so every read-only command failed with "unable to open
/// database file". They read it now; `run` is refused before measuring.
#[test]
fn a_history_in_a_directory_this_user_cannot_write_is_read() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let ro = dir.path().join("ro");
    std::fs::create_dir(&ro).unwrap();
    let db = ro.join("h.sqlite");
    let url = db.to_str().unwrap();
    loopbench(url).args(SHORT_RUN).assert().success();
    // A WAL database, as every loopbench history is.
    let conn = rusqlite::Connection::open(&db).unwrap();
    let mode: String = conn
        .pragma_query_value(None, "journal_mode", |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
    drop(conn);
    for p in [dir.path(), &ro] {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o555)).unwrap();
    }
    // Root writes anywhere: the commands run as `nobody` then.
    let as_reader = |args: &[&str]| {
        let mut cmd = if is_root() {
            let mut c = assert_cmd::Command::new("runuser");
            c.args(["-u", "nobody", "--", env!("CARGO_BIN_EXE_loopbench")]);
            c
        } else {
            assert_cmd::Command::cargo_bin("loopbench").unwrap()
        };
        cmd.env("LOOPBENCH_DB", url).args(args).timeout(HANG);
        cmd
    };
    let listing = stdout(&mut as_reader(&["history"]));
    assert!(listing.contains("add_chain"), "{listing}");
    stdout(&mut as_reader(&[
        "trend",
        "--shape",
        "add_chain",
        "--arm",
        "wasmi",
    ]));
    stdout(&mut as_reader(&["leaderboard"]));
    stdout(&mut as_reader(&["jobs"]));
    let e = one_line_failure(&mut as_reader(SHORT_RUN));
    assert!(e.contains("cannot open the history database"), "{e}");
    for p in [dir.path(), &ro] {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
}

/// Already well: a truncated history and a file of random bytes are one
/// line each; so are odd PostgreSQL URLs, and no password is shown.
#[test]
fn broken_files_and_odd_urls_are_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.sqlite");
    loopbench(db.to_str().unwrap())
        .args(SHORT_RUN)
        .assert()
        .success();
    // Checkpointed into the file, then cut.
    rusqlite::Connection::open(&db)
        .unwrap()
        .execute_batch("PRAGMA journal_mode = DELETE")
        .unwrap();
    let bytes = std::fs::read(&db).unwrap();
    let cut = dir.path().join("cut.sqlite");
    std::fs::write(&cut, &bytes[..bytes.len().min(3000)]).unwrap();
    let noise = dir.path().join("noise.sqlite");
    std::fs::write(
        &noise,
        (0..5000u32)
            .map(|i| (i * 7919 % 251) as u8)
            .collect::<Vec<_>>(),
    )
    .unwrap();
    for (file, says) in [
        (&cut, "database disk image is malformed"),
        (&noise, "file is not a database"),
    ] {
        let e = one_line_failure(
            loopbench(file.to_str().unwrap())
                .arg("history")
                .timeout(HANG),
        );
        assert!(e.contains(says), "{e}");
    }
    for (url, says) in [
        ("postgres://", "both host and hostaddr are missing"),
        (
            "postgres://u:hunter2@127.0.0.1:99999/x",
            "invalid connection string",
        ),
        ("postgres://u:hunter2@[::1/x", "invalid connection string"),
        (
            "postgres://u:hunter2@127.0.0.1:1/x?connect_timeout=abc",
            "invalid connection string",
        ),
    ] {
        let e = one_line_failure(loopbench(url).arg("jobs").timeout(HANG));
        assert!(e.contains(says), "{url}: {e}");
        assert!(!e.contains("hunter2"), "{e}");
    }
}

/// Already well: job rows of odd shapes (arguments that are JSON null, an
/// empty list, a number among strings, another command, nesting 100 000
/// deep) are each failed with a reason, and the agent goes on and ends.
#[test]
fn odd_job_rows_are_failed_with_a_reason_and_the_agent_goes_on() {
    let server = PgServer::start();
    let url = server.url.as_str();
    loopbench(url).args(["db", "init"]).assert().success();
    let mut db = Location::parse(url).unwrap().connect().unwrap();
    db.batch(
        "INSERT INTO jobs (label, args, loopbench_version, state, attempts, submitted_at) VALUES
         ('odd', 'null', 'x', 'queued', 0, 1), ('odd', '[]', 'x', 'queued', 0, 1),
         ('odd', '[\"run\", 5]', 'x', 'queued', 0, 1), ('odd', '[\"calibrate\"]', 'x', 'queued', 0, 1),
         ('odd', repeat('[', 100000), 'x', 'queued', 0, 1)",
    )
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut a = agent(
        url,
        "odd",
        "agent-odd",
        &["--exit-when-idle"],
        &dir.path().join("log"),
    );
    wait(&mut a, HANG, "agent-odd");
    assert_eq!(
        count(
            db.as_mut(),
            "SELECT count(*) FROM jobs WHERE state = 'failed' AND error <> ''"
        ),
        5
    );
    let jobs = stdout(loopbench(url).arg("jobs"));
    assert!(
        jobs.contains("0 queued, 0 running, 0 done, 5 failed"),
        "{jobs}"
    );
}

/// Already well: three agents on one SQLite history take four jobs, each
/// job done once (SQLite's write lock and busy timeout serialise them).
#[test]
fn concurrent_agents_on_one_sqlite_history_do_each_job_once() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("q.sqlite");
    let url = db.to_str().unwrap();
    for _ in 0..4 {
        loopbench(url)
            .args(["submit", "--machines", "c", "--"])
            .args(SHORT_RUN)
            .assert()
            .success();
    }
    let mut agents: Vec<_> = (0..3)
        .map(|i| {
            agent(
                url,
                "c",
                &format!("a{i}"),
                &["--exit-when-idle"],
                &dir.path().join(format!("a{i}.log")),
            )
        })
        .collect();
    for (i, a) in agents.iter_mut().enumerate() {
        wait(a, Duration::from_secs(600), &format!("a{i}"));
    }
    let mut db = Location::parse(url).unwrap().connect().unwrap();
    assert_eq!(
        count(
            db.as_mut(),
            "SELECT count(*) FROM jobs WHERE state = 'done'"
        ),
        4
    );
    assert_eq!(
        count(db.as_mut(), "SELECT count(DISTINCT job_id) FROM sessions"),
        4
    );
    assert_eq!(count(db.as_mut(), "SELECT count(*) FROM sessions"), 4);
}

/// Issue 53.3: a run's own `--json` file imported while the run still went
/// on was stored incomplete; the finished run then skipped recording, yet
/// said "recorded" and exited 0. The complete session now takes the
/// incomplete copy's place, under its id, and says so.
#[test]
fn a_run_imported_while_it_ran_is_stored_whole_when_it_ends() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.sqlite");
    let db = db.to_str().unwrap();
    let json = dir.path().join("p.json");
    let mut run = std::process::Command::new(env!("CARGO_BIN_EXE_loopbench"))
        .env("LOOPBENCH_DB", db)
        .args(["run", "--engines", "mock:cost=2,mock:cost=3", "-q"])
        .args(["--shapes", "add_chain,br_chain,if_else,add_run,lut"])
        .args(["--budget", "1.5", "--min-epochs", "3", "--json"])
        .arg(&json)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The file after the first shape: a copy, so that what is imported is
    // known to be incomplete.
    let copy = dir.path().join("partial.json");
    let until = std::time::Instant::now() + HANG;
    loop {
        if let Ok(text) = std::fs::read_to_string(&json) {
            let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
            assert_eq!(doc["complete"], false, "the run ended before the import");
            std::fs::write(&copy, text).unwrap();
            break;
        }
        if let Some(status) = run.try_wait().unwrap() {
            panic!("the run ended ({status}) before its --json file appeared");
        }
        assert!(std::time::Instant::now() < until, "no --json file");
        std::thread::sleep(Duration::from_millis(10));
    }
    let imported = stdout(loopbench(db).args(["history", "import"]).arg(&copy));
    assert!(imported.contains("stored as session 1"), "{imported}");
    let out = run.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("session 1 recorded whole"), "{stderr}");
    let mut store = Location::Sqlite(db.into()).open().unwrap();
    assert_eq!(count(store.as_mut(), "SELECT count(*) FROM sessions"), 1);
    let rows = store
        .query("SELECT origin, complete FROM sessions WHERE id = 1", &[])
        .unwrap();
    assert_eq!(rows[0].text(0).unwrap(), "run");
    assert_eq!(rows[0].int(1).unwrap(), 1);
    // Every shape of the whole session, none twice.
    assert_eq!(
        count(
            store.as_mut(),
            "SELECT count(DISTINCT shape_id) FROM summaries WHERE session_id = 1"
        ),
        5
    );
    // Importing the whole file again stores nothing.
    let again = stdout(loopbench(db).args(["history", "import"]).arg(&json));
    assert!(again.contains("already stored as session 1"), "{again}");
}

/// Issue 53.10: a running job whose heartbeat is no time (NaN, missing, a
/// text) was never re-queued: `heartbeat < now - timeout` is never true of
/// it. Such a row goes back to the queue, and its event says why.
#[test]
fn a_running_job_without_a_valid_heartbeat_is_requeued() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("h.sqlite");
    let server = PgServer::start();
    for (url, nan) in [
        (file.to_str().unwrap(), "'NaN'"),
        (server.url.as_str(), "'NaN'::double precision"),
    ] {
        loopbench(url).args(["db", "init"]).assert().success();
        let mut db = Location::parse(url).unwrap().connect().unwrap();
        db.batch(&format!(
            "INSERT INTO jobs (label, args, loopbench_version, state, attempts, submitted_at, agent, heartbeat_at)
             VALUES ('odd', '[\"run\"]', 'x', 'running', 1, 1, 'ghost', {nan}),
                    ('odd', '[\"run\"]', 'x', 'running', 1, 1, 'ghost', NULL)"
        ))
        .unwrap();
        let ids = loopbench::history::queue::requeue_stale(db.as_mut(), 60.0).unwrap();
        assert_eq!(ids.len(), 2, "{url}");
        assert_eq!(
            count(
                db.as_mut(),
                "SELECT count(*) FROM jobs WHERE state = 'queued'"
            ),
            2,
            "{url}"
        );
        let events = db
            .query("SELECT event FROM job_events ORDER BY id", &[])
            .unwrap();
        let last = events.last().unwrap().text(0).unwrap();
        assert!(
            last.contains("heartbeat of ghost is no valid time"),
            "{url}: {last}"
        );
    }
}

/// Issue 53.10: nothing bounded how long an agent let a job run. With
/// `--max-job-seconds` a job still running then is stopped (its process
/// group killed) and failed with that reason, and the agent takes the
/// next one.
#[test]
fn an_agent_stops_a_job_past_its_limit_and_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("q.sqlite");
    let url = db.to_str().unwrap();
    // A session of a thousand epochs, then a short one.
    let endless: Vec<&str> = SHORT_RUN
        .iter()
        .map(|a| if *a == "2" { "1000" } else { a })
        .collect();
    for run in [&endless[..], SHORT_RUN] {
        loopbench(url)
            .args(["submit", "--machines", "lim", "--"])
            .args(run)
            .assert()
            .success();
    }
    let mut a = agent(
        url,
        "lim",
        "a-lim",
        &["--exit-when-idle", "--max-job-seconds", "3"],
        &dir.path().join("a.log"),
    );
    wait(&mut a, HANG, "a-lim");
    let mut store = Location::parse(url).unwrap().connect().unwrap();
    let rows = store
        .query("SELECT state, error FROM jobs ORDER BY id", &[])
        .unwrap();
    assert_eq!(rows[0].text(0).unwrap(), "failed");
    let why = rows[0].opt_text(1).unwrap().unwrap_or_default();
    assert!(
        why.contains("longer than this agent's --max-job-seconds 3"),
        "{why}"
    );
    assert_eq!(rows[1].text(0).unwrap(), "done");
    assert_eq!(count(store.as_mut(), "SELECT count(*) FROM sessions"), 1);
}
