//! The imports the host serves: the part of `wasi_snapshot_preview1` that
//! command modules use (every import of Sightglass's core modules but
//! wasi-nn), and Sightglass's `bench.start`/`bench.end`. Each has one type;
//! an engine registers exactly these, and a module that imports anything
//! else, or one of these at another type, is refused before any timing.

use super::{Fd, Host, Stop, TICK_NS};

/// The run ends here: why is in [`Host::stop`]; the engine unwinds with
/// a trap.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stopped;

/// A value type in an import's signature.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ty {
    I32,
    I64,
}

use Ty::{I32, I64};

macro_rules! funcs {
    ($($variant:ident = $module:literal $name:literal ($($p:expr),*) -> ($($r:expr),*);)*) => {
        /// An import the host serves.
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum Func { $($variant),* }

        impl Func {
            pub const ALL: &'static [Func] = &[$(Func::$variant),*];
            pub fn module(self) -> &'static str {
                match self { $(Func::$variant => $module),* }
            }
            pub fn name(self) -> &'static str {
                match self { $(Func::$variant => $name),* }
            }
            pub fn params(self) -> &'static [Ty] {
                match self { $(Func::$variant => &[$($p),*]),* }
            }
            pub fn results(self) -> &'static [Ty] {
                match self { $(Func::$variant => &[$($r),*]),* }
            }
        }
    };
}

funcs! {
    BenchStart = "bench" "start" () -> ();
    BenchEnd = "bench" "end" () -> ();
    ArgsGet = "wasi_snapshot_preview1" "args_get" (I32, I32) -> (I32);
    ArgsSizesGet = "wasi_snapshot_preview1" "args_sizes_get" (I32, I32) -> (I32);
    EnvironGet = "wasi_snapshot_preview1" "environ_get" (I32, I32) -> (I32);
    EnvironSizesGet = "wasi_snapshot_preview1" "environ_sizes_get" (I32, I32) -> (I32);
    ClockResGet = "wasi_snapshot_preview1" "clock_res_get" (I32, I32) -> (I32);
    ClockTimeGet = "wasi_snapshot_preview1" "clock_time_get" (I32, I64, I32) -> (I32);
    FdClose = "wasi_snapshot_preview1" "fd_close" (I32) -> (I32);
    FdFdstatGet = "wasi_snapshot_preview1" "fd_fdstat_get" (I32, I32) -> (I32);
    FdFdstatSetFlags = "wasi_snapshot_preview1" "fd_fdstat_set_flags" (I32, I32) -> (I32);
    FdFilestatGet = "wasi_snapshot_preview1" "fd_filestat_get" (I32, I32) -> (I32);
    FdPrestatGet = "wasi_snapshot_preview1" "fd_prestat_get" (I32, I32) -> (I32);
    FdPrestatDirName = "wasi_snapshot_preview1" "fd_prestat_dir_name" (I32, I32, I32) -> (I32);
    FdRead = "wasi_snapshot_preview1" "fd_read" (I32, I32, I32, I32) -> (I32);
    FdPread = "wasi_snapshot_preview1" "fd_pread" (I32, I32, I32, I64, I32) -> (I32);
    FdSeek = "wasi_snapshot_preview1" "fd_seek" (I32, I64, I32, I32) -> (I32);
    FdTell = "wasi_snapshot_preview1" "fd_tell" (I32, I32) -> (I32);
    FdSync = "wasi_snapshot_preview1" "fd_sync" (I32) -> (I32);
    FdWrite = "wasi_snapshot_preview1" "fd_write" (I32, I32, I32, I32) -> (I32);
    PathFilestatGet = "wasi_snapshot_preview1" "path_filestat_get" (I32, I32, I32, I32, I32) -> (I32);
    PathOpen = "wasi_snapshot_preview1" "path_open" (I32, I32, I32, I32, I32, I64, I64, I32, I32) -> (I32);
    PollOneoff = "wasi_snapshot_preview1" "poll_oneoff" (I32, I32, I32, I32) -> (I32);
    ProcExit = "wasi_snapshot_preview1" "proc_exit" (I32) -> ();
    RandomGet = "wasi_snapshot_preview1" "random_get" (I32, I32) -> (I32);
    SchedYield = "wasi_snapshot_preview1" "sched_yield" () -> (I32);
}

impl Func {
    /// The import `module.name`, if the host serves it.
    pub fn find(module: &str, name: &str) -> Option<Func> {
        Func::ALL
            .iter()
            .copied()
            .find(|f| f.module() == module && f.name() == name)
    }
}

/// WASI error numbers the host returns.
mod errno {
    pub const SUCCESS: i32 = 0;
    pub const BADF: i32 = 8;
    pub const FAULT: i32 = 21;
    pub const INVAL: i32 = 28;
    pub const ISDIR: i32 = 31;
    pub const NOENT: i32 = 44;
    pub const NOTDIR: i32 = 54;
    pub const ROFS: i32 = 69;
    pub const SPIPE: i32 = 70;
    pub const NOTCAPABLE: i32 = 76;
}

/// File types of `fdstat` and `filestat`.
const CHARACTER_DEVICE: u8 = 2;
const DIRECTORY: u8 = 3;
const REGULAR_FILE: u8 = 4;
/// Every right a descriptor may have: the host refuses writes by path
/// and descriptor, not by rights, so wasi-libc never stops short of asking.
const ALL_RIGHTS: u64 = (1 << 30) - 1;

/// A module's linear memory as the host reads and writes it: a slice
/// where the engine lends one (wasmi, wasm3), copies where it does not
/// (tinywasm). `false`: out of bounds.
pub trait Memory {
    /// Its size in bytes now.
    fn size(&self) -> usize;
    fn read(&self, at: u32, into: &mut [u8]) -> bool;
    fn write(&mut self, at: u32, data: &[u8]) -> bool;
}

/// Memory an engine lends as a slice.
pub struct Slice<'a>(pub &'a mut [u8]);

impl Memory for Slice<'_> {
    fn size(&self) -> usize {
        self.0.len()
    }
    fn read(&self, at: u32, into: &mut [u8]) -> bool {
        let at = at as usize;
        match self.0.get(at..at + into.len()) {
            Some(src) => {
                into.copy_from_slice(src);
                true
            }
            None => false,
        }
    }
    fn write(&mut self, at: u32, data: &[u8]) -> bool {
        let at = at as usize;
        match self.0.get_mut(at..at + data.len()) {
            Some(dst) => {
                dst.copy_from_slice(data);
                true
            }
            None => false,
        }
    }
}

/// The host functions' view of [`Memory`]; out of bounds is `FAULT`.
struct Mem<'a>(&'a mut dyn Memory);

impl Mem<'_> {
    /// `ptr..ptr + len` lies in memory: checked before anything is
    /// allocated for it (a length is the module's to choose).
    fn inside(&self, ptr: u32, len: u32) -> Result<(), i32> {
        match ptr.checked_add(len) {
            Some(end) if end as usize <= self.0.size() => Ok(()),
            _ => Err(errno::FAULT),
        }
    }
    fn bytes(&self, ptr: u32, len: u32) -> Result<Vec<u8>, i32> {
        self.inside(ptr, len)?;
        let mut buf = vec![0; len as usize];
        match self.0.read(ptr, &mut buf) {
            true => Ok(buf),
            false => Err(errno::FAULT),
        }
    }
    fn put(&mut self, ptr: u32, data: &[u8]) -> Result<(), i32> {
        ptr.checked_add(data.len() as u32).ok_or(errno::FAULT)?;
        match self.0.write(ptr, data) {
            true => Ok(()),
            false => Err(errno::FAULT),
        }
    }
    fn put_u32(&mut self, ptr: u32, v: u32) -> Result<(), i32> {
        self.put(ptr, &v.to_le_bytes())
    }
    fn put_u64(&mut self, ptr: u32, v: u64) -> Result<(), i32> {
        self.put(ptr, &v.to_le_bytes())
    }
    /// The (pointer, length) pairs of an iovec array.
    fn iovecs(&self, iovs: u32, count: u32) -> Result<Vec<(u32, u32)>, i32> {
        let raw = self.bytes(iovs, count.checked_mul(8).ok_or(errno::FAULT)?)?;
        Ok(raw
            .chunks_exact(8)
            .map(|c| {
                let word = |i: usize| u32::from_le_bytes([c[i], c[i + 1], c[i + 2], c[i + 3]]);
                (word(0), word(4))
            })
            .collect())
    }
    fn text(&self, ptr: u32, len: u32) -> Result<String, i32> {
        String::from_utf8(self.bytes(ptr, len)?).map_err(|_| errno::INVAL)
    }
}

/// A relative path inside the preopened directory, normalised (`a/./b` is
/// `a/b`); one that climbs out of it is not the module's to open.
fn resolve(dir: &str, path: &str) -> Result<String, i32> {
    let mut parts: Vec<&str> = dir.split('/').filter(|p| !p.is_empty()).collect();
    if path.starts_with('/') {
        return Err(errno::NOTCAPABLE);
    }
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop().ok_or(errno::NOTCAPABLE)?;
            }
            p => parts.push(p),
        }
    }
    Ok(parts.join("/"))
}

impl Host {
    /// Serve one import call. `args` are the call's values as raw bits
    /// (an i32 zero-extended). `Err(Stopped)` ends the run: why is in
    /// [`Host::stop`], and the engine unwinds with a trap.
    pub fn call(
        &mut self,
        func: Func,
        args: &[u64],
        memory: &mut dyn Memory,
    ) -> Result<Option<i32>, Stopped> {
        let a = |i: usize| args.get(i).copied().unwrap_or(0) as u32;
        let wide = |i: usize| args.get(i).copied().unwrap_or(0);
        let mut mem = Mem(memory);
        if self.running && !matches!(func, Func::BenchStart | Func::BenchEnd) {
            self.timed_calls += 1;
        }
        let errno = match func {
            Func::BenchStart => return self.bench_start().map(|()| None),
            Func::BenchEnd => return self.bench_end().map(|()| None),
            Func::ProcExit => {
                self.halt(Stop::Exit(a(0) as i32));
                return Err(Stopped);
            }
            Func::FdWrite => self.fd_write(&mut mem, a(0), a(1), a(2), a(3))?,
            Func::ArgsSizesGet => sizes(&mut mem, &self.setup.args, a(0), a(1)),
            Func::ArgsGet => strings(&mut mem, &self.setup.args, a(0), a(1)),
            Func::EnvironSizesGet => sizes(&mut mem, &self.setup.env, a(0), a(1)),
            Func::EnvironGet => strings(&mut mem, &self.setup.env, a(0), a(1)),
            Func::ClockResGet => mem.put_u64(a(1), TICK_NS),
            Func::ClockTimeGet => {
                self.clock_ns += TICK_NS;
                mem.put_u64(a(2), self.clock_ns)
            }
            Func::RandomGet => self.random_get(&mut mem, a(0), a(1)),
            Func::SchedYield => Ok(()),
            Func::PollOneoff => self.poll_oneoff(&mut mem, a(0), a(1), a(2), a(3)),
            Func::FdClose => match self.fd(a(0)) {
                Ok(_) => {
                    self.fds[a(0) as usize] = None;
                    Ok(())
                }
                Err(e) => Err(e),
            },
            Func::FdSync | Func::FdFdstatSetFlags => self.fd(a(0)).map(|_| ()),
            Func::FdFdstatGet => self.fdstat(&mut mem, a(0), a(1)),
            Func::FdFilestatGet => {
                let fd = self.fd(a(0)).cloned();
                fd.and_then(|fd| self.filestat(&mut mem, &fd, a(1)))
            }
            Func::FdPrestatGet => match self.fd(a(0)) {
                Ok(Fd::Dir(d)) if d.is_empty() && a(0) == 3 => mem
                    .put_u32(a(1), 0)
                    .and_then(|()| mem.put_u32(a(1) + 4, super::PREOPEN.len() as u32)),
                _ => Err(errno::BADF),
            },
            Func::FdPrestatDirName => match self.fd(a(0)) {
                Ok(Fd::Dir(d)) if d.is_empty() && a(0) == 3 => {
                    let name = super::PREOPEN.as_bytes();
                    let n = (a(2) as usize).min(name.len());
                    mem.put(a(1), &name[..n])
                }
                _ => Err(errno::BADF),
            },
            Func::FdRead => self.fd_read(&mut mem, a(0), a(1), a(2), a(3), None),
            Func::FdPread => self.fd_read(&mut mem, a(0), a(1), a(2), a(4), Some(wide(3))),
            Func::FdSeek => self.fd_seek(&mut mem, a(0), wide(1) as i64, a(2), a(3)),
            Func::FdTell => self.fd_seek(&mut mem, a(0), 0, 1, a(1)),
            Func::PathFilestatGet => {
                let path = self.path(&mem, a(0), a(2), a(3));
                path.and_then(|p| self.lookup(&p))
                    .and_then(|fd| self.filestat(&mut mem, &fd, a(4)))
            }
            Func::PathOpen => self.path_open(&mut mem, args),
        };
        Ok(Some(errno.err().unwrap_or(errno::SUCCESS)))
    }

    fn bench_start(&mut self) -> Result<(), Stopped> {
        if self.starts > 0 {
            self.fault("called bench.start a second time".into());
            return Err(Stopped);
        }
        self.starts += 1;
        self.start_meter();
        Ok(())
    }

    fn bench_end(&mut self) -> Result<(), Stopped> {
        if self.starts == 0 {
            self.fault("called bench.end before bench.start".into());
            return Err(Stopped);
        }
        if self.ends > 0 {
            self.fault("called bench.end a second time".into());
            return Err(Stopped);
        }
        self.stop_meter();
        self.ends += 1;
        Ok(())
    }

    fn fd(&self, fd: u32) -> Result<&Fd, i32> {
        self.fds
            .get(fd as usize)
            .and_then(Option::as_ref)
            .ok_or(errno::BADF)
    }

    fn fd_write(
        &mut self,
        mem: &mut Mem,
        fd: u32,
        iovs: u32,
        count: u32,
        written: u32,
    ) -> Result<Result<(), i32>, Stopped> {
        let to_stdout = match self.fd(fd) {
            Ok(Fd::Stdout) => true,
            Ok(Fd::Stderr) => false,
            Ok(Fd::File { .. } | Fd::Dir(_) | Fd::Stdin) => return Ok(Err(errno::BADF)),
            Err(e) => return Ok(Err(e)),
        };
        let vecs = match mem.iovecs(iovs, count) {
            Ok(v) => v,
            Err(e) => return Ok(Err(e)),
        };
        let mut total = 0u32;
        for (ptr, len) in vecs {
            let data = match mem.bytes(ptr, len) {
                Ok(d) => d,
                Err(e) => return Ok(Err(e)),
            };
            if self.stdout.len() + self.stderr.len() + data.len() > self.setup.output_cap {
                let cap = self.setup.output_cap;
                self.fault(format!(
                    "wrote more than the output cap of {cap} bytes to stdout and stderr"
                ));
                return Err(Stopped);
            }
            let out = if to_stdout {
                &mut self.stdout
            } else {
                &mut self.stderr
            };
            out.extend_from_slice(&data);
            total = total.wrapping_add(len);
        }
        Ok(mem.put_u32(written, total))
    }

    fn fd_read(
        &mut self,
        mem: &mut Mem,
        fd: u32,
        iovs: u32,
        count: u32,
        read: u32,
        at: Option<u64>,
    ) -> Result<(), i32> {
        let vecs = mem.iovecs(iovs, count)?;
        let slot = self.fds.get_mut(fd as usize).and_then(Option::as_mut);
        let (data, pos) = match slot {
            Some(Fd::File { data, pos }) => (data.clone(), pos),
            Some(Fd::Stdin) => return mem.put_u32(read, 0),
            Some(Fd::Dir(_)) => return Err(errno::ISDIR),
            _ => return Err(errno::BADF),
        };
        let mut offset = at.unwrap_or(*pos);
        let mut total = 0u32;
        for (ptr, len) in vecs {
            let from = (offset.min(data.len() as u64)) as usize;
            let n = (len as usize).min(data.len() - from);
            mem.put(ptr, &data[from..from + n])?;
            offset += n as u64;
            total += n as u32;
            if n < len as usize {
                break;
            }
        }
        if at.is_none() {
            *pos = offset;
        }
        mem.put_u32(read, total)
    }

    fn fd_seek(
        &mut self,
        mem: &mut Mem,
        fd: u32,
        offset: i64,
        whence: u32,
        out: u32,
    ) -> Result<(), i32> {
        let Some(Fd::File { data, pos }) = self.fds.get_mut(fd as usize).and_then(Option::as_mut)
        else {
            return match self.fd(fd) {
                Ok(_) => Err(errno::SPIPE),
                Err(e) => Err(e),
            };
        };
        let base = match whence {
            0 => 0,
            1 => *pos as i64,
            2 => data.len() as i64,
            _ => return Err(errno::INVAL),
        };
        let new = base.checked_add(offset).filter(|n| *n >= 0);
        let new = new.ok_or(errno::INVAL)? as u64;
        *pos = new;
        mem.put_u64(out, new)
    }

    fn fdstat(&self, mem: &mut Mem, fd: u32, out: u32) -> Result<(), i32> {
        let kind = match self.fd(fd)? {
            Fd::Stdin | Fd::Stdout | Fd::Stderr => CHARACTER_DEVICE,
            Fd::Dir(_) => DIRECTORY,
            Fd::File { .. } => REGULAR_FILE,
        };
        let mut stat = [0u8; 24];
        stat[0] = kind;
        stat[8..16].copy_from_slice(&ALL_RIGHTS.to_le_bytes());
        stat[16..24].copy_from_slice(&ALL_RIGHTS.to_le_bytes());
        mem.put(out, &stat)
    }

    fn filestat(&self, mem: &mut Mem, fd: &Fd, out: u32) -> Result<(), i32> {
        let (kind, size) = match fd {
            Fd::Stdin | Fd::Stdout | Fd::Stderr => (CHARACTER_DEVICE, 0),
            Fd::Dir(_) => (DIRECTORY, 0),
            Fd::File { data, .. } => (REGULAR_FILE, data.len() as u64),
        };
        let mut stat = [0u8; 64];
        stat[16] = kind;
        stat[24..32].copy_from_slice(&1u64.to_le_bytes());
        stat[32..40].copy_from_slice(&size.to_le_bytes());
        for at in [40, 48, 56] {
            stat[at..at + 8].copy_from_slice(&super::EPOCH_NS.to_le_bytes());
        }
        mem.put(out, &stat)
    }

    /// The path `ptr, len` relative to the directory `dirfd`, resolved.
    fn path(&self, mem: &Mem, dirfd: u32, ptr: u32, len: u32) -> Result<String, i32> {
        let Fd::Dir(dir) = self.fd(dirfd)? else {
            return Err(errno::NOTDIR);
        };
        resolve(dir, &mem.text(ptr, len)?)
    }

    /// What is at a resolved path: a file, or a directory (one that holds
    /// a file, or the preopened one).
    fn lookup(&mut self, path: &str) -> Result<Fd, i32> {
        self.looked_up.insert(path.to_string());
        if let Some(data) = self.setup.files.get(path) {
            return Ok(Fd::File {
                data: data.clone(),
                pos: 0,
            });
        }
        let prefix = format!("{path}/");
        if path.is_empty() || self.setup.files.keys().any(|k| k.starts_with(&prefix)) {
            return Ok(Fd::Dir(path.to_string()));
        }
        Err(errno::NOENT)
    }

    fn path_open(&mut self, mem: &mut Mem, args: &[u64]) -> Result<(), i32> {
        let a = |i: usize| args.get(i).copied().unwrap_or(0) as u32;
        let path = self.path(mem, a(0), a(2), a(3))?;
        let (oflags, fdflags) = (a(4), a(7));
        const CREAT: u32 = 1;
        const DIRECTORY_FLAG: u32 = 2;
        const TRUNC: u32 = 8;
        const APPEND: u32 = 1;
        if oflags & (CREAT | TRUNC) != 0 || fdflags & APPEND != 0 {
            // The inputs are the module's to read, never to change.
            return Err(errno::ROFS);
        }
        let fd = self.lookup(&path)?;
        if oflags & DIRECTORY_FLAG != 0 && !matches!(fd, Fd::Dir(_)) {
            return Err(errno::NOTDIR);
        }
        let slot = match self.fds.iter().position(Option::is_none) {
            Some(i) => i,
            None => {
                self.fds.push(None);
                self.fds.len() - 1
            }
        };
        mem.put_u32(a(8), slot as u32)?;
        self.fds[slot] = Some(fd);
        Ok(())
    }

    fn random_get(&mut self, mem: &mut Mem, ptr: u32, len: u32) -> Result<(), i32> {
        // Checked before any byte is drawn: the stream stays the same for
        // a call that faults.
        mem.inside(ptr, len)?;
        let mut buf = vec![0u8; len as usize];
        for b in &mut buf {
            // xorshift64*: the same bytes in every run of every engine.
            self.random ^= self.random >> 12;
            self.random ^= self.random << 25;
            self.random ^= self.random >> 27;
            *b = (self.random.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 56) as u8;
        }
        mem.put(ptr, &buf)
    }

    /// Every subscription is ready at once: a clock's timeout passes on the
    /// host's clock (so a sleep ends without waiting), a descriptor is ready
    /// for its read or write.
    fn poll_oneoff(
        &mut self,
        mem: &mut Mem,
        subs: u32,
        events: u32,
        count: u32,
        out: u32,
    ) -> Result<(), i32> {
        const SUB: u32 = 48;
        const EVENT: u32 = 32;
        for i in 0..count {
            let sub = mem.bytes(subs + i * SUB, SUB)?;
            let tag = sub[8];
            if tag == 0 {
                let timeout = u64::from_le_bytes(sub[24..32].try_into().unwrap_or([0; 8]));
                let absolute = sub[40] & 1 != 0;
                self.clock_ns = if absolute {
                    self.clock_ns.max(timeout)
                } else {
                    self.clock_ns.saturating_add(timeout)
                };
            }
            let mut event = [0u8; EVENT as usize];
            event[..8].copy_from_slice(&sub[..8]);
            event[10] = tag;
            mem.put(events + i * EVENT, &event)?;
        }
        mem.put_u32(out, count)
    }
}

/// `*_sizes_get`: how many strings, and their bytes with a NUL each.
fn sizes(mem: &mut Mem, list: &[String], count: u32, bytes: u32) -> Result<(), i32> {
    let total: usize = list.iter().map(|s| s.len() + 1).sum();
    mem.put_u32(count, list.len() as u32)?;
    mem.put_u32(bytes, total as u32)
}

/// `args_get`, `environ_get`: the pointers, then the NUL-ended strings.
fn strings(mem: &mut Mem, list: &[String], ptrs: u32, buf: u32) -> Result<(), i32> {
    let mut at = buf;
    for (i, s) in list.iter().enumerate() {
        mem.put_u32(ptrs + 4 * i as u32, at)?;
        mem.put(at, s.as_bytes())?;
        mem.put(at + s.len() as u32, &[0])?;
        at += s.len() as u32 + 1;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn host(files: &[(&str, &[u8])]) -> Host {
        let setup = super::super::Setup {
            args: vec!["prog".into(), "-n".into()],
            files: files
                .iter()
                .map(|(k, v)| (k.to_string(), Arc::new(v.to_vec())))
                .collect(),
            output_cap: 16,
            ..Default::default()
        };
        Host::new(Arc::new(setup), None)
    }

    #[test]
    fn paths_stay_inside_the_directory() {
        assert_eq!(resolve("", "./a/../b.txt"), Ok("b.txt".into()));
        assert_eq!(resolve("d", "x"), Ok("d/x".into()));
        assert_eq!(resolve("", "../etc/passwd"), Err(errno::NOTCAPABLE));
        assert_eq!(resolve("", "/etc/passwd"), Err(errno::NOTCAPABLE));
    }

    #[test]
    fn a_file_is_opened_read_and_seeked_by_relative_path() {
        let mut h = host(&[("in/data.txt", b"hello world")]);
        let mut mem = vec![0u8; 256];
        mem[100..111].copy_from_slice(b"in/data.txt");
        let open = [3, 0, 100, 11, 0, 0, 0, 0, 200];
        assert_eq!(
            h.call(Func::PathOpen, &open, &mut Slice(&mut mem)),
            Ok(Some(0))
        );
        let fd = u32::from_le_bytes(mem[200..204].try_into().unwrap());
        assert_eq!(fd, 4);
        // One iovec of 5 bytes at 50.
        mem[0..4].copy_from_slice(&50u32.to_le_bytes());
        mem[4..8].copy_from_slice(&5u32.to_le_bytes());
        let read = [fd as u64, 0, 1, 40];
        assert_eq!(
            h.call(Func::FdRead, &read, &mut Slice(&mut mem)),
            Ok(Some(0))
        );
        assert_eq!(&mem[50..55], b"hello");
        assert_eq!(
            h.call(Func::FdRead, &read, &mut Slice(&mut mem)),
            Ok(Some(0))
        );
        assert_eq!(&mem[50..55], b" worl");
        let seek = [fd as u64, (-3i64) as u64, 2, 60];
        assert_eq!(
            h.call(Func::FdSeek, &seek, &mut Slice(&mut mem)),
            Ok(Some(0))
        );
        assert_eq!(mem[60], 8);
        // Writing is refused, a missing file is NOENT, escaping NOTCAPABLE.
        let create = [3, 0, 100, 11, 1, 0, 0, 0, 200];
        assert_eq!(
            h.call(Func::PathOpen, &create, &mut Slice(&mut mem)),
            Ok(Some(errno::ROFS))
        );
        mem[100..103].copy_from_slice(b"in/");
        let missing = [3, 0, 100, 4, 0, 0, 0, 0, 200];
        assert_eq!(
            h.call(Func::PathOpen, &missing, &mut Slice(&mut mem)),
            Ok(Some(errno::NOENT))
        );
        mem[100..102].copy_from_slice(b"..");
        let out = [3, 0, 100, 2, 0, 0, 0, 0, 200];
        assert_eq!(
            h.call(Func::PathOpen, &out, &mut Slice(&mut mem)),
            Ok(Some(errno::NOTCAPABLE))
        );
    }

    #[test]
    fn a_length_past_memory_is_a_fault_before_anything_is_allocated() {
        let mut h = host(&[]);
        let mut mem = vec![0u8; 64];
        // One iovec of 4 GiB - 1 at 16.
        mem[0..4].copy_from_slice(&16u32.to_le_bytes());
        mem[4..8].copy_from_slice(&u32::MAX.to_le_bytes());
        let write = [1, 0, 1, 8];
        assert_eq!(
            h.call(Func::FdWrite, &write, &mut Slice(&mut mem)),
            Ok(Some(errno::FAULT))
        );
        let random = [0, u32::MAX as u64];
        assert_eq!(
            h.call(Func::RandomGet, &random, &mut Slice(&mut mem)),
            Ok(Some(errno::FAULT))
        );
        assert!(h.stdout.is_empty());
    }

    #[test]
    fn output_past_the_cap_stops_the_run() {
        let mut h = host(&[]);
        let mut mem = vec![0u8; 64];
        mem[0..4].copy_from_slice(&16u32.to_le_bytes());
        mem[4..8].copy_from_slice(&10u32.to_le_bytes());
        let write = [1, 0, 1, 8];
        assert_eq!(
            h.call(Func::FdWrite, &write, &mut Slice(&mut mem)),
            Ok(Some(0))
        );
        assert_eq!(h.stdout.len(), 10);
        assert_eq!(
            h.call(Func::FdWrite, &write, &mut Slice(&mut mem)),
            Err(Stopped)
        );
        assert!(matches!(&h.stop, Some(Stop::Fault(w)) if w.contains("output cap of 16")));
    }

    #[test]
    fn markers_are_each_called_once_in_order() {
        let mut h = host(&[]);
        assert_eq!(
            h.call(Func::BenchEnd, &[], &mut Slice(&mut [])),
            Err(Stopped)
        );
        let mut h = host(&[]);
        assert_eq!(h.call(Func::BenchStart, &[], &mut Slice(&mut [])), Ok(None));
        assert_eq!(
            h.call(Func::BenchStart, &[], &mut Slice(&mut [])),
            Err(Stopped)
        );
        assert!(matches!(&h.stop, Some(Stop::Fault(w)) if w.contains("bench.start a second")));
    }

    #[test]
    fn arguments_are_laid_out_as_wasi_libc_reads_them() {
        let mut h = host(&[]);
        let mut mem = vec![0u8; 64];
        assert_eq!(
            h.call(Func::ArgsSizesGet, &[0, 4], &mut Slice(&mut mem)),
            Ok(Some(0))
        );
        assert_eq!(&mem[0..8], &[2, 0, 0, 0, 8, 0, 0, 0]);
        assert_eq!(
            h.call(Func::ArgsGet, &[8, 16], &mut Slice(&mut mem)),
            Ok(Some(0))
        );
        assert_eq!(&mem[8..16], &[16, 0, 0, 0, 21, 0, 0, 0]);
        assert_eq!(&mem[16..24], b"prog\0-n\0");
    }
}
