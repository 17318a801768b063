//! Anchors: features priced by a pair of twin shapes instead of by the
//! joint fit. Twins differ in one counted feature (or also in features
//! anchored before it), so their difference prices it with nothing to
//! trade against; the fit then prices what is left.

/// A price taken from a subtraction pair rather than from the joint fit.
pub struct Anchor {
    pub feature: &'static str,
    /// The shape with more of `feature`...
    pub a: &'static str,
    /// ...and its twin, identical in every other counted feature.
    pub b: &'static str,
    /// Only when pricing a counter: instruction counts add up exactly, so
    /// the twins' difference is the price anywhere; a time does not when
    /// the twin chains the feature into a latency no other code has.
    pub counts_only: bool,
}

/// Features priced by a pair of twin shapes instead of the fit, in order.
/// The twins' counted vectors differ in this feature only, or also in
/// features anchored before it (checked on the counts each time), so
/// `(a - b - earlier anchors' share) / (x_a - x_b)` prices it with nothing
/// to trade against; in the joint fit NNLS shifts part of it onto the
/// compares and taken branches that ride with it, and prices it low.
///
/// One misprediction feature for every kind: the counts split wrong
/// directions from wrong targets, but the catalog has no twins that price
/// a `br_table`'s wrong target apart (the call twins `call_indirect_poly`
/// and `call_indirect_fixed` price a `call_indirect`'s, shown as a pair,
/// and it is near zero where the callees share one code shape).
///
/// `control` is anchored too: in every other shape `block`/`end` ride with
/// the adds and branches inside them, so the fit priced them at whatever
/// made those shapes add up (0.4 ns on wasmi, which resolves blocks when
/// it compiles) and took as much off `int`, which straight-line code then
/// missed by a third.
///
/// `block_entry` is anchored after it when a counter is priced, from a
/// `loop` that is only fallen into against a `block` (the same ops): with
/// the fit alone it rode with the loop header every shape has once per
/// iteration, and wasmi's fuel, exactly 12 host instructions per block
/// entry, was priced at 7.4 and the rest spread over `int`, `load` and
/// `branch`, which over-projected fuel on apps two-fold. In time the twin
/// is not a price: its eight fuel checks in a row form a chain through the
/// fuel counter (2.4 ns per entry on wasmi:fuel here, against 0.4-0.9 ns in
/// the other shapes, and apps run 12 to 1100 ops per block entry, the twin
/// 6), so the fit prices it there.
pub const ANCHORS: &[Anchor] = &[
    Anchor {
        feature: "control",
        a: "add_blocks",
        b: "add_run",
        counts_only: false,
    },
    Anchor {
        feature: "block_entry",
        a: "add_loops",
        b: "add_blocks",
        counts_only: true,
    },
    Anchor {
        feature: "mispredict",
        a: "branch_random",
        b: "branch_periodic",
        counts_only: false,
    },
];

/// `x_a[j] - x_b[j]` when the two counted vectors differ in feature `j`
/// (`a` having more of it) and otherwise only in `known` features;
/// `None` when they are not twins.
pub fn twin_difference(xa: &[f64], xb: &[f64], j: usize, known: &[bool]) -> Option<f64> {
    let others_equal = xa.iter().zip(xb).enumerate().all(|(k, (p, q))| {
        k == j || known.get(k) == Some(&true) || (p - q).abs() <= 1e-9 * (1.0 + p.abs())
    });
    let dx = xa[j] - xb[j];
    (others_equal && dx > 1e-9).then_some(dx)
}
