//! The regions and modes of [`super::union`]: candidates that share ops form a region, each
//! compatible set of a region's candidates is one of its modes, rewritten one candidate after
//! the other.

use std::collections::{BTreeMap, BTreeSet};

use concerto_graph::{Graph, Op, OpId};

use super::{Candidate, MAX_MODES};
use crate::error::DecompError;
use crate::rewrite::{rewrite, Origin, Rewritten};
use crate::split::Context;

/// Union-find root.
fn root(parent: &mut [usize], mut i: usize) -> usize {
    while parent[i] != i {
        parent[i] = parent[parent[i]];
        i = parent[i];
    }
    i
}

/// The regions of [`union`]: candidates connected by shared ops.
pub(super) struct Regions {
    /// Each region's candidates, in candidate order.
    pub(super) cands: Vec<Vec<usize>>,
    /// Each original op's region, or `None` when it is in no context.
    pub(super) of: Vec<Option<usize>>,
    /// Each region's original ops (the union of its candidates' contexts), sorted.
    pub(super) ops: Vec<Vec<OpId>>,
}

/// Groups the candidates whose contexts share an op into regions (union-find), numbered by
/// their first candidate.
pub(super) fn find_regions(graph: &Graph, candidates: &[Candidate]) -> Regions {
    let k = candidates.len();
    let mut parent: Vec<usize> = (0..k).collect();
    let mut owner: BTreeMap<OpId, usize> = BTreeMap::new();
    for (i, c) in candidates.iter().enumerate() {
        for &o in &c.context.ops {
            match owner.get(&o) {
                Some(&j) => {
                    let (a, b) = (root(&mut parent, i), root(&mut parent, j));
                    parent[a] = b;
                }
                None => {
                    owner.insert(o, i);
                }
            }
        }
    }
    let mut region_of_root: BTreeMap<usize, usize> = BTreeMap::new();
    let mut region_cands: Vec<Vec<usize>> = Vec::new();
    for i in 0..k {
        let r = root(&mut parent, i);
        let next = region_cands.len();
        let idx = *region_of_root.entry(r).or_insert(next);
        if idx == region_cands.len() {
            region_cands.push(Vec::new());
        }
        region_cands[idx].push(i);
    }
    let mut region_of = vec![None; graph.len()];
    let mut region_ops: Vec<Vec<OpId>> = Vec::new();
    for (r, cands) in region_cands.iter().enumerate() {
        let ops: BTreeSet<OpId> = cands
            .iter()
            .flat_map(|&i| candidates[i].context.ops.iter().copied())
            .collect();
        for &o in &ops {
            region_of[o.0] = Some(r);
        }
        region_ops.push(ops.into_iter().collect());
    }
    Regions {
        cands: region_cands,
        of: region_of,
        ops: region_ops,
    }
}

/// Whether candidates `a` and `b` may be applied together: other collectives, disjoint
/// contexts.
fn compatible(candidates: &[Candidate], a: usize, b: usize) -> bool {
    let (x, y) = (&candidates[a].context, &candidates[b].context);
    x.collective != y.collective && !x.ops.iter().any(|o| y.ops.contains(o))
}

/// The modes (past mode 0) of the region of `cands`: every compatible candidate set while
/// there are at most [`MAX_MODES`], else the single candidates, `start`'s set and the greedy
/// largest set; each set sorted, the list sorted and deduplicated.
pub(super) fn region_mode_sets(
    candidates: &[Candidate],
    cands: &[usize],
    start: &[usize],
) -> Vec<Vec<usize>> {
    let compatible = |a: usize, b: usize| compatible(candidates, a, b);
    let mut sets: Vec<Vec<usize>> = Vec::new();
    let mut stack: Vec<(usize, Vec<usize>)> = vec![(0, Vec::new())];
    let mut overflow = false;
    while let Some((from, set)) = stack.pop() {
        for (j, &c) in cands.iter().enumerate().skip(from) {
            if set.iter().all(|&x| compatible(x, c)) {
                let mut next = set.clone();
                next.push(c);
                sets.push(next.clone());
                if sets.len() > MAX_MODES {
                    overflow = true;
                    break;
                }
                stack.push((j + 1, next));
            }
        }
        if overflow {
            break;
        }
    }
    if overflow {
        sets = cands.iter().map(|&c| vec![c]).collect();
        let mine: Vec<usize> = start
            .iter()
            .copied()
            .filter(|c| cands.contains(c))
            .collect();
        if mine.len() > 1 {
            sets.push(mine);
        }
        let mut greedy: Vec<usize> = Vec::new();
        for &c in cands {
            if greedy.iter().all(|&x| compatible(x, c)) {
                greedy.push(c);
            }
        }
        if greedy.len() > 1 && !sets.contains(&greedy) {
            sets.push(greedy);
        }
    }
    for set in &mut sets {
        set.sort_unstable();
    }
    sets.sort();
    sets.dedup();
    sets
}

/// The modes of every region and their rewrites; a *mode entry* is one region's mode past 0,
/// numbered over all regions in order.
pub(super) struct Modes {
    /// Each region's candidate sets, mode `m` being `sets[r][m - 1]`.
    pub(super) sets: Vec<Vec<Vec<usize>>>,
    /// Each mode entry's rewrite, origins in the original graph.
    pub(super) rewritten: Vec<Rewritten>,
    /// Each mode entry's region.
    pub(super) region: Vec<usize>,
    /// Each mode entry's mode number (from 1).
    pub(super) mode: Vec<usize>,
    /// Each region's mode entries.
    pub(super) by_region: Vec<Vec<usize>>,
}

impl Modes {
    /// The candidate set of mode entry `i`.
    pub(super) fn set(&self, i: usize) -> &[usize] {
        &self.sets[self.region[i]][self.mode[i] - 1]
    }
}

/// Rewrites every region's modes (see [`rewrite_mode`]) in region then mode order.
pub(super) fn rewrite_modes(
    graph: &Graph,
    candidates: &[Candidate],
    chunk: &dyn Fn(&Context, &Op, u32) -> Op,
    sets: Vec<Vec<Vec<usize>>>,
) -> Result<Modes, DecompError> {
    let mut rewritten: Vec<Rewritten> = Vec::new();
    let mut mode_entry: Vec<(usize, usize)> = Vec::new();
    for (r, region_sets) in sets.iter().enumerate() {
        for (m, set) in region_sets.iter().enumerate() {
            rewritten.push(rewrite_mode(graph, candidates, chunk, set)?);
            mode_entry.push((r, m + 1));
        }
    }
    let region: Vec<usize> = mode_entry.iter().map(|&(r, _)| r).collect();
    let mode: Vec<usize> = mode_entry.iter().map(|&(_, m)| m).collect();
    let k = rewritten.len();
    let by_region: Vec<Vec<usize>> = (0..sets.len())
        .map(|r| (0..k).filter(|&e| region[e] == r).collect())
        .collect();
    Ok(Modes {
        sets,
        rewritten,
        region,
        mode,
        by_region,
    })
}

/// One mode's rewrite: its candidates applied one after the other, the origins composed back
/// to the original ops.
fn rewrite_mode(
    graph: &Graph,
    candidates: &[Candidate],
    chunk: &dyn Fn(&Context, &Op, u32) -> Op,
    set: &[usize],
) -> Result<Rewritten, DecompError> {
    let mut g = graph.clone();
    let mut origin: Vec<Origin> = graph.ids().map(Origin::Copy).collect();
    for &c in set {
        let ctx = &candidates[c].context;
        let mut current_of = vec![None; graph.len()];
        for (x, o) in origin.iter().enumerate() {
            if let Origin::Copy(w) = *o {
                current_of[w.0] = Some(OpId(x));
            }
        }
        let moved = |w: OpId| {
            current_of[w.0].ok_or_else(|| DecompError::CheckFailed {
                reason: format!(
                    "candidate `{}` names `{}`, already split by another",
                    candidates[c].label,
                    graph.op(w).name
                ),
            })
        };
        let local = Context {
            collective: moved(ctx.collective)?,
            axis: ctx.axis,
            ops: ctx
                .ops
                .iter()
                .map(|&w| moved(w))
                .collect::<Result<_, _>>()?,
            n: ctx.n,
            family: ctx.family,
        };
        let f = |op: &Op, i: u32| chunk(ctx, op, i);
        let rw = rewrite(&g, &local, &f)?;
        origin = rw
            .origin
            .iter()
            .map(|o| match *o {
                Origin::Copy(x) => origin[x.0],
                other => other.with_op(origin[other.op().0].op()),
            })
            .collect();
        g = rw.graph;
    }
    Ok(Rewritten { graph: g, origin })
}
