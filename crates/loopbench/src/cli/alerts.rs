//! `loopbench alerts`: the flagged steps of the tracks' anchored series,
//! as a table or as Markdown ready to paste into an engine's issue tracker.

use super::DbArg;
use crate::error::Error;
use crate::history::{alerts, track};
use crate::report::markup::{Markup, Text};
use clap::Args;

#[derive(Args, Debug)]
pub struct AlertsArgs {
    /// Only the alerts of this track.
    #[arg(long, value_name = "NAME")]
    pub track: Option<String>,
    /// Markdown, one section per alert (what changed, where, the commit
    /// range, the change with its interval, how to reproduce it).
    #[arg(long)]
    pub markdown: bool,
    #[command(flatten)]
    pub db: DbArg,
}

impl AlertsArgs {
    pub fn execute(&self) -> Result<bool, Error> {
        let location = self.db.location()?;
        let mut db = location.open_read()?;
        if let Some(name) = &self.track {
            let known = crate::history::store::version(db.as_mut())? >= 6
                && track::find(db.as_mut(), name)?.is_some();
            if !known {
                return Err(Error::Usage(format!(
                    "no track {} in {location} (`loopbench track list`)",
                    Text.escape(name)
                )));
            }
        }
        let list = alerts::list(db.as_mut(), self.track.as_deref())?;
        if self.markdown {
            crate::out!("{}", alerts::markdown(&list));
        } else if list.is_empty() {
            crate::outln!("no alerts in {location}");
        } else {
            crate::out!("{}", alerts::text(&list));
        }
        Ok(true)
    }
}
