//! Adapter families: one adapter per API family of an engine, picked by the
//! version being built.
//!
//! An engine's API changes across versions (wasmi 0.31's stack machine and
//! `Value` vs 1.x/2.x's `Val` and lazy translation; tinywasm 0.10's `call`
//! returning a `Vec` vs 0.11's result slice, and 0.12's shared memories kept
//! apart from plain ones). Each family is one source file, compiled inside a
//! worker against the requested version. Where the in-process engine has the
//! same API (wasmi 1.x/2.x, tinywasm 0.10, wasm3 0.3), that file is the in-process
//! adapter in `engines/`, so the two cannot drift; the other families are in
//! `workers/adapters/` and are not modules of this crate. A version outside
//! every family is refused with the list of families, before anything is
//! built.

use super::error::FamilyError;
use crate::arm::EngineKind;
use semver::Version;

/// One adapter and the versions it compiles against.
#[derive(Debug)]
pub struct Family {
    pub engine: EngineKind,
    /// Short name, also the adapter's file stem.
    pub name: &'static str,
    /// The versions covered, for messages.
    pub covers: &'static str,
    covers_version: fn(&Version) -> bool,
    /// The adapter's source text.
    pub adapter: &'static str,
    /// The routing of WASI commands' imports to the host, compiled against
    /// the build's engine; `None`: a build of this family runs none.
    pub wasi: Option<&'static str>,
    /// Whether the engine's default Cargo features stay on.
    pub default_features: bool,
    /// Features always enabled. tinywasm's default `archive` does not
    /// build; from 0.11 its parser must have `validate` on whenever another
    /// crate in the worker (this library) turns on wasmparser's
    /// `validate`, or its matches on wasmparser enums are not exhaustive.
    pub base_features: &'static [&'static str],
    /// The features this library's own dependency on the engine turns on.
    /// A source build (path or git) of the same semver-compatible version
    /// shares its sub-crates with that dependency (wasmi 2's `wasmi_ir`
    /// from the registry), cargo unifies their features, and the engine
    /// must turn on the same ones: a wasmi 2 copy built without `simd`
    /// against a `wasmi_ir` with it has no handlers for the SIMD ops and
    /// does not compile.
    pub shared_features: &'static [&'static str],
    /// Engine options the adapter accepts after `:`.
    pub options: &'static [(&'static str, &'static str)],
}

impl Family {
    pub fn covers(&self, v: &Version) -> bool {
        (self.covers_version)(v)
    }
}

const FUEL: (&str, &str) = ("fuel", "fuel metering on");

pub static FAMILIES: [Family; 6] = [
    Family {
        engine: EngineKind::Wasmi,
        name: "wasmi_031",
        covers: "0.31.x (stack machine)",
        covers_version: |v| v.major == 0 && v.minor == 31,
        adapter: include_str!("adapters/wasmi_031.rs"),
        wasi: None,
        default_features: true,
        base_features: &[],
        shared_features: &[],
        options: &[FUEL],
    },
    Family {
        engine: EngineKind::Wasmi,
        name: "wasmi_1x",
        covers: "1.x and 2.x (register machine)",
        covers_version: |v| v.major == 1 || v.major == 2,
        adapter: loopbench_worker::engines::source::WASMI,
        wasi: Some(loopbench_worker::wasi::source::WASMI),
        default_features: true,
        base_features: &[],
        shared_features: &["simd"],
        options: &[
            FUEL,
            (
                "eager",
                "translate every function at compile time (default: lazy)",
            ),
        ],
    },
    Family {
        engine: EngineKind::Tinywasm,
        name: "tinywasm_010",
        covers: "0.10.x",
        covers_version: |v| v.major == 0 && v.minor == 10,
        adapter: loopbench_worker::engines::source::TINYWASM,
        wasi: Some(loopbench_worker::wasi::source::TINYWASM),
        default_features: false,
        base_features: &["std", "parser"],
        shared_features: &[],
        options: &[],
    },
    Family {
        engine: EngineKind::Tinywasm,
        name: "tinywasm_011",
        covers: "0.11.x",
        covers_version: |v| v.major == 0 && v.minor == 11,
        adapter: include_str!("adapters/tinywasm_011.rs"),
        wasi: None,
        default_features: false,
        base_features: &["std", "parser", "validate"],
        shared_features: &[],
        options: &[],
    },
    Family {
        engine: EngineKind::Tinywasm,
        name: "tinywasm_012",
        covers: "0.12.x (shared memory and atomics)",
        covers_version: |v| v.major == 0 && v.minor == 12,
        adapter: include_str!("adapters/tinywasm_012.rs"),
        wasi: None,
        default_features: false,
        base_features: &["std", "parser", "validate"],
        shared_features: &[],
        options: &[],
    },
    Family {
        engine: EngineKind::Wasm3,
        name: "wasm3_03",
        covers: "0.3.x (C wasm3 0.4.7)",
        covers_version: |v| v.major == 0 && v.minor == 3,
        adapter: loopbench_worker::engines::source::WASM3,
        wasi: Some(loopbench_worker::wasi::source::WASM3),
        // As compiled in: bindings generated by bindgen (libclang), 32-bit
        // stack slots.
        default_features: false,
        base_features: &["std", "use-32bit-slots", "build-bindgen"],
        shared_features: &[],
        options: &[],
    },
];

/// Every family of `engine`.
pub fn of(engine: EngineKind) -> impl Iterator<Item = &'static Family> {
    FAMILIES.iter().filter(move |f| f.engine == engine)
}

/// Engine options any family of `engine` accepts (checked exactly per
/// family by [`super::check`]).
pub fn any_accepts(engine: EngineKind, option: &str) -> bool {
    of(engine).any(|f| f.options.iter().any(|(n, _)| *n == option))
}

/// True when some family builds `engine` at all.
pub fn buildable(engine: EngineKind) -> bool {
    of(engine).next().is_some()
}

/// The family for `version` of `engine`, or a message naming the families.
pub fn pick(engine: EngineKind, version: &Version) -> Result<&'static Family, FamilyError> {
    of(engine).find(|f| f.covers(version)).ok_or_else(|| {
        let known: Vec<String> = of(engine)
            .map(|f| format!("{engine} {}", f.covers))
            .collect();
        if known.is_empty() {
            FamilyError::NotBuildable {
                engine,
                buildable: buildable_names(),
            }
        } else {
            FamilyError::Outside {
                engine,
                version: version.clone(),
                supported: known.join("; "),
            }
        }
    })
}

pub fn buildable_names() -> String {
    let mut names: Vec<&str> = FAMILIES.iter().map(|f| f.engine.name()).collect();
    names.dedup();
    names.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> Version {
        crate::arm::build::lowest_version(s).unwrap()
    }

    #[test]
    fn picks_by_version() {
        assert_eq!(
            pick(EngineKind::Wasmi, &v("0.31.2")).unwrap().name,
            "wasmi_031"
        );
        assert_eq!(
            pick(EngineKind::Wasmi, &v("2.0.0")).unwrap().name,
            "wasmi_1x"
        );
        assert_eq!(
            pick(EngineKind::Wasmi, &v("1.1.0")).unwrap().name,
            "wasmi_1x"
        );
        assert_eq!(
            pick(EngineKind::Tinywasm, &v("0.10.0")).unwrap().name,
            "tinywasm_010"
        );
        assert_eq!(
            pick(EngineKind::Tinywasm, &v("0.11.0")).unwrap().name,
            "tinywasm_011"
        );
        assert_eq!(
            pick(EngineKind::Tinywasm, &v("0.12.0-beta.0"))
                .unwrap()
                .name,
            "tinywasm_012"
        );
        assert_eq!(
            pick(EngineKind::Wasm3, &v("0.3.1")).unwrap().name,
            "wasm3_03"
        );
    }

    #[test]
    fn outside_every_family_is_said_clearly() {
        let e = pick(EngineKind::Wasmi, &v("0.40")).unwrap_err().to_string();
        assert!(
            e.contains("wasmi 0.40.0 is outside every adapter family"),
            "{e}"
        );
        assert!(e.contains("0.31.x") && e.contains("1.x and 2.x"), "{e}");
        let e = pick(EngineKind::Wasm3, &v("0.2")).unwrap_err().to_string();
        assert!(e.contains("0.3.x"), "{e}");
        let e = pick(EngineKind::Wasmtime, &v("48"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("no adapter family"), "{e}");
    }
}
