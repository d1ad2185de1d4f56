//! The independent check of a fusion, sharing no code path with [`super::fuse_ops`].

use std::collections::BTreeSet;

use concerto_graph::{Graph, OpId, OpKind};

use super::describe;
use crate::error::DecompError;
use crate::rewritten::{copy_difference, live_out_difference, resident_difference};

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
    let new = |x: OpId| describe(fused, x);
    let old = |o: OpId| describe(original, o);

    // (a), (b): origins and cover.
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
            return Err(format!("{} comes from no original op", new(x)));
        }
        for &o in entry {
            if o.0 >= original.len() {
                return Err(format!(
                    "{} comes from op #{}, but the original graph has {} ops",
                    new(x),
                    o.0,
                    original.len()
                ));
            }
            if let Some(y) = rep[o.0] {
                return Err(format!(
                    "{} appears twice: in the origin of {} and of {}",
                    old(o),
                    new(y),
                    new(x)
                ));
            }
            rep[o.0] = Some(x);
        }
        if let Some(w) = entry.windows(2).find(|w| w[0] >= w[1]) {
            return Err(format!(
                "the members of {} are not in program order: {} then {}",
                new(x),
                old(w[0]),
                old(w[1])
            ));
        }
    }
    let rep: Vec<OpId> = original
        .ids()
        .map(|o| rep[o.0].ok_or_else(|| format!("{} is in no origin entry", old(o))))
        .collect::<Result<_, _>>()?;

    // (g): resident bytes.
    if let Some(e) = resident_difference(original, fused) {
        return Err(e);
    }

    // (c): edges go forward.
    let ins: Vec<Vec<(OpId, usize)>> = fused.ids().map(|x| fused.inputs(x)).collect();
    for x in fused.ids() {
        if let Some(&(p, _)) = ins[x.0].iter().find(|(p, _)| *p >= x) {
            return Err(format!(
                "edge {} -> {} does not go forward in program order",
                new(p),
                new(x)
            ));
        }
    }

    // (d): copies and buckets; the output offset of each bucket member.
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
                    new(x),
                    old(o)
                ));
            }
            continue;
        }
        let OpKind::Collective {
            kind,
            bytes,
            group,
            link,
        } = y.kind
        else {
            return Err(format!("the bucket {} is not a collective", new(x)));
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
                        old(o),
                        new(x),
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
                new(x)
            ));
        }
        if y.outputs != outputs {
            return Err(format!(
                "the outputs of the bucket {} are not its members' concatenated",
                new(x)
            ));
        }
        if y.duration_ns.is_some() {
            return Err(format!("the bucket {} has a duration override", new(x)));
        }
        // (g): a bucket is a step output when a member is.
        let member = entry.iter().find(|&&o| original.op(o).live_out);
        let who = old(*member.unwrap_or(&entry[0]));
        if let Some(e) = live_out_difference(member.is_some(), y, &new(x), &who) {
            return Err(e);
        }
    }

    // (e): every original dependency, by a direct edge.
    for c in original.ids() {
        let xc = rep[c.0];
        for (p, t) in original.inputs(c) {
            let xp = rep[p.0];
            if xp == xc {
                return Err(format!(
                    "the dependency {} -> {} lies inside the bucket {}",
                    old(p),
                    old(c),
                    new(xc)
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
                    old(p),
                    old(c),
                    new(xp),
                    new(xc)
                ));
            }
        }
    }

    // (f): no invented dependency.
    let kept: BTreeSet<(OpId, OpId)> = original
        .dependencies()
        .into_iter()
        .map(|(p, c)| (rep[p.0], rep[c.0]))
        .collect();
    if let Some((y, x)) = fused.dependencies().into_iter().find(|e| !kept.contains(e)) {
        return Err(format!(
            "the edge {} -> {} comes from no original dependency",
            new(y),
            new(x)
        ));
    }
    Ok(())
}
