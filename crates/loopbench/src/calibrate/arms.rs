//! The calibration's arms: one engine, one shape, and an iteration override
//! per known effect. The baseline and its null control run the shape's own
//! count; the arm for effect `x` runs exactly `1 + x/100` times that.
//!
//! The arms are built here only to be checked (the engine builds, the shape's
//! proposals are supported, every count resolves exactly) and to name them;
//! each repetition's session then builds its own in fresh worker processes.

use super::{CalibrateError, Effect, Settings};
use crate::arm::{skip_reason, Arm, ArmSpec, InProcessArm, Iters};
use crate::error::Error;
use crate::session;
use crate::shapes::ShapeModule;

fn calibration_counters() -> Vec<Box<dyn crate::measure::Counter>> {
    #[cfg(target_os = "linux")]
    {
        vec![Box::new(crate::measure::cpu::ThreadCpu::default())]
    }
    #[cfg(not(target_os = "linux"))]
    {
        Vec::new()
    }
}

/// An in-process arm of the calibration: the engine, an iteration
/// override, and the thread's CPU time read beside the clock.
pub fn calibration_arm(
    spec: &ArmSpec,
    label: String,
    iters: Iters,
) -> Result<InProcessArm, CalibrateError> {
    let arm = InProcessArm::new(spec, label.clone())
        .map_err(|source| CalibrateError::Engine { arm: label, source })?;
    Ok(arm
        .with_counters(std::sync::Arc::new(calibration_counters))
        .with_iters(iters))
}

/// The arms of a calibration, checked, in session order: the baseline, its
/// null control, then one per effect of [`Settings::effects`].
pub(super) struct Arms {
    /// Arm `i`'s label.
    pub labels: Vec<String>,
    /// Arm `i`'s effect (null for the baseline and the null control).
    pub effects: Vec<Effect>,
    /// Arm `i`'s iterations per call on the calibration's shape.
    pub iters: Vec<u64>,
    /// The engine's version, as the baseline reports it.
    pub version: String,
}

impl Arms {
    /// Build and check every arm; an arm the shape cannot run refuses the
    /// whole calibration.
    pub fn new(s: &Settings, module: &ShapeModule) -> Result<Self, Error> {
        let mut effects = vec![Effect::NULL, Effect::NULL];
        effects.extend(s.effects.iter().copied());
        let mut arms: Vec<InProcessArm> = vec![
            calibration_arm(&s.engine, s.engine.to_string(), Iters::Shape)?,
            calibration_arm(
                &s.engine,
                session::null_label(&s.engine.to_string()),
                Iters::Shape,
            )?,
        ];
        for e in &s.effects {
            arms.push(calibration_arm(
                &s.engine,
                format!("{}{e}", s.engine),
                e.iters(),
            )?);
        }
        let mut iters = Vec::new();
        for a in &arms {
            if let Some(reason) = skip_reason(a, module)? {
                return Err(CalibrateError::Unsupported {
                    shape: s.shape.clone(),
                    reason,
                }
                .into());
            }
            iters.push(a.iters_for(module)?);
        }
        Ok(Arms {
            labels: arms.iter().map(|a| a.label().to_string()).collect(),
            effects,
            iters,
            version: arms[0].version(),
        })
    }

    pub fn len(&self) -> usize {
        self.labels.len()
    }
}
