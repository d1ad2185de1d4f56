//! Evaluating any plan (one written by another tool, or an earlier run) with the simulator.

use concerto_graph::{simulate, Graph, Hardware, StreamPlan, Timeline};

use crate::error::PipelineError;

/// What a plan does on a graph and hardware.
#[derive(Clone, Debug)]
pub struct Evaluation {
    /// The simulated timeline (with the profile's contention).
    pub timeline: Timeline,
    /// The simulated makespan (ns).
    pub makespan_ns: u64,
    /// Time some collective runs while no compute does (ns).
    pub exposed_comm_ns: u64,
    /// Peak memory of the tensor lifetimes (bytes).
    pub peak_memory_bytes: u64,
    /// The best proven lower bound on any plan of the graph (ns; contention only lengthens
    /// ops, so it bounds simulated makespans too).
    pub lower_bound_ns: u64,
    /// Which bound binds ([`concerto_graph::bounds::BoundKind`]).
    pub bound_kind: concerto_graph::bounds::BoundKind,
}

/// Validates `plan` against `graph` and simulates it with `hardware`'s durations and
/// contention, and computes the graph's bounds at that contention
/// ([`concerto_graph::bounds::bounds_contended`]). Cost: one
/// simulation, O((ops + deps) log ops), plus the bounds'.
pub fn evaluate(
    graph: &Graph,
    hardware: &Hardware,
    plan: &StreamPlan,
) -> Result<Evaluation, PipelineError> {
    plan.validate(graph)?;
    let durations = hardware.checked_durations(graph)?;
    let timeline = simulate(graph, plan, &durations, hardware.contention)?;
    let bounds = concerto_graph::bounds::bounds_contended(graph, &durations, hardware.contention);
    let best = bounds.best();
    Ok(Evaluation {
        makespan_ns: timeline.makespan,
        exposed_comm_ns: timeline.exposed_comm_ns(graph),
        peak_memory_bytes: timeline.peak_memory_bytes(graph),
        lower_bound_ns: best.value_ns,
        bound_kind: best.kind,
        timeline,
    })
}
