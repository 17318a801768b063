//! The dynamic mix from a counting run, as text.

use loopbench_count::{Counts, OpClass};
use std::fmt::Write;

/// Absolute counts, and per iteration when `iters` is given.
pub fn render(title: &str, c: &Counts, iters: Option<u64>) -> String {
    let mut out = String::new();
    let per = |x: u64| {
        iters
            .map(|n| format!("{:>14.3}", x as f64 / n as f64))
            .unwrap_or_default()
    };
    let _ = writeln!(out, "{title}");
    let head_iter = if iters.is_some() {
        format!("{:>14}", "per iter")
    } else {
        String::new()
    };
    let _ = writeln!(
        out,
        "  {:<16} {:>16} {head_iter} {:>7}",
        "class", "executed", "share"
    );
    for class in OpClass::ALL {
        let n = c.class(class);
        if n == 0 {
            continue;
        }
        let share = 100.0 * n as f64 / c.total_ops.max(1) as f64;
        let _ = writeln!(
            out,
            "  {:<16} {n:>16} {} {share:>6.1}%",
            class.name(),
            per(n)
        );
    }
    let _ = writeln!(
        out,
        "  {:<16} {:>16} {}",
        "total ops",
        c.total_ops,
        per(c.total_ops)
    );
    let _ = writeln!(out);
    for (what, n) in [
        ("taken branches", c.taken_branches),
        ("calls", c.calls),
        ("returns", c.returns),
        ("transfers", c.transfers),
        ("block entries", c.block_entries),
        ("bytes loaded", c.bytes_loaded),
        ("bytes stored", c.bytes_stored),
        ("bulk bytes", c.bulk_bytes),
    ] {
        let _ = writeln!(out, "  {what:<16} {n:>16} {}", per(n));
    }
    let mut funcs = c.functions.clone();
    funcs.sort_by_key(|f| std::cmp::Reverse(f.ops));
    if !funcs.is_empty() {
        let _ = writeln!(out, "\n  hottest functions (ops, share, entries):");
        for f in funcs.iter().take(5) {
            let name = f
                .name
                .clone()
                .unwrap_or_else(|| format!("func[{}]", f.index));
            let share = 100.0 * f.ops as f64 / c.total_ops.max(1) as f64;
            let _ = writeln!(
                out,
                "    {name:<32} {:>14} {share:>6.1}% {:>12}",
                f.ops, f.entries
            );
        }
    }
    let mut loops = c.loops.clone();
    loops.sort_by_key(|l| std::cmp::Reverse(l.ops));
    if !loops.is_empty() {
        let _ = writeln!(out, "  hottest loops (function, offset, ops, iterations):");
        for l in loops.iter().take(5) {
            let _ = writeln!(
                out,
                "    func[{}] @{:#x} {:>14} {:>12}",
                l.function, l.offset, l.ops, l.iterations
            );
        }
    }
    out
}
