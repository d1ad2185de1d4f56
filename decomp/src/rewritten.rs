//! What every rewrite returns: the new graph and where each of its ops comes from, shared by
//! the loop decomposition ([`crate::rewrite`]), collective matmul ([`crate::ring`]) and the
//! checks of fusion ([`crate::fuse`]), so that none of them depends on another for it.

use concerto_graph::{Graph, Op, OpId};

/// Where an op of a rewritten graph comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Origin {
    /// An unchanged copy of the original op.
    Copy(OpId),
    /// A chunk of an original op.
    Chunk {
        /// The original op.
        op: OpId,
        /// Which chunk, in `0..n`.
        index: u32,
        /// How many chunks the op was split into.
        n: u32,
    },
    /// The join of the chunks of an original op: reads them all and writes the whole outputs.
    Join(OpId),
    /// A step of a collective-matmul ring replacing a collective ([`crate::ring`]): a
    /// point-to-point transfer of one shard.
    Step {
        /// The original collective.
        op: OpId,
        /// Which step, in `0..n`.
        index: u32,
        /// Steps of the ring.
        n: u32,
    },
    /// The accumulate after a step of a reduce-scatter ring ([`crate::ring`]).
    Accumulate {
        /// The original collective.
        op: OpId,
        /// Which step it follows, in `0..n`.
        index: u32,
        /// Steps of the ring.
        n: u32,
    },
}

impl Origin {
    /// The original op it comes from.
    pub fn op(self) -> OpId {
        match self {
            Origin::Copy(o)
            | Origin::Chunk { op: o, .. }
            | Origin::Join(o)
            | Origin::Step { op: o, .. }
            | Origin::Accumulate { op: o, .. } => o,
        }
    }

    /// The same origin for the original op `op` (when composing rewrites).
    pub fn with_op(self, op: OpId) -> Origin {
        match self {
            Origin::Copy(_) => Origin::Copy(op),
            Origin::Chunk { index, n, .. } => Origin::Chunk { op, index, n },
            Origin::Join(_) => Origin::Join(op),
            Origin::Step { index, n, .. } => Origin::Step { op, index, n },
            Origin::Accumulate { index, n, .. } => Origin::Accumulate { op, index, n },
        }
    }
}

/// A rewritten graph and where each of its ops comes from.
#[derive(Clone, Debug)]
pub struct Rewritten {
    /// The new graph.
    pub graph: Graph,
    /// `origin[i]` is where new op `i` comes from.
    pub origin: Vec<Origin>,
}

/// The first field in which `copy` differs from `op` (name, kind, outputs, duration
/// override), for the checks of every rewrite.
pub(crate) fn copy_difference(op: &Op, copy: &Op) -> Option<&'static str> {
    if copy.name != op.name {
        Some("name")
    } else if copy.kind != op.kind {
        Some("kind")
    } else if copy.outputs != op.outputs {
        Some("outputs")
    } else if copy.duration_ns != op.duration_ns {
        Some("duration override")
    } else {
        None
    }
}
