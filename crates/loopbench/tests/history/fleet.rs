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
pub(super) fn agent(
    url: &str,
    label: &str,
    name: &str,
    extra: &[&str],
    log: &std::path::Path,
) -> Child {
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

pub(super) fn wait(child: &mut Child, limit: Duration, what: &str) {
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

/// The job's state and error, and every event's text, for the checks below.
fn job_state(url: &str, id: i64) -> (String, String) {
    let mut db = Location::parse(url).unwrap().connect().unwrap();
    let j = queue::list(db.as_mut())
        .unwrap()
        .into_iter()
        .find(|j| j.id == id)
        .unwrap();
    (j.state, j.error.unwrap_or_default())
}

const LOOP_WAT: &str = r#"(module (memory (export "memory") 1)
  (func (export "run") (param $n i32) (result i32) (local $i i32)
    (loop $l (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br_if $l (i32.lt_u (local.get $i) (local.get $n))))
    (local.get $i))
  (func (export "verify") (result i32) (i32.const 1)))"#;

/// The four attacks of issue 26, as rows written straight into `jobs` (no
/// `submit` in the way), against a real agent: it refuses each, and nothing
/// on the agent is written, built, linked or read into the queue.
#[test]
fn an_agent_refuses_jobs_that_write_build_link_or_read_on_it() {
    let server = PgServer::start();
    let url = server.url.as_str();
    loopbench(url).args(["db", "init"]).assert().success();
    let dir = tempfile::tempdir().unwrap();
    let p = |name: &str| dir.path().join(name).display().to_string();
    // 1. An output path: the file must stay as it is.
    std::fs::write(p("precious"), "ORIGINAL").unwrap();
    // 2. A local crate whose build script leaves a mark.
    let krate = dir.path().join("evil");
    std::fs::create_dir_all(krate.join("src")).unwrap();
    std::fs::write(
        krate.join("Cargo.toml"),
        "[package]\nname = \"wasmi\"\nversion = \"2.0.0\"\nedition = \"2021\"\n",
    )
    .unwrap();
    std::fs::write(krate.join("src/lib.rs"), "").unwrap();
    std::fs::write(
        krate.join("build.rs"),
        format!(
            "fn main() {{ std::fs::write({:?}, \"\").unwrap(); }}",
            p("built")
        ),
    )
    .unwrap();
    // 3. A "linker" that leaves a mark.
    let linker = p("linker.sh");
    std::fs::write(
        &linker,
        format!("#!/bin/sh\ntouch {}\nexit 1\n", p("linked")),
    )
    .unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&linker, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    // 4. A secret whose first line a WAT error would quote.
    std::fs::write(p("secret"), "SECRET-LINE-42 hunter2\n").unwrap();
    let attacks: Vec<(Vec<String>, &str)> = vec![
        (vec!["--html".into(), p("precious")], "--html in a job"),
        (
            vec![
                "--engines".into(),
                format!("wasmi=path:{}", krate.display()),
            ],
            "this agent allows no builds",
        ),
        (
            vec![
                "--engines".into(),
                format!("wasmi+rustflags:-Clinker={linker}"),
            ],
            "+rustflags:",
        ),
        (
            vec![
                "--shape-file".into(),
                p("secret"),
                "--engines".into(),
                "wasmi".into(),
            ],
            "carries its shape files as content",
        ),
    ];
    let mut db = Location::parse(url).unwrap().connect().unwrap();
    let mut ids = Vec::new();
    for (extra, _) in &attacks {
        let mut args: Vec<String> = SHORT_RUN.iter().map(|s| s.to_string()).collect();
        args.extend(extra.iter().cloned());
        ids.push(queue::submit(db.as_mut(), "fleet-x", &queue::Work::new(args)).unwrap());
    }
    // And a row that is not a job at all: failed, the agent goes on.
    db.execute(
        "INSERT INTO jobs (label, args, loopbench_version, state, attempts, submitted_at)
         VALUES ('fleet-x', 'not json', '0', 'queued', 0, 0)",
        &[],
    )
    .unwrap();
    let log = dir.path().join("X");
    let mut x = agent(url, "fleet-x", "agent-X", &["--exit-when-idle"], &log);
    wait(&mut x, Duration::from_secs(300), "agent-X");
    timeline(url, "hostile jobs");
    for (id, (_, says)) in ids.iter().zip(&attacks) {
        let (state, error) = job_state(url, *id);
        assert_eq!(state, "failed", "job {id}: {error}");
        assert!(
            error.starts_with("refused: ") && error.contains(says),
            "job {id}: {error}"
        );
    }
    let (state, error) = job_state(url, 5);
    assert_eq!(state, "failed");
    assert!(error.contains("not a loopbench job"), "{error}");
    assert_eq!(std::fs::read_to_string(p("precious")).unwrap(), "ORIGINAL");
    assert!(
        !dir.path().join("built").exists(),
        "the crate's build.rs ran"
    );
    assert!(!dir.path().join("linked").exists(), "the job's linker ran");
    // Nothing the queue shows anyone holds the secret.
    let shown = loopbench(url).args(["jobs", "--events"]).output().unwrap();
    let shown = String::from_utf8_lossy(&shown.stdout);
    assert!(!shown.contains("SECRET"), "{shown}");
    assert!(!std::fs::read_to_string(&log).unwrap().contains("SECRET"));
}

/// `submit` refuses what agents refuse, and carries shape files as content:
/// the job runs after the submitter's file is gone.
#[test]
fn submit_refuses_outputs_and_flags_and_ships_shape_files() {
    let server = PgServer::start();
    let url = server.url.as_str();
    loopbench(url).args(["db", "init"]).assert().success();
    let dir = tempfile::tempdir().unwrap();
    for (extra, says) in [
        (vec!["--html", "/tmp/x.html"], "--html in a job"),
        (vec!["--csv=/tmp/x.csv"], "--csv in a job"),
        (vec!["--markdown", "-"], "--markdown in a job"),
        (
            vec!["--engines", "wasmi+rustflags:-Clinker=/bin/true"],
            "+rustflags:",
        ),
    ] {
        loopbench(url)
            .args(["submit", "--machines", "fleet-y", "--"])
            .args(SHORT_RUN)
            .args(&extra)
            .assert()
            .failure()
            .stderr(predicates::str::contains(says));
    }
    let shape = dir.path().join("my_loop.wat");
    std::fs::write(&shape, LOOP_WAT).unwrap();
    let run: Vec<&str> = ["run", "--engines", "wasmi", "--iters", "1000"]
        .into_iter()
        .chain([
            "--min-epochs",
            "2",
            "--max-epochs",
            "2",
            "-q",
            "--shape-file",
        ])
        .collect();
    loopbench(url)
        .args(["submit", "--machines", "fleet-y", "--"])
        .args(&run)
        .arg(&shape)
        .assert()
        .success()
        .stdout(predicates::str::contains("--shape-file my_loop.wat"));
    std::fs::remove_file(&shape).unwrap();
    let mut y = agent(
        url,
        "fleet-y",
        "agent-Y",
        &["--exit-when-idle"],
        &dir.path().join("Y"),
    );
    wait(&mut y, Duration::from_secs(300), "agent-Y");
    assert_done_once(url, 1);
    let mut db = Location::parse(url).unwrap().connect().unwrap();
    assert_eq!(
        count(
            db.as_mut(),
            "SELECT count(*) FROM shapes WHERE name = 'my_loop'"
        ),
        1
    );
}

/// Issue 26, item 2: the server stops (`-m immediate`) in the middle of a
/// ~10 s job and is back 3 s later: the agent reconnects, stores the
/// finished session once, and stops cleanly.
#[test]
fn a_postgres_restart_mid_job_loses_nothing() {
    let server = PgServer::start();
    let url = server.url.as_str();
    loopbench(url).args(["db", "init"]).assert().success();
    let long: Vec<&str> = SHORT_RUN
        .iter()
        .map(|a| if *a == "2" { "50" } else { a })
        .chain(["--budget", "120"])
        .collect();
    submit(url, "fleet-r", &long);
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("R");
    let mut r = Command::new(env!("CARGO_BIN_EXE_loopbench"))
        .env("LOOPBENCH_DB", url)
        .args(["agent", "--label", "fleet-r", "--name", "agent-R"])
        .args(["--heartbeat", "1", "--timeout", "60", "--poll", "0.2"])
        .arg("--exit-when-idle")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    {
        let mut db = Location::parse(url).unwrap().connect().unwrap();
        let end = Instant::now() + Duration::from_secs(60);
        while queue::list(db.as_mut()).unwrap()[0].state != "running" {
            assert!(Instant::now() < end, "agent-R never took the job");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    std::thread::sleep(Duration::from_secs(1));
    server.stop_immediately();
    std::thread::sleep(Duration::from_secs(3));
    assert!(
        r.try_wait().unwrap().is_none(),
        "the agent died with the server"
    );
    server.start_again();
    wait(
        &mut r,
        Duration::from_secs(300),
        "agent-R after the restart",
    );
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.contains("connection lost"), "{text}");
    assert!(text.contains("database reachable again"), "{text}");
    assert!(
        text.contains("1 done, 0 failed, 0 released, 0 lost"),
        "{text}"
    );
    timeline(url, "server restarted mid-job");
    assert_done_once(url, 1);
}

/// The guide's SQL block of roles (docs/fleet.md), with `password` for
/// each `'...'`.
fn readme_roles(password: &str) -> String {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/fleet.md"))
            .unwrap();
    let after = readme
        .split_once("Give each side its own PostgreSQL role")
        .expect("the guide's roles paragraph")
        .1;
    let block = after
        .split_once("```sql\n")
        .and_then(|(_, rest)| rest.split_once("```"))
        .expect("the guide's GRANT block")
        .0;
    assert!(block.contains("GRANT"), "{block}");
    block.replace("'...'", &format!("'{password}'"))
}

/// Issue 26, item 1: the guide's roles (docs/fleet.md), run as written on a real server
/// with passwords checked: a submitter queues a job and reads the queue and
/// the history, an agent claims the job, runs it and records the session;
/// a submitter cannot record or change a job, and an agent cannot queue.
#[test]
fn the_readme_roles_submit_claim_and_record_and_no_more() {
    let server = PgServer::start();
    let owner = server.url.as_str();
    loopbench(owner).args(["db", "init"]).assert().success();
    let mut db = Location::parse(owner).unwrap().connect().unwrap();
    db.batch(&readme_roles("pw-26")).unwrap();
    drop(db);
    server.require_passwords();
    let host = owner
        .strip_prefix("postgres://postgres@")
        .and_then(|h| h.strip_suffix("/postgres"))
        .unwrap();
    let submitter = format!("postgres://submitter:pw-26@{host}/postgres");
    let agent_url = format!("postgres://agent:pw-26@{host}/postgres");

    submit(&submitter, "fleet-r", SHORT_RUN);
    loopbench(&submitter)
        .arg("jobs")
        .assert()
        .success()
        .stdout(predicates::str::contains("1 queued"));
    // An agent role cannot queue.
    loopbench(&agent_url)
        .args(["submit", "--machines", "fleet-r", "--"])
        .args(SHORT_RUN)
        .assert()
        .failure()
        .stderr(predicates::str::contains(
            "permission denied for table jobs",
        ));

    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("agent.log");
    let mut a = agent(
        &agent_url,
        "fleet-r",
        "agent-R",
        &["--exit-when-idle"],
        &log,
    );
    wait(&mut a, Duration::from_secs(300), "agent-R");
    let said = std::fs::read_to_string(&log).unwrap();
    assert!(said.contains("1 done, 0 failed"), "{said}");
    assert_done_once(owner, 1);
    loopbench(&submitter)
        .arg("history")
        .assert()
        .success()
        .stdout(predicates::str::contains("add_chain"));

    // A submitter cannot record a session or change a queued job.
    let mut as_submitter = Location::parse(&submitter).unwrap().connect().unwrap();
    for sql in [
        "UPDATE jobs SET state = 'queued'",
        "DELETE FROM jobs",
        "INSERT INTO shapes (name, prices) VALUES ('x', '{}')",
    ] {
        let e = as_submitter.execute(sql, &[]).unwrap_err().to_string();
        assert!(e.contains("permission denied"), "{sql}: {e}");
    }
}
