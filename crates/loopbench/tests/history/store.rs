use super::pg::PgServer;
use super::util::{count, fixture, loopbench, SHORT_RUN};
use loopbench::history::{series, sessions, store, Location};
use loopbench::results::{self, Session};

fn session_of(path: &std::path::Path) -> Session {
    results::read(path).unwrap().session().unwrap().clone()
}

fn rows_of(s: &Session) -> (i64, i64) {
    let arms = s.results.iter().map(|r| r.arms.len() as i64).sum();
    let reps = s
        .results
        .iter()
        .flat_map(|r| &r.arms)
        .map(|a| a.samples_ns_per_iter.len() as i64)
        .sum();
    (arms, reps)
}

/// Everything the store does, on the database at `url`.
fn store_tests(url: &str) {
    let location = Location::parse(url).unwrap();
    // Migrations from empty, then nothing left to apply.
    let mut db = location.connect().unwrap();
    assert_eq!(
        store::migrate(db.as_mut()).unwrap(),
        vec![1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]
    );
    assert_eq!(store::migrate(db.as_mut()).unwrap(), Vec::<i64>::new());
    assert_eq!(store::version(db.as_mut()).unwrap(), 11);
    loopbench(url)
        .args(["db", "init"])
        .assert()
        .success()
        .stdout(predicates::str::contains("schema already at version 11"));

    // A real run is recorded, named, and says where.
    let dir = tempfile::tempdir().unwrap();
    let saved = dir.path().join("s2.json");
    let out = loopbench(url)
        .args(SHORT_RUN)
        .arg("--json")
        .arg(&saved)
        .args(["--save-baseline", "main"])
        .assert()
        .success();
    let stderr = String::from_utf8_lossy(&out.get_output().stderr).to_string();
    assert!(
        stderr.contains(&format!(
            "history: session 1 recorded in {location} as baseline `main`"
        )),
        "{stderr}"
    );
    // --no-history records nothing.
    loopbench(url)
        .args(SHORT_RUN)
        .arg("--no-history")
        .assert()
        .success();
    assert_eq!(count(db.as_mut(), "SELECT count(*) FROM sessions"), 1);

    // Import: schema 1, and the file of the run just recorded, which is
    // that session again and so stores nothing.
    let schema1 = fixture("schema1/session.json");
    loopbench(url)
        .args(["history", "import"])
        .arg(&schema1)
        .arg(&saved)
        .assert()
        .success()
        .stdout(predicates::str::contains("stored as session 2"))
        .stdout(predicates::str::contains("already stored as session 1"));
    // A file that is not a session stores nothing.
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, "{\"schema\": \"loopbench/9\"}").unwrap();
    loopbench(url)
        .args(["history", "import"])
        .arg(&schema1)
        .arg(&bad)
        .assert()
        .failure()
        .stderr(predicates::str::contains("loopbench/9"));
    assert_eq!(count(db.as_mut(), "SELECT count(*) FROM sessions"), 2);

    // One summary per arm and shape in a table; every rep compressed in
    // its session's row (not a row each: the reps table stays empty).
    let (s1, s2) = (session_of(&schema1), session_of(&saved));
    let (arms1, reps1) = rows_of(&s1);
    let (arms2, reps2) = rows_of(&s2);
    assert!(
        reps1 > 0 && reps2 > 0 && arms2 == 2,
        "{arms2} arms, {reps2} reps"
    );
    assert_eq!(
        count(db.as_mut(), "SELECT count(*) FROM summaries"),
        arms1 + arms2
    );
    assert_eq!(count(db.as_mut(), "SELECT count(*) FROM reps"), 0);
    assert_eq!(
        count(
            db.as_mut(),
            "SELECT count(*) FROM sessions WHERE reps IS NOT NULL"
        ),
        2
    );
    assert_eq!(
        count(
            db.as_mut(),
            "SELECT count(*) FROM sessions WHERE document LIKE '%samples_ns_per_iter%'"
        ),
        0
    );
    let same_machine = sessions::fingerprint(&s1.machine) == sessions::fingerprint(&s2.machine);
    assert_eq!(
        count(db.as_mut(), "SELECT count(*) FROM machines"),
        if same_machine { 1 } else { 2 }
    );
    assert_eq!(
        count(
            db.as_mut(),
            "SELECT count(*) FROM arms WHERE session_id = 1 AND engine = 'wasmi' AND source = 'built-in'"
        ),
        2
    );

    // References load the sessions back exactly.
    let value = |s: &Session| serde_json::to_value(s).unwrap();
    for (reference, id, expected) in [
        ("@baseline:main", 1, &s2),
        ("@2", 2, &s1),
        ("@last", 2, &s1),
    ] {
        assert_eq!(sessions::resolve(db.as_mut(), reference).unwrap(), id);
        let loaded = loopbench::history::load_reference(reference, Some(url))
            .unwrap()
            .unwrap();
        assert_eq!(value(&loaded), value(expected), "{reference}");
    }
    for bad in ["@baseline:nope", "@99", "@x"] {
        assert!(sessions::resolve(db.as_mut(), bad).is_err(), "{bad}");
    }
    // The listing says what is kept, and how much room it takes.
    loopbench(url)
        .args(["history"])
        .assert()
        .success()
        .stdout(predicates::str::contains(
            "keeps 2 sessions: summaries per shape and arm as table rows",
        ))
        .stdout(predicates::str::contains("of reps compressed\n"));
    // `compare` loads stored sessions through the same references.
    loopbench(url)
        .args(["compare", "@baseline:main", "@last"])
        .assert()
        .success()
        .stdout(predicates::str::contains("A: @baseline:main"))
        .stdout(predicates::str::contains("add_chain"));
    loopbench(url)
        .args(["compare", "@baseline:nope", "@last"])
        .assert()
        .failure()
        .stderr(predicates::str::contains("@baseline:nope: no such session"));
    assert!(loopbench::history::load_reference("file.json", Some(url))
        .unwrap()
        .is_none());

    // Series: this machine's add_chain on wasmi has the run (and the
    // fixture, if it was made here).
    let series = series::read(db.as_mut(), Some("add_chain"), Some("wasmi"), None).unwrap();
    let here: Vec<_> = series
        .iter()
        .filter(|(k, _)| k.machine == format!("{} ({})", s2.machine.hostname, s2.machine.cpu))
        .collect();
    assert_eq!(here.len(), 1, "{series:?}");
    // Imports are placed at their file's time: the fixture first.
    let expected: &[i64] = if same_machine { &[2, 1] } else { &[1] };
    assert_eq!(
        here[0].1.iter().map(|p| p.session_id).collect::<Vec<_>>(),
        expected
    );

    loopbench(url)
        .args(["history", "--shape", "add_chain", "--arm", "wasmi"])
        .assert()
        .success()
        .stdout(predicates::str::contains("baseline:main"))
        .stdout(predicates::str::contains(
            "series (machine, shape, arm, metric)",
        ));
}

#[test]
fn store_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nested/history.sqlite");
    store_tests(path.to_str().unwrap());
}

#[test]
fn store_on_postgres() {
    let server = PgServer::start();
    store_tests(&server.url);
}

#[test]
fn bad_database_is_one_line() {
    let out = loopbench("postgres://nobody@127.0.0.1:1/none")
        .args(["history"])
        .assert()
        .failure();
    let stderr = String::from_utf8_lossy(&out.get_output().stderr).to_string();
    assert!(
        stderr.starts_with("error: cannot open the history database"),
        "{stderr}"
    );
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
}
