//! The binary's behaviour, end to end.

/// --counters: availability, TSC, callgrind exact counts.
mod counters;
/// Issue 26: no call into an engine without a deadline; budgets bound epochs.
mod deadlines;
/// Bad input: one clear line, non-zero exit, no panic text.
mod errors;
/// Issue 26: hostile names are escaped in Markdown and on the terminal.
mod escaping;
/// JSON output and its schema keys.
mod json;
/// Issue 26: failing exports and databases, signals, children left running.
mod lifecycle;
/// `noise`: the levels of the noise, per rep length, and bad sweeps.
mod noise;
/// Issue 53: devices, FIFOs and links as outputs; outputs that are inputs.
mod outputs;
/// Lost results, hangs, wrong numbers, crashes and messages.
mod reliability;
/// CSV, Markdown and HTML files; `report` and `compare` of saved sessions.
mod reports;
/// list, show and a small session.
mod run;
pub(crate) mod util;
