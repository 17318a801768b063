//! What every epoch of a session shares: the arms with their labels and
//! roles (the null control last), their layout variants, the worker
//! context that starts them afresh each epoch, the duet barrier, and the
//! session's record before its first epoch.

use super::{builds, null_label, Plan, LEVEL};
use crate::arm::{Arm, ArmSpec, Iters};
use crate::error::Error;
use crate::machine::Machine;
use crate::results::{
    EngineInfo, GitRevision, Role, Schedule, Session, SessionInfo, SESSION_SCHEMA,
};
use crate::schedule;
use crate::workers::Isolation;

/// One arm as the session runs it.
pub(super) struct ArmPlan {
    pub(super) spec: ArmSpec,
    pub(super) label: String,
    pub(super) role: Role,
    pub(super) iters: Iters,
    /// Layout variants this arm cycles through (0: a fixed build), and the
    /// first one it runs (the build-layout null starts one further).
    pub(super) variants: usize,
    pub(super) first_variant: usize,
    /// The variant each epoch so far ran, fixed when the epoch starts
    /// ([`Setup::assign`]): the variants may grow later.
    pub(super) schedule: Vec<usize>,
}

impl ArmPlan {
    /// The layout variant this arm runs in `epoch` (`None`: a fixed build):
    /// the one it was given, or for an epoch not yet assigned the next in
    /// the rotation of its variants as they are now.
    pub(super) fn variant(&self, epoch: usize) -> Option<usize> {
        self.schedule
            .get(epoch)
            .copied()
            .or_else(|| (self.variants > 0).then(|| (epoch + self.first_variant) % self.variants))
    }

    /// How many variants a whole rotation holds, once the arm has run one
    /// twice (so that precision counts after whole rotations only, every
    /// variant weighing alike); 0 while each epoch has run a variant of
    /// its own.
    pub(super) fn rotation(&self) -> usize {
        let mut seen = self.schedule.clone();
        seen.sort_unstable();
        seen.dedup();
        if seen.len() == self.schedule.len() {
            0
        } else {
            self.variants
        }
    }
}

/// The share of a session's time it may spend linking more variants of
/// this binary between epochs (when the pool lacks them): a first session
/// on a machine measures a little less, later ones find them linked.
const GROW_SHARE: f64 = 0.2;

/// What every epoch of a session shares: the plan, the arms it starts
/// afresh in each epoch (the null control last), and how it starts them.
pub(super) struct Setup {
    pub(super) plan: Plan,
    pub(super) arms: Vec<ArmPlan>,
    /// Per arm, the layout variants it runs (build arms in variants only).
    pub(super) layouts: Vec<Option<crate::workers::layout::Variants>>,
    pub(super) ctx: crate::workers::ArmContext,
    /// Measured rounds per epoch, whole order designs.
    pub(super) rounds: usize,
    /// The duet barrier, in a duet session (its page goes with it).
    pub(super) duet: Option<crate::workers::barrier::BarrierFile>,
    /// Why the compiled-in engines run one code layout, when they do.
    pub(super) one_layout: Option<String>,
    /// The pool's seeds in the session's draw order: the first
    /// `ctx.own_variants.len()` are linked, the rest are what it may add.
    own_order: Vec<u64>,
    /// Seconds spent linking variants between epochs, and how many.
    grow_seconds: f64,
    grown: usize,
    /// Why the session stopped adding variants, once it did for a reason
    /// other than time.
    grow_stopped: Option<String>,
}

/// A duet session runs every arm in a worker process pinned per rep, on
/// two cores this process may use, with no more arms than barrier slots.
fn check_duet(plan: &Plan, arms: usize) -> Result<crate::workers::barrier::BarrierFile, Error> {
    let Schedule::Duet { cores } = plan.schedule else {
        unreachable!("checked by the caller")
    };
    let usage = |m: String| Err(Error::Usage(m));
    if plan.isolation != Isolation::Workers {
        return usage(
            "--schedule duet runs every arm in a worker process: drop --in-process".into(),
        );
    }
    if plan.pin.is_some() {
        return usage("--schedule duet pins each pair to two cores itself: drop --pin".into());
    }
    if cores[0] == cores[1] {
        return usage(format!(
            "--schedule duet needs two different cores, not {} twice",
            cores[0]
        ));
    }
    let allowed = crate::measure::affinity::allowed();
    if let Some(c) = cores.iter().find(|c| !allowed.contains(c)) {
        return usage(format!(
            "--schedule duet: core {c} is not one this process may run on ({allowed:?})"
        ));
    }
    if arms > crate::workers::barrier::SLOTS {
        return usage(format!(
            "--schedule duet takes at most {} arms, null control included; this session has {arms}",
            crate::workers::barrier::SLOTS
        ));
    }
    Ok(
        crate::workers::barrier::BarrierFile::create()
            .map_err(crate::workers::WorkerError::from)?,
    )
}

impl Setup {
    /// What a duet epoch needs, in a duet session.
    pub(super) fn duet_plan(&self) -> Option<schedule::duet::DuetPlan<'_>> {
        let Schedule::Duet { cores } = self.plan.schedule else {
            return None;
        };
        Some(schedule::duet::DuetPlan {
            barrier: self.duet.as_ref()?,
            cores,
        })
    }

    /// The arms of the plan with their labels and roles, and the null
    /// control: a second, separately started copy of the baseline.
    pub(super) fn new(plan: Plan) -> Result<Self, Error> {
        let baseline = plan
            .arms
            .first()
            .ok_or(crate::arm::ArmError::NoArms)?
            .clone();
        let mut arms: Vec<ArmPlan> = plan
            .arms
            .iter()
            .enumerate()
            .map(|(i, a)| ArmPlan {
                spec: a.clone(),
                label: plan.labels.get(i).cloned().unwrap_or_else(|| a.to_string()),
                role: match plan.reference {
                    _ if i == 0 => Role::Baseline,
                    Some(r) if r.index == i && r.added => Role::Reference,
                    _ => Role::Candidate,
                },
                iters: plan.arm_iters.get(i).copied().unwrap_or_default(),
                variants: 0,
                first_variant: 0,
                schedule: Vec::new(),
            })
            .collect();
        arms.push(ArmPlan {
            spec: baseline,
            label: null_label(&arms[0].label),
            role: Role::Null,
            iters: arms[0].iters,
            variants: 0,
            first_variant: 0,
            schedule: Vec::new(),
        });
        let planned = builds::plan_variants(&plan, &mut arms)?;
        let counter_set = plan.counters.clone();
        let make_counters: crate::arm::CounterFactory = std::sync::Arc::new(move || {
            // Outermost: started first and stopped last, so their system calls
            // stay outside every other counter's window (callgrind's above all).
            let mut c = crate::measure::disturbance_counters();
            c.extend(counter_set.make());
            c
        });
        let mut ctx = crate::workers::ArmContext::new(&plan.counters, make_counters)
            .with_isolation(plan.isolation, plan.pin, plan.seed, plan.variant_seed);
        ctx.layout = crate::workers::Randomise::from_env()?;
        ctx.own_variants = planned.own;
        let duet = match plan.schedule {
            Schedule::Sequential => None,
            Schedule::Duet { .. } => {
                let barrier = check_duet(&plan, arms.len())?;
                ctx.barrier = Some(barrier.path().to_path_buf());
                Some(barrier)
            }
        };
        let rounds = match plan.schedule {
            Schedule::Sequential => schedule::complete_rounds(plan.rounds, arms.len()),
            Schedule::Duet { .. } => {
                schedule::duet::complete_rounds(plan.rounds, arms.len(), &plan.order)
            }
        };
        Ok(Setup {
            plan,
            arms,
            layouts: planned.layouts,
            ctx,
            rounds,
            duet,
            one_layout: planned.one_layout,
            own_order: planned.own_order,
            grow_seconds: 0.0,
            grown: 0,
            grow_stopped: None,
        })
    }

    /// Before `epoch`: link one more variant of this binary from the pool
    /// while the compiled-in arms would otherwise run a variant a second
    /// time, so that every epoch runs layouts of its own (the interval is
    /// across variants: more of them narrow it more than more rounds of
    /// the same ones). Only while linking has taken at most
    /// [`GROW_SHARE`] of the session's `elapsed` seconds and `fits` says a
    /// link still fits its budget; a link that fails stops the growing
    /// (said once) and the session cycles the variants it has.
    pub(super) fn grow(&mut self, epoch: usize, elapsed: f64, fits: impl Fn(f64) -> bool) {
        let have = self.ctx.own_variants.len();
        // The build null runs the variant after the baseline's.
        if have == 0 || have >= epoch + 2 || have >= self.own_order.len() {
            return;
        }
        if self.grow_stopped.is_some() || self.grow_seconds > GROW_SHARE * elapsed {
            return;
        }
        // A link costs about what this session's did (most of the `have`
        // were linked before the first epoch, or found linked).
        let each = match self.grown {
            0 => 0.5,
            n => self.grow_seconds / n as f64,
        };
        if !fits(each) {
            return;
        }
        let seed = self.own_order[have];
        let t0 = std::time::Instant::now();
        match crate::workers::own_build::ensure(&[seed], false) {
            Ok(own) => {
                self.grown += 1;
                self.ctx.own_variants.extend(own.bins);
                for (a, layout) in self.arms.iter_mut().zip(self.layouts.iter_mut()) {
                    if !builds::runs_own_variants(a, layout.as_ref()) {
                        continue;
                    }
                    if let Some(l) = layout.as_mut() {
                        l.variants.push(builds::own_variant(have, seed));
                    }
                    a.variants = have + 1;
                }
            }
            Err(e) => {
                crate::diag!(
                    "no more code-layout variants this session ({e}): the {have} linked take turns"
                );
                self.grow_stopped = Some(e.to_string());
            }
        }
        self.grow_seconds += t0.elapsed().as_secs_f64();
    }

    /// Fix the variant every arm runs in `epoch`.
    pub(super) fn assign(&mut self, epoch: usize) {
        for a in &mut self.arms {
            if let Some(v) = a.variant(epoch) {
                if a.schedule.len() == epoch {
                    a.schedule.push(v);
                }
            }
        }
    }

    /// The most variants any arm's rotation holds ([`ArmPlan::rotation`]).
    pub(super) fn rotation(&self) -> usize {
        self.arms.iter().map(ArmPlan::rotation).max().unwrap_or(0)
    }

    /// Fresh arms for `epoch`: with worker isolation, each one a new
    /// process (of the epoch's layout variant, for a build arm in
    /// variants). The baseline's reps are recorded (they set the workers'
    /// deadlines).
    pub(super) fn start_arms(&self, epoch: usize) -> Result<Vec<Box<dyn Arm>>, Error> {
        let mut arms: Vec<Option<Box<dyn Arm>>> = (0..self.arms.len()).map(|_| None).collect();
        // Started in a drawn order, returned in the arms' order.
        for i in crate::schedule::order::spawn_order(self.plan.seed, epoch, self.arms.len()) {
            let a = &self.arms[i];
            let arm = self
                .ctx
                .make_with(&a.spec, a.label.clone(), a.iters, a.variant(epoch))?;
            arms[i] = Some(if i == 0 { self.ctx.record(arm) } else { arm });
        }
        Ok(arms.into_iter().flatten().collect())
    }

    /// The session's record before its first epoch: what the plan asked.
    pub(super) fn new_session(&self) -> Session {
        let plan = &self.plan;
        Session {
            schema: SESSION_SCHEMA.to_string(),
            id: Some(crate::results::new_session_id()),
            command: std::env::args().collect(),
            machine: Machine::read(),
            session: SessionInfo {
                rounds: self.rounds,
                warmup: plan.warmup,
                baseline: self.arms[0].spec.to_string(),
                null_arm: null_label(&self.arms[0].label),
                bytes: plan.params.bytes,
                k: plan.params.k,
                iters_override: plan.params.iters,
                engines: Vec::new(),
                build_profile: crate::versions::BUILD_PROFILE.to_string(),
                confidence_level: LEVEL,
                rotation: match plan.schedule {
                    Schedule::Sequential => format!(
                        "{} design over all arms, null control included, relabelled per epoch",
                        plan.order.name()
                    ),
                    Schedule::Duet { cores: [a, b] } => format!(
                        "duets: the baseline beside each other arm (null control included) at the same moment on cores {a} and {b}, swapped every round, partners in a {} design relabelled per epoch",
                        plan.order.name()
                    ),
                },
                order: Some(plan.order),
                seed: Some(plan.seed),
                schedule: Some(plan.schedule),
                isolation: Some(plan.isolation.name().to_string()),
                randomised: (plan.isolation == Isolation::Workers)
                    .then(|| self.ctx.layout.describe()),
                pinned_cpu: plan.pin,
                metric: plan.metric,
                stop_rule: Some(plan.stop.clone()),
                rep_ms: plan.rep_target.map(|d| d.as_secs_f64() * 1e3),
                layout_builds: (self.arms.iter().any(|a| a.variants > 0 || a.spec.compiles())
                    || (plan.layout_builds < 2 && plan.isolation == Isolation::Workers))
                    .then_some(plan.layout_builds),
                one_layout: self.one_layout.clone(),
                reference: plan.reference.map(|r| self.arms[r.index].label.clone()),
                setting: plan.setting.clone(),
                session_budget_s: plan.session_budget_s,
                estimator: Some(plan.estimator.name()),
            },
            counters: plan.counters.status().to_vec(),
            results: Vec::new(),
            complete: false,
            errors: Vec::new(),
            wall_seconds: 0.0,
            epochs: Vec::new(),
            gate: None,
        }
    }
}

/// Each arm's engine version, and its source revision when it runs from a
/// local checkout.
pub(super) fn engine_info(
    arms: &[Box<dyn Arm>],
    specs: &[ArmPlan],
    layouts: &[Option<crate::workers::layout::Variants>],
) -> Vec<EngineInfo> {
    arms.iter()
        .zip(specs)
        .zip(layouts)
        .map(|((a, p), layout)| EngineInfo {
            layout: layout.clone(),
            arm: a.label().to_string(),
            version: a.version(),
            git: match p.spec.worker.as_ref().map(|w| &w.source) {
                Some(crate::arm::build::Source::Path(dir)) => GitRevision::of(dir),
                _ => None,
            },
        })
        .collect()
}
