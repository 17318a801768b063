//! An app recipe loaded: its module built (if needed) and rewritten once,
//! its inputs read, and the shape it runs as ([`Recipe`], in the timed-path
//! crate), which sets the inputs up per instance, clears the outputs per rep
//! and verifies the checksum and output after every rep, in this process or
//! in a worker it is sent to. The scheduler, statistics, counters and null
//! control treat it like any synthetic loop.

use super::catalog::{artifact, read, AppSpec, Driver, HASH_CHUNK, HASH_SEED, SHA256_DIGEST};
use super::prepare::{prepare, Injector, Inputs, Prepared};
use super::{stub, AppError};
use crate::shapes::recipe::{zstd_checksum, Feed, Recipe, RecipeSource};
use crate::shapes::Stream;
use std::path::Path;

/// An app, loaded and rewritten, with the shape it runs as.
pub struct AppShape {
    pub spec: &'static AppSpec,
    pub prepared: Prepared,
    /// Setup, per-rep reset, verification and the stub's explanation.
    pub recipe: Recipe,
}

impl AppShape {
    /// Load (building if needed) and rewrite the app.
    pub fn load(spec: &'static AppSpec) -> Result<Self, AppError> {
        Self::load_with(spec, None)
    }

    pub fn load_with(spec: &'static AppSpec, inject: Option<Injector>) -> Result<Self, AppError> {
        let path = artifact(spec)?;
        let original = read(&path)?;
        let inputs = load_inputs(spec, &path)?;
        let prepared =
            prepare(spec, &original, &inputs, inject).map_err(|e| AppError::Prepare {
                app: spec.name,
                source: Box::new(e),
            })?;
        let recipe = Recipe::new(RecipeSource {
            name: spec.name.to_string(),
            about: spec.about.to_string(),
            wasm: prepared.wasm.clone(),
            steps: spec.steps,
            checksum: match spec.driver {
                Driver::Zstd => zstd_checksum(&inputs.original, spec.steps),
                _ => spec.expected,
            },
            feed: feed(spec.driver, inputs),
            stubbed: stub::stubbed(&prepared.imports),
            memory_bytes: prepared
                .info
                .memory0
                .map(|m| m.initial * 65536)
                .unwrap_or(0),
        });
        Ok(AppShape {
            spec,
            prepared,
            recipe,
        })
    }

    /// What `run(steps)` must return, when it is known.
    pub fn expected(&self, steps: u64) -> Option<i32> {
        match &self.recipe.source().feed {
            Feed::Zstd { original, .. } => Some(zstd_checksum(original, steps)),
            _ if steps == self.spec.steps => Some(self.spec.expected),
            _ => None,
        }
    }

    /// The shape a session runs.
    pub fn into_recipe(self) -> Recipe {
        self.recipe
    }
}

fn load_inputs(spec: &AppSpec, path: &Path) -> Result<Inputs, AppError> {
    let dir = path.parent().unwrap_or(Path::new("."));
    Ok(match spec.driver {
        Driver::Native => Inputs::default(),
        Driver::HashWasm => Inputs {
            chunk: Stream::new(HASH_SEED).bytes(HASH_CHUNK),
            ..Inputs::default()
        },
        Driver::Zstd => Inputs {
            compressed: read(&dir.join("zstd-input.zst"))?,
            original: read(&dir.join("zstd-input.bin"))?,
            chunk: Vec::new(),
        },
    })
}

/// What the recipe's driver is fed, and the output it is checked by.
fn feed(driver: Driver, inputs: Inputs) -> Feed {
    match driver {
        Driver::Native => Feed::Nothing,
        Driver::HashWasm => Feed::HashChunk {
            chunk: inputs.chunk,
            digest: SHA256_DIGEST.to_string(),
        },
        Driver::Zstd => Feed::Zstd {
            compressed: inputs.compressed,
            original: inputs.original,
        },
    }
}
