//! Inline cycle-counter probes for an engine's hot path.
//!
//! When an operation is a few hundred cycles to a few microseconds long,
//! a sampling profiler mostly sees its own noise. The alternative is to read
//! the cycle counter around each sub-phase of the operation, add the deltas up
//! per phase, count the operations, and print cycles per op and each phase's
//! share. One line of that data says which phase dominates, and so which
//! change to make; this crate is that method packaged so it is cheap enough
//! to leave in an engine's inner loop and honest about what it measured.
//!
//! The pieces, in the order data flows through them:
//!
//! | stage | item | module |
//! |---|---|---|
//! | read the counter (fenced or serialising) | [`Read`], [`counter::start`] | [`counter`] |
//! | declare phases, bracket regions, count ops | [`Phase`], [`Guard`], [`phases!`], [`probe!`], [`count_ops`] | [`phase`] |
//! | per-thread sums, flushed once to padded atomics | [`flush`], [`reset`] | [`phase`] |
//! | tick rate and probe cost, measured here | [`calibrate`], [`Clock`], [`Overhead`] | [`counter`], [`overhead`] |
//! | cycles/op, share, unaccounted, warnings; text and JSON | [`Report`], [`Runs`], [`Warning`] | [`report`] |
//!
//! Everything is behind the `enabled` feature. Without it, [`Phase`] and
//! [`Guard`] are zero-sized, `Guard` has no destructor, every function is an
//! empty inline body, and [`Report::capture`] says probes are disabled, so an
//! engine can keep its probes in the source at no cost.
//!
//! ```
//! use loopbench_probe::{count_ops, phases, probe, Report};
//!
//! phases! {
//!     static STEP = "step";
//!     static DECODE = "decode" in STEP;
//!     static EXECUTE = "execute" in STEP;
//! }
//!
//! let code = [1u8, 2, 3, 4];
//! let mut acc = 0u64;
//! for &byte in code.iter().cycle().take(10_000) {
//!     let _step = STEP.enter();
//!     let op = probe!(DECODE, { byte & 3 });
//!     probe!(EXECUTE, { acc = acc.wrapping_mul(31).wrapping_add(u64::from(op)) });
//!     count_ops(1);
//! }
//!
//! let report = Report::capture();
//! # #[cfg(feature = "enabled")]
//! assert_eq!(report.ops, 10_000);
//! print!("{report}");
//! ```

pub mod counter;
mod json;
pub mod overhead;
pub mod phase;
pub mod report;

pub use counter::{Clock, Counter, Read};
pub use overhead::{Overhead, ReadCost};
pub use phase::{count_ops, flush, reset, Guard, Phase};
pub use report::{PhaseStats, Report, Runs, ShareSeries, Warning};

/// Whether this build records anything (the `enabled` feature).
pub const ENABLED: bool = cfg!(feature = "enabled");

/// Calibrates the counter against [`std::time::Instant`] and measures the
/// probe's own cost now (about 100 ms), instead of inside the first
/// [`Report::capture`]. Idempotent; does nothing without the `enabled`
/// feature.
pub fn calibrate() {
    #[cfg(feature = "enabled")]
    {
        let _ = counter::clock();
        let _ = overhead::overhead();
    }
}

/// Declares phases as statics, optionally nested and optionally serialising.
///
/// ```
/// loopbench_probe::phases! {
///     /// One interpreter step.
///     pub static STEP = "step";
///     pub static DECODE = "decode" in STEP;
///     pub(crate) static LOAD = "load" in STEP, serialising;
/// }
/// ```
///
/// expands to
///
/// ```
/// # use loopbench_probe::Phase;
/// pub static STEP: Phase = Phase::new("step");
/// pub static DECODE: Phase = Phase::new("decode").under(&STEP);
/// pub(crate) static LOAD: Phase = Phase::new("load").under(&STEP).serialising();
/// ```
#[macro_export]
macro_rules! phases {
    ($(
        $(#[$meta:meta])*
        $vis:vis static $name:ident = $label:literal $(in $parent:path)? $(, $mode:ident)? ;
    )*) => {
        $(
            $(#[$meta])*
            $vis static $name: $crate::Phase =
                $crate::Phase::new($label) $(.under(&$parent))? $(.$mode())?;
        )*
    };
}

/// Brackets a block with a phase and evaluates to the block's value:
/// `probe!(DECODE, { decode(pc) })` is
/// `{ let _g = DECODE.enter(); decode(pc) }`.
#[macro_export]
macro_rules! probe {
    ($phase:expr, $body:block) => {{
        let _loopbench_probe_guard = $phase.enter();
        $body
    }};
}
