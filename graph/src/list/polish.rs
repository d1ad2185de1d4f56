//! Local search on a plan's launch orders, timed by the simulator ([`polish`]).

use crate::error::GraphError;
use crate::ir::{Graph, OpId};
use crate::plan::{Stream, StreamPlan};
use crate::simulate::simulate;

/// What [`polish`] returns.
#[derive(Clone, Debug)]
pub struct Polished {
    /// The polished plan (its waits rebuilt from its orders by [`StreamPlan::new`]).
    pub plan: StreamPlan,
    /// Its simulated makespan (ns), with contention.
    pub makespan_ns: u64,
    /// Moves kept.
    pub moves: u64,
    /// Plans simulated.
    pub evaluations: u64,
}

/// First-improvement local search on `plan`'s launch orders under the simulator's own clock,
/// contention included: for each stream, each op in turn is moved 1, -1, 2, -2, ... up to
/// `max_distance` positions within its stream's order, and the first move whose plan
/// simulates strictly shorter is kept; passes repeat until one keeps nothing, until
/// `max_evaluations` plans were simulated, or until `stop` says so (checked before each
/// simulation). Moves that deadlock are skipped ([`StreamPlan::new`] refuses them). It
/// optimises the contended makespan directly, which list schedules and windows only
/// approximate: on small steps with contention (a few hundred ops) it is where overlap is
/// priced exactly. The plan's waits are rebuilt from its orders, so memory waits are dropped:
/// not for plans under a memory budget. Deterministic for a fixed `max_evaluations` (the clock
/// only through `stop`). Cost per evaluation: O((n + e) s) to build the plan, O((n + e) log n)
/// to simulate it.
pub fn polish(
    graph: &Graph,
    plan: &StreamPlan,
    durations: &[u64],
    contention: f64,
    max_distance: usize,
    max_evaluations: u64,
    stop: &dyn Fn() -> bool,
) -> Result<Polished, GraphError> {
    let mut best_plan = plan.clone();
    let mut best = simulate(graph, plan, durations, contention)?.makespan;
    let mut orders: Vec<(Stream, Vec<OpId>)> = plan.streams.clone();
    let (mut moves, mut evaluations) = (0u64, 0u64);
    let shifts: Vec<isize> = (1..=max_distance as isize).flat_map(|k| [k, -k]).collect();
    'passes: loop {
        let mut kept = false;
        for s in 0..orders.len() {
            let len = orders[s].1.len();
            for i in 0..len {
                for &k in &shifts {
                    let j = i as isize + k;
                    if j < 0 || j >= len as isize {
                        continue;
                    }
                    if evaluations >= max_evaluations || stop() {
                        break 'passes;
                    }
                    let mut trial = orders.clone();
                    let op = trial[s].1.remove(i);
                    trial[s].1.insert(j as usize, op);
                    let Ok(candidate) = StreamPlan::new(graph, trial.clone()) else {
                        continue;
                    };
                    evaluations += 1;
                    let t = simulate(graph, &candidate, durations, contention)?.makespan;
                    if t < best {
                        best = t;
                        best_plan = candidate;
                        orders = trial;
                        moves += 1;
                        kept = true;
                        break;
                    }
                }
            }
        }
        if !kept {
            break;
        }
    }
    Ok(Polished {
        plan: best_plan,
        makespan_ns: best,
        moves,
        evaluations,
    })
}
