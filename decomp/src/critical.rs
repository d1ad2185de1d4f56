//! Critical collectives: those a schedule leaves exposed.
//!
//! For each collective of a simulated timeline, its exposed time is the part of its run
//! during which no compute op runs. Those whose exposed time is at least `threshold` of the
//! makespan are critical: reordering did not hide them, so only decomposition can. Cost:
//! O(ops log ops).

use concerto_graph::{Graph, OpId, Timeline};

/// A collective and its exposed time in a timeline.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Critical {
    /// The collective.
    pub op: OpId,
    /// Nanoseconds of its run with no compute beside it.
    pub exposed_ns: u64,
}

/// The collectives whose exposed time is at least `threshold` (a fraction of the makespan),
/// most exposed first (ties by program order).
pub fn critical(graph: &Graph, timeline: &Timeline, threshold: f64) -> Vec<Critical> {
    let busy = timeline.compute_busy(graph);
    let limit = (timeline.makespan as f64 * threshold).ceil() as u64;
    let mut out: Vec<Critical> = graph
        .ids()
        .filter(|o| graph.op(*o).is_collective())
        .map(|o| Critical {
            op: o,
            exposed_ns: timeline.exposed_ns(o, &busy),
        })
        .filter(|c| c.exposed_ns > 0 && c.exposed_ns >= limit)
        .collect();
    out.sort_by_key(|c| (std::cmp::Reverse(c.exposed_ns), c.op));
    out
}
