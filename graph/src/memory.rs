//! Device memory of a plan: what is counted, an independent checker, and a proven lower bound.
//!
//! # What is counted
//!
//! A plan's memory at time `t` is the sum of:
//!
//! - **Resident bytes** ([`Graph::resident_bytes`]): parameters, optimizer state and every
//!   other input of the step that no op of the graph produces. They are in memory for the
//!   whole step whatever the order, so they add the same amount to every plan's peak.
//! - **Live tensors**: each op allocates its [`Op::buffer_bytes`](crate::Op::buffer_bytes) (its declared output
//!   tensors; a collective that declares none, its result buffer) when it *starts*, and frees
//!   them when the last op that reads them *ends* (at its own end when nothing reads them).
//!   A collective's input is a tensor of its producer, alive until the collective ends, so a
//!   collective in flight holds both its send and its receive buffers.
//! - **Outputs of the step** ([`Op::live_out`](crate::Op::live_out): updated weights, gradients, the loss): allocated
//!   when their op starts and kept to the end of the step.
//!
//! At equal times, frees come before allocations (a buffer freed when one op ends can be
//! reused by an op that starts at that instant, as a caching allocator does). Not counted:
//! workspace of individual kernels, allocator fragmentation, and NCCL's internal buffers.
//! XLA's buffer assignment can also share an output with an input (in-place updates), which
//! this model does not know; the model is the same for every plan, so comparisons between
//! plans are fair, and its peak is what [`check_memory`] bounds.
//!
//! # Functions
//!
//! - [`profile`]: the peak of a timeline and when it happens, by an event sweep over the
//!   timeline's start and end times: O(ops log ops). It is written apart from every scheduler
//!   (the list schedulers track memory incrementally in their own event loop) and is the
//!   checker that tests and benches run on every plan under a budget.
//! - [`check_memory`]: [`profile`] plus a budget; over budget is an error that says when and
//!   which tensors were live.
//! - [`peak_lower_bound`]: a peak no plan can go below: O(ops + deps).

use crate::error::GraphError;
use crate::ir::{Graph, OpId};
use crate::simulate::Timeline;

/// The memory of one timeline (see the module docs).
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct MemoryProfile {
    /// [`Graph::resident_bytes`].
    pub resident_bytes: u64,
    /// Peak of the resident bytes plus the live tensors (what a budget bounds).
    pub peak_bytes: u64,
    /// When the peak is first reached (ns).
    pub peak_at_ns: u64,
    /// Bytes of the step's outputs ([`crate::Op::live_out`]), live at the end.
    pub live_out_bytes: u64,
}

impl MemoryProfile {
    /// The peak less the resident bytes: what the order decides.
    pub fn transient_peak_bytes(&self) -> u64 {
        self.peak_bytes - self.resident_bytes
    }
}

/// One allocation or free of the sweep: (time, +bytes or -bytes, op).
type Event = (u64, i128, usize);

/// The allocation and free events of `timeline` (see the module docs), sorted: by time,
/// frees first, then by op.
fn events(graph: &Graph, timeline: &Timeline) -> Result<Vec<Event>, GraphError> {
    if timeline.start.len() != graph.len() || timeline.end.len() != graph.len() {
        return Err(GraphError::InvalidPlan {
            reason: format!(
                "memory: a timeline of {} ops for a graph of {} ops",
                timeline.start.len(),
                graph.len()
            ),
        });
    }
    let mut events: Vec<Event> = Vec::with_capacity(2 * graph.len());
    for o in graph.ids() {
        let op = graph.op(o);
        let bytes = op.buffer_bytes();
        if bytes == 0 {
            continue;
        }
        events.push((timeline.start[o.0], i128::from(bytes), o.0));
        if op.live_out {
            continue;
        }
        let free = graph
            .successors(o)
            .iter()
            .map(|s| timeline.end[s.0])
            .max()
            .unwrap_or(0)
            .max(timeline.end[o.0]);
        events.push((free, -i128::from(bytes), o.0));
    }
    events.sort_unstable();
    Ok(events)
}

/// The memory profile of `timeline` (see the module docs). O(ops log ops).
///
/// Errors: [`GraphError::InvalidPlan`] when the timeline is not one of `graph`'s.
pub fn profile(graph: &Graph, timeline: &Timeline) -> Result<MemoryProfile, GraphError> {
    let events = events(graph, timeline)?;
    let (mut live, mut peak, mut at) = (0i128, 0i128, 0u64);
    for &(t, d, _) in &events {
        live += d;
        if live > peak {
            peak = live;
            at = t;
        }
    }
    let resident = graph.resident_bytes();
    Ok(MemoryProfile {
        resident_bytes: resident,
        peak_bytes: resident.saturating_add(u64::try_from(peak).unwrap_or(u64::MAX)),
        peak_at_ns: at,
        live_out_bytes: graph
            .ops()
            .filter(|o| o.live_out)
            .fold(0u64, |n, o| n.saturating_add(o.buffer_bytes())),
    })
}

/// Checks that `timeline` never holds more than `budget_bytes` (see the module docs); returns
/// its profile.
///
/// Errors: [`GraphError::OverBudget`] naming the time of the first excess and the largest
/// tensors live then; [`GraphError::InvalidPlan`] when the timeline is not one of `graph`'s.
pub fn check_memory(
    graph: &Graph,
    timeline: &Timeline,
    budget_bytes: u64,
) -> Result<MemoryProfile, GraphError> {
    let p = profile(graph, timeline)?;
    if p.peak_bytes <= budget_bytes {
        return Ok(p);
    }
    // Replay the sweep to the first instant over budget and list what is live there.
    let resident = i128::from(graph.resident_bytes());
    let mut live: Vec<bool> = vec![false; graph.len()];
    let mut total = resident;
    let events = events(graph, timeline)?;
    let mut at = 0;
    for &(t, d, o) in &events {
        total += d;
        live[o] = d > 0;
        if total > i128::from(budget_bytes) {
            at = t;
            break;
        }
    }
    let mut largest: Vec<OpId> = graph.ids().filter(|o| live[o.0]).collect();
    largest.sort_by_key(|o| (std::cmp::Reverse(graph.op(*o).buffer_bytes()), o.0));
    let named: Vec<String> = largest
        .iter()
        .take(3)
        .map(|o| format!("{} ({} B)", graph.op(*o).name, graph.op(*o).buffer_bytes()))
        .collect();
    Err(GraphError::OverBudget {
        peak_bytes: p.peak_bytes,
        budget_bytes,
        at_ns: at,
        live: named.join(", "),
    })
}

/// A peak that no plan of `graph` can go below, with durations `durations` (ns; contention
/// only lengthens ops): the resident bytes plus the larger of (a) the step's outputs, all live
/// at its end, and (b) for each op of positive duration, its outputs and its inputs, all live
/// while it runs. O(ops + deps).
///
/// Errors: [`GraphError::InvalidPlan`] when `durations` does not have one entry per op.
pub fn peak_lower_bound(graph: &Graph, durations: &[u64]) -> Result<u64, GraphError> {
    if durations.len() != graph.len() {
        return Err(GraphError::InvalidPlan {
            reason: format!(
                "memory: {} durations for {} ops",
                durations.len(),
                graph.len()
            ),
        });
    }
    let outputs = graph
        .ops()
        .filter(|o| o.live_out)
        .fold(0u64, |n, o| n.saturating_add(o.buffer_bytes()));
    let running = graph
        .ids()
        .filter(|o| durations[o.0] > 0)
        .map(|o| {
            graph
                .predecessors(o)
                .iter()
                .fold(graph.op(o).buffer_bytes(), |n, p| {
                    n.saturating_add(graph.op(*p).buffer_bytes())
                })
        })
        .max()
        .unwrap_or(0);
    // Sizes saturate: a peak of u64::MAX bytes is over every budget, as the true one is.
    Ok(graph.resident_bytes().saturating_add(outputs.max(running)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::{CollectiveKind, ComputeClass, DType, GraphBuilder, LinkClass, Op, Tensor};
    use crate::plan::StreamPlan;
    use crate::simulate::simulate;

    fn t(bytes: u64) -> Tensor {
        Tensor::new(vec![bytes], DType::S8)
    }

    /// a -> b -> c, a -> ar (collective, no declared output), ar -> c; c is an output.
    fn graph() -> Graph {
        let mut b = GraphBuilder::new("mem");
        b.set_resident_bytes(1000);
        let a = b.add(
            Op::compute("a", ComputeClass::Other, 0, 0).with_output(t(100)),
            &[],
        );
        let x = b.add(
            Op::compute("b", ComputeClass::Other, 0, 0).with_output(t(10)),
            &[a],
        );
        let ar = b.add(
            Op::collective("ar", CollectiveKind::AllReduce, 50, 2, LinkClass::IntraNode),
            &[a],
        );
        b.add(
            Op::compute("c", ComputeClass::Other, 0, 0)
                .with_output(t(7))
                .kept_to_end(),
            &[x, ar],
        );
        b.finish()
    }

    #[test]
    fn resident_live_tensors_collective_buffers_and_outputs_are_counted() {
        let g = graph();
        let plan = StreamPlan::program_order(&g).unwrap();
        // a [0,10) b [10,20) ar [10,15) c [20,30)
        let tl = simulate(&g, &plan, &[10, 10, 5, 10], 1.0).unwrap();
        let p = profile(&g, &tl).unwrap();
        // At 10: a (100, until c... no: a's readers b and ar end at 20 and 15), b 10, ar 50.
        assert_eq!(p.resident_bytes, 1000);
        assert_eq!(p.peak_bytes, 1000 + 100 + 10 + 50);
        assert_eq!(p.peak_at_ns, 10);
        assert_eq!(p.live_out_bytes, 7);
        assert_eq!(p.transient_peak_bytes(), 160);
        assert_eq!(tl.peak_memory_bytes(&g), p.peak_bytes);
        assert!(check_memory(&g, &tl, 1160).is_ok());
        let err = check_memory(&g, &tl, 1159).unwrap_err();
        let text = err.to_string();
        assert!(text.contains("1160") && text.contains("1159"), "{text}");
        assert!(text.contains("a (100 B)"), "{text}");
        let lb = peak_lower_bound(&g, &[10, 10, 5, 10]).unwrap();
        assert!(lb <= p.peak_bytes);
        // ar runs with its own 50 and a's 100.
        assert_eq!(lb, 1000 + 150);
    }

    #[test]
    fn an_output_stays_to_the_end_and_frees_come_before_allocations() {
        let mut b = GraphBuilder::new("out");
        let a = b.add(
            Op::compute("a", ComputeClass::Other, 0, 0)
                .with_output(t(40))
                .kept_to_end(),
            &[],
        );
        let x = b.add(
            Op::compute("x", ComputeClass::Other, 0, 0).with_output(t(30)),
            &[a],
        );
        let y = b.add(
            Op::compute("y", ComputeClass::Other, 0, 0).with_output(t(20)),
            &[x],
        );
        b.add(
            Op::compute("z", ComputeClass::Other, 0, 0).with_output(t(30)),
            &[y],
        );
        let g = b.finish();
        let plan = StreamPlan::program_order(&g).unwrap();
        let tl = simulate(&g, &plan, &[1, 1, 1, 1], 1.0).unwrap();
        // y runs [2, 3) with a, x and its own output: 90. At 3, y's end frees x before z
        // allocates: 40 + 20 + 30, not 120.
        let p = profile(&g, &tl).unwrap();
        assert_eq!(p.peak_bytes, 90);
        assert_eq!(p.peak_at_ns, 2);
        assert_eq!(p.live_out_bytes, 40);
    }

    #[test]
    fn a_timeline_of_another_graph_is_an_error() {
        let g = graph();
        let plan = StreamPlan::program_order(&g).unwrap();
        let mut tl = simulate(&g, &plan, &[1, 1, 1, 1], 1.0).unwrap();
        tl.start.pop();
        assert!(profile(&g, &tl).is_err());
        assert!(peak_lower_bound(&g, &[1]).is_err());
    }
}
