use super::util::loopbench;

/// stderr of a failed command, asserted to be one `error:` line.
fn one_line_failure(cmd: &mut assert_cmd::Command) -> String {
    let out = cmd.assert().failure();
    let out = out.get_output();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.starts_with("error: "), "{stderr}");
    assert!(
        out.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    stderr
}

#[test]
fn a_scheme_typo_is_refused_and_never_becomes_a_path() {
    let dir = tempfile::tempdir().unwrap();
    let typo = "postgress://bench:secret@127.0.0.1:55432/loopbench";
    let commands: &[&[&str]] = &[
        &[
            "submit",
            "--machines",
            "lab",
            "--",
            "run",
            "--engines",
            "wasmi",
        ],
        &["history"],
        &["jobs"],
    ];
    for args in commands {
        // Through --db and through LOOPBENCH_DB alike.
        for via_env in [false, true] {
            let mut cmd = loopbench(if via_env { typo } else { "unused.sqlite" });
            cmd.current_dir(dir.path()).arg(args[0]);
            if !via_env {
                cmd.args(["--db", typo]);
            }
            cmd.args(&args[1..]);
            let stderr = one_line_failure(&mut cmd);
            assert!(stderr.contains("unknown scheme `postgress`"), "{stderr}");
            assert!(!stderr.contains("secret"), "{stderr}");
        }
    }
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert!(left.is_empty(), "{left:?}");
}
