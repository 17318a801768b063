//! `loopbench history`: the sessions and series stored on this machine (or
//! in a fleet's database), and `history import FILE` for saved JSON.

use super::DbArg;
use crate::error::Error;
use crate::history::series;
use crate::history::sessions::{self, Origin, Provenance, Recorded};
use crate::report::markup::{Markup, Text};
use clap::{Args, Subcommand};
use std::path::PathBuf;

#[derive(Args, Debug)]
#[command(args_conflicts_with_subcommands = true)]
pub struct HistoryArgs {
    #[command(subcommand)]
    pub command: Option<HistoryCommand>,
    /// Only sessions and series of this shape.
    #[arg(long)]
    pub shape: Option<String>,
    /// Only sessions and series of this arm (as written in the session, e.g. wasmi:fuel).
    #[arg(long)]
    pub arm: Option<String>,
    /// Sessions listed at most (newest first).
    #[arg(long, default_value_t = 20)]
    pub limit: usize,
    #[command(flatten)]
    pub db: DbArg,
}

#[derive(Subcommand, Debug)]
pub enum HistoryCommand {
    /// Store saved session files (JSON of any loopbench version; a model file's session too).
    ///
    /// Example: loopbench history import old-session.json --save-baseline before
    Import(ImportArgs),
}

#[derive(Args, Debug)]
pub struct ImportArgs {
    /// The files.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Name the (last) imported session as this baseline.
    #[arg(long, value_name = "NAME")]
    pub save_baseline: Option<String>,
    #[command(flatten)]
    pub db: DbArg,
}

impl HistoryArgs {
    pub fn execute(&self) -> Result<bool, Error> {
        if let Some(HistoryCommand::Import(a)) = &self.command {
            return a.execute();
        }
        let location = self.db.location()?;
        let mut db = location.open_read()?;
        let shape = self.shape.as_deref();
        let arm = self.arm.as_deref();
        let listed = sessions::list(db.as_mut(), shape, arm, self.limit)?;
        crate::outln!("history database: {location}");
        let kept = sessions::kept(db.as_mut())?;
        if kept.sessions > 0 {
            crate::outln!("{}", kept_words(&kept));
        }
        if listed.is_empty() {
            crate::outln!("no sessions stored{}", filter_words(shape, arm));
            return Ok(true);
        }
        crate::outln!("sessions{} (newest first):", filter_words(shape, arm));
        crate::outln!(
            "  {:>5}  {:<19}  {:<16}  {:<6}  {:<24}  arms",
            "id",
            "recorded (UTC)",
            "machine",
            "origin",
            "shapes"
        );
        for s in &listed {
            let mut notes = Vec::new();
            if !s.complete {
                notes.push("incomplete".to_string());
            }
            for b in &s.baselines {
                notes.push(format!("baseline:{}", Text.escape(b)));
            }
            let notes = if notes.is_empty() {
                String::new()
            } else {
                format!("  [{}]", notes.join(", "))
            };
            crate::outln!(
                "  {:>5}  {:<19}  {:<16}  {:<6}  {:<24}  {}{}",
                s.id,
                Text.escape(&s.recorded),
                Text.escape(s.label.as_deref().unwrap_or(&s.hostname)),
                Text.escape(&s.origin),
                Text.escape(&abbreviate(&s.shapes, 24)),
                Text.escape(&s.arms.join(",")),
                notes
            );
        }
        let series = series::read(db.as_mut(), shape, arm, None)?;
        crate::outln!("series (machine, shape, arm, metric): points, last median ns/iter");
        for (k, points) in &series {
            if let Some(last) = points.last() {
                crate::outln!(
                    "  {} {} {} {}: {} points, last {:.3} (session {})",
                    Text.escape(&k.machine),
                    Text.escape(&k.shape),
                    Text.escape(&k.arm),
                    Text.escape(&k.metric),
                    points.len(),
                    last.median_ns,
                    last.session_id
                );
            }
        }
        Ok(true)
    }
}

fn filter_words(shape: Option<&str>, arm: Option<&str>) -> String {
    use crate::report::markup::{Markup, Text};
    let mut w = String::new();
    if let Some(s) = shape {
        w.push_str(&format!(" with shape {}", Text.escape(s)));
    }
    if let Some(a) = arm {
        w.push_str(&format!(" with arm {}", Text.escape(a)));
    }
    w
}

fn abbreviate(items: &[String], width: usize) -> String {
    let all = items.join(",");
    if all.chars().count() <= width {
        return all;
    }
    format!("{} shapes", items.len())
}

impl ImportArgs {
    pub fn execute(&self) -> Result<bool, Error> {
        let location = self.db.location()?;
        // Read every file first: a bad one stores nothing.
        let mut docs = Vec::new();
        for f in &self.files {
            let doc = crate::results::read(f)?;
            let session = doc.session().cloned().ok_or_else(|| {
                Error::Usage(format!(
                    "{}: holds no session (a counts or calibration file); nothing to store",
                    f.display()
                ))
            })?;
            docs.push((f, session));
        }
        let mut db = location.open()?;
        let mut last = None;
        for (f, session) in &docs {
            // When the session started, from its id; else the file's time
            // stands for it (older sessions carry no date of their own).
            // Not the file's time first: a copied file is new, and a trend
            // over copies imported together would be in the order they
            // were copied.
            let started = session.id.as_deref().and_then(crate::results::started_at);
            let mtime = || {
                std::fs::metadata(f)
                    .and_then(|m| m.modified())
                    .ok()
                    .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                    .map(|d| d.as_secs_f64())
            };
            let provenance = Provenance {
                recorded_at: started.or_else(mtime),
                ..Provenance::of(Origin::Import)
            };
            let id = match sessions::record(db.as_mut(), session, &provenance)? {
                Recorded::New(id) => {
                    crate::outln!("{}: stored as session {id} in {location}", f.display());
                    id
                }
                Recorded::Existing(id) => {
                    crate::outln!(
                        "{}: already stored as session {id} in {location}; not stored again",
                        f.display()
                    );
                    id
                }
                Recorded::Completed(id) => {
                    crate::outln!(
                        "{}: stored whole as session {id} in {location}, in place of its incomplete copy",
                        f.display()
                    );
                    id
                }
            };
            last = Some(id);
        }
        if let (Some(name), Some(id)) = (&self.save_baseline, last) {
            sessions::save_baseline(db.as_mut(), name, id)?;
            crate::outln!("session {id} is baseline `{name}` (@baseline:{name})");
        }
        Ok(true)
    }
}

/// What the history keeps, in one line.
fn kept_words(k: &sessions::Kept) -> String {
    use crate::units::format_bytes;
    let older = match k.rep_rows {
        0 => String::new(),
        n => format!(
            "; sessions stored before their reps were compressed also have {n} rows of reps"
        ),
    };
    format!(
        "keeps {} session{}: summaries per shape and arm as table rows (trend and leaderboard read \
         them) and each whole session to load back (compare, bisect): {} of documents, {} of reps \
         compressed{older}",
        k.sessions,
        if k.sessions == 1 { "" } else { "s" },
        format_bytes(k.document_bytes.max(0) as u64),
        format_bytes(k.reps_bytes.max(0) as u64),
    )
}
