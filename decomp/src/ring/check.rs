//! The independent check of a collective-matmul rewrite, written apart from
//! [`super::rewrite`].

use concerto_graph::{CollectiveKind, ComputeClass, Graph, OpId, OpKind};

use super::{collective_of, gemm_of, Ring, RingPattern};
use crate::error::DecompError;
use crate::rewritten::{
    copy_difference, live_out_difference, part_live_out, resident_difference, Origin, Rewritten,
};

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
///   and every step);
/// - (f) memory ([`concerto_graph::memory`]): the original's resident bytes; the op standing
///   for each original's result is marked live_out exactly when the original is (the GEMM's
///   join; the all-gather's join, which must exist when the all-gather is a step output; the
///   reduce-scatter's last accumulate; copies under (d)); no chunk, step or other accumulate
///   is marked live_out.
pub fn check(original: &Graph, ring: &Ring, rewritten: &Rewritten) -> Result<(), DecompError> {
    check_inner(original, ring, rewritten).map_err(|reason| DecompError::CheckFailed { reason })
}

fn check_inner(original: &Graph, ring: &Ring, rw: &Rewritten) -> Result<(), String> {
    let ck = RingCheck::new(original, ring, rw)?;
    let cover = ck.cover()?;
    let ins = ck.forward_inputs()?;
    ck.copies(&cover)?;
    ck.gemm_chunks(&cover)?;
    ck.collective_parts(&cover)?;
    ck.dependencies(&cover, &ins)?;
    ck.memory(&cover)
}

/// The `(producer, tensor)` inputs of every op.
type Inputs = Vec<Vec<(OpId, usize)>>;

/// One check of a ring rewrite: the graphs and the ring's collective, GEMM and ranks.
struct RingCheck<'a> {
    /// The original graph.
    original: &'a Graph,
    /// The ring.
    ring: &'a Ring,
    /// The rewrite.
    rw: &'a Rewritten,
    /// The rewritten graph.
    g: &'a Graph,
    /// The collective.
    c: OpId,
    /// The GEMM.
    m: OpId,
    /// The ranks.
    p: u32,
}

impl<'a> RingCheck<'a> {
    /// The check of `rw` against `ring` on `original`; errors when the ring names ops out of
    /// range, one op twice, or fewer than 2 ranks.
    fn new(original: &'a Graph, ring: &'a Ring, rw: &'a Rewritten) -> Result<Self, String> {
        let (c, m, p) = (ring.collective, ring.gemm, ring.ranks);
        if c.0 >= original.len() || m.0 >= original.len() || c == m || p < 2 {
            return Err(format!(
                "the ring names ops #{} and #{} of {} ranks",
                c.0, m.0, p
            ));
        }
        Ok(Self {
            original,
            ring,
            rw,
            g: &rw.graph,
            c,
            m,
            p,
        })
    }

    /// An op of the rewritten graph in messages.
    fn name(&self, x: OpId) -> String {
        format!("`{}` (#{})", self.g.op(x).name, x.0)
    }

    /// An op of the original graph in messages.
    fn old(&self, o: OpId) -> String {
        format!("`{}` (#{})", self.original.op(o).name, o.0)
    }

    /// (a), (c): one origin per op naming an original op, and each original op covered
    /// completely by what the ring makes of it.
    fn cover(&self) -> Result<Vec<Cover>, String> {
        let (original, ring, rw, g) = (self.original, self.ring, self.rw, self.g);
        let (c, m, p) = (self.c, self.m, self.p);
        if rw.origin.len() != g.len() {
            return Err(format!("{} origins for {} ops", rw.origin.len(), g.len()));
        }
        let mut cover = vec![Cover::default(); original.len()];
        for x in g.ids() {
            let o = rw.origin[x.0].op();
            if o.0 >= original.len() {
                return Err(format!(
                    "{} comes from op #{}, out of range",
                    self.name(x),
                    o.0
                ));
            }
            let cv = &mut cover[o.0];
            let ring_op = o == c || o == m;
            match rw.origin[x.0] {
                Origin::Copy(_) if !ring_op => {
                    if cv.copy.replace(x).is_some() {
                        return Err(format!("{} is copied twice", self.old(o)));
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
                        return Err(format!("{} has two joins", self.old(o)));
                    }
                }
                other => {
                    return Err(format!(
                        "{} has an origin {other:?} this ring does not make",
                        self.name(x)
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
                return Err(format!("{} is not covered completely", self.old(o)));
            }
        }
        Ok(cover)
    }

    /// (b): every op's inputs, each from an earlier op.
    fn forward_inputs(&self) -> Result<Inputs, String> {
        let g = self.g;
        let ins: Inputs = g.ids().map(|x| g.inputs(x)).collect();
        for x in g.ids() {
            if let Some(&(q, _)) = ins[x.0].iter().find(|(q, _)| *q >= x) {
                return Err(format!(
                    "edge {} -> {} goes backward",
                    self.name(q),
                    self.name(x)
                ));
            }
        }
        Ok(ins)
    }

    /// (d), copies: each equals its original.
    fn copies(&self, cover: &[Cover]) -> Result<(), String> {
        for o in self.original.ids() {
            if let Some(x) = cover[o.0].copy {
                if let Some(what) = copy_difference(self.original.op(o), self.g.op(x)) {
                    return Err(format!(
                        "the copy {} of {} differs in its {what}",
                        self.name(x),
                        self.old(o)
                    ));
                }
            }
        }
        Ok(())
    }

    /// (d), the GEMM's chunks: row slices of it whose rows and flops add up to its own.
    fn gemm_chunks(&self, cover: &[Cover]) -> Result<(), String> {
        let (original, g, m, p) = (self.original, self.g, self.m, self.p);
        let whole =
            gemm_of(original.op(m)).ok_or_else(|| format!("{} is not a GEMM", self.old(m)))?;
        let (mut rows, mut flops) = (0u64, 0u128);
        for &x in cover[m.0].chunks.iter().flatten() {
            let part = gemm_of(g.op(x))
                .ok_or_else(|| format!("the chunk {} is not a GEMM", self.name(x)))?;
            if (part.b, part.n, part.k) != (whole.b, whole.n, whole.k) {
                return Err(format!(
                    "the chunk {} is not a row slice of {}",
                    self.name(x),
                    self.old(m)
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
                self.old(m),
                whole.m
            ));
        }
        Ok(())
    }

    /// (d), the collective's parts: the pattern's collective kind; send-recv steps of one
    /// shard on its group and link; element-wise accumulates with its outputs.
    fn collective_parts(&self, cover: &[Cover]) -> Result<(), String> {
        let (original, g, c, p) = (self.original, self.g, self.c, self.p);
        let (kind, bytes, group) = collective_of(original.op(c))
            .ok_or_else(|| format!("{} is not a collective", self.old(c)))?;
        let link = original.op(c).link();
        let (expected_kind, shard_bytes) = match self.ring.pattern {
            RingPattern::AllGatherMatmul => {
                (CollectiveKind::AllGather, (bytes / u64::from(p)).max(1))
            }
            RingPattern::MatmulReduceScatter => (CollectiveKind::ReduceScatter, bytes.max(1)),
        };
        if kind != expected_kind {
            return Err(format!(
                "{} is a {}, not a {}",
                self.old(c),
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
                    self.name(x),
                    self.old(c)
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
                    self.name(x),
                    self.old(c)
                ));
            }
        }
        Ok(())
    }

    /// (e): every dependency the ring must keep or make, each by a direct edge.
    fn dependencies(&self, cover: &[Cover], ins: &Inputs) -> Result<(), String> {
        let (original, ring, c, m, p) = (self.original, self.ring, self.c, self.m, self.p);
        let at = |v: &[Option<OpId>], i: usize| v[i].expect("complete");
        let edge = |from: OpId, to: OpId, tensor: Option<usize>| -> Result<(), String> {
            let found = ins[to.0]
                .iter()
                .any(|&(q, t)| q == from && tensor.is_none_or(|w| w == t));
            if found {
                Ok(())
            } else {
                Err(format!("no edge {} -> {}", self.name(from), self.name(to)))
            }
        };
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
                        .ok_or_else(|| format!("{} is read but has no join", self.old(c))),
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

    /// (f): the original's resident bytes, the live_out mark of each result, none on a part.
    fn memory(&self, cover: &[Cover]) -> Result<(), String> {
        let (original, g, c, m) = (self.original, self.g, self.c, self.m);
        if let Some(e) = resident_difference(original, g) {
            return Err(e);
        }
        let (cm, cc) = (&cover[m.0], &cover[c.0]);
        let gemm_join = cm.join.expect("complete");
        let last_acc = cc.accumulates.last().copied().flatten();
        let results = [
            (m, Some(gemm_join)),
            (
                c,
                match self.ring.pattern {
                    RingPattern::AllGatherMatmul => cc.join,
                    RingPattern::MatmulReduceScatter => last_acc,
                },
            ),
        ];
        for (o, r) in results {
            let want = original.op(o).live_out;
            match r {
                Some(x) => {
                    if let Some(e) = live_out_difference(want, g.op(x), &self.name(x), &self.old(o))
                    {
                        return Err(e);
                    }
                }
                None if want => {
                    return Err(format!(
                        "{} is an output of the step (live_out) and has no join",
                        self.old(o)
                    ))
                }
                None => {}
            }
        }
        let parts = cm
            .chunks
            .iter()
            .map(|&x| (x, m))
            .chain(cc.steps.iter().map(|&x| (x, c)))
            .chain(
                cc.accumulates
                    .iter()
                    .filter(|&&x| x != last_acc)
                    .map(|&x| (x, c)),
            );
        for (o_x, o) in parts {
            let x = o_x.expect("complete");
            if let Some(e) = part_live_out(g.op(x), &self.name(x), &self.old(o)) {
                return Err(e);
            }
        }
        Ok(())
    }
}
