//! Decomposition contexts: the ops around a critical collective that can be split with it.
//!
//! Starting from the collective, the context grows backwards through producers and forwards
//! through consumers while each op can be split along the same axis (see [`rules`]), up to
//! `depth` ops on each side. An axis passes unchanged through elementwise ops, norms,
//! reductions, GEMMs and collectives; attention splits along rows only as the first op of a
//! context (its keys and values must stay whole, so its producers are not added), and a
//! consumer that is attention ends the forward walk. Other collectives end the walk too (they
//! stay whole and read the join of the chunks). Every op added has the collective's extent
//! along the axis, and a GEMM consumer must read the split tensor as its left operand (a
//! weight gradient contracts over the tokens and would need every chunk). Cost:
//! O(depth * degree).
//!
//! [`rules`]: crate::rules

use std::collections::BTreeSet;

use concerto_graph::{ComputeClass, Graph, OpId, OpKind};

use crate::rules::{can_split, extent};
use crate::split::{Axis, Context};

fn is_attention(graph: &Graph, o: OpId) -> bool {
    matches!(
        graph.op(o).kind,
        OpKind::Compute {
            class: ComputeClass::Attention,
            ..
        }
    )
}

/// The context of `collective` along `axis` with `n` chunks, or `None` when the collective
/// itself cannot be split so.
pub fn context(
    graph: &Graph,
    collective: OpId,
    axis: Axis,
    n: u32,
    depth: usize,
) -> Option<Context> {
    if !can_split(graph.op(collective), axis, n) {
        return None;
    }
    let size = extent(graph.op(collective), axis);
    // An op joins only if its axis has the collective's size: the same tokens (rows), the
    // same instances (batch), the same features (cols). A GEMM consumer must read the split
    // tensor as its left operand (its `k` equals the producer's trailing dimension): a GEMM
    // that contracts over the tokens (a weight gradient) would need every chunk.
    let fits = |o: OpId| extent(graph.op(o), axis) == size;
    let reads_as_lhs = |producer: OpId, consumer: OpId| match &graph.op(consumer).kind {
        OpKind::Compute { gemm: Some(g), .. } => graph
            .op(producer)
            .outputs
            .first()
            .and_then(|t| t.shape.last())
            .is_none_or(|&f| f == g.k),
        _ => true,
    };
    let mut ops: BTreeSet<OpId> = BTreeSet::from([collective]);
    // Backwards: a chain of single producers (the compute feeding the collective).
    let mut frontier = vec![collective];
    for _ in 0..depth {
        let mut next = Vec::new();
        for o in frontier {
            if is_attention(graph, o) {
                continue;
            }
            for &p in graph.predecessors(o) {
                let op = graph.op(p);
                if op.is_collective() || ops.contains(&p) || !can_split(op, axis, n) || !fits(p) {
                    continue;
                }
                if !reads_as_lhs(p, o) {
                    continue;
                }
                if axis == Axis::Contract
                    && !matches!(
                        op.kind,
                        OpKind::Compute {
                            class: ComputeClass::Gemm,
                            ..
                        }
                    )
                {
                    continue;
                }
                ops.insert(p);
                next.push(p);
            }
        }
        frontier = next;
    }
    // Forwards (not for partial sums: after the reduction, chunks are whole values).
    if axis != Axis::Contract {
        let mut frontier = vec![collective];
        for _ in 0..depth {
            let mut next = Vec::new();
            for o in frontier {
                for &s in graph.successors(o) {
                    let op = graph.op(s);
                    if op.is_collective()
                        || is_attention(graph, s)
                        || ops.contains(&s)
                        || !can_split(op, axis, n)
                        || !fits(s)
                        || !reads_as_lhs(o, s)
                    {
                        continue;
                    }
                    // Every input the consumer reads from the context must be chunked the
                    // same way: it reads chunk i; other inputs are read whole.
                    ops.insert(s);
                    next.push(s);
                }
            }
            frontier = next;
        }
    }
    Some(Context {
        collective,
        axis,
        ops: ops.into_iter().collect(),
        n,
        family: crate::split::Family::Split,
    })
}
