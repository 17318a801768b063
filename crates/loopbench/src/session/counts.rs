//! A shape's counts per iteration in a session's results: exact from the
//! counting run, checked against the shape's declaration, else declared
//! and labelled as such.

use crate::error::Error;
use crate::results::IterCounts;
use crate::shapes::{Declared, ShapeModule};

impl IterCounts {
    pub fn declared(d: &Declared) -> Self {
        let per = d.per.max(1) as f64;
        IterCounts {
            ops: d.ops as f64 / per,
            taken_branches: d.taken_branches as f64 / per,
            loads: d.loads as f64 / per,
            stores: d.stores as f64 / per,
            calls: d.calls as f64 / per,
            bytes: d.bytes as f64 / per,
            bulk_bytes: None,
            bulk_fill_bytes: None,
            transfers: None,
            block_entries: None,
            mispredicts: None,
            multiway_mispredicts: None,
            classes: Default::default(),
            folded: Default::default(),
            source: "declared".to_string(),
            note: None,
        }
    }

    pub fn counted(c: &crate::count::ShapeCounts) -> Self {
        use loopbench_count::OpClass;
        let p = c.per_iter();
        IterCounts {
            ops: p.total_ops,
            taken_branches: p.taken_branches,
            loads: p.classes.get(&OpClass::Load).copied().unwrap_or(0.0),
            stores: p.classes.get(&OpClass::Store).copied().unwrap_or(0.0),
            calls: p.calls,
            bytes: p.bytes_loaded + p.bytes_stored + p.bulk_bytes,
            bulk_bytes: Some(p.bulk_bytes),
            bulk_fill_bytes: Some(p.bulk_fill_bytes),
            transfers: Some(p.transfers),
            block_entries: Some(p.block_entries),
            mispredicts: Some(c.mispredicts_per_iter()),
            multiway_mispredicts: Some(c.multiway_mispredicts_per_iter()),
            classes: crate::count::class_map(&p.classes),
            folded: crate::count::class_map(&p.folded),
            source: "counted".to_string(),
            note: None,
        }
    }
}

/// Exact counts for a shape from the counting run, checked against its
/// declaration. Shapes the counting engine (wasmi) cannot run keep their
/// declared counts, labelled as such.
pub fn shape_counts(module: &ShapeModule) -> Result<Option<IterCounts>, Error> {
    if !module.shape.counted_in_session() {
        return Ok(None);
    }
    if let Some(p) = crate::count::counting_engine_lacks(&module.wasm)? {
        return Ok(module.declared.as_ref().map(|d| IterCounts {
            note: Some(format!("declared: the counting engine (wasmi) lacks {p}")),
            ..IterCounts::declared(d)
        }));
    }
    let counted = crate::count::count_shape(module)?;
    if counted.delta.total_ops == 0 {
        // Twice the iterations, not one instruction more: the loop ignores
        // its count, and a time per iteration would measure nothing.
        return Err(Error::Usage(format!(
            "shape {}: run({}) executes exactly the instructions of run({}): its loop does not take its iteration count, so a time per iteration would measure nothing",
            module.name(),
            2 * counted.iters,
            counted.iters
        )));
    }
    if let Some(d) = &module.declared {
        crate::count::check_declared(module.name(), d, &counted)?;
    }
    Ok(Some(IterCounts::counted(&counted)))
}
