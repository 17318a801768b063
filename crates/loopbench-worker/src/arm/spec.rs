//! What an arm is, as written on the command line: [`ArmSpec`], an engine
//! ([`EngineKind`]), its options and, for a build arm, the build
//! ([`super::build`], the grammar of `@REQ`, `=path:`, `=git:`, `+SETTING`).
//!
//! This is the one place that turns a string into an arm ([`ArmSpec`]'s
//! `FromStr`, [`parse_arms`]) and an arm into an in-process engine
//! ([`ArmSpec::build`]). It checks the grammar only: whether a build of the
//! engine can be made is asked of the workers (`workers::check`), which every
//! command does before any work.

use super::build::{self, BuildSpec};
use super::error::ArmError;
use crate::engines::{self, Engine, EngineError, EngineKind};
use std::fmt;
use std::str::FromStr;

/// An engine plus its configuration, as written on the command line:
/// `engine[:option[,option...]]`, e.g. `wasmi`, `wasmi:fuel`,
/// `wasmtime:pulley`; with a build (`wasmi@0.31`, `tinywasm=path:DIR`, see
/// [`super::build`]) the engine runs from that build in a worker.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ArmSpec {
    pub engine: EngineKind,
    pub options: Vec<String>,
    /// `None`: the engine compiled into this binary; `Some`: a worker
    /// process built from this source and settings.
    pub worker: Option<BuildSpec>,
}

impl ArmSpec {
    /// The arms `--engines` uses when none are named.
    pub fn defaults() -> Vec<ArmSpec> {
        [EngineKind::Wasmi, EngineKind::Tinywasm, EngineKind::Wasm3]
            .into_iter()
            .filter(|k| k.compiled_in())
            .map(ArmSpec::new)
            .collect()
    }

    /// The compiled-in engine with default options.
    pub fn new(engine: EngineKind) -> Self {
        ArmSpec {
            engine,
            options: Vec::new(),
            worker: None,
        }
    }

    /// A build that is compiled (so it has a code layout of its own, and
    /// layout variants): a build arm of a real engine. A mock with a source
    /// runs this binary with the source's options.
    pub fn compiles(&self) -> bool {
        self.worker.is_some() && self.engine != EngineKind::Mock
    }

    pub fn has(&self, option: &str) -> bool {
        self.options.iter().any(|o| o == option)
    }

    /// This git arm at revision `rev`, with every build setting and option
    /// kept; `None` for the repository alone (`wasmi=git:DIR+feature:simd`,
    /// the form `bisect --engine` takes). Not a git arm: `None`.
    pub fn at_revision(&self, rev: Option<&str>) -> Option<String> {
        let mut arm = self.clone();
        match &mut arm.worker.as_mut()?.source {
            build::Source::Git { rev: r, .. } => *r = rev.unwrap_or_default().to_string(),
            _ => return None,
        }
        Some(arm.to_string())
    }

    /// Build the engine, or say which feature is missing.
    pub fn build(&self) -> Result<Box<dyn Engine>, EngineError> {
        if self.worker.is_some() {
            return Err(EngineError::Config(format!(
                "{self} runs in a worker process, not in this binary"
            )));
        }
        let not_compiled = || EngineError::NotCompiled {
            engine: self.engine.name(),
            feature: self.engine.feature(),
        };
        if !self.engine.compiled_in() {
            return Err(not_compiled());
        }
        let options = &self.options;
        let version = self.engine.version();
        match self.engine {
            EngineKind::Wasmi => {
                engines::wasmi::engine(options, version).map_err(EngineError::Config)
            }
            #[cfg(feature = "tinywasm")]
            EngineKind::Tinywasm => {
                engines::tinywasm::engine(options, version).map_err(EngineError::Config)
            }
            #[cfg(feature = "wasm3")]
            EngineKind::Wasm3 => {
                engines::wasm3::engine(options, version).map_err(EngineError::Config)
            }
            #[cfg(feature = "wasmtime")]
            EngineKind::Wasmtime => Ok(Box::new(engines::wasmtime::WasmtimeEngine::new(options)?)),
            #[cfg(feature = "wasmer")]
            EngineKind::Wasmer => Ok(Box::new(engines::wasmer::WasmerEngine::new(options)?)),
            EngineKind::Mock => Ok(Box::new(engines::mock::MockEngine::new(options)?)),
            #[allow(unreachable_patterns)]
            _ => Err(not_compiled()),
        }
    }
}

impl ArmSpec {
    /// This arm's engine running the WASI command `wasm`, its imports
    /// served by the one WASI host; or why this arm cannot.
    pub fn wasi(&self, wasm: &[u8]) -> Result<Box<dyn crate::wasi::Runner>, EngineError> {
        self.build()?;
        let version = self.engine.version();
        match self.engine {
            EngineKind::Wasmi => crate::wasi::wasmi::runner(&self.options, version, wasm),
            #[cfg(feature = "tinywasm")]
            EngineKind::Tinywasm => crate::wasi::tinywasm::runner(&self.options, version, wasm),
            #[cfg(feature = "wasm3")]
            EngineKind::Wasm3 => crate::wasi::wasm3::runner(&self.options, version, wasm),
            _ => Err(EngineError::Config(format!(
                "{self} does not run WASI commands yet (wasmi, tinywasm and wasm3 do)"
            ))),
        }
    }
}

impl fmt::Display for ArmSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.engine.name())?;
        if let Some(b) = &self.worker {
            write!(f, "{b}")?;
        }
        if !self.options.is_empty() {
            write!(f, ":{}", self.options.join(","))?;
        }
        Ok(())
    }
}

impl FromStr for ArmSpec {
    type Err = ArmError;
    fn from_str(s: &str) -> Result<Self, ArmError> {
        let build::Parsed {
            engine: name,
            build: worker,
            options,
        } = build::parse(s)?;
        let engine: EngineKind = name.parse().map_err(ArmError::UnknownEngine)?;
        // Whether a build of this engine can be made, and takes these
        // options, is the workers' question (`workers::check`, before any
        // work): the grammar alone is checked here.
        if worker.is_some() {
            return Ok(ArmSpec {
                engine,
                options,
                worker,
            });
        }
        if engine == EngineKind::Mock {
            engines::mock::MockConfig::parse(&options).map_err(|source| ArmError::Mock {
                arm: s.to_string(),
                source,
            })?;
            return Ok(ArmSpec {
                engine,
                options,
                worker: None,
            });
        }
        for o in &options {
            if !engine.options().iter().any(|(n, _)| n == o) {
                let valid: Vec<_> = engine.options().iter().map(|(n, _)| *n).collect();
                return Err(if valid.is_empty() {
                    ArmError::NoOptions {
                        engine: name.to_string(),
                        option: o.clone(),
                    }
                } else {
                    ArmError::UnknownOption {
                        engine: name.to_string(),
                        option: o.clone(),
                        valid: valid.join(", "),
                    }
                });
            }
        }
        Ok(ArmSpec {
            engine,
            options,
            worker: None,
        })
    }
}

/// Parse a list of arms as given to `--engines`. The command line splits
/// on commas, and an arm's options are comma-separated too, so a piece that
/// does not start with an engine name belongs to the arm before it:
/// `wasmi:fuel,eager,tinywasm` is `wasmi:fuel,eager` and `tinywasm`.
pub fn parse_arms(list: &[String]) -> Result<Vec<ArmSpec>, ArmError> {
    let mut arms: Vec<String> = Vec::new();
    for piece in list {
        let name_end = piece.find([':', '@', '=', '+']).unwrap_or(piece.len());
        let starts_arm = piece[..name_end].parse::<EngineKind>().is_ok();
        match arms.last_mut() {
            Some(prev) if !starts_arm && prev.contains(':') => {
                prev.push(',');
                prev.push_str(piece);
            }
            _ => arms.push(piece.clone()),
        }
    }
    arms.iter().map(|s| s.parse::<ArmSpec>()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn engine_kinds_round_trip_through_display() {
        for k in EngineKind::ALL {
            assert_eq!(k.to_string().parse::<EngineKind>(), Ok(k));
        }
        let e = "v8".parse::<EngineKind>().unwrap_err().to_string();
        assert!(
            e.contains("unknown engine `v8`") && e.contains("wasmi, tinywasm"),
            "{e}"
        );
    }

    #[test]
    fn arm_specs_round_trip_through_display_for_every_engine_and_option() {
        let mut specs = Vec::new();
        for k in EngineKind::ALL {
            specs.push(ArmSpec::new(k));
            if k == EngineKind::Mock {
                // Its options carry values (`cost=NS`): one real example.
                specs.push("mock:cost=10,noise=0.1".parse().unwrap());
                continue;
            }
            for (o, _) in k.options() {
                specs.push(ArmSpec {
                    options: vec![o.to_string()],
                    ..ArmSpec::new(k)
                });
            }
            if k.options().len() > 1 {
                specs.push(ArmSpec {
                    options: k.options().iter().map(|(o, _)| o.to_string()).collect(),
                    ..ArmSpec::new(k)
                });
            }
        }
        // Build arms, with every option an adapter family takes.
        for text in [
            "wasmi@0.31:fuel",
            "wasmi@2:fuel,eager",
            "tinywasm=path:../tw+feature:std+profile:lto",
            "wasmi+rustflags:-Ctarget-cpu=native+ignore-rust-version",
        ] {
            let spec: ArmSpec = text.parse().unwrap();
            assert_eq!(spec.to_string(), text);
            specs.push(spec);
        }
        for spec in specs {
            let text = spec.to_string();
            assert_eq!(text.parse::<ArmSpec>().as_ref(), Ok(&spec), "{text}");
        }
    }

    /// `--engines` splits on commas; options of one arm are put back together.
    #[test]
    fn options_after_commas_stay_with_their_arm() {
        let list: Vec<String> = "wasmi:fuel,eager,tinywasm,mock:cost=10,noise=0.1,wasmi"
            .split(',')
            .map(String::from)
            .collect();
        let arms: Vec<String> = parse_arms(&list)
            .unwrap()
            .iter()
            .map(|a| a.to_string())
            .collect();
        assert_eq!(
            arms,
            [
                "wasmi:fuel,eager",
                "tinywasm",
                "mock:cost=10,noise=0.1",
                "wasmi"
            ]
        );
        // A piece that is no engine and follows an arm without options is
        // an unknown engine, said as such.
        let e = parse_arms(&["wasmi".into(), "eager".into()]).unwrap_err();
        assert!(e.to_string().contains("unknown engine `eager`"), "{e}");
    }

    #[test]
    fn unknown_options_are_refused_with_the_valid_ones() {
        let e = "wasmi:turbo".parse::<ArmSpec>().unwrap_err().to_string();
        assert!(e.contains("valid: fuel, eager"), "{e}");
        let e = "tinywasm:fuel".parse::<ArmSpec>().unwrap_err().to_string();
        assert!(e.contains("takes no options"), "{e}");
        let e = parse_arms(&["wasmi".into(), "nope".into()]).unwrap_err();
        assert!(e.to_string().contains("unknown engine `nope`"), "{e}");
    }
}
