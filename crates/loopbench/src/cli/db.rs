//! `loopbench db init`: create or upgrade the schema of a history database.

use super::DbArg;
use crate::error::Error;
use crate::history::store;
use clap::{Args, Subcommand};

#[derive(Args, Debug)]
pub struct DbArgs {
    #[command(subcommand)]
    pub command: DbCommand,
}

#[derive(Subcommand, Debug)]
pub enum DbCommand {
    /// Create the tables (or apply the migrations this loopbench has and the database lacks).
    ///
    /// Example: loopbench db init --db postgres://bench@db-host/loopbench
    Init(InitArgs),
}

#[derive(Args, Debug)]
pub struct InitArgs {
    #[command(flatten)]
    pub db: DbArg,
}

impl DbArgs {
    pub fn execute(&self) -> Result<bool, Error> {
        match &self.command {
            DbCommand::Init(a) => {
                let location = a.db.location()?;
                let mut db = location.connect()?;
                let applied = store::migrate(db.as_mut())?;
                let version = store::version(db.as_mut())?;
                if applied.is_empty() {
                    crate::outln!("{location}: schema already at version {version}");
                } else {
                    let list: Vec<String> = applied.iter().map(|v| v.to_string()).collect();
                    crate::outln!(
                        "{location}: applied migration(s) {}; schema at version {version}",
                        list.join(", ")
                    );
                }
                Ok(true)
            }
        }
    }
}
