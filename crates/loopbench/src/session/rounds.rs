//! How many rounds an epoch of a shape runs: fewer where the spread
//! between epochs (code layouts, processes) outweighs the noise within one.
//!
//! An epoch's estimate varies by `s_b^2 + s_w^2 / r` (between epochs, then
//! `r` rounds of per-round noise `s_w^2`), and costs `c0 + r c1` (what a
//! shape's epoch costs whatever its rounds: preparing every arm and its
//! warm-up; then a round of every arm). For a fixed time the mean over
//! epochs has the least variance at `r = sqrt(c0 s_w^2 / (c1 s_b^2))`
//! (Cochran, "Sampling Techniques", 1977, ch. 10, two-stage sampling with
//! equal units): when layouts move a shape by 8-19% and its rounds agree
//! within 1-2%, more epochs of a fresh layout each buy far more than more
//! rounds of the same one. Both components are the shape's own, measured
//! in the session so far; the cost ratio `c0 / c1` is taken as the warm-up
//! rounds plus one (preparing every arm costs about a round: compile and
//! instantiate were 3% of a default session, the rounds 60%).
//!
//! The count only falls, to whole periods of the order design (its
//! balance holds per period), never below one period and never above the
//! session's; a shape whose layout component is not yet separable from
//! the noise keeps the session's.

use crate::results::Layout;

/// Epochs a shape runs before its components are trusted.
const MEASURED_EPOCHS: usize = 3;

/// The rounds the next epochs of a shape run, from the layouts of its
/// comparisons so far: its epochs ran `now` rounds, the session's are
/// `most`, the order's period `period`, with `warmup` rounds before them.
pub(super) fn adapted<'a>(
    layouts: impl IntoIterator<Item = &'a Layout>,
    now: usize,
    most: usize,
    period: usize,
    warmup: usize,
) -> usize {
    let period = period.max(1);
    // The comparison whose epochs vary most decides: it is the widest.
    let widest = layouts
        .into_iter()
        .filter(|l| l.epochs >= MEASURED_EPOCHS)
        .filter_map(|l| Some((l.between_epoch_sd_pct? / 100.0, l.layout_sd_pct? / 100.0)))
        .max_by(|a, b| a.0.total_cmp(&b.0));
    let Some((between, layout)) = widest else {
        return now;
    };
    let (between_var, layout_var) = (between * between, layout * layout);
    if !(layout_var > 0.0 && between_var.is_finite()) {
        return now;
    }
    // The epoch estimate's noise at `now` rounds, per round.
    let per_round = (between_var - layout_var).max(0.0) * now as f64;
    let cost_ratio = (warmup + 1) as f64;
    let best = (per_round * cost_ratio / layout_var).sqrt();
    let whole = ((best / period as f64).ceil() as usize).max(1) * period;
    whole.min(most).min(now).max(period.min(now))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(between_pct: f64, layout_pct: f64, epochs: usize) -> [Layout; 1] {
        [Layout {
            epochs,
            between_epoch_sd_pct: Some(between_pct),
            layout_sd_pct: Some(layout_pct),
            ..Default::default()
        }]
    }

    #[test]
    fn a_dominant_layout_component_takes_the_fewest_rounds() {
        // 8% between layouts, an epoch's median within 1% at 20 rounds:
        // per round 4.5%, sqrt(20 * 1e-4 * 2 / 64e-4) = 0.79: one period.
        let between = (8.0f64.powi(2) + 1.0).sqrt();
        assert_eq!(adapted(&result(between, 8.0, 5), 20, 20, 10, 1), 10);
        assert_eq!(adapted(&result(between, 8.0, 5), 18, 18, 6, 1), 6);
    }

    #[test]
    fn noise_within_epochs_keeps_the_rounds() {
        // Layout 1%, an epoch's median within 2% at 20 rounds: per round
        // 8.9%, sqrt(20 * 4e-4 * 2 / 1e-4) = 12.6: two periods of 10.
        let between = (1.0f64 + 4.0).sqrt();
        assert_eq!(adapted(&result(between, 1.0, 5), 20, 20, 10, 1), 20);
        // With periods of 6: 18.
        assert_eq!(adapted(&result(between, 1.0, 5), 24, 24, 6, 1), 18);
    }

    #[test]
    fn too_few_epochs_or_no_layout_component_change_nothing() {
        assert_eq!(adapted(&result(9.0, 8.0, 2), 20, 20, 10, 1), 20);
        assert_eq!(adapted(&result(1.0, 0.0, 9), 20, 20, 10, 1), 20);
        assert_eq!(adapted(&[], 20, 20, 10, 1), 20);
        // Never more than now, never less than a period.
        assert_eq!(adapted(&result(9.0, 8.0, 9), 10, 20, 10, 1), 10);
    }
}
