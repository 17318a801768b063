//! Every exporter on a fixed results value, and the export manager's file
//! handling. The value comes from a session of mock arms (synthetic, exact
//! costs) with everything the machine or the clock decides set to fixed
//! values, so the snapshots are the same on every machine.

use loopbench::report::{Exporter, Exports, Target, FORMATS};
use loopbench::results::{self, Document, Session, StopSettings};
use loopbench::schedule::Progress;
use loopbench::session::{self, Isolation, Plan, Sink};
use loopbench::shapes::{self, Params};

struct Quiet;
impl Progress for Quiet {}
impl Sink for Quiet {}

/// A two-epoch session of exact mock costs, its machine- and time-dependent
/// fields fixed.
fn fixed_session() -> Session {
    let plan = Plan {
        shapes: vec![
            shapes::find("add_chain").unwrap(),
            shapes::find("load_stream").unwrap(),
        ],
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
    let mut s = session::run(plan, &mut Quiet).unwrap();
    s.machine.cpu = "Test CPU".into();
    s.machine.cores = 2;
    s.machine.os = "Linux test".into();
    s.machine.arch = "x86_64".into();
    s.machine.hostname = "host".into();
    s.machine.load_start = Some([0.5, 0.5, 0.5]);
    s.machine.load_end = Some([0.5, 0.5, 0.5]);
    s.session.build_profile = "test".into();
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
    let bytes = match format {
        "table" => loopbench::report::table::Table.render(doc).unwrap(),
        "json" => loopbench::report::json::Json.render(doc).unwrap(),
        other => panic!("no snapshot for {other}"),
    };
    String::from_utf8(bytes).unwrap()
}

#[test]
fn table_snapshot() {
    insta::assert_snapshot!(render("table", &Document::Session(fixed_session())));
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
    // Nothing else was left in the directory (no temporary files).
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
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
            .contains("unknown format `yaml` (valid: table, json)"),
        "{e}"
    );
}
