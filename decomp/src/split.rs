//! What a decomposition splits: the axis, and how each op of a context divides.

use concerto_graph::OpId;

/// A logical axis of an op's iteration space, in terms of the graph IR's GEMM view
/// `(b, m, n, k)` and activation tensors whose leading dimension is the rows (tokens).
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
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

/// The family of a decomposition.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Family {
    /// Concerto's loop decomposition: every op of the context, the collective included,
    /// split into `n` chunks of the same kind ([`crate::rewrite`]).
    #[default]
    Split,
    /// Collective matmul (Wang et al., ASPLOS 2023): an all-gather or reduce-scatter looped
    /// with its GEMM as a ring of `n - 1` point-to-point steps and `n` GEMM chunks
    /// ([`crate::ring`]).
    Ring,
}

impl Family {
    /// `split` or `collective-matmul`.
    pub fn as_str(self) -> &'static str {
        match self {
            Family::Split => "split",
            Family::Ring => "collective-matmul",
        }
    }
}

/// A decomposition context: the ops to split into `n` chunks along `axis` around the
/// critical collective `collective` (which is one of `ops`), by the decomposition `family`.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
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
    /// How: split into chunks, or a collective-matmul ring (then `ops` is the collective and
    /// its GEMM, `axis` the GEMM's rows and `n` the ring's ranks).
    pub family: Family,
}

impl Context {
    /// A label for tables: `rows/4` for a split, `ring/8` for a collective matmul.
    pub fn label(&self) -> String {
        label(self.family, self.axis, self.n)
    }
}

/// `axis/n` for a split, `ring/n` for a collective matmul.
pub(crate) fn label(family: Family, axis: Axis, n: u32) -> String {
    match family {
        Family::Split => format!("{}/{n}", axis.as_str()),
        Family::Ring => format!("ring/{n}"),
    }
}
