use super::fleet::{agent, wait};
use super::pg::PgServer;
use super::util::{anchored_run, count, loopbench, one_line_failure, rebuild};
use loopbench::history::sessions::{Origin, Provenance};
use loopbench::history::store::Sql;
use loopbench::history::{alerts, queue, track, Location};
use loopbench::results::Session;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The run options of every track here: short mock sessions whose
/// anchored ratio is exactly 0.5 (cost 10 against 20, no noise).
const QUICK: &[&str] = &["--min-epochs", "2", "--max-epochs", "2", "--rep-ms", "0.5"];

fn add(db: &str, name: &str, shapes: &str, extra: &[&str], run: &[&str]) {
    loopbench(db)
        .args(["track", "add", name, "--engine", "mock:cost=10"])
        .args(["--reference", "mock:cost=20", "--shapes", shapes])
        .args(extra)
        .arg("--")
        .args(run)
        .assert()
        .success()
        .stdout(predicates::str::contains(format!("track {name} (")));
}

fn open(db: &str) -> Box<dyn Sql> {
    Location::parse(db).unwrap().open().unwrap()
}

/// A session of the track's arms, measured once (not recorded).
fn base_session(db: &str, dir: &std::path::Path) -> Session {
    let json = dir.join("base.json");
    anchored_run(db, "mock:cost=10", "mock:cost=20", &json, false);
    loopbench::results::read(&json)
        .unwrap()
        .session()
        .unwrap()
        .clone()
}

/// `base` with its own id and its anchored ratio (exactly 0.5) times
/// `factor`, and the session's own interval of it with it (as a session
/// that measured that ratio would have it).
fn crafted(base: &Session, id: String, factor: f64) -> Session {
    let mut s = base.clone();
    s.id = Some(id);
    let c = s.results[0]
        .anchored
        .iter_mut()
        .find(|c| c.arm == "mock:cost=10")
        .unwrap();
    let [median, lo, hi] = [c.median_pct, c.ci_pct[0], c.ci_pct[1]]
        .map(|pct| ((1.0 + pct / 100.0) * factor - 1.0) * 100.0);
    (c.median_pct, c.ci_pct) = (median, [lo, hi]);
    s
}

const WOBBLE: [f64; 5] = [0.0, 1.0, -1.0, 0.5, -0.5];

fn commit(i: usize) -> String {
    format!("{i:040x}")
}

/// Twelve sessions of a track, recorded one by one as `track run` does
/// (alerts raised with each), the ratio wobbling +-0.3% with a +5% step
/// from the eighth on: one alert, at the step, with its commit range; and
/// raising the alerts again writes nothing.
fn alerts_once(db: &str) {
    let dir = tempfile::tempdir().unwrap();
    add(db, "steps", "add_chain", &[], QUICK);
    let base = base_session(db, dir.path());
    let mut store = open(db);
    let t = track::find(store.as_mut(), "steps").unwrap().unwrap();
    let mut ids = Vec::new();
    for i in 0..12 {
        let step = if i >= 7 { 1.05 } else { 1.0 };
        let s = crafted(
            &base,
            format!("step-{i}"),
            (1.0 + 0.003 * WOBBLE[i % 5]) * step,
        );
        let (id, raised) =
            track::record(store.as_mut(), &t, None, &s, &Provenance::of(Origin::Run)).unwrap();
        // The arm's commit, as a git arm's version would state it.
        store
            .execute(
                &format!(
                    "UPDATE arms SET commit_id = '{}' WHERE session_id = {id} AND label = 'mock:cost=10'",
                    commit(i)
                ),
                &[],
            )
            .unwrap();
        // Raised when the session after the step confirms it, not before.
        assert_eq!(raised.len(), usize::from(i == 8), "session {i}: {raised:?}");
        ids.push(id);
    }
    let listed = alerts::list(store.as_mut(), Some("steps")).unwrap();
    assert_eq!(listed.len(), 1, "{listed:?}");
    let a = &listed[0];
    assert_eq!((a.before_session_id, a.session_id), (ids[6], ids[7]));
    assert_eq!(
        (a.before_commit.clone(), a.after_commit.clone()),
        (Some(commit(6)), Some(commit(7)))
    );
    assert!((a.change_pct - 5.0).abs() < 0.5, "{a:?}");
    assert!(a.ci_pct[0] > 0.0 && a.ci_pct[0] < a.change_pct && a.change_pct < a.ci_pct[1]);
    assert_eq!(a.shape, "add_chain");
    assert!(a.series.starts_with("ratio to mock:cost=20 ("), "{a:?}");
    // Again: nothing new, however often.
    let machine = count(store.as_mut(), "SELECT min(machine_id) FROM sessions");
    for _ in 0..2 {
        assert!(alerts::evaluate(store.as_mut(), t.id, &t.arm, machine)
            .unwrap()
            .is_empty());
    }
    assert_eq!(count(store.as_mut(), "SELECT count(*) FROM alerts"), 1);
    let out = loopbench(db).args(["alerts"]).assert().success();
    let text = String::from_utf8_lossy(&out.get_output().stdout).to_string();
    assert!(text.contains("slower (regression)"), "{text}");
    assert!(text.contains(&commit(6)[..12]), "{text}");
    let out = loopbench(db)
        .args(["alerts", "--track", "steps", "--markdown"])
        .assert()
        .success();
    let md = String::from_utf8_lossy(&out.get_output().stdout).to_string();
    println!("{md}");
    assert!(
        md.starts_with("## Regression: +4.9% on add_chain (mock:cost=10, track steps)\n"),
        "{md}"
    );
    assert!(
        md.contains("is **slower (regression)** by +4.88% ["),
        "{md}"
    );
    assert!(
        md.contains(&format!(
            "| commit range (last good..first flagged) | {}..{} |",
            commit(6),
            commit(7)
        )),
        "{md}"
    );
    assert!(
        md.contains(
            "loopbench run --engines mock:cost=10 --reference mock:cost=20 --shapes add_chain"
        ),
        "{md}"
    );
}

/// `trend --html` and the leaderboard plot the track's anchored series
/// with intervals: the step's session coloured as flagged.
fn plots(db: &str, dir: &std::path::Path) {
    let page = dir.join("trend.html");
    loopbench(db)
        .args([
            "trend",
            "--shape",
            "add_chain",
            "--arm",
            "mock:cost=10",
            "--html",
        ])
        .arg(&page)
        .assert()
        .success();
    let html = std::fs::read_to_string(&page).unwrap();
    // One chart for the time series, one for the anchored one.
    assert_eq!(html.matches("<svg class=\"chart\"").count(), 2, "{html}");
    assert!(
        html.contains("anchored ratio") || html.contains("ratio to mock:cost=20"),
        "{html}"
    );
    assert!(
        html.contains("change against the reference (%), 95% interval"),
        "{html}"
    );
    // The legend's swatch, and the flagged session's point.
    assert!(html.matches("#D55E00").count() >= 2, "{html}");
    crate::exporters::renders_in_chromium(&page, 2);
    let board = dir.join("board.html");
    let md = dir.join("board.md");
    loopbench(db)
        .args(["leaderboard", "--html"])
        .arg(&board)
        .arg("--markdown")
        .arg(&md)
        .assert()
        .success();
    let html = std::fs::read_to_string(&board).unwrap();
    assert!(
        html.contains("add_chain: ratio to each session&#39;s reference (anchored)")
            || html.contains("add_chain: ratio to each session&#x27;s reference (anchored)")
            || html.contains("add_chain: ratio to each session's reference (anchored)"),
        "{html}"
    );
    let charts = html.matches("<svg class=\"chart\"").count();
    assert!(charts >= 1, "{html}");
    crate::exporters::renders_in_chromium(&board, charts);
    let md = std::fs::read_to_string(&md).unwrap();
    assert!(md.contains("ratio to reference (95% interval)"), "{md}");
    assert!(
        md.contains("% [") && md.contains("vs mock:cost=20 |"),
        "{md}"
    );
}

#[test]
fn alerts_are_written_once_per_flagged_change_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.sqlite");
    alerts_once(db.to_str().unwrap());
    plots(db.to_str().unwrap(), dir.path());
}

#[test]
fn alerts_are_written_once_per_flagged_change_on_postgres() {
    let server = PgServer::start();
    alerts_once(&server.url);
}

/// The same +5% step, but each session from the step on measured it with
/// its own interval of +-10% (two builds' layouts apart): it reaches back
/// to the level before, so no alert is raised, and `trend`, judging with
/// the same rule, shows the step as not flagged.
#[test]
fn a_step_inside_its_session_s_own_interval_raises_no_alert() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.sqlite");
    let db = db.to_str().unwrap();
    add(db, "layout", "add_chain", &[], QUICK);
    let base = base_session(db, dir.path());
    let mut store = open(db);
    let t = track::find(store.as_mut(), "layout").unwrap().unwrap();
    for i in 0..12 {
        let step = if i >= 7 { 1.05 } else { 1.0 };
        let mut s = crafted(
            &base,
            format!("layout-{i}"),
            (1.0 + 0.003 * WOBBLE[i % 5]) * step,
        );
        if i >= 7 {
            let c = s.results[0]
                .anchored
                .iter_mut()
                .find(|c| c.arm == "mock:cost=10")
                .unwrap();
            let ratio = 1.0 + c.median_pct / 100.0;
            c.ci_pct = [0.9, 1.1].map(|x| (ratio * x - 1.0) * 100.0);
        }
        let (_, raised) =
            track::record(store.as_mut(), &t, None, &s, &Provenance::of(Origin::Run)).unwrap();
        assert!(raised.is_empty(), "session {i}: {raised:?}");
    }
    assert_eq!(count(store.as_mut(), "SELECT count(*) FROM alerts"), 0);
    let out = loopbench(db)
        .args(["trend", "--shape", "add_chain", "--arm", "mock:cost=10"])
        .assert()
        .success();
    let out = String::from_utf8_lossy(&out.get_output().stdout).to_string();
    let anchored = out
        .split("\n\n")
        .find(|b| b.contains("anchored ratio"))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(!anchored.contains("<<"), "{anchored}");
    assert!(
        anchored.contains("0 flagged change(s), 1 not flagged inside the session's own interval"),
        "{anchored}"
    );
}

fn sessions_of(db: &str, shape: &str) -> i64 {
    count(
        open(db).as_mut(),
        &format!(
            "SELECT count(DISTINCT s.id) FROM sessions s JOIN summaries x ON x.session_id = s.id
             JOIN shapes h ON h.id = x.shape_id WHERE s.track_id IS NOT NULL AND h.name = '{shape}'"
        ),
    )
}

/// `track run` killed (SIGKILL) after its first shape is recorded: run
/// again, it says it resumes and measures the second shape only.
#[test]
fn an_interrupted_track_run_resumes_without_measuring_finished_shapes() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.sqlite");
    let db = db.to_str().unwrap();
    // Long enough shapes that the kill lands inside the second.
    add(
        db,
        "resume",
        "add_chain,br_chain",
        &[],
        &[
            "--min-epochs",
            "12",
            "--max-epochs",
            "12",
            "--rep-ms",
            "0.5",
        ],
    );
    let mut child = Command::new(env!("CARGO_BIN_EXE_loopbench"))
        .env("LOOPBENCH_DB", db)
        .args(["track", "run", "resume"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let end = Instant::now() + Duration::from_secs(300);
    while sessions_of(db, "add_chain") == 0 {
        assert!(child.try_wait().unwrap().is_none(), "track run ended early");
        assert!(Instant::now() < end, "the first shape was never recorded");
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(
        (sessions_of(db, "add_chain"), sessions_of(db, "br_chain")),
        (1, 0)
    );
    let out = loopbench(db)
        .args(["track", "run", "resume"])
        .assert()
        .success();
    let text = String::from_utf8_lossy(&out.get_output().stdout).to_string();
    println!("{text}");
    let plan = text.lines().next().unwrap();
    assert!(
        plan.contains("on 1 shape(s) (br_chain); resuming run 1: add_chain recorded already, not measured again; about "),
        "{plan}"
    );
    assert!(text.contains("run 1 done"), "{text}");
    assert_eq!(
        (sessions_of(db, "add_chain"), sessions_of(db, "br_chain")),
        (1, 1)
    );
    // A finished run is not resumed: the next one measures every shape.
    let out = loopbench(db)
        .args(["track", "run", "resume"])
        .assert()
        .success();
    let text = String::from_utf8_lossy(&out.get_output().stdout).to_string();
    assert!(
        text.lines()
            .next()
            .unwrap()
            .contains("on 2 shape(s) (add_chain,br_chain); about"),
        "{text}"
    );
    assert!(text.contains("run 2 done"), "{text}");
    let mut store = open(db);
    assert_eq!(
        count(
            store.as_mut(),
            "SELECT count(*) FROM track_runs WHERE finished_at IS NOT NULL"
        ),
        2
    );
    assert_eq!(
        count(
            store.as_mut(),
            "SELECT count(*) FROM sessions WHERE track_run_id = 1"
        ),
        2
    );
}

#[test]
fn bad_track_inputs_are_one_line_errors() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.sqlite");
    let db = db.to_str().unwrap();
    add(db, "taken", "add_chain", &[], QUICK);
    let cases: &[(&[&str], &str)] = &[
        (
            &[
                "track",
                "add",
                "a\nb",
                "--engine",
                "mock:cost=10",
                "--reference",
                "mock:cost=20",
                "--shapes",
                "add_chain",
            ],
            "holds a control character",
        ),
        (
            &[
                "track",
                "add",
                "t",
                "--engine",
                "nosuch",
                "--reference",
                "mock:cost=20",
                "--shapes",
                "add_chain",
            ],
            "nosuch",
        ),
        (
            &[
                "track",
                "add",
                "t",
                "--engine",
                "mock:cost=10",
                "--reference",
                "mock:cost=20",
                "--shapes",
                "no_such_shape",
            ],
            "no_such_shape",
        ),
        (
            &[
                "track",
                "add",
                "t",
                "--engine",
                "mock:cost=10",
                "--reference",
                "mock:cost=10",
                "--shapes",
                "add_chain",
            ],
            "is the tracked arm itself",
        ),
        (
            &[
                "track",
                "add",
                "t",
                "--engine",
                "mock:cost=10",
                "--reference",
                "mock:cost=20",
                "--shapes",
                "add_chain",
                "--label",
                "x",
                "--every",
                "24",
            ],
            "--every `24`: expected a period",
        ),
        (
            &[
                "track",
                "add",
                "t",
                "--engine",
                "mock:cost=10",
                "--reference",
                "mock:cost=20",
                "--shapes",
                "add_chain",
                "--every",
                "1h",
            ],
            "--every needs --label",
        ),
        (
            &[
                "track",
                "add",
                "t",
                "--engine",
                "mock:cost=10",
                "--reference",
                "mock:cost=20",
                "--shapes",
                "add_chain",
                "--label",
                "x",
            ],
            "--label needs --every",
        ),
        (
            &[
                "track",
                "add",
                "t",
                "--engine",
                "mock:cost=10",
                "--reference",
                "mock:cost=20",
                "--shapes",
                "add_chain",
                "--",
                "--engines",
                "wasmi",
            ],
            "--engines after `--`",
        ),
        (
            &[
                "track",
                "add",
                "t",
                "--engine",
                "mock:cost=10",
                "--reference",
                "mock:cost=20",
                "--shapes",
                "add_chain",
                "--",
                "--json",
                "x.json",
            ],
            "--json in a job",
        ),
        (
            &[
                "track",
                "add",
                "t",
                "--engine",
                "mock:cost=10",
                "--reference",
                "mock:cost=20",
                "--shapes",
                "add_chain",
                "--",
                "--budget",
                "0",
            ],
            "--budget must be a positive",
        ),
        (
            &[
                "track",
                "add",
                "t",
                "--engine",
                "wasmi=git:/no/such/dir#main",
                "--reference",
                "wasmi",
                "--shapes",
                "add_chain",
            ],
            "/no/such/dir",
        ),
        (
            &[
                "track",
                "add",
                "taken",
                "--engine",
                "mock:cost=10",
                "--reference",
                "mock:cost=20",
                "--shapes",
                "add_chain",
            ],
            "track taken exists already",
        ),
        (&["track", "run", "nope"], "no track nope in"),
        (&["alerts", "--track", "nope"], "no track nope in"),
    ];
    for (args, says) in cases {
        let e = one_line_failure(loopbench(db).args(*args));
        assert!(e.contains(says), "{args:?}: {e}");
    }
    let out = loopbench(db).args(["track", "list"]).assert().success();
    let text = String::from_utf8_lossy(&out.get_output().stdout).to_string();
    assert_eq!(text.lines().count(), 1, "{text}");
    assert!(
        text.starts_with(
            "taken: mock:cost=10 against mock:cost=20 on add_chain (run --min-epochs 2"
        ),
        "{text}"
    );
}

/// Two agents of one label started together, and eight schedulers of
/// another label at once, on PostgreSQL: one job per period and label.
#[test]
fn a_schedule_queues_one_job_per_period_per_label_with_agents_starting_together() {
    let server = PgServer::start();
    let url = server.url.as_str();
    loopbench(url).args(["db", "init"]).assert().success();
    add(
        url,
        "daily",
        "add_chain",
        &["--label", "fleet-s,fleet-t", "--every", "24h"],
        QUICK,
    );
    let dir = tempfile::tempdir().unwrap();
    let mut a = agent(
        url,
        "fleet-s",
        "agent-1",
        &["--exit-when-idle"],
        &dir.path().join("1"),
    );
    let mut b = agent(
        url,
        "fleet-s",
        "agent-2",
        &["--exit-when-idle"],
        &dir.path().join("2"),
    );
    // Meanwhile eight schedulers of fleet-t, released together.
    let barrier = std::sync::Arc::new(std::sync::Barrier::new(8));
    let threads: Vec<_> = (0..8)
        .map(|_| {
            let barrier = barrier.clone();
            let url = url.to_string();
            std::thread::spawn(move || {
                let mut db = Location::parse(&url).unwrap().connect().unwrap();
                barrier.wait();
                (0..5)
                    .map(|_| track::schedule(db.as_mut(), "fleet-t").unwrap().len())
                    .sum::<usize>()
            })
        })
        .collect();
    let queued: usize = threads.into_iter().map(|t| t.join().unwrap()).sum();
    wait(&mut a, Duration::from_secs(300), "agent-1");
    wait(&mut b, Duration::from_secs(300), "agent-2");
    let mut db = Location::parse(url).unwrap().connect().unwrap();
    // Every period claimed (one, or two if the test straddled midnight UTC)
    // has exactly one job, and no job is without its period.
    for label in ["fleet-s", "fleet-t"] {
        let periods = count(
            db.as_mut(),
            &format!("SELECT count(*) FROM track_periods WHERE label = '{label}'"),
        );
        let jobs = count(
            db.as_mut(),
            &format!("SELECT count(*) FROM jobs WHERE label = '{label}' AND track_id IS NOT NULL"),
        );
        let joined = count(
            db.as_mut(),
            &format!(
                "SELECT count(DISTINCT p.job_id) FROM track_periods p JOIN jobs j ON j.id = p.job_id
                 WHERE p.label = '{label}' AND j.label = '{label}'"
            ),
        );
        assert!((1..=2).contains(&periods), "{label}: {periods} periods");
        assert_eq!((jobs, joined), (periods, periods), "{label}");
    }
    assert_eq!(
        queued as i64,
        count(
            db.as_mut(),
            "SELECT count(*) FROM jobs WHERE label = 'fleet-t'"
        )
    );
    // fleet-s's job ran once, by one of the agents, into the track.
    let listed: Vec<_> = queue::list(db.as_mut())
        .unwrap()
        .into_iter()
        .filter(|j| j.label == "fleet-s")
        .collect();
    assert!(
        listed.iter().all(|j| j.state == "done" && j.attempts == 1),
        "{listed:?}"
    );
    assert_eq!(
        count(
            db.as_mut(),
            "SELECT count(*) FROM sessions WHERE track_id = 1 AND label = 'fleet-s'"
        ),
        listed.len() as i64
    );
    let logs: String = ["1", "2"]
        .iter()
        .map(|n| std::fs::read_to_string(dir.path().join(n)).unwrap())
        .collect();
    assert_eq!(
        logs.matches("queued by the schedule of track daily")
            .count(),
        listed.len(),
        "{logs}"
    );
}

/// The alert that a tracked job's session raises survives the agent
/// running it being killed (SIGKILL) mid-job: the job goes back to the
/// queue, another agent runs it, and the alert is written once.
#[test]
fn alerts_survive_an_agent_killed_mid_job() {
    let server = PgServer::start();
    let url = server.url.as_str();
    loopbench(url).args(["db", "init"]).assert().success();
    add(
        url,
        "nightly",
        "add_chain",
        &["--label", "fleet-k", "--every", "24h"],
        &[
            "--min-epochs",
            "12",
            "--max-epochs",
            "12",
            "--rep-ms",
            "0.5",
        ],
    );
    let dir = tempfile::tempdir().unwrap();
    // The track's history: six sessions of an older build at a ratio 10%
    // higher, then one of the job's build at its level (exactly 0.5): a
    // step, pending the next session.
    let base = base_session(url, dir.path());
    let mut db = open(url);
    let t = track::find(db.as_mut(), "nightly").unwrap().unwrap();
    let mut ids = Vec::new();
    for i in 0..7 {
        let factor = if i < 6 {
            1.1 * (1.0 + 0.003 * WOBBLE[i % 5])
        } else {
            1.0
        };
        let mut s = crafted(&base, format!("history-{i}"), factor);
        if i < 6 {
            rebuild(&mut s, "mock:cost=10", "older");
        }
        let p = Provenance {
            origin: Origin::Job,
            label: Some("fleet-k"),
            job_id: None,
            recorded_at: None,
        };
        let (id, raised) = track::record(db.as_mut(), &t, None, &s, &p).unwrap();
        assert!(raised.is_empty());
        ids.push(id);
    }
    let mut a = agent(url, "fleet-k", "agent-A", &[], &dir.path().join("A"));
    let end = Instant::now() + Duration::from_secs(60);
    loop {
        let jobs = queue::list(db.as_mut()).unwrap();
        if jobs.first().is_some_and(|j| j.state == "running") {
            break;
        }
        assert!(
            Instant::now() < end,
            "agent-A did not take the job: {jobs:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(500));
    a.kill().unwrap();
    a.wait().unwrap();
    assert_eq!(count(db.as_mut(), "SELECT count(*) FROM alerts"), 0);
    let mut b = agent(
        url,
        "fleet-k",
        "agent-B",
        &["--exit-when-idle"],
        &dir.path().join("B"),
    );
    wait(&mut b, Duration::from_secs(300), "agent-B");
    let jobs = queue::list(db.as_mut()).unwrap();
    assert_eq!(jobs.len(), 1, "{jobs:?}");
    assert_eq!((jobs[0].state.as_str(), jobs[0].attempts), ("done", 2));
    let session = jobs[0].session_id.unwrap();
    assert_eq!(
        count(
            db.as_mut(),
            &format!("SELECT track_id FROM sessions WHERE id = {session}")
        ),
        t.id
    );
    let listed = alerts::list(db.as_mut(), None).unwrap();
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(
        (listed[0].before_session_id, listed[0].session_id),
        (ids[5], ids[6])
    );
    assert!(listed[0].change_pct < -8.0, "{:?}", listed[0]);
    assert_eq!(listed[0].machine, "fleet-k");
    // Judged again (a job re-run, another agent's evaluation): still one.
    let machine = count(
        db.as_mut(),
        &format!("SELECT machine_id FROM sessions WHERE id = {session}"),
    );
    assert!(alerts::evaluate(db.as_mut(), t.id, &t.arm, machine)
        .unwrap()
        .is_empty());
    assert_eq!(count(db.as_mut(), "SELECT count(*) FROM alerts"), 1);
    let events = queue::events(db.as_mut()).unwrap();
    assert!(
        events
            .iter()
            .any(|e| e.event == format!("done: session {session}, 1 alert(s)")),
        "{events:?}"
    );
}

/// Issue 53.10: a track of the mock engine at a git revision said it would
/// check out and build first, for minutes; the mock compiles nothing.
#[test]
fn a_mock_revision_has_nothing_to_build() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.sqlite");
    let db = db.to_str().unwrap();
    let repo = dir.path().join("repo");
    std::fs::create_dir(&repo).unwrap();
    crate::builds::git(&repo, &["init", "-q", "-b", "main"]);
    std::fs::write(repo.join("loopbench-mock"), "cost=10\n").unwrap();
    crate::builds::git(&repo, &["add", "."]);
    crate::builds::git(&repo, &["commit", "-q", "-m", "one"]);
    loopbench(db)
        .args(["track", "add", "mocked", "--engine"])
        .arg(format!("mock=git:{}#main", repo.display()))
        .args(["--reference", "mock:cost=20", "--shapes", "add_chain", "--"])
        .args(QUICK)
        .assert()
        .success();
    let out = loopbench(db)
        .args(["track", "run", "mocked"])
        .assert()
        .success();
    let plan = String::from_utf8_lossy(&out.get_output().stdout)
        .lines()
        .next()
        .unwrap()
        .to_string();
    assert!(plan.contains("(nothing to build)"), "{plan}");
    assert!(
        !plan.contains("minutes") && !plan.contains("the build"),
        "{plan}"
    );
}
