//! What every rewrite returns: the new graph and where each of its ops comes from, shared by
//! the loop decomposition ([`crate::rewrite`]), collective matmul ([`crate::ring`]) and the
//! checks of fusion ([`crate::fuse`]), so that none of them depends on another for it.
//!
//! Every rewrite keeps the memory information of its source ([`concerto_graph::memory`]): the
//! rewritten graph has the source's [`Graph::resident_bytes`], and the op that stands for an
//! original op's result (its copy, the join of its chunks, a reduce-scatter ring's last
//! accumulate, the bucket it is fused into) carries the original's [`Op::live_out`]; a chunk,
//! a ring step or an intermediate accumulate is never a step output. Each rewrite's check
//! verifies it and names the op when it does not hold.

use concerto_graph::{Graph, Op, OpId};

/// `` `name` (#i) `` of an op of `graph`, or `#i` when out of range.
pub(crate) fn describe(graph: &Graph, o: OpId) -> String {
    if o.0 < graph.len() {
        format!("`{}` (#{})", graph.op(o).name, o.0)
    } else {
        format!("#{} (out of range: the graph has {} ops)", o.0, graph.len())
    }
}

/// Every op's `(producer, output)` inputs (the preamble of the checks of splits and fusion);
/// errors naming the first edge that does not go forward in program order.
pub(crate) fn forward_inputs(g: &Graph) -> Result<Vec<Vec<(OpId, usize)>>, String> {
    let ins: Vec<Vec<(OpId, usize)>> = g.ids().map(|x| g.inputs(x)).collect();
    for x in g.ids() {
        if let Some(&(p, _)) = ins[x.0].iter().find(|(p, _)| *p >= x) {
            return Err(format!(
                "edge {} -> {} does not go forward in program order",
                describe(g, p),
                describe(g, x)
            ));
        }
    }
    Ok(ins)
}

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
/// override, step-output mark), for the checks of every rewrite.
pub(crate) fn copy_difference(op: &Op, copy: &Op) -> Option<&'static str> {
    if copy.name != op.name {
        Some("name")
    } else if copy.kind != op.kind {
        Some("kind")
    } else if copy.outputs != op.outputs {
        Some("outputs")
    } else if copy.duration_ns != op.duration_ns {
        Some("duration override")
    } else if copy.live_out != op.live_out {
        Some("step-output mark (live_out)")
    } else {
        None
    }
}

/// Why `rewritten` does not keep `original`'s resident bytes, if it does not (for the checks
/// of every rewrite).
pub(crate) fn resident_difference(original: &Graph, rewritten: &Graph) -> Option<String> {
    let (a, b) = (original.resident_bytes(), rewritten.resident_bytes());
    (a != b).then(|| format!("the rewrite changes the resident bytes from {a} to {b}"))
}

/// Why `result`, the op `new` of the rewritten graph that stands for the result of `old` (its
/// join, a ring's last accumulate, its bucket), does not carry the step-output mark it must:
/// `want` (`old`'s, or any member's of a bucket), if it does not. `new` and `old` name the ops.
pub(crate) fn live_out_difference(want: bool, result: &Op, new: &str, old: &str) -> Option<String> {
    match (want, result.live_out) {
        (true, false) => Some(format!(
            "{old} is an output of the step (live_out), but {new}, which stands for its \
             result, is not marked live_out"
        )),
        (false, true) => Some(format!(
            "{new} is marked live_out, but {old}, whose result it stands for, is no output \
             of the step"
        )),
        _ => None,
    }
}

/// Why `part`, an op of the rewritten graph that is only a part of `old`'s result (a chunk,
/// a ring step, an accumulate before the last), is marked as a step output, if it is.
pub(crate) fn part_live_out(part: &Op, new: &str, old: &str) -> Option<String> {
    part.live_out.then(|| {
        format!(
            "{new}, a part of {old}'s result, is marked live_out: only the op that stands for \
             the whole result is"
        )
    })
}

/// `graph` rebuilt with `resident` resident bytes and the ops named in `live_out` marked as
/// step outputs (for the tests of every rewrite).
#[cfg(test)]
pub(crate) fn with_memory(graph: &Graph, resident: u64, live_out: &[&str]) -> Graph {
    let mut b = concerto_graph::GraphBuilder::new(graph.name());
    b.set_resident_bytes(resident);
    for name in live_out {
        assert!(graph.find(name).is_some(), "no op `{name}`");
    }
    for x in graph.ids() {
        let mut op = graph.op(x).clone();
        op.live_out = live_out.contains(&op.name.as_str());
        b.try_add(op, &graph.inputs(x)).unwrap();
    }
    b.finish()
}
