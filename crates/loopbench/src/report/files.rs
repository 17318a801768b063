//! Output files: what an output path names, and how it is written.
//!
//! A regular file (or a path where none is yet) is replaced atomically:
//! a temporary file beside it, flushed, renamed over it, under an advisory
//! lock held from the check before any work to the end of the command
//! (see the parent module). A symbolic link is followed: the file it names
//! is replaced and the link stays. A character device (`/dev/null`, a
//! terminal) or a FIFO is never replaced: it is opened at the check and
//! written through once, at the end, since a stream cannot be rewritten
//! after every shape. A FIFO nobody reads is refused at the check (writing
//! to it would wait for ever); a directory, a block device or a socket is
//! refused there too. An output that is one of the command's own inputs
//! (the same file, by device and inode, whatever its name) is refused.

use super::ReportError;
use crate::error::Error;
use crate::pid_lock::{self, PidLock, Taken};
use std::io::Write;
use std::path::{Path, PathBuf};

/// What an output path names, symbolic links followed.
enum Destination {
    /// A regular file, or nothing yet: at this path (the link's target
    /// when the output was a link).
    File(PathBuf),
    /// A character device or a FIFO.
    Stream,
}

/// Links in a chain of symbolic links followed at most (as Linux's
/// `open`).
const MAX_LINKS: usize = 40;

/// Where `path` leads, and what is there.
fn destination(path: &Path) -> Result<Destination, Error> {
    // What is at the end, every link followed (the kernel's own links in
    // /proc included: `/dev/stdout` is a pipe, a terminal or a file).
    let kind = match std::fs::metadata(path) {
        Ok(m) => Some(m.file_type()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(Error::io(format!("cannot write {}", path.display()), e)),
    };
    match kind {
        // Nothing there yet (a link may name it), or a regular file.
        None => Ok(Destination::File(
            resolve(path)?.ok_or_else(|| dangling(path))?,
        )),
        Some(k) if k.is_file() => Ok(match resolve(path)? {
            Some(real) => Destination::File(real),
            // Through a descriptor of this process (`/dev/stdout` sent to
            // a file): whoever opened it keeps that file, so it is written
            // through, not replaced.
            None => Destination::Stream,
        }),
        Some(k) if k.is_dir() => Err(ReportError::IsADirectory {
            path: path.to_path_buf(),
        }
        .into()),
        Some(k) => stream_or_refuse(path, k),
    }
}

/// A character device or FIFO is a stream; a block device or socket is
/// refused.
fn stream_or_refuse(path: &Path, kind: std::fs::FileType) -> Result<Destination, Error> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if kind.is_char_device() || kind.is_fifo() {
            return Ok(Destination::Stream);
        }
        let what = if kind.is_block_device() {
            "a block device"
        } else {
            "a socket"
        };
        Err(ReportError::NotWritable {
            path: path.to_path_buf(),
            what,
        }
        .into())
    }
    #[cfg(not(unix))]
    {
        let _ = (path, kind);
        Ok(Destination::Stream)
    }
}

/// The path at the end of `path`'s chain of symbolic links, each read as
/// text; `None` when the chain runs through `/proc` (a process's
/// descriptors, whose links name no path to replace).
fn resolve(path: &Path) -> Result<Option<PathBuf>, Error> {
    let mut at = path.to_path_buf();
    for _ in 0..MAX_LINKS {
        if at.starts_with("/proc") {
            return Ok(None);
        }
        match std::fs::symlink_metadata(&at) {
            Ok(m) if m.file_type().is_symlink() => {
                let target = std::fs::read_link(&at)
                    .map_err(|e| Error::io(format!("cannot follow {}", at.display()), e))?;
                at = parent(&at).join(target);
            }
            _ => return Ok(Some(at)),
        }
    }
    Err(Error::Usage(format!(
        "{}: more than {MAX_LINKS} symbolic links in a row",
        path.display()
    )))
}

/// A link through `/proc` to nothing: there is no file to make.
fn dangling(path: &Path) -> Error {
    Error::Usage(format!(
        "{}: a link to a descriptor that is gone; name a file",
        path.display()
    ))
}

/// An output checked before any work and held until the command ends.
pub(super) enum Held {
    /// A regular file (or none yet), replaced atomically under its lock.
    File { path: PathBuf, _lock: PidLock },
    /// A character device or a FIFO, open, written once at the end.
    Stream { path: PathBuf, file: std::fs::File },
}

impl Held {
    /// Check that `path` can take the output, without touching what is
    /// there, and hold it: a file's lock (removing the temporaries a killed
    /// session left beside it), a stream open.
    pub(super) fn take(path: &Path) -> Result<Held, Error> {
        match destination(path)? {
            Destination::File(real) => {
                check_writable(&real)?;
                let lock = lock_output(&real)?;
                remove_stale_temporaries(&real);
                Ok(Held::File {
                    path: real,
                    _lock: lock,
                })
            }
            Destination::Stream => Ok(Held::Stream {
                file: open_stream(path)?,
                path: path.to_path_buf(),
            }),
        }
    }

    /// After a shape: a file is rewritten, a stream waits for the end
    /// (`None`).
    pub(super) fn partial(&self, bytes: &[u8]) -> Option<Result<(), Error>> {
        match self {
            Held::File { path, .. } => Some(replace(path, bytes)),
            Held::Stream { .. } => None,
        }
    }

    /// Where it writes.
    pub(super) fn path(&self) -> &Path {
        match self {
            Held::File { path, .. } | Held::Stream { path, .. } => path,
        }
    }

    /// The last write.
    pub(super) fn finish(&self, bytes: &[u8]) -> Result<(), Error> {
        match self {
            Held::File { path, .. } => replace(path, bytes),
            Held::Stream { path, file } => write_stream(file, path, bytes),
        }
    }
}

/// Write `bytes` to `path`: a regular file (or a new one) is replaced
/// atomically, a temporary file beside it flushed and renamed over it (a
/// link's target, the link kept); a character device or a FIFO is written
/// through; anything else is refused.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), Error> {
    match destination(path)? {
        Destination::File(real) => replace(&real, bytes),
        Destination::Stream => write_stream(&open_stream(path)?, path, bytes),
    }
}

/// The open stream at `path`. A FIFO is opened without waiting: with no
/// reader that fails (ENXIO) and says so, rather than waiting for ever;
/// the writes then wait for the reader as usual.
fn open_stream(path: &Path) -> Result<std::fs::File, Error> {
    let mut options = std::fs::OpenOptions::new();
    // A regular file reached through a descriptor link is rewritten whole.
    let regular = std::fs::metadata(path).is_ok_and(|m| m.is_file());
    options.write(true).truncate(regular);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NONBLOCK);
    }
    let file = options.open(path).map_err(|e| {
        if e.raw_os_error() == Some(libc::ENXIO) {
            Error::Usage(format!(
                "nobody is reading the FIFO {}: start its reader first",
                path.display()
            ))
        } else {
            Error::io(format!("cannot write {}", path.display()), e)
        }
    })?;
    #[cfg(unix)]
    {
        use std::os::fd::AsRawFd;
        let fd = file.as_raw_fd();
        // SAFETY: reads and sets the status flags of a descriptor this
        // function owns.
        unsafe {
            let flags = libc::fcntl(fd, libc::F_GETFL);
            if flags >= 0 {
                libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK);
            }
        }
    }
    Ok(file)
}

fn write_stream(mut file: &std::fs::File, path: &Path, bytes: &[u8]) -> Result<(), Error> {
    file.write_all(bytes)
        .and_then(|_| file.flush())
        .map_err(|e| Error::io(format!("cannot write {}", path.display()), e))
}

/// Replace the regular file (or create the file) at `path` atomically.
fn replace(path: &Path, bytes: &[u8]) -> Result<(), Error> {
    Temporary::beside(path)
        .map_err(|e| {
            Error::io(
                format!("cannot create a file in {}", parent(path).display()),
                e,
            )
        })?
        .replace(path, bytes)
}

/// An output that is one of the command's inputs: refused before any work,
/// whatever either is called (`report s.json --csv ./s.json`, a link).
pub fn refuse_input(output: &Path, inputs: &[&Path]) -> Result<(), Error> {
    match inputs.iter().find(|i| same_file_at(output, i)) {
        Some(input) => Err(ReportError::OutputIsInput {
            output: output.to_path_buf(),
            input: input.to_path_buf(),
        }
        .into()),
        None => Ok(()),
    }
}

/// Whether `path` names the file this process's stdout is.
pub(super) fn is_stdout(path: &Path) -> bool {
    #[cfg(target_os = "linux")]
    {
        same_file_at(path, Path::new("/proc/self/fd/1"))
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = path;
        false
    }
}

/// Whether two paths name one existing file (device and inode).
fn same_file_at(a: &Path, b: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        match (std::fs::metadata(a), std::fs::metadata(b)) {
            (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
            _ => false,
        }
    }
    #[cfg(not(unix))]
    {
        a == b
    }
}

/// The directory of `path` accepts a new file, and `path` itself, if it
/// exists, is a writable regular file (it is left untouched).
fn check_writable(path: &Path) -> Result<(), Error> {
    let dir = parent(path);
    Temporary::beside(path).map_err(|e| {
        Error::io(
            format!("cannot write {} (in {})", path.display(), dir.display()),
            e,
        )
    })?;
    if path.exists() {
        std::fs::OpenOptions::new()
            .append(true)
            .open(path)
            .map_err(|e| Error::io(format!("cannot write {}", path.display()), e))?;
    }
    Ok(())
}

fn parent(path: &Path) -> &Path {
    path.parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

/// The file name of `path` as the sidecar names use it.
fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// The file name of `path` as its sidecars (`.NAME.loopbench-lock`,
/// `.NAME.loopbench-tmp-PID-` and a random suffix) carry it: whole when they fit in a file
/// name (255 bytes on Linux's file systems), else its first 128 bytes and a
/// stable hash of the whole, so any name the output itself can have has
/// sidecars too (a 240-byte name was refused as "File name too long").
fn sidecar_stem(path: &Path) -> String {
    const WHOLE: usize = 200;
    let name = file_name(path);
    if name.len() <= WHOLE {
        return name;
    }
    let mut cut = 128;
    while !name.is_char_boundary(cut) {
        cut -= 1;
    }
    let raw = path.file_name().unwrap_or_default().as_encoded_bytes();
    format!("{}~{:016x}", &name[..cut], crate::hash::fnv1a(&[raw]))
}

/// The prefix of every temporary file of `path`, before the owner's pid.
fn temp_prefix(path: &Path) -> String {
    format!(".{}.loopbench-tmp-", sidecar_stem(path))
}

/// A new file beside an output, named for it and this process, removed
/// unless it replaces the output. Made here, not with tempfile: tempfile
/// opens a relative directory by the working directory's absolute name,
/// which cannot be opened when it is longer than PATH_MAX, where the
/// output's own relative name can.
struct Temporary {
    path: PathBuf,
    file: std::fs::File,
    kept: bool,
}

impl Temporary {
    /// With the mode the target has (a new target: 0666 less the umask, as
    /// any other program's output).
    fn beside(target: &Path) -> std::io::Result<Self> {
        use std::sync::atomic::{AtomicU64, Ordering};
        static MADE: AtomicU64 = AtomicU64::new(0);
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
            let mode = std::fs::metadata(target)
                .map(|m| m.permissions().mode() & 0o7777)
                .unwrap_or(0o666);
            options.mode(mode);
        }
        let prefix = format!("{}{}-", temp_prefix(target), std::process::id());
        loop {
            // A name left by a dead process with this pid is taken: the next.
            let n = MADE.fetch_add(1, Ordering::Relaxed);
            let path = parent(target).join(format!("{prefix}{n}"));
            match options.open(&path) {
                Ok(file) => {
                    return Ok(Temporary {
                        path,
                        file,
                        kept: false,
                    })
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e),
            }
        }
    }

    /// Written and flushed to the disk, then renamed over `target`.
    fn replace(mut self, target: &Path, bytes: &[u8]) -> Result<(), Error> {
        self.file
            .write_all(bytes)
            .map_err(|e| Error::io(format!("cannot write {}", target.display()), e))?;
        self.file
            .sync_all()
            .map_err(|e| Error::io(format!("cannot flush {}", target.display()), e))?;
        std::fs::rename(&self.path, target)
            .map_err(|e| Error::io(format!("cannot write {}", target.display()), e))?;
        self.kept = true;
        Ok(())
    }
}

impl Drop for Temporary {
    fn drop(&mut self) {
        if !self.kept {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// Remove `.NAME.loopbench-tmp-PID-*` files beside `path` whose process is
/// gone (a session killed mid-write). Called with the lock held, so no
/// live writer of `path` can own them; failures are ignored (another
/// cleaner, or a read-only directory that `check` would have refused).
fn remove_stale_temporaries(path: &Path) {
    let prefix = temp_prefix(path);
    let Ok(entries) = std::fs::read_dir(parent(path)) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(rest) = name.strip_prefix(&prefix) else {
            continue;
        };
        let pid = rest.split('-').next().and_then(|p| p.parse::<u32>().ok());
        if let Some(pid) = pid {
            if !process_alive(pid) {
                let _ = std::fs::remove_file(entry.path());
            }
        }
    }
}

/// Whether a process with this pid exists (a pid in use by another
/// program counts as alive: its file is kept, never wrongly removed).
fn process_alive(pid: u32) -> bool {
    #[cfg(target_os = "linux")]
    {
        let Ok(pid) = libc::pid_t::try_from(pid) else {
            return true;
        };
        // SAFETY: signal 0 only checks that the process exists.
        let r = unsafe { libc::kill(pid, 0) };
        r == 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = pid;
        true
    }
}

/// The lock of one output file: a sidecar `.NAME.loopbench-lock` beside
/// it ([`crate::pid_lock`]).
fn lock_output(target: &Path) -> Result<PidLock, Error> {
    let path = parent(target).join(format!(".{}.loopbench-lock", sidecar_stem(target)));
    match pid_lock::take(&path) {
        Ok(Taken::Held(lock)) => Ok(lock),
        Ok(Taken::Busy { holder }) => Err(ReportError::Locked {
            path: target.to_path_buf(),
            holder,
        }
        .into()),
        Ok(Taken::KeepsChanging) => Err(ReportError::LockKeepsChanging {
            path: target.to_path_buf(),
        }
        .into()),
        Err(e) => Err(Error::io(format!("cannot lock {}", target.display()), e)),
    }
}
