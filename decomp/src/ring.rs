//! Collective matmul: a collective looped with the GEMM it feeds (or that feeds it) as a ring
//! of point-to-point steps, the decomposition of Wang et al. (ASPLOS 2023) that XLA's SPMD
//! partitioner applies to `all-gather + einsum` and `einsum + reduce-scatter`.
//!
//! Two patterns, found by [`find`] from the shapes alone:
//!
//! - **All-gather, then matmul.** An all-gather over `P` ranks along a token dimension (not the
//!   trailing feature one) whose result a GEMM reads as its left operand, tokens as rows: the
//!   gather becomes `P - 1` ring steps (collective-permutes of one shard each, every step
//!   forwarding the shard the previous one received) and the GEMM `P` row chunks, chunk 0 on
//!   the local shard at once and chunk `j` on the shard of step `j`. So step `j + 1` runs while
//!   chunk `j` computes. A join (a view: the ring writes each shard into the gathered buffer)
//!   stands for the gathered tensor when anything else reads it (a weight gradient, say), and
//!   one for the GEMM's whole output.
//! - **Matmul, then reduce-scatter.** A GEMM whose output a reduce-scatter over `P` ranks
//!   scatters along a token dimension: the GEMM becomes `P` row chunks, and the reduction a
//!   ring of `P - 1` steps, each sending the running partial sum of one shard to the next rank,
//!   which adds its own chunk (an element-wise accumulate); the last accumulate is this rank's
//!   reduced shard.
//!
//! Costs: each step is a collective-permute of one shard (`bytes / P` of an all-gather, the
//! reduce-scatter's shard), costed from the measured permute table like any
//! [`CollectiveKind::SendRecv`]; the GEMM chunks come from the caller's chunk function (the
//! measured GEMM table for their real shape, or the fixed slowdown of a sweep); an accumulate
//! reads two shards and writes one. So, unlike the loop decomposition of [`crate::rewrite`],
//! the communication changes kind: `P - 1` permutes against one collective. Which one wins is
//! the measured tables' call (`concerto decompose` compares them on one graph).
//!
//! [`rewrite`] builds the rewritten graph; [`check`], written apart from it, verifies the
//! result (see its docs); [`rewrite`] runs it before returning. Cost: O(ops + deps + P).
//!
//! # Sources
//!
//! - S. Wang et al., "Overlap Communication with Dependent Computation via Decomposition in
//!   Large Deep Learning Models", ASPLOS 2023, §3 (the all-gather and reduce-scatter loops).
//! - XLA's `spmd_partitioner` windowed einsum loops, the open implementation of that paper.

mod build;
mod check;
#[cfg(test)]
mod tests;

pub use build::rewrite;
pub(crate) use build::rewrite_found;
pub use check::check;

use concerto_graph::{CollectiveKind, ComputeClass, Graph, Op, OpId, OpKind, Tensor};

use crate::split::{Axis, Context, Family};

/// Which collective-matmul loop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum RingPattern {
    /// An all-gather whose result a GEMM reads.
    AllGatherMatmul,
    /// A GEMM whose output a reduce-scatter scatters.
    MatmulReduceScatter,
}

/// A collective-matmul candidate of a graph.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ring {
    /// The all-gather or reduce-scatter.
    pub collective: OpId,
    /// The GEMM looped with it.
    pub gemm: OpId,
    /// Which loop.
    pub pattern: RingPattern,
    /// Ranks of the ring: the collective's group; the GEMM splits into this many row chunks.
    pub ranks: u32,
}

impl Ring {
    /// The decomposition context: both ops, the GEMM's rows, `ranks` chunks, the ring family.
    pub fn context(&self) -> Context {
        let mut ops = vec![self.collective, self.gemm];
        ops.sort_unstable();
        Context {
            collective: self.collective,
            axis: Axis::Rows,
            ops,
            n: self.ranks,
            family: Family::Ring,
        }
    }
}

/// The collective's kind, group and link, or `None` for a compute op.
fn collective_of(op: &Op) -> Option<(CollectiveKind, u64, u32)> {
    match op.kind {
        OpKind::Collective {
            kind, bytes, group, ..
        } => Some((kind, bytes, group)),
        OpKind::Compute { .. } => None,
    }
}

/// The GEMM shape `(b, m, n, k)` of a GEMM op.
fn gemm_of(op: &Op) -> Option<concerto_graph::GemmShape> {
    match &op.kind {
        OpKind::Compute {
            class: ComputeClass::Gemm,
            gemm: Some(g),
            ..
        } => Some(*g),
        _ => None,
    }
}

/// Whether `whole` is `part` with one leading (non-trailing) dimension `ranks` times larger and
/// every other dimension equal.
fn split_on_tokens(whole: &Tensor, part: &Tensor, ranks: u32) -> bool {
    let r = u64::from(ranks);
    if whole.shape.len() != part.shape.len() || whole.shape.len() < 2 {
        return false;
    }
    let last = whole.shape.len() - 1;
    let differ: Vec<usize> = (0..whole.shape.len())
        .filter(|&d| whole.shape[d] != part.shape[d])
        .collect();
    matches!(differ.as_slice(), [d] if *d < last && part.shape[*d].checked_mul(r) == Some(whole.shape[*d]))
}

/// Tokens of an activation: the product of every dimension but the trailing one.
fn tokens(t: &Tensor) -> u64 {
    t.shape[..t.shape.len().saturating_sub(1)].iter().product()
}

/// The collective-matmul loop around `collective`, if its shapes allow one (see the module
/// docs): an all-gather along tokens read by a GEMM as its left operand (the first such
/// consumer in program order), or a reduce-scatter along tokens of a GEMM's output, over at
/// least 2 ranks, with the GEMM's rows a multiple of the ranks. Cost: O(degree).
pub fn find(graph: &Graph, collective: OpId) -> Option<Ring> {
    let op = graph.op(collective);
    let (kind, _, ranks) = collective_of(op)?;
    if ranks < 2 {
        return None;
    }
    let inputs = graph.inputs(collective);
    let [(producer, index)] = inputs.as_slice() else {
        return None;
    };
    let input = graph.op(*producer).outputs.get(*index)?;
    let output = op.outputs.first()?;
    match kind {
        CollectiveKind::AllGather => {
            if !split_on_tokens(output, input, ranks) {
                return None;
            }
            let features = *output.shape.last()?;
            let gemm = graph.successors(collective).iter().copied().find(|&s| {
                gemm_of(graph.op(s)).is_some_and(|g| {
                    g.b == 1
                        && g.k == features
                        && g.m == tokens(output)
                        && g.m % u64::from(ranks) == 0
                })
            })?;
            Some(Ring {
                collective,
                gemm,
                pattern: RingPattern::AllGatherMatmul,
                ranks,
            })
        }
        CollectiveKind::ReduceScatter => {
            let g = gemm_of(graph.op(*producer))?;
            let ok = split_on_tokens(input, output, ranks)
                && g.b == 1
                && g.n == *input.shape.last()?
                && g.m == tokens(input)
                && g.m % u64::from(ranks) == 0;
            ok.then_some(Ring {
                collective,
                gemm: *producer,
                pattern: RingPattern::MatmulReduceScatter,
                ranks,
            })
        }
        _ => None,
    }
}
