//! The machine a session ran on: results are only meaningful with it.
//!
//! The fingerprint is what decides whether two saved sessions can be
//! compared at all: CPU model and microcode, cores and SMT, the frequency
//! governor and boost (where the kernel exposes them; VMs often do not),
//! kernel, the rustc that built loopbench (recorded at build time by
//! `build.rs`, so it is the compiler of the measuring binary, not whatever
//! `rustc` is on the PATH later) and loopbench's own version. Fields added
//! after schema 2 was first written default to `None` when an older file is
//! read. [`Machine::differences`] is the one mismatch check.

use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Machine {
    pub cpu: String,
    pub cores: usize,
    pub os: String,
    pub arch: String,
    pub hostname: String,
    /// 1-, 5- and 15-minute load averages when the session started.
    pub load_start: Option<[f64; 3]>,
    /// The same when it ended (or at the last completed shape).
    pub load_end: Option<[f64; 3]>,
    /// CPU microcode revision (`/proc/cpuinfo`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub microcode: Option<String>,
    /// Physical cores and hardware threads per core (SMT), from the CPU
    /// topology in sysfs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub physical_cores: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threads_per_core: Option<usize>,
    /// cpufreq scaling governor of cpu0, where exposed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub governor: Option<String>,
    /// Turbo/boost `on` or `off`, where exposed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub boost: Option<String>,
    /// The kernel's build string (`/proc/sys/kernel/version`); the release
    /// is in `os`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel: Option<String>,
    /// `rustc --version` of the compiler that built this loopbench.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rustc: Option<String>,
    /// loopbench's own version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loopbench: Option<String>,
}

/// One fingerprint field that differs between two machines.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mismatch {
    pub field: &'static str,
    pub a: String,
    pub b: String,
}

impl std::fmt::Display for Mismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {} vs {}", self.field, self.a, self.b)
    }
}

fn read(path: &str) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
}

fn cpuinfo_field(name: &str) -> Option<String> {
    read("/proc/cpuinfo")?.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        (k.trim() == name).then(|| v.trim().to_string())
    })
}

/// Physical cores and threads per core: distinct (package, core) pairs
/// over the online CPUs' sysfs topology.
fn topology() -> Option<(usize, usize)> {
    let mut cores = std::collections::BTreeSet::new();
    let mut threads = 0usize;
    for entry in std::fs::read_dir("/sys/devices/system/cpu").ok()?.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        let Some(n) = name.strip_prefix("cpu") else {
            continue;
        };
        if n.is_empty() || !n.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let dir = entry.path().join("topology");
        let (Some(pkg), Some(core)) = (
            read(&dir.join("physical_package_id").to_string_lossy()),
            read(&dir.join("core_id").to_string_lossy()),
        ) else {
            continue;
        };
        cores.insert((pkg, core));
        threads += 1;
    }
    (!cores.is_empty()).then(|| (cores.len(), threads.div_ceil(cores.len())))
}

/// Boost as the kernel exposes it: the generic cpufreq switch, or
/// intel_pstate's inverted one.
fn boost() -> Option<String> {
    let onoff = |b: bool| if b { "on" } else { "off" }.to_string();
    if let Some(v) = read("/sys/devices/system/cpu/cpufreq/boost") {
        return Some(onoff(v == "1"));
    }
    read("/sys/devices/system/cpu/intel_pstate/no_turbo").map(|v| onoff(v == "0"))
}

pub fn load_average() -> Option<[f64; 3]> {
    let text = read("/proc/loadavg")?;
    let mut it = text.split_whitespace().map(|x| x.parse::<f64>().ok());
    Some([it.next()??, it.next()??, it.next()??])
}

impl Machine {
    pub fn read() -> Self {
        let cpu = read("/proc/cpuinfo")
            .and_then(|t| {
                t.lines()
                    .find(|l| {
                        l.starts_with("model name")
                            || l.starts_with("Model")
                            || l.starts_with("Hardware")
                    })
                    .and_then(|l| l.split_once(':').map(|(_, v)| v.trim().to_string()))
            })
            .unwrap_or_else(|| "unknown".into());
        let os = format!(
            "{} {}",
            read("/proc/sys/kernel/ostype").unwrap_or_else(|| std::env::consts::OS.into()),
            read("/proc/sys/kernel/osrelease").unwrap_or_default()
        );
        Machine {
            cpu,
            cores: std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1),
            os: os.trim().to_string(),
            arch: std::env::consts::ARCH.to_string(),
            hostname: read("/proc/sys/kernel/hostname").unwrap_or_default(),
            load_start: load_average(),
            load_end: None,
            microcode: cpuinfo_field("microcode"),
            physical_cores: topology().map(|t| t.0),
            threads_per_core: topology().map(|t| t.1),
            governor: read("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"),
            boost: boost(),
            kernel: read("/proc/sys/kernel/version"),
            rustc: Some(crate::versions::RUSTC.to_string()).filter(|v| !v.is_empty()),
            loopbench: Some(env!("CARGO_PKG_VERSION").to_string()),
        }
    }

    /// The fingerprint fields that differ and that move timings: hardware,
    /// microcode, frequency policy, kernel, compiler and loopbench itself
    /// (not the hostname or the load). A field unknown on either side (an
    /// older file, a VM that hides it) is not counted as a difference.
    pub fn differences(&self, other: &Machine) -> Vec<Mismatch> {
        let mut out = Vec::new();
        let mut check = |field: &'static str, a: Option<String>, b: Option<String>| {
            if let (Some(a), Some(b)) = (a, b) {
                if a != b {
                    out.push(Mismatch { field, a, b });
                }
            }
        };
        check("cpu", Some(self.cpu.clone()), Some(other.cpu.clone()));
        check("arch", Some(self.arch.clone()), Some(other.arch.clone()));
        check(
            "cores",
            Some(self.cores.to_string()),
            Some(other.cores.to_string()),
        );
        check("microcode", self.microcode.clone(), other.microcode.clone());
        let n = |x: Option<usize>| x.map(|v| v.to_string());
        check(
            "physical cores",
            n(self.physical_cores),
            n(other.physical_cores),
        );
        check(
            "threads per core",
            n(self.threads_per_core),
            n(other.threads_per_core),
        );
        check("governor", self.governor.clone(), other.governor.clone());
        check("boost", self.boost.clone(), other.boost.clone());
        check("os", Some(self.os.clone()), Some(other.os.clone()));
        check("kernel", self.kernel.clone(), other.kernel.clone());
        check("rustc", self.rustc.clone(), other.rustc.clone());
        check("loopbench", self.loopbench.clone(), other.loopbench.clone());
        out
    }

    /// The whole fingerprint in one line (for reports).
    pub fn fingerprint(&self) -> String {
        let mut parts = vec![self.cpu.clone()];
        if let Some(m) = &self.microcode {
            parts.push(format!("microcode {m}"));
        }
        parts.push(match (self.physical_cores, self.threads_per_core) {
            (Some(c), Some(t)) => format!("{} cores ({c} x {t} SMT)", self.cores),
            _ => format!("{} cores", self.cores),
        });
        if let Some(g) = &self.governor {
            parts.push(format!("governor {g}"));
        }
        if let Some(b) = &self.boost {
            parts.push(format!("boost {b}"));
        }
        parts.push(format!("{} {}", self.arch, self.os));
        if let Some(r) = &self.rustc {
            parts.push(r.clone());
        }
        if let Some(v) = &self.loopbench {
            parts.push(format!("loopbench {v}"));
        }
        parts.join(", ")
    }

    pub fn finish(&mut self) {
        self.load_end = load_average();
    }

    pub fn summary(&self) -> String {
        let load = |l: Option<[f64; 3]>| {
            l.map(|l| format!("{:.2}", l[0]))
                .unwrap_or_else(|| "?".into())
        };
        format!(
            "{} ({} cores, {}, {}), load {} -> {}",
            self.cpu,
            self.cores,
            self.arch,
            self.os,
            load(self.load_start),
            load(self.load_end)
        )
    }
}
