//! A session's results, as kept: owned data that serialises to the JSON
//! schema and reads back from it (every schema version written so far), so
//! any saved session can be reported again, compared or stored. This file
//! holds the session's own part (its id, what it was asked, its machine,
//! engines, epochs and schedule); each shape's part is in `shape.rs`.

use super::shape::{Metric, ShapeResult, NULL_SUFFIX};
use crate::machine::Machine;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// An arm's build as history and compare match it: its version without
/// the layout variant that versions of sessions before 2026-12-04 named
/// (`..., layout variant 118041414]`: whichever variant ran last, not the
/// build, so two sessions of one build did not match).
pub fn build_identity(version: &str) -> String {
    const MARK: &str = ", layout variant ";
    let mut out = version.to_string();
    while let Some(at) = out.find(MARK) {
        let digits = out[at + MARK.len()..]
            .bytes()
            .take_while(u8::is_ascii_digit)
            .count();
        if digits == 0 {
            break;
        }
        out.replace_range(at..at + MARK.len() + digits, "");
    }
    out
}

impl SessionInfo {
    /// The baseline's label (its spec unless the plan named it).
    pub fn baseline_label(&self) -> String {
        self.null_arm
            .strip_suffix(NULL_SUFFIX)
            .unwrap_or(&self.baseline)
            .to_string()
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SessionInfo {
    /// Measured rounds per epoch (schema 1: per shape, one process).
    pub rounds: usize,
    pub warmup: usize,
    pub baseline: String,
    pub null_arm: String,
    pub bytes: u64,
    pub k: u32,
    pub iters_override: Option<u64>,
    pub engines: Vec<EngineInfo>,
    pub build_profile: String,
    pub confidence_level: f64,
    /// The order of arms in a round, in words.
    pub rotation: String,
    /// The order design and the seed of its per-epoch relabelling.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub order: Option<Design>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// Arms one at a time, or in duets (absent in documents from before
    /// duets: sequential).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule: Option<Schedule>,
    /// `workers` (every arm in a fresh process per epoch) or `in-process`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub isolation: Option<String>,
    /// The layout randomisations inside each worker (`env`, `stack`, `heap`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub randomised: Option<String>,
    /// The core the timing threads were pinned to, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pinned_cpu: Option<usize>,
    /// The metric verdicts are taken on.
    #[serde(default)]
    pub metric: Metric,
    /// The stop rule: epochs at least/at most, the precision sought (interval
    /// half-width, percent) and each shape's time budget (seconds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_rule: Option<StopSettings>,
    /// Target duration of one rep of the slowest arm, in milliseconds (the
    /// iteration count comes from a pilot call), when not fixed by --iters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rep_ms: Option<f64>,
    /// Layout variants per build arm (`--layout-builds`); absent in older
    /// files and when the session had no build arm.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layout_builds: Option<usize>,
    /// Why the engines compiled into this binary ran in one code layout
    /// although the session sampled layouts (no toolchain or target
    /// directory to relink them from): their intervals have no build
    /// component.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub one_layout: Option<String>,
    /// The arm every result is also given as a ratio to (`--reference`):
    /// the yardstick that carries across sessions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference: Option<String>,
    /// The setting recorded for this machine that the session took
    /// (`noise --record`), described; absent when flags or defaults chose.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub setting: Option<String>,
    /// Seconds the whole session might take (`--session-budget`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_budget_s: Option<f64>,
    /// How each epoch's rounds were reduced to one log ratio before the
    /// interval across epochs (`--estimator`); absent in older files, which
    /// took the median.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub estimator: Option<String>,
}

impl SessionInfo {
    /// The estimator the session's comparisons used (older files: the
    /// median; a name this build does not know: the median, as then).
    pub fn estimator(&self) -> crate::stats::estimators::Estimator {
        self.estimator
            .as_deref()
            .and_then(|e| e.parse().ok())
            .unwrap_or(crate::stats::estimators::DEFAULT)
    }
}

/// When a shape stops taking epochs: the stop rule, recorded as it ran.
pub use crate::stats::stop::StopRule as StopSettings;

/// One epoch: the worker processes it ran in.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct EpochRecord {
    pub epoch: usize,
    /// Process id of each arm's worker (absent in-process).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub pids: BTreeMap<String, u32>,
    pub shapes: Vec<String>,
    pub seconds: f64,
    /// The layout variant (seed) each build arm ran in this epoch.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub variants: BTreeMap<String, u64>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct EngineInfo {
    pub arm: String,
    pub version: String,
    /// For a `path:` build arm: the checkout's git revision and whether it
    /// had uncommitted changes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git: Option<GitRevision>,
    /// For a build arm run in layout variants: which, and how far the
    /// engine's code moved between them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layout: Option<super::layout::Variants>,
}

/// A source checkout as it was when the session ran.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct GitRevision {
    pub rev: String,
    pub dirty: bool,
}

impl GitRevision {
    /// The revision of the git checkout holding `dir`, or `None` when it is
    /// not one (or git is missing).
    pub fn of(dir: &std::path::Path) -> Option<Self> {
        let git = |args: &[&str]| {
            crate::children::die_with_parent(&mut std::process::Command::new("git"))
                .arg("-C")
                .arg(dir)
                .args(args)
                .output()
                .ok()
                .filter(|o| o.status.success())
                .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        };
        let rev = git(&["rev-parse", "HEAD"])?;
        let dirty = !git(&["status", "--porcelain", "--untracked-files=no"])?.is_empty();
        Some(GitRevision { rev, dirty })
    }
}

impl std::fmt::Display for GitRevision {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let short: String = self.rev.chars().take(12).collect();
        write!(f, "{short}{}", if self.dirty { "-dirty" } else { "" })
    }
}

/// The whole session as reported and saved.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Session {
    pub schema: String,
    /// A unique id of this session (time and process based); older files
    /// have none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The command line that ran it (argv), to reproduce it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub command: Vec<String>,
    pub machine: Machine,
    pub session: SessionInfo,
    /// Each requested counter: available or not, and why.
    pub counters: Vec<CounterStatus>,
    pub results: Vec<ShapeResult>,
    /// False while the session runs and when it stopped early.
    pub complete: bool,
    pub errors: Vec<String>,
    pub wall_seconds: f64,
    /// Every epoch, in order (empty in schema 1).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub epochs: Vec<EpochRecord>,
    /// The result of `--fail-on`, when it was given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gate: Option<super::gate::Gate>,
}

/// A new session id: start time in nanoseconds since the epoch and the
/// process id, in hex (unique on one machine, sortable by time).
pub fn new_session_id() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    format!("{nanos:x}-{:x}", std::process::id())
}

/// When a session started, in seconds since the epoch, read back from an
/// id [`new_session_id`] made; `None` for any other id (older files, ids
/// given by hand) or a time outside 2000-2200.
pub fn started_at(id: &str) -> Option<f64> {
    let (nanos, pid) = id.split_once('-')?;
    u32::from_str_radix(pid, 16).ok()?;
    let secs = u128::from_str_radix(nanos, 16).ok()? as f64 / 1e9;
    (946_684_800.0..7_258_118_400.0)
        .contains(&secs)
        .then_some(secs)
}

impl Session {
    /// The command that reproduces this session, shell-quoted, with the
    /// program named `loopbench` (the path it ran from is local).
    pub fn command_line(&self) -> Option<String> {
        let (_, args) = self.command.split_first()?;
        let mut words = vec!["loopbench".to_string()];
        words.extend(args.iter().map(|a| shell_quote(a)));
        Some(words.join(" "))
    }
}

/// `s` as one shell word that a terminal shows as it is: plain, in single
/// quotes, or, when it holds control characters, in ANSI-C quotes (`$'...'`,
/// POSIX.1-2024, bash, zsh, ksh) with each byte as a three-digit octal
/// escape (a hex one may swallow the next character), which the shell turns
/// back into the same byte: a pasted command names the same file.
pub fn shell_quote(s: &str) -> String {
    if !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./=:,@+%".contains(&b))
    {
        s.to_string()
    } else if s.chars().any(char::is_control) {
        let mut word = String::from("$'");
        for c in s.chars() {
            match c {
                '\\' | '\'' => {
                    word.push('\\');
                    word.push(c);
                }
                c if c.is_control() => {
                    let mut bytes = [0; 4];
                    for b in c.encode_utf8(&mut bytes).bytes() {
                        word.push_str(&format!("\\{b:03o}"));
                    }
                }
                c => word.push(c),
            }
        }
        word.push('\'');
        word
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

pub use crate::measure::counters::CounterStatus;

/// When arms run relative to each other.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "name", rename_all = "snake_case")]
pub enum Schedule {
    /// One arm at a time, in the order's sequence.
    #[default]
    Sequential,
    /// Duet benchmarking: the baseline and one other arm at the same
    /// moment, each on one of `cores`, swapped every round; every arm
    /// (the null control too) meets the baseline once per round.
    Duet { cores: [usize; 2] },
}

impl Schedule {
    pub fn name(&self) -> &'static str {
        match self {
            Schedule::Sequential => "sequential",
            Schedule::Duet { .. } => "duet",
        }
    }

    /// What a reader of a report needs to know, for a duet (`None`:
    /// sequential, the plain case).
    pub fn note(&self) -> Option<String> {
        match self {
            Schedule::Sequential => None,
            Schedule::Duet { cores: [a, b] } => Some(format!(
                "duet schedule: the baseline ran beside each other arm at the same moment, on cores {a} and {b} (swapped every round); \
the pair shares caches and memory bandwidth, which the null control's duet measures"
            )),
        }
    }
}

/// How the order of arms within a round is chosen. Serialised with its name
/// and parameters, e.g. `{"name":"williams"}` or
/// `{"name":"random","seed":42}`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "name", rename_all = "snake_case")]
pub enum Design {
    #[default]
    /// Williams square(s): slots and immediate predecessors balanced exactly
    /// over every [`Design::period`] rounds.
    Williams,
    /// An independent seeded random permutation per round.
    Random { seed: u64 },
}

impl Session {
    /// Why the session has no number at all, when every arm skipped every
    /// shape: a failure, with the arms' reasons; `None` when anything was
    /// measured.
    pub fn nothing_measured(&self) -> Option<String> {
        let measured = self
            .results
            .iter()
            .any(|r| r.arms.iter().any(|a| a.verified_reps > 0));
        if measured {
            return None;
        }
        let reasons: std::collections::BTreeSet<String> = self
            .results
            .iter()
            .flat_map(|r| r.arms.iter().filter_map(|a| a.skipped.clone()))
            .collect();
        Some(format!(
            "nothing was measured: every arm skips every shape ({})",
            reasons.into_iter().collect::<Vec<_>>().join("; ")
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::{build_identity, new_session_id, started_at};

    #[test]
    fn a_session_id_tells_when_it_started() {
        let id = new_session_id();
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs_f64();
        let t = started_at(&id).unwrap();
        assert!((now - t).abs() < 60.0, "{id}: {t} against {now}");
        let t = started_at("18ee2675f81ec0ee-620f").unwrap();
        assert!((t - 1_796_415_589.483).abs() < 0.001, "{t}");
        for other in ["trend-3", "lut-slowed", "test-session", "ff-1", "x", ""] {
            assert_eq!(started_at(other), None, "{other}");
        }
    }

    #[test]
    fn a_build_is_one_build_whichever_layout_variant_ran_last() {
        let v = |variant: &str| {
            format!("wasmi 2.0.0 [worker: git /w#main commit abc, profile release, adapter wasmi_1x{variant}]")
        };
        let build = v("");
        assert_eq!(build_identity(&v(", layout variant 118041414")), build);
        assert_eq!(build_identity(&v(", layout variant 970663243")), build);
        assert_eq!(build_identity(&build), build);
        // Only a variant's number is removed, not text that looks like it.
        let odd = "mock [note: layout variant x]";
        assert_eq!(build_identity(odd), odd);
        assert_eq!(build_identity("wasm3 0.5.0"), "wasm3 0.5.0");
    }
}
