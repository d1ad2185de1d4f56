//! Lowering a graph to an RCPSP.
//!
//! One activity per op (activity `i` is op `i`, same name), its duration the op's cost; one
//! renewable resource of capacity 1 per stream ([`Stream::of_graph`]: `compute`, and
//! `comm.intra-node` / `comm.inter-node` for the link classes present), each op demanding 1 of
//! its stream; one finish-to-start precedence per data dependency; an op's release time
//! ([`crate::Op::release_ns`]) is its activity's release date. A schedule of this problem
//! is exactly a contention-free timeline of some stream plan ([`StreamPlan::from_starts`]).
//! Cost: O(ops + dependencies).
//!
//! [`StreamPlan::from_starts`]: crate::plan::StreamPlan::from_starts

use concerto_rcpsp::{ContendedProblem, Problem, ProblemBuilder, Role, Schedule};

use crate::error::GraphError;
use crate::ir::Graph;
use crate::plan::Stream;
use crate::simulate::Timeline;

/// A lowered graph.
#[derive(Clone, Debug)]
pub struct Lowered {
    /// The RCPSP (activity `i` is op `i`).
    pub problem: Problem,
    /// The resources, in order: the stream each one models.
    pub streams: Vec<Stream>,
}

/// Lowers `graph` with one duration (ns) per op (see the module docs).
///
/// Errors: [`GraphError::InvalidPlan`] when `durations` does not have one entry per op;
/// [`GraphError::Overflow`] naming the op that takes the step past the horizon
/// ([`crate::horizon`]: a longer step could overflow the solvers' `i64` times).
pub fn lower(graph: &Graph, durations: &[u64]) -> Result<Lowered, GraphError> {
    crate::horizon::horizon(graph, durations)?;
    let streams = Stream::of_graph(graph);
    let mut b = ProblemBuilder::new();
    let resources: Vec<_> = streams.iter().map(|s| b.resource(s.name(), 1)).collect();
    for (id, &d) in graph.ids().zip(durations) {
        let op = graph.op(id);
        let d = i64::try_from(d).map_err(|_| GraphError::InvalidOp {
            op: op.name.clone(),
            reason: format!("duration {d} ns does not fit an RCPSP time"),
        })?;
        let a = b.activity(op.name.clone(), d);
        if op.release_ns > 0 {
            let r = i64::try_from(op.release_ns).map_err(|_| GraphError::InvalidOp {
                op: op.name.clone(),
                reason: format!(
                    "release time {} ns does not fit an RCPSP time",
                    op.release_ns
                ),
            })?;
            b.release(a, r);
        }
        let s = Stream::of(op);
        let r = streams
            .iter()
            .position(|t| *t == s)
            .expect("stream of the graph");
        b.demand(a, resources[r], 1);
    }
    for (p, c) in graph.dependencies() {
        b.precedence(
            concerto_rcpsp::ActivityId(p.0),
            concerto_rcpsp::ActivityId(c.0),
        );
    }
    Ok(Lowered {
        problem: b.build()?,
        streams,
    })
}

/// Lowers `graph` as [`lower`] does, with contention as the simulator applies it
/// ([`crate::simulate()`]): every op on a communication stream slows the others while it
/// runs, by `contention` (the rate `round(1000 / contention)` thousandths per ns), and ops
/// start only at events ([`ContendedProblem::launched_at_events`]). A timeline simulated with
/// `contention` is then a schedule of the result with the same makespan
/// ([`concerto_rcpsp::check_contended`] of [`schedule_of`]), and a schedule of the result is
/// the simulated timeline of [`StreamPlan::from_timed`](crate::StreamPlan::from_timed): the
/// contended problem's optimum is the best plan's simulated makespan. O(ops + dependencies).
///
/// Errors: those of [`lower`]; [`GraphError::InvalidPlan`] for a contention that is not a
/// finite number of at least 1.
pub fn lower_contended(
    graph: &Graph,
    durations: &[u64],
    contention: f64,
) -> Result<ContendedProblem, GraphError> {
    let lowered = lower(graph, durations)?;
    let roles = graph
        .ops()
        .map(|op| {
            if Stream::of(op).is_comm() {
                Role::Slowing
            } else {
                Role::Slowed
            }
        })
        .collect();
    ContendedProblem::with_factor(lowered.problem, roles, contention)
        .map(ContendedProblem::launched_at_events)
        .map_err(|e| GraphError::InvalidPlan {
            reason: e.to_string(),
        })
}

/// The schedule of a timeline's start times (valid for the lowered problem when the timeline
/// was simulated without contention with the same durations).
pub fn schedule_of(timeline: &Timeline) -> Schedule {
    Schedule::new(timeline.start.iter().map(|&t| t as i64).collect())
}

/// The lower bound `max(critical path from release times, busiest stream)` on every plan's makespan with these
/// durations; contention only lengthens ops, so it bounds simulated makespans too.
/// O(ops + dependencies). Sums saturate: past the horizon ([`crate::horizon`], which
/// [`crate::simulate()`] and [`lower`] check) the bound is `u64::MAX`.
pub fn lower_bound(graph: &Graph, durations: &[u64]) -> u64 {
    let mut finish = vec![0u64; graph.len()];
    let mut busy: std::collections::BTreeMap<Stream, u64> = Default::default();
    for id in graph.ids() {
        let ready = graph
            .predecessors(id)
            .iter()
            .map(|p| finish[p.0])
            .max()
            .unwrap_or(0)
            .max(graph.op(id).release_ns);
        finish[id.0] = ready.saturating_add(durations[id.0]);
        let b = busy.entry(Stream::of(graph.op(id))).or_default();
        *b = b.saturating_add(durations[id.0]);
    }
    let cp = finish.iter().copied().max().unwrap_or(0);
    cp.max(busy.values().copied().max().unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::{CollectiveKind, ComputeClass, GraphBuilder, LinkClass, Op, OpId};
    use crate::plan::StreamPlan;
    use crate::simulate::simulate;

    #[test]
    fn lowering_keeps_every_dependency_and_stream() {
        let mut b = GraphBuilder::new("g");
        let a = b.add(Op::compute("a", ComputeClass::Gemm, 1, 1), &[]);
        let x = b.add(
            Op::collective("x", CollectiveKind::AllReduce, 8, 16, LinkClass::InterNode),
            &[a],
        );
        let y = b.add(
            Op::collective("y", CollectiveKind::AllGather, 8, 4, LinkClass::IntraNode),
            &[a],
        );
        let _c = b.add(Op::compute("c", ComputeClass::Other, 1, 1), &[x, y]);
        let g = b.finish();
        let d = [5, 7, 2, 1];
        let l = lower(&g, &d).unwrap();
        assert_eq!(l.streams.len(), 3);
        for (p, c) in g.dependencies() {
            assert!(l
                .problem
                .successors(concerto_rcpsp::ActivityId(p.0))
                .iter()
                .any(|arc| arc.activity.0 == c.0));
        }
        assert_eq!(l.problem.precedences().len(), g.dependencies().len());
        assert_eq!(lower_bound(&g, &d), 13);
        // A contention-free timeline is a valid schedule of the lowered problem.
        let plan = StreamPlan::program_order(&g).unwrap();
        let t = simulate(&g, &plan, &d, 1.0).unwrap();
        let m = concerto_rcpsp::check(&l.problem, &schedule_of(&t)).unwrap();
        assert_eq!(m as u64, t.makespan);
        assert_eq!(
            g.op(OpId(1)).name,
            l.problem.activity(concerto_rcpsp::ActivityId(1)).name
        );
    }
}
