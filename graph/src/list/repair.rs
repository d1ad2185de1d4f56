//! Memory repair of a stream plan: delay, one FIFO position at a time, the op whose start
//! first pushes the plan over a budget (see [`repair_memory`](super::repair_memory)).

use crate::error::GraphError;
use crate::ir::{Graph, OpId};
use crate::memory;
use crate::plan::StreamPlan;
use crate::simulate::simulate;

/// A plan's standing under a budget: (peak over the budget, earliest time it is over,
/// makespan), smaller is better; `None` for a plan within the budget.
type Excess = Option<(u64, std::cmp::Reverse<u64>)>;

/// The plan's excess and makespan, and the ops that start when it first goes over.
fn measure(
    graph: &Graph,
    plan: &StreamPlan,
    durations: &[u64],
    contention: f64,
    budget: u64,
) -> Result<(Excess, u64, Vec<OpId>), GraphError> {
    let t = simulate(graph, plan, durations, contention)?;
    match memory::check_memory(graph, &t, budget) {
        Ok(_) => Ok((None, t.makespan, Vec::new())),
        Err(GraphError::OverBudget {
            peak_bytes, at_ns, ..
        }) => {
            let mut starting: Vec<OpId> = graph
                .ids()
                .filter(|o| t.start[o.0] == at_ns && graph.op(*o).buffer_bytes() > 0)
                .collect();
            starting.sort_by_key(|o| (std::cmp::Reverse(graph.op(*o).buffer_bytes()), o.0));
            Ok((
                Some((peak_bytes - budget, std::cmp::Reverse(at_ns))),
                t.makespan,
                starting,
            ))
        }
        Err(e) => Err(e),
    }
}

/// See [`repair_memory`](super::repair_memory).
pub(super) fn repair(
    graph: &Graph,
    plan: &StreamPlan,
    durations: &[u64],
    contention: f64,
    budget: u64,
    max_moves: usize,
    stop: &dyn Fn() -> bool,
) -> Result<Option<(StreamPlan, u64)>, GraphError> {
    let mut current = plan.clone();
    let (mut excess, mut makespan, mut culprits) =
        measure(graph, &current, durations, contention, budget)?;
    let mut moves = 0;
    while excess.is_some() && moves < max_moves && !stop() {
        let mut moved = false;
        'culprits: for v in culprits.clone() {
            // Delay v past the next op of its stream, unless that op reads it.
            let (s, i) = current
                .streams
                .iter()
                .enumerate()
                .find_map(|(s, (_, o))| o.iter().position(|x| *x == v).map(|i| (s, i)))
                .expect("every op is on a stream");
            let order = &current.streams[s].1;
            if i + 1 >= order.len() || graph.predecessors(order[i + 1]).contains(&v) {
                continue;
            }
            let mut streams = current.streams.clone();
            streams[s].1.swap(i, i + 1);
            // A swap that makes the orders deadlock (a dependency through another stream)
            // is not a plan.
            let Ok(candidate) = StreamPlan::new(graph, streams) else {
                continue 'culprits;
            };
            let (e, m, c) = measure(graph, &candidate, durations, contention, budget)?;
            moves += 1;
            if e < excess {
                (current, excess, makespan, culprits) = (candidate, e, m, c);
                moved = true;
                break;
            }
        }
        if !moved {
            break;
        }
    }
    Ok(excess.is_none().then_some((current, makespan)))
}
