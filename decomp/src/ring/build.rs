//! Building the rewritten graph of a collective-matmul ring: steps, GEMM chunks, accumulates
//! and joins.

use concerto_graph::{
    CollectiveKind, ComputeClass, Graph, GraphBuilder, LinkClass, Op, OpId, OpKind, Tensor,
};

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
    let mut rb = RingBuild::new(graph, ring);
    for o in graph.ids() {
        if o == rb.m {
            rb.add_gemm(chunk)?;
        } else if o == rb.c {
            match ring.pattern {
                RingPattern::AllGatherMatmul => rb.add_all_gather()?,
                RingPattern::MatmulReduceScatter => rb.add_reduce_scatter()?,
            }
        } else {
            let ins: Vec<(OpId, usize)> = graph.inputs(o).into_iter().map(|e| rb.map(e)).collect();
            rb.result[o.0] = rb.b.try_add(graph.op(o).clone(), &ins)?;
            rb.origin.push(Origin::Copy(o));
        }
    }
    let r = Rewritten {
        graph: rb.b.finish(),
        origin: rb.origin,
    };
    check(graph, ring, &r)?;
    Ok(r)
}

/// The rewrite of one ring under construction, in program order of the original ops.
struct RingBuild<'a> {
    /// The original graph.
    graph: &'a Graph,
    /// The ring.
    ring: &'a Ring,
    /// The collective.
    c: OpId,
    /// The GEMM.
    m: OpId,
    /// The ranks.
    p: u32,
    /// The ring's steps, `p - 1`.
    steps: u32,
    /// The collective's input and its output index.
    src: (OpId, usize),
    /// The tensor of one shard.
    shard: Tensor,
    /// The bytes of one step.
    shard_bytes: u64,
    /// The collective's group size.
    group: u32,
    /// The collective's link class.
    link: LinkClass,
    /// The rewritten graph so far.
    b: GraphBuilder,
    /// The origin of each new op so far.
    origin: Vec<Origin>,
    /// The new op standing for each original op's result.
    result: Vec<OpId>,
    /// The GEMM's chunks.
    chunks: Vec<OpId>,
    /// The ring's steps (all-gather).
    step_ids: Vec<OpId>,
}

impl<'a> RingBuild<'a> {
    /// An empty rewrite of `ring` on `graph`.
    fn new(graph: &'a Graph, ring: &'a Ring) -> Self {
        let (c, m, p) = (ring.collective, ring.gemm, ring.ranks);
        let coll = graph.op(c);
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
        let mut b = GraphBuilder::new(graph.name());
        b.set_resident_bytes(graph.resident_bytes());
        Self {
            graph,
            ring,
            c,
            m,
            p,
            steps: p - 1,
            src: (src, src_t),
            shard,
            shard_bytes,
            group,
            link,
            b,
            origin: Vec::new(),
            result: vec![OpId(usize::MAX); graph.len()],
            chunks: Vec::new(),
            step_ids: Vec::new(),
        }
    }

    /// An original input `(q, t)` read through its result.
    fn map(&self, (q, t): (OpId, usize)) -> (OpId, usize) {
        (self.result[q.0], t)
    }

    /// The new op reading the collective's input (`(src, t)` through its result).
    fn source(&self) -> (OpId, usize) {
        (self.result[self.src.0 .0], self.src.1)
    }

    /// Ring step `j` (from 1): a send-recv of one shard.
    fn step_op(&self, j: u32) -> Op {
        Op {
            name: format!("{}/step{j}of{}", self.graph.op(self.c).name, self.steps),
            kind: OpKind::Collective {
                kind: CollectiveKind::SendRecv,
                bytes: self.shard_bytes.max(1),
                group: self.group,
                link: self.link,
            },
            outputs: vec![self.shard.clone()],
            duration_ns: None,
            operand_dtype: None,
            live_out: false,
            release_ns: 0,
            lane: 0,
        }
    }

    /// The GEMM's chunks (chunk `j` reads the other inputs whole and its shard) and their
    /// join, its result.
    fn add_gemm(&mut self, chunk: &dyn Fn(&Op, u32) -> Op) -> Result<(), DecompError> {
        let (graph, c, m, p) = (self.graph, self.c, self.m, self.p);
        let gemm = graph.op(m);
        for j in 0..p {
            let mut ch = chunk(gemm, j);
            ch.name = format!("{}/chunk{j}of{p}", gemm.name);
            ch.live_out = false;
            let mut ins: Vec<(OpId, usize)> = graph
                .inputs(m)
                .into_iter()
                .filter(|&(q, _)| q != c)
                .map(|e| self.map(e))
                .collect();
            if self.ring.pattern == RingPattern::AllGatherMatmul {
                ins.push(if j == 0 {
                    self.source()
                } else {
                    (self.step_ids[j as usize - 1], 0)
                });
            }
            ins.sort_unstable();
            ins.dedup();
            self.chunks.push(self.b.try_add(ch, &ins)?);
            self.origin.push(Origin::Chunk {
                op: m,
                index: j,
                n: p,
            });
        }
        let ins: Vec<(OpId, usize)> = self.chunks.iter().map(|&x| (x, 0)).collect();
        self.result[m.0] = self.b.try_add(
            view(
                format!("{}/join", gemm.name),
                gemm.outputs.clone(),
                gemm.live_out,
            ),
            &ins,
        )?;
        self.origin.push(Origin::Join(m));
        Ok(())
    }

    /// The all-gather's steps, each reading the previous one (the first the input), and its
    /// join when something else reads the gathered tensor or it is an output.
    fn add_all_gather(&mut self) -> Result<(), DecompError> {
        let (graph, c, m, steps) = (self.graph, self.c, self.m, self.steps);
        let coll = graph.op(c);
        let gathered_elsewhere = graph.successors(c).iter().any(|&s| s != m);
        for j in 0..steps {
            let input = if j == 0 {
                self.source()
            } else {
                (self.step_ids[j as usize - 1], 0)
            };
            let step = self.b.try_add(self.step_op(j + 1), &[input])?;
            self.step_ids.push(step);
            self.origin.push(Origin::Step {
                op: c,
                index: j,
                n: steps,
            });
        }
        if gathered_elsewhere || graph.successors(c).is_empty() || coll.live_out {
            let mut ins = vec![self.source()];
            ins.extend(self.step_ids.iter().map(|&x| (x, 0)));
            self.result[c.0] = self.b.try_add(
                view(
                    format!("{}/join", coll.name),
                    coll.outputs.clone(),
                    coll.live_out,
                ),
                &ins,
            )?;
            self.origin.push(Origin::Join(c));
        }
        Ok(())
    }

    /// The reduce-scatter's steps and accumulates: step `j` sends the partial sum, accumulate
    /// `j` adds chunk `j + 1`; the last accumulate is the result.
    fn add_reduce_scatter(&mut self) -> Result<(), DecompError> {
        let (c, steps) = (self.c, self.steps);
        let coll = self.graph.op(c);
        let elements = self.shard.elements();
        let mut carry = self.chunks[0];
        for j in 0..steps {
            let step = self.b.try_add(self.step_op(j + 1), &[(carry, 0)])?;
            self.origin.push(Origin::Step {
                op: c,
                index: j,
                n: steps,
            });
            let acc = Op {
                name: format!("{}/acc{}of{steps}", coll.name, j + 1),
                kind: OpKind::Compute {
                    class: ComputeClass::Elementwise,
                    flops: elements,
                    bytes: self.shard.bytes().saturating_mul(3),
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
            let mut ins = vec![(self.chunks[j as usize + 1], 0), (step, 0)];
            ins.sort_unstable();
            carry = self.b.try_add(acc, &ins)?;
            self.origin.push(Origin::Accumulate {
                op: c,
                index: j,
                n: steps,
            });
        }
        self.result[c.0] = carry;
        Ok(())
    }
}
