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
