//! The independent check of a fusion, sharing no code path with [`super::fuse_ops`].

use std::collections::BTreeSet;

use concerto_graph::{Graph, OpId, OpKind};

use crate::error::DecompError;
use crate::rewritten::{
    copy_difference, describe, forward_inputs, live_out_difference, resident_difference,
};

/// Checks that `fused` is a fusion of `original`, `origin[i]` listing the original ops that
/// op `i` of `fused` comes from; each failure is a [`DecompError::CheckFailed`] naming the ops
/// involved:
///
/// - (a) `origin` has one non-empty entry per op of `fused`, each naming ops of `original`
///   in increasing program order;
/// - (b) every original op appears in exactly one entry;
/// - (c) every edge of `fused` goes forward in program order (a DAG whose program order is
///   topological);
/// - (d) an op from one original op is an exact copy of it (name, kind, outputs, duration
///   override); a bucket (an entry of at least 2 ops) comes from collectives that share kind,
///   group size and link class, is a collective of that class whose bytes are their sum and
///   whose outputs are theirs concatenated in program order, with no duration override;
/// - (e) every original dependency `p -> c` (reading output `t`) is kept by a direct edge from
///   the op representing `p` to the op representing `c`, at output `t` when `p` is copied,
///   and at `t` plus `p`'s offset in the concatenation when `p` is a bucket member with
///   outputs; `p` and `c` in one bucket is a failure (the bucket would read itself);
/// - (f) no dependency is invented: every edge of `fused` joins ops that come from an
///   original producer and its consumer;
/// - (g) memory ([`concerto_graph::memory`]): `fused` has the original's resident bytes, and a
///   bucket is marked live_out exactly when one of its members is (a copy's mark is part of
///   (d)).
///
/// It shares no logic with [`fuse_ops`] (only the helper that names ops in messages). Cost:
/// O((ops + deps) log deps) of both graphs.
///
/// [`fuse_ops`]: super::fuse_ops
pub fn check_fusion(
    original: &Graph,
    fused: &Graph,
    origin: &[Vec<OpId>],
) -> Result<(), DecompError> {
    check_inner(original, fused, origin).map_err(|reason| DecompError::CheckFailed { reason })
}

fn check_inner(original: &Graph, fused: &Graph, origin: &[Vec<OpId>]) -> Result<(), String> {
    let ck = FuseCheck {
        original,
        fused,
        origin,
    };
    let rep = ck.representatives()?;
    // (g): resident bytes.
    if let Some(e) = resident_difference(original, fused) {
        return Err(e);
    }
    // (c): edges go forward.
    let ins = forward_inputs(fused)?;
    let offset = ck.copies_and_buckets()?;
    ck.dependencies(&rep, &ins, &offset)?;
    ck.nothing_invented(&rep)
}

/// One check of a fusion: the graphs and each fused op's original ops.
struct FuseCheck<'a> {
    /// The original graph.
    original: &'a Graph,
    /// The fused graph.
    fused: &'a Graph,
    /// The original ops of each fused op.
    origin: &'a [Vec<OpId>],
}

impl FuseCheck<'_> {
    /// An op of the fused graph in messages.
    fn new_name(&self, x: OpId) -> String {
        describe(self.fused, x)
    }

    /// An op of the original graph in messages.
    fn old_name(&self, o: OpId) -> String {
        describe(self.original, o)
    }

    /// (a), (b): origins and cover; the fused op representing each original op.
    fn representatives(&self) -> Result<Vec<OpId>, String> {
        let (original, fused, origin) = (self.original, self.fused, self.origin);
        if origin.len() != fused.len() {
            return Err(format!(
                "{} origin entries for the {} ops of the fused graph",
                origin.len(),
                fused.len()
            ));
        }
        let mut rep: Vec<Option<OpId>> = vec![None; original.len()];
        for x in fused.ids() {
            let entry = &origin[x.0];
            if entry.is_empty() {
                return Err(format!("{} comes from no original op", self.new_name(x)));
            }
            for &o in entry {
                if o.0 >= original.len() {
                    return Err(format!(
                        "{} comes from op #{}, but the original graph has {} ops",
                        self.new_name(x),
                        o.0,
                        original.len()
                    ));
                }
                if let Some(y) = rep[o.0] {
                    return Err(format!(
                        "{} appears twice: in the origin of {} and of {}",
                        self.old_name(o),
                        self.new_name(y),
                        self.new_name(x)
                    ));
                }
                rep[o.0] = Some(x);
            }
            if let Some(w) = entry.windows(2).find(|w| w[0] >= w[1]) {
                return Err(format!(
                    "the members of {} are not in program order: {} then {}",
                    self.new_name(x),
                    self.old_name(w[0]),
                    self.old_name(w[1])
                ));
            }
        }
        let rep: Vec<OpId> = original
            .ids()
            .map(|o| rep[o.0].ok_or_else(|| format!("{} is in no origin entry", self.old_name(o))))
            .collect::<Result<_, _>>()?;
        Ok(rep)
    }

    /// (d): copies equal their originals, buckets are their members fused (with (g): the
    /// bucket's live_out mark); the output offset of each bucket member.
    fn copies_and_buckets(&self) -> Result<Vec<usize>, String> {
        let (original, fused, origin) = (self.original, self.fused, self.origin);
        let mut offset = vec![0usize; original.len()];
        for x in fused.ids() {
            let entry = &origin[x.0];
            let y = fused.op(x);
            if let [o] = entry[..] {
                let op = original.op(o);
                let differs = copy_difference(op, y);
                if let Some(what) = differs {
                    return Err(format!(
                        "the copy {} of {} differs in its {what}",
                        self.new_name(x),
                        self.old_name(o)
                    ));
                }
                continue;
            }
            self.bucket(x, &mut offset)?;
        }
        Ok(offset)
    }

    /// (d), (g): the bucket `x` is a collective of its members' class, bytes and outputs,
    /// with no duration override and the live_out mark of its members; records each
    /// member's output offset.
    fn bucket(&self, x: OpId, offset: &mut [usize]) -> Result<(), String> {
        let original = self.original;
        let entry = &self.origin[x.0];
        let y = self.fused.op(x);
        let OpKind::Collective {
            kind,
            bytes,
            group,
            link,
        } = y.kind
        else {
            return Err(format!(
                "the bucket {} is not a collective",
                self.new_name(x)
            ));
        };
        let mut sum = 0u128;
        let mut outputs = Vec::new();
        for &o in entry {
            match original.op(o).kind {
                OpKind::Collective {
                    kind: k,
                    bytes: b,
                    group: g,
                    link: l,
                } if (k, g, l) == (kind, group, link) => sum += u128::from(b),
                _ => {
                    return Err(format!(
                        "{} in the bucket {} is not a {} over {group} ranks, {}",
                        self.old_name(o),
                        self.new_name(x),
                        kind.as_str(),
                        link.as_str()
                    ))
                }
            }
            offset[o.0] = outputs.len();
            outputs.extend(original.op(o).outputs.iter().cloned());
        }
        if u128::from(bytes) != sum {
            return Err(format!(
                "the bucket {} moves {bytes} bytes, not its members' {sum}",
                self.new_name(x)
            ));
        }
        if y.outputs != outputs {
            return Err(format!(
                "the outputs of the bucket {} are not its members' concatenated",
                self.new_name(x)
            ));
        }
        if y.duration_ns.is_some() {
            return Err(format!(
                "the bucket {} has a duration override",
                self.new_name(x)
            ));
        }
        // (g): a bucket is a step output when a member is.
        let member = entry.iter().find(|&&o| original.op(o).live_out);
        let who = self.old_name(*member.unwrap_or(&entry[0]));
        if let Some(e) = live_out_difference(member.is_some(), y, &self.new_name(x), &who) {
            return Err(e);
        }
        Ok(())
    }

    /// (e): every original dependency, by a direct edge.
    fn dependencies(
        &self,
        rep: &[OpId],
        ins: &[Vec<(OpId, usize)>],
        offset: &[usize],
    ) -> Result<(), String> {
        let (original, origin) = (self.original, self.origin);
        for c in original.ids() {
            let xc = rep[c.0];
            for (p, t) in original.inputs(c) {
                let xp = rep[p.0];
                if xp == xc {
                    return Err(format!(
                        "the dependency {} -> {} lies inside the bucket {}",
                        self.old_name(p),
                        self.old_name(c),
                        self.new_name(xc)
                    ));
                }
                let v = &ins[xc.0];
                let tensor = if origin[xp.0].len() == 1 {
                    Some(t)
                } else if original.op(p).outputs.is_empty() {
                    None
                } else {
                    Some(offset[p.0] + t)
                };
                let found = match tensor {
                    Some(t) => v.binary_search(&(xp, t)).is_ok(),
                    None => v.iter().any(|e| e.0 == xp),
                };
                if !found {
                    let what = tensor.map_or(String::new(), |t| format!(" (output {t})"));
                    return Err(format!(
                        "the dependency {} -> {} is lost: no edge {} -> {}{what}",
                        self.old_name(p),
                        self.old_name(c),
                        self.new_name(xp),
                        self.new_name(xc)
                    ));
                }
            }
        }
        Ok(())
    }

    /// (f): no invented dependency.
    fn nothing_invented(&self, rep: &[OpId]) -> Result<(), String> {
        let (original, fused) = (self.original, self.fused);
        let kept: BTreeSet<(OpId, OpId)> = original
            .dependencies()
            .into_iter()
            .map(|(p, c)| (rep[p.0], rep[c.0]))
            .collect();
        if let Some((y, x)) = fused.dependencies().into_iter().find(|e| !kept.contains(e)) {
            return Err(format!(
                "the edge {} -> {} comes from no original dependency",
                self.new_name(y),
                self.new_name(x)
            ));
        }
        Ok(())
    }
}
