//! The search for bucket boundaries, judged by schedules.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use concerto_graph::{simulate, Graph, Hardware, OpId, OpKind, StreamPlan, Timeline};

use super::{class, fuse_ops, Bucket, Class, FuseConfig, Fused};
use crate::error::DecompError;
use crate::select::evaluate;

/// Chooses buckets for `graph` by evaluating schedules on `hardware` (see the module docs):
/// the returned graph has passed [`check_fusion`] and schedules no longer than the input.
///
/// Errors: those of [`fuse_ops`] other than an invalid group (a candidate that would form a
/// cycle closes the bucket instead), and of evaluating a graph.
///
/// [`check_fusion`]: super::check_fusion
pub fn fuse(graph: &Graph, hardware: &Hardware, config: &FuseConfig) -> Result<Fused, DecompError> {
    fuse_by(graph, config, &mut |g: &Graph, _: &[Vec<OpId>]| {
        Ok(evaluate(g, hardware)?.0)
    })
}

/// Chooses buckets for `graph` under a schedule already found for it (the `timeline` of a
/// plan of `graph`, e.g. concerto's): each candidate is evaluated by the plan that keeps the
/// timeline's order ([`mapped_order`]), simulated on `hardware` with its contention. A
/// candidate is then judged by what the scheduler's plan would do with it, not by a baseline
/// that a scheduler has already beaten. The returned graph has passed [`check_fusion`] and
/// its mapped plan simulates no longer than `timeline`'s order.
///
/// Cost: that of [`fuse_by`] with one O((ops + deps) log ops) order and one simulation per
/// candidate. Errors: those of [`fuse_by`]; [`DecompError::InvalidContext`] when `timeline`
/// does not cover `graph`'s ops.
///
/// [`check_fusion`]: super::check_fusion
pub fn fuse_under(
    graph: &Graph,
    hardware: &Hardware,
    timeline: &Timeline,
    config: &FuseConfig,
) -> Result<Fused, DecompError> {
    if timeline.start.len() != graph.len() {
        return Err(DecompError::InvalidContext {
            reason: format!(
                "the timeline has {} ops, the graph {}",
                timeline.start.len(),
                graph.len()
            ),
        });
    }
    let mut order: Vec<OpId> = graph.ids().collect();
    order.sort_by_key(|o| (timeline.start[o.0], o.0));
    fuse_by(graph, config, &mut |g: &Graph, origin: &[Vec<OpId>]| {
        let plan = StreamPlan::from_order(g, &mapped_order(g, origin, &order)?)?;
        let d = hardware.durations(g);
        Ok(simulate(g, &plan, &d, hardware.contention)?.makespan)
    })
}

/// The order of a fused graph's ops that follows `order`, an order of the original graph's
/// ops (a permutation): each op of `fused` takes the earliest position of the original ops
/// it comes from (`origin`, as [`fuse_ops`] returns it), and Kahn's algorithm, taking the
/// ready op of the smallest position first, makes it a topological order. A bucket thus
/// launches as soon as its last producer is done, ahead of what came after its first member.
/// Cost O((ops + deps) log ops). Errors: [`DecompError::InvalidContext`] when `order` is not a
/// permutation of the original ops or `origin` does not match `fused`.
pub fn mapped_order(
    fused: &Graph,
    origin: &[Vec<OpId>],
    order: &[OpId],
) -> Result<Vec<OpId>, DecompError> {
    let bad = |reason: String| DecompError::InvalidContext { reason };
    if origin.len() != fused.len() {
        return Err(bad(format!(
            "{} origins for a fused graph of {} ops",
            origin.len(),
            fused.len()
        )));
    }
    let originals: usize = origin.iter().map(Vec::len).sum();
    if order.len() != originals {
        return Err(bad(format!(
            "the order has {} ops, the original graph {originals}",
            order.len()
        )));
    }
    let mut position = vec![usize::MAX; order.len()];
    for (i, o) in order.iter().enumerate() {
        match position.get_mut(o.0) {
            Some(p) if *p == usize::MAX => *p = i,
            _ => {
                return Err(bad(format!(
                    "the order names op #{} twice or out of range",
                    o.0
                )))
            }
        }
    }
    let mut key = Vec::with_capacity(fused.len());
    for (i, members) in origin.iter().enumerate() {
        let k = members
            .iter()
            .map(|m| position.get(m.0).copied().unwrap_or(usize::MAX))
            .min()
            .unwrap_or(usize::MAX);
        if k == usize::MAX {
            return Err(bad(format!(
                "op #{i} of the fused graph comes from no op of the order"
            )));
        }
        key.push(k);
    }
    let mut indegree = vec![0usize; fused.len()];
    for o in fused.ids() {
        for s in fused.successors(o) {
            indegree[s.0] += 1;
        }
    }
    let mut ready: BinaryHeap<Reverse<(usize, usize)>> = fused
        .ids()
        .filter(|o| indegree[o.0] == 0)
        .map(|o| Reverse((key[o.0], o.0)))
        .collect();
    let mut out = Vec::with_capacity(fused.len());
    while let Some(Reverse((_, i))) = ready.pop() {
        out.push(OpId(i));
        for s in fused.successors(OpId(i)) {
            indegree[s.0] -= 1;
            if indegree[s.0] == 0 {
                ready.push(Reverse((key[s.0], s.0)));
            }
        }
    }
    Ok(out)
}

/// The judge of [`fuse_by`]: a candidate graph and its origin in, its makespan (ns) out.
pub type Judge<'a> = dyn FnMut(&Graph, &[Vec<OpId>]) -> Result<u64, DecompError> + 'a;

/// Chooses buckets for `graph` with `eval` as the judge: `eval(candidate, origin)` returns the
/// makespan (ns) of a candidate graph, `origin` mapping its ops to `graph`'s as [`fuse_ops`]
/// returns it. The search is the greedy boundary search of the module docs; the returned
/// graph has passed [`check_fusion`] and `eval` gives it no more than `graph`.
///
/// Errors: those of [`fuse_ops`] other than an invalid group (a candidate that would form a
/// cycle closes the bucket instead), and those of `eval`.
///
/// [`check_fusion`]: super::check_fusion
pub fn fuse_by(
    graph: &Graph,
    config: &FuseConfig,
    eval: &mut Judge<'_>,
) -> Result<Fused, DecompError> {
    let identity: Vec<Vec<OpId>> = graph.ids().map(|o| vec![o]).collect();
    let before = eval(graph, &identity)?;
    let mut classes: Vec<(Class, Vec<OpId>)> = Vec::new();
    for o in graph.ids() {
        let Some(c) = class(graph.op(o)) else {
            continue;
        };
        match classes.iter_mut().find(|(k, _)| *k == c) {
            Some((_, v)) => v.push(o),
            None => classes.push((c, vec![o])),
        }
    }
    let mut kept: Vec<Vec<OpId>> = Vec::new();
    let mut current: Option<(Graph, Vec<Vec<OpId>>)> = None;
    let mut makespan = before;
    let mut evaluations = 0usize;
    let mut out_of_budget = false;
    for (_, list) in &classes {
        let mut i = 0;
        while i < list.len() && !out_of_budget {
            let mut bucket = vec![list[i]];
            let mut bucket_ms = makespan;
            let mut bucket_graph = None;
            let mut j = i + 1;
            while j < list.len() && bucket.len() < config.max_members {
                if evaluations >= config.max_candidates {
                    out_of_budget = true;
                    break;
                }
                let mut candidate = bucket.clone();
                candidate.push(list[j]);
                let mut groups = kept.clone();
                groups.push(candidate.clone());
                let fused = match fuse_ops(graph, &groups) {
                    Ok(f) => f,
                    // It would form a cycle: close the bucket.
                    Err(DecompError::InvalidContext { .. }) => break,
                    Err(e) => return Err(e),
                };
                evaluations += 1;
                let m = eval(&fused.0, &fused.1)?;
                if m > bucket_ms {
                    break;
                }
                bucket = candidate;
                bucket_ms = m;
                bucket_graph = Some(fused);
                j += 1;
            }
            if bucket.len() >= 2 && bucket_ms < makespan {
                kept.push(bucket);
                makespan = bucket_ms;
                current = bucket_graph;
            }
            i = j;
        }
    }
    let (fused, origin) = current.unwrap_or_else(|| (graph.clone(), identity));
    let buckets = origin
        .iter()
        .zip(fused.ops())
        .filter(|(o, _)| o.len() >= 2)
        .map(|(o, op)| Bucket {
            members: o.iter().map(|&m| graph.op(m).name.clone()).collect(),
            bytes: match op.kind {
                OpKind::Collective { bytes, .. } => bytes,
                OpKind::Compute { .. } => 0,
            },
        })
        .collect();
    Ok(Fused {
        graph: fused,
        origin,
        buckets,
        before_ns: before,
        after_ns: makespan,
        evaluations,
    })
}
