use assert_cmd::Command;

/// The binary, run in a fresh temporary directory.
pub fn loopbench() -> (Command, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = Command::cargo_bin("loopbench").unwrap();
    cmd.current_dir(dir.path());
    // Sessions are recorded beside the test, not in the user's history.
    cmd.env("LOOPBENCH_DB", dir.path().join("history.sqlite"));
    (cmd, dir)
}

/// Small, fast session arguments.
pub const SMALL: &[&str] = &[
    "--bytes", "64k", "--rounds", "2", "--warmup", "1", "--iters", "256",
];

/// Assert an error is one line, without panic or backtrace text.
pub fn assert_one_line_error(stderr: &[u8]) -> String {
    let s = String::from_utf8_lossy(stderr).to_string();
    assert!(!s.contains("panicked"), "panic text: {s}");
    assert!(!s.contains("RUST_BACKTRACE"), "backtrace hint: {s}");
    let errors: Vec<&str> = s.lines().filter(|l| l.starts_with("error: ")).collect();
    assert!(!errors.is_empty(), "no `error: ` line in: {s}");
    errors.join("\n")
}

/// `run`'s arguments for a session that runs until it is stopped (many
/// epochs, a large budget): for tests that interrupt or race it.
pub const LONG: &[&str] = &[
    "--engines",
    "wasmi",
    "--shapes",
    "add_chain,br_chain",
    "--bytes",
    "64k",
    "--rounds",
    "2",
    "--iters",
    "256",
    "--min-epochs",
    "200",
    "--max-epochs",
    "200",
    "--budget",
    "1000",
];

/// In `dir`, an app artifact in zlib's place whose `run` loops for ever
/// (point `LOOPBENCH_APPS_OUT` at `dir`): an app that never returns.
pub fn a_recipe_that_never_returns(dir: &std::path::Path) {
    let forever = r#"(module (memory (export "memory") 1)
        (func (export "run") (param i32) (result i32) (loop $l (br $l)) (i32.const 0)))"#;
    std::fs::write(dir.join("zlib.wasm"), wat::parse_str(forever).unwrap()).unwrap();
}
