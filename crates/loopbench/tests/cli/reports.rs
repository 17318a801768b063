use super::util::{loopbench, SMALL};
use std::path::{Path, PathBuf};

/// The saved session of schema 1 (one process, no ids or fingerprints).
fn schema1_session() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/schema1/session.json")
}

/// `loopbench compare a b` run in `dir`, its output whatever the exit.
fn compare_in(dir: &Path, a: &str, b: &str) -> std::process::Output {
    let (mut cmd, _d) = loopbench();
    cmd.current_dir(dir)
        .args(["compare", a, b])
        .output()
        .unwrap()
}

/// A real session (wasmi and tinywasm, two epochs) written with every
/// shorthand, then reported again and compared with itself.
#[test]
fn run_writes_every_format_and_report_and_compare_read_it_back() {
    let (mut cmd, dir) = loopbench();
    let mut args = vec![
        "run",
        "--engines",
        "wasmi,tinywasm",
        "--shapes",
        "add_chain",
        "--layout-builds",
        "1",
        "--min-epochs",
        "2",
        "--max-epochs",
        "2",
        // Every rep inline: the test counts them in the JSON.
        "--json-reps",
        "--json",
        "s.json",
        "--csv",
        "s.csv",
        "--markdown",
        "s.md",
        "--html",
        "s.html",
    ];
    args.extend_from_slice(SMALL);
    cmd.args(&args).assert().success();
    let read = |f: &str| std::fs::read_to_string(dir.path().join(f)).unwrap();
    let json: serde_json::Value = serde_json::from_str(&read("s.json")).unwrap();
    let reps: usize = json["results"][0]["arms"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["reps"].as_array().unwrap().len())
        .sum();
    // 3 arms (null included) x 2 epochs x the rounds per epoch (2, rounded
    // up to whole order designs).
    let rounds = json["session"]["rounds"].as_u64().unwrap() as usize;
    assert!(rounds >= 2);
    assert_eq!(reps, 3 * 2 * rounds);
    assert_eq!(read("s.csv").lines().count(), reps + 1);
    let md = read("s.md");
    assert!(md.contains("| tinywasm |"), "{md}");
    assert!(
        md.contains("```sh\nloopbench run --engines wasmi,tinywasm"),
        "{md}"
    );
    let html = read("s.html");
    assert_eq!(html.matches("<svg class=\"chart\"").count(), 2);
    assert!(
        !html.contains("<link") && !html.contains("src=\""),
        "fetches something"
    );

    // report: the saved session again, CSV to stdout, same rows.
    let (mut cmd, _d) = loopbench();
    let out = cmd
        .current_dir(dir.path())
        .args(["report", "s.json", "--csv", "-"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    assert_eq!(String::from_utf8(out).unwrap(), read("s.csv"));

    // compare: a session with itself is one session (no warning that two
    // sessions are weaker) and changes nothing; whether its two epochs
    // are close enough to say "unchanged" within ±0.5% depends on the
    // machine, and when they are not it has no answer yet and says how to
    // get one (it said "no change" either way).
    let (mut cmd, _d) = loopbench();
    let a = cmd
        .current_dir(dir.path())
        .args(["compare", "s.json", "s.json"])
        .assert()
        .success();
    let out = a.get_output();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("outcomes: 0 changed"), "{stdout}");
    let answered = if stdout.contains("outcomes: 0 changed, 0 unchanged") {
        "no answer yet: every row is unsure; to get one:\n  narrow the intervals"
    } else if stdout.contains(", 0 unsure") {
        "no change: every row unchanged inside ±0.5%"
    } else {
        "no change found: "
    };
    assert!(stdout.contains(answered), "{stdout}");
    assert_eq!(stdout.matches("same session").count(), 2, "{stdout}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !stderr.contains("weaker than comparing arms inside one session"),
        "{stderr}"
    );
    assert!(!stderr.contains("FINGERPRINTS DIFFER"), "{stderr}");
}

/// An old file (schema 1: no id, no command, no fingerprint fields) reports
/// in every format.
#[test]
fn an_old_session_reports_in_every_format() {
    let fixture = schema1_session();
    for format in ["table", "json", "csv", "markdown", "html"] {
        let (mut cmd, _d) = loopbench();
        let out = cmd
            .arg("report")
            .arg(&fixture)
            .args(["--export", &format!("{format}=-")])
            .assert()
            .success()
            .get_output()
            .stdout
            .clone();
        let text = String::from_utf8(out).unwrap();
        assert!(!text.is_empty(), "{format}");
        if format == "markdown" {
            assert!(text.contains("The command line was not recorded"), "{text}");
        }
        if format == "csv" {
            // No session id in the file: the column is there, empty.
            assert!(text.lines().nth(1).unwrap().starts_with(",0,"), "{text}");
        }
    }
}

#[test]
fn report_and_compare_refuse_what_is_not_a_session() {
    let (mut cmd, dir) = loopbench();
    std::fs::write(dir.path().join("x.csv"), "a,b\n1,2\n").unwrap();
    let out = cmd.args(["compare", "x.csv", "x.csv"]).assert().failure();
    let e = super::util::assert_one_line_error(&out.get_output().stderr);
    assert!(e.contains("x.csv: not JSON"), "{e}");
    let (mut cmd, _d) = loopbench();
    let out = cmd.args(["report", "missing.json"]).assert().failure();
    let e = super::util::assert_one_line_error(&out.get_output().stderr);
    assert!(e.contains("cannot read missing.json"), "{e}");
}

/// Well-formed JSON that is no loopbench document (`[]`, a number, an
/// object whose `schema` is not a string) is named as such, not as the
/// reader's internal expectation ("expected struct Probe").
#[test]
fn compare_says_a_json_array_is_not_a_loopbench_document() {
    for (text, holds) in [
        ("[]", "a JSON array"),
        ("42", "a JSON number"),
        (
            "{\"schema\": 7}",
            "an object whose `schema` is not a string",
        ),
    ] {
        let (mut cmd, dir) = loopbench();
        std::fs::write(dir.path().join("x.json"), text).unwrap();
        let out = cmd.args(["compare", "x.json", "x.json"]).assert().failure();
        let e = super::util::assert_one_line_error(&out.get_output().stderr);
        assert!(
            e.contains("x.json: not a loopbench document") && e.contains(holds),
            "{text}: {e}"
        );
        assert!(!e.contains("Probe"), "{text}: {e}");
    }
}

/// A saved session whose samples are zero or negative (edited, or
/// written by something else) cannot give a change on the log scale:
/// compare says the samples are non-positive, not that epochs are missing.
#[test]
fn compare_names_non_positive_samples() {
    let (mut cmd, dir) = loopbench();
    let mut args = vec![
        "run",
        "--engines",
        "wasmi",
        "--shapes",
        "add_chain",
        "--layout-builds",
        "1",
        "--min-epochs",
        "3",
        "--max-epochs",
        "3",
        // Every rep inline: the test edits their times.
        "--json-reps",
        "--json",
        "a.json",
        "--quiet",
    ];
    args.extend_from_slice(SMALL);
    cmd.args(&args).assert().success();
    let text = std::fs::read_to_string(dir.path().join("a.json")).unwrap();
    let mut doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    for result in doc["results"].as_array_mut().unwrap() {
        for arm in result["arms"].as_array_mut().unwrap() {
            // 0 (a negative time is refused when the file is read).
            for s in arm["samples_ns_per_iter"].as_array_mut().unwrap() {
                *s = serde_json::json!(0.0);
            }
        }
    }
    std::fs::write(dir.path().join("b.json"), doc.to_string()).unwrap();
    let out = compare_in(dir.path(), "a.json", "b.json");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout
        .lines()
        .find(|l| l.starts_with("not compared: add_chain wasmi"))
        .unwrap_or_else(|| panic!("no `not compared` line: {stdout}"));
    assert!(
        line.contains("3 of the 3 epochs in B have non-positive"),
        "{line}"
    );
    assert!(!line.contains("fewer than two"), "{line}");
}

/// compare's warnings start its table, once; they go to stderr only when
/// no table is on stdout (the report goes to files or stdout takes JSON),
/// where they would otherwise not be seen.
#[test]
fn compare_warnings_are_printed_once() {
    let (_, dir) = loopbench();
    let session = std::fs::read_to_string(schema1_session()).unwrap();
    std::fs::write(dir.path().join("a.json"), &session).unwrap();
    std::fs::write(
        dir.path().join("b.json"),
        session.replace("\"wasmi 2.0.0\"", "\"wasmi 2.0.1\""),
    )
    .unwrap();
    let warned = |text: &str| {
        text.lines()
            .filter(|l| l.contains("wasmi 2.0.0 in A, wasmi 2.0.1 in B"))
            .count()
    };
    // The table on stdout: there, and nowhere else.
    let out = compare_in(dir.path(), "a.json", "b.json");
    assert!(out.status.success());
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    // One line per arm it concerns (wasmi and its null control).
    assert_eq!(warned(&stdout), 2, "{stdout}");
    assert_eq!(warned(&stderr), 0, "{stderr}");
    // JSON on stdout: the warning on stderr, once.
    let (mut cmd, _d) = loopbench();
    let out = cmd
        .current_dir(dir.path())
        .args(["compare", "a.json", "b.json", "--json", "-"])
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(warned(&String::from_utf8_lossy(&out.stderr)), 2);
}

/// `report FILE --html OUT`: the file is the answer, and stdout one line
/// that says where it went (it reprinted the whole table); `--verbose`
/// still asks for the table, and a format on stdout is all stdout holds.
#[test]
fn report_to_a_file_prints_one_line() {
    let (_, dir) = loopbench();
    let session = schema1_session();
    let report = |args: &[&str]| {
        let (mut cmd, _d) = loopbench();
        let out = cmd
            .current_dir(dir.path())
            .arg("report")
            .arg(&session)
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        String::from_utf8(out.stdout).unwrap()
    };
    let stdout = report(&["--html", "r.html", "--csv", "r.csv"]);
    let mut lines: Vec<&str> = stdout.lines().collect();
    lines.sort();
    assert_eq!(lines.len(), 2, "{stdout}");
    assert!(lines[0].starts_with("wrote r.csv (csv, "), "{stdout}");
    assert!(lines[1].starts_with("wrote r.html (html, "), "{stdout}");
    assert!(dir.path().join("r.html").is_file());
    let table = report(&["--html", "r.html", "--verbose"]);
    assert!(table.contains("add_chain"), "{table}");
    let markdown = report(&["--html", "r.html", "--markdown", "-"]);
    assert!(markdown.starts_with("### loopbench"), "{markdown}");
    assert!(!markdown.contains("wrote "), "{markdown}");
}
