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
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

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
        }
        flag
    }))
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
