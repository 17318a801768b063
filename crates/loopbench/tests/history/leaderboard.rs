use super::pg::PgServer;
use super::util::{fixture, loopbench};
use serde_json::{json, Value};

/// The schema 1 session with a second engine, `wasm3`, 3% slower than
/// wasmi on add_chain; wasmi ran in 8 code layouts with an SD of 5.7%
/// between them, wasm3 with 1.2%: so the 3% moves less than wasmi's own
/// spread. On every other shape, no spread at all.
fn session_with_spreads() -> Value {
    let text = std::fs::read_to_string(fixture("schema1/session.json")).unwrap();
    let mut doc: Value = serde_json::from_str(&text).unwrap();
    doc["session"]["engines"]
        .as_array_mut()
        .unwrap()
        .push(json!({"arm": "wasm3", "version": "wasm3 0.3.1"}));
    for r in doc["results"].as_array_mut().unwrap() {
        let mut wasm3 = r["arms"][0].clone();
        wasm3["arm"] = json!("wasm3");
        wasm3["role"] = json!("candidate");
        wasm3["ns_per_iter"]["median"] =
            json!(wasm3["ns_per_iter"]["median"].as_f64().unwrap() * 1.03);
        let mut change = r["comparisons"][0].clone();
        change["arm"] = json!("wasm3");
        change["median_pct"] = json!(3.0);
        change["ci_pct"] = json!([2.5, 3.5]);
        change["verdict"] = json!("slower");
        if r["shape"] == "add_chain" {
            r["arms"][0]["layout_spread"] =
                json!({"variants": 8, "sd_pct": 5.7, "ci_pct": [3.8, 11.6]});
            wasm3["layout_spread"] = json!({"variants": 8, "sd_pct": 1.2, "ci_pct": [0.0, 4.4]});
        }
        r["arms"].as_array_mut().unwrap().push(wasm3);
        r["comparisons"].as_array_mut().unwrap().push(change);
    }
    doc
}

fn leaderboard_tests(url: &str) {
    let dir = tempfile::tempdir().unwrap();
    let saved = dir.path().join("s.json");
    std::fs::write(&saved, serde_json::to_vec(&session_with_spreads()).unwrap()).unwrap();
    loopbench(url)
        .args(["history", "import"])
        .arg(&saved)
        .assert()
        .success();
    let (md, html) = (dir.path().join("board.md"), dir.path().join("board.html"));
    loopbench(url)
        .args(["leaderboard", "--markdown"])
        .arg(&md)
        .arg("--html")
        .arg(&html)
        .assert()
        .success();
    let md = std::fs::read_to_string(md).unwrap();
    let row = |shape: &str, arm: &str| {
        md.lines()
            .find(|l| l.contains(&format!("| {shape} | {arm} |")))
            .unwrap_or_else(|| panic!("no row {shape}/{arm}: {md}"))
            .to_string()
    };
    assert!(
        md.contains("| spread across code layouts (95% interval) |"),
        "{md}"
    );
    // Each arm's own spread, with its interval and how many layouts ran.
    assert!(
        row("add_chain", "wasmi").contains("| ±5.7% [3.8, 11.6] over 8 |"),
        "{md}"
    );
    let wasm3 = row("add_chain", "wasm3");
    assert!(wasm3.contains("| ±1.2% [0.0, 4.4] over 8 |"), "{wasm3}");
    // 3% slower, but wasmi alone moves 5.7% with the layout: marked.
    assert!(
        wasm3.contains("| slower, inside layout spread |"),
        "{wasm3}"
    );
    // The nulls are controls, not contenders.
    assert!(!md.contains("#null"), "{md}");
    // Without a spread: a plain verdict and an empty cell.
    let plain = row("load_stream", "wasm3");
    assert!(plain.contains("| slower |  |"), "{plain}");
    let html = std::fs::read_to_string(html).unwrap();
    assert!(html.contains("±1 SD across code layouts"), "{html}");
    assert!(
        html.contains("<td>slower, inside layout spread</td><td>±1.2% [0.0, 4.4] over 8</td>"),
        "{html}"
    );
}

#[test]
fn the_leaderboard_carries_each_arm_s_layout_spread_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.sqlite");
    leaderboard_tests(db.to_str().unwrap());
}

#[test]
fn the_leaderboard_carries_each_arm_s_layout_spread_on_postgres() {
    let server = PgServer::start();
    leaderboard_tests(&server.url);
}
