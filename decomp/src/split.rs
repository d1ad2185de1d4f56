//! What a decomposition splits: the axis, and how each op of a context divides.

use concerto_graph::OpId;

/// A logical axis of an op's iteration space, in terms of the graph IR's GEMM view
/// `(b, m, n, k)` and activation tensors whose leading dimension is the rows (tokens).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Axis {
    /// Independent batch instances (GEMM `b`; attention's batch x heads).
    Batch,
    /// Rows: tokens (GEMM `m`; the leading dimension of activations).
    Rows,
    /// Columns (GEMM `n`; the trailing dimension of activations).
    Cols,
    /// The contracted dimension (GEMM `k`): chunks produce partial sums that a following
    /// all-reduce or reduce-scatter adds up.
    Contract,
}

impl Axis {
    /// `batch`, `rows`, `cols` or `contract`.
    pub fn as_str(self) -> &'static str {
        match self {
            Axis::Batch => "batch",
            Axis::Rows => "rows",
            Axis::Cols => "cols",
            Axis::Contract => "contract",
        }
    }
}

/// A decomposition context: the ops to split into `n` chunks along `axis` around the
/// critical collective `collective` (which is one of `ops`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Context {
    /// The critical collective.
    pub collective: OpId,
    /// The axis.
    pub axis: Axis,
    /// Ops split, in program order (the collective included).
    pub ops: Vec<OpId>,
    /// Chunks.
    pub n: u32,
}
