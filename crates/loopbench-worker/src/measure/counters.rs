//! Which counters a session reads (`--counters`), whether each works here,
//! and why not.
//!
//! `auto` takes every counter that works on this machine without changing
//! how the session runs: TSC cycles and the perf event group. `callgrind`
//! re-executes the session under valgrind and is therefore only taken when
//! asked for, and alone (under valgrind, cycles and times describe the
//! simulator, not the engine).

use super::callgrind::{self, CallgrindCounter, CallgrindSetup};
use super::perf::{self, PerfCounter};
use super::tsc::{self, TscCounter, TscInfo};
use super::{ChoiceError, Counter, MeasureError};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// A counter the user can pick.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CounterKind {
    Tsc,
    Perf,
    Callgrind,
}

impl CounterKind {
    pub const ALL: [CounterKind; 3] = [CounterKind::Tsc, CounterKind::Perf, CounterKind::Callgrind];

    pub fn name(self) -> &'static str {
        match self {
            CounterKind::Tsc => "tsc",
            CounterKind::Perf => "perf",
            CounterKind::Callgrind => "callgrind",
        }
    }

    /// The counter that produces reading `metric` (`callgrind_ir`: callgrind).
    pub fn of_metric(metric: &str) -> Option<CounterKind> {
        CounterKind::ALL
            .into_iter()
            .find(|k| k.metrics().contains(&metric))
    }

    /// The readings this counter produces.
    pub fn metrics(self) -> &'static [&'static str] {
        match self {
            CounterKind::Tsc => &[tsc::NAME],
            CounterKind::Perf => &perf::EVENTS,
            CounterKind::Callgrind => &[callgrind::NAME],
        }
    }
}

impl fmt::Display for CounterKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The value of `--counters`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CounterChoice {
    /// Every counter that works here (TSC and perf).
    Auto,
    None,
    Only(Vec<CounterKind>),
}

impl CounterChoice {
    pub fn wants(&self, kind: CounterKind) -> bool {
        match self {
            CounterChoice::Auto => kind != CounterKind::Callgrind,
            CounterChoice::None => false,
            CounterChoice::Only(list) => list.contains(&kind),
        }
    }
}

impl FromStr for CounterChoice {
    type Err = ChoiceError;
    fn from_str(s: &str) -> Result<Self, ChoiceError> {
        let s = s.trim();
        match s {
            "auto" => return Ok(CounterChoice::Auto),
            "none" => return Ok(CounterChoice::None),
            _ => {}
        }
        let valid = || {
            let names: Vec<_> = CounterKind::ALL.iter().map(|k| k.name()).collect();
            format!("{}, auto, none", names.join(", "))
        };
        let mut list = Vec::new();
        for part in s.split(',').map(str::trim) {
            if part == "auto" || part == "none" {
                // Whole choices on their own, not counters to list.
                return Err(ChoiceError::AloneOnly {
                    name: part.to_string(),
                    spec: s.to_string(),
                });
            }
            if part.is_empty() {
                return Err(ChoiceError::EmptyName {
                    spec: s.to_string(),
                    valid: valid(),
                });
            }
            let kind = CounterKind::ALL
                .into_iter()
                .find(|k| k.name() == part)
                .ok_or_else(|| ChoiceError::Unknown {
                    name: part.to_string(),
                    valid: valid(),
                })?;
            if !list.contains(&kind) {
                list.push(kind);
            }
        }
        if list.contains(&CounterKind::Callgrind) && list.len() > 1 {
            return Err(ChoiceError::CallgrindCombined);
        }
        Ok(CounterChoice::Only(list))
    }
}

// What a counter's availability looks like in results (plain data, kept
// with the results model).
/// One counter's availability, as reported in the table and the JSON
/// `counters` section.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct CounterStatus {
    pub counter: String,
    pub available: bool,
    /// Why it is unavailable (set exactly when `available` is false).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// What it measures and how it was calibrated (when available).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// The readings it produces.
    pub metrics: Vec<String>,
}

/// The resolved counters of a session: what works, and a factory for the
/// counters of each prepared arm.
#[derive(Clone, Debug, Default)]
pub struct CounterSet {
    status: Vec<CounterStatus>,
    tsc: Option<TscInfo>,
    perf: bool,
    callgrind: Option<CallgrindSetup>,
}

impl CounterSet {
    /// No extra counters.
    pub fn none() -> Self {
        CounterSet::default()
    }

    /// Probe the chosen counters. Unavailable ones are kept with a reason;
    /// the session goes on with the rest. In the callgrind child only the
    /// callgrind counter runs.
    pub fn resolve(choice: &CounterChoice) -> Self {
        let mut set = CounterSet::default();
        let status = |kind: CounterKind, r: Result<String, MeasureError>| {
            let (available, detail, reason) = match r {
                Ok(d) => (true, Some(d), None),
                Err(e) => (false, None, Some(e.to_string())),
            };
            CounterStatus {
                counter: kind.name().to_string(),
                available,
                reason,
                detail,
                metrics: kind.metrics().iter().map(|m| m.to_string()).collect(),
            }
        };
        if choice.wants(CounterKind::Callgrind) {
            let r = match callgrind::child_dir() {
                Some(dir) => CallgrindSetup::new(dir).map(|s| {
                    let d = s.describe();
                    set.callgrind = Some(s);
                    d
                }),
                None => Err(MeasureError::NotCallgrindChild),
            };
            set.status.push(status(CounterKind::Callgrind, r));
            return set;
        }
        if choice.wants(CounterKind::Tsc) {
            let r = tsc::probe().map(|info| {
                set.tsc = Some(info);
                info.describe()
            });
            set.status.push(status(CounterKind::Tsc, r));
        }
        if choice.wants(CounterKind::Perf) {
            let r = perf::probe();
            set.perf = r.is_ok();
            set.status.push(status(CounterKind::Perf, r));
        }
        set
    }

    pub fn status(&self) -> &[CounterStatus] {
        &self.status
    }

    pub fn is_callgrind(&self) -> bool {
        self.callgrind.is_some()
    }

    /// Fresh counters for one prepared arm. A perf group that fails to open
    /// now (after the probe succeeded) is left out: its readings are then
    /// absent, never zero.
    pub fn make(&self) -> Vec<Box<dyn Counter>> {
        let mut out: Vec<Box<dyn Counter>> = Vec::new();
        if let Some(cg) = &self.callgrind {
            out.push(Box::new(CallgrindCounter::new(cg)));
        }
        if self.perf {
            if let Ok(p) = PerfCounter::open() {
                out.push(Box::new(p));
            }
        }
        // TSC last: it opens closest to the call and closes first.
        if let Some(info) = &self.tsc {
            out.push(Box::new(TscCounter::new(info)));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn choices_parse() {
        assert_eq!("auto".parse::<CounterChoice>(), Ok(CounterChoice::Auto));
        assert_eq!("none".parse::<CounterChoice>(), Ok(CounterChoice::None));
        assert_eq!(
            "tsc,perf".parse::<CounterChoice>(),
            Ok(CounterChoice::Only(vec![
                CounterKind::Tsc,
                CounterKind::Perf
            ]))
        );
        assert!("tsc,bogus"
            .parse::<CounterChoice>()
            .unwrap_err()
            .to_string()
            .contains("unknown counter `bogus`"));
        assert!("tsc,callgrind"
            .parse::<CounterChoice>()
            .unwrap_err()
            .to_string()
            .contains("cannot be combined"));
        assert!("tsc,".parse::<CounterChoice>().is_err());
        for spec in ["none,callgrind", "tsc,auto"] {
            let e = spec.parse::<CounterChoice>().unwrap_err().to_string();
            assert!(e.contains("cannot be combined with other counters"), "{e}");
        }
        assert!(!CounterChoice::Auto.wants(CounterKind::Callgrind));
    }

    /// Every unavailable counter carries a reason; every available one a
    /// description; and the factory builds only available counters.
    #[test]
    fn unavailable_counters_have_reasons() {
        let set = CounterSet::resolve(&CounterChoice::Only(vec![
            CounterKind::Tsc,
            CounterKind::Perf,
        ]));
        assert_eq!(set.status().len(), 2);
        for s in set.status() {
            assert_eq!(s.available, s.reason.is_none(), "{s:?}");
            assert_eq!(s.available, s.detail.is_some(), "{s:?}");
            if let Some(r) = &s.reason {
                assert!(!r.trim().is_empty());
            }
        }
        let available = set.status().iter().filter(|s| s.available).count();
        assert!(set.make().len() <= available);
        // Outside the valgrind child, callgrind says why it does not count.
        if callgrind::child_dir().is_none() {
            let cg = CounterSet::resolve(&CounterChoice::Only(vec![CounterKind::Callgrind]));
            assert!(!cg.status()[0].available && cg.status()[0].reason.is_some());
            assert!(cg.make().is_empty());
        }
    }
}
