//! Builds as a level of the design (methodology rule 17): which arms run in
//! layout variants, the build-layout null beside the process null, and the
//! variants built before the first epoch.
//!
//! - Every build arm runs in `--layout-builds K` variants (default
//!   [`crate::workers::layout::DEFAULT_LAYOUT_BUILDS`]), epoch `e` in variant `e mod K`.
//! - When a session compares build arms, an engine compiled into this
//!   binary is one fixed build: its layout would be a single draw against
//!   the other side's K. So each in-process arm of a buildable engine is
//!   measured as its worker build (this binary's version, release) in
//!   variants too, and the session says so.
//! - With a baseline in variants, the build-layout null runs the
//!   baseline's variant `e + 1` against its variant `e`: a rebuild that
//!   moved only code, measured in the same session.

use super::{ArmPlan, Plan};
use crate::arm::build::BuildSpec;
use crate::error::Error;
use crate::results::Role;
use crate::workers::layout::Variants;
use crate::workers::{self, Isolation, WorkerError};

/// The label of the build-layout null.
pub fn build_null_label(baseline: &str) -> String {
    format!("{baseline}{}", crate::results::BUILD_NULL_SUFFIX)
}

/// Decide which arms run in variants, add the build-layout null, and build
/// the variants. Returns each arm's variants (parallel to `arms`).
pub(super) fn plan_variants(
    plan: &Plan,
    arms: &mut Vec<ArmPlan>,
) -> Result<Vec<Option<Variants>>, Error> {
    let k = plan.layout_builds.min(plan.stop.max_epochs).max(1);
    let any_build = arms.iter().any(|a| a.spec.compiles());
    if k < 2 || !any_build || plan.isolation != Isolation::Workers {
        return Ok(arms.iter().map(|_| None).collect());
    }
    promote_compiled_in(arms);
    let mut layouts: Vec<Option<Variants>> = Vec::with_capacity(arms.len() + 1);
    for a in arms.iter_mut() {
        if !a.spec.compiles() {
            layouts.push(None);
            continue;
        }
        match workers::ensure_variants(&a.spec, k, plan.variant_seed) {
            Ok(v) => {
                a.variants = v.variants.len();
                layouts.push(Some(v));
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
                layouts.push(None);
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
        };
        layouts.push(layouts[0].clone());
        arms.push(null);
    }
    debug_assert_eq!(layouts.len(), arms.len());
    Ok(layouts)
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
        for (engines, k, max_epochs) in [
            ("wasmi,tinywasm", 4, 200),
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
            let layouts = plan_variants(&plan, &mut arms).unwrap();
            assert!(
                layouts.iter().all(Option::is_none),
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
}
