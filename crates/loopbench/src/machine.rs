//! The machine a session ran on: results are only meaningful with it.

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
}

fn read(path: &str) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
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
        }
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
