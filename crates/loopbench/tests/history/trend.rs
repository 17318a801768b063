use super::pg::PgServer;
use super::util::{anchored_run, fixture, loopbench, rebuild};
use loopbench::history::sessions::{self, Origin, Provenance};
use loopbench::history::Location;
use loopbench::results::Session;

/// Twelve sessions built from one real session (schema 1 fixture): the
/// baseline's add_chain medians get a small deterministic wobble
/// (+-0.3%), and from the ninth session on `stepped` also a +10% step;
/// every other shape only the wobble. With `built`, the ninth session on
/// ran a new build of wasmi; without, every session the same build.
fn record_series(url: &str, built: bool) {
    let base: Session = loopbench::results::read(&fixture("schema1/session.json"))
        .unwrap()
        .session()
        .unwrap()
        .clone();
    let mut db = Location::parse(url).unwrap().open().unwrap();
    for i in 0..12 {
        let mut s = base.clone();
        // Twelve sessions, some with equal numbers: each its own id.
        s.id = Some(format!("trend-{i}"));
        // As a session records it now: the loopbench binary named.
        rebuild(
            &mut s,
            "wasmi",
            "worker: this binary, loopbench 0123456789ab",
        );
        if built && i >= 8 {
            rebuild(&mut s, "wasmi", "patched");
        }
        let wobble = 1.0 + 0.003 * [0.0, 1.0, -1.0, 0.5, -0.5][i % 5];
        for r in &mut s.results {
            let step = if r.shape == "add_chain" && i >= 8 {
                1.10
            } else {
                1.0
            };
            for a in &mut r.arms {
                if let Some(m) = &mut a.ns_per_iter {
                    m.median *= wobble * step;
                }
            }
        }
        sessions::record(db.as_mut(), &s, &Provenance::of(Origin::Import)).unwrap();
    }
}

fn trend(url: &str, shape: &str) -> String {
    let out = loopbench(url)
        .args(["trend", "--shape", shape, "--arm", "wasmi"])
        .assert()
        .success();
    String::from_utf8_lossy(&out.get_output().stdout).to_string()
}

fn trend_tests(url: &str) {
    record_series(url, true);
    let stepped = trend(url, "add_chain");
    println!("{stepped}");
    assert!(
        stepped.starts_with("rule: a step at a session is flagged when"),
        "{stepped}"
    );
    let flagged: Vec<&str> = stepped.lines().filter(|l| l.contains("<<")).collect();
    assert_eq!(flagged.len(), 1, "{stepped}");
    assert!(flagged[0].trim_start().starts_with("9 "), "{stepped}");
    assert!(flagged[0].contains("slower (regression)"), "{stepped}");
    assert!(stepped.contains("1 flagged change(s)"), "{stepped}");
    let flat = trend(url, "load_stream");
    assert!(!flat.contains("<<"), "{flat}");
    assert!(flat.contains("12 sessions"), "{flat}");
    assert!(flat.contains("0 flagged change(s)"), "{flat}");
    // Nothing stored for a shape: one line, non-zero.
    loopbench(url)
        .args(["trend", "--shape", "nope", "--arm", "wasmi"])
        .assert()
        .failure()
        .stderr(predicates::str::starts_with(
            "error: no stored results of shape nope",
        ));
}

#[test]
fn trend_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    trend_tests(dir.path().join("h.sqlite").to_str().unwrap());
}

/// The same step where no build changed: the machine's, shown and not
/// flagged.
#[test]
fn trend_calls_a_step_without_a_new_build_the_machine_s() {
    let dir = tempfile::tempdir().unwrap();
    let url = dir.path().join("h.sqlite");
    let url = url.to_str().unwrap();
    record_series(url, false);
    let stepped = trend(url, "add_chain");
    shown_not_flagged(
        url,
        &stepped,
        "not flagged: the same build as the session before",
        "9 ",
        "0 flagged change(s), 1 not flagged at the same build (the machine's)",
        (
            "not flagged: the same build as the session before (the machine",
            "#CC79A7",
        ),
        &dir.path().join("trend.html"),
    );
}

/// A step `text` (trend's output on `db`) shows but does not flag: one row
/// marked `why`, the step's `session`, the `summary` line, and on the
/// `--html` page (written to `page`) its `legend` with its colour.
fn shown_not_flagged(
    db: &str,
    text: &str,
    why: &str,
    session: &str,
    summary: &str,
    (legend, colour): (&str, &str),
    page: &std::path::Path,
) {
    assert!(!text.contains("<<"), "{text}");
    let marked: Vec<&str> = text.lines().filter(|l| l.contains(why)).collect();
    assert_eq!(marked.len(), 1, "{text}");
    assert!(marked[0].trim_start().starts_with(session), "{text}");
    assert!(text.contains(summary), "{text}");
    loopbench(db)
        .args(["trend", "--shape", "add_chain", "--arm", "wasmi", "--html"])
        .arg(page)
        .assert()
        .success();
    let html = std::fs::read_to_string(page).unwrap();
    assert_eq!(html.matches(legend).count(), 1, "{html}");
    assert!(html.matches(colour).count() >= 2, "{html}");
}

#[test]
fn trend_on_postgres() {
    let server = PgServer::start();
    trend_tests(&server.url);
}

/// Twelve sessions built from one real session anchored to tinywasm (the
/// JSON `doc`), recorded in `db`: the ratio to it with a +-0.3% wobble,
/// and from the eighth session on a +2% step, with a new build of wasmi.
/// Absolute time only wobbles.
/// With `own_half_pct`, each session's own interval of the ratio is its
/// value +-that (a session that itself measured the step); without, each
/// keeps the real session's (3 epochs: tens of percent wide). `trend`'s
/// output.
fn anchored_series(db: &str, doc: &std::path::Path, own_half_pct: Option<f64>) -> String {
    let base = loopbench::results::read(doc)
        .unwrap()
        .session()
        .unwrap()
        .clone();
    let mut store = Location::parse(db).unwrap().open().unwrap();
    for i in 0..12 {
        let mut s = base.clone();
        s.id = Some(format!("anchored-{i}"));
        if i >= 7 {
            rebuild(&mut s, "wasmi", "patched");
        }
        let wobble = 1.0 + 0.003 * [0.0, 1.0, -1.0, 0.5, -0.5][i % 5];
        let step = if i >= 7 { 1.02 } else { 1.0 };
        let r = &mut s.results[0];
        for a in &mut r.arms {
            if let Some(m) = &mut a.ns_per_iter {
                m.median *= wobble;
            }
        }
        let c = &mut r.anchored[0];
        let ratio = (1.0 + c.median_pct / 100.0) * wobble * step;
        c.median_pct = (ratio - 1.0) * 100.0;
        if let Some(h) = own_half_pct {
            c.ci_pct = [-h, h].map(|x| (ratio * (1.0 + x / 100.0) - 1.0) * 100.0);
        }
        sessions::record(store.as_mut(), &s, &Provenance::of(Origin::Import)).unwrap();
    }
    let out = trend(db, "add_chain");
    let time = out
        .split("\n\n")
        .find(|b| b.contains("absolute time"))
        .unwrap();
    assert!(time.contains("0 flagged change(s)"), "{time}");
    out.split("\n\n")
        .find(|b| b.contains("anchored ratio, 12 sessions (ratio to tinywasm"))
        .unwrap_or_else(|| panic!("no anchored series: {out}"))
        .to_string()
}

/// The anchored series' +2% step is flagged once, at the step, when the
/// step's session's own interval (+-0.5%) lies beyond the level before;
/// and absolute time (no step) never.
#[test]
fn trend_flags_a_two_percent_step_in_an_anchored_series_once() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.sqlite");
    let db = db.to_str().unwrap();
    let doc = dir.path().join("a.json");
    anchored_run(db, "wasmi", "tinywasm", &doc, false);
    let anchored = anchored_series(db, &doc, Some(0.5));
    let flagged: Vec<&str> = anchored.lines().filter(|l| l.contains("<<")).collect();
    assert_eq!(flagged.len(), 1, "{anchored}");
    assert!(flagged[0].trim_start().starts_with("8 "), "{anchored}");
    assert!(flagged[0].contains("slower (regression)"), "{anchored}");
    assert!(!anchored.contains("own interval"), "{anchored}");
    // The same values, each session with the real session's own interval,
    // which holds the level before the step: the step is shown, not
    // flagged.
    let db = dir.path().join("wide.sqlite");
    let db = db.to_str().unwrap();
    let anchored = anchored_series(db, &doc, None);
    shown_not_flagged(
        db,
        &anchored,
        "not flagged: inside the session's own interval [",
        "8 ",
        "0 flagged change(s), 1 not flagged inside the session's own interval",
        ("not flagged: inside the session's own interval", "#8C8C8C"),
        &dir.path().join("trend.html"),
    );
}
