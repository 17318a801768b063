//! `loopbench worker ENGINE`: this binary serving one of its own engines to
//! a session over stdin/stdout (the protocol of [`crate::workers`]). A
//! session starts one per arm and epoch, so every epoch samples a fresh
//! address-space layout. Not for people: hidden from the help.

use crate::arm::{ArmSpec, EngineKind};
use crate::engines::Engine;
use crate::error::Error;
use clap::Args;
use std::sync::OnceLock;

#[derive(Args, Debug)]
pub struct WorkerArgs {
    /// The engine to serve (its options come with `init`).
    pub engine: String,
}

/// The engine this process serves; the server's factory is a plain `fn`.
static ENGINE: OnceLock<EngineKind> = OnceLock::new();

fn factory(options: &[String]) -> Result<Box<dyn Engine>, String> {
    let kind = *ENGINE.get().ok_or("no engine chosen")?;
    let spec = ArmSpec {
        options: options.to_vec(),
        ..ArmSpec::new(kind)
    };
    spec.build().map_err(|e| e.to_string())
}

impl WorkerArgs {
    pub fn execute(&self) -> Result<bool, Error> {
        let kind: EngineKind = self.engine.parse().map_err(crate::arm::ArmError::from)?;
        let _ = ENGINE.set(kind);
        Ok(crate::workers::server::main(factory) == 0)
    }
}
