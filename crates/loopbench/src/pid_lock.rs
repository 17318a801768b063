//! A lock this process holds on a sidecar file beside what it guards: the
//! file `flock`ed and holding the owner's pid, removed when the lock is
//! dropped (or released by the kernel when the process dies, however it
//! dies). Output files and bisects take their locks here.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

/// A held lock.
pub struct PidLock {
    file: std::fs::File,
    path: PathBuf,
}

/// What taking a lock found.
pub enum Taken {
    Held(PidLock),
    /// Another process holds it: its pid, when it wrote one.
    Busy {
        holder: Option<String>,
    },
    /// The sidecar was removed and made again under us three times.
    KeepsChanging,
}

/// Take the lock of sidecar `path` without waiting.
pub fn take(path: &Path) -> std::io::Result<Taken> {
    // A sidecar removed by its holder between our open and our lock is a
    // stale inode: try again on the new one.
    for _ in 0..3 {
        let mut file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)?;
        match file.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                let mut holder = String::new();
                let _ = file.read_to_string(&mut holder);
                let holder = Some(holder.trim().to_string()).filter(|pid| !pid.is_empty());
                return Ok(Taken::Busy { holder });
            }
            Err(std::fs::TryLockError::Error(e)) => return Err(e),
        }
        if !still_names(&file, path) {
            continue;
        }
        file.set_len(0)?;
        write!(file, "{}", std::process::id())?;
        return Ok(Taken::Held(PidLock {
            file,
            path: path.to_path_buf(),
        }));
    }
    Ok(Taken::KeepsChanging)
}

/// Whether `path` still names the open `file` (its holder may have removed
/// it between our open and our lock).
fn still_names(file: &std::fs::File, path: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        match (file.metadata(), std::fs::metadata(path)) {
            (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
            _ => false,
        }
    }
    #[cfg(not(unix))]
    {
        let _ = (file, path);
        true
    }
}

impl Drop for PidLock {
    fn drop(&mut self) {
        // Removed while still held, so a waiting taker that opened the old
        // file sees it is gone (`still_names`) and retries.
        let _ = std::fs::remove_file(&self.path);
        let _ = self.file.unlock();
    }
}
