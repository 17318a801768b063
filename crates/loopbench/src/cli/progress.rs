//! The progress bar every long command shows on stderr.

use crate::error::Error;
use crate::report::Exports;
use crate::results::{Document, Session};
use crate::session;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Progress on stderr (after two seconds, only on a terminal) and the
/// output files rewritten after every shape.
pub struct TerminalSink<'a> {
    bar: ProgressBar,
    quiet: bool,
    started: Instant,
    shown: bool,
    exports: Option<&'a Exports>,
    /// Set by SIGINT: the session stops between shapes.
    interrupt: Arc<AtomicBool>,
    /// Notes printed when measuring starts (after every usage check).
    notes: Vec<String>,
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
            interrupt: interrupt_flag(),
            notes: Vec::new(),
        }
    }

    /// Print these notes (e.g. counters that are unavailable) once the
    /// first shape starts, so they never precede a usage error.
    pub fn with_notes(mut self, notes: Vec<String>) -> Self {
        self.notes = notes;
        self
    }
    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

impl session::Sink for TerminalSink<'_> {
    fn shape_started(&mut self, shape: &str, epoch: usize, reps: usize) {
        for n in self.notes.drain(..) {
            crate::diag!("{n}");
        }
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
    fn interrupted(&self) -> bool {
        self.interrupt.load(Ordering::Relaxed)
    }
}

/// A flag that the first SIGINT sets (the session then stops between
/// shapes and reports what it completed); a second SIGINT exits at once
/// with 130. Without a handler (it could not be installed) the flag stays
/// false and SIGINT keeps its default action.
fn interrupt_flag() -> Arc<AtomicBool> {
    let flag = Arc::new(AtomicBool::new(false));
    #[cfg(unix)]
    {
        use signal_hook::consts::SIGINT;
        // Registered first, so it sees the flag the second handler set.
        let _ = signal_hook::flag::register_conditional_shutdown(SIGINT, 130, Arc::clone(&flag));
        let _ = signal_hook::flag::register(SIGINT, Arc::clone(&flag));
    }
    flag
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
