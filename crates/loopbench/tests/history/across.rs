//! Across sessions, on the recorded A/A sessions of a noisy VM (nothing
//! changed between them; `tests/fixtures/noisy-vm/README.md`): compare of
//! consecutive sessions is changed on at most 5% of rows, with or without a
//! history to learn the between-session spread from; the learned term
//! widens the interval; trend flags nothing on them.

use super::util::{anchored_run, fixture, loopbench};
use serde_json::Value;
use std::io::Read;
use std::path::{Path, PathBuf};

/// The 20 sessions of one engine, each written to `dir` as `sN.json`.
fn sessions(engine: &str, dir: &Path) -> Vec<PathBuf> {
    fixture_sessions(&format!("aa-{engine}"), dir)
}

/// The sessions of fixture `noisy-vm/NAME.jsonl.gz`, each written to `dir`
/// as `sN.json`.
fn fixture_sessions(name: &str, dir: &Path) -> Vec<PathBuf> {
    let mut text = String::new();
    flate2::read::GzDecoder::new(
        std::fs::File::open(fixture(&format!("noisy-vm/{name}.jsonl.gz"))).unwrap(),
    )
    .read_to_string(&mut text)
    .unwrap();
    text.lines()
        .enumerate()
        .map(|(i, line)| {
            let path = dir.join(format!("s{}.json", i + 1));
            std::fs::write(&path, line).unwrap();
            path
        })
        .collect()
}

/// `compare a b --json -` with history `db`: the rows.
fn compare(db: &str, a: &Path, b: &Path, extra: &[&str]) -> Vec<Value> {
    let out = loopbench(db)
        .arg("compare")
        .arg(a)
        .arg(b)
        .args(["--json", "-"])
        .args(extra)
        .assert()
        .success();
    let doc: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    doc["rows"].as_array().unwrap().clone()
}

/// The shapes of every recorded A/A set.
const SHAPES: [&str; 4] = ["lut", "locals_traffic", "br_table_switch", "call_indirect"];

/// `trend --shape SHAPE --arm ARM` with history `db`: its text.
fn trend(db: &str, shape: &str, arm: &str) -> String {
    let out = loopbench(db)
        .args(["trend", "--shape", shape, "--arm", arm])
        .assert()
        .success();
    String::from_utf8_lossy(&out.get_output().stdout).to_string()
}

fn outcome(row: &Value) -> &str {
    row["outcome"].as_str().unwrap()
}

/// Compare over the 10 disjoint consecutive pairs: (changed, rows).
fn pairs(db: &str, paths: &[PathBuf]) -> (usize, usize, Vec<Value>) {
    let mut rows = Vec::new();
    for pair in paths.chunks(2) {
        rows.extend(compare(db, &pair[0], &pair[1], &[]));
    }
    let changed = rows.iter().filter(|r| outcome(r) == "changed").count();
    (changed, rows.len(), rows)
}

fn aa(engine: &str) {
    let dir = tempfile::tempdir().unwrap();
    let paths = sessions(engine, dir.path());
    assert_eq!(paths.len(), 20);
    let db = dir.path().join("h.sqlite");
    let db = db.to_str().unwrap();

    // No history and no reference: nothing spans two sessions, so every
    // row is unsure and says how to make it sure.
    let (changed, n, rows) = pairs(db, &paths);
    assert_eq!((changed, n), (0, 40), "{rows:?}");
    for r in &rows {
        assert_eq!(outcome(r), "unsure");
        assert_eq!(r["basis"]["kind"], "none");
        assert!(
            r["reason"].as_str().unwrap().contains("--reference ARM"),
            "{r}"
        );
    }
    let naive = rows.clone();

    // With the other sessions in the history, each row learns the spread
    // of this machine's repeated sessions of its shape and arm.
    loopbench(db)
        .args(["history", "import"])
        .args(&paths)
        .assert()
        .success();
    let (changed, n, rows) = pairs(db, &paths);
    println!("{engine}: {changed} of {n} rows changed with the between-session term");
    assert!(
        changed * 20 <= n,
        "{changed} of {n} A/A rows changed: {rows:#?}"
    );
    for (r, plain) in rows.iter().zip(&naive) {
        assert_eq!(r["basis"]["kind"], "between_sessions", "{r}");
        assert_eq!(r["basis"]["sessions"], 18, "A and B are left out: {r}");
        assert_ne!(
            outcome(r),
            "unchanged",
            "precision 0.5% is far inside ±12%: {r}"
        );
        // The term widens the interval around the same estimate.
        let width = |v: &Value| v["ci_pct"][1].as_f64().unwrap() - v["ci_pct"][0].as_f64().unwrap();
        assert!(width(r) > width(plain), "{r} against {plain}");
        assert_eq!(r["median_pct"], plain["median_pct"]);
    }

    // Trend over the 20 sessions: no step flagged in any series.
    for shape in SHAPES {
        let text = trend(db, shape, engine);
        assert!(text.contains("absolute time, 20 sessions"), "{text}");
        assert!(text.contains("0 flagged change(s)"), "{text}");
        assert!(!text.contains("<<"), "{text}");
    }
}

#[test]
fn aa_sessions_of_tinywasm_are_not_changed_across_sessions() {
    aa("tinywasm");
}

#[test]
fn aa_sessions_of_wasm3_are_not_changed_across_sessions() {
    aa("wasm3");
}

/// The anchored A/A sets of the 0.5 ms default (`ENGINE` against
/// `REFERENCE`, 20 sessions, nothing changed): over the 19 consecutive pairs
/// at most 1 in 20 anchored rows is changed, and at most 1 of the 40 of the
/// first ten pairs (issue 25's goal). Most anchored rows are widened by the
/// machine's calibration, learned from the 18 other sessions' pairs; rows
/// whose interval excludes zero alone but that are not a change among the
/// comparison's eight rows say so. Trend flags the series listed
/// (`stepped`) as recorded, where builds are unknown, and nothing once the
/// sessions name their one binary. A real 10% change on one shape among the four is still found (these
/// cross-engine ratios move by 1-4% between sessions on that VM: 5% is
/// unsure).
fn aa_anchored(engine: &str, stepped: &[&str]) {
    let dir = tempfile::tempdir().unwrap();
    let paths = fixture_sessions(&format!("aa-anchored-{engine}"), dir.path());
    assert_eq!(paths.len(), 20);
    let db = dir.path().join("h.sqlite");
    let db = db.to_str().unwrap();
    loopbench(db)
        .args(["history", "import"])
        .args(&paths)
        .assert()
        .success();
    let mut rows = Vec::new();
    let mut first_ten = 0;
    for (i, pair) in paths.windows(2).enumerate() {
        let r: Vec<Value> = compare(db, &pair[0], &pair[1], &[])
            .into_iter()
            .filter(|r| r["basis"]["kind"] == "anchored")
            .collect();
        assert_eq!(r.len(), 4, "{r:?}");
        if i < 10 {
            first_ten += r.iter().filter(|r| outcome(r) == "changed").count();
        }
        rows.extend(r);
    }
    let changed = rows.iter().filter(|r| outcome(r) == "changed").count();
    println!(
        "{engine}: {changed} of {} anchored rows changed, {first_ten} of 40 in the first ten pairs",
        rows.len()
    );
    assert!(
        changed * 20 <= rows.len(),
        "{changed} of {}: {rows:#?}",
        rows.len()
    );
    assert!(first_ten <= 1, "{first_ten} of 40");
    let mut calibrated = 0;
    for r in &rows {
        assert!(r["p_value"].as_f64().unwrap() <= 1.0, "{r}");
        // Four series of 18 sessions: 4 x 153 pairs; a factor of 1 is
        // no widening and not shown.
        if !r["calibration"].is_null() {
            assert_eq!(r["calibration"]["pairs"], 612, "{r}");
            assert!(r["calibration"]["factor"].as_f64().unwrap() > 1.0, "{r}");
            calibrated += 1;
        }
    }
    assert!(
        calibrated * 2 > rows.len(),
        "{calibrated} of {}",
        rows.len()
    );
    let counted_out: Vec<&Value> = rows.iter().filter(|r| r["counted_out"] == true).collect();
    assert!(
        !counted_out.is_empty(),
        "the sets hold rows significant alone"
    );
    for r in counted_out {
        assert_eq!(outcome(r), "unsure", "{r}");
        assert!(r["p_value"].as_f64().unwrap() < 0.05, "{r}");
        assert!(
            r["reason"].as_str().unwrap().contains("Benjamini-Hochberg"),
            "{r}"
        );
    }

    // Trend over the 20 sessions, anchored series, as recorded: their
    // versions say `this binary` and not which (recorded before versions
    // named it), so whether a build changed is unknown and the values
    // alone decide: they step where listed (the tinywasm set's sessions
    // 19-20, when the machine itself changed: both engines' absolute times
    // moved, tinywasm's locals_traffic 4%, wasm3's 2%), and nowhere else.
    // That is also the rule's false flags were each session a new build.
    for shape in SHAPES {
        let text = trend(db, shape, engine);
        assert!(text.contains("anchored ratio, 20 sessions"), "{text}");
        let expected = usize::from(stepped.contains(&shape));
        assert!(
            text.contains(&format!("{expected} flagged change(s) (anchored ratio)")),
            "{shape}: {text}"
        );
    }
    // The same sessions with the binary named, as a session records it now
    // (all 20 ran in 7d68a91's binary, GNU build id 201b50a9afc4...): no
    // build changed anywhere, so nothing is flagged, and the step is shown
    // as the machine's.
    let named = dir.path().join("named.sqlite");
    let named = named.to_str().unwrap();
    for (i, p) in paths.iter().enumerate() {
        let text = std::fs::read_to_string(p).unwrap().replace(
            "[worker: this binary]",
            "[worker: this binary, loopbench 201b50a9afc4]",
        );
        let copy = dir.path().join(format!("named{}.json", i + 1));
        std::fs::write(&copy, text).unwrap();
        loopbench(named)
            .args(["history", "import"])
            .arg(&copy)
            .assert()
            .success();
    }
    for shape in SHAPES {
        let text = trend(named, shape, engine);
        assert!(text.contains("loopbench 201b50a9afc4"), "{text}");
        let summary = text
            .lines()
            .find(|l| l.ends_with("(anchored ratio)"))
            .unwrap();
        assert!(summary.starts_with("  0 flagged change(s)"), "{text}");
        if stepped.contains(&shape) {
            assert!(
                summary.contains("at the same build (the machine's)"),
                "{text}"
            );
        }
    }

    // A real change on one shape: lut 10% slower in a copy of session 12.
    let mut d: Value = serde_json::from_slice(&std::fs::read(&paths[11]).unwrap()).unwrap();
    d["id"] = Value::from("lut-slowed");
    for r in d["results"].as_array_mut().unwrap() {
        if r["shape"] != "lut" {
            continue;
        }
        for a in r["arms"].as_array_mut().unwrap() {
            if a["arm"] == engine {
                for s in a["samples_ns_per_iter"].as_array_mut().unwrap() {
                    *s = Value::from(s.as_f64().unwrap() * 1.10);
                }
            }
        }
    }
    let slowed = dir.path().join("slowed.json");
    std::fs::write(&slowed, d.to_string()).unwrap();
    let r = compare(db, &paths[10], &slowed, &[]);
    let lut = r
        .iter()
        .find(|r| r["shape"] == "lut" && r["arm"] == engine)
        .unwrap();
    assert_eq!(outcome(lut), "changed", "{lut}");
    assert_eq!(lut["verdict"], "slower", "{lut}");
}

#[test]
fn anchored_aa_sessions_of_tinywasm_are_not_changed_across_sessions() {
    aa_anchored("tinywasm", &["locals_traffic"]);
}

#[test]
fn anchored_aa_sessions_of_wasm3_are_not_changed_across_sessions() {
    aa_anchored("wasm3", &[]);
}

/// A short session of the mock engine at cost 10 anchored to the mock at
/// cost 20 (exact costs: every ratio and interval is exact, so nothing below
/// depends on the machine's noise), recorded in the history `db` or not.
fn anchored_session(dir: &Path, name: &str, db: &str, record: bool) -> PathBuf {
    let path = dir.join(name);
    anchored_run(db, "mock:cost=10", "mock:cost=20", &path, record);
    path
}

/// `doc` with the arm `arm`'s times multiplied by `factor` (a known
/// change) and a new session id.
fn slowed(doc: &Path, arm: &str, factor: f64, out: &Path) {
    let mut d: Value = serde_json::from_slice(&std::fs::read(doc).unwrap()).unwrap();
    d["id"] = Value::from("slowed");
    for r in d["results"].as_array_mut().unwrap() {
        for a in r["arms"].as_array_mut().unwrap() {
            if a["arm"] != arm {
                continue;
            }
            for s in a["samples_ns_per_iter"].as_array_mut().unwrap() {
                *s = Value::from(s.as_f64().unwrap() * factor);
            }
        }
    }
    std::fs::write(out, d.to_string()).unwrap();
}

/// A reference that is a checkout (`path:`, its git revision recorded
/// beside its version) finds its anchored history: the history stores the
/// version, and compare asks for the version.
#[test]
fn an_anchored_row_on_a_checkout_reference_learns_from_its_history() {
    let dir = tempfile::tempdir().unwrap();
    let checkout = dir.path().join("yardstick");
    std::fs::create_dir(&checkout).unwrap();
    std::fs::write(checkout.join("loopbench-mock"), "cost=20").unwrap();
    let git = |args: &[&str]| {
        let ok = std::process::Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@t"])
            .args(args)
            .current_dir(&checkout)
            .status()
            .unwrap()
            .success();
        assert!(ok, "git {args:?}");
    };
    git(&["init", "-q"]);
    git(&["add", "."]);
    git(&["commit", "-qm", "yardstick"]);
    let reference = format!("mock=path:{}", checkout.display());
    let db = dir.path().join("h.sqlite");
    let db = db.to_str().unwrap();
    let run = |name: &str, record: bool| {
        let path = dir.path().join(name);
        anchored_run(db, "mock:cost=10", &reference, &path, record);
        path
    };
    let (a, b) = (run("a.json", false), run("b.json", false));
    let doc: Value = serde_json::from_slice(&std::fs::read(&a).unwrap()).unwrap();
    let engine = doc["session"]["engines"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["arm"] == reference.as_str())
        .unwrap();
    assert!(engine["git"]["rev"].is_string(), "{engine}");
    for i in 0..3 {
        run(&format!("h{i}.json"), true);
    }
    let rows = compare(db, &a, &b, &[]);
    let base = rows.iter().find(|r| r["arm"] == "mock:cost=10").unwrap();
    assert_eq!(base["basis"]["kind"], "anchored", "{base}");
    assert_eq!(base["basis"]["between"]["sessions"], 3, "{base}");
}

#[test]
fn sessions_that_share_a_reference_compare_their_ratios_and_gate_on_them() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.sqlite");
    let db = db.to_str().unwrap();
    let a = anchored_session(dir.path(), "a.json", db, false);
    let b = anchored_session(dir.path(), "b.json", db, false);
    let doc: Value = serde_json::from_slice(&std::fs::read(&a).unwrap()).unwrap();
    assert_eq!(doc["session"]["reference"], "mock:cost=20");
    let shape = &doc["results"][0];
    let roles: Vec<(&str, &str)> = shape["arms"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| (a["arm"].as_str().unwrap(), a["role"].as_str().unwrap()))
        .collect();
    assert!(roles.contains(&("mock:cost=20", "reference")), "{roles:?}");
    // The baseline as a ratio to the reference, with an interval.
    let anchored = shape["anchored"].as_array().unwrap();
    assert_eq!(anchored.len(), 1, "{anchored:?}");
    assert_eq!(
        (anchored[0]["arm"].as_str(), anchored[0]["vs"].as_str()),
        (Some("mock:cost=10"), Some("mock:cost=20"))
    );
    // The reference is a yardstick, not a comparison to decide.
    let reference = shape["comparisons"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["arm"] == "mock:cost=20")
        .unwrap();
    assert!(reference.get("outcome").is_none(), "{reference}");

    let rows = compare(db, &a, &b, &[]);
    let base = rows.iter().find(|r| r["arm"] == "mock:cost=10").unwrap();
    assert_eq!(base["basis"]["kind"], "anchored", "{base}");
    assert_eq!(base["basis"]["reference"], "mock:cost=20");
    assert_eq!(base["units"], "epochs");
    assert!(
        base["median_pct"].as_f64().unwrap().abs() < 1e-9,
        "exact costs: {base}"
    );
    assert_eq!(
        (base["a_units"].as_u64(), base["b_units"].as_u64()),
        (Some(3), Some(3))
    );
    assert!(
        base["basis"].get("between").is_none(),
        "no history yet: {base}"
    );
    // The reference itself has no yardstick: compared absolutely, and with
    // no history it is unsure.
    let yardstick = rows.iter().find(|r| r["arm"] == "mock:cost=20").unwrap();
    assert_eq!(yardstick["basis"]["kind"], "none", "{yardstick}");

    // Three more sessions in the history: the anchored row learns the shift
    // of the ratio between sessions that their own intervals do not
    // explain (possibly none), the reference's row its absolute spread.
    for i in 0..3 {
        anchored_session(dir.path(), &format!("h{i}.json"), db, true);
    }
    let rows = compare(db, &a, &b, &[]);
    let base = rows.iter().find(|r| r["arm"] == "mock:cost=10").unwrap();
    let between = &base["basis"]["between"];
    assert_eq!(between["sessions"], 3, "{base}");
    assert_eq!(between["excess"], true, "{base}");
    assert!(between["sd_pct"].as_f64().unwrap() >= 0.0);
    let yardstick = rows.iter().find(|r| r["arm"] == "mock:cost=20").unwrap();
    assert_eq!(
        yardstick["basis"]["kind"], "between_sessions",
        "{yardstick}"
    );
    assert_eq!(yardstick["basis"]["sessions"], 3, "{yardstick}");

    // A reference one session lacks is refused in one line.
    let out = loopbench(db)
        .arg("compare")
        .arg(&a)
        .arg(&b)
        .args(["--reference", "wasm3"])
        .assert()
        .failure();
    let err = String::from_utf8_lossy(&out.get_output().stderr).to_string();
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.contains("the reference wasm3 was not measured in A"),
        "{err}"
    );

    // The arm twice as slow in B, the reference unchanged: the anchored ratio
    // moves by +100% (far beyond the null floors of such short sessions)
    // and the gate fails on it.
    let c = dir.path().join("c.json");
    slowed(&a, "mock:cost=10", 2.0, &c);
    let rows = compare(db, &a, &c, &[]);
    let base = rows.iter().find(|r| r["arm"] == "mock:cost=10").unwrap();
    assert_eq!(outcome(base), "changed", "{base}");
    assert!(
        (base["median_pct"].as_f64().unwrap() - 100.0).abs() < 1e-6,
        "{base}"
    );
    let md = dir.path().join("gate.md");
    loopbench(db)
        .arg("compare")
        .arg(&a)
        .arg(&c)
        .args(["--fail-on", "slower:5", "--markdown"])
        .arg(&md)
        .assert()
        .code(1);
    let text = std::fs::read_to_string(&md).unwrap();
    assert!(
        text.contains("**gate FAILED (slower by more than 5%): 1 of 2 comparisons**"),
        "{text}"
    );
    assert!(text.contains("- add_chain mock:cost=10: +100.0%"), "{text}");
    // Beyond the change, the other direction, or a bad rule.
    for (rule, code) in [("slower:150", 0), ("faster", 0), ("changed:10", 1)] {
        loopbench(db)
            .arg("compare")
            .arg(&a)
            .arg(&c)
            .args(["--fail-on", rule])
            .assert()
            .code(code);
    }
    let out = loopbench(db)
        .arg("compare")
        .arg(&a)
        .arg(&c)
        .args(["--fail-on", "slowest"])
        .assert()
        .code(2);
    let err = String::from_utf8_lossy(&out.get_output().stderr).to_string();
    assert!(err.contains("expected slower, faster or changed"), "{err}");
    // Unsure never fails the gate: the same +100% without the reference
    // and with no history to learn from is unsure.
    let mut d: Value = serde_json::from_slice(&std::fs::read(&c).unwrap()).unwrap();
    d["session"]["reference"] = Value::Null;
    let unanchored = dir.path().join("d.json");
    std::fs::write(&unanchored, d.to_string()).unwrap();
    let empty = dir.path().join("empty.sqlite");
    loopbench(empty.to_str().unwrap())
        .arg("compare")
        .arg(&a)
        .arg(&unanchored)
        .args(["--fail-on", "slower:5"])
        .assert()
        .code(0);
}

/// Sessions imported from copies (files newer than their sessions, in any
/// order) keep the order they ran in: each is stored at the start time its
/// id holds, not at its file's time.
#[test]
fn imported_sessions_keep_the_order_they_ran_in() {
    let dir = tempfile::tempdir().unwrap();
    let paths = fixture_sessions("aa-anchored-wasm3", dir.path());
    // The files' times run backwards: the last session's file is oldest.
    let now = std::time::SystemTime::now();
    for (i, p) in paths.iter().enumerate() {
        let age = std::time::Duration::from_secs(i as u64 * 60);
        let f = std::fs::File::options().write(true).open(p).unwrap();
        f.set_modified(now - age).unwrap();
    }
    let db = dir.path().join("h.sqlite");
    let db = db.to_str().unwrap();
    loopbench(db)
        .args(["history", "import"])
        .args(paths.iter().rev())
        .assert()
        .success();
    let ran: Vec<String> = paths
        .iter()
        .map(|p| {
            let d: Value = serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap();
            d["id"].as_str().unwrap().to_string()
        })
        .collect();
    let mut store = loopbench::history::Location::parse(db)
        .unwrap()
        .open()
        .unwrap();
    let stored: Vec<String> = store
        .query("SELECT uid FROM sessions ORDER BY recorded_at", &[])
        .unwrap()
        .iter()
        .map(|r| r.text(0).unwrap())
        .collect();
    assert_eq!(stored, ran);
}
