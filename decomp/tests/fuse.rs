//! Collective fusion: on a ZeRO-3 GPT step the search keeps only buckets that shorten the
//! evaluated makespan, and its graph passes the independent check; on random graphs, every
//! valid grouping fuses and passes the check, every invalid one is an error (never a panic),
//! and both graphs schedule.

use concerto_decomp::fuse::{check_fusion, fuse, fuse_ops, fuse_under, mapped_order, FuseConfig};
use concerto_decomp::select::evaluate;
use concerto_decomp::DecompError;
use concerto_graph::{
    baselines, simulate, CollectiveKind, ComputeClass, DType, Graph, GraphBuilder, Hardware,
    LinkClass, Op, OpId, OpKind, StreamPlan, Tensor,
};
use concerto_models::{build, GptConfig, Model, Parallel, Zero};
use proptest::prelude::*;

fn zero3_gpt(dp: u32) -> Graph {
    let model = Model::Gpt(GptConfig {
        layers: 4,
        hidden: 1024,
        heads: 16,
        ..GptConfig::default()
    });
    let parallel = Parallel {
        dp,
        zero: Zero::Stage3,
        ..Parallel::default()
    };
    build(&model, &parallel).expect("a ZeRO-3 GPT builds")
}

fn collective_bytes(g: &Graph) -> u64 {
    g.ops()
        .map(|o| match o.kind {
            OpKind::Collective { bytes, .. } => bytes,
            OpKind::Compute { .. } => 0,
        })
        .sum()
}

#[test]
fn zero3_gpt_buckets_shorten_the_step_and_pass_the_check() {
    let hw = Hardware::h100();
    for dp in [8, 16, 32] {
        let g = zero3_gpt(dp);
        let f = fuse(&g, &hw, &FuseConfig::default()).unwrap();
        println!(
            "dp {dp}: {} collectives, makespan {} -> {} ns ({:+.2}%), {} buckets, {} evaluations",
            g.collective_count(),
            f.before_ns,
            f.after_ns,
            100.0 * (f.after_ns as f64 / f.before_ns as f64 - 1.0),
            f.buckets.len(),
            f.evaluations
        );
        for b in &f.buckets {
            println!("  {} bytes: {}", b.bytes, b.members.join(", "));
        }
        assert!(f.after_ns <= f.before_ns, "dp {dp}");
        assert_eq!(f.before_ns, evaluate(&g, &hw).unwrap().0);
        assert_eq!(f.after_ns, evaluate(&f.graph, &hw).unwrap().0);
        assert!(f.evaluations <= FuseConfig::default().max_candidates);
        check_fusion(&g, &f.graph, &f.origin).unwrap();
        // Every bucket of the result, re-fused alone from the input, passes the check too.
        let merged: usize = f.buckets.iter().map(|b| b.members.len()).sum();
        assert_eq!(f.graph.len(), g.len() - merged + f.buckets.len());
        assert_eq!(collective_bytes(&f.graph), collective_bytes(&g));
        for b in &f.buckets {
            assert!(b.members.len() >= 2 && b.members.len() <= 16);
            let ids: Vec<OpId> = b.members.iter().map(|m| g.find(m).unwrap()).collect();
            let (one, origin) = fuse_ops(&g, &[ids]).unwrap();
            check_fusion(&g, &one, &origin).unwrap();
        }
        // On this graph small buckets pay: the search finds some.
        assert!(!f.buckets.is_empty() && f.after_ns < f.before_ns, "dp {dp}");
    }
}

/// The order of `timeline`'s ops by start (ties by id).
fn order_of(g: &Graph, timeline: &concerto_graph::Timeline) -> Vec<OpId> {
    let mut order: Vec<OpId> = g.ids().collect();
    order.sort_by_key(|o| (timeline.start[o.0], o.0));
    order
}

/// Whether `order` is a permutation of `g`'s ops with every producer before its consumers.
fn is_topological(g: &Graph, order: &[OpId]) -> bool {
    let mut pos = vec![usize::MAX; g.len()];
    for (i, o) in order.iter().enumerate() {
        if pos[o.0] != usize::MAX {
            return false;
        }
        pos[o.0] = i;
    }
    pos.iter().all(|&p| p != usize::MAX)
        && g.dependencies()
            .into_iter()
            .all(|(p, c)| pos[p.0] < pos[c.0])
}

#[test]
fn fusion_under_a_plan_keeps_its_order_and_never_lengthens_it() {
    let hw = Hardware::h100();
    for dp in [8, 16, 32] {
        let g = zero3_gpt(dp);
        let d = hw.durations(&g);
        // The plan to fuse under: LHS's (any valid plan works; the CLI uses concerto's).
        let plan = baselines::lhs(&g, &d).unwrap();
        let t = simulate(&g, &plan, &d, hw.contention).unwrap();
        let f = fuse_under(&g, &hw, &t, &FuseConfig::default()).unwrap();
        check_fusion(&g, &f.graph, &f.origin).unwrap();
        let order = order_of(&g, &t);
        // The unfused graph keeps the timeline's order exactly: the judge's "before" is the
        // plan replayed.
        let same = mapped_order(&g, &g.ids().map(|o| vec![o]).collect::<Vec<_>>(), &order).unwrap();
        assert_eq!(same, order);
        let replayed = StreamPlan::from_order(&g, &same).unwrap();
        assert_eq!(
            f.before_ns,
            simulate(&g, &replayed, &d, hw.contention).unwrap().makespan
        );
        // The fused graph's mapped order is topological and simulates to `after_ns`.
        let mapped = mapped_order(&f.graph, &f.origin, &order).unwrap();
        assert!(is_topological(&f.graph, &mapped), "dp {dp}");
        let fused_plan = StreamPlan::from_order(&f.graph, &mapped).unwrap();
        let fd = hw.durations(&f.graph);
        let after = simulate(&f.graph, &fused_plan, &fd, hw.contention).unwrap();
        assert_eq!(after.makespan, f.after_ns, "dp {dp}");
        assert!(f.after_ns <= f.before_ns, "dp {dp}");
    }
}

#[test]
fn mapped_order_rejects_orders_that_are_not_permutations() {
    let g = zero3_gpt(8);
    let identity: Vec<Vec<OpId>> = g.ids().map(|o| vec![o]).collect();
    let mut order: Vec<OpId> = g.ids().collect();
    order[1] = order[0];
    let e = mapped_order(&g, &identity, &order).unwrap_err();
    assert!(e.to_string().contains("twice or out of range"), "{e}");
    let short: Vec<OpId> = g.ids().skip(1).collect();
    let e = mapped_order(&g, &identity, &short).unwrap_err();
    let expect = format!(
        "the order has {} ops, the original graph {}",
        g.len() - 1,
        g.len()
    );
    assert!(e.to_string().contains(&expect), "{e}");
    let e = mapped_order(&g, &identity[1..], &order).unwrap_err();
    assert!(e.to_string().contains("origins for a fused graph"), "{e}");
    let mut gap = identity.clone();
    gap[0] = vec![OpId(g.len() + 5)];
    let all: Vec<OpId> = g.ids().collect();
    let e = mapped_order(&g, &gap, &all).unwrap_err();
    assert!(
        e.to_string().contains("comes from no op of the order"),
        "{e}"
    );
    let mut t = simulate(
        &g,
        &StreamPlan::program_order(&g).unwrap(),
        &Hardware::h100().durations(&g),
        1.0,
    )
    .unwrap();
    t.start.pop();
    let e = fuse_under(&g, &Hardware::h100(), &t, &FuseConfig::default()).unwrap_err();
    assert!(e.to_string().contains("the timeline has"), "{e}");
}

/// One op of a random graph: a selector (0..2 the first collective class, 2 and 3 the others,
/// 4.. compute), bytes, outputs (0..=2), and inputs as (producer, output) picks among earlier
/// ops.
type OpSpec = (u8, u64, u8, Vec<(prop::sample::Index, prop::sample::Index)>);

const CLASSES: [(CollectiveKind, u32, LinkClass); 3] = [
    (CollectiveKind::AllReduce, 8, LinkClass::IntraNode),
    (CollectiveKind::AllReduce, 16, LinkClass::InterNode),
    (CollectiveKind::AllGather, 8, LinkClass::IntraNode),
];

fn op_specs() -> impl Strategy<Value = OpSpec> {
    (
        0u8..8,
        1u64..=64 << 10,
        0u8..=2,
        prop::collection::vec(
            (any::<prop::sample::Index>(), any::<prop::sample::Index>()),
            0..=3,
        ),
    )
}

fn random_graph(spec: Vec<OpSpec>) -> Graph {
    let mut b = GraphBuilder::new("random");
    for (i, (kind, bytes, outputs, inputs)) in spec.into_iter().enumerate() {
        let class = [0, 0, 1, 2].get(usize::from(kind)).map(|&c| CLASSES[c]);
        let mut op = match class {
            Some((k, group, link)) => Op::collective(format!("c{i}"), k, bytes, group, link),
            None => Op::compute(format!("k{i}"), ComputeClass::Elementwise, bytes, bytes),
        };
        for _ in 0..outputs {
            op.outputs
                .push(Tensor::new(vec![bytes.div_ceil(2)], DType::Bf16));
        }
        let mut ins: Vec<(OpId, usize)> = if i == 0 {
            vec![]
        } else {
            inputs
                .iter()
                .map(|(p, t)| {
                    let p = p.index(i);
                    (OpId(p), t.index(b.op(OpId(p)).outputs.len().max(1)))
                })
                .collect()
        };
        ins.sort_unstable();
        ins.dedup();
        b.try_add(op, &ins).expect("valid random op");
    }
    b.finish()
}

/// Whether `groups` is a valid fusion of `g`, decided apart from `fuse_ops`: at least 2
/// members each, in range, collectives of one class, no op twice, and the graph with each
/// group contracted to one node acyclic (a transitive closure).
fn valid(g: &Graph, groups: &[Vec<OpId>]) -> bool {
    let n = g.len();
    let mut node: Vec<usize> = (0..n).collect();
    let mut seen = vec![false; n];
    for grp in groups {
        if grp.len() < 2 || grp.iter().any(|o| o.0 >= n) {
            return false;
        }
        let class = |o: OpId| match g.op(o).kind {
            OpKind::Collective {
                kind, group, link, ..
            } => Some((kind, group, link)),
            OpKind::Compute { .. } => None,
        };
        if class(grp[0]).is_none() || grp.iter().any(|&o| class(o) != class(grp[0])) {
            return false;
        }
        for &o in grp {
            if seen[o.0] {
                return false;
            }
            seen[o.0] = true;
            node[o.0] = grp[0].0;
        }
    }
    let mut reach = vec![vec![false; n]; n];
    for (p, c) in g.dependencies() {
        reach[node[p.0]][node[c.0]] = true;
    }
    for k in 0..n {
        let via = reach[k].clone();
        for row in reach.iter_mut().filter(|row| row[k]) {
            for (r, &v) in row.iter_mut().zip(&via) {
                *r |= v;
            }
        }
    }
    (0..n).all(|v| !reach[v][v])
}

/// A random graph of 2..=24 ops, a grouping of its collectives by class (each collective
/// gets a label, 1 or 2, or none (a quarter of them); each class and label of at least 2
/// members is a group), and an arbitrary grouping (random op lists, mostly invalid).
fn cases() -> impl Strategy<Value = (Graph, Vec<Vec<OpId>>, Vec<Vec<OpId>>)> {
    (2usize..=24).prop_flat_map(|len| {
        (
            prop::collection::vec(op_specs(), len),
            prop::collection::vec(0u8..4, len),
            prop::collection::vec(prop::collection::vec(0usize..len + 2, 0..=4), 0..=3),
        )
            .prop_map(|(spec, labels, arbitrary)| {
                let g = random_graph(spec);
                let mut by_class: Vec<((u8, u8), Vec<OpId>)> = Vec::new();
                for o in g.ids() {
                    let OpKind::Collective { kind, group, .. } = g.op(o).kind else {
                        continue;
                    };
                    if labels[o.0] == 0 {
                        continue;
                    }
                    let class = CLASSES
                        .iter()
                        .position(|c| (c.0, c.1) == (kind, group))
                        .expect("a class of the generator") as u8;
                    let key = (class, labels[o.0].div_ceil(2));
                    match by_class.iter_mut().find(|(k, _)| *k == key) {
                        Some((_, v)) => v.push(o),
                        None => by_class.push((key, vec![o])),
                    }
                }
                let grouped = by_class
                    .into_iter()
                    .map(|(_, v)| v)
                    .filter(|v| v.len() >= 2)
                    .collect();
                let arbitrary = arbitrary
                    .into_iter()
                    .map(|v| v.into_iter().map(OpId).collect())
                    .collect();
                (g, grouped, arbitrary)
            })
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn random_groupings_fuse_exactly_when_valid((g, grouped, arbitrary) in cases()) {
        let hw = Hardware::h100();
        let (before, _) = evaluate(&g, &hw).expect("the input schedules");
        prop_assert!(before > 0);
        // The groups of `grouped` that keep the grouping valid, taken greedily (by the
        // oracle, so a valid grouping is tried in most cases).
        let mut kept: Vec<Vec<OpId>> = Vec::new();
        for grp in &grouped {
            kept.push(grp.clone());
            if !valid(&g, &kept) {
                kept.pop();
            }
        }
        for groups in [&grouped, &kept, &arbitrary] {
            let ok = valid(&g, groups);
            match fuse_ops(&g, groups) {
                Ok((f, origin)) => {
                    prop_assert!(ok, "fused an invalid grouping {groups:?}");
                    check_fusion(&g, &f, &origin).expect("a fusion passes the check");
                    let merged: usize = groups.iter().map(Vec::len).sum();
                    prop_assert_eq!(f.len(), g.len() - merged + groups.len());
                    prop_assert_eq!(origin.len(), f.len());
                    prop_assert_eq!(collective_bytes(&f), collective_bytes(&g));
                    prop_assert_eq!(
                        f.collective_count(),
                        g.collective_count() - merged + groups.len()
                    );
                    let (after, _) = evaluate(&f, &hw).expect("the fused graph schedules");
                    prop_assert!(after > 0);
                    // A graph of copies only is the input, op for op.
                    if groups.is_empty() {
                        prop_assert_eq!(f.to_json(), g.to_json());
                    }
                }
                Err(DecompError::InvalidContext { reason }) => {
                    prop_assert!(!ok, "rejected a valid grouping {groups:?}: {reason}");
                }
                Err(e) => prop_assert!(false, "unexpected error {e}"),
            }
        }
        // The search never lengthens the step, and its graph passes the check.
        let config = FuseConfig { max_members: 4, max_candidates: 12 };
        let f = fuse(&g, &hw, &config).expect("the search runs");
        prop_assert_eq!(f.before_ns, before);
        prop_assert!(f.after_ns <= f.before_ns);
        prop_assert!(f.evaluations <= 12);
        prop_assert!(f.buckets.iter().all(|b| (2..=4).contains(&b.members.len())));
        check_fusion(&g, &f.graph, &f.origin).expect("the search's graph passes the check");
    }
}
