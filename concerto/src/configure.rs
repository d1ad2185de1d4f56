//! From an input to a configured run: the one place that decides what an imported graph
//! changes about the pipeline that schedules it.
//!
//! The command line (`concerto optimize`) and the Python extension (`concerto.optimize`) both
//! read an input ([`crate::extract::read_imported`]), build a [`Pipeline`] from their options,
//! and hand the two to [`configure`]. It applies every rule that depends on what the input is:
//!
//! - a profiler trace's measured durations already contain the slowdown of compute beside the
//!   collectives that ran, so it is costed without contention on top unless the caller gave
//!   one ([`Imported::contention`]);
//! - a module that carries its own schedule (XLA's, in a compiled module) gets it as the
//!   `xla` baseline ([`ModuleSchedule`]);
//! - a profiler trace's recorded order is replayed once with its measured durations and launch
//!   times, the figure the run is compared with.
//!
//! Which plan is written back into the input's format is [`Report::exported`]
//! (`concerto_pipeline::Report`); the input keeps its parsed module for that
//! ([`Imported::hlo`]).

use concerto_extract::Imported;
use concerto_graph::GraphError;
use concerto_pipeline::{ModuleSchedule, Pipeline};

#[cfg(doc)]
use concerto_pipeline::Report;

/// A run ready to start: the input (its graph costed as it will be scheduled) and the
/// pipeline configured for it.
#[non_exhaustive]
pub struct Configured {
    /// The input, as read (and, where a profile costed it, with the measured costs).
    pub input: Imported,
    /// The pipeline, with the input's rules applied.
    pub pipeline: Pipeline,
    /// For a profiler trace: the recorded order replayed with the measured durations and
    /// launch times, in ns.
    pub recorded_ns: Option<u64>,
}

/// What [`configure`] could not do.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigureError {
    /// The contention could not be applied to the profile.
    #[error("the contention: {0}")]
    Contention(GraphError),
    /// The trace's recorded order could not be replayed.
    #[error("replaying the recorded order: {0}")]
    Replay(GraphError),
    /// The module's own schedule is no valid plan of its graph.
    #[error("the module's own schedule: {0}")]
    Schedule(GraphError),
}

/// Applies the rules that depend on the input (see the module docs) to `pipeline`:
/// `contention` is the one the caller asked for, if any. O(ops) besides the replay of a
/// trace (one simulation).
pub fn configure(
    input: Imported,
    mut pipeline: Pipeline,
    contention: Option<f64>,
) -> Result<Configured, ConfigureError> {
    let hardware = pipeline.config.hardware.clone();
    pipeline.config.hardware = input
        .costed_on(hardware, contention)
        .map_err(ConfigureError::Contention)?;
    let recorded_ns = match &input.trace {
        Some(_) => {
            Some(concerto_extract::kineto::replay(&input.graph).map_err(ConfigureError::Replay)?)
        }
        None => None,
    };
    if let Some(plan) = &input.schedule {
        pipeline.config.schedule.module_schedule = Some(
            ModuleSchedule::new(&input.graph, plan.clone()).map_err(ConfigureError::Schedule)?,
        );
    }
    Ok(Configured {
        input,
        pipeline,
        recorded_ns,
    })
}
