//! `loopbench worker ENGINE`: this binary serving one of its own engines to
//! a session over stdin/stdout (the protocol of [`crate::workers`]). A
//! session starts one per arm and epoch, so every epoch samples a fresh
//! address-space layout. Not for people: hidden from the help.

use crate::arm::EngineKind;
use crate::error::Error;
use clap::Args;

#[derive(Args, Debug)]
pub struct WorkerArgs {
    /// The engine to serve (its options come with `init`).
    pub engine: String,
}

impl WorkerArgs {
    pub fn execute(&self) -> Result<bool, Error> {
        // An unknown engine is the command line's error, in one line.
        let _: EngineKind = self.engine.parse().map_err(crate::arm::ArmError::from)?;
        Ok(crate::workers::server::serve_compiled_in(&self.engine) == 0)
    }
}
