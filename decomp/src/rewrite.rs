//! The decomposition rewrite, and the independent check run after every rewrite.
//!
//! [`rewrite`] replaces each op of a [`Context`] by `n` chunk ops (made by a caller's chunk
//! function, for instance [`rules::chunk`]), named `{name}/chunk{i}of{n}` and emitted
//! consecutively at the op's position in program order. Chunk `i` reads chunk `i` of each of
//! its producers in the context, and the whole tensor of each producer outside it (their
//! copies, unchanged). Each chunk group is a loop: chunk `i` of the collective depends only on
//! chunk `i` of the compute before it, so a scheduler can run chunk `i`'s collective while
//! chunk `i + 1` computes. Every op outside the context is copied unchanged.
//!
//! A context op read by an op outside the context, read by nothing (a graph output), or whose
//! result is an output of the step ([`Op::live_out`]) also gets a join `{name}/join` right
//! after its chunks: a compute op (class `Other`, no flops) that reads every chunk and writes
//! the whole outputs of the original op, which consumers outside the context read instead. Along rows or batch (leading, contiguous axes) each chunk
//! writes its slice of the whole buffer in place and the join is a view: 1 ns, no kernel.
//! Along cols or contract it is a kernel that moves twice the op's output bytes (it reads the
//! strided chunks or the partial sums and writes the whole tensor).
//!
//! Output indices: an edge from a copy or a join keeps the output index of the original edge
//! (both have the original's outputs); a chunk-to-chunk edge reads output 0.
//!
//! Memory ([`concerto_graph::memory`]): the rewritten graph keeps the source's resident bytes;
//! a copy and a join carry the original's [`Op::live_out`], a chunk never does (the join
//! stands for the whole result).
//!
//! [`check`] is the graph-invariant checker, written apart from [`rewrite`]'s code paths:
//! every op covered once (copied, or split into chunks `0..n` with at most one join), the DAG
//! kept, work conserved, every original dependency preserved by a direct edge and the memory
//! information kept (see its docs for the list). [`rewrite`] runs it before returning: a rewrite that fails it is a bug,
//! never a result.
//!
//! Cost: [`rewrite`] is O(ops + deps) plus `n` chunks per context op and `n` edges per
//! dependency that a chunk reads; [`check`] is linear in the size of both graphs. Both sort
//! each op's input list (O(d log d) for d inputs), as [`Graph::inputs`] does.
//!
//! # Sources
//!
//! - S. Cheng et al., "Concerto: Automatic Communication Optimization and Scheduling for
//!   Large-Scale Deep Learning", ASPLOS 2025, §4 (auto-decomposition).
//! - S. Wang et al., "Overlap Communication with Dependent Computation via Decomposition in
//!   Large Deep Learning Models", ASPLOS 2023: the loop decomposition of a collective and the
//!   computation it depends on into chunks that pipeline.
//!
//! [`rules::chunk`]: crate::rules::chunk

mod check;
#[cfg(test)]
mod tests;

pub use crate::rewritten::{Origin, Rewritten};
pub use check::check;

use concerto_graph::{ComputeClass, Graph, GraphBuilder, Op, OpId, OpKind};

use crate::error::DecompError;
use crate::rewritten::describe;
use crate::split::{Axis, Context, Family};

/// Splits every op of `ctx` into `ctx.n` chunks, `chunk(op, i)` for `i` in `0..n` (the name
/// and the step-output mark it gives are replaced), copies every other op, and adds the joins
/// (see the module docs).
/// The result has passed [`check`]. A context of the [`Family::Ring`] family is handed to
/// [`crate::ring::rewrite`] instead (`chunk` makes the GEMM's chunks), whose result has
/// passed [`crate::ring::check`].
///
/// Errors: [`DecompError::InvalidContext`] when `ctx` has no ops, ops unsorted, repeated or
/// out of range, fewer than 2 chunks, or its collective is not one of its ops;
/// [`DecompError::Graph`] when a new op is invalid (a chunk function that returns an invalid
/// op, or a new name that the graph already uses); [`DecompError::CheckFailed`] on a bug.
pub fn rewrite(
    graph: &Graph,
    ctx: &Context,
    chunk: &dyn Fn(&Op, u32) -> Op,
) -> Result<Rewritten, DecompError> {
    validate(graph, ctx)?;
    if ctx.family == Family::Ring {
        let ring = crate::ring::find(graph, ctx.collective)
            .filter(|r| r.context() == *ctx)
            .ok_or_else(|| DecompError::InvalidContext {
                reason: format!(
                    "{} has no collective-matmul loop over the ops {:?} with {} ranks",
                    describe(graph, ctx.collective),
                    ctx.ops.iter().map(|o| o.0).collect::<Vec<_>>(),
                    ctx.n
                ),
            })?;
        return crate::ring::rewrite_found(graph, &ring, chunk);
    }
    let n = ctx.n;
    let mut in_ctx = vec![false; graph.len()];
    for &o in &ctx.ops {
        in_ctx[o.0] = true;
    }
    // The new id of each original op: its copy, or its first chunk (chunk `i` is `first + i`).
    let mut first = vec![OpId(usize::MAX); graph.len()];
    let mut join: Vec<Option<OpId>> = vec![None; graph.len()];
    let mut b = GraphBuilder::new(graph.name());
    b.set_resident_bytes(graph.resident_bytes());
    let mut origin = Vec::with_capacity(graph.len() + ctx.ops.len() * (n as usize + 1));
    for o in graph.ids() {
        let op = graph.op(o);
        let inputs = graph.inputs(o);
        if !in_ctx[o.0] {
            let ins: Vec<(OpId, usize)> = inputs
                .iter()
                .map(|&(p, t)| {
                    let rep = if in_ctx[p.0] {
                        join[p.0].expect("a context op read outside the context has a join")
                    } else {
                        first[p.0]
                    };
                    (rep, t)
                })
                .collect();
            first[o.0] = b.try_add(op.clone(), &ins)?;
            origin.push(Origin::Copy(o));
            continue;
        }
        let base = OpId(b.len());
        for i in 0..n {
            let mut c = chunk(op, i);
            c.name = format!("{}/chunk{i}of{n}", op.name);
            c.live_out = false;
            // Inputs are sorted by producer and the map below is monotone in the producer, so
            // several outputs of one chunked producer become adjacent duplicates.
            let mut ins: Vec<(OpId, usize)> = inputs
                .iter()
                .map(|&(p, t)| {
                    if in_ctx[p.0] {
                        (OpId(first[p.0].0 + i as usize), 0)
                    } else {
                        (first[p.0], t)
                    }
                })
                .collect();
            ins.dedup();
            b.try_add(c, &ins)?;
            origin.push(Origin::Chunk { op: o, index: i, n });
        }
        first[o.0] = base;
        let succ = graph.successors(o);
        if succ.is_empty() || succ.iter().any(|s| !in_ctx[s.0]) || op.live_out {
            // Chunks along the leading axes (rows, batch) are contiguous: each writes its
            // slice of the whole buffer in place and the join is a view (1 ns, no kernel).
            let in_place = matches!(ctx.axis, Axis::Rows | Axis::Batch);
            let j = Op {
                name: format!("{}/join", op.name),
                kind: OpKind::Compute {
                    class: ComputeClass::Other,
                    flops: 0,
                    bytes: if in_place {
                        0
                    } else {
                        op.output_bytes().saturating_mul(2)
                    },
                    gemm: None,
                },
                outputs: op.outputs.clone(),
                duration_ns: in_place.then_some(1),
                operand_dtype: None,
                live_out: op.live_out,
                release_ns: 0,
                lane: 0,
            };
            let ins: Vec<(OpId, usize)> = (0..n as usize).map(|i| (OpId(base.0 + i), 0)).collect();
            join[o.0] = Some(b.try_add(j, &ins)?);
            origin.push(Origin::Join(o));
        }
    }
    let r = Rewritten {
        graph: b.finish(),
        origin,
    };
    check(graph, &r)?;
    Ok(r)
}

fn validate(graph: &Graph, ctx: &Context) -> Result<(), DecompError> {
    let fail = |reason: String| Err(DecompError::InvalidContext { reason });
    let who = describe(graph, ctx.collective);
    if ctx.ops.is_empty() {
        return fail(format!("the context of {who} has no ops"));
    }
    if let Some(&o) = ctx.ops.iter().find(|o| o.0 >= graph.len()) {
        return fail(format!(
            "the context of {who} names op {}",
            describe(graph, o)
        ));
    }
    if let Some(w) = ctx.ops.windows(2).find(|w| w[0] >= w[1]) {
        return fail(format!(
            "the ops of the context of {who} are not sorted and unique: {} then {}",
            describe(graph, w[0]),
            describe(graph, w[1])
        ));
    }
    if ctx.n < 2 {
        return fail(format!(
            "the context of {who} has {} chunks: at least 2 are needed",
            ctx.n
        ));
    }
    if ctx.ops.binary_search(&ctx.collective).is_err() {
        return fail(format!(
            "the collective {who} is not among the ops of its context"
        ));
    }
    Ok(())
}
