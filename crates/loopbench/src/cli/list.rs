//! `loopbench list` and `loopbench show`: what can be measured here.

use super::ShapeParams;
use crate::arm::{ArmSpec, EngineKind};
use crate::error::Error;
use crate::shapes::{self, Body, Params};
use clap::Args;

pub fn list() -> Result<bool, Error> {
    let p = Params::default();
    crate::outln!(
        "Shapes (declared per-iteration counts at --bytes {}, K = {}):",
        crate::units::format_bytes(p.bytes),
        p.k
    );
    crate::outln!(
        "  {:<20} {:>6} {:>6} {:>5} {:>6} {:>5} {:>6}  prices",
        "name",
        "ops",
        "taken",
        "loads",
        "stores",
        "calls",
        "bytes"
    );
    for s in shapes::catalog() {
        let d = s.declared(&p);
        let per = d.per.max(1) as f64;
        let f = |x: u64| {
            let v = x as f64 / per;
            if v.fract() == 0.0 {
                format!("{v:.0}")
            } else {
                format!("{v:.3}")
            }
        };
        crate::outln!(
            "  {:<20} {:>6} {:>6} {:>5} {:>6} {:>5} {:>6}  {}",
            s.name(),
            f(d.ops),
            f(d.taken_branches),
            f(d.loads),
            f(d.stores),
            f(d.calls),
            f(d.bytes),
            s.prices()
        );
    }
    crate::outln!();
    crate::outln!(
        "Engines (arm syntax: engine[:option,...]; the first arm or --baseline is the baseline):"
    );
    for k in EngineKind::ALL {
        let status = if k.compiled_in() {
            match ArmSpec::new(k).build() {
                Ok(e) => e.version(),
                Err(e) => e.to_string(),
            }
        } else {
            format!("not compiled in (rebuild with --features {})", k.feature())
        };
        crate::outln!("  {:<10} {status}", k.name());
        for (opt, what) in k.options() {
            crate::outln!("    {}:{opt:<12} {what}", k.name());
        }
    }
    crate::outln!();
    crate::out!("{}", crate::workers::help());
    Ok(true)
}

#[derive(Args, Debug)]
pub struct ShowArgs {
    /// Shape name (see `loopbench list`).
    pub shape: String,
    #[command(flatten)]
    pub params: ShapeParams,
}

impl ShowArgs {
    pub fn execute(&self) -> Result<bool, Error> {
        let shape = shapes::lookup(&self.shape)?;
        let p = self.params.params();
        let d = shape.declared(&p);
        // The same limits as `run`: never show a count that run refuses.
        let (iters, mem) = shapes::check_params(shape.as_ref(), &p)?;
        crate::outln!(";; shape {}: {}", shape.name(), shape.prices());
        crate::outln!(
            ";; parameters: bytes = {}, K = {}, iterations = {iters}, linear memory = {}",
            crate::units::format_bytes(p.bytes),
            p.k,
            crate::units::format_bytes(mem)
        );
        crate::outln!(
            ";; declared per {} iteration(s): ops {}, taken branches {}, loads {}, stores {}, calls {}, bytes {}",
            d.per, d.ops, d.taken_branches, d.loads, d.stores, d.calls, d.bytes
        );
        crate::out!("{}", shape.wat(&p, Body::Enabled));
        Ok(true)
    }
}
