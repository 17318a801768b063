//! Issue 26.13: a name from a file or a database is text, never markup or
//! terminal control, in every output: Markdown, the terminal table,
//! `report` and `history`.

use super::util::loopbench;

/// HTML, a terminal escape sequence (red) and a line break, in one name.
const HOSTILE: &str = "x<img src=x onerror=alert(1)>\u{1b}[31m\nrow";

const LOOP_WAT: &str = r#"(module
  (func (export "run") (param $n i32) (result i32) (local $i i32)
    (loop $l
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br_if $l (i32.lt_u (local.get $i) (local.get $n))))
    (local.get $i)))"#;

#[test]
fn hostile_shape_names_are_escaped_everywhere() {
    let (mut cmd, dir) = loopbench();
    let file = format!("{HOSTILE}.wat");
    std::fs::write(dir.path().join(&file), LOOP_WAT).unwrap();
    let run = cmd
        .args(["run", "--engines", "wasmi", "--shape-file", &file])
        .args([
            "--iters",
            "256",
            "--rounds",
            "2",
            "--min-epochs",
            "1",
            "--max-epochs",
            "1",
        ])
        .args(["--markdown", "r.md", "--json", "s.json"])
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let md = std::fs::read_to_string(dir.path().join("r.md")).unwrap();
    // The command that reproduces the session is a code block: literal.
    let (prose, command) = md.split_once("Reproduce:").expect("a command");
    assert!(!prose.contains("<img"), "raw HTML in Markdown:\n{md}");
    assert!(command.trim_start().starts_with("```sh\n"), "{command}");
    // Pasted into a shell, it names the very file (issue 53.16: the name's
    // escape sequence, shown as `\u{1b}` inside single quotes, named
    // another).
    let line = command
        .lines()
        .find(|l| l.starts_with("loopbench "))
        .expect("the command's line");
    let words = std::process::Command::new("bash")
        .arg("-c")
        .arg(line.replacen("loopbench", "printf '%s\\0'", 1))
        .output()
        .unwrap();
    assert!(words.status.success(), "{line}");
    let words: Vec<&[u8]> = words.stdout.split(|b| *b == 0).collect();
    assert!(words.contains(&file.as_bytes()), "{line}");
    assert!(!md.contains('\u{1b}'), "escape sequence in Markdown:\n{md}");
    let heading = md
        .lines()
        .find(|l| l.starts_with("#### "))
        .expect("a shape heading");
    // The whole name on the heading's line: the line break did not end it.
    assert!(
        heading.contains("x&lt;img") && heading.contains("row"),
        "{md}"
    );

    let (mut report, _d) = loopbench();
    let report = report
        .arg("report")
        .arg(dir.path().join("s.json"))
        .output()
        .unwrap();
    let (mut history, _h) = loopbench();
    let history = history
        .env("LOOPBENCH_DB", dir.path().join("history.sqlite"))
        .arg("history")
        .output()
        .unwrap();
    let (mut compare, _c) = loopbench();
    let saved = dir.path().join("s.json");
    let compare = compare
        .arg("compare")
        .args([&saved, &saved])
        .output()
        .unwrap();
    for (what, out) in [
        ("run", &run),
        ("report", &report),
        ("history", &history),
        ("compare", &compare),
    ] {
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{what}: {text}");
        assert!(!text.contains('\u{1b}'), "{what} printed an escape: {text}");
        // The name stays on one line, its controls shown as escapes.
        let line = text
            .lines()
            .find(|l| l.contains("x<img"))
            .unwrap_or_else(|| panic!("{what} lacks the shape: {text}"));
        assert!(line.contains(r"\u{1b}[31m\nrow"), "{what}: {line}");
    }
}
