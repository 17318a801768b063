//! Every exporter on a fixed results value, and the export manager's file
//! handling. The value comes from a session of mock arms (synthetic, exact
//! costs) with everything the machine or the clock decides set to fixed
//! values, so the snapshots are the same on every machine.

use loopbench::report::{Exporter, Exports, Target, FORMATS};
use loopbench::results::{self, Document, Session, StopSettings};
use loopbench::session::{self, Isolation, Plan};
use loopbench::shapes::{self, Params};

/// A two-epoch session of exact mock costs, its machine- and time-dependent
/// fields fixed.
fn fixed_session() -> Session {
    fixed_session_of(&["add_chain", "load_stream"])
}

/// [`fixed_session`] on `names`.
fn fixed_session_of(names: &[&str]) -> Session {
    let plan = Plan {
        shapes: names.iter().map(|n| shapes::find(n).unwrap()).collect(),
        arms: ["mock:cost=10", "mock:cost=12.5", "mock:cost=8"]
            .iter()
            .map(|a| a.parse().unwrap())
            .collect(),
        params: Params {
            bytes: 64 << 10,
            iters: Some(256),
            k: 8,
        },
        rounds: 4,
        warmup: 1,
        isolation: Isolation::InProcess,
        rep_target: None,
        pin: None,
        stop: StopSettings {
            min_epochs: 2,
            max_epochs: 2,
            precision_pct: 0.5,
            budget_s: 100.0,
        },
        ..Default::default()
    };
    let mut s = session::run(plan, &mut ()).unwrap();
    s.machine.cpu = "Test CPU".into();
    s.machine.cores = 2;
    s.machine.os = "Linux test".into();
    s.machine.arch = "x86_64".into();
    s.machine.hostname = "host".into();
    s.machine.load_start = Some([0.5, 0.5, 0.5]);
    s.machine.load_end = Some([0.5, 0.5, 0.5]);
    s.machine.microcode = Some("0x1".into());
    s.machine.physical_cores = Some(2);
    s.machine.threads_per_core = Some(1);
    s.machine.governor = Some("performance".into());
    s.machine.boost = None;
    s.machine.kernel = Some("#1 SMP".into());
    s.machine.rustc = Some("rustc 1.95.0".into());
    s.machine.loopbench = Some("0.1.0".into());
    s.id = Some("test-session".into());
    s.command = [
        "/path/to/loopbench",
        "run",
        "--engines",
        "mock:cost=10,mock:cost=12.5,mock:cost=8",
        "--note",
        "it's",
    ]
    .map(String::from)
    .to_vec();
    s.session.build_profile = "test".into();
    // The arms name this binary, whose build id changes with every build.
    let id = loopbench::versions::binary_id();
    for e in &mut s.session.engines {
        e.version = e.version.replace(id, "<build id>");
    }
    for a in s.results.iter_mut().flat_map(|r| r.arms.iter_mut()) {
        a.version = a.version.replace(id, "<build id>");
    }
    s.wall_seconds = 1.0;
    for e in &mut s.epochs {
        e.seconds = 0.5;
    }
    for r in &mut s.results {
        if let Some(st) = &mut r.stopped {
            st.seconds = 0.25;
        }
        for a in &mut r.arms {
            for rep in &mut a.reps {
                rep.cpu_ns = Some(rep.ns);
                rep.involuntary_switches = Some(0);
            }
            a.preempted_reps = Some(0);
        }
    }
    s
}

fn render(format: &str, doc: &Document) -> String {
    let bytes = loopbench::report::format(format.split(' ').next().unwrap_or(format))
        .map(|_| ())
        .and_then(|_| match format {
            "table" => loopbench::report::table::Table::default().render(doc),
            "table --verbose" => loopbench::report::table::Table { verbose: true }.render(doc),
            "json" => loopbench::report::json::Json.render(doc),
            "csv" => loopbench::report::csv::Csv.render(doc),
            "markdown" => loopbench::report::markdown::Markdown.render(doc),
            "html" => loopbench::report::html::Html.render(doc),
            other => panic!("no snapshot for {other}"),
        })
        .unwrap();
    String::from_utf8(bytes).unwrap()
}

#[test]
fn csv_snapshot() {
    insta::assert_snapshot!(render("csv", &Document::Session(fixed_session())));
}

#[test]
fn markdown_snapshot() {
    insta::assert_snapshot!(render("markdown", &Document::Session(fixed_session())));
}

#[test]
fn html_snapshot() {
    insta::assert_snapshot!(render("html", &Document::Session(fixed_session())));
}

/// One CSV row per timed rep (plus the header), every row as wide as the
/// header, and the row's numbers those of the rep.
#[test]
fn csv_has_one_row_per_timed_rep() {
    let s = fixed_session();
    let text = render("csv", &Document::Session(s.clone()));
    let mut reader = csv::Reader::from_reader(text.as_bytes());
    let header = reader.headers().unwrap().clone();
    assert_eq!(&header[0], "session");
    assert!(header.iter().any(|h| h == "preempted"), "{header:?}");
    let rows: Vec<csv::StringRecord> = reader.records().map(|r| r.unwrap()).collect();
    let reps: usize = s
        .results
        .iter()
        .flat_map(|r| &r.arms)
        .map(|a| a.reps.len())
        .sum();
    // 2 shapes x 4 arms (null included) x 2 epochs x 4 rounds... as run.
    assert!(reps > 0);
    assert_eq!(rows.len(), reps);
    let first = &s.results[0].arms[0].reps[0];
    assert_eq!(&rows[0][0], "test-session");
    let col = |name: &str| header.iter().position(|h| h == name).unwrap();
    assert_eq!(rows[0][col("ns")].parse::<f64>().unwrap(), first.ns);
    assert_eq!(
        rows[0][col("iterations")].parse::<u64>().unwrap(),
        first.iters
    );
    // Built-in shapes are no user's workload: an empty identity.
    assert_eq!(&rows[0][col("workload")], "");
    for r in &rows {
        assert_eq!(r.len(), header.len());
    }
}

/// The Markdown report carries the command that reproduces it, quoted for
/// a shell, and the machine in one line.
#[test]
fn markdown_has_the_command_and_the_fingerprint() {
    let text = render("markdown", &Document::Session(fixed_session()));
    assert!(
        text.contains(
            "loopbench run --engines mock:cost=10,mock:cost=12.5,mock:cost=8 --note 'it'\\''s'"
        ),
        "{text}"
    );
    assert!(text
        .contains("Machine: Test CPU, microcode 0x1, 2 cores (2 x 1 SMT), governor performance"));
    assert!(text.contains("Null floor:"));
}

/// At a glance: a line per shape and arm, and the summary.
#[test]
fn table_snapshot() {
    let text = render("table", &Document::Session(fixed_session()));
    let widest = text.lines().map(|l| l.chars().count()).max();
    assert!(widest <= Some(100), "{widest:?} columns:\n{text}");
    insta::assert_snapshot!(text);
}

/// In full: what every line rests on.
#[test]
fn table_verbose_snapshot() {
    insta::assert_snapshot!(render(
        "table --verbose",
        &Document::Session(fixed_session())
    ));
}

#[test]
fn json_snapshot_and_round_trip() {
    let doc = Document::Session(fixed_session());
    let text = render("json", &doc);
    insta::assert_snapshot!(text);
    // What JSON writes reads back to the same value.
    let Document::Session(back) = results::parse(&text).unwrap() else {
        panic!("not a session");
    };
    // Written again, it is the same text, line for line.
    let again = render("json", &Document::Session(back));
    let first_difference = text.lines().zip(again.lines()).position(|(a, b)| a != b);
    assert_eq!(
        first_difference,
        None,
        "{:?}",
        first_difference.map(|i| (text.lines().nth(i), again.lines().nth(i)))
    );
    assert_eq!(text.lines().count(), again.lines().count());
}

/// Every format the command line offers writes a session to a file
/// through the manager, and only the table leaves stdout for people.
#[test]
fn every_format_writes_a_session_through_the_manager() {
    let doc = Document::Session(fixed_session());
    let dir = tempfile::tempdir().unwrap();
    for f in FORMATS {
        let path = dir.path().join(f.name);
        let exports = Exports::new(&[(f.name, Target::File(path.clone()))]).unwrap();
        exports.partial(&doc).unwrap();
        assert!(std::fs::metadata(&path).unwrap().len() > 0, "{}", f.name);
        let on_stdout = Exports::new(&[(f.name, Target::Stdout)]).unwrap();
        assert_eq!(on_stdout.stdout_is_data(), f.name != "table");
    }
}

/// Checking the outputs before a session never touches an existing file:
/// the previous results survive a session that fails before its first
/// result. The file is replaced, atomically, once there is something.
#[test]
fn an_existing_file_is_untouched_until_there_is_a_result() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old.json");
    std::fs::write(&path, "previous results\n").unwrap();
    let mut exports = Exports::new(&[("json", Target::File(path.clone()))]).unwrap();
    exports.check().unwrap();
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        "previous results\n"
    );
    let doc = Document::Session(fixed_session());
    exports.partial(&doc).unwrap();
    let now = std::fs::read_to_string(&path).unwrap();
    assert!(now.contains("\"schema\": \"loopbench/2\""), "{now}");
    // The lock goes with the manager.
    drop(exports);
    // Nothing else was left in the directory (no temporary files): the
    // output and its reps beside it.
    let mut names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    names.sort();
    assert_eq!(names, ["old.json", "old.reps.json.gz"]);
}

#[test]
fn the_manager_refuses_two_formats_on_stdout_and_one_file_twice() {
    let e = Exports::new(&[("json", Target::Stdout), ("table", Target::Stdout)])
        .err()
        .unwrap();
    assert!(
        e.to_string().contains("only one format can go to stdout"),
        "{e}"
    );
    let f = Target::File("x.out".into());
    let e = Exports::new(&[("json", f.clone()), ("table", f)])
        .err()
        .unwrap();
    assert!(e.to_string().contains("named for two formats"), "{e}");
    let e = Exports::new(&[("yaml", Target::Stdout)]).err().unwrap();
    assert!(
        e.to_string()
            .contains("unknown format `yaml` (valid: table, json, csv, markdown, html)"),
        "{e}"
    );
}

/// `b` against `a` with no history to learn a between-session spread
/// from, or with `between` as that spread.
fn compare_with(
    a: &Session,
    b: &Session,
    between: Option<loopbench::stats::sessions::Between>,
) -> results::compare::SessionComparison {
    let lookup = move |_: &results::compare::SeriesQuery| between.clone();
    let opts = results::compare::Options {
        precision_pct: 0.5,
        reference: None,
        between: &lookup,
        calibration: &|_: &results::compare::SeriesQuery, _, _| None,
    };
    results::compare::compare(a, "a.json", b, "b.json", &opts).unwrap()
}

/// A session compared with itself: no change anywhere, no warning that two
/// sessions are weaker (it is one), and no fingerprint warning.
#[test]
fn a_session_compared_with_itself_shows_no_change() {
    let s = fixed_session();
    assert!(s.id.is_some());
    let c = compare_with(&s, &s, None);
    // Every arm but the null control, on both shapes.
    assert_eq!(c.rows.len(), 2 * 3);
    assert!(c.no_change());
    for r in &c.rows {
        assert_eq!(r.median_pct, 0.0, "{r:?}");
        assert_eq!(r.units, "epochs");
        assert_eq!((r.a_units, r.b_units), (2, 2));
        assert_eq!(r.basis, Some(results::compare::Basis::SameSession));
    }
    assert!(c.mismatches.is_empty(), "{:?}", c.mismatches);
    assert!(c.warnings.is_empty(), "{:?}", c.warnings);
    let text = render("table", &Document::Compare(c));
    assert!(
        text.contains("no change: every row unchanged inside ±0.5%"),
        "{text}"
    );
}

/// Two sessions of one build with nothing to span them: every row unsure,
/// each citing its reason by number, and the comparison says it has no
/// answer yet and what to run for one, never "no change"; in every format.
#[test]
fn a_comparison_with_every_row_unsure_says_how_to_get_an_answer() {
    let a = fixed_session();
    let mut b = a.clone();
    b.id = Some("another session".into());
    let mut c = compare_with(&a, &b, None);
    assert!(c
        .rows
        .iter()
        .all(|r| r.outcome == Some(loopbench::stats::outcome::Outcome::Unsure)));
    c.to_answer = results::answer::ways(&c, a.command_line().as_deref());
    let arm = &c.a.engines[0].arm;
    assert_eq!(
        c.to_answer[0],
        format!("anchor on {arm} (one build, measured in both): loopbench compare a.json b.json --reference {arm}")
    );
    let text = render("table", &Document::Compare(c.clone()));
    assert!(!text.contains("no change"), "{text}");
    assert!(
        text.contains("no answer yet: every row is unsure; to get one:\n  anchor on "),
        "{text}"
    );
    let cited = text
        .lines()
        .filter(|l| l.ends_with("unsure: nothing spans the two sessions [1]"));
    assert_eq!(cited.count(), c.rows.len(), "{text}");
    assert_eq!(
        text.matches("[1] no shared reference arm").count(),
        1,
        "{text}"
    );
    for format in ["markdown", "html"] {
        let doc = render(format, &Document::Compare(c.clone()));
        assert!(doc.contains("no answer yet"), "{format}: {doc}");
        assert!(
            doc.contains("[1] no shared reference arm"),
            "{format}: {doc}"
        );
        assert!(!doc.contains("no change"), "{format}: {doc}");
    }
}

/// B 20% slower on every rep of one arm: with a between-session spread of
/// 1% that row says slower, by 20%; with no spread to learn from and no
/// shared reference it is unsure, and says why.
#[test]
fn compare_finds_a_uniform_slowdown() {
    let a = fixed_session();
    let mut b = a.clone();
    b.id = Some("another session".into());
    let arm = &mut b.results[0].arms[1];
    for x in &mut arm.samples_ns_per_iter {
        *x *= 1.2;
    }
    let name = arm.arm.clone();
    let spread = loopbench::stats::sessions::Between {
        sd_pct: 1.0,
        sessions: 10,
        excess: false,
        total_sd_pct: None,
    };
    let c = compare_with(&a, &b, Some(spread));
    let row = c
        .rows
        .iter()
        .find(|r| r.shape == "add_chain" && r.arm == name)
        .unwrap();
    assert!((row.median_pct - 20.0).abs() < 1e-9, "{row:?}");
    assert_eq!(row.verdict, loopbench::stats::Verdict::Slower);
    assert_eq!(
        row.outcome,
        Some(loopbench::stats::outcome::Outcome::Changed)
    );
    assert!(!c.no_change());
    assert_eq!(c.warnings, [results::compare::WEAKER]);
    let c = compare_with(&a, &b, None);
    let row = c.rows.iter().find(|r| r.arm == name).unwrap();
    assert_eq!(
        row.outcome,
        Some(loopbench::stats::outcome::Outcome::Unsure)
    );
    assert!(
        row.reason.as_deref().unwrap().contains("--reference ARM"),
        "{row:?}"
    );
}

/// Different machines: the mismatch is named field by field, and the
/// comparison says so loudly in every format.
#[test]
fn a_fingerprint_mismatch_is_reported() {
    let a = fixed_session();
    let mut b = a.clone();
    b.machine.cpu = "Other CPU".into();
    b.machine.microcode = Some("0x2".into());
    b.machine.hostname = "elsewhere".into(); // not a mismatch
    b.machine.governor = None; // unknown on one side: not a mismatch
    let diffs = a.machine.differences(&b.machine);
    let fields: Vec<&str> = diffs.iter().map(|d| d.field).collect();
    assert_eq!(fields, ["cpu", "microcode"]);
    assert_eq!(diffs[0].to_string(), "cpu: Test CPU vs Other CPU");
    let c = compare_with(&a, &b, None);
    assert_eq!(
        c.mismatches,
        ["cpu: Test CPU vs Other CPU", "microcode: 0x1 vs 0x2"]
    );
    let doc = Document::Compare(c);
    for format in ["table", "markdown", "html"] {
        let text = render(format, &doc);
        assert!(
            text.contains("MACHINE FINGERPRINTS DIFFER"),
            "{format}: {text}"
        );
    }
    // A comparison reads back from its JSON.
    let json = render("json", &doc);
    assert!(matches!(
        results::parse(&json).unwrap(),
        Document::Compare(_)
    ));
}

/// The HTML report opens on the answer: in a 1400 x 900 window the summary
/// and the shape x arm matrix of a 42-shape session (the default session's
/// size) end on the first screen, each shape's name links to its section,
/// and nothing is wider than the window. Measured by the browser itself: a
/// probe script added to the page writes where each ends.
#[test]
fn the_html_report_opens_on_the_summary_and_the_matrix() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = fixed_session();
    let template = s.results.clone();
    s.results = (0..42)
        .map(|i| {
            let mut r = template[i % template.len()].clone();
            r.shape = format!("shape_{i:02}");
            r
        })
        .collect();
    let html = render("html", &Document::Session(s));
    for i in 0..42 {
        let link = format!("<a href=\"#shape-shape_{i:02}\">");
        let section = format!("<h3 id=\"shape-shape_{i:02}\">");
        assert!(html.contains(&link) && html.contains(&section), "shape {i}");
    }
    let probe = "<script>const end=id=>Math.round(document.getElementById(id).getBoundingClientRect().bottom);\
document.body.insertAdjacentHTML('beforeend','<pre id=\"probe\">'+[end('summary'),end('matrix'),\
innerHeight,document.documentElement.scrollWidth,innerWidth].join(' ')+'</pre>');</script>";
    let page = dir.path().join("report.html");
    std::fs::write(&page, html.replace("</body>", &format!("{probe}</body>"))).unwrap();
    let dom = chromium(dir.path(), &page, &["--window-size=1400,900", "--dump-dom"]);
    let text = String::from_utf8_lossy(&dom.stdout);
    // The last one: the script that wrote it is in the DOM too.
    let measured = text
        .rsplit("<pre id=\"probe\">")
        .next()
        .and_then(|t| t.split("</pre>").next())
        .filter(|t| !t.contains('+'))
        .unwrap_or_else(|| panic!("the probe wrote nothing: {text}"));
    let n: Vec<i64> = measured.split(' ').map(|v| v.parse().unwrap()).collect();
    let [summary, matrix, height, scroll_width, width] = n[..] else {
        panic!("{measured}");
    };
    // The viewport is the window less what headless chromium keeps of it
    // (757 to 813 px of 900 here).
    assert!(height >= 700 && width >= 1300, "the window: {measured}");
    assert!(
        0 < summary && summary < matrix && matrix <= height,
        "summary ends at {summary}, matrix at {matrix}, the screen at {height}"
    );
    assert!(scroll_width <= width, "{scroll_width} px wide in {width}");
    assert!(
        console_errors(&dom).is_empty(),
        "{:?}",
        console_errors(&dom)
    );
}

/// The HTML report in a real browser: Debian's chromium, headless, with
/// no network. It must produce a screenshot, count every chart as parsed
/// SVG (the page's own script writes the count), and log no console error.
/// A page with a broken script proves the console check can fail.
#[test]
fn html_report_renders_in_headless_chromium() {
    let dir = tempfile::tempdir().unwrap();
    let s = fixed_session();
    // One strip plot per shape and the forest plot.
    let expected = s.results.len() + 1;
    let page = dir.path().join("report.html");
    std::fs::write(&page, render("html", &Document::Session(s))).unwrap();

    renders_in_chromium(&page, expected);

    // The console check is real: a page with a script error, or one that
    // logs an error, fails it.
    let broken = dir.path().join("broken.html");
    std::fs::write(
        &broken,
        "<!DOCTYPE html><html><body><script>noSuchFunction();</script></body></html>",
    )
    .unwrap();
    let bad = chromium(dir.path(), &broken, &["--dump-dom"]);
    assert!(
        !console_errors(&bad).is_empty(),
        "a script error went unnoticed"
    );
    std::fs::write(
        &broken,
        "<!DOCTYPE html><html><body><script>console.error('boom');</script></body></html>",
    )
    .unwrap();
    let bad = chromium(dir.path(), &broken, &["--dump-dom"]);
    assert!(
        console_errors(&bad).iter().any(|l| l.contains("boom")),
        "console.error went unnoticed"
    );
}

/// Check `page` in headless chromium: it makes a screenshot, its own script
/// counts `charts` charts parsed as SVG, and it logs nothing to the console.
/// Every HTML page loopbench writes (report, trend, leaderboard) goes
/// through this.
pub(crate) fn renders_in_chromium(page: &std::path::Path, charts: usize) {
    let dir = tempfile::tempdir().unwrap();
    let shot = dir.path().join("shot.png");
    let run = chromium(
        dir.path(),
        page,
        &[
            &format!("--screenshot={}", shot.display()),
            "--window-size=900,2400",
        ],
    );
    assert!(
        console_errors(&run).is_empty(),
        "{:?}",
        console_errors(&run)
    );
    let png = std::fs::read(&shot).expect("chromium wrote no screenshot");
    assert!(
        png.starts_with(b"\x89PNG\r\n\x1a\n") && png.len() > 10_000,
        "{} bytes",
        png.len()
    );

    let dom = chromium(dir.path(), page, &["--dump-dom"]);
    let dom_text = String::from_utf8_lossy(&dom.stdout);
    assert_eq!(
        dom_text.matches("<svg class=\"chart\"").count(),
        charts,
        "charts in the DOM of {}",
        page.display()
    );
    assert!(
        dom_text.contains(&format!("<span id=\"chart-count\">{charts}</span>")),
        "the page's script did not count {charts} charts"
    );
    assert!(
        console_errors(&dom).is_empty(),
        "{:?}",
        console_errors(&dom)
    );
}

/// Run headless chromium on `page` with a fresh profile, no network and
/// console messages on stderr.
fn chromium(dir: &std::path::Path, page: &std::path::Path, extra: &[&str]) -> std::process::Output {
    let profile = tempfile::tempdir_in(dir).unwrap();
    let out = std::process::Command::new("chromium")
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(extra)
        .arg(format!("file://{}", page.display()))
        .output()
        .unwrap_or_else(|e| {
            panic!("cannot run chromium ({e}): run scripts/install-deps.sh (as root) to install Debian's chromium")
        });
    assert!(
        out.status.success(),
        "chromium failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Every console message the page produced. Chromium's stderr log does not
/// keep the console level (console.error and uncaught exceptions both read
/// `INFO:CONSOLE`), and the report logs nothing, so any message fails.
fn console_errors(out: &std::process::Output) -> Vec<String> {
    String::from_utf8_lossy(&out.stderr)
        .lines()
        .filter(|l| l.contains(":CONSOLE"))
        .map(String::from)
        .collect()
}

/// Counter columns hold each rep's count (per iteration x iterations), and
/// an empty cell where the counter gave no value, never 0.
#[test]
fn csv_counter_columns_are_per_rep_counts() {
    use loopbench::results::{CounterSummary, MedianMin};
    let mut s = fixed_session();
    let arm = &mut s.results[0].arms[0];
    let n = arm.reps.len();
    let mut samples = vec![Some(3.5); n];
    samples[1] = None;
    arm.counters.values.insert(
        "instructions".into(),
        CounterSummary {
            per_iter: MedianMin {
                median: 3.5,
                min: 3.5,
            },
            per_op: None,
            reps: n - 1,
            samples_per_iter: samples,
        },
    );
    let iters = arm.reps[0].iters as f64;
    let text = render("csv", &Document::Session(s));
    let mut reader = csv::Reader::from_reader(text.as_bytes());
    let col = reader
        .headers()
        .unwrap()
        .iter()
        .position(|h| h == "instructions")
        .unwrap();
    let rows: Vec<csv::StringRecord> = reader.records().map(|r| r.unwrap()).collect();
    assert_eq!(rows[0][col].parse::<f64>().unwrap(), 3.5 * iters);
    assert_eq!(&rows[1][col], "");
    // Arms without the counter: empty cells too.
    assert_eq!(&rows[n][col], "");
}

/// The summary sets arms beside each other over the same shapes: when one
/// arm skipped a shape (as wasm3 skips the SIMD shapes), every arm's mean
/// and tally leave it out, and one line says which and why.
#[test]
fn the_summary_compares_arms_over_the_shapes_they_share() {
    let mut s = fixed_session_of(&["add_chain", "load_stream", "br_chain"]);
    let full = render("table", &Document::Session(s.clone()));
    assert!(!full.contains("left out"), "{full}");
    assert!(
        full.contains("3 slower, 0 faster, 0 unchanged, 0 unsure of 3"),
        "{full}"
    );
    // mock:cost=8 did not run load_stream.
    let r = s
        .results
        .iter_mut()
        .find(|r| r.shape == "load_stream")
        .unwrap();
    r.comparisons.retain(|c| c.arm != "mock:cost=8");
    for a in r.arms.iter_mut().filter(|a| a.arm == "mock:cost=8") {
        a.skipped = Some("skipped: test".into());
        a.ns_per_iter = None;
    }
    let text = render("table", &Document::Session(s));
    let summary: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.starts_with("summary vs"))
        .collect();
    let line = |arm: &str| {
        summary
            .iter()
            .find(|l| l.trim_start().starts_with(&format!("{arm} ")))
            .unwrap_or_else(|| panic!("no summary line for {arm}:\n{text}"))
            .to_string()
    };
    assert!(
        line("mock:cost=12.5").ends_with("2 slower, 0 faster, 0 unchanged, 0 unsure of 2"),
        "{text}"
    );
    assert!(line("mock:cost=8").ends_with("of 2"), "{text}");
    assert!(line("mock:cost=10#null").ends_with("over 2"), "{text}");
    let words = summary.join(" ");
    let words: Vec<&str> = words.split_whitespace().collect();
    assert!(
        words.join(" ").contains(
            "every arm over the same 2 shapes (those every arm ran); left out, as some arm skipped or failed them: load_stream"
        ),
        "{text}"
    );
}
