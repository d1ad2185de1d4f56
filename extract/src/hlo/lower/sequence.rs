//! A scheduled module's own order as a stream plan: what XLA's GPU runtime does with the
//! sequence its latency-hiding scheduler chose.
//!
//! XLA's GPU executable runs the entry's sequence as a thunk sequence on one compute stream;
//! an async collective's start runs on a communication stream after waiting for an event
//! recorded on the compute stream at the start's place (so it begins only when every kernel
//! launched before it in the sequence has finished), and its `-done` makes the compute stream
//! wait for the collective's end (so every kernel after the done waits for it). A synchronous
//! collective (no `-done`, or start and done adjacent, `is_sync=true`) ends where it starts.
//!
//! [`sequence_plan`] builds exactly that plan: the compute stream's FIFO order is the compute
//! ops in launch order, each channel's the collectives in start order; waits are the data
//! dependencies across streams ([`StreamPlan::new`]) and the ones the sequence adds: a start
//! waits for the last compute op launched before it and for the collectives of other channels
//! that ended since; the first compute op after one or more dones waits for those
//! collectives. Cost: O(events + ops + dependencies) plus the plan's validation.

use std::collections::BTreeSet;

use concerto_graph::{Graph, GraphError, OpId, Stream, StreamPlan};

use super::SeqEvent;

/// The stream plan of a module's own schedule (see the module docs), validated against
/// `graph` ([`StreamPlan::validate`]). `events` is [`ImportReport::sequence`] of the import
/// that made `graph`; an event naming no op of the graph, an op launched twice or never, or a
/// done before its launch is [`GraphError::InvalidPlan`].
///
/// [`ImportReport::sequence`]: super::ImportReport::sequence
pub fn sequence_plan(graph: &Graph, events: &[SeqEvent]) -> Result<StreamPlan, GraphError> {
    let n = graph.len();
    let invalid = |reason: String| GraphError::InvalidPlan { reason };
    let streams = Stream::of_graph(graph);
    let mut orders: Vec<(Stream, Vec<OpId>)> = streams.iter().map(|&s| (s, Vec::new())).collect();
    let mut launched = vec![false; n];
    let mut has_done = vec![false; n];
    for e in events {
        let id = match *e {
            SeqEvent::Launch(id) | SeqEvent::Done(id) => id,
        };
        if id.0 >= n {
            return Err(invalid(format!(
                "the sequence names op {} of a graph of {n} ops",
                id.0
            )));
        }
        match *e {
            SeqEvent::Launch(id) => {
                if std::mem::replace(&mut launched[id.0], true) {
                    return Err(invalid(format!(
                        "op `{}` is launched twice in the sequence",
                        graph.op(id).name
                    )));
                }
                let s = Stream::of(graph.op(id));
                let k = streams.iter().position(|&t| t == s).ok_or_else(|| {
                    invalid(format!(
                        "op `{}` runs on no stream of the graph",
                        graph.op(id).name
                    ))
                })?;
                orders[k].1.push(id);
            }
            SeqEvent::Done(id) => {
                if !launched[id.0] {
                    return Err(invalid(format!(
                        "collective `{}` ends before it starts in the sequence",
                        graph.op(id).name
                    )));
                }
                has_done[id.0] = true;
            }
        }
    }
    if let Some(k) = launched.iter().position(|l| !l) {
        return Err(invalid(format!(
            "op `{}` is not in the sequence",
            graph.op(OpId(k)).name
        )));
    }
    let mut plan = StreamPlan::new(graph, orders)?;
    // The waits the sequence adds (see the module docs).
    let mut waits: BTreeSet<(OpId, OpId)> = plan.waits.iter().copied().collect();
    let mut last_compute: Option<OpId> = None;
    // Collectives that ended since the last compute launch.
    let mut ended: Vec<OpId> = Vec::new();
    for e in events {
        match *e {
            SeqEvent::Launch(id) if graph.op(id).is_collective() => {
                if let Some(c) = last_compute {
                    waits.insert((c, id));
                }
                let s = Stream::of(graph.op(id));
                for &d in &ended {
                    if Stream::of(graph.op(d)) != s {
                        waits.insert((d, id));
                    }
                }
                if !has_done[id.0] {
                    ended.push(id);
                }
            }
            SeqEvent::Launch(id) => {
                for d in ended.drain(..) {
                    waits.insert((d, id));
                }
                last_compute = Some(id);
            }
            SeqEvent::Done(id) => ended.push(id),
        }
    }
    plan.waits = waits.into_iter().collect();
    plan.validate(graph)?;
    Ok(plan)
}
