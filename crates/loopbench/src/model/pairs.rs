//! The explicit subtraction pairs: shapes built to differ in one thing,
//! whose difference prices it directly, shown beside the fit with the same
//! two-stage bootstrap intervals.

use super::features::feature_index;
use super::{interval, row_x, Pair, Row};

/// The explicit subtraction pairs, with the same two-stage bootstrap over
/// epochs and rounds as the prices.
/// `ns` is what the differences are in: ns, or the counter's units.
pub(super) fn pairs(rows: &[Row], k: f64, ns: &str) -> Vec<Pair> {
    let find = |name: &str| rows.iter().find(|r| r.shape == name);
    let mut out = Vec::new();
    let mut add = |name: &str, unit: &str, f: &dyn Fn(f64, f64) -> f64, a: &str, b: &str| {
        if let (Some(x), Some(y)) = (find(a), find(b)) {
            out.push(Pair {
                name: name.to_string(),
                value: f(x.measured, y.measured),
                ci: interval(
                    x.replicates
                        .iter()
                        .zip(&y.replicates)
                        .map(|(p, q)| f(*p, *q))
                        .collect(),
                ),
                unit: unit.to_string(),
            });
        }
    };
    add(
        "taken branch = (br_chain - add_chain) / K",
        ns,
        &|br, add| (br - add) / k,
        "br_chain",
        "add_chain",
    );
    add(
        "shared store / plain store (per iteration)",
        "ratio",
        &|s, p| s / p,
        "shared_store_stream",
        "store_stream",
    );
    add(
        "shared load / plain load (per iteration)",
        "ratio",
        &|s, p| s / p,
        "shared_load_stream",
        "load_stream",
    );
    add(
        "chain through a local vs on the stack = (add_run - add_stack) / K",
        ns,
        &|run, stack| (run - stack) / k,
        "add_run",
        "add_stack",
    );
    add(
        "return vs end = call_return - call_direct",
        ns,
        &|r, d| r - d,
        "call_return",
        "call_direct",
    );
    let misses = |r: &Row| {
        feature_index("mispredict")
            .and_then(|j| row_x(r).get(j).copied())
            .unwrap_or(0.0)
    };
    for (name, a, b) in [
        (
            "misprediction = (branch_random - branch_periodic) / extra mispredicts",
            "branch_random",
            "branch_periodic",
        ),
        (
            "wrong target = (call_indirect_poly - call_indirect_fixed) / extra mispredicts",
            "call_indirect_poly",
            "call_indirect_fixed",
        ),
    ] {
        if let (Some(r), Some(p)) = (find(a), find(b)) {
            let extra = misses(r) - misses(p);
            if extra > 0.0 {
                add(name, ns, &|r, p| (r - p) / extra, a, b);
            }
        }
    }
    let per_byte = |name: &str| find(name).and_then(|r| r.bytes_per_iter).unwrap_or(1.0);
    let (sb, cb) = (per_byte("store_stream"), per_byte("memory_copy"));
    add(
        "store path / memory.copy, per byte",
        "ratio",
        &|s, c| (s / sb) / (c / cb),
        "store_stream",
        "memory_copy",
    );
    out
}
