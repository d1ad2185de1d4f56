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
//! A context op read by an op outside the context, or read by nothing (a graph output), also
//! gets a join `{name}/join` right after its chunks: a compute op (class `Other`, no flops)
//! that reads every chunk and writes the whole outputs of the original op, which consumers
//! outside the context read instead. Along rows or batch (leading, contiguous axes) each chunk
//! writes its slice of the whole buffer in place and the join is a view: 1 ns, no kernel.
//! Along cols or contract it is a kernel that moves twice the op's output bytes (it reads the
//! strided chunks or the partial sums and writes the whole tensor).
//!
//! Output indices: an edge from a copy or a join keeps the output index of the original edge
//! (both have the original's outputs); a chunk-to-chunk edge reads output 0.
//!
//! [`check`] is the graph-invariant checker, written apart from [`rewrite`]'s code paths:
//! every op covered once (copied, or split into chunks `0..n` with at most one join), the DAG
//! kept, work conserved and every original dependency preserved by a direct edge (see its
//! docs for the list). [`rewrite`] runs it before returning: a rewrite that fails it is a bug,
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

use concerto_graph::{ComputeClass, Graph, GraphBuilder, Op, OpId, OpKind};

use crate::error::DecompError;
use crate::split::{Axis, Context, Family};

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

/// Splits every op of `ctx` into `ctx.n` chunks, `chunk(op, i)` for `i` in `0..n` (the name
/// it gives is replaced), copies every other op, and adds the joins (see the module docs).
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
        if succ.is_empty() || succ.iter().any(|s| !in_ctx[s.0]) {
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

/// `` `name` (#i) `` of an op of `graph`, or `#i` when out of range.
fn describe(graph: &Graph, o: OpId) -> String {
    if o.0 < graph.len() {
        format!("`{}` (#{})", graph.op(o).name, o.0)
    } else {
        format!("#{} (out of range: the graph has {} ops)", o.0, graph.len())
    }
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

/// How an original op is covered in a rewritten graph.
#[derive(Clone, Debug, Default)]
struct Cover {
    copy: Option<OpId>,
    chunks: Vec<Option<OpId>>,
    join: Option<OpId>,
}

/// Checks that `rewritten` is a decomposition of `original`; each failure is a
/// [`DecompError::CheckFailed`] naming the ops involved:
///
/// - (a) `origin` has one entry per new op, each naming an op of `original`;
/// - (b) every edge of the new graph goes forward in program order (a DAG whose program order
///   is topological);
/// - (c) every original op is covered exactly once: by one copy and no chunk or join, or by
///   chunks `0..n` (one each, all with the same `n`) and at most one join; an original op read
///   by nothing (a graph output) that is chunked has its join;
/// - (d) work is conserved: a copy equals the original (name, kind, outputs, duration
///   override); chunks are the same kind of op as the original (the same compute class; the
///   same collective, group and link); the chunks' flops add up to the original's within `n`
///   (rounding); their bytes add up to at least the original's less `n`, and no chunk moves
///   more bytes than the whole op (a GEMM chunk re-reads the whole weight, so the total may
///   exceed the original's); a collective's chunks' bytes add up to between the original's
///   and `n` more;
/// - (e) every original dependency `p -> c` is kept by a direct edge into each new op `x`
///   representing `c` (its copy or any of its chunks): from the copy of `p` if `p` is copied,
///   from chunk `i` of `p` if both are chunked and `x` is chunk `i`, and from the join of `p`
///   if `p` is chunked and `c` copied (the join must exist); edges from a copy or a join read
///   the original edge's output index;
/// - (f) each join is a compute op with the original's outputs and reads every chunk of its
///   op.
///
/// It shares no logic with [`rewrite`] (only the helper that names ops in messages). Cost:
/// O(ops + deps) of both graphs (plus sorting each op's inputs).
pub fn check(original: &Graph, rewritten: &Rewritten) -> Result<(), DecompError> {
    check_inner(original, rewritten).map_err(|reason| DecompError::CheckFailed { reason })
}

fn check_inner(original: &Graph, rewritten: &Rewritten) -> Result<(), String> {
    let g = &rewritten.graph;
    let origin = &rewritten.origin;
    let new = |x: OpId| describe(g, x);
    let old = |o: OpId| describe(original, o);

    // (a) and (c): origins, and how each original op is covered.
    if origin.len() != g.len() {
        return Err(format!(
            "{} origins for the {} ops of the rewritten graph",
            origin.len(),
            g.len()
        ));
    }
    let mut cover = vec![Cover::default(); original.len()];
    for x in g.ids() {
        let o = origin[x.0].op();
        if o.0 >= original.len() {
            return Err(format!(
                "{} comes from op #{}, but the original graph has {} ops",
                new(x),
                o.0,
                original.len()
            ));
        }
        let c = &mut cover[o.0];
        match origin[x.0] {
            Origin::Copy(_) => {
                if let Some(y) = c.copy {
                    return Err(format!(
                        "{} is copied twice: {} and {}",
                        old(o),
                        new(y),
                        new(x)
                    ));
                }
                if !c.chunks.is_empty() || c.join.is_some() {
                    return Err(format!(
                        "{} is both copied ({}) and chunked",
                        old(o),
                        new(x)
                    ));
                }
                c.copy = Some(x);
            }
            Origin::Chunk { index, n, .. } => {
                if let Some(y) = c.copy {
                    return Err(format!(
                        "{} is both copied ({}) and chunked ({})",
                        old(o),
                        new(y),
                        new(x)
                    ));
                }
                if index >= n || n as usize > g.len() {
                    return Err(format!(
                        "{} claims to be chunk {index} of {n} of {}",
                        new(x),
                        old(o)
                    ));
                }
                if c.chunks.is_empty() {
                    c.chunks = vec![None; n as usize];
                } else if c.chunks.len() != n as usize {
                    return Err(format!(
                        "the chunks of {} disagree on their count: {} and {n} ({})",
                        old(o),
                        c.chunks.len(),
                        new(x)
                    ));
                }
                if let Some(y) = c.chunks[index as usize] {
                    return Err(format!(
                        "{} has chunk {index} twice: {} and {}",
                        old(o),
                        new(y),
                        new(x)
                    ));
                }
                c.chunks[index as usize] = Some(x);
            }
            Origin::Join(_) => {
                if let Some(y) = c.copy {
                    return Err(format!(
                        "{} is copied ({}) and has a join ({})",
                        old(o),
                        new(y),
                        new(x)
                    ));
                }
                if let Some(y) = c.join {
                    return Err(format!(
                        "{} has two joins: {} and {}",
                        old(o),
                        new(y),
                        new(x)
                    ));
                }
                c.join = Some(x);
            }
            Origin::Step { .. } | Origin::Accumulate { .. } => {
                return Err(format!(
                    "{} is a ring step of {}, which a split rewrite never makes",
                    new(x),
                    old(o)
                ));
            }
        }
    }
    for o in original.ids() {
        let c = &cover[o.0];
        if c.copy.is_none() && c.chunks.is_empty() {
            return Err(match c.join {
                Some(j) => format!("{} has a join ({}) but no chunks", old(o), new(j)),
                None => format!("{} is neither copied nor chunked", old(o)),
            });
        }
        if let Some(i) = c.chunks.iter().position(Option::is_none) {
            return Err(format!(
                "chunk {i} of {} of {} is missing",
                c.chunks.len(),
                old(o)
            ));
        }
        if !c.chunks.is_empty() && c.join.is_none() && original.successors(o).is_empty() {
            return Err(format!(
                "{} is a graph output, chunked, and has no join",
                old(o)
            ));
        }
    }

    // (b): edges go forward.
    let ins: Vec<Vec<(OpId, usize)>> = g.ids().map(|x| g.inputs(x)).collect();
    for x in g.ids() {
        if let Some(&(p, _)) = ins[x.0].iter().find(|(p, _)| *p >= x) {
            return Err(format!(
                "edge {} -> {} does not go forward in program order",
                new(p),
                new(x)
            ));
        }
    }

    // (d): work.
    for o in original.ids() {
        let op = original.op(o);
        let c = &cover[o.0];
        if let Some(x) = c.copy {
            let y = g.op(x);
            let differs = copy_difference(op, y);
            if let Some(what) = differs {
                return Err(format!(
                    "the copy {} of {} differs in its {what}",
                    new(x),
                    old(o)
                ));
            }
        } else {
            let chunks: Vec<(OpId, &Op)> =
                c.chunks.iter().flatten().map(|&x| (x, g.op(x))).collect();
            conserved(op, &chunks, &new).map_err(|e| format!("{}: {e}", old(o)))?;
        }
    }

    // (e): every original dependency, by a direct edge.
    let has_edge = |x: OpId, y: OpId, tensor: Option<usize>| -> bool {
        let v = &ins[x.0];
        match tensor {
            Some(t) => v.binary_search(&(y, t)).is_ok(),
            None => {
                let k = v.partition_point(|e| e.0 < y);
                v.get(k).is_some_and(|e| e.0 == y)
            }
        }
    };
    for c in original.ids() {
        let cc = &cover[c.0];
        let reps: Vec<(OpId, Option<usize>)> = match cc.copy {
            Some(x) => vec![(x, None)],
            None => cc
                .chunks
                .iter()
                .flatten()
                .enumerate()
                .map(|(i, &x)| (x, Some(i)))
                .collect(),
        };
        for (p, t) in original.inputs(c) {
            let pc = &cover[p.0];
            for &(x, i) in &reps {
                let (y, tensor) = match (pc.copy, i) {
                    (Some(y), _) => (y, Some(t)),
                    (None, Some(i)) => match pc.chunks.get(i).copied().flatten() {
                        Some(y) => (y, None),
                        None => {
                            return Err(format!(
                                "chunk {} of {} reads {}, which has no chunk {i}",
                                new(x),
                                old(c),
                                old(p)
                            ))
                        }
                    },
                    (None, None) => match pc.join {
                        Some(j) => (j, Some(t)),
                        None => {
                            return Err(format!(
                                "the copy {} of {} reads the chunked {}, which has no join",
                                new(x),
                                old(c),
                                old(p)
                            ))
                        }
                    },
                };
                if !has_edge(x, y, tensor) {
                    let what = tensor.map_or(String::new(), |t| format!(" (output {t})"));
                    return Err(format!(
                        "the dependency {} -> {} is lost: no edge {} -> {}{what}",
                        old(p),
                        old(c),
                        new(y),
                        new(x)
                    ));
                }
            }
        }
    }

    // (f): joins.
    for o in original.ids() {
        let c = &cover[o.0];
        let Some(j) = c.join else { continue };
        let op = g.op(j);
        if !matches!(op.kind, OpKind::Compute { .. }) || op.outputs != original.op(o).outputs {
            return Err(format!(
                "the join {} of {} is not a compute op with the original's outputs",
                new(j),
                old(o)
            ));
        }
        if let Some(&x) = c.chunks.iter().flatten().find(|&&x| !has_edge(j, x, None)) {
            return Err(format!(
                "the join {} of {} does not read its chunk {}",
                new(j),
                old(o),
                new(x)
            ));
        }
    }
    Ok(())
}

/// Work conservation of `op`'s chunks (rule (d) of [`check`]).
fn conserved(op: &Op, chunks: &[(OpId, &Op)], new: &dyn Fn(OpId) -> String) -> Result<(), String> {
    let n = chunks.len() as u128;
    match &op.kind {
        OpKind::Compute {
            class,
            flops,
            bytes,
            ..
        } => {
            let (mut fs, mut bs) = (0u128, 0u128);
            for &(x, ch) in chunks {
                match &ch.kind {
                    OpKind::Compute {
                        class: k,
                        flops: f,
                        bytes: b,
                        ..
                    } if k == class => {
                        if b > bytes {
                            return Err(format!(
                                "its chunk {} moves {b} bytes, more than the whole op's {bytes}",
                                new(x)
                            ));
                        }
                        fs += u128::from(*f);
                        bs += u128::from(*b);
                    }
                    _ => {
                        return Err(format!(
                            "its chunk {} is not a {class:?} compute op",
                            new(x)
                        ))
                    }
                }
            }
            let (f, b) = (u128::from(*flops), u128::from(*bytes));
            if fs + n < f || fs > f + n {
                return Err(format!(
                    "its {n} chunks do {fs} flops in total, not {f} (give or take {n})"
                ));
            }
            if bs + n < b {
                return Err(format!(
                    "its {n} chunks move {bs} bytes in total, less than its {b}"
                ));
            }
        }
        OpKind::Collective {
            kind,
            bytes,
            group,
            link,
        } => {
            let mut s = 0u128;
            for &(x, ch) in chunks {
                match &ch.kind {
                    OpKind::Collective {
                        kind: k,
                        bytes: b,
                        group: gr,
                        link: l,
                    } if k == kind && gr == group && l == link => s += u128::from(*b),
                    _ => {
                        return Err(format!(
                            "its chunk {} is not a {} over the same group and link",
                            new(x),
                            kind.as_str()
                        ))
                    }
                }
            }
            let b = u128::from(*bytes);
            if s < b || s > b + n {
                return Err(format!(
                    "its {n} chunks communicate {s} bytes in total, not {b} (up to {n} more)"
                ));
            }
        }
    }
    Ok(())
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::split::Axis;
    use concerto_graph::{CollectiveKind, DType, GemmShape, LinkClass, Tensor};

    /// `embed` (two outputs) -> `fc` (GEMM) -> `ar` (all-reduce) -> `add` (also reads output
    /// 1 of `embed`) -> `loss`, which also reads `fc`.
    fn five() -> Graph {
        let t = Tensor::new(vec![64, 64], DType::Bf16);
        let mut b = GraphBuilder::new("five");
        let embed = b.add(
            Op::compute("embed", ComputeClass::Elementwise, 4096, 16384)
                .with_output(t.clone())
                .with_output(t.clone()),
            &[],
        );
        let shape = GemmShape {
            b: 1,
            m: 64,
            n: 64,
            k: 64,
        };
        let fc = b.add(Op::gemm("fc", shape, DType::Bf16), &[embed]);
        let ar = b.add(
            Op::collective(
                "ar",
                CollectiveKind::AllReduce,
                8192,
                8,
                LinkClass::IntraNode,
            )
            .with_output(t.clone()),
            &[fc],
        );
        let add = b
            .try_add(
                Op::compute("add", ComputeClass::Elementwise, 4097, 24577).with_output(t),
                &[(ar, 0), (embed, 1)],
            )
            .unwrap();
        b.try_add(
            Op::compute("loss", ComputeClass::Reduction, 4096, 8192),
            &[(add, 0), (fc, 0)],
        )
        .unwrap();
        b.finish()
    }

    /// Divides flops and bytes by `n`, the remainder on chunk 0.
    fn split(n: u32) -> impl Fn(&Op, u32) -> Op {
        move |op, i| {
            let div = |x: u64| x / u64::from(n) + if i == 0 { x % u64::from(n) } else { 0 };
            let mut c = op.clone();
            match &mut c.kind {
                OpKind::Compute { flops, bytes, .. } => {
                    *flops = div(*flops);
                    *bytes = div(*bytes);
                }
                OpKind::Collective { bytes, .. } => *bytes = div(*bytes),
            }
            c
        }
    }

    fn ctx(ops: &[usize], n: u32) -> Context {
        Context {
            collective: OpId(2),
            axis: Axis::Rows,
            ops: ops.iter().map(|&i| OpId(i)).collect(),
            n,
            family: Family::Split,
        }
    }

    fn rewritten() -> (Graph, Rewritten) {
        let g = five();
        let r = rewrite(&g, &ctx(&[1, 2, 3], 2), &split(2)).unwrap();
        (g, r)
    }

    /// A copy of `g` with each op and its inputs passed through `edit`.
    fn rebuild(g: &Graph, edit: impl Fn(OpId, &mut Op, &mut Vec<(OpId, usize)>)) -> Graph {
        let mut b = GraphBuilder::new(g.name());
        for x in g.ids() {
            let mut op = g.op(x).clone();
            let mut ins = g.inputs(x);
            edit(x, &mut op, &mut ins);
            b.try_add(op, &ins).unwrap();
        }
        b.finish()
    }

    fn failure(original: &Graph, r: &Rewritten) -> String {
        match check(original, r) {
            Err(e @ DecompError::CheckFailed { .. }) => e.to_string(),
            other => panic!("expected a check failure, got {other:?}"),
        }
    }

    #[test]
    fn names_origins_edges_and_joins() {
        let (_, r) = rewritten();
        let g = &r.graph;
        let names: Vec<&str> = g.ops().map(|o| o.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "embed",
                "fc/chunk0of2",
                "fc/chunk1of2",
                "fc/join",
                "ar/chunk0of2",
                "ar/chunk1of2",
                "add/chunk0of2",
                "add/chunk1of2",
                "add/join",
                "loss",
            ]
        );
        use Origin::*;
        let chunk = |op, index| Chunk {
            op: OpId(op),
            index,
            n: 2,
        };
        assert_eq!(
            r.origin,
            [
                Copy(OpId(0)),
                chunk(1, 0),
                chunk(1, 1),
                Join(OpId(1)),
                chunk(2, 0),
                chunk(2, 1),
                chunk(3, 0),
                chunk(3, 1),
                Join(OpId(3)),
                Copy(OpId(4)),
            ]
        );
        let ins = |i: usize| g.inputs(OpId(i));
        let e = |v: &[(usize, usize)]| v.iter().map(|&(p, t)| (OpId(p), t)).collect::<Vec<_>>();
        assert_eq!(ins(1), e(&[(0, 0)]));
        assert_eq!(ins(2), e(&[(0, 0)]));
        assert_eq!(ins(3), e(&[(1, 0), (2, 0)]));
        assert_eq!(ins(4), e(&[(1, 0)]));
        assert_eq!(ins(5), e(&[(2, 0)]));
        // Chunk i of `add` reads chunk i of `ar` and output 1 of the copy of `embed`.
        assert_eq!(ins(6), e(&[(0, 1), (4, 0)]));
        assert_eq!(ins(7), e(&[(0, 1), (5, 0)]));
        assert_eq!(ins(8), e(&[(6, 0), (7, 0)]));
        // The outside consumer reads the joins.
        assert_eq!(ins(9), e(&[(3, 0), (8, 0)]));
        let OpKind::Compute {
            class,
            flops,
            bytes,
            gemm,
        } = g.op(OpId(3)).kind
        else {
            panic!("a join is a compute op")
        };
        // Along rows the join is a view; along cols it is a copy of twice the bytes.
        assert_eq!(
            (class, flops, bytes, gemm),
            (ComputeClass::Other, 0, 0, None)
        );
        assert_eq!(g.op(OpId(3)).duration_ns, Some(1));
        let cols = rewrite(
            &five(),
            &Context {
                axis: Axis::Cols,
                ..ctx(&[1, 2, 3], 2)
            },
            &split(2),
        )
        .unwrap();
        let OpKind::Compute { bytes, .. } = cols.graph.op(OpId(3)).kind else {
            panic!("a join is a compute op")
        };
        assert_eq!(bytes, 2 * 8192);
        assert_eq!(g.op(OpId(3)).outputs, five().op(OpId(1)).outputs);
        // Remainders on chunk 0.
        let flops = |i: usize| match g.op(OpId(i)).kind {
            OpKind::Compute { flops, .. } => flops,
            OpKind::Collective { .. } => unreachable!(),
        };
        assert_eq!((flops(6), flops(7)), (2049, 2048));
    }

    #[test]
    fn a_lone_collective_gets_a_join_its_consumer_reads() {
        let g = five();
        let mut c = ctx(&[2], 3);
        c.collective = OpId(2);
        let r = rewrite(&g, &c, &split(3)).unwrap();
        assert_eq!(r.graph.len(), 5 - 1 + 3 + 1);
        let join = r.graph.find("ar/join").unwrap();
        let add = r.graph.find("add").unwrap();
        assert!(r.graph.inputs(add).contains(&(join, 0)));
        assert_eq!(r.graph.predecessors(join).len(), 3);
        // A graph output in the context gets a join as well.
        let r = rewrite(&g, &ctx(&[2, 3, 4], 2), &split(2)).unwrap();
        assert!(r.graph.find("loss/join").is_some());
        assert!(r.graph.find("add/join").is_none());
    }

    #[test]
    fn invalid_contexts_are_rejected_naming_the_op() {
        let g = five();
        let cases = [
            (ctx(&[], 2), "no ops"),
            (ctx(&[3, 2], 2), "sorted"),
            (ctx(&[2, 2], 2), "sorted"),
            (ctx(&[2, 9], 2), "#9"),
            (ctx(&[2], 1), "at least 2"),
            (ctx(&[1, 3], 2), "not among"),
        ];
        for (c, needle) in cases {
            let e = rewrite(&g, &c, &split(2)).unwrap_err();
            assert!(matches!(e, DecompError::InvalidContext { .. }), "{e:?}");
            let s = e.to_string();
            assert!(s.contains(needle) && s.contains("`ar`"), "{s}");
        }
    }

    #[test]
    fn a_removed_edge_fails_the_check() {
        let (g, mut r) = rewritten();
        // `ar/chunk0of2` no longer reads `fc/chunk0of2`.
        r.graph = rebuild(&r.graph, |x, _, ins| {
            if x.0 == 4 {
                ins.clear();
            }
        });
        let s = failure(&g, &r);
        assert!(s.contains("`fc` (#1) -> `ar` (#2) is lost"), "{s}");
        assert!(s.contains("`fc/chunk0of2`"), "{s}");

        // `loss` reads `fc` itself... no: it no longer reads the join of `fc`.
        let (g, mut r) = rewritten();
        r.graph = rebuild(&r.graph, |x, _, ins| {
            if x.0 == 9 {
                ins.retain(|e| e.0 != OpId(3));
            }
        });
        let s = failure(&g, &r);
        assert!(s.contains("no edge `fc/join` (#3) -> `loss` (#9)"), "{s}");

        // A join that misses a chunk.
        let (g, mut r) = rewritten();
        r.graph = rebuild(&r.graph, |x, _, ins| {
            if x.0 == 8 {
                ins.retain(|e| e.0 != OpId(7));
            }
        });
        let s = failure(&g, &r);
        assert!(
            s.contains("join `add/join`") && s.contains("`add/chunk1of2`"),
            "{s}"
        );

        // The output index of an edge from a copy is kept.
        let (g, mut r) = rewritten();
        r.graph = rebuild(&r.graph, |x, _, ins| {
            if x.0 == 6 {
                ins[0].1 = 0;
            }
        });
        let s = failure(&g, &r);
        assert!(s.contains("(output 1)"), "{s}");
    }

    #[test]
    fn a_duplicated_or_missing_chunk_fails_the_check() {
        let (g, mut r) = rewritten();
        r.origin[2] = Origin::Chunk {
            op: OpId(1),
            index: 0,
            n: 2,
        };
        let s = failure(&g, &r);
        assert!(s.contains("`fc` (#1) has chunk 0 twice"), "{s}");

        let (g, mut r) = rewritten();
        r.origin[2] = Origin::Copy(OpId(1));
        assert!(failure(&g, &r).contains("both copied"));

        let (g, mut r) = rewritten();
        r.origin.pop();
        assert!(failure(&g, &r).contains("10 ops"));

        let (g, mut r) = rewritten();
        r.origin[9] = Origin::Copy(OpId(0));
        let s = failure(&g, &r);
        assert!(s.contains("`embed` (#0) is copied twice"), "{s}");
    }

    #[test]
    fn a_changed_copy_fails_the_check() {
        let (g, mut r) = rewritten();
        r.graph = rebuild(&r.graph, |x, op, _| {
            if x.0 == 9 {
                op.name = "loss2".into();
            }
        });
        let s = failure(&g, &r);
        assert!(
            s.contains("`loss2`") && s.contains("`loss` (#4)") && s.contains("name"),
            "{s}"
        );

        let (g, mut r) = rewritten();
        r.graph = rebuild(&r.graph, |x, op, _| {
            if x.0 == 0 {
                op.duration_ns = Some(5);
            }
        });
        assert!(failure(&g, &r).contains("duration override"));
    }

    #[test]
    fn chunks_whose_work_does_not_add_up_fail_the_check() {
        let (g, mut r) = rewritten();
        r.graph = rebuild(&r.graph, |x, op, _| {
            if x.0 == 2 {
                if let OpKind::Compute { flops, .. } = &mut op.kind {
                    *flops = 0;
                }
            }
        });
        let s = failure(&g, &r);
        assert!(s.contains("`fc` (#1)") && s.contains("flops"), "{s}");

        // Chunks that each do the whole op's work.
        let g = five();
        let whole = |op: &Op, _| op.clone();
        let e = rewrite(&g, &ctx(&[2, 3], 2), &whole).unwrap_err();
        assert!(matches!(e, DecompError::CheckFailed { .. }), "{e}");
        assert!(e.to_string().contains("`ar` (#2)"), "{e}");

        // A chunk of another kind.
        let other = |op: &Op, i| {
            let mut c = split(2)(op, i);
            if let OpKind::Collective { group, .. } = &mut c.kind {
                *group = 4;
            }
            c
        };
        let e = rewrite(&g, &ctx(&[2], 2), &other).unwrap_err();
        assert!(e.to_string().contains("same group"), "{e}");
    }
}
