//! The progress bar every long command shows on stderr, with the time
//! left for the shape and the session estimated from the stop rule: a
//! shape takes epochs until its budget is spent (or it is precise enough,
//! which can only come sooner), and at least `min_epochs` of them, so its
//! time left is its remaining budget, raised to the epochs it still owes
//! at its own pace so far, and capped by `max_epochs` at that pace.

pub use crate::children::stop_requested;
use crate::error::Error;
use crate::report::Exports;
use crate::results::{Document, Session, StopSettings};
use crate::session;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::sync::atomic::{AtomicUsize, Ordering};
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
    eta: Option<Eta>,
    label: String,
    shown_eta: Instant,
    /// The signal (SIGINT, SIGTERM) that asked to stop, or 0: the session
    /// stops between shapes.
    interrupt: Arc<AtomicUsize>,
    /// Notes printed when measuring starts (after every usage check).
    notes: Vec<String>,
}

/// Time spent and epochs taken per shape, for the estimate of time left.
#[derive(Debug)]
pub struct Eta {
    stop: StopSettings,
    shapes: Vec<ShapeClock>,
    /// The shape running now and when (seconds since the start) it began.
    current: Option<(usize, f64)>,
    /// Epochs completed: the time between shapes (starting workers,
    /// writing files) is spread over them.
    epochs_done: usize,
    /// The session ends by then at the latest (`--session-budget`).
    session_budget_s: Option<f64>,
    /// When the first shape started: what came before (relinking layout
    /// variants, building workers) is paid once, not per epoch.
    measuring_since: Option<f64>,
}

#[derive(Debug)]
struct ShapeClock {
    name: String,
    spent: f64,
    epochs: usize,
    done: bool,
}

impl Eta {
    pub fn new(shapes: &[String], stop: StopSettings) -> Self {
        Eta {
            stop,
            shapes: shapes
                .iter()
                .map(|n| ShapeClock {
                    name: n.clone(),
                    spent: 0.0,
                    epochs: 0,
                    done: false,
                })
                .collect(),
            current: None,
            epochs_done: 0,
            session_budget_s: None,
            measuring_since: None,
        }
    }

    fn close(&mut self, now: f64) {
        if let Some((i, since)) = self.current.take() {
            self.shapes[i].spent += (now - since).max(0.0);
        }
    }

    /// `shape` starts an epoch at `now` seconds.
    pub fn started(&mut self, shape: &str, now: f64) {
        self.close(now);
        self.measuring_since.get_or_insert(now);
        if let Some(i) = self.shapes.iter().position(|s| s.name == shape) {
            self.shapes[i].epochs += 1;
            self.current = Some((i, now));
        }
    }

    /// After an epoch: which shapes have stopped.
    pub fn epoch_done(&mut self, session: &Session, now: f64) {
        self.close(now);
        self.epochs_done += 1;
        for r in &session.results {
            if r.stopped.is_some() {
                if let Some(s) = self.shapes.iter_mut().find(|s| s.name == r.shape) {
                    s.done = true;
                }
            }
        }
    }

    fn left(&self, i: usize, now: f64) -> f64 {
        let s = &self.shapes[i];
        if s.done {
            return 0.0;
        }
        let spent = s.spent
            + match self.current {
                Some((c, since)) if c == i => (now - since).max(0.0),
                _ => 0.0,
            };
        let budget_left = (self.stop.budget_s - spent).max(0.0);
        if s.epochs == 0 {
            return self.stop.budget_s;
        }
        let pace = spent / s.epochs as f64;
        let owed = self.stop.min_epochs.saturating_sub(s.epochs) as f64 * pace;
        let cap = self.stop.max_epochs.saturating_sub(s.epochs) as f64 * pace;
        budget_left.max(owed).min(cap.max(owed))
    }

    /// Estimated seconds left for the running shape and for the session.
    pub fn estimate(&self, now: f64) -> (Option<f64>, f64) {
        let shape = self.current.map(|(i, _)| self.left(i, now));
        let mut session: f64 = (0..self.shapes.len()).map(|i| self.left(i, now)).sum();
        if self.epochs_done > 0 {
            // Time outside every shape, per epoch, times the epochs the
            // slowest-finishing shape still needs at its pace.
            let in_shapes: f64 = self.shapes.iter().map(|s| s.spent).sum::<f64>()
                + self
                    .current
                    .map_or(0.0, |(_, since)| (now - since).max(0.0));
            let measuring = now - self.measuring_since.unwrap_or(0.0);
            let overhead = ((measuring - in_shapes) / self.epochs_done as f64).max(0.0);
            let epochs_left = (0..self.shapes.len())
                .filter(|&i| self.shapes[i].epochs > 0 && self.shapes[i].spent > 0.0)
                .map(|i| {
                    let pace = self.shapes[i].spent / self.shapes[i].epochs as f64;
                    (self.left(i, now) / pace).ceil()
                })
                .fold(0.0, f64::max);
            session += overhead * epochs_left;
        }
        if let Some(b) = self.session_budget_s {
            session = session.min((b - now).max(0.0));
        }
        (shape, session)
    }
}

fn secs(x: f64) -> String {
    if x >= 90.0 {
        format!("{:.0} min", x / 60.0)
    } else {
        format!("{x:.0} s")
    }
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
            eta: None,
            label: String::new(),
            shown_eta: Instant::now(),
            interrupt: crate::children::interrupt_flag(),
            notes: Vec::new(),
        }
    }

    /// Show the estimated time left for these shapes under this stop rule;
    /// the bar is then the whole session's time, elapsed against elapsed
    /// plus the estimate, not the reps of the shape running (which
    /// restarted many times a second).
    pub fn with_eta(mut self, shapes: &[String], stop: StopSettings) -> Self {
        self.eta = Some(Eta::new(shapes, stop));
        if let Ok(style) = ProgressStyle::with_template(
            "{elapsed:>4} {bar:30} {percent:>3}% of the session  {msg}",
        ) {
            self.bar.set_style(style);
        }
        self
    }

    /// The session ends within this many seconds (`--session-budget`):
    /// the estimate says no more.
    pub fn with_session_budget(mut self, budget_s: Option<f64>) -> Self {
        if let Some(eta) = &mut self.eta {
            eta.session_budget_s = budget_s;
        }
        self
    }

    fn now(&self) -> f64 {
        self.started.elapsed().as_secs_f64()
    }

    fn show_message(&mut self) {
        let text = match &self.eta {
            Some(eta) => {
                let now = self.now();
                let (shape, session) = eta.estimate(now);
                // Tenths of a second: the bar moves between messages.
                self.bar.set_length(((now + session) * 10.0) as u64);
                self.bar.set_position((now * 10.0) as u64);
                format!(
                    "{}  (about {} left for the shape, {} for the session)",
                    self.label,
                    secs(shape.unwrap_or(0.0)),
                    secs(session)
                )
            }
            None => self.label.clone(),
        };
        self.bar.set_message(text);
        self.shown_eta = Instant::now();
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
        if self.eta.is_none() {
            self.bar.set_position(0);
            self.bar.set_length(reps as u64);
        }
        let now = self.now();
        if let Some(eta) = &mut self.eta {
            eta.started(shape, now);
        }
        self.label = format!("epoch {epoch}: {shape}");
        self.show_message();
    }
    fn update(&mut self, report: &Session) -> Result<(), Error> {
        let now = self.now();
        if let Some(eta) = &mut self.eta {
            eta.epoch_done(report, now);
        }
        if let Some(e) = self.exports.filter(|e| e.partial_due()) {
            e.partial(&Document::Session(report.clone()))?;
        }
        Ok(())
    }
    fn interrupted(&self) -> bool {
        self.interrupt.load(Ordering::Relaxed) != 0
    }
}

impl crate::schedule::Progress for TerminalSink<'_> {
    fn rep_done(&mut self) {
        if self.eta.is_none() {
            self.bar.inc(1);
        }
        if self.shown_eta.elapsed() > Duration::from_millis(500) {
            self.show_message();
        }
        if !self.quiet && !self.shown && self.started.elapsed() > Duration::from_secs(2) {
            self.shown = true;
            self.bar.set_draw_target(ProgressDrawTarget::stderr());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The smallest saved session (no shapes).
    const SESSION: &str = r#"{"schema": "loopbench/2", "machine": {"cpu": "c", "cores": 1, "os": "o",
        "arch": "a", "hostname": "h", "load_start": null, "load_end": null},
        "session": {"rounds": 1, "warmup": 0, "baseline": "b", "null_arm": "b#null", "bytes": 1,
        "k": 1, "iters_override": null, "engines": [], "build_profile": "p",
        "confidence_level": 0.95, "rotation": "r"},
        "counters": [], "results": [], "complete": true, "errors": [], "wall_seconds": 0}"#;

    fn stop(min: usize, max: usize, budget: f64) -> StopSettings {
        StopSettings {
            min_epochs: min,
            max_epochs: max,
            precision_pct: 0.5,
            budget_s: budget,
        }
    }

    /// With an estimate the bar is the session's time: a new shape or epoch
    /// does not start it again; without one it counts the shape's reps.
    #[test]
    fn the_bar_is_the_whole_session_when_its_time_is_estimated() {
        use crate::session::Sink;
        let names = ["a".to_string(), "b".to_string()];
        let mut sink = TerminalSink::new(true, None).with_eta(&names, stop(1, 10, 5.0));
        sink.shape_started("a", 0, 3);
        // Seconds of the session (each shape may take its 5 s) in tenths,
        // not 3 reps.
        let length = sink.bar.length().unwrap();
        assert!(length >= 40, "{length}");
        crate::schedule::Progress::rep_done(&mut sink);
        sink.shape_started("b", 0, 7);
        assert_ne!(sink.bar.length(), Some(7));
        let mut reps = TerminalSink::new(true, None);
        reps.shape_started("a", 0, 40);
        crate::schedule::Progress::rep_done(&mut reps);
        assert_eq!((reps.bar.position(), reps.bar.length()), (1, Some(40)));
    }

    #[test]
    fn time_left_follows_the_budget_the_epochs_owed_and_the_cap() {
        let names = ["a".to_string(), "b".to_string()];
        let mut eta = Eta::new(&names, stop(2, 100, 3.0));
        // Nothing ran: each shape may take its whole budget.
        assert_eq!(eta.estimate(0.0), (None, 6.0));
        eta.started("a", 0.0);
        eta.started("b", 1.0); // a spent 1 s in one epoch
        assert_eq!(eta.left(0, 1.0), 2.0); // its budget left
        assert_eq!(eta.estimate(1.5), (Some(2.5), 4.5));
        // Slow epochs: the epochs still owed exceed the budget left.
        let mut slow = Eta::new(&names[..1], stop(5, 100, 3.0));
        slow.started("a", 0.0);
        slow.started("zz", 2.0); // unknown shape: only closes a
        assert_eq!(slow.left(0, 2.0), 8.0); // 4 epochs owed at 2 s each
                                            // Time between shapes counts for the session, per epoch still to run.
                                            // What came before the first shape (relinking variants: 7 s here)
                                            // is paid once; the gap before each later epoch's shape is per epoch.
        let mut gaps = Eta::new(&names[..1], stop(1, 100, 3.0));
        gaps.started("a", 7.0);
        let empty: Session = serde_json::from_str(SESSION).unwrap();
        gaps.epoch_done(&empty, 7.5); // a: 0.5 s in its first epoch
        gaps.started("a", 8.0); // 0.5 s before the shape: starting workers
        gaps.epoch_done(&empty, 8.5); // a: 1 s in two epochs; 2 s budget left
                                      // 2 s left at 0.5 s an epoch: 4 more epochs, each with 0.5 s / 2
                                      // epochs of time between shapes.
        assert_eq!(gaps.estimate(8.5), (None, 2.0 + 0.25 * 4.0));
        // The epoch limit caps it.
        let mut capped = Eta::new(&names[..1], stop(1, 2, 100.0));
        capped.started("a", 0.0);
        capped.started("zz", 1.0);
        assert_eq!(capped.left(0, 1.0), 1.0);
    }
}
