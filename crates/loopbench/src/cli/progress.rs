//! The progress bar every long command shows on stderr.

use crate::error::Error;
use crate::report::Exports;
use crate::results::{Document, Session};
use crate::session;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::time::{Duration, Instant};

/// Progress on stderr (after two seconds, only on a terminal) and the
/// output files rewritten after every shape.
pub struct TerminalSink<'a> {
    bar: ProgressBar,
    quiet: bool,
    started: Instant,
    shown: bool,
    exports: Option<&'a Exports>,
}

impl<'a> TerminalSink<'a> {
    pub fn new(quiet: bool, exports: Option<&'a Exports>) -> Self {
        let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::hidden());
        if let Ok(style) =
            ProgressStyle::with_template("{elapsed:>4} {bar:30} {pos}/{len} reps  {msg}")
        {
            bar.set_style(style);
        }
        TerminalSink {
            bar,
            quiet,
            started: Instant::now(),
            shown: false,
            exports,
        }
    }
    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

impl session::Sink for TerminalSink<'_> {
    fn shape_started(&mut self, shape: &str, epoch: usize, reps: usize) {
        self.bar.set_position(0);
        self.bar.set_length(reps as u64);
        self.bar.set_message(format!("epoch {epoch}: {shape}"));
    }
    fn update(&mut self, report: &Session) -> Result<(), Error> {
        if let Some(e) = self.exports {
            e.partial(&Document::Session(report.clone()))?;
        }
        Ok(())
    }
}

impl crate::schedule::Progress for TerminalSink<'_> {
    fn rep_done(&mut self) {
        self.bar.inc(1);
        if !self.quiet && !self.shown && self.started.elapsed() > Duration::from_secs(2) {
            self.shown = true;
            self.bar.set_draw_target(ProgressDrawTarget::stderr());
        }
    }
}
