use super::pg::PgServer;
use super::util::{count, loopbench, SHORT_RUN};
use loopbench::history::{queue, Location};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn submit(url: &str, label: &str, run: &[&str]) {
    loopbench(url)
        .args(["submit", "--machines", label, "--"])
        .args(run)
        .assert()
        .success()
        .stdout(predicates::str::contains(format!("queued for {label}")));
}

/// An agent process; its stderr goes to `log`.
fn agent(url: &str, label: &str, name: &str, extra: &[&str], log: &std::path::Path) -> Child {
    Command::new(env!("CARGO_BIN_EXE_loopbench"))
        .env("LOOPBENCH_DB", url)
        .args(["agent", "--label", label, "--name", name])
        .args(["--heartbeat", "0.3", "--timeout", "3", "--poll", "0.2"])
        .args(extra)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(log).unwrap())
        .spawn()
        .unwrap()
}

fn wait(child: &mut Child, limit: Duration, what: &str) {
    let end = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            assert!(status.success(), "{what} exited with {status}");
            return;
        }
        if Instant::now() > end {
            let _ = child.kill();
            panic!("{what} did not finish within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The queue's events, as the timeline the lead quotes.
fn timeline(url: &str, title: &str) -> Vec<queue::Event> {
    let mut db = Location::parse(url).unwrap().connect().unwrap();
    let events = queue::events(db.as_mut()).unwrap();
    println!("--- {title}: timeline (seconds from the first event) ---");
    for e in &events {
        println!(
            "{:>7.2}s  job {}  {:<8} {}",
            e.at,
            e.job_id,
            e.agent.as_deref().unwrap_or("-"),
            e.event
        );
    }
    events
}

/// Every job done once: one stored session per job, the one the job names.
fn assert_done_once(url: &str, jobs: i64) {
    let mut db = Location::parse(url).unwrap().connect().unwrap();
    let listed = queue::list(db.as_mut()).unwrap();
    assert_eq!(listed.len() as i64, jobs);
    assert!(listed.iter().all(|j| j.state == "done"), "{listed:?}");
    assert_eq!(
        count(
            db.as_mut(),
            "SELECT count(*) FROM sessions WHERE job_id IS NOT NULL"
        ),
        jobs
    );
    assert_eq!(
        count(db.as_mut(), "SELECT count(DISTINCT job_id) FROM sessions"),
        jobs
    );
    assert_eq!(
        count(
            db.as_mut(),
            "SELECT count(*) FROM jobs j JOIN sessions s ON s.id = j.session_id AND s.job_id = j.id"
        ),
        jobs
    );
}

#[test]
fn two_agents_take_six_jobs_each_once() {
    let server = PgServer::start();
    let url = server.url.as_str();
    loopbench(url).args(["db", "init"]).assert().success();
    for _ in 0..6 {
        submit(url, "fleet-a", SHORT_RUN);
    }
    let dir = tempfile::tempdir().unwrap();
    let mut a = agent(
        url,
        "fleet-a",
        "agent-1",
        &["--exit-when-idle"],
        &dir.path().join("1"),
    );
    let mut b = agent(
        url,
        "fleet-a",
        "agent-2",
        &["--exit-when-idle"],
        &dir.path().join("2"),
    );
    wait(&mut a, Duration::from_secs(600), "agent-1");
    wait(&mut b, Duration::from_secs(600), "agent-2");
    let events = timeline(url, "two agents, six jobs");
    assert_done_once(url, 6);
    // Every job claimed exactly once and finished exactly once.
    for job in 1..=6 {
        let of = |what: &str| {
            events
                .iter()
                .filter(|e| e.job_id == job && e.event.starts_with(what))
                .count()
        };
        assert_eq!((of("claimed"), of("done")), (1, 1), "job {job}");
    }
    loopbench(url)
        .args(["jobs"])
        .assert()
        .success()
        .stdout(predicates::str::contains(
            "0 queued, 0 running, 6 done, 0 failed",
        ));
    let board = dir.path().join("board.md");
    loopbench(url)
        .args(["leaderboard", "--markdown"])
        .arg(&board)
        .arg("--html")
        .arg(dir.path().join("board.html"))
        .assert()
        .success();
    let md = std::fs::read_to_string(&board).unwrap();
    assert!(md.contains("| fleet-a | add_chain | wasmi |"), "{md}");
    let html = std::fs::read_to_string(dir.path().join("board.html")).unwrap();
    assert!(html.contains("<svg class=\"chart\""), "{html}");
    assert!(
        html.contains("<td>fleet-a</td><td>add_chain</td><td>wasmi</td>"),
        "{html}"
    );
}

#[test]
fn a_killed_agent_s_job_is_requeued_and_done_once() {
    let server = PgServer::start();
    let url = server.url.as_str();
    loopbench(url).args(["db", "init"]).assert().success();
    // Long enough to be killed in the middle of it.
    let long: Vec<&str> = SHORT_RUN
        .iter()
        .map(|a| if *a == "2" { "12" } else { a })
        .collect();
    submit(url, "fleet-b", &long);
    let dir = tempfile::tempdir().unwrap();
    let mut a = agent(url, "fleet-b", "agent-A", &[], &dir.path().join("A"));
    let mut db = Location::parse(url).unwrap().connect().unwrap();
    let end = Instant::now() + Duration::from_secs(60);
    loop {
        let jobs = queue::list(db.as_mut()).unwrap();
        if jobs[0].state == "running" {
            assert_eq!(jobs[0].agent.as_deref(), Some("agent-A"));
            break;
        }
        assert!(
            jobs[0].state == "queued" && Instant::now() < end,
            "agent-A did not take the job: {jobs:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(500));
    a.kill().unwrap(); // SIGKILL
    a.wait().unwrap();
    let jobs = queue::list(db.as_mut()).unwrap();
    assert_eq!(jobs[0].state, "running", "{jobs:?}");
    let mut b = agent(
        url,
        "fleet-b",
        "agent-B",
        &["--exit-when-idle"],
        &dir.path().join("B"),
    );
    wait(&mut b, Duration::from_secs(600), "agent-B");
    let events = timeline(url, "agent-A killed mid-job");
    assert_done_once(url, 1);
    let jobs = queue::list(db.as_mut()).unwrap();
    assert_eq!(jobs[0].agent.as_deref(), Some("agent-B"));
    assert_eq!(jobs[0].attempts, 2);
    let kinds: Vec<(Option<&str>, String)> = events
        .iter()
        .map(|e| {
            (
                e.agent.as_deref(),
                e.event.split([':', ' ']).next().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        kinds,
        [
            (None, "submitted".to_string()),
            (Some("agent-A"), "claimed".to_string()),
            (None, "re-queued".to_string()),
            (Some("agent-B"), "claimed".to_string()),
            (Some("agent-B"), "done".to_string()),
        ]
    );
    // The re-queue waited for the timeout.
    let claimed = events[1].at;
    let requeued = events[2].at;
    assert!(requeued - claimed >= 3.0, "{events:?}");
    // The killed agent's run died with it: nothing else wrote a session.
    assert_eq!(count(db.as_mut(), "SELECT count(*) FROM sessions"), 1);
}

#[test]
fn sigterm_releases_the_running_job() {
    let server = PgServer::start();
    let url = server.url.as_str();
    loopbench(url).args(["db", "init"]).assert().success();
    let long: Vec<&str> = SHORT_RUN
        .iter()
        .map(|a| if *a == "2" { "12" } else { a })
        .collect();
    submit(url, "fleet-c", &long);
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("C");
    let mut c = agent(url, "fleet-c", "agent-C", &[], &log);
    let mut db = Location::parse(url).unwrap().connect().unwrap();
    let end = Instant::now() + Duration::from_secs(60);
    while queue::list(db.as_mut()).unwrap()[0].state != "running" {
        assert!(Instant::now() < end, "agent-C never took the job");
        std::thread::sleep(Duration::from_millis(50));
    }
    let term = Command::new("kill")
        .args(["-TERM", &c.id().to_string()])
        .status()
        .unwrap();
    assert!(term.success());
    wait(&mut c, Duration::from_secs(30), "agent-C after SIGTERM");
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.contains("job 1: released to the queue"), "{text}");
    assert!(text.contains("0 done, 0 failed, 1 released"), "{text}");
    let jobs = queue::list(db.as_mut()).unwrap();
    assert_eq!(
        (jobs[0].state.as_str(), jobs[0].agent.as_deref()),
        ("queued", None)
    );
    // Released at once, not after a timeout: the next agent takes it.
    let mut d = agent(
        url,
        "fleet-c",
        "agent-D",
        &["--exit-when-idle"],
        &dir.path().join("D"),
    );
    wait(&mut d, Duration::from_secs(600), "agent-D");
    timeline(url, "agent-C stopped by SIGTERM");
    assert_done_once(url, 1);
    loopbench(url)
        .args(["jobs", "--events"])
        .assert()
        .success()
        .stdout(predicates::str::contains("released: agent stopping"))
        .stdout(predicates::str::contains("claimed (attempt 2)"));
}
