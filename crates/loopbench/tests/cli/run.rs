use crate::util::{loopbench, SMALL};
use predicates::prelude::*;

#[test]
fn list_shows_shapes_and_engines() {
    let (mut cmd, _dir) = loopbench();
    cmd.arg("list")
        .assert()
        .success()
        .stdout(predicate::str::contains("add_chain"))
        .stdout(predicate::str::contains("br_table_switch"))
        .stdout(predicate::str::contains("random_ops"))
        .stdout(predicate::str::contains("wasmi 2."))
        .stdout(predicate::str::contains("wasmi:fuel"));
}

#[test]
fn show_prints_wat_and_counts() {
    let (mut cmd, _dir) = loopbench();
    cmd.args(["show", "store_stream"])
        .assert()
        .success()
        .stdout(predicate::str::contains("(module"))
        .stdout(predicate::str::contains("i32.store"))
        .stdout(predicate::str::contains("declared per 1 iteration(s): ops 37"));
}

#[test]
fn a_session_prints_the_table_with_null_floor() {
    let (mut cmd, _dir) = loopbench();
    let mut args = vec!["run", "--engines", "wasmi,wasmi:fuel", "--shapes", "add_chain,br_chain"];
    args.extend_from_slice(SMALL);
    cmd.args(&args)
        .assert()
        .success()
        .stdout(predicate::str::contains("wasmi#null"))
        .stdout(predicate::str::contains("null floor:"))
        .stdout(predicate::str::contains("wasmi:fuel"))
        .stdout(predicate::str::contains("A micro-benchmark % is not an app %"));
}

#[test]
fn user_shape_file_runs() {
    let (mut cmd, dir) = loopbench();
    std::fs::write(
        dir.path().join("sum.wat"),
        r#"(module
  (global $acc (mut i32) (i32.const 0))
  (func (export "setup") (param i32) i32.const 0 global.set $acc)
  (func (export "run") (param $n i32)
    (local $i i32)
    loop $l
      global.get $acc local.get $i i32.add global.set $acc
      local.get $i i32.const 1 i32.add local.tee $i local.get $n i32.lt_u br_if $l
    end)
  (func (export "verify") (result i32) global.get $acc i32.const 32640 i32.eq))"#,
    )
    .unwrap();
    let out = cmd
        .args(["run", "--engines", "wasmi,tinywasm", "--shape-file", "sum.wat", "--iters", "256", "--rounds", "2"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("sum"));
}
