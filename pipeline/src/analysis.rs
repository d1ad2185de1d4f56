//! What a graph leaves exposed, and which decompositions could hide it: the diagnostics behind
//! `concerto decompose`.

use concerto_decomp::critical::critical;
use concerto_decomp::select::{evaluate, tried, Scored, SelectConfig};
use concerto_graph::{Graph, Hardware, OpKind};

use crate::error::PipelineError;

/// A collective that the best baseline schedule leaves exposed.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct CriticalCollective {
    /// Its name in the graph.
    pub name: String,
    /// `all-reduce`, `all-gather`, ... (`compute` never: only collectives are critical).
    pub kind: String,
    /// Bytes it moves.
    pub bytes: u64,
    /// Its simulated duration (ns).
    pub duration_ns: u64,
    /// Nanoseconds of its run with no compute beside it.
    pub exposed_ns: u64,
}

/// The best baseline's simulated makespan on `graph` and the collectives exposed for at least
/// `threshold` (a fraction) of it, most exposed first ([`concerto_decomp::critical`]). Cost:
/// three baselines and their simulations, then O(ops log ops).
pub fn critical_collectives(
    graph: &Graph,
    hardware: &Hardware,
    threshold: f64,
) -> Result<(u64, Vec<CriticalCollective>), PipelineError> {
    let (baseline_ns, timeline) = evaluate(graph, hardware)?;
    let list = critical(graph, &timeline, threshold)
        .into_iter()
        .map(|c| {
            let op = graph.op(c.op);
            let (kind, bytes) = match &op.kind {
                OpKind::Collective { kind, bytes, .. } => (kind.as_str(), *bytes),
                OpKind::Compute { .. } => ("compute", op.output_bytes()),
            };
            CriticalCollective {
                name: op.name.clone(),
                kind: kind.to_string(),
                bytes,
                duration_ns: timeline.end[c.op.0] - timeline.start[c.op.0],
                exposed_ns: c.exposed_ns,
            }
        })
        .collect();
    Ok((baseline_ns, list))
}

/// Every decomposition candidate the selection tries around the critical collectives, each
/// evaluated alone (gaining or not), with the input's evaluated makespan
/// ([`concerto_decomp::select::tried`]).
pub fn candidates_tried(
    graph: &Graph,
    hardware: &Hardware,
    config: &SelectConfig,
) -> Result<(u64, Vec<Scored>), PipelineError> {
    Ok(tried(graph, hardware, config)?)
}
