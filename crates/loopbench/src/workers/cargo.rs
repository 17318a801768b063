//! Running cargo for worker builds: `cargo metadata` and `cargo build` with
//! the environment's RUSTFLAGS scrubbed (a build's own `+rustflags:` is the
//! only one that counts), build progress on stderr, and the tail of cargo's
//! output kept for a failed build's report.

use super::error::WorkerError;
use super::supervise::{drain_lines, indent, tail};
use crate::arm::build::BuildSpec;
use cargo_metadata::{Message, Metadata, MetadataCommand};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::{BufReader, IsTerminal};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Run `cargo metadata` as described by `cmd`, with the environment of
/// [`cargo`] (and `CARGO_TARGET_DIR` = `target` if given). The error is
/// cargo's stderr.
pub(super) fn metadata(cmd: MetadataCommand, target: Option<&Path>) -> Result<Metadata, String> {
    let mut c = cmd.cargo_command();
    for var in SCRUBBED_ENV {
        c.env_remove(var);
    }
    if let Some(t) = target {
        c.env("CARGO_TARGET_DIR", t);
    }
    let out = c
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run cargo: {e}"))?;
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let json = text
        .lines()
        .find(|l| l.starts_with('{'))
        .unwrap_or_default();
    MetadataCommand::parse(json).map_err(|e| format!("cargo metadata output: {e}"))
}

/// RUSTFLAGS from the environment never reach a worker build (a build's
/// own `+rustflags:` does).
const SCRUBBED_ENV: [&str; 3] = [
    "CARGO_ENCODED_RUSTFLAGS",
    "RUSTFLAGS",
    "CARGO_BUILD_RUSTFLAGS",
];

/// Cargo, dying with this process, with RUSTFLAGS scrubbed.
pub(super) fn cargo() -> Command {
    let mut c = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    crate::children::die_with_parent(&mut c);
    for var in SCRUBBED_ENV {
        c.env_remove(var);
    }
    c
}

/// Lines of cargo's stderr kept for a failed build's report.
const CARGO_OUTPUT_KEPT: usize = 400;

/// What the build reports while it runs, from cargo's JSON messages.
enum Progress {
    /// A crate was compiled (not found fresh).
    Compiled(String),
    Fresh,
}

/// Run `cargo build` with a progress line on stderr (an indicatif spinner
/// on a terminal, one line otherwise); true when it compiled something.
/// Cargo's build messages come as JSON on stdout (read with
/// `cargo_metadata`), its rendered diagnostics on stderr; on failure, the
/// error carries the tail of the latter.
pub(super) fn cargo_build(
    dir: &Path,
    target: &Path,
    build: &BuildSpec,
    label: &str,
    what: &str,
    started: Instant,
) -> Result<bool, WorkerError> {
    let mut cmd = cargo();
    cmd.args(["build", "--profile", &build.profile, "--manifest-path"])
        .arg(dir.join("Cargo.toml"))
        .env("CARGO_TARGET_DIR", target);
    if build.ignore_rust_version {
        cmd.arg("--ignore-rust-version");
    }
    if let Some(flags) = &build.rustflags {
        cmd.env("RUSTFLAGS", flags);
    }
    let hint = (!build.ignore_rust_version).then(|| {
        format!(
            "the crate declares a newer rustc; add +ignore-rust-version to {label} to try anyway"
        )
    });
    run(cmd, dir, label, what, started, None, hint.as_deref())
}

/// Run the cargo build `cmd` (a `build` or `rustc` command line without
/// output options) with progress; true when it compiled something.
/// A `relink` names the one crate that may compile and the rustc
/// arguments of its link: compiling any other crate is an error, and
/// cargo is stopped at the first one (a relink that would recompile a
/// library is not one). `newer_rustc` is the hint for a crate that wants a
/// newer compiler.
pub(super) fn run(
    mut cmd: Command,
    dir: &Path,
    label: &str,
    what: &str,
    started: Instant,
    relink: Option<(&str, &[String])>,
    newer_rustc: Option<&str>,
) -> Result<bool, WorkerError> {
    cmd.args([
        "--color",
        "never",
        "--message-format",
        "json-render-diagnostics",
    ]);
    let only = relink.map(|(krate, _)| krate);
    if let Some((_, rustc_args)) = relink {
        cmd.arg("--").args(rustc_args);
    }
    cmd.env("CARGO_TERM_PROGRESS_WHEN", "never")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // Its own process group, so that a stop ends cargo and its rustc jobs
    // together (killing cargo alone leaves them compiling).
    #[cfg(target_os = "linux")]
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    let mut child = cmd.spawn().map_err(|e| WorkerError::Cargo(Arc::new(e)))?;
    let stdout = child
        .stdout
        .take()
        .ok_or_else(|| WorkerError::Build("cargo has no stdout".into()))?;
    let stderr = child
        .stderr
        .take()
        .ok_or_else(|| WorkerError::Build("cargo has no stderr".into()))?;
    let (lines, stderr_reader) = drain_lines(stderr, CARGO_OUTPUT_KEPT);
    let (tx, events) = mpsc::channel();
    std::thread::spawn(move || {
        for message in Message::parse_stream(BufReader::new(stdout)).map_while(Result::ok) {
            let event = match message {
                Message::CompilerArtifact(a) if !a.fresh => Progress::Compiled(a.target.name),
                Message::CompilerArtifact(_) => Progress::Fresh,
                _ => continue,
            };
            if tx.send(event).is_err() {
                break;
            }
        }
    });
    let tty = std::io::stderr().is_terminal();
    // A relink is a link of a second or less, said once by its caller for
    // all variants; a build says when it starts and ends.
    let say = only.is_none();
    let mut bar: Option<ProgressBar> = None;
    let mut compiled = false;
    loop {
        let event = events.recv_timeout(Duration::from_millis(200));
        let stop = match &event {
            _ if crate::children::stop_requested() => Some(format!(
                "building the worker was stopped by a signal (project {})",
                dir.display()
            )),
            Ok(Progress::Compiled(name)) if only.is_some_and(|o| o != name) => Some(not_only(name)),
            // cargo says `Compiling NAME` when it starts: stop there rather
            // than after that crate is compiled.
            _ => only.and_then(|o| {
                let l = lines.lock().ok()?;
                l.iter().find_map(|l| compiling_other(l, o)).map(not_only)
            }),
        };
        if let Some(why) = stop {
            // Nobody will use the build: stop cargo rather than wait minutes.
            #[cfg(target_os = "linux")]
            // SAFETY: killpg only sends a signal; the group is cargo's own.
            unsafe {
                libc::killpg(child.id() as libc::pid_t, libc::SIGKILL);
            }
            let _ = child.kill();
            let _ = child.wait();
            // cargo's rustc jobs die of the same signal a moment later:
            // wait (2 s at most) until its group is empty, so nothing of
            // the build runs once loopbench has ended.
            #[cfg(target_os = "linux")]
            for _ in 0..200 {
                // SAFETY: signal 0 only asks whether the group has members.
                if unsafe { libc::killpg(child.id() as libc::pid_t, 0) } != 0 {
                    break;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            let _ = stderr_reader.join();
            if let Some(bar) = bar {
                bar.finish_and_clear();
            }
            return Err(WorkerError::Build(why));
        }
        match event {
            Ok(Progress::Compiled(name)) => {
                if !compiled && !tty && say {
                    crate::diag!("building worker {label} ({what}) in {}", dir.display());
                }
                compiled = true;
                if tty && say {
                    bar.get_or_insert_with(|| progress_bar(label, what, started))
                        .set_message(name);
                }
            }
            Ok(Progress::Fresh) | Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => break,
        }
    }
    let status = child
        .wait()
        .map_err(|e| WorkerError::Build(e.to_string()))?;
    let _ = stderr_reader.join();
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    let lines: Vec<String> = lines
        .lock()
        .map_err(|_| WorkerError::Build("poisoned".into()))?
        .iter()
        .cloned()
        .collect();
    if !status.success() {
        let mut msg = format!(
            "building the worker failed (cargo {status}; project {}); last lines of cargo's output:\n{}",
            dir.display(),
            indent(&tail(&lines.join("\n"), 15))
        );
        if let Some(hint) =
            newer_rustc.filter(|_| lines.iter().any(|l| l.contains("requires rustc")))
        {
            msg.push_str(&format!("\n  hint: {hint}"));
        }
        return Err(WorkerError::Build(msg));
    }
    match (say, compiled) {
        (false, _) => {}
        (true, true) => crate::diag!(
            "built worker {label} ({what}) in {:.1} s",
            started.elapsed().as_secs_f64()
        ),
        (true, false) => crate::diag!(
            "worker {label} ({what}) is up to date (checked in {:.1} s)",
            started.elapsed().as_secs_f64()
        ),
    }
    Ok(compiled)
}

/// The crate a cargo status line says it starts compiling, when that is
/// not `only` (names compared with `-` and `_` alike).
fn compiling_other<'l>(line: &'l str, only: &str) -> Option<&'l str> {
    let name = line
        .trim_start()
        .strip_prefix("Compiling ")?
        .split(' ')
        .next()?;
    (name.replace('-', "_") != only.replace('-', "_")).then_some(name)
}

/// Why a relink that would compile `name` is stopped.
fn not_only(name: &str) -> String {
    format!("cargo would compile {name} again (it is stale: the source changed or this binary was built with other features), not only relink")
}

/// The spinner of a worker build on a terminal: arm, elapsed time, the
/// crate cargo last compiled.
fn progress_bar(label: &str, what: &str, started: Instant) -> ProgressBar {
    let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
    bar.set_style(
        ProgressStyle::with_template(
            "{spinner} building worker {prefix}: {elapsed:>4}  {wide_msg}",
        )
        .unwrap_or_else(|_| ProgressStyle::default_spinner()),
    );
    bar.set_prefix(format!("{label} ({what})"));
    bar.set_elapsed(started.elapsed());
    bar.enable_steady_tick(Duration::from_millis(200));
    bar
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_relink_stops_at_the_first_other_crate() {
        let only = "loopbench-relink";
        assert_eq!(
            compiling_other("   Compiling loopbench v0.1.0 (/w/crates/loopbench)", only),
            Some("loopbench")
        );
        assert_eq!(
            compiling_other("   Compiling loopbench-relink v0.1.0 (/w)", only),
            None
        );
        assert_eq!(
            compiling_other("   Compiling loopbench_relink v0.1.0", only),
            None
        );
        assert_eq!(
            compiling_other("    Finished `release` profile", only),
            None
        );
        assert!(not_only("smallvec").contains("compile smallvec again"));
    }
}
