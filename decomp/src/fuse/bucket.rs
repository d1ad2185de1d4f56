//! The fusion rewrite: each group of collectives becomes one bucket op.

use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap};

use concerto_graph::{Graph, GraphBuilder, Op, OpId, OpKind};

use super::{check_fusion, class, class_str, describe};
use crate::error::DecompError;

/// Merges each group of `members` into one bucket collective and copies every other op (see
/// the module docs). Returns the fused graph and, for each of its ops, the original ops it
/// comes from (one for a copy, the members in program order for a bucket). The fused graph
/// keeps the source's resident bytes, and a bucket is a step output ([`Op::live_out`]) when
/// any of its members is (its buffer holds them all). The result has passed [`check_fusion`].
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
    let (group_of, groups) = validate_groups(graph, members)?;
    check_members_independent(graph, &group_of, &groups)?;
    let (nodes, node_of) = contract(graph.len(), &group_of, &groups);
    let order = contracted_order(graph, &nodes, &node_of)?;
    let offset = member_offsets(graph, &groups);
    let mut names: BTreeSet<String> = graph.ops().map(|o| o.name.clone()).collect();
    let mut new_id = vec![OpId(usize::MAX); nodes.len()];
    let mut b = GraphBuilder::new(graph.name());
    b.set_resident_bytes(graph.resident_bytes());
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
            let op = bucket_op(graph, origin, &mut names)?;
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

/// Each op's group, `None` when it is in none.
type GroupOf = Vec<Option<usize>>;

/// [`DecompError::InvalidContext`] for `reason`.
fn invalid(reason: String) -> DecompError {
    DecompError::InvalidContext { reason }
}

/// Validates the groups: at least 2 members each, in range, collectives of one class, no op
/// twice. Returns each op's group (for a member) and each group's members, sorted.
fn validate_groups(
    graph: &Graph,
    members: &[Vec<OpId>],
) -> Result<(GroupOf, Vec<Vec<OpId>>), DecompError> {
    let n = graph.len();
    let name = |o: OpId| describe(graph, o);
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
    Ok((group_of, groups))
}

/// Errors when a member depends on another member of its group: one walk in program order
/// (a topological order) over the ops between the first and the last member, labelling each
/// op with a member that reaches it.
fn check_members_independent(
    graph: &Graph,
    group_of: &[Option<usize>],
    groups: &[Vec<OpId>],
) -> Result<(), DecompError> {
    let mut reached: Vec<Option<OpId>> = vec![None; graph.len()];
    for (gi, s) in groups.iter().enumerate() {
        let (lo, hi) = (s[0].0, s[s.len() - 1].0);
        let mut cycle = None;
        for x in lo..=hi {
            let from = graph
                .predecessors(OpId(x))
                .iter()
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
                describe(graph, b),
                describe(graph, a)
            )));
        }
    }
    Ok(())
}

/// The contracted graph's nodes: one per copied op and per group (at its last member), in
/// program order of those positions; and each op's node.
fn contract(
    n: usize,
    group_of: &[Option<usize>],
    groups: &[Vec<OpId>],
) -> (Vec<Vec<OpId>>, Vec<usize>) {
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
    (nodes, node_of)
}

/// The contracted graph's nodes in a stable topological order (the ready node first in
/// program order); errors naming the buckets when they would depend on each other in a
/// cycle.
fn contracted_order(
    graph: &Graph,
    nodes: &[Vec<OpId>],
    node_of: &[usize],
) -> Result<Vec<usize>, DecompError> {
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
                let m: Vec<String> = nodes[v].iter().map(|&o| describe(graph, o)).collect();
                format!("[{}]", m.join(", "))
            })
            .collect();
        return Err(invalid(format!(
            "buckets {} would depend on each other in a cycle",
            stuck.join(" and ")
        )));
    }
    Ok(order)
}

/// The output offset of each member in its bucket.
fn member_offsets(graph: &Graph, groups: &[Vec<OpId>]) -> Vec<usize> {
    let mut offset = vec![0usize; graph.len()];
    for s in groups {
        let mut k = 0;
        for &o in s {
            offset[o.0] = k;
            k += graph.op(o).outputs.len();
        }
    }
    offset
}

/// The bucket op of the members `origin`: their class, summed bytes, concatenated outputs,
/// live_out when any member is, under a name not in `names` (added to it). Errors when the
/// bytes overflow.
fn bucket_op(
    graph: &Graph,
    origin: &[OpId],
    names: &mut BTreeSet<String>,
) -> Result<Op, DecompError> {
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
                describe(graph, origin[0]),
                describe(graph, origin[origin.len() - 1])
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
    Ok(Op {
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
        operand_dtype: None,
        live_out: origin.iter().any(|&o| graph.op(o).live_out),
        release_ns: 0,
        lane: 0,
    })
}
