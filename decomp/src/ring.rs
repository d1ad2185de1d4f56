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

use concerto_graph::{CollectiveKind, ComputeClass, Graph, GraphBuilder, Op, OpId, OpKind, Tensor};

use crate::error::DecompError;
use crate::rewrite::{copy_difference, Origin, Rewritten};
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
            let gemm = graph.successors(collective).into_iter().find(|&s| {
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

/// A view op (no kernel, 1 ns) named `name` with `outputs`: a join of in-place chunks.
fn view(name: String, outputs: Vec<Tensor>) -> Op {
    Op {
        name,
        kind: OpKind::Compute {
            class: ComputeClass::Other,
            flops: 0,
            bytes: 0,
            gemm: None,
        },
        outputs,
        duration_ns: Some(1),
    }
}

/// Rewrites `ring` in `graph` (see the module docs): the GEMM's chunks come from `chunk(gemm,
/// j)` for `j` in `0..ranks` (names replaced), the steps and accumulates are built here. Every
/// other op is copied. The result has passed [`check`].
///
/// Errors: [`DecompError::InvalidContext`] when [`find`] does not give this loop for the
/// collective; [`DecompError::Graph`] for an invalid new op; [`DecompError::CheckFailed`] on a
/// bug.
pub fn rewrite(
    graph: &Graph,
    ring: &Ring,
    chunk: &dyn Fn(&Op, u32) -> Op,
) -> Result<Rewritten, DecompError> {
    if ring.collective.0 >= graph.len() || find(graph, ring.collective) != Some(*ring) {
        return Err(DecompError::InvalidContext {
            reason: format!(
                "no collective-matmul loop of {} ranks around op #{} with GEMM #{}",
                ring.ranks, ring.collective.0, ring.gemm.0
            ),
        });
    }
    rewrite_found(graph, ring, chunk)
}

/// [`rewrite`] of a ring that [`find`] returned for `graph` (not validated again).
pub(crate) fn rewrite_found(
    graph: &Graph,
    ring: &Ring,
    chunk: &dyn Fn(&Op, u32) -> Op,
) -> Result<Rewritten, DecompError> {
    let (c, m, p) = (ring.collective, ring.gemm, ring.ranks);
    let steps = p - 1;
    let coll = graph.op(c);
    let gemm = graph.op(m);
    let (_, bytes, group) = collective_of(coll).expect("found above");
    let link = coll.link().expect("a collective has a link");
    let [(src, src_t)] = graph.inputs(c)[..] else {
        unreachable!("found above: one input")
    };
    // The tensor of one shard, and the bytes of one step.
    let (shard, shard_bytes) = match ring.pattern {
        RingPattern::AllGatherMatmul => {
            (graph.op(src).outputs[src_t].clone(), bytes / u64::from(p))
        }
        RingPattern::MatmulReduceScatter => (coll.outputs[0].clone(), bytes),
    };
    let step_op = |j: u32| Op {
        name: format!("{}/step{j}of{steps}", coll.name),
        kind: OpKind::Collective {
            kind: CollectiveKind::SendRecv,
            bytes: shard_bytes.max(1),
            group,
            link,
        },
        outputs: vec![shard.clone()],
        duration_ns: None,
    };
    let mut b = GraphBuilder::new(graph.name());
    let mut origin: Vec<Origin> = Vec::new();
    // The new op standing for each original op's result.
    let mut result = vec![OpId(usize::MAX); graph.len()];
    let mut chunks: Vec<OpId> = Vec::new();
    let mut step_ids: Vec<OpId> = Vec::new();
    let gathered_elsewhere = graph.successors(c).iter().any(|&s| s != m);
    for o in graph.ids() {
        let map = |(q, t): (OpId, usize)| (result[q.0], t);
        if o == m {
            // The GEMM's chunks: chunk j reads the other inputs whole and its shard.
            for j in 0..p {
                let mut ch = chunk(gemm, j);
                ch.name = format!("{}/chunk{j}of{p}", gemm.name);
                let mut ins: Vec<(OpId, usize)> = graph
                    .inputs(m)
                    .into_iter()
                    .filter(|&(q, _)| q != c)
                    .map(map)
                    .collect();
                if ring.pattern == RingPattern::AllGatherMatmul {
                    ins.push(if j == 0 {
                        (result[src.0], src_t)
                    } else {
                        (step_ids[j as usize - 1], 0)
                    });
                }
                ins.sort_unstable();
                ins.dedup();
                chunks.push(b.try_add(ch, &ins)?);
                origin.push(Origin::Chunk {
                    op: m,
                    index: j,
                    n: p,
                });
            }
            let ins: Vec<(OpId, usize)> = chunks.iter().map(|&x| (x, 0)).collect();
            result[m.0] = b.try_add(
                view(format!("{}/join", gemm.name), gemm.outputs.clone()),
                &ins,
            )?;
            origin.push(Origin::Join(m));
            continue;
        }
        if o == c {
            match ring.pattern {
                RingPattern::AllGatherMatmul => {
                    for j in 0..steps {
                        let input = if j == 0 {
                            (result[src.0], src_t)
                        } else {
                            (step_ids[j as usize - 1], 0)
                        };
                        step_ids.push(b.try_add(step_op(j + 1), &[input])?);
                        origin.push(Origin::Step {
                            op: c,
                            index: j,
                            n: steps,
                        });
                    }
                    if gathered_elsewhere || graph.successors(c).is_empty() {
                        let mut ins = vec![(result[src.0], src_t)];
                        ins.extend(step_ids.iter().map(|&x| (x, 0)));
                        result[c.0] = b.try_add(
                            view(format!("{}/join", coll.name), coll.outputs.clone()),
                            &ins,
                        )?;
                        origin.push(Origin::Join(c));
                    }
                }
                RingPattern::MatmulReduceScatter => {
                    let elements = shard.elements();
                    let mut carry = chunks[0];
                    for j in 0..steps {
                        let step = b.try_add(step_op(j + 1), &[(carry, 0)])?;
                        origin.push(Origin::Step {
                            op: c,
                            index: j,
                            n: steps,
                        });
                        let acc = Op {
                            name: format!("{}/acc{}of{steps}", coll.name, j + 1),
                            kind: OpKind::Compute {
                                class: ComputeClass::Elementwise,
                                flops: elements,
                                bytes: shard.bytes().saturating_mul(3),
                                gemm: None,
                            },
                            outputs: coll.outputs.clone(),
                            duration_ns: None,
                        };
                        let mut ins = vec![(chunks[j as usize + 1], 0), (step, 0)];
                        ins.sort_unstable();
                        carry = b.try_add(acc, &ins)?;
                        origin.push(Origin::Accumulate {
                            op: c,
                            index: j,
                            n: steps,
                        });
                    }
                    result[c.0] = carry;
                }
            }
            continue;
        }
        let ins: Vec<(OpId, usize)> = graph.inputs(o).into_iter().map(map).collect();
        result[o.0] = b.try_add(graph.op(o).clone(), &ins)?;
        origin.push(Origin::Copy(o));
    }
    let r = Rewritten {
        graph: b.finish(),
        origin,
    };
    check(graph, ring, &r)?;
    Ok(r)
}

/// How an original op is covered in a rewritten graph.
#[derive(Clone, Debug, Default)]
struct Cover {
    copy: Option<OpId>,
    chunks: Vec<Option<OpId>>,
    steps: Vec<Option<OpId>>,
    accumulates: Vec<Option<OpId>>,
    join: Option<OpId>,
}

/// Puts `x` at `index` of `slots` (sized `n` on first use); errors on a repeat or a mismatch.
fn place(
    slots: &mut Vec<Option<OpId>>,
    index: u32,
    n: u32,
    x: OpId,
    what: &str,
) -> Result<(), String> {
    if index >= n {
        return Err(format!("#{} claims to be {what} {index} of {n}", x.0));
    }
    if slots.is_empty() {
        *slots = vec![None; n as usize];
    } else if slots.len() != n as usize {
        return Err(format!(
            "#{} counts {n} {what}s, an earlier one {}",
            x.0,
            slots.len()
        ));
    }
    match slots[index as usize] {
        Some(y) => Err(format!("{what} {index} twice: #{} and #{}", y.0, x.0)),
        None => {
            slots[index as usize] = Some(x);
            Ok(())
        }
    }
}

/// Checks that `rewritten` is `ring` applied to `original`; each failure is a
/// [`DecompError::CheckFailed`] naming the ops:
///
/// - (a) one origin per new op, naming an op of `original`;
/// - (b) every edge goes forward in program order (a DAG);
/// - (c) coverage: every op but the two is copied exactly once and nothing else; the GEMM has
///   chunks `0..P` and one join, no copy; the collective has steps `0..P-1`, no copy and no
///   chunk; an all-gather has no accumulate and at most one join, a reduce-scatter
///   accumulates `0..P-1` and no join;
/// - (d) work: copies equal their originals; the chunks are GEMMs with the original's `b`,
///   `n` and `k`, rows adding up to its `m`, flops to its flops (give or take `P`); each step
///   is a send-recv on the collective's group and link of one shard (the all-gather's bytes
///   over `P`, the reduce-scatter's bytes), outputs the shard; each accumulate an element-wise
///   op with the reduce-scatter's outputs;
/// - (e) dependencies, each by a direct edge: an original edge between copied ops; an edge
///   from the GEMM or the collective to a copied op from its result (the GEMM's join; the
///   all-gather's join, which must then exist; the reduce-scatter's last accumulate); the
///   GEMM's other inputs into every chunk; the all-gather's input into its first step, its
///   chunk 0 and its join; step `j` into step `j + 1` (all-gather) and into chunk `j + 1`;
///   for a reduce-scatter chunk 0 into step 0, step `j` and chunk `j + 1` into accumulate `j`,
///   accumulate `j` into step `j + 1`; a join reads every chunk (the all-gather's: its input
///   and every step).
pub fn check(original: &Graph, ring: &Ring, rewritten: &Rewritten) -> Result<(), DecompError> {
    check_inner(original, ring, rewritten).map_err(|reason| DecompError::CheckFailed { reason })
}

fn check_inner(original: &Graph, ring: &Ring, rw: &Rewritten) -> Result<(), String> {
    let g = &rw.graph;
    let (c, m, p) = (ring.collective, ring.gemm, ring.ranks);
    let name = |x: OpId| format!("`{}` (#{})", g.op(x).name, x.0);
    let old = |o: OpId| format!("`{}` (#{})", original.op(o).name, o.0);
    if c.0 >= original.len() || m.0 >= original.len() || c == m || p < 2 {
        return Err(format!(
            "the ring names ops #{} and #{} of {} ranks",
            c.0, m.0, p
        ));
    }
    // (a), (c): origins and coverage.
    if rw.origin.len() != g.len() {
        return Err(format!("{} origins for {} ops", rw.origin.len(), g.len()));
    }
    let mut cover = vec![Cover::default(); original.len()];
    for x in g.ids() {
        let o = rw.origin[x.0].op();
        if o.0 >= original.len() {
            return Err(format!("{} comes from op #{}, out of range", name(x), o.0));
        }
        let cv = &mut cover[o.0];
        let ring_op = o == c || o == m;
        match rw.origin[x.0] {
            Origin::Copy(_) if !ring_op => {
                if cv.copy.replace(x).is_some() {
                    return Err(format!("{} is copied twice", old(o)));
                }
            }
            Origin::Chunk { index, n, .. } if o == m && n == p => {
                place(&mut cv.chunks, index, n, x, "chunk")?
            }
            Origin::Step { index, n, .. } if o == c && n == p - 1 => {
                place(&mut cv.steps, index, n, x, "step")?
            }
            Origin::Accumulate { index, n, .. }
                if o == c && n == p - 1 && ring.pattern == RingPattern::MatmulReduceScatter =>
            {
                place(&mut cv.accumulates, index, n, x, "accumulate")?
            }
            Origin::Join(_) if o == m || ring.pattern == RingPattern::AllGatherMatmul => {
                if cv.join.replace(x).is_some() {
                    return Err(format!("{} has two joins", old(o)));
                }
            }
            other => {
                return Err(format!(
                    "{} has an origin {other:?} this ring does not make",
                    name(x)
                ))
            }
        }
    }
    for o in original.ids() {
        let cv = &cover[o.0];
        let complete =
            |v: &[Option<OpId>], n: u32| v.len() == n as usize && v.iter().all(Option::is_some);
        let ok = if o == m {
            complete(&cv.chunks, p) && cv.join.is_some()
        } else if o == c {
            complete(&cv.steps, p - 1)
                && (ring.pattern == RingPattern::AllGatherMatmul
                    || complete(&cv.accumulates, p - 1))
        } else {
            cv.copy.is_some()
        };
        if !ok {
            return Err(format!("{} is not covered completely", old(o)));
        }
    }
    let at = |v: &[Option<OpId>], i: usize| v[i].expect("complete");
    // (b): edges go forward.
    let ins: Vec<Vec<(OpId, usize)>> = g.ids().map(|x| g.inputs(x)).collect();
    for x in g.ids() {
        if let Some(&(q, _)) = ins[x.0].iter().find(|(q, _)| *q >= x) {
            return Err(format!("edge {} -> {} goes backward", name(q), name(x)));
        }
    }
    let edge = |from: OpId, to: OpId, tensor: Option<usize>| -> Result<(), String> {
        let found = ins[to.0]
            .iter()
            .any(|&(q, t)| q == from && tensor.is_none_or(|w| w == t));
        if found {
            Ok(())
        } else {
            Err(format!("no edge {} -> {}", name(from), name(to)))
        }
    };
    // (d): work.
    for o in original.ids() {
        if let Some(x) = cover[o.0].copy {
            if let Some(what) = copy_difference(original.op(o), g.op(x)) {
                return Err(format!(
                    "the copy {} of {} differs in its {what}",
                    name(x),
                    old(o)
                ));
            }
        }
    }
    let whole = gemm_of(original.op(m)).ok_or_else(|| format!("{} is not a GEMM", old(m)))?;
    let (mut rows, mut flops) = (0u64, 0u128);
    for &x in cover[m.0].chunks.iter().flatten() {
        let part =
            gemm_of(g.op(x)).ok_or_else(|| format!("the chunk {} is not a GEMM", name(x)))?;
        if (part.b, part.n, part.k) != (whole.b, whole.n, whole.k) {
            return Err(format!(
                "the chunk {} is not a row slice of {}",
                name(x),
                old(m)
            ));
        }
        rows += part.m;
        if let OpKind::Compute { flops: f, .. } = g.op(x).kind {
            flops += u128::from(f);
        }
    }
    let OpKind::Compute { flops: total, .. } = original.op(m).kind else {
        unreachable!("a GEMM")
    };
    if rows != whole.m
        || flops + u128::from(p) < u128::from(total)
        || flops > u128::from(total) + u128::from(p)
    {
        return Err(format!(
            "the chunks of {} do {rows} rows and {flops} flops, not {} and {total}",
            old(m),
            whole.m
        ));
    }
    let (kind, bytes, group) =
        collective_of(original.op(c)).ok_or_else(|| format!("{} is not a collective", old(c)))?;
    let link = original.op(c).link();
    let (expected_kind, shard_bytes) = match ring.pattern {
        RingPattern::AllGatherMatmul => (CollectiveKind::AllGather, (bytes / u64::from(p)).max(1)),
        RingPattern::MatmulReduceScatter => (CollectiveKind::ReduceScatter, bytes.max(1)),
    };
    if kind != expected_kind {
        return Err(format!(
            "{} is a {}, not a {}",
            old(c),
            kind.as_str(),
            expected_kind.as_str()
        ));
    }
    for &x in cover[c.0].steps.iter().flatten() {
        let ok = g.op(x).link() == link
            && matches!(g.op(x).kind, OpKind::Collective { kind: CollectiveKind::SendRecv, bytes: b, group: gr, .. } if b == shard_bytes && gr == group);
        if !ok {
            return Err(format!(
                "the step {} is not a send-recv of {shard_bytes} bytes over {}'s group and link",
                name(x),
                old(c)
            ));
        }
    }
    for &x in cover[c.0].accumulates.iter().flatten() {
        let ok = matches!(
            g.op(x).kind,
            OpKind::Compute {
                class: ComputeClass::Elementwise,
                ..
            }
        ) && g.op(x).outputs == original.op(c).outputs;
        if !ok {
            return Err(format!(
                "the accumulate {} is not element-wise with {}'s outputs",
                name(x),
                old(c)
            ));
        }
    }
    // (e): dependencies.
    let cm = &cover[m.0];
    let cc = &cover[c.0];
    let gemm_join = cm.join.expect("complete");
    let result = |o: OpId| -> Result<OpId, String> {
        if o == m {
            Ok(gemm_join)
        } else if o == c {
            match ring.pattern {
                RingPattern::AllGatherMatmul => cc
                    .join
                    .ok_or_else(|| format!("{} is read but has no join", old(c))),
                RingPattern::MatmulReduceScatter => Ok(at(&cc.accumulates, p as usize - 2)),
            }
        } else {
            Ok(cover[o.0].copy.expect("complete"))
        }
    };
    for o in original.ids() {
        for (q, t) in original.inputs(o) {
            match (o == m || o == c, q == m || q == c) {
                (false, _) => edge(result(q)?, result(o)?, Some(t))?,
                (true, true) => {} // the ring's own edge, checked below
                (true, false) if o == m => {
                    for &x in cm.chunks.iter().flatten() {
                        edge(result(q)?, x, Some(t))?;
                    }
                }
                (true, false) => {
                    // The all-gather's input: the first step, chunk 0 and the join read it.
                    let src = result(q)?;
                    edge(src, at(&cc.steps, 0), Some(t))?;
                    edge(src, at(&cm.chunks, 0), Some(t))?;
                    if let Some(j) = cc.join {
                        edge(src, j, Some(t))?;
                    }
                }
            }
        }
    }
    for i in 0..p as usize {
        edge(at(&cm.chunks, i), gemm_join, None)?;
    }
    match ring.pattern {
        RingPattern::AllGatherMatmul => {
            for j in 0..p as usize - 1 {
                if j + 1 < p as usize - 1 {
                    edge(at(&cc.steps, j), at(&cc.steps, j + 1), None)?;
                }
                edge(at(&cc.steps, j), at(&cm.chunks, j + 1), None)?;
                if let Some(join) = cc.join {
                    edge(at(&cc.steps, j), join, None)?;
                }
            }
        }
        RingPattern::MatmulReduceScatter => {
            edge(at(&cm.chunks, 0), at(&cc.steps, 0), None)?;
            for j in 0..p as usize - 1 {
                edge(at(&cc.steps, j), at(&cc.accumulates, j), None)?;
                edge(at(&cm.chunks, j + 1), at(&cc.accumulates, j), None)?;
                if j + 1 < p as usize - 1 {
                    edge(at(&cc.accumulates, j), at(&cc.steps, j + 1), None)?;
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use concerto_graph::{DType, GemmShape, LinkClass};

    use super::*;
    use crate::rewrite::rewrite as rewrite_any;
    use crate::rules::chunk as rules_chunk;

    fn act(shape: &[u64]) -> Tensor {
        Tensor::new(shape.to_vec(), DType::Bf16)
    }

    fn rows(op: &Op, j: u32, n: u32) -> Op {
        rules_chunk(op, Axis::Rows, n, j, None)
    }

    /// `ln` `[1, 16, 32]` -> all-gather over 4 -> `[1, 64, 32]` -> `qkv` (64 x 32 -> 48) ->
    /// `out`; with `wgrad`, a GEMM contracting over the tokens also reads the gathered tensor.
    fn gather(wgrad: bool) -> Graph {
        let mut b = GraphBuilder::new("ag");
        let ln = b.add(
            Op::compute("ln", ComputeClass::Norm, 1024, 2048).with_output(act(&[1, 16, 32])),
            &[],
        );
        let w = b.add(
            Op::compute("w", ComputeClass::Other, 0, 64).with_output(act(&[32, 48])),
            &[],
        );
        let ag = b.add(
            Op::collective(
                "ag",
                CollectiveKind::AllGather,
                64 * 32 * 2,
                4,
                LinkClass::IntraNode,
            )
            .with_output(act(&[1, 64, 32])),
            &[ln],
        );
        let g = GemmShape {
            b: 1,
            m: 64,
            n: 48,
            k: 32,
        };
        let qkv = b.add(Op::gemm("qkv", g, DType::Bf16), &[ag, w]);
        if wgrad {
            let wg = GemmShape {
                b: 1,
                m: 32,
                n: 48,
                k: 64,
            };
            b.add(Op::gemm("wgrad", wg, DType::Bf16), &[ag, qkv]);
        }
        b.add(
            Op::compute("out", ComputeClass::Elementwise, 64 * 48, 64 * 48 * 4),
            &[qkv],
        );
        b.finish()
    }

    /// `x` -> `proj` (64 x 48 -> 32, output `[1, 64, 32]`) -> reduce-scatter over 4 ->
    /// `[1, 16, 32]` -> `residual`.
    fn scatter() -> Graph {
        let mut b = GraphBuilder::new("rs");
        let x = b.add(
            Op::compute("x", ComputeClass::Elementwise, 64, 64).with_output(act(&[1, 64, 48])),
            &[],
        );
        let g = GemmShape {
            b: 1,
            m: 64,
            n: 32,
            k: 48,
        };
        let proj = b.add(Op::gemm("proj", g, DType::Bf16), &[x]);
        let rs = b.add(
            Op::collective(
                "rs",
                CollectiveKind::ReduceScatter,
                16 * 32 * 2,
                4,
                LinkClass::IntraNode,
            )
            .with_output(act(&[1, 16, 32])),
            &[proj],
        );
        b.add(
            Op::compute("residual", ComputeClass::Elementwise, 512, 3072)
                .with_output(act(&[1, 16, 32])),
            &[rs, x],
        );
        b.finish()
    }

    fn id(g: &Graph, name: &str) -> OpId {
        g.find(name).unwrap_or_else(|| panic!("no {name}"))
    }

    #[test]
    fn an_all_gather_becomes_a_ring_of_permutes_and_row_chunks() {
        for wgrad in [false, true] {
            let g = gather(wgrad);
            let ring = find(&g, id(&g, "ag")).expect("a loop");
            assert_eq!(ring.pattern, RingPattern::AllGatherMatmul);
            assert_eq!((ring.gemm, ring.ranks), (id(&g, "qkv"), 4));
            let r = rewrite(&g, &ring, &|op, j| rows(op, j, 4)).unwrap();
            let h = &r.graph;
            // 3 steps of one 512-byte shard each, 4 chunks of 16 rows, the GEMM's join, and
            // the gathered tensor's join only when the weight gradient reads it.
            for j in 1..=3 {
                let s = id(h, &format!("ag/step{j}of3"));
                let OpKind::Collective { kind, bytes, .. } = h.op(s).kind else {
                    panic!()
                };
                assert_eq!((kind, bytes), (CollectiveKind::SendRecv, 1024));
                let c = id(h, &format!("qkv/chunk{j}of4"));
                assert!(h.predecessors(c).contains(&s), "chunk {j} reads step {j}");
            }
            let c0 = id(h, "qkv/chunk0of4");
            assert!(
                h.predecessors(c0).contains(&id(h, "ln")),
                "chunk 0 reads the local shard"
            );
            assert!(!h.predecessors(c0).iter().any(|&p| h.op(p).is_collective()));
            assert_eq!(gemm_of(h.op(c0)).unwrap().m, 16);
            assert_eq!(h.find("ag/join").is_some(), wgrad);
            if wgrad {
                assert!(h.predecessors(id(h, "wgrad")).contains(&id(h, "ag/join")));
            }
            assert!(h.predecessors(id(h, "out")).contains(&id(h, "qkv/join")));
            assert_eq!(h.find("ag"), None);
            // The same through the context dispatch.
            let again = rewrite_any(&g, &ring.context(), &|op, j| rows(op, j, 4)).unwrap();
            assert_eq!(again.graph.len(), h.len());
        }
    }

    #[test]
    fn a_reduce_scatter_becomes_a_ring_of_permutes_and_accumulates() {
        let g = scatter();
        let ring = find(&g, id(&g, "rs")).expect("a loop");
        assert_eq!(ring.pattern, RingPattern::MatmulReduceScatter);
        assert_eq!(ring.gemm, id(&g, "proj"));
        let r = rewrite(&g, &ring, &|op, j| rows(op, j, 4)).unwrap();
        let h = &r.graph;
        assert!(h
            .predecessors(id(h, "rs/step1of3"))
            .contains(&id(h, "proj/chunk0of4")));
        for j in 1..=3 {
            let acc = id(h, &format!("rs/acc{j}of3"));
            let preds = h.predecessors(acc);
            assert!(preds.contains(&id(h, &format!("rs/step{j}of3"))));
            assert!(preds.contains(&id(h, &format!("proj/chunk{j}of4"))));
            assert_eq!(h.op(acc).outputs, g.op(id(&g, "rs")).outputs);
        }
        assert!(h
            .predecessors(id(h, "rs/step2of3"))
            .contains(&id(h, "rs/acc1of3")));
        assert!(h
            .predecessors(id(h, "residual"))
            .contains(&id(h, "rs/acc3of3")));
        // The GEMM's join exists (nothing else reads it here, but it stands for the output).
        assert!(h.find("proj/join").is_some());
    }

    /// A GEMM of `m x k -> n`.
    fn mm(m: u64, n: u64, k: u64) -> Op {
        Op::gemm("mm", GemmShape { b: 1, m, n, k }, DType::Bf16)
    }

    /// `x` (output `input`) -> a `kind` collective over 4 ranks (output `output`) -> `next`
    /// (omitted when `None`).
    fn around(input: &[u64], kind: CollectiveKind, output: &[u64], next: Option<Op>) -> Graph {
        let mut b = GraphBuilder::new("around");
        let x = b.add(
            Op::compute("x", ComputeClass::Norm, 1, 1).with_output(act(input)),
            &[],
        );
        let out = act(output);
        let c = b.add(
            Op::collective("c", kind, out.bytes(), 4, LinkClass::IntraNode).with_output(out),
            &[x],
        );
        if let Some(op) = next {
            b.add(op, &[c]);
        }
        b.finish()
    }

    #[test]
    fn shapes_that_do_not_loop_are_not_found() {
        let ag = CollectiveKind::AllGather;
        let c = |g: &Graph| find(g, id(g, "c"));
        // The loop itself, for contrast.
        assert!(c(&around(
            &[1, 16, 32],
            ag,
            &[1, 64, 32],
            Some(mm(64, 16, 32))
        ))
        .is_some());
        // Gathered along the features: the GEMM would contract over the gathered dimension.
        assert_eq!(
            c(&around(&[1, 64, 8], ag, &[1, 64, 32], Some(mm(64, 16, 32)))),
            None
        );
        // A GEMM reading the gathered tensor as its right operand (k is not the features).
        assert_eq!(
            c(&around(&[1, 16, 32], ag, &[1, 64, 32], Some(mm(32, 8, 64)))),
            None
        );
        // No GEMM reads it.
        assert_eq!(c(&around(&[1, 16, 32], ag, &[1, 64, 32], None)), None);
        // A reduce-scatter of something that is not a GEMM; and a compute op.
        let g = around(
            &[1, 64, 32],
            CollectiveKind::ReduceScatter,
            &[1, 16, 32],
            None,
        );
        assert_eq!(c(&g), None);
        assert_eq!(find(&g, id(&g, "x")), None);
        // A ring that does not match the graph is refused.
        let g = scatter();
        let mut ring = find(&g, id(&g, "rs")).unwrap();
        ring.ranks = 8;
        let e = rewrite(&g, &ring, &|op, j| rows(op, j, 8)).unwrap_err();
        assert!(matches!(e, DecompError::InvalidContext { .. }), "{e}");
    }

    /// `rw` rebuilt with `edit` applied to each op and its inputs.
    fn rebuilt(rw: &Rewritten, edit: impl Fn(OpId, &mut Op, &mut Vec<(OpId, usize)>)) -> Rewritten {
        let mut b = GraphBuilder::new("edited");
        for x in rw.graph.ids() {
            let mut op = rw.graph.op(x).clone();
            let mut ins = rw.graph.inputs(x);
            edit(x, &mut op, &mut ins);
            b.try_add(op, &ins).unwrap();
        }
        Rewritten {
            graph: b.finish(),
            origin: rw.origin.clone(),
        }
    }

    #[test]
    fn the_check_catches_broken_rings() {
        let g = gather(true);
        let ring = find(&g, id(&g, "ag")).unwrap();
        let good = rewrite(&g, &ring, &|op, j| rows(op, j, 4)).unwrap();
        check(&g, &ring, &good).unwrap();
        let step2 = id(&good.graph, "ag/step2of3");
        let chunk2 = id(&good.graph, "qkv/chunk2of4");
        let fails = |rw: &Rewritten, what: &str| {
            let e = check(&g, &ring, rw).unwrap_err().to_string();
            assert!(e.contains(what), "expected `{what}` in: {e}");
        };
        // A chunk that no longer waits for its shard.
        fails(
            &rebuilt(&good, |x, _, ins| {
                if x == chunk2 {
                    ins.retain(|&(p, _)| p != step2);
                }
            }),
            "no edge",
        );
        // A step that moves the whole tensor instead of one shard.
        fails(
            &rebuilt(&good, |x, op, _| {
                if x == step2 {
                    if let OpKind::Collective { bytes, .. } = &mut op.kind {
                        *bytes *= 4;
                    }
                }
            }),
            "send-recv of 1024 bytes",
        );
        // A chunk with too many rows.
        fails(
            &rebuilt(&good, |x, op, _| {
                if x == chunk2 {
                    *op = rows(g.op(ring.gemm), 0, 2);
                    op.name = "qkv/chunk2of4".into();
                }
            }),
            "rows",
        );
        // A copy that changed.
        let out = id(&good.graph, "out");
        fails(
            &rebuilt(&good, |x, op, _| {
                if x == out {
                    op.duration_ns = Some(7);
                }
            }),
            "differs",
        );
        // A missing step (its origin claims another index twice).
        let mut twice = good.clone();
        let k = twice
            .origin
            .iter()
            .position(|o| matches!(o, Origin::Step { index: 1, .. }))
            .unwrap();
        twice.origin[k] = Origin::Step {
            op: ring.collective,
            index: 0,
            n: 3,
        };
        fails(&twice, "twice");
        // An origin a ring never makes.
        let mut alien = good.clone();
        alien.origin[k] = Origin::Chunk {
            op: ring.collective,
            index: 0,
            n: 3,
        };
        fails(&alien, "does not make");
    }
}
