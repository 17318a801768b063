//! Builds as a level of the design (methodology rule 17): which arms run in
//! layout variants, the build-layout null beside the process null, and the
//! variants built before the first epoch.
//!
//! - Every build arm runs in `--layout-builds K` variants (default
//!   [`crate::workers::layout::DEFAULT_LAYOUT_BUILDS`]), epoch `e` in variant `e mod K`.
//! - So does every engine compiled into this binary: its worker processes
//!   run from K relinks of this binary's own engines
//!   ([`crate::workers::own_build`]), so an engine-against-engine ratio
//!   holds across links, not for one link of loopbench.
//! - Where those relinks cannot be made (no toolchain or target directory
//!   beside the binary, a stale one), one line says why and the results
//!   record it; beside build arms, each compiled-in engine is then measured
//!   as its worker build (this binary's version, release) in variants.
//! - With a baseline in variants, the build-layout null runs the
//!   baseline's variant `e + 1` against its variant `e`: a rebuild that
//!   moved only code, measured in the same session.

use super::{ArmPlan, Plan};
use crate::arm::build::BuildSpec;
use crate::engines::EngineKind;
use crate::error::Error;
use crate::results::Role;
use crate::workers::layout::{Variant, Variants};
use crate::workers::{self, own_build, Isolation, WorkerError};
use std::path::PathBuf;

/// The label of the build-layout null.
pub fn build_null_label(baseline: &str) -> String {
    format!("{baseline}{}", crate::results::BUILD_NULL_SUFFIX)
}

/// The layout variants a session runs.
#[derive(Default)]
pub(super) struct Planned {
    /// Per arm, its variants (parallel to the arms).
    pub(super) layouts: Vec<Option<Variants>>,
    /// The relinks of this binary the compiled-in arms run, by variant.
    pub(super) own: Vec<PathBuf>,
    /// The pool's seeds in the order this session takes them (the first
    /// `own.len()` are linked): what it grows by between epochs.
    pub(super) own_order: Vec<u64>,
    /// Why the compiled-in engines run one code layout, when they do.
    pub(super) one_layout: Option<String>,
}

/// Whether an arm is an engine compiled into this binary (not a build, not
/// the mock engine, which has no code of its own to move).
fn compiled_in(a: &ArmPlan) -> bool {
    a.spec.worker.is_none() && a.spec.engine != EngineKind::Mock
}

/// Decide which arms run in variants, add the build-layout null, and build
/// the variants.
pub(super) fn plan_variants(plan: &Plan, arms: &mut Vec<ArmPlan>) -> Result<Planned, Error> {
    let k = plan.layout_builds.min(plan.stop.max_epochs).max(1);
    let relinks = k >= 2 && plan.isolation == Isolation::Workers && arms.iter().any(compiled_in);
    if relinks || arms.iter().any(|a| a.spec.compiles()) {
        workers::cache::check_root()?;
    }
    let mut planned = Planned {
        layouts: arms.iter().map(|_| None).collect(),
        ..Default::default()
    };
    if k < 2 || plan.isolation != Isolation::Workers {
        return Ok(planned);
    }
    if arms.iter().any(compiled_in) {
        match relinked(arms, k, plan.variant_seed, plan.seed) {
            Ok((own, layouts, order)) => {
                planned.own = own.bins;
                planned.layouts = layouts;
                planned.own_order = order;
            }
            Err(why) => {
                crate::diag!(
                    "compiled-in engines run one code layout: {why} (their intervals have no build component)"
                );
                planned.one_layout = Some(why);
            }
        }
    }
    let any_build = arms.iter().any(|a| a.spec.compiles());
    if !any_build && planned.own.is_empty() {
        return Ok(planned);
    }
    if planned.own.is_empty() {
        promote_compiled_in(arms);
    }
    for (a, layout) in arms.iter_mut().zip(planned.layouts.iter_mut()) {
        if !a.spec.compiles() {
            if layout.is_some() {
                a.variants = k;
            }
            continue;
        }
        match workers::ensure_variants(&a.spec, k, plan.variant_seed) {
            Ok(v) => {
                a.variants = v.variants.len();
                *layout = Some(v);
            }
            Err(e @ WorkerError::Layout { .. }) => {
                return Err(WorkerError::Arm {
                    arm: a.label.clone(),
                    source: Box::new(e),
                }
                .into())
            }
            // A build that fails fails its arm on every shape, as a plain
            // build does; its first variant's failure is the one reported.
            Err(_) => {
                a.variants = 1;
            }
        }
    }
    let base = &arms[0];
    if base.variants >= 2 {
        let null = ArmPlan {
            spec: base.spec.clone(),
            label: build_null_label(&base.label),
            role: Role::BuildNull,
            iters: base.iters,
            variants: base.variants,
            first_variant: 1,
            schedule: Vec::new(),
        };
        let base_layout = planned.layouts[0].clone();
        planned.layouts.push(base_layout);
        arms.push(null);
    }
    debug_assert_eq!(planned.layouts.len(), arms.len());
    Ok(planned)
}

/// This binary relinked in `k` variants, the first `k` of the pool in the
/// session's draw ([`own_build::draw`]), and each compiled-in arm's record
/// of them (how far its engine's functions moved); with the whole draw,
/// for the variants the session adds between epochs. The one-line reason
/// when that cannot be done.
#[allow(clippy::type_complexity)]
fn relinked(
    arms: &[ArmPlan],
    k: usize,
    pool_seed: u64,
    session_seed: u64,
) -> Result<(own_build::OwnVariants, Vec<Option<Variants>>, Vec<u64>), String> {
    let order = own_build::draw(pool_seed, session_seed);
    let own = own_build::ensure(&order[..k.min(order.len())], true).map_err(|e| e.to_string())?;
    let paths: Vec<&std::path::Path> = own.bins.iter().map(PathBuf::as_path).collect();
    let mut moved_by_engine = std::collections::HashMap::new();
    let mut layouts = Vec::with_capacity(arms.len());
    for a in arms {
        if !compiled_in(a) {
            layouts.push(None);
            continue;
        }
        let engine = a.spec.engine;
        if let std::collections::hash_map::Entry::Vacant(e) = moved_by_engine.entry(engine) {
            e.insert(workers::layout::differ(&paths, engine).map_err(|e| e.to_string())?);
        }
        layouts.push(Some(Variants {
            variants: own
                .seeds
                .iter()
                .enumerate()
                .map(|(index, &seed)| own_variant(index, seed))
                .collect(),
            moved: moved_by_engine[&engine].clone(),
            seconds: own.seconds,
        }));
    }
    Ok((own, layouts, order))
}

/// The record of the session's variant `index` of this binary, linked
/// with `seed`.
pub(super) fn own_variant(index: usize, seed: u64) -> Variant {
    Variant {
        index,
        seed,
        key: format!("own/{}/{seed}", crate::versions::binary_id()),
    }
}

/// Whether two arms run in paired layouts: builds of one engine that
/// run, epoch by epoch, the same variant index, and a build arm's variant
/// `i` is linked in the order [`workers::layout::ordering`] draws from
/// [`workers::layout::seed`] of the session and `i`, whatever its source.
/// So each epoch's pair shares one order of the functions they share, and
/// where that places the two builds alike its effect cancels in their
/// ratio. (The build-layout null runs the baseline's next variant: never
/// paired, it is what an unpaired relink moves.)
pub(super) fn paired(a: &ArmPlan, b: &ArmPlan) -> bool {
    let build = |x: &ArmPlan| x.spec.compiles() && x.role != Role::BuildNull && x.variants >= 2;
    build(a)
        && build(b)
        && a.spec.engine == b.spec.engine
        && a.variants == b.variants
        && a.first_variant == b.first_variant
}

/// Whether an arm runs from this binary's relinks (its layout record is
/// theirs).
pub(super) fn runs_own_variants(a: &ArmPlan, layout: Option<&Variants>) -> bool {
    compiled_in(a) && layout.is_some()
}

/// In-process arms of buildable engines become their worker builds (this
/// binary's version), so both sides of a comparison sample their layouts.
fn promote_compiled_in(arms: &mut [ArmPlan]) {
    for a in arms.iter_mut().filter(|a| a.spec.worker.is_none()) {
        let mut spec = a.spec.clone();
        spec.worker = Some(BuildSpec::default());
        if workers::check(&spec).is_err() {
            continue;
        }
        if a.role != Role::Null {
            crate::diag!(
                "{}: measured as its worker build ({} {}, release) in layout variants, \
                 to compare with build arms on equal terms (--layout-builds 1 keeps the compiled-in build)",
                a.label,
                spec.engine,
                spec.engine.version()
            );
        }
        a.spec = spec;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arm::{ArmSpec, Iters};

    fn arm(spec: &str, role: Role) -> ArmPlan {
        ArmPlan {
            spec: spec.parse::<ArmSpec>().unwrap(),
            label: spec.to_string(),
            role,
            iters: Iters::default(),
            variants: 0,
            first_variant: 0,
            schedule: Vec::new(),
        }
    }

    #[test]
    fn compiled_in_engines_become_worker_builds_beside_build_arms() {
        let mut arms = vec![
            arm("wasmi", Role::Baseline),
            arm("wasmi@=2.0.0", Role::Candidate),
            arm("mock", Role::Candidate),
            arm("wasmi", Role::Null),
        ];
        promote_compiled_in(&mut arms);
        let build = arms[0].spec.worker.as_ref().expect("promoted");
        assert_eq!(
            *build,
            BuildSpec::default(),
            "this binary's version, release"
        );
        assert_eq!(arms[0].label, "wasmi", "the label stays the user's");
        assert_eq!(arms[3].spec, arms[0].spec, "the null is the same build");
        assert!(
            arms[2].spec.worker.is_none(),
            "the mock engine is not buildable"
        );
        assert_eq!(arms[1].spec.to_string(), "wasmi@=2.0.0");
    }

    #[test]
    fn no_build_arm_or_one_variant_or_one_epoch_means_no_variants() {
        // (The mock engine has no code of its own to relink; compiled-in
        // engines in variants are tests/layouts.rs's.)
        for (engines, k, max_epochs) in [
            ("mock,mock:cost=2", 4, 200),
            ("wasmi,wasmi@=2.0.0", 1, 200),
            ("wasmi,wasmi@=2.0.0", 4, 1),
        ] {
            let plan = Plan {
                layout_builds: k,
                stop: crate::stats::stop::StopRule {
                    max_epochs,
                    ..Default::default()
                },
                ..Default::default()
            };
            let mut arms: Vec<ArmPlan> = engines
                .split(',')
                .map(|e| arm(e, Role::Candidate))
                .collect();
            let before: Vec<String> = arms.iter().map(|a| a.spec.to_string()).collect();
            let planned = plan_variants(&plan, &mut arms).unwrap();
            assert!(planned.own.is_empty() && planned.one_layout.is_none());
            assert!(
                planned.layouts.iter().all(Option::is_none),
                "{engines} {k} {max_epochs}"
            );
            let after: Vec<String> = arms.iter().map(|a| a.spec.to_string()).collect();
            assert_eq!(before, after, "nothing promoted, no build null");
            assert!(arms.iter().all(|a| a.variant(3).is_none()));
        }
    }

    #[test]
    fn variants_cycle_per_epoch_and_the_build_null_runs_the_next_one() {
        let mut a = arm("wasmi@=2.0.0", Role::Baseline);
        a.variants = 3;
        let seen: Vec<Option<usize>> = (0..4).map(|e| a.variant(e)).collect();
        assert_eq!(seen, [Some(0), Some(1), Some(2), Some(0)]);
        a.first_variant = 1;
        let seen: Vec<Option<usize>> = (0..4).map(|e| a.variant(e)).collect();
        assert_eq!(seen, [Some(1), Some(2), Some(0), Some(1)]);
    }

    /// Variants linked between epochs do not move what earlier epochs ran,
    /// and while every epoch ran a variant of its own there is no rotation
    /// to wait for.
    #[test]
    fn an_epochs_variant_is_fixed_when_it_starts_and_grown_variants_are_fresh() {
        let mut a = arm("wasmi", Role::Baseline);
        a.variants = 2;
        for e in 0..2 {
            a.schedule.push(a.variant(e).unwrap());
        }
        assert_eq!(a.rotation(), 0, "two epochs, two variants");
        // Two more linked: epochs 2 and 3 run them; 0 and 1 keep theirs.
        a.variants = 4;
        for e in 2..4 {
            a.schedule.push(a.variant(e).unwrap());
        }
        assert_eq!(a.schedule, [0, 1, 2, 3]);
        assert_eq!(a.rotation(), 0);
        // No more: the fifth epoch reruns one, and precision waits for
        // whole rotations of the four.
        a.schedule.push(a.variant(4).unwrap());
        assert_eq!(a.schedule[4], 0);
        assert_eq!(a.rotation(), 4);
    }
}
