//! `loopbench leaderboard`: engines x shapes x machines, each arm's latest
//! result with its interval, as HTML and Markdown.

use super::DbArg;
use crate::error::Error;
use crate::history::leaderboard;
use crate::report::write_atomic;
use clap::Args;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct LeaderboardArgs {
    #[command(flatten)]
    pub db: DbArg,
    /// Write the board as an HTML page to FILE.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Write the board as Markdown to FILE (`-` for stdout; the default when no file is named).
    #[arg(long, value_name = "FILE")]
    pub markdown: Option<PathBuf>,
}

impl LeaderboardArgs {
    pub fn execute(&self) -> Result<bool, Error> {
        let location = self.db.location()?;
        let mut db = location.open_read()?;
        let entries = leaderboard::entries(db.as_mut())?;
        if entries.is_empty() {
            return Err(Error::Usage(format!("no stored results in {location}")));
        }
        let markdown = leaderboard::markdown(&entries);
        if let Some(p) = &self.html {
            write_atomic(p, leaderboard::html(&entries).as_bytes())?;
            crate::diag!("leaderboard: {} ({} entries)", p.display(), entries.len());
        }
        match &self.markdown {
            Some(p) if p.as_os_str() != "-" => {
                write_atomic(p, markdown.as_bytes())?;
                crate::diag!("leaderboard: {} ({} entries)", p.display(), entries.len());
            }
            Some(_) => crate::out!("{markdown}"),
            None if self.html.is_none() => crate::out!("{markdown}"),
            None => {}
        }
        Ok(true)
    }
}
