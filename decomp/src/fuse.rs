//! Collective fusion (bucketing): merging small collectives into one call.
//!
//! Every collective call pays a latency that does not depend on its size (kernel launch, NCCL
//! protocol steps, the ring's per-hop latency): on the measured H100 tables an 8 KiB
//! all-reduce runs at a tiny fraction of the link's bandwidth. Collectives of the same kind
//! over the same group size and link class can be merged into one call over the concatenation
//! of their buffers, which pays that latency once, at the price of waiting for the producers
//! of every member before any of it starts (and of every consumer waiting for the whole
//! bucket).
//!
//! - [`fuse_ops`] is the rewrite: each group of at least 2 collectives becomes one bucket op;
//!   every other op is copied. The result has passed [`check_fusion`].
//! - [`check_fusion`] is the independent check, sharing no code path with [`fuse_ops`].
//! - [`fuse_by`] is the search: it chooses the bucket boundaries by evaluating schedules with
//!   a judge it is given; [`fuse`] judges by the best baseline schedule, [`fuse_under`] by the
//!   plan of a schedule already found (concerto's), each candidate keeping its order
//!   ([`mapped_order`]).
//!
//! # The rewrite
//!
//! A bucket is a collective of its members' kind, group and link class, named
//! `bucket(<first>..<last>)` after its first and last member in program order (with `#2`,
//! `#3`, ... appended should that name be taken), whose bytes are the sum of the members'
//! and whose outputs are the members' outputs concatenated in program order. It reads the
//! union of its members' producers, and each consumer of a member reads the bucket instead,
//! at the member's output index plus the member's offset in the concatenation (the outputs
//! of the members before it), so it keeps reading the same tensor. A member without declared
//! outputs contributes none, and a read of it (a pure ordering dependency, output 0) becomes
//! a read of output 0 of the bucket. A bucket has no duration override: the cost model costs
//! the merged call, which is the point (members' overrides are dropped).
//!
//! Merging must not create a cycle: a group is rejected when one member depends on another,
//! directly or through other ops (a consumer of member `a` feeds member `b`), and a set of
//! groups is rejected when buckets would depend on each other in a cycle (a consumer of
//! bucket `A` feeds bucket `B` and a consumer of `B` feeds `A`), each an
//! [`DecompError::InvalidContext`] naming the ops. The result's program order is a stable
//! topological order (Kahn's algorithm, taking the ready op first in the original program
//! order, a bucket at the position of its last member): ops keep their original order except
//! where a consumer of an early member sat before the last member, and moves after the bucket.
//!
//! Cost: [`fuse_ops`] is O((ops + deps) log ops) plus, for the cycle check, one walk over
//! the ops between the first and the last member of each group (O(span + deps in it));
//! [`check_fusion`] is O((ops + deps) log deps) in the size of both graphs.
//!
//! # The search
//!
//! [`fuse`] is a greedy, left-to-right boundary search evaluated by schedules. The
//! collectives of each class (kind, group size, link class) are taken in program order, one
//! class after the other. A bucket opens at the first collective not yet considered and is
//! extended by the next collective of its class while the graph with the extended bucket
//! (and every bucket kept before) schedules no longer than with the bucket as it was (`<=`:
//! at equal makespan fewer calls are preferred); it closes when an extension would schedule
//! longer, would form a cycle, or the bucket has `max_members` members, and the next bucket
//! opens at the collective that did not join. A closed bucket is kept only when it made the
//! makespan strictly shorter than before it was opened. Each extension is one evaluation
//! ([`evaluate`]: the best of the baseline schedules, simulated), at most `max_candidates`
//! in all, so the cost is O(max_candidates x (rewrite + evaluate)). Which schedule judges
//! matters: under a baseline, fusion repairs what the baseline orders badly, and the buckets
//! that help it can hurt a better plan (on an 8-layer ZeRO-3 GPT at dp 16 the baseline-judged
//! buckets scheduled 1.8 % longer than unfused under concerto); under concerto's own plan
//! ([`fuse_under`]) a bucket is kept only where it shortens that plan. It only tries runs of
//! consecutive collectives of one class, and never revisits a boundary.
//!
//! Fixed-size bucketing (PyTorch DDP's 25 MiB cap) picks boundaries by bytes alone; here they
//! follow the schedule: a bucket grows while the latency it saves outweighs the wait for its
//! last member.
//!
//! Memory is not modelled: a bucket holds all its members' buffers at once, and the search
//! may merge collectives that a memory-saving plan keeps apart on purpose (ZeRO-3's forward
//! and backward gathers of one layer's parameters, which it frees in between). Bound the
//! members (`max_members`) or pass the groups to [`fuse_ops`] yourself where memory matters.
//!
//! # Sources
//!
//! - S. Cheng et al., "Concerto: Automatic Communication Optimization and Scheduling for
//!   Large-Scale Deep Learning", ASPLOS 2025, §5: small collectives are fused to save their
//!   per-call latency.
//! - S. Li et al., "PyTorch Distributed: Experiences on Accelerating Data Parallel Training",
//!   VLDB 2020: DDP's gradient bucketing (a fixed 25 MiB bucket cap), and the trade-off
//!   between per-call latency and the wait for a bucket's last gradient.

use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap};

use concerto_graph::{
    simulate, CollectiveKind, Graph, GraphBuilder, Hardware, LinkClass, Op, OpId, OpKind,
    StreamPlan, Timeline,
};

use crate::error::DecompError;
use crate::rewrite::copy_difference;
use crate::select::evaluate;

/// Options of [`fuse`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FuseConfig {
    /// Members of one bucket, at most.
    pub max_members: usize,
    /// Candidate buckets evaluated (schedules simulated), at most, over the whole search.
    pub max_candidates: usize,
}

impl Default for FuseConfig {
    /// At most 16 members per bucket and 64 evaluations.
    fn default() -> Self {
        Self {
            max_members: 16,
            max_candidates: 64,
        }
    }
}

/// One bucket of a fused graph.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Bucket {
    /// The names of the collectives merged, in program order of the original graph.
    pub members: Vec<String>,
    /// Bytes of the merged call (the members' sum).
    pub bytes: u64,
}

/// What [`fuse`] returns.
#[derive(Clone, Debug)]
pub struct Fused {
    /// The fused graph (a copy of the input when no bucket helped); it has passed
    /// [`check_fusion`].
    pub graph: Graph,
    /// `origin[i]` lists the original ops that op `i` of `graph` comes from: one for a copy,
    /// the members (in program order) for a bucket.
    pub origin: Vec<Vec<OpId>>,
    /// The buckets of `graph` (of at least 2 members), in its program order.
    pub buckets: Vec<Bucket>,
    /// Evaluated makespan of the input (ns).
    pub before_ns: u64,
    /// Evaluated makespan of `graph` (ns).
    pub after_ns: u64,
    /// Candidate graphs evaluated by the search.
    pub evaluations: usize,
}

/// The class of a collective: the ops of one bucket must share it.
type Class = (CollectiveKind, u32, LinkClass);

fn class(op: &Op) -> Option<Class> {
    match op.kind {
        OpKind::Collective {
            kind, group, link, ..
        } => Some((kind, group, link)),
        OpKind::Compute { .. } => None,
    }
}

fn class_str((kind, group, link): Class) -> String {
    format!("{} over {group} ranks, {}", kind.as_str(), link.as_str())
}

/// `` `name` (#i) `` of an op of `graph`, or `#i` when out of range.
fn describe(graph: &Graph, o: OpId) -> String {
    if o.0 < graph.len() {
        format!("`{}` (#{})", graph.op(o).name, o.0)
    } else {
        format!("#{} (out of range: the graph has {} ops)", o.0, graph.len())
    }
}

/// Merges each group of `members` into one bucket collective and copies every other op (see
/// the module docs). Returns the fused graph and, for each of its ops, the original ops it
/// comes from (one for a copy, the members in program order for a bucket). The result has
/// passed [`check_fusion`].
///
/// Errors: [`DecompError::InvalidContext`] when a group has fewer than 2 members, names an op
/// out of range, not a collective, or twice, when an op is in two groups, when the members of
/// a group differ in kind, group size or link class, when a member depends on another member
/// of its group, when buckets would depend on each other in a cycle, or when a bucket's bytes
/// overflow; [`DecompError::Graph`] when a new op is invalid; [`DecompError::CheckFailed`] on
/// a bug.
pub fn fuse_ops(
    graph: &Graph,
    members: &[Vec<OpId>],
) -> Result<(Graph, Vec<Vec<OpId>>), DecompError> {
    let invalid = |reason: String| DecompError::InvalidContext { reason };
    let n = graph.len();
    let name = |o: OpId| describe(graph, o);

    // Validate the groups; `group_of[o]` is the group of a member.
    let mut group_of: Vec<Option<usize>> = vec![None; n];
    let mut groups: Vec<Vec<OpId>> = Vec::with_capacity(members.len());
    for (gi, grp) in members.iter().enumerate() {
        if let Some(&o) = grp.iter().find(|o| o.0 >= n) {
            return Err(invalid(format!("bucket {gi} names op {}", name(o))));
        }
        let list = || grp.iter().map(|&o| name(o)).collect::<Vec<_>>().join(", ");
        if grp.len() < 2 {
            return Err(invalid(format!(
                "bucket {gi} has {} member(s) [{}]: at least 2 are needed",
                grp.len(),
                list()
            )));
        }
        let mut s = grp.clone();
        s.sort_unstable();
        if let Some(w) = s.windows(2).find(|w| w[0] == w[1]) {
            return Err(invalid(format!("bucket {gi} lists {} twice", name(w[0]))));
        }
        let Some(c0) = class(graph.op(s[0])) else {
            return Err(invalid(format!(
                "{} in bucket {gi} is not a collective",
                name(s[0])
            )));
        };
        for &o in &s {
            match class(graph.op(o)) {
                None => {
                    return Err(invalid(format!(
                        "{} in bucket {gi} is not a collective",
                        name(o)
                    )))
                }
                Some(c) if c != c0 => {
                    return Err(invalid(format!(
                        "bucket {gi} mixes {} ({}) and {} ({}): members must share kind, \
                         group size and link class",
                        name(s[0]),
                        class_str(c0),
                        name(o),
                        class_str(c)
                    )))
                }
                Some(_) => {}
            }
            if let Some(h) = group_of[o.0] {
                return Err(invalid(format!("{} is in buckets {h} and {gi}", name(o))));
            }
            group_of[o.0] = Some(gi);
        }
        groups.push(s);
    }

    // A member must not depend on another member of its group: one walk in program order
    // (a topological order) over the ops between the first and the last member, labelling
    // each op with a member that reaches it.
    let mut reached: Vec<Option<OpId>> = vec![None; n];
    for (gi, s) in groups.iter().enumerate() {
        let (lo, hi) = (s[0].0, s[s.len() - 1].0);
        let mut cycle = None;
        for x in lo..=hi {
            let from = graph
                .predecessors(OpId(x))
                .into_iter()
                .find_map(|p| reached[p.0]);
            if group_of[x] == Some(gi) {
                if let Some(m) = from {
                    cycle = Some((m, OpId(x)));
                    break;
                }
                reached[x] = Some(OpId(x));
            } else {
                reached[x] = from;
            }
        }
        reached[lo..=hi].fill(None);
        if let Some((a, b)) = cycle {
            return Err(invalid(format!(
                "{} depends on {} (through other ops): merging them would form a cycle",
                name(b),
                name(a)
            )));
        }
    }

    // The contracted graph: one node per copied op and per group (at its last member), in
    // program order of those positions.
    let mut node_of = vec![usize::MAX; n];
    let mut group_node = vec![usize::MAX; groups.len()];
    let mut nodes: Vec<Vec<OpId>> = Vec::with_capacity(n);
    for o in 0..n {
        match group_of[o] {
            None => {
                node_of[o] = nodes.len();
                nodes.push(vec![OpId(o)]);
            }
            Some(g) if groups[g][groups[g].len() - 1].0 == o => {
                group_node[g] = nodes.len();
                nodes.push(groups[g].clone());
            }
            Some(_) => {}
        }
    }
    for o in 0..n {
        if let Some(g) = group_of[o] {
            node_of[o] = group_node[g];
        }
    }
    let mut edges: Vec<(usize, usize)> = graph
        .dependencies()
        .into_iter()
        .map(|(p, c)| (node_of[p.0], node_of[c.0]))
        .filter(|(a, b)| a != b)
        .collect();
    edges.sort_unstable();
    edges.dedup();
    let mut succ: Vec<Vec<usize>> = vec![Vec::new(); nodes.len()];
    let mut indeg = vec![0usize; nodes.len()];
    for &(a, b) in &edges {
        succ[a].push(b);
        indeg[b] += 1;
    }
    // Stable Kahn: the ready node first in program order.
    let mut ready: BinaryHeap<Reverse<usize>> = (0..nodes.len())
        .filter(|&v| indeg[v] == 0)
        .map(Reverse)
        .collect();
    let mut order = Vec::with_capacity(nodes.len());
    while let Some(Reverse(v)) = ready.pop() {
        order.push(v);
        for &w in &succ[v] {
            indeg[w] -= 1;
            if indeg[w] == 0 {
                ready.push(Reverse(w));
            }
        }
    }
    if order.len() < nodes.len() {
        let stuck: Vec<String> = (0..nodes.len())
            .filter(|&v| indeg[v] > 0 && nodes[v].len() > 1)
            .map(|v| {
                let m: Vec<String> = nodes[v].iter().map(|&o| name(o)).collect();
                format!("[{}]", m.join(", "))
            })
            .collect();
        return Err(invalid(format!(
            "buckets {} would depend on each other in a cycle",
            stuck.join(" and ")
        )));
    }

    // Output offsets of members in their bucket.
    let mut offset = vec![0usize; n];
    for s in &groups {
        let mut k = 0;
        for &o in s {
            offset[o.0] = k;
            k += graph.op(o).outputs.len();
        }
    }
    let mut names: BTreeSet<String> = graph.ops().map(|o| o.name.clone()).collect();
    let mut new_id = vec![OpId(usize::MAX); nodes.len()];
    let mut b = GraphBuilder::new(graph.name());
    let read = |(p, t): (OpId, usize), new_id: &[OpId]| -> (OpId, usize) {
        let x = new_id[node_of[p.0]];
        match group_of[p.0] {
            None => (x, t),
            Some(_) if graph.op(p).outputs.is_empty() => (x, 0),
            Some(_) => (x, offset[p.0] + t),
        }
    };
    for &v in &order {
        let origin = &nodes[v];
        let (op, mut ins) = if let [o] = origin[..] {
            let ins: Vec<(OpId, usize)> = graph
                .inputs(o)
                .into_iter()
                .map(|e| read(e, &new_id))
                .collect();
            (graph.op(o).clone(), ins)
        } else {
            let (first, last) = (graph.op(origin[0]), graph.op(origin[origin.len() - 1]));
            let (kind, group, link) = class(first).expect("members are collectives");
            let mut bytes = 0u64;
            for &o in origin {
                let OpKind::Collective { bytes: x, .. } = graph.op(o).kind else {
                    unreachable!("members are collectives")
                };
                bytes = bytes.checked_add(x).ok_or_else(|| {
                    invalid(format!(
                        "the bucket of {} .. {} overflows 64-bit bytes",
                        name(origin[0]),
                        name(origin[origin.len() - 1])
                    ))
                })?;
            }
            let base = format!("bucket({}..{})", first.name, last.name);
            let mut unique = base.clone();
            let mut k = 2;
            while names.contains(&unique) {
                unique = format!("{base}#{k}");
                k += 1;
            }
            names.insert(unique.clone());
            let op = Op {
                name: unique,
                kind: OpKind::Collective {
                    kind,
                    bytes,
                    group,
                    link,
                },
                outputs: origin
                    .iter()
                    .flat_map(|&o| graph.op(o).outputs.iter().cloned())
                    .collect(),
                duration_ns: None,
            };
            let ins: Vec<(OpId, usize)> = origin
                .iter()
                .flat_map(|&o| graph.inputs(o))
                .map(|e| read(e, &new_id))
                .collect();
            (op, ins)
        };
        ins.sort_unstable();
        ins.dedup();
        new_id[v] = b.try_add(op, &ins)?;
    }
    let fused = b.finish();
    let origin: Vec<Vec<OpId>> = order.iter().map(|&v| nodes[v].clone()).collect();
    check_fusion(graph, &fused, &origin)?;
    Ok((fused, origin))
}

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
///   original producer and its consumer.
///
/// It shares no logic with [`fuse_ops`] (only the helper that names ops in messages). Cost:
/// O((ops + deps) log deps) of both graphs.
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

/// Chooses buckets for `graph` by evaluating schedules on `hardware` (see the module docs):
/// the returned graph has passed [`check_fusion`] and schedules no longer than the input.
///
/// Errors: those of [`fuse_ops`] other than an invalid group (a candidate that would form a
/// cycle closes the bucket instead), and of evaluating a graph.
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

#[cfg(test)]
mod tests {
    use super::*;
    use concerto_graph::{ComputeClass, DType, Tensor};

    const KIB8: u64 = 8 << 10;

    fn t() -> Tensor {
        Tensor::new(vec![4096], DType::Bf16)
    }

    fn ar(name: &str) -> Op {
        Op::collective(
            name,
            CollectiveKind::AllReduce,
            KIB8,
            8,
            LinkClass::IntraNode,
        )
        .with_output(t())
    }

    fn comp(name: &str) -> Op {
        Op::compute(name, ComputeClass::Elementwise, 1 << 20, 1 << 20).with_output(t())
    }

    /// `c0 ar0 u0 c1 ar1 u1 c2 ar2 u2 c3 ar3 u3 ag ar4g`: each `ci` reads `c(i-1)`, `ari` its
    /// own `ci`, `ui` reads `ari` (`u0` reads output 1 of `ar0`, which has two); `ag` is an
    /// all-gather and `ar4g` an all-reduce over 4 ranks, both reading `c3`.
    fn four() -> Graph {
        let mut b = GraphBuilder::new("four");
        let mut prev: Option<OpId> = None;
        for i in 0..4 {
            let ins: Vec<OpId> = prev.into_iter().collect();
            let c = b.add(comp(&format!("c{i}")), &ins);
            let mut a = ar(&format!("ar{i}"));
            if i == 0 {
                a = a.with_output(t());
            }
            let a = b.add(a, &[c]);
            let tensor = usize::from(i == 0);
            b.try_add(comp(&format!("u{i}")), &[(a, tensor)]).unwrap();
            prev = Some(c);
        }
        let c3 = b.op(OpId(9)).name.clone();
        assert_eq!(c3, "c3");
        b.add(
            Op::collective(
                "ag",
                CollectiveKind::AllGather,
                KIB8,
                8,
                LinkClass::IntraNode,
            )
            .with_output(t()),
            &[OpId(9)],
        );
        b.add(
            Op::collective(
                "ar4g",
                CollectiveKind::AllReduce,
                KIB8,
                4,
                LinkClass::IntraNode,
            )
            .with_output(t()),
            &[OpId(9)],
        );
        b.finish()
    }

    fn id(g: &Graph, name: &str) -> OpId {
        g.find(name).unwrap_or_else(|| panic!("no op {name}"))
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

    fn invalid(g: &Graph, groups: &[Vec<OpId>]) -> String {
        match fuse_ops(g, groups) {
            Err(e @ DecompError::InvalidContext { .. }) => e.to_string(),
            other => panic!("expected an invalid group, got {other:?}"),
        }
    }

    fn failure(original: &Graph, fused: &Graph, origin: &[Vec<OpId>]) -> String {
        match check_fusion(original, fused, origin) {
            Err(e @ DecompError::CheckFailed { .. }) => e.to_string(),
            other => panic!("expected a check failure, got {other:?}"),
        }
    }

    fn fused01() -> (Graph, Graph, Vec<Vec<OpId>>) {
        let g = four();
        let (f, origin) = fuse_ops(&g, &[vec![id(&g, "ar1"), id(&g, "ar0")]]).unwrap();
        (g, f, origin)
    }

    #[test]
    fn a_bucket_has_the_members_bytes_outputs_and_edges() {
        let (g, f, origin) = fused01();
        let names: Vec<&str> = f.ops().map(|o| o.name.as_str()).collect();
        // `u0` read `ar0`, so it moves after the bucket, which sits at `ar1`'s position.
        assert_eq!(
            names,
            [
                "c0",
                "c1",
                "bucket(ar0..ar1)",
                "u0",
                "u1",
                "c2",
                "ar2",
                "u2",
                "c3",
                "ar3",
                "u3",
                "ag",
                "ar4g"
            ]
        );
        assert_eq!(f.len(), g.len() - 1);
        let o = |n: &str| id(&g, n);
        assert_eq!(origin[2], vec![o("ar0"), o("ar1")]);
        assert_eq!(origin[3], vec![o("u0")]);
        assert_eq!(origin[0], vec![o("c0")]);
        let bucket = f.op(OpId(2));
        assert_eq!(
            bucket.kind,
            OpKind::Collective {
                kind: CollectiveKind::AllReduce,
                bytes: 2 * KIB8,
                group: 8,
                link: LinkClass::IntraNode
            }
        );
        // ar0's two outputs, then ar1's.
        assert_eq!(bucket.outputs, vec![t(), t(), t()]);
        assert_eq!(bucket.duration_ns, None);
        // The bucket reads both producers; u0 reads output 1 of ar0 (offset 0), u1 output 0
        // of ar1 (offset 2).
        let x = |n: &str| id(&f, n);
        assert_eq!(
            f.inputs(x("bucket(ar0..ar1)")),
            vec![(x("c0"), 0), (x("c1"), 0)]
        );
        assert_eq!(f.inputs(x("u0")), vec![(x("bucket(ar0..ar1)"), 1)]);
        assert_eq!(f.inputs(x("u1")), vec![(x("bucket(ar0..ar1)"), 2)]);
        assert_eq!(f.inputs(x("ar2")), vec![(x("c2"), 0)]);
        assert_eq!(f.inputs(x("c2")), vec![(x("c1"), 0)]);

        // Two buckets at once.
        let (f, origin) =
            fuse_ops(&g, &[vec![o("ar0"), o("ar1")], vec![o("ar2"), o("ar3")]]).unwrap();
        assert_eq!(f.len(), g.len() - 2);
        assert_eq!(origin.iter().filter(|e| e.len() == 2).count(), 2);
        assert!(f.find("bucket(ar2..ar3)").is_some());
    }

    #[test]
    fn a_taken_bucket_name_gets_a_suffix() {
        let mut b = GraphBuilder::new("taken");
        let a = b.add(ar("a"), &[]);
        let c = b.add(ar("c"), &[]);
        b.add(comp("bucket(a..c)"), &[a, c]);
        let g = b.finish();
        let (f, _) = fuse_ops(&g, &[vec![a, c]]).unwrap();
        assert!(f.find("bucket(a..c)#2").is_some());
        assert!(f.find("bucket(a..c)").is_some());
    }

    #[test]
    fn groups_mixing_kinds_or_groups_or_compute_are_rejected() {
        let g = four();
        let o = |n: &str| id(&g, n);
        let s = invalid(&g, &[vec![o("ar3"), o("ag")]]);
        assert!(
            s.contains("`ar3`") && s.contains("`ag`") && s.contains("mixes"),
            "{s}"
        );
        let s = invalid(&g, &[vec![o("ar3"), o("ar4g")]]);
        assert!(s.contains("`ar4g`") && s.contains("4 ranks"), "{s}");
        let s = invalid(&g, &[vec![o("ar0"), o("c1")]]);
        assert!(s.contains("`c1`") && s.contains("not a collective"), "{s}");
        let s = invalid(&g, &[vec![o("ar0")]]);
        assert!(s.contains("at least 2"), "{s}");
        let s = invalid(&g, &[vec![o("ar0"), o("ar0")]]);
        assert!(s.contains("`ar0`") && s.contains("twice"), "{s}");
        let s = invalid(&g, &[vec![o("ar0"), o("ar1")], vec![o("ar1"), o("ar2")]]);
        assert!(s.contains("`ar1`") && s.contains("buckets 0 and 1"), "{s}");
        let s = invalid(&g, &[vec![o("ar0"), OpId(99)]]);
        assert!(s.contains("#99"), "{s}");
    }

    #[test]
    fn a_group_that_would_form_a_cycle_is_rejected_naming_both() {
        // ar0 -> x -> ar1.
        let mut b = GraphBuilder::new("cycle");
        let c0 = b.add(comp("c0"), &[]);
        let ar0 = b.add(ar("ar0"), &[c0]);
        let x = b.add(comp("x"), &[ar0]);
        let ar1 = b.add(ar("ar1"), &[x]);
        let ar2 = b.add(ar("ar2"), &[c0]);
        let g = b.finish();
        let s = invalid(&g, &[vec![ar0, ar1]]);
        assert!(
            s.contains("`ar0` (#1)") && s.contains("`ar1` (#3)") && s.contains("cycle"),
            "{s}"
        );
        // With an unrelated third member as well.
        let s = invalid(&g, &[vec![ar0, ar2, ar1]]);
        assert!(s.contains("`ar0`") && s.contains("`ar1`"), "{s}");
        fuse_ops(&g, &[vec![ar0, ar2]]).unwrap();
        fuse_ops(&g, &[vec![ar1, ar2]]).unwrap();
    }

    #[test]
    fn buckets_that_would_depend_on_each_other_are_rejected() {
        // a1 -> x -> b2 and b1 -> y -> a2: each group alone is fine, both form a cycle.
        let mut b = GraphBuilder::new("two");
        let ag = |n: &str| {
            Op::collective(n, CollectiveKind::AllGather, KIB8, 8, LinkClass::IntraNode)
                .with_output(t())
        };
        let a1 = b.add(ar("a1"), &[]);
        let b1 = b.add(ag("b1"), &[]);
        let x = b.add(comp("x"), &[a1]);
        let y = b.add(comp("y"), &[b1]);
        let a2 = b.add(ar("a2"), &[y]);
        let b2 = b.add(ag("b2"), &[x]);
        let g = b.finish();
        fuse_ops(&g, &[vec![a1, a2]]).unwrap();
        fuse_ops(&g, &[vec![b1, b2]]).unwrap();
        let s = invalid(&g, &[vec![a1, a2], vec![b1, b2]]);
        assert!(
            s.contains("`a1`") && s.contains("`b2`") && s.contains("cycle"),
            "{s}"
        );
    }

    #[test]
    fn members_without_outputs_are_read_as_output_zero() {
        let mut b = GraphBuilder::new("bare");
        let s0 = Op::collective("s0", CollectiveKind::SendRecv, 64, 2, LinkClass::InterNode);
        let s0 = b.add(s0, &[]);
        let s1 = b.add(
            Op::collective("s1", CollectiveKind::SendRecv, 64, 2, LinkClass::InterNode)
                .with_output(t()),
            &[],
        );
        let r0 = b.add(comp("r0"), &[s0]);
        let r1 = b.add(comp("r1"), &[s1]);
        let g = b.finish();
        let (f, origin) = fuse_ops(&g, &[vec![s0, s1]]).unwrap();
        assert_eq!(origin[0], vec![s0, s1]);
        assert_eq!(f.op(OpId(0)).outputs, vec![t()]);
        assert_eq!(f.inputs(OpId(1)), vec![(OpId(0), 0)]);
        assert_eq!(f.inputs(OpId(2)), vec![(OpId(0), 0)]);
        assert_eq!(f.op(OpId(1)).name, g.op(r0).name);
        assert_eq!(f.op(OpId(2)).name, g.op(r1).name);
    }

    #[test]
    fn the_check_catches_a_removed_edge() {
        let (g, f, origin) = fused01();
        let u1 = id(&f, "u1");
        let broken = rebuild(&f, |x, _, ins| {
            if x == u1 {
                ins.clear();
            }
        });
        let s = failure(&g, &broken, &origin);
        assert!(
            s.contains("`ar1` (#4) -> `u1` (#5) is lost")
                && s.contains("no edge `bucket(ar0..ar1)` (#2) -> `u1` (#4) (output 2)"),
            "{s}"
        );
        // The wrong output index.
        let broken = rebuild(&f, |x, _, ins| {
            if x == u1 {
                ins[0].1 = 0;
            }
        });
        assert!(failure(&g, &broken, &origin).contains("(output 2)"));
        // A producer of a member the bucket no longer reads.
        let bucket = id(&f, "bucket(ar0..ar1)");
        let broken = rebuild(&f, |x, _, ins| {
            if x == bucket {
                ins.retain(|e| e.0 != OpId(1));
            }
        });
        let s = failure(&g, &broken, &origin);
        assert!(s.contains("`c1` (#3) -> `ar1` (#4) is lost"), "{s}");
        // An invented dependency.
        let ar2 = id(&f, "ar2");
        let broken = rebuild(&f, |x, _, ins| {
            if x == ar2 {
                ins.push((OpId(0), 0));
            }
        });
        let s = failure(&g, &broken, &origin);
        assert!(
            s.contains("`c0` (#0) -> `ar2` (#6)") && s.contains("no original"),
            "{s}"
        );
    }

    #[test]
    fn the_check_catches_wrong_bytes_outputs_and_copies() {
        let (g, f, origin) = fused01();
        let bucket = id(&f, "bucket(ar0..ar1)");
        let broken = rebuild(&f, |x, op, _| {
            if x == bucket {
                if let OpKind::Collective { bytes, .. } = &mut op.kind {
                    *bytes += 1;
                }
            }
        });
        let s = failure(&g, &broken, &origin);
        assert!(
            s.contains("`bucket(ar0..ar1)` (#2) moves 16385 bytes"),
            "{s}"
        );
        let broken = rebuild(&f, |x, op, _| {
            if x == bucket {
                op.duration_ns = Some(10);
            }
        });
        assert!(failure(&g, &broken, &origin).contains("duration override"));
        let broken = rebuild(&f, |x, op, _| {
            if x == OpId(0) {
                op.name = "c0'".into();
            }
        });
        let s = failure(&g, &broken, &origin);
        assert!(
            s.contains("`c0'`") && s.contains("`c0` (#0)") && s.contains("name"),
            "{s}"
        );
        // A member of another kind.
        let ar1 = id(&g, "ar1");
        let other = rebuild(&g, |x, op, _| {
            if x == ar1 {
                if let OpKind::Collective { kind, .. } = &mut op.kind {
                    *kind = CollectiveKind::AllGather;
                }
            }
        });
        let s = failure(&other, &f, &origin);
        assert!(
            s.contains("`ar1` (#4) in the bucket `bucket(ar0..ar1)`"),
            "{s}"
        );
    }

    #[test]
    fn the_check_catches_a_duplicated_or_missing_member() {
        let (g, f, origin) = fused01();
        // ar1 listed in the bucket and as the origin of u1 as well.
        let mut o = origin.clone();
        o[4] = vec![id(&g, "ar1")];
        let s = failure(&g, &f, &o);
        assert!(s.contains("`ar1` (#4) appears twice"), "{s}");
        let mut o = origin.clone();
        o[2] = vec![id(&g, "ar0"), id(&g, "ar0")];
        let s = failure(&g, &f, &o);
        assert!(s.contains("`ar0` (#1) appears twice"), "{s}");
        let mut o = origin.clone();
        o[2] = vec![id(&g, "ar0")];
        let s = failure(&g, &f, &o);
        assert!(s.contains("`ar1` (#4) is in no origin entry"), "{s}");
        let mut o = origin.clone();
        o[2].reverse();
        assert!(failure(&g, &f, &o).contains("not in program order"));
        let mut o = origin;
        o.pop();
        assert!(failure(&g, &f, &o).contains("12 origin entries"));
    }

    #[test]
    fn fuse_merges_small_all_reduces_and_never_lengthens() {
        let g = four();
        let hw = Hardware::h100();
        let f = fuse(&g, &hw, &FuseConfig::default()).unwrap();
        assert!(f.after_ns <= f.before_ns);
        check_fusion(&g, &f.graph, &f.origin).unwrap();
        assert_eq!(evaluate(&f.graph, &hw).unwrap().0, f.after_ns);
        assert!(!f.buckets.is_empty(), "{f:?}");
        assert!(f.after_ns < f.before_ns);
        for b in &f.buckets {
            assert!(b.members.len() >= 2);
            assert_eq!(b.bytes, KIB8 * b.members.len() as u64);
        }
        // No evaluation budget: nothing changes.
        let none = fuse(
            &g,
            &hw,
            &FuseConfig {
                max_candidates: 0,
                ..FuseConfig::default()
            },
        )
        .unwrap();
        assert_eq!((none.after_ns, none.evaluations), (none.before_ns, 0));
        assert!(none.buckets.is_empty());
        assert_eq!(none.graph.len(), g.len());
    }
}
