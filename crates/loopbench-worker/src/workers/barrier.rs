//! The duet barrier: two worker processes released into their timed calls
//! at the same moment, without a round trip through the orchestrator.
//!
//! Duet benchmarking (Bulej et al., "Duet Benchmarking: Improving
//! Measurement Accuracy in the Cloud", ICPE 2020) runs the two arms of a
//! comparison at once on two cores, so that whatever the host does to the
//! machine in that millisecond lands on both. That only works if the two
//! timed calls start together: a request sent to each worker in turn
//! arrives tens of microseconds apart (a pipe write, a wake-up), and the
//! orchestrator would have to run between them. So the orchestrator sends
//! both requests first, and the workers meet here.
//!
//! The barrier is one page of shared memory (a file both workers map): a
//! 64-byte cache line per arm slot holding the last *generation* (a number
//! the orchestrator gives each duet, strictly increasing over the session)
//! that the arm reached. An arm at duet `g` stores `g` in its slot and
//! spins until its partner's slot reads `g` or more; whichever arrives
//! second releases both. Workers are pinned to different cores, so spinning
//! costs nothing another process needed, and a release takes the time of
//! one cache line moving between cores (about a microsecond; each rep
//! records the measured skew). A partner that never arrives (it crashed
//! before the barrier) is given up after [`GIVE_UP`], and the rep fails;
//! the orchestrator can also release a waiting worker itself
//! ([`BarrierFile::arrive`]) when it knows the partner will not come.

/// The duet barrier's shared page could not be made.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{0}")]
pub struct BarrierError(pub String);
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Bytes between slots: one cache line each, so two arms never share one.
const SLOT_BYTES: usize = 64;
/// Slots in the page: the most arms a duet session may have.
pub const SLOTS: usize = 64;
const PAGE: usize = SLOT_BYTES * SLOTS;
/// How long a worker waits for its partner before the rep fails.
pub const GIVE_UP: Duration = Duration::from_secs(10);

/// A mapped barrier page.
struct Mapped {
    base: *mut u8,
}

// SAFETY: the page is only ever accessed through atomics.
unsafe impl Send for Mapped {}
unsafe impl Sync for Mapped {}

impl Mapped {
    #[cfg(target_os = "linux")]
    fn map(file: &std::fs::File) -> std::io::Result<Mapped> {
        use std::os::fd::AsRawFd;
        // SAFETY: a shared mapping of a file of at least PAGE bytes, checked
        // for failure; it lives until `Drop` unmaps it.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                PAGE,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                file.as_raw_fd(),
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        Ok(Mapped {
            base: base.cast::<u8>(),
        })
    }

    #[cfg(not(target_os = "linux"))]
    fn map(_file: &std::fs::File) -> std::io::Result<Mapped> {
        Err(std::io::Error::new(
            std::io::ErrorKind::Unsupported,
            "duet barriers need Linux shared mappings",
        ))
    }

    fn slot(&self, i: usize) -> &AtomicU64 {
        assert!(i < SLOTS, "barrier slot {i} out of range");
        // SAFETY: in bounds of the page, 64-byte aligned (the mapping is
        // page-aligned), and only accessed atomically by every process.
        unsafe { &*(self.base.add(i * SLOT_BYTES).cast::<AtomicU64>()) }
    }
}

impl Drop for Mapped {
    fn drop(&mut self) {
        #[cfg(target_os = "linux")]
        // SAFETY: unmaps exactly the mapping made in `map`.
        unsafe {
            libc::munmap(self.base.cast(), PAGE);
        }
    }
}

/// The orchestrator's end: owns the file (removed on drop) and hands out
/// generations.
pub struct BarrierFile {
    _dir: tempfile::TempDir,
    path: PathBuf,
    mapped: Mapped,
    next: std::cell::Cell<u64>,
}

impl BarrierFile {
    /// A fresh zeroed page in shared memory (`/dev/shm` where there is one).
    pub fn create() -> Result<Self, BarrierError> {
        let shm = Path::new("/dev/shm");
        let dir = if shm.is_dir() {
            tempfile::Builder::new()
                .prefix("loopbench-duet")
                .tempdir_in(shm)
        } else {
            tempfile::Builder::new().prefix("loopbench-duet").tempdir()
        }
        .map_err(|e| BarrierError(format!("creating the duet barrier: {e}")))?;
        let path = dir.path().join("barrier");
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)
            .and_then(|f| f.set_len(PAGE as u64).map(|_| f))
            .map_err(|e| BarrierError(format!("{}: {e}", path.display())))?;
        let mapped = Mapped::map(&file)
            .map_err(|e| BarrierError(format!("mapping {}: {e}", path.display())))?;
        Ok(BarrierFile {
            _dir: dir,
            path,
            mapped,
            next: std::cell::Cell::new(1),
        })
    }

    /// Where workers find the page.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The next duet's generation (never reused in this session).
    pub fn generation(&self) -> u64 {
        let g = self.next.get();
        self.next.set(g + 1);
        g
    }

    /// Mark `slot` as arrived at `generation`: releases a worker waiting
    /// for a partner that will not come (its request failed to send).
    pub fn arrive(&self, slot: usize, generation: u64) {
        self.mapped
            .slot(slot)
            .fetch_max(generation, Ordering::AcqRel);
    }
}

/// A worker's end: the mapped page.
#[derive(Clone)]
pub struct Barrier {
    mapped: Arc<Mapped>,
}

/// Where a worker left the barrier.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Released {
    /// CLOCK_MONOTONIC nanoseconds at release: comparable between the two
    /// workers of a duet (one machine, one clock).
    pub at_ns: u64,
    /// Whether the partner was there (false: given up after [`GIVE_UP`]).
    pub met: bool,
}

impl Barrier {
    pub fn open(path: &Path) -> Result<Self, String> {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
            .map_err(|e| format!("opening the duet barrier {}: {e}", path.display()))?;
        let len = file.metadata().map(|m| m.len()).unwrap_or(0);
        if len < PAGE as u64 {
            return Err(format!(
                "the duet barrier {} has {len} bytes, not {PAGE}",
                path.display()
            ));
        }
        let mapped = Mapped::map(&file)
            .map_err(|e| format!("mapping the duet barrier {}: {e}", path.display()))?;
        Ok(Barrier {
            mapped: Arc::new(mapped),
        })
    }

    /// Arrive at `generation` in `slot` and wait for `partner` to get
    /// there too.
    pub fn wait(&self, slot: usize, partner: usize, generation: u64) -> Released {
        self.mapped
            .slot(slot)
            .fetch_max(generation, Ordering::AcqRel);
        let other = self.mapped.slot(partner);
        let started = Instant::now();
        let mut spins: u64 = 0;
        let met = loop {
            if other.load(Ordering::Acquire) >= generation {
                break true;
            }
            std::hint::spin_loop();
            spins += 1;
            // Reading the clock every few thousand spins keeps the release
            // prompt; after a millisecond of waiting, yield too: the
            // partner may need this core (a machine with fewer cores).
            if spins.is_multiple_of(4096) {
                let waited = started.elapsed();
                if waited >= GIVE_UP {
                    break false;
                }
                if waited >= Duration::from_millis(1) {
                    std::thread::yield_now();
                }
            }
        };
        Released {
            at_ns: monotonic_ns(),
            met,
        }
    }
}

/// CLOCK_MONOTONIC in nanoseconds (shared by every process of the machine,
/// unlike `Instant`, whose origin is not exposed).
pub fn monotonic_ns() -> u64 {
    #[cfg(unix)]
    {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: clock_gettime fills one timespec through a valid pointer.
        unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
        ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
    }
    #[cfg(not(unix))]
    {
        0
    }
}

/// The core the calling thread is on now.
pub fn current_cpu() -> Option<usize> {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: sched_getcpu takes no arguments.
        let c = unsafe { libc::sched_getcpu() };
        (c >= 0).then_some(c as usize)
    }
    #[cfg(not(target_os = "linux"))]
    {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_threads_meet_and_a_missing_partner_is_released_by_the_owner() {
        let file = BarrierFile::create().unwrap();
        let a = Barrier::open(file.path()).unwrap();
        let b = Barrier::open(file.path()).unwrap();
        let g = file.generation();
        let t = std::thread::spawn(move || b.wait(1, 0, g));
        let mine = a.wait(0, 1, g);
        let theirs = t.join().unwrap();
        assert!(mine.met && theirs.met);
        // Generations only grow: an old arrival does not release a new one.
        let g2 = file.generation();
        assert!(g2 > g);
        let a2 = a.clone();
        let waiting = std::thread::spawn(move || a2.wait(0, 1, g2));
        // The partner's request failed: the orchestrator stands in for it.
        file.arrive(1, g2);
        assert!(waiting.join().unwrap().met);
    }

    #[test]
    fn a_short_file_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("b");
        std::fs::write(&p, [0u8; 10]).unwrap();
        let e = Barrier::open(&p).err().unwrap();
        assert!(e.contains("10 bytes"), "{e}");
    }
}
