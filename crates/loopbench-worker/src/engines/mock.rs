//! A mock engine for exact tests: it runs the module for real on wasmi (so
//! every shape's setup and verify pass, and a shape whose loop body is
//! disabled still fails verification), but the timed call's wall time is a
//! synthetic, deterministic cost from its options instead of the clock:
//!
//! ```text
//! ns = iters * cost * (1 + effect) * (1 + noise * u(seed, instance, rep))
//!                                  * (1 + layout * v(seed, instance))
//! ```
//!
//! `u` and `v` are uniform in [-1, 1) from a fixed hash (SplitMix64), so a
//! run is the same every time. `instance` numbers the mock instances this
//! thread has created (from 0, in creation order: a session prepares its
//! arms in plan order, the null control last), so the baseline and its null
//! control, which share their options, still draw their own noise and
//! layout. `rep` numbers the instance's timed calls (from 0, warm-up
//! included), which is the session's rep number. Only the wall time is
//! synthetic; other counters (`--counters tsc`) read the real wasmi call.
//!
//! Always compiled in, not behind a `mock` feature: it is a thin layer over
//! wasmi, which is always in, so it costs nothing to build; plain
//! `cargo test` exercises it with no flag to forget (a `required-features`
//! test target is silently skipped without its feature); and the binary
//! that the CLI tests run is the one users get, with no feature unification
//! making `cargo test -p loopbench` and `cargo test --workspace` build
//! different binaries. It is never a default arm, and its version string
//! says that its costs are synthetic, so it cannot pass for a measurement.
//!
//! Options (`mock:cost=12.5`; one per arm on the command line, where
//! `--engines` splits on commas; any number through the library):
//! see [`OPTIONS`].

use super::{Compiled, Engine, Instance, OptionError};
use crate::engines::EngineError;
use crate::measure::Meter;
use crate::proposals::Proposals;
use std::cell::{Cell, RefCell};

/// The options `mock` takes, as listed by `loopbench list`.
pub const OPTIONS: &[(&str, &str)] = &[
    ("cost=NS", "synthetic ns per iteration, > 0 (default 1)"),
    (
        "effect=F",
        "relative change of the cost, > -1: 0.25 is 25% slower (default 0)",
    ),
    (
        "noise=F",
        "per-rep noise in [0, 1): each timed call scaled by 1 + F*u, u in [-1, 1) from seed, instance and rep (default 0)",
    ),
    (
        "layout=F",
        "per-instance bias in [0, 1): all calls of one instance scaled by 1 + F*v, v in [-1, 1) from seed and instance (default 0)",
    ),
    ("seed=N", "seed of the noise and layout draws (default 0)"),
    (
        "fail=N",
        "trap at timed call N of each instance (from 0, warm-up included: the session's rep N)",
    ),
];

/// A parsed, validated mock configuration.
#[derive(Clone, Debug, PartialEq)]
pub struct MockConfig {
    pub cost: f64,
    pub effect: f64,
    pub noise: f64,
    pub layout: f64,
    pub seed: u64,
    pub fail_at: Option<usize>,
}

impl Default for MockConfig {
    fn default() -> Self {
        MockConfig {
            cost: 1.0,
            effect: 0.0,
            noise: 0.0,
            layout: 0.0,
            seed: 0,
            fail_at: None,
        }
    }
}

impl MockConfig {
    /// Parse `key=value` options; a bad one gives a one-line reason.
    pub fn parse(options: &[String]) -> Result<Self, OptionError> {
        let mut c = MockConfig::default();
        let mut seen: Vec<&str> = Vec::new();
        for o in options {
            let Some((key, value)) = o.split_once('=') else {
                return Err(match key_of(o) {
                    Some(form) => OptionError::NeedsValue {
                        option: o.clone(),
                        form,
                    },
                    None => unknown(o),
                });
            };
            let Some(form) = key_of(key) else {
                return Err(unknown(o));
            };
            if seen.contains(&key) {
                return Err(OptionError::Twice {
                    key: key.to_string(),
                });
            }
            seen.push(key);
            let bad = |expected: &'static str| OptionError::BadValue {
                option: o.clone(),
                expected,
                form,
            };
            let number = || value.parse::<f64>().ok().filter(|v| v.is_finite());
            match key {
                "cost" => {
                    c.cost = number()
                        .filter(|&v| v > 0.0)
                        .ok_or_else(|| bad("a number > 0"))?
                }
                "effect" => {
                    c.effect = number()
                        .filter(|&v| v > -1.0)
                        .ok_or_else(|| bad("a number > -1"))?
                }
                "noise" => {
                    c.noise = number()
                        .filter(|v| (0.0..1.0).contains(v))
                        .ok_or_else(|| bad("a number in [0, 1)"))?
                }
                "layout" => {
                    c.layout = number()
                        .filter(|v| (0.0..1.0).contains(v))
                        .ok_or_else(|| bad("a number in [0, 1)"))?
                }
                "seed" => c.seed = value.parse().map_err(|_| bad("a whole number"))?,
                "fail" => c.fail_at = Some(value.parse().map_err(|_| bad("a rep number"))?),
                _ => unreachable!("key_of accepted `{key}`"),
            }
        }
        Ok(c)
    }

    /// The synthetic wall time of timed call `rep` of mock instance
    /// `instance`, running `iters` iterations (the formula in the module
    /// docs). With no noise and no layout bias it is exactly
    /// `iters * cost * (1 + effect)`.
    pub fn ns(&self, iters: u64, instance: u64, rep: usize) -> f64 {
        let mut ns = iters as f64 * self.cost * (1.0 + self.effect);
        if self.noise != 0.0 {
            ns *= 1.0 + self.noise * uniform(self.seed, instance, rep as u64, 1);
        }
        if self.layout != 0.0 {
            ns *= 1.0 + self.layout * uniform(self.seed, instance, 0, 2);
        }
        ns
    }
}

/// The documented form (`cost=NS`) of option `key`, if it is one.
fn key_of(key: &str) -> Option<&'static str> {
    OPTIONS
        .iter()
        .map(|(form, _)| *form)
        .find(|form| form.split('=').next() == Some(key))
}

fn unknown(o: &str) -> OptionError {
    let valid: Vec<&str> = OPTIONS.iter().map(|(n, _)| *n).collect();
    OptionError::UnknownMock {
        option: o.to_string(),
        valid: valid.join(", "),
    }
}

/// SplitMix64 finaliser.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Uniform in [-1, 1), a fixed function of its inputs.
fn uniform(seed: u64, instance: u64, rep: u64, stream: u64) -> f64 {
    let h = mix(mix(mix(mix(seed) ^ stream) ^ instance) ^ rep);
    (h >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
}

/// One timed call, as the mock saw it (see [`take_calls`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MockCall {
    /// The instance's number in this thread (creation order, from 0).
    pub instance: u64,
    /// The instance's timed call number (from 0, warm-up included).
    pub rep: usize,
}

thread_local! {
    static INSTANCES: Cell<u64> = const { Cell::new(0) };
    static CALLS: RefCell<Vec<MockCall>> = const { RefCell::new(Vec::new()) };
}

/// The timed calls this thread's mock instances made since the last take,
/// in order (the failing call of `fail=N` included). Tests read the
/// rotation order from it.
pub fn take_calls() -> Vec<MockCall> {
    CALLS.with(|c| std::mem::take(&mut *c.borrow_mut()))
}

pub struct MockEngine {
    inner: Box<dyn Engine>,
    config: MockConfig,
}

impl MockEngine {
    pub fn new(options: &[String]) -> Result<Self, EngineError> {
        Ok(MockEngine {
            inner: super::wasmi::engine(&[], crate::versions::WASMI)
                .map_err(EngineError::Config)?,
            config: MockConfig::parse(options).map_err(|e| EngineError::Config(e.to_string()))?,
        })
    }
}

impl Engine for MockEngine {
    fn version(&self) -> String {
        format!("mock (synthetic costs; runs {})", self.inner.version())
    }
    fn supports(&self) -> Proposals {
        self.inner.supports()
    }
    fn compile(&self, wasm: &[u8]) -> Result<Box<dyn Compiled>, EngineError> {
        Ok(Box::new(MockModule {
            inner: self.inner.compile(wasm)?,
            config: self.config.clone(),
        }))
    }
}

struct MockModule {
    inner: Box<dyn Compiled>,
    config: MockConfig,
}

impl Compiled for MockModule {
    fn instantiate(&self) -> Result<Box<dyn Instance>, EngineError> {
        let inner = self.inner.instantiate()?;
        let id = INSTANCES.with(|n| {
            let id = n.get();
            n.set(id + 1);
            id
        });
        Ok(Box::new(MockInstance {
            inner,
            config: self.config.clone(),
            id,
            timed_calls: 0,
        }))
    }
}

struct MockInstance {
    inner: Box<dyn Instance>,
    config: MockConfig,
    id: u64,
    timed_calls: usize,
}

impl Instance for MockInstance {
    fn call(
        &mut self,
        export: &str,
        arg: Option<i32>,
        mut meter: Option<&mut Meter>,
    ) -> Result<Option<i32>, EngineError> {
        if meter.is_none() {
            return self.inner.call(export, arg, None);
        }
        let rep = self.timed_calls;
        self.timed_calls += 1;
        CALLS.with(|c| {
            c.borrow_mut().push(MockCall {
                instance: self.id,
                rep,
            })
        });
        if self.config.fail_at == Some(rep) {
            return Err(EngineError::Trap(format!(
                "mock: configured to fail at rep {rep} (fail={rep})"
            )));
        }
        let ret = self.inner.call(export, arg, meter.as_deref_mut())?;
        let iters = arg.map_or(1, |a| u64::from(a as u32));
        if let Some(m) = meter {
            m.supply_ns(self.config.ns(iters, self.id, rep));
        }
        Ok(ret)
    }
    fn write_memory(&mut self, offset: u64, data: &[u8]) -> Result<(), EngineError> {
        self.inner.write_memory(offset, data)
    }
    fn read_memory(&mut self, offset: u64, len: usize) -> Result<Vec<u8>, EngineError> {
        self.inner.read_memory(offset, len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &[&str]) -> Result<MockConfig, OptionError> {
        MockConfig::parse(&s.iter().map(|o| o.to_string()).collect::<Vec<_>>())
    }

    #[test]
    fn options_parse_and_validate() {
        let c = parse(&[
            "cost=12.5",
            "effect=0.25",
            "noise=0.1",
            "layout=0.05",
            "seed=7",
            "fail=3",
        ])
        .unwrap();
        assert_eq!(
            c,
            MockConfig {
                cost: 12.5,
                effect: 0.25,
                noise: 0.1,
                layout: 0.05,
                seed: 7,
                fail_at: Some(3)
            }
        );
        assert_eq!(parse(&[]).unwrap(), MockConfig::default());
        for (bad, says) in [
            (
                &["cost=abc"][..],
                "mock option `cost=abc`: expected a number > 0 (cost=NS)",
            ),
            (&["cost=0"], "expected a number > 0"),
            (&["cost=inf"], "expected a number > 0"),
            (&["cost=NaN"], "expected a number > 0"),
            (&["effect=-1"], "expected a number > -1"),
            (&["noise=1"], "in [0, 1)"),
            (&["layout=-0.1"], "in [0, 1)"),
            (&["seed=-1"], "a whole number"),
            (&["fail=x"], "a rep number"),
            (&["cost"], "mock option `cost` needs a value: cost=NS"),
            (
                &["speed=2"],
                "unknown option `speed=2` for mock (valid: cost=NS, effect=F",
            ),
            (&["fuel"], "unknown option `fuel` for mock"),
            (&["cost=1", "cost=2"], "mock option `cost` given twice"),
        ] {
            let e = parse(bad).unwrap_err().to_string();
            assert!(e.contains(says), "{bad:?}: {e}");
            assert!(!e.contains('\n'), "{e}");
        }
    }

    #[test]
    fn cost_is_exact_without_noise() {
        let c = parse(&["cost=12.5"]).unwrap();
        assert_eq!(c.ns(256, 0, 0), 3200.0);
        assert_eq!(c.ns(256, 5, 9), 3200.0);
        let c = parse(&["cost=10", "effect=0.5"]).unwrap();
        assert_eq!(c.ns(100, 1, 2), 1500.0);
    }

    #[test]
    fn noise_and_layout_are_deterministic_and_bounded() {
        let c = parse(&["cost=10", "noise=0.1", "layout=0.05", "seed=3"]).unwrap();
        let base = 10.0 * 1000.0;
        let mut distinct = std::collections::BTreeSet::new();
        for inst in 0..4 {
            for rep in 0..50 {
                let ns = c.ns(1000, inst, rep);
                assert_eq!(ns, c.ns(1000, inst, rep));
                assert!(ns >= base * 0.9 * 0.95 && ns < base * 1.1 * 1.05, "{ns}");
                distinct.insert(ns.to_bits());
            }
        }
        assert!(distinct.len() > 150, "draws vary: {}", distinct.len());
        let other_seed = parse(&["cost=10", "noise=0.1", "layout=0.05", "seed=4"]).unwrap();
        assert_ne!(c.ns(1000, 0, 0), other_seed.ns(1000, 0, 0));
        // Layout alone: one factor per instance, the same for every rep.
        let l = parse(&["cost=10", "layout=0.2"]).unwrap();
        assert_eq!(l.ns(1000, 2, 0), l.ns(1000, 2, 17));
        assert_ne!(l.ns(1000, 2, 0), l.ns(1000, 3, 0));
    }
}
