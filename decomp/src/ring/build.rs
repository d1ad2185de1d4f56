//! Building the rewritten graph of a collective-matmul ring: steps, GEMM chunks, accumulates
//! and joins.

use concerto_graph::{CollectiveKind, ComputeClass, Graph, GraphBuilder, Op, OpId, OpKind, Tensor};

use super::{check, collective_of, find, Ring, RingPattern};
use crate::error::DecompError;
use crate::rewritten::{Origin, Rewritten};

/// A view op (no kernel, 1 ns) named `name` with `outputs`: a join of in-place chunks, which
/// stands for the whole result of an original op (`live_out`: the original's mark).
fn view(name: String, outputs: Vec<Tensor>, live_out: bool) -> Op {
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
        operand_dtype: None,
        live_out,
        release_ns: 0,
        lane: 0,
    }
}

/// Rewrites `ring` in `graph` (see the module docs): the GEMM's chunks come from `chunk(gemm,
/// j)` for `j` in `0..ranks` (names and step-output marks replaced), the steps and accumulates
/// are built here. Every other op is copied. The rewritten graph keeps the source's resident
/// bytes; the ops that stand for the two originals' results (the GEMM's join; the all-gather's
/// join, made whenever the all-gather is a step output; the reduce-scatter's last accumulate)
/// carry their [`Op::live_out`], chunks, steps and the other accumulates never do. The result
/// has passed [`check`].
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
        operand_dtype: None,
        live_out: false,
        release_ns: 0,
        lane: 0,
    };
    let mut b = GraphBuilder::new(graph.name());
    b.set_resident_bytes(graph.resident_bytes());
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
                ch.live_out = false;
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
                view(
                    format!("{}/join", gemm.name),
                    gemm.outputs.clone(),
                    gemm.live_out,
                ),
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
                    if gathered_elsewhere || graph.successors(c).is_empty() || coll.live_out {
                        let mut ins = vec![(result[src.0], src_t)];
                        ins.extend(step_ids.iter().map(|&x| (x, 0)));
                        result[c.0] = b.try_add(
                            view(
                                format!("{}/join", coll.name),
                                coll.outputs.clone(),
                                coll.live_out,
                            ),
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
                            operand_dtype: None,
                            // The last accumulate is this rank's reduced shard: the result.
                            live_out: coll.live_out && j + 1 == steps,
                            release_ns: 0,
                            lane: 0,
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
