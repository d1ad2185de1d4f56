//! The graph-invariant check of a loop decomposition, written apart from [`super::rewrite`]'s
//! code paths.

use concerto_graph::{Graph, Op, OpId, OpKind};

use crate::error::DecompError;
use crate::rewritten::{
    copy_difference, describe, forward_inputs, live_out_difference, part_live_out,
    resident_difference, Origin, Rewritten,
};

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
///   op;
/// - (g) memory ([`concerto_graph::memory`]): the rewritten graph has the original's resident
///   bytes; a chunked original op that is an output of the step ([`Op::live_out`]) has its
///   join; a join is marked live_out exactly when its original is (a copy's mark is part of
///   (d)); no chunk is marked live_out.
///
/// It shares no logic with [`rewrite`] (only the helper that names ops in messages). Cost:
/// O(ops + deps) of both graphs (plus sorting each op's inputs).
///
/// [`rewrite`]: super::rewrite
pub fn check(original: &Graph, rewritten: &Rewritten) -> Result<(), DecompError> {
    check_inner(original, rewritten).map_err(|reason| DecompError::CheckFailed { reason })
}

fn check_inner(original: &Graph, rewritten: &Rewritten) -> Result<(), String> {
    let ck = SplitCheck {
        original,
        g: &rewritten.graph,
        origin: &rewritten.origin,
    };
    let cover = ck.cover()?;
    // (b): edges go forward.
    let ins = forward_inputs(ck.g)?;
    ck.work(&cover)?;
    ck.dependencies(&cover, &ins)?;
    ck.joins(&cover, &ins)?;
    ck.memory(&cover)
}

/// The `(producer, output)` inputs of every op, each sorted.
type Inputs = Vec<Vec<(OpId, usize)>>;

/// Whether `x` reads `y` (its output `tensor`, or any) by a direct edge.
fn has_edge(ins: &Inputs, x: OpId, y: OpId, tensor: Option<usize>) -> bool {
    let v = &ins[x.0];
    match tensor {
        Some(t) => v.binary_search(&(y, t)).is_ok(),
        None => {
            let k = v.partition_point(|e| e.0 < y);
            v.get(k).is_some_and(|e| e.0 == y)
        }
    }
}

/// One check of a split rewrite: the original graph, the rewritten one and its origins.
struct SplitCheck<'a> {
    /// The original graph.
    original: &'a Graph,
    /// The rewritten graph.
    g: &'a Graph,
    /// Each rewritten op's origin.
    origin: &'a [Origin],
}

impl SplitCheck<'_> {
    /// An op of the rewritten graph in messages.
    fn new_name(&self, x: OpId) -> String {
        describe(self.g, x)
    }

    /// An op of the original graph in messages.
    fn old_name(&self, o: OpId) -> String {
        describe(self.original, o)
    }

    /// (a) and (c): one origin per op naming an original op, and how each original op is
    /// covered.
    fn cover(&self) -> Result<Vec<Cover>, String> {
        let (original, g, origin) = (self.original, self.g, self.origin);
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
                    self.new_name(x),
                    o.0,
                    original.len()
                ));
            }
            self.record(&mut cover[o.0], x, o)?;
        }
        for o in original.ids() {
            let c = &cover[o.0];
            if c.copy.is_none() && c.chunks.is_empty() {
                return Err(match c.join {
                    Some(j) => {
                        format!(
                            "{} has a join ({}) but no chunks",
                            self.old_name(o),
                            self.new_name(j)
                        )
                    }
                    None => format!("{} is neither copied nor chunked", self.old_name(o)),
                });
            }
            if let Some(i) = c.chunks.iter().position(Option::is_none) {
                return Err(format!(
                    "chunk {i} of {} of {} is missing",
                    c.chunks.len(),
                    self.old_name(o)
                ));
            }
            if !c.chunks.is_empty() && c.join.is_none() && original.successors(o).is_empty() {
                return Err(format!(
                    "{} is a graph output, chunked, and has no join",
                    self.old_name(o)
                ));
            }
            if !c.chunks.is_empty() && c.join.is_none() && original.op(o).live_out {
                return Err(format!(
                    "{} is an output of the step (live_out), chunked, and has no join",
                    self.old_name(o)
                ));
            }
        }
        Ok(cover)
    }

    /// (c): records rewritten op `x` in the cover `c` of its original op `o`.
    fn record(&self, c: &mut Cover, x: OpId, o: OpId) -> Result<(), String> {
        let (g, origin) = (self.g, self.origin);
        match origin[x.0] {
            Origin::Copy(_) => {
                if let Some(y) = c.copy {
                    return Err(format!(
                        "{} is copied twice: {} and {}",
                        self.old_name(o),
                        self.new_name(y),
                        self.new_name(x)
                    ));
                }
                if !c.chunks.is_empty() || c.join.is_some() {
                    return Err(format!(
                        "{} is both copied ({}) and chunked",
                        self.old_name(o),
                        self.new_name(x)
                    ));
                }
                c.copy = Some(x);
            }
            Origin::Chunk { index, n, .. } => {
                if let Some(y) = c.copy {
                    return Err(format!(
                        "{} is both copied ({}) and chunked ({})",
                        self.old_name(o),
                        self.new_name(y),
                        self.new_name(x)
                    ));
                }
                if index >= n || n as usize > g.len() {
                    return Err(format!(
                        "{} claims to be chunk {index} of {n} of {}",
                        self.new_name(x),
                        self.old_name(o)
                    ));
                }
                if c.chunks.is_empty() {
                    c.chunks = vec![None; n as usize];
                } else if c.chunks.len() != n as usize {
                    return Err(format!(
                        "the chunks of {} disagree on their count: {} and {n} ({})",
                        self.old_name(o),
                        c.chunks.len(),
                        self.new_name(x)
                    ));
                }
                if let Some(y) = c.chunks[index as usize] {
                    return Err(format!(
                        "{} has chunk {index} twice: {} and {}",
                        self.old_name(o),
                        self.new_name(y),
                        self.new_name(x)
                    ));
                }
                c.chunks[index as usize] = Some(x);
            }
            Origin::Join(_) => {
                if let Some(y) = c.copy {
                    return Err(format!(
                        "{} is copied ({}) and has a join ({})",
                        self.old_name(o),
                        self.new_name(y),
                        self.new_name(x)
                    ));
                }
                if let Some(y) = c.join {
                    return Err(format!(
                        "{} has two joins: {} and {}",
                        self.old_name(o),
                        self.new_name(y),
                        self.new_name(x)
                    ));
                }
                c.join = Some(x);
            }
            Origin::Step { .. } | Origin::Accumulate { .. } => {
                return Err(format!(
                    "{} is a ring step of {}, which a split rewrite never makes",
                    self.new_name(x),
                    self.old_name(o)
                ));
            }
        }
        Ok(())
    }

    /// (d): copies equal their originals; chunks conserve their op's work.
    fn work(&self, cover: &[Cover]) -> Result<(), String> {
        let (original, g) = (self.original, self.g);
        for o in original.ids() {
            let op = original.op(o);
            let c = &cover[o.0];
            if let Some(x) = c.copy {
                let y = g.op(x);
                let differs = copy_difference(op, y);
                if let Some(what) = differs {
                    return Err(format!(
                        "the copy {} of {} differs in its {what}",
                        self.new_name(x),
                        self.old_name(o)
                    ));
                }
            } else {
                let chunks: Vec<(OpId, &Op)> =
                    c.chunks.iter().flatten().map(|&x| (x, g.op(x))).collect();
                conserved(op, &chunks, &|x| self.new_name(x))
                    .map_err(|e| format!("{}: {e}", self.old_name(o)))?;
            }
        }
        Ok(())
    }

    /// (e): every original dependency, by a direct edge.
    fn dependencies(&self, cover: &[Cover], ins: &Inputs) -> Result<(), String> {
        let original = self.original;
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
                                    self.new_name(x),
                                    self.old_name(c),
                                    self.old_name(p)
                                ))
                            }
                        },
                        (None, None) => match pc.join {
                            Some(j) => (j, Some(t)),
                            None => {
                                return Err(format!(
                                    "the copy {} of {} reads the chunked {}, which has no join",
                                    self.new_name(x),
                                    self.old_name(c),
                                    self.old_name(p)
                                ))
                            }
                        },
                    };
                    if !has_edge(ins, x, y, tensor) {
                        let what = tensor.map_or(String::new(), |t| format!(" (output {t})"));
                        return Err(format!(
                            "the dependency {} -> {} is lost: no edge {} -> {}{what}",
                            self.old_name(p),
                            self.old_name(c),
                            self.new_name(y),
                            self.new_name(x)
                        ));
                    }
                }
            }
        }
        Ok(())
    }

    /// (f): each join is a compute op with its original's outputs and reads every chunk.
    fn joins(&self, cover: &[Cover], ins: &Inputs) -> Result<(), String> {
        let (original, g) = (self.original, self.g);
        for o in original.ids() {
            let c = &cover[o.0];
            let Some(j) = c.join else { continue };
            let op = g.op(j);
            if !matches!(op.kind, OpKind::Compute { .. }) || op.outputs != original.op(o).outputs {
                return Err(format!(
                    "the join {} of {} is not a compute op with the original's outputs",
                    self.new_name(j),
                    self.old_name(o)
                ));
            }
            if let Some(&x) = c
                .chunks
                .iter()
                .flatten()
                .find(|&&x| !has_edge(ins, j, x, None))
            {
                return Err(format!(
                    "the join {} of {} does not read its chunk {}",
                    self.new_name(j),
                    self.old_name(o),
                    self.new_name(x)
                ));
            }
        }
        Ok(())
    }

    /// (g): the original's resident bytes; each join's live_out mark, none on a chunk.
    fn memory(&self, cover: &[Cover]) -> Result<(), String> {
        let (original, g) = (self.original, self.g);
        if let Some(e) = resident_difference(original, g) {
            return Err(e);
        }
        for o in original.ids() {
            let c = &cover[o.0];
            if let Some(j) = c.join {
                let want = original.op(o).live_out;
                if let Some(e) =
                    live_out_difference(want, g.op(j), &self.new_name(j), &self.old_name(o))
                {
                    return Err(e);
                }
            }
            for &x in c.chunks.iter().flatten() {
                if let Some(e) = part_live_out(g.op(x), &self.new_name(x), &self.old_name(o)) {
                    return Err(e);
                }
            }
        }
        Ok(())
    }
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
