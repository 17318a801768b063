//! Exact instruction counts under valgrind's callgrind (`--counters callgrind`).
//!
//! Retired-instruction counters need a PMU, which VMs and CI runners rarely
//! expose. Callgrind counts every guest instruction it executes, so the same
//! build on the same input gives the same count on any machine: an A/B of two
//! engine builds is measurable to the instruction on a noisy VM.
//!
//! How it runs:
//!
//! 1. The process the user started (the *parent*) re-executes itself with the
//!    same arguments under `valgrind --tool=callgrind --collect-atstart=no`,
//!    with the environment marker [`CHILD_ENV`] naming a temporary directory
//!    for callgrind's output, and passes its exit code through.
//! 2. In the *child*, collection is off at start; the [`CallgrindCounter`]
//!    switches it on right before the timed call and off right after
//!    (`CALLGRIND_TOGGLE_COLLECT`), so compilation, instantiation, setup,
//!    verify and the harness are not counted. After each call it asks for a
//!    dump named after shape, arm and rep (`CALLGRIND_DUMP_STATS_AT`, which
//!    also zeroes the counts), reads that dump's `summary:` line for the `Ir`
//!    event, checks the dump's trigger is the name it asked for, and deletes
//!    the file. The count then flows through the same reading, summary,
//!    comparison and report path as every other counter.
//! 3. What the harness itself executes inside the window (the meter's loop,
//!    two monotonic-clock reads, returning from the client request) is
//!    measured once with empty start/stop pairs and subtracted.
//!
//! The client requests are valgrind's "magic sequence": a run of rotations
//! that leaves a register unchanged, followed by a no-op exchange. Natively
//! it does nothing and returns the default; under valgrind the JIT
//! recognises it and performs the request described by the argument block.
//! Written here with inline assembly for x86_64 and aarch64 (no C build).

use super::{Counter, DumpError, MeasureError, Meter};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Environment marker of the child process: the directory callgrind writes to.
pub const CHILD_ENV: &str = "LOOPBENCH_CALLGRIND_DIR";
/// Name of the reading: instructions executed by the guest (callgrind `Ir`).
pub const NAME: &str = "callgrind_ir";
/// How to get valgrind when it is missing.
pub const INSTALL_HINT: &str =
    "install it (Debian/Ubuntu: apt-get install valgrind; Fedora: dnf install valgrind)";

const TOOL_BASE: usize = ((b'C' as usize) << 24) | ((b'T' as usize) << 16);
const DUMP_STATS_AT: usize = TOOL_BASE + 3;
const TOGGLE_COLLECT: usize = TOOL_BASE + 2;
const RUNNING_ON_VALGRIND: usize = 0x1001;

/// Issue one client request; returns `default` when not under valgrind.
#[inline(always)]
fn client_request(default: usize, request: usize, arg1: usize) -> usize {
    let args: [usize; 6] = [request, arg1, 0, 0, 0, 0];
    imp::request(default, &args)
}

#[cfg(target_arch = "x86_64")]
mod imp {
    #[inline(always)]
    pub fn request(default: usize, args: &[usize; 6]) -> usize {
        let mut result = default;
        // SAFETY: the rotations of rdi sum to 128 bits and leave it unchanged;
        // `xchg rbx, rbx` changes nothing. Natively this is a no-op with
        // rdx = default. Valgrind reads the argument block through rax and
        // writes the result to rdx.
        unsafe {
            core::arch::asm!(
                "rol rdi, 3",
                "rol rdi, 13",
                "rol rdi, 61",
                "rol rdi, 51",
                "xchg rbx, rbx",
                in("rax") args.as_ptr(),
                inout("rdx") result,
                options(nostack),
            );
        }
        result
    }
}

#[cfg(target_arch = "aarch64")]
mod imp {
    #[inline(always)]
    pub fn request(default: usize, args: &[usize; 6]) -> usize {
        let mut result = default;
        // SAFETY: the rotations of x12 sum to 128 bits and leave it
        // unchanged; `orr x10, x10, x10` changes nothing. Valgrind reads the
        // argument block through x4 and writes the result to x3.
        unsafe {
            core::arch::asm!(
                "ror x12, x12, #3",
                "ror x12, x12, #13",
                "ror x12, x12, #51",
                "ror x12, x12, #61",
                "orr x10, x10, x10",
                in("x4") args.as_ptr(),
                inout("x3") result,
                options(nostack),
            );
        }
        result
    }
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
mod imp {
    pub fn request(default: usize, _args: &[usize; 6]) -> usize {
        default
    }
}

/// True when this process runs under valgrind.
pub fn running_on_valgrind() -> bool {
    client_request(0, RUNNING_ON_VALGRIND, 0) > 0
}

/// `Some(dir)` in the child started by [`reexec`].
pub fn child_dir() -> Option<PathBuf> {
    std::env::var_os(CHILD_ENV).map(PathBuf::from)
}

/// `valgrind --version`, or why it cannot run.
pub fn valgrind_version() -> Result<String, MeasureError> {
    match std::process::Command::new("valgrind")
        .arg("--version")
        .output()
    {
        Ok(o) if o.status.success() => Ok(String::from_utf8_lossy(&o.stdout).trim().to_string()),
        Ok(o) => Err(MeasureError::ValgrindFailed {
            status: o.status,
            stderr: String::from_utf8_lossy(&o.stderr).trim().to_string(),
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(MeasureError::ValgrindMissing),
        Err(e) => Err(MeasureError::ValgrindRun(Arc::new(e))),
    }
}

/// The valgrind command line for the child, before the program and its
/// arguments.
pub fn valgrind_args(dir: &Path) -> Vec<String> {
    vec![
        "--tool=callgrind".into(),
        "--collect-atstart=no".into(),
        "--dump-instr=no".into(),
        "--compress-strings=no".into(),
        "--compress-pos=no".into(),
        format!("--callgrind-out-file={}/cg.%p", dir.display()),
        "-q".into(),
        // No gdbserver FIFOs left in the temporary directory by a child
        // that is killed.
        "--vgdb=no".into(),
    ]
}

/// Run this program again, with the same arguments, under callgrind, and
/// return its exit code. The child prints the results.
pub fn reexec() -> Result<i32, MeasureError> {
    let version = valgrind_version()?;
    let exe = std::env::current_exe().map_err(|e| MeasureError::CurrentExe(Arc::new(e)))?;
    let dir = tempfile::Builder::new()
        .prefix("loopbench-callgrind-")
        .tempdir()
        .map_err(|e| MeasureError::TempDir(Arc::new(e)))?;
    crate::diag!(
        "counters: running under {version} (callgrind); counts are exact, times are not meaningful"
    );
    let mut cmd = std::process::Command::new("valgrind");
    cmd.args(valgrind_args(dir.path()))
        .arg(&exe)
        .args(std::env::args_os().skip(1))
        .env(CHILD_ENV, dir.path());
    crate::children::die_with_parent(&mut cmd);
    let status = wait_passing_signals(&mut cmd)?;
    // `dir` is removed here, whatever ended the child.
    drop(dir);
    #[cfg(unix)]
    if let Some(sig) = std::os::unix::process::ExitStatusExt::signal(&status) {
        return Ok(128 + sig);
    }
    match status.code() {
        Some(c) => Ok(c),
        None => Err(MeasureError::NoExitCode { status }),
    }
}

/// Start the valgrind child and wait for it. The child runs in a process
/// group of its own and this process passes it each SIGINT and SIGTERM
/// once (a Ctrl-C at the terminal reaches this process only): the first
/// stops the session between shapes with what completed, the second at
/// once, a third is SIGKILL. So this process outlives the child and removes
/// its temporary directory; if it is killed outright, the child dies with
/// it ([`crate::children`]).
#[cfg(unix)]
fn wait_passing_signals(
    cmd: &mut std::process::Command,
) -> Result<std::process::ExitStatus, MeasureError> {
    use std::os::unix::process::CommandExt;
    use std::sync::atomic::{AtomicUsize, Ordering};
    let start = |e| MeasureError::ValgrindStart(Arc::new(e));
    let signals = [libc::SIGINT, libc::SIGTERM];
    let counts: Arc<[AtomicUsize; 2]> = Arc::new([AtomicUsize::new(0), AtomicUsize::new(0)]);
    let mut ids = Vec::new();
    for (i, sig) in signals.into_iter().enumerate() {
        let counts = Arc::clone(&counts);
        // SAFETY: the action only increments an atomic (async-signal-safe).
        let id = unsafe {
            signal_hook::low_level::register(sig, move || {
                counts[i].fetch_add(1, Ordering::SeqCst);
            })
        }
        .map_err(start)?;
        ids.push(id);
    }
    let waited = (|| {
        let mut child = cmd.process_group(0).spawn().map_err(start)?;
        let pid = child.id() as libc::pid_t;
        let mut passed = 0;
        loop {
            if let Some(status) = child.try_wait().map_err(start)? {
                return Ok(status);
            }
            for (i, sig) in signals.into_iter().enumerate() {
                for _ in 0..counts[i].swap(0, Ordering::SeqCst) {
                    passed += 1;
                    let sig = if passed >= 3 { libc::SIGKILL } else { sig };
                    // SAFETY: signals this process's own child.
                    unsafe { libc::kill(pid, sig) };
                }
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    })();
    for id in ids {
        signal_hook::low_level::unregister(id);
    }
    waited
}

#[cfg(not(unix))]
fn wait_passing_signals(
    cmd: &mut std::process::Command,
) -> Result<std::process::ExitStatus, MeasureError> {
    cmd.status()
        .map_err(|e| MeasureError::ValgrindStart(Arc::new(e)))
}

/// The command that starts a worker process (an arm from another build of an
/// engine). In the callgrind child the worker runs under callgrind too, with
/// the same options and output directory; it inherits [`CHILD_ENV`], reads
/// its own dumps (named by its own pid) and reports exact counts like an
/// in-process arm. Elsewhere it is the plain binary.
pub fn worker_command(bin: &Path, args: &[String]) -> std::process::Command {
    let mut c = match child_dir() {
        Some(dir) => {
            let mut c = std::process::Command::new("valgrind");
            c.args(valgrind_args(&dir)).arg(bin);
            c
        }
        None => std::process::Command::new(bin),
    };
    crate::children::die_with_parent(&mut c);
    c.args(args);
    c
}

/// One callgrind dump, as far as loopbench reads it.
#[derive(Clone, Debug, PartialEq)]
pub struct Dump {
    /// The name given to `CALLGRIND_DUMP_STATS_AT`, from `desc: Trigger:`.
    pub trigger: Option<String>,
    /// Total `Ir` of the dump (`summary:` line, else `totals:`).
    pub ir: u64,
}

/// Parse a callgrind output file: the `events:` header says which column is
/// `Ir`; the `summary:` (or `totals:`) line holds the dump's totals.
pub fn parse_dump(text: &str) -> Result<Dump, DumpError> {
    let mut events: Option<Vec<&str>> = None;
    let mut summary = None;
    let mut totals = None;
    let mut trigger = None;
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("events:") {
            events = Some(rest.split_whitespace().collect());
        } else if let Some(rest) = line.strip_prefix("summary:") {
            summary = Some(rest);
        } else if let Some(rest) = line.strip_prefix("totals:") {
            totals = Some(rest);
        } else if let Some(rest) = line.strip_prefix("desc: Trigger:") {
            let rest = rest.trim();
            trigger = Some(
                rest.strip_prefix("Client Request:")
                    .unwrap_or(rest)
                    .trim()
                    .to_string(),
            );
        }
    }
    let events = events.ok_or(DumpError::NoEvents)?;
    let col = events
        .iter()
        .position(|e| *e == "Ir")
        .ok_or(DumpError::NoIr)?;
    let line = summary.or(totals).ok_or(DumpError::NoTotals)?;
    let ir = match line.split_whitespace().nth(col) {
        Some(v) => v.parse::<u64>().map_err(|source| DumpError::BadIr {
            value: v.to_string(),
            source,
        })?,
        // Trailing zero columns may be omitted.
        None => 0,
    };
    Ok(Dump { trigger, ir })
}

/// The child's callgrind state, shared by every counter of the session.
#[derive(Clone, Debug)]
pub struct CallgrindSetup {
    pub dir: PathBuf,
    /// Ir of an empty meter start/stop pair, subtracted from every reading.
    pub overhead: u64,
}

impl CallgrindSetup {
    /// In the child: confirm valgrind and measure the harness overhead.
    pub fn new(dir: PathBuf) -> Result<Self, MeasureError> {
        if !running_on_valgrind() {
            return Err(MeasureError::NotUnderValgrind);
        }
        if !dir.is_dir() {
            return Err(MeasureError::NoOutputDir { dir });
        }
        let raw = CallgrindSetup { dir, overhead: 0 };
        let mut meter = Meter::new(vec![Box::new(CallgrindCounter::new(&raw))]);
        let mut least = u64::MAX;
        for rep in 0..3 {
            meter.context("overhead", "empty", rep);
            meter.start();
            meter.stop();
            let r = meter.take();
            let v = r.counters.get(NAME).ok_or(MeasureError::OverheadUnread)?;
            least = least.min(*v as u64);
        }
        Ok(CallgrindSetup {
            overhead: least,
            ..raw
        })
    }

    pub fn describe(&self) -> String {
        format!(
            "exact instructions (callgrind Ir), collected only inside the timed call; harness overhead of {} Ir subtracted",
            self.overhead
        )
    }
}

/// The counter plugged into the meter, in the child.
pub struct CallgrindCounter {
    dir: PathBuf,
    overhead: u64,
    label: String,
    seq: u64,
}

impl CallgrindCounter {
    pub fn new(setup: &CallgrindSetup) -> Self {
        CallgrindCounter {
            dir: setup.dir.clone(),
            overhead: setup.overhead,
            label: String::new(),
            seq: 0,
        }
    }

    /// Dump, find the file with our trigger, read its Ir and delete it.
    fn collect(&mut self) -> Result<u64, MeasureError> {
        self.seq += 1;
        let name = format!("loopbench#{}#{}", self.seq, self.label);
        let cname =
            std::ffi::CString::new(name.clone()).map_err(|_| MeasureError::NulInDumpName)?;
        client_request(0, DUMP_STATS_AT, cname.as_ptr() as usize);
        let entries = std::fs::read_dir(&self.dir).map_err(|e| MeasureError::ListDumps {
            dir: self.dir.clone(),
            source: Arc::new(e),
        })?;
        let pid = std::process::id();
        let prefix = format!("cg.{pid}.");
        for entry in entries.flatten() {
            let file = entry.file_name();
            if !file.to_string_lossy().starts_with(&prefix) {
                continue;
            }
            let path = entry.path();
            let text = std::fs::read_to_string(&path).map_err(|e| MeasureError::ReadDump {
                path: path.clone(),
                source: Arc::new(e),
            })?;
            let dump = parse_dump(&text).map_err(|source| MeasureError::Dump {
                path: path.clone(),
                source,
            })?;
            let _ = std::fs::remove_file(&path);
            if dump.trigger.as_deref() == Some(name.as_str()) {
                return Ok(dump.ir);
            }
        }
        Err(MeasureError::NoDump {
            name,
            dir: self.dir.clone(),
        })
    }
}

impl Counter for CallgrindCounter {
    fn name(&self) -> &'static str {
        NAME
    }
    fn context(&mut self, shape: &str, arm: &str, rep: usize) {
        self.label = format!("shape={shape} arm={arm} rep={rep}").replace(['\n', '\r'], " ");
    }
    #[inline(always)]
    fn start(&mut self) {
        client_request(0, TOGGLE_COLLECT, 0);
    }
    fn stop(&mut self) -> f64 {
        // Only reached through the default `stop_into`, which is overridden.
        f64::NAN
    }
    fn stop_into(&mut self, out: &mut BTreeMap<String, f64>) {
        client_request(0, TOGGLE_COLLECT, 0);
        match self.collect() {
            Ok(ir) => {
                out.insert(NAME.to_string(), ir.saturating_sub(self.overhead) as f64);
            }
            Err(e) => crate::diag!("warning: callgrind: {e}; this rep has no instruction count"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "# callgrind format\nversion: 1\ncreator: callgrind-3.19.0\npid: 42\ncmd: loopbench run\npart: 3\n\n\
desc: I1 cache: \ndesc: Timerange: Basic block 10 - 20\ndesc: Trigger: Client Request: loopbench#3#shape=x arm=y rep=1\n\n\
positions: line\nevents: Ir\nsummary: 12345\n\n\nfn=(1) main\n0 12345\n\ntotals: 12345\n";

    #[test]
    fn dumps_are_parsed() {
        let d = parse_dump(SAMPLE).unwrap();
        assert_eq!(d.ir, 12345);
        assert_eq!(
            d.trigger.as_deref(),
            Some("loopbench#3#shape=x arm=y rep=1")
        );
        let cache = "events: Dr Ir Dw\nsummary: 7 99 3\n";
        assert_eq!(parse_dump(cache).unwrap().ir, 99);
        let totals_only = "events: Ir\ntotals: 5\n";
        assert_eq!(parse_dump(totals_only).unwrap().ir, 5);
        assert!(parse_dump("summary: 3\n")
            .unwrap_err()
            .to_string()
            .contains("events"));
        assert!(parse_dump("events: Dr\nsummary: 3\n")
            .unwrap_err()
            .to_string()
            .contains("Ir"));
        assert!(parse_dump("events: Ir\nsummary: x\n").is_err());
    }

    #[test]
    fn client_requests_are_no_ops_natively() {
        if running_on_valgrind() {
            return;
        }
        assert_eq!(client_request(7, TOGGLE_COLLECT, 0), 7);
        assert!(!running_on_valgrind());
    }
}
