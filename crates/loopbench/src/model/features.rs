//! The features of the fit: one column per instruction class the counting
//! pass knows, plus the dynamic quantities that cost more than their
//! instruction count says. One definition of a feature's value serves the
//! shapes (per iteration) and the apps (per rep), so a price fitted on the
//! catalog multiplies exactly the quantity an app's counting run reports.

use crate::results::ShapeResult;

/// The features of the fit: every instruction class the counting pass
/// knows (with `local` and `const` split into what a register machine
/// executes and the `operand`s it folds), plus dynamic quantities that
/// cost more than their instruction count says (taken branches, bytes
/// copied and bytes filled by bulk operators, and the simulated
/// predictor's mispredictions, so a data-dependent ladder or switch is
/// priced from data instead of being left as residual).
pub const FEATURES: &[&str] = &[
    "control",
    "branch",
    "local",
    "global",
    "const",
    "operand",
    "int",
    "int_shift",
    "int_mul",
    "float",
    "conversion",
    "load",
    "store",
    "call",
    "call_indirect",
    "return",
    "tail_call",
    "simd",
    "other",
    "atomic",
    "taken_branch",
    "block_entry",
    "bulk_byte",
    "fill_byte",
    "mispredict",
];

/// A shape's feature vector from its counted per-iteration counts.
pub fn features(r: &ShapeResult) -> Option<Vec<f64>> {
    feature_vector(r.counts_per_iter.as_ref()?)
}

/// The feature vector of counted per-iteration counts, in [`FEATURES`]
/// order; `None` for declared counts, which have no class split.
pub fn feature_vector(c: &crate::results::IterCounts) -> Option<Vec<f64>> {
    if c.classes.is_empty() {
        return None;
    }
    let class = |k: &str| c.classes.get(k).copied().unwrap_or(0.0);
    // Files from before `bulk_bytes` was recorded: a bulk shape's bytes are
    // its bulk bytes.
    let bulk = c.bulk_bytes.unwrap_or(if class("bulk_memory") > 0.0 {
        c.bytes
    } else {
        0.0
    });
    // Files from before fills were told apart: every bulk byte a copy's.
    let fill = c.bulk_fill_bytes.unwrap_or(0.0);
    let dynamic = Dynamic {
        taken_branches: c.taken_branches,
        // Files from before block entries were counted: none, so the
        // feature is reported as not identifiable rather than priced.
        block_entries: c.block_entries.unwrap_or(0.0),
        copied: bulk - fill,
        filled: fill,
        mispredicts: c.mispredicts.unwrap_or(0.0),
    };
    Some(
        FEATURES
            .iter()
            .map(|f| {
                feature_value(
                    f,
                    &class,
                    &|k| c.folded.get(k).copied().unwrap_or(0.0),
                    &dynamic,
                )
            })
            .collect(),
    )
}

// The feature names that are not instructions live with the model's result
// types, which app documents read too.
pub use crate::results::model::EXTRA;

/// The dynamic quantities of [`EXTRA`], counted for a shape (per
/// iteration) or an app (per rep).
#[derive(Clone, Copy, Debug, Default)]
pub struct Dynamic {
    pub taken_branches: f64,
    /// Function entries, loop header executions and `if`s: where an engine
    /// that meters blocks (wasmi's fuel) pays once per block.
    pub block_entries: f64,
    /// Bytes copied and bytes filled by bulk operators.
    pub copied: f64,
    pub filled: f64,
    /// The simulated predictor's mispredictions.
    pub mispredicts: f64,
}

/// One feature's value from counted quantities: the one definition for
/// shapes (per iteration) and apps (per rep). `local` and `const` count
/// only the instructions a register machine must execute (moves and
/// constants it cannot fold); the folded ones are `operand`.
pub fn feature_value(
    feature: &str,
    class: &dyn Fn(&str) -> f64,
    folded: &dyn Fn(&str) -> f64,
    d: &Dynamic,
) -> f64 {
    match feature {
        "taken_branch" => d.taken_branches,
        "block_entry" => d.block_entries,
        "mispredict" => d.mispredicts,
        "bulk_byte" => d.copied,
        "fill_byte" => d.filled,
        "operand" => folded("local") + folded("const"),
        "local" | "const" => class(feature) - folded(feature),
        other => class(other),
    }
}

/// A feature's column in [`FEATURES`].
pub(super) fn feature_index(name: &str) -> Option<usize> {
    FEATURES.iter().position(|f| *f == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_counted_class_is_a_feature() {
        for c in loopbench_count::OpClass::ALL {
            let name = c.name();
            assert!(
                FEATURES.contains(&name) || name == "bulk_memory",
                "{name} is neither a feature nor priced per byte"
            );
        }
        assert!(FEATURES.contains(&"mispredict"));
    }

    #[test]
    fn folded_operands_are_their_own_feature_and_bulk_bytes_only_count_for_bulk_ops() {
        let class = |k: &str| match k {
            "local" => 10.0,
            "const" => 3.0,
            "int" => 4.0,
            _ => 0.0,
        };
        let folded = |k: &str| match k {
            "local" => 8.0,
            "const" => 2.0,
            _ => 0.0,
        };
        let dynamic = Dynamic {
            taken_branches: 1.0,
            block_entries: 2.0,
            mispredicts: 0.75,
            ..Dynamic::default()
        };
        let v = |f: &str| feature_value(f, &class, &folded, &dynamic);
        assert_eq!((v("local"), v("const"), v("operand")), (2.0, 1.0, 10.0));
        assert_eq!(
            (
                v("int"),
                v("taken_branch"),
                v("block_entry"),
                v("mispredict")
            ),
            (4.0, 1.0, 2.0, 0.75)
        );
        // Every instruction is counted once: classes == non-extra features.
        let ops: f64 = FEATURES
            .iter()
            .filter(|f| !EXTRA.contains(f))
            .map(|f| v(f))
            .sum();
        assert_eq!(ops, 17.0);
        // A shape that only loads and stores has no bulk bytes.
        let mut c = crate::results::IterCounts {
            ops: 3.0,
            taken_branches: 1.0,
            loads: 1.0,
            stores: 0.0,
            calls: 0.0,
            bytes: 4.0,
            bulk_bytes: None,
            bulk_fill_bytes: None,
            transfers: None,
            block_entries: None,
            mispredicts: None,
            multiway_mispredicts: None,
            classes: [("load".to_string(), 1.0), ("bulk_memory".to_string(), 0.0)].into(),
            folded: Default::default(),
            source: "counted".into(),
            note: None,
        };
        let bulk = feature_index("bulk_byte").unwrap();
        assert_eq!(feature_vector(&c).unwrap()[bulk], 0.0);
        c.classes.insert("bulk_memory".into(), 1.0);
        c.bytes = 4096.0;
        assert_eq!(feature_vector(&c).unwrap()[bulk], 4096.0);
        // A fill's bytes are written only: a feature of their own.
        let fill = feature_index("fill_byte").unwrap();
        (c.bulk_bytes, c.bulk_fill_bytes) = (Some(4096.0), Some(4096.0));
        let x = feature_vector(&c).unwrap();
        assert_eq!((x[bulk], x[fill]), (0.0, 4096.0));
    }
}
