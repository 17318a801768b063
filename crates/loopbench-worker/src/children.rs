//! Children die with their parent. Every process loopbench starts (a
//! worker, valgrind, cargo, git) is started through [`die_with_parent`]:
//! on Linux the kernel sends it SIGKILL when loopbench dies, by any signal,
//! SIGKILL included, so an interrupted or killed session leaves nothing
//! running (an orphaned valgrind child used to finish the session on its
//! own and record it).
//!
//! `PR_SET_PDEATHSIG` fires when the *thread* that started the child ends,
//! not only the process: children are started from threads that outlive
//! them (the session's, the agent's), never from a short-lived helper.

use std::process::Command;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

/// `cmd`'s process is killed when this one dies (Linux; elsewhere nothing).
#[cfg(target_os = "linux")]
pub fn die_with_parent(cmd: &mut Command) -> &mut Command {
    use std::os::unix::process::CommandExt;
    let parent = std::process::id();
    // SAFETY: prctl, getppid and kill are async-signal-safe, and nothing
    // else runs between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // The parent may have died before the prctl: then no signal
            // comes, so end at once.
            if libc::getppid() as u32 != parent {
                libc::kill(libc::getpid(), libc::SIGKILL);
            }
            Ok(())
        });
    }
    cmd
}

#[cfg(not(target_os = "linux"))]
pub fn die_with_parent(cmd: &mut Command) -> &mut Command {
    cmd
}

// A stop asked by a signal: commands look at it between units of work, and
// so does anything that waits on a child (a worker's cargo build), so that
// one SIGTERM does not wait minutes for a build nobody will use.

static FLAG: OnceLock<Arc<AtomicUsize>> = OnceLock::new();

/// The signal number that the first SIGINT or SIGTERM stores (the session
/// then stops between shapes and reports what it completed); a second one
/// exits at once with 130 (SIGINT) or 143 (SIGTERM). Installed once per
/// process. Without a handler (it could not be installed) the flag stays 0
/// and the signal keeps its default action.
pub fn interrupt_flag() -> Arc<AtomicUsize> {
    Arc::clone(FLAG.get_or_init(|| {
        let flag = Arc::new(AtomicUsize::new(0));
        #[cfg(unix)]
        {
            use signal_hook::consts::{SIGINT, SIGTERM};
            let seen = Arc::new(std::sync::atomic::AtomicBool::new(false));
            for (sig, code) in [(SIGINT, 130), (SIGTERM, 143)] {
                // Registered first, so it sees the flag the second handler set.
                let _ =
                    signal_hook::flag::register_conditional_shutdown(sig, code, Arc::clone(&seen));
                let _ = signal_hook::flag::register(sig, Arc::clone(&seen));
                let _ = signal_hook::flag::register_usize(sig, Arc::clone(&flag), sig as usize);
            }
            let watched = Arc::clone(&flag);
            let _ = std::thread::Builder::new()
                .name("loopbench-watchdog".into())
                .spawn(move || watchdog(&watched));
        }
        flag
    }))
}

/// Calls into wasm in this process that only the end of the process can
/// stop (an in-process arm's timed call, warm mode's, a counting run):
/// counted as they start and as they end, so the watchdog can tell whether
/// the call running when a signal came is still running.
static CALLS_STARTED: AtomicU64 = AtomicU64::new(0);
static CALLS_ENDED: AtomicU64 = AtomicU64::new(0);

/// A call into wasm running in this process, from [`Unstoppable::enter`]
/// until dropped.
pub struct Unstoppable(());

impl Unstoppable {
    pub fn enter() -> Self {
        CALLS_STARTED.fetch_add(1, Ordering::SeqCst);
        Unstoppable(())
    }
}

impl Drop for Unstoppable {
    fn drop(&mut self) {
        CALLS_ENDED.fetch_add(1, Ordering::SeqCst);
    }
}

/// How long a call running in this process may go on after SIGINT or
/// SIGTERM before the process ends without it.
pub const SIGNAL_GRACE: Duration = Duration::from_secs(5);

/// After a signal, a call in this process that never returns (a loop
/// without end in an in-process arm) would keep the session from ever
/// seeing it: once the call running at the signal has gone on for
/// [`SIGNAL_GRACE`], the process says so and exits as the signal asked.
/// Files written after each completed epoch stay; nothing more is written.
fn watchdog(flag: &AtomicUsize) {
    // The number of calls ended when a call was first seen running after
    // the signal, and when.
    let mut stuck: Option<(u64, Instant)> = None;
    loop {
        std::thread::sleep(Duration::from_millis(50));
        let sig = flag.load(Ordering::Relaxed);
        if sig == 0 {
            continue;
        }
        let ended = CALLS_ENDED.load(Ordering::SeqCst);
        let running = CALLS_STARTED.load(Ordering::SeqCst) > ended;
        stuck = match stuck {
            Some((was, since)) if running && was == ended => {
                if since.elapsed() >= SIGNAL_GRACE {
                    crate::diag!(
                        "error: interrupted: a call into wasm running in this process did not return within {} s of signal {sig}, so loopbench ends without it (files written after each completed epoch stay; nothing more is written or recorded)",
                        SIGNAL_GRACE.as_secs()
                    );
                    std::process::exit(128 + sig as i32);
                }
                Some((was, since))
            }
            _ if running => Some((ended, Instant::now())),
            _ => None,
        };
    }
}

/// Whether SIGINT or SIGTERM asked this process to stop. The first call
/// installs the handler, so a long command calls it before it starts.
pub fn stop_requested() -> bool {
    interrupt_flag().load(Ordering::Relaxed) != 0
}

/// Whether SIGINT or SIGTERM asked this process to stop, without
/// installing the handler: a library's wait looks, the command decides
/// whether signals are caught.
pub fn signalled() -> bool {
    FLAG.get()
        .is_some_and(|flag| flag.load(Ordering::Relaxed) != 0)
}

/// The signal that stopped the session (SIGINT when none did), for
/// `Error::Interrupted`.
pub fn stop_signal() -> i32 {
    match interrupt_flag().load(Ordering::Relaxed) {
        0 => 2,
        sig => sig as i32,
    }
}
