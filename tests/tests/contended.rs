//! The contended window model against the contended simulator: on random small training-step
//! windows, every plan the simulator runs is a schedule of the contended problem with the
//! same makespan, and the exact model (the contended time-indexed MILP) finds the best plan
//! found by enumerating every plan, never more.

use concerto_backends::milp::{Backend, Milp};
use concerto_graph::lower::{lower_contended, schedule_of};
use concerto_graph::{
    simulate, CollectiveKind, ComputeClass, Graph, GraphBuilder, LinkClass, Op, OpId, StreamPlan,
};
use concerto_rcpsp::{check_contended, ContendedProblem, Limits, Status};
use proptest::prelude::*;

/// A random window of 3 to 5 ops: each reads up to 2 earlier ops; about two in five are
/// collectives on one of two link classes; durations 1 to 5 ns.
fn windows() -> impl Strategy<Value = Graph> {
    (3usize..=5).prop_flat_map(|len| {
        prop::collection::vec(
            (
                0u8..5,
                any::<bool>(),
                1u64..=5,
                prop::collection::vec(any::<prop::sample::Index>(), 0..=2),
            ),
            len,
        )
        .prop_map(|spec| {
            let mut b = GraphBuilder::new("window");
            for (i, (kind, inter, d, inputs)) in spec.into_iter().enumerate() {
                let mut op = if kind < 2 {
                    let link = if inter {
                        LinkClass::InterNode
                    } else {
                        LinkClass::IntraNode
                    };
                    Op::collective(format!("c{i}"), CollectiveKind::AllReduce, 64, 8, link)
                } else {
                    Op::compute(format!("k{i}"), ComputeClass::Other, 0, 0)
                };
                op.duration_ns = Some(d);
                let mut ins: Vec<OpId> = if i == 0 {
                    vec![]
                } else {
                    inputs.iter().map(|x| OpId(x.index(i))).collect()
                };
                ins.sort_unstable();
                ins.dedup();
                b.add(op, &ins);
            }
            b.finish()
        })
    })
}

/// Every topological order of `graph` (each plan's stream orders come from one).
fn orders(graph: &Graph) -> Vec<Vec<OpId>> {
    fn extend(graph: &Graph, order: &mut Vec<OpId>, placed: &mut [bool], out: &mut Vec<Vec<OpId>>) {
        if order.len() == graph.len() {
            out.push(order.clone());
            return;
        }
        for o in graph.ids() {
            if !placed[o.0] && graph.predecessors(o).iter().all(|p| placed[p.0]) {
                placed[o.0] = true;
                order.push(o);
                extend(graph, order, placed, out);
                order.pop();
                placed[o.0] = false;
            }
        }
    }
    let mut out = Vec::new();
    extend(
        graph,
        &mut Vec::new(),
        &mut vec![false; graph.len()],
        &mut out,
    );
    out
}

fn durations(graph: &Graph) -> Vec<u64> {
    graph.ops().map(|op| op.duration_ns.expect("set")).collect()
}

/// Every plan's simulated makespan and the best of them over the stream orders alone (the
/// waits the graph's dependencies need).
fn plans(graph: &Graph, problem: &ContendedProblem, contention: f64) -> u64 {
    let d = durations(graph);
    let mut best = u64::MAX;
    for order in orders(graph) {
        let plan = StreamPlan::from_order(graph, &order).expect("a topological order");
        let t = simulate(graph, &plan, &d, contention).expect("simulates");
        // The simulator and the contended problem agree on what the plan takes.
        assert_eq!(
            check_contended(problem, &schedule_of(&t)),
            Ok(t.makespan as i64),
            "{order:?}"
        );
        best = best.min(t.makespan);
    }
    best
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// The contended model's optimum is the simulator's best plan: every plan's timeline is a
    /// schedule of the model (so none is shorter), and the model's schedule, as a plan with
    /// waits at its starts, simulates to exactly that schedule. Enumerating every stream order
    /// finds no plan shorter than the model, and sometimes none as short: the model holds a
    /// collective back with a wait where the orders alone launch it early.
    #[test]
    fn the_model_is_the_best_plan_the_simulator_runs(
        g in windows(),
        contention in prop_oneof![Just(1.5), Just(2.0), Just(3.0)],
    ) {
        let d = durations(&g);
        let p = lower_contended(&g, &d, contention).expect("lowers");
        let by_orders = plans(&g, &p, contention);
        let o = Milp::new(Backend::Microlp).solve_contended(&p, &Limits::default()).expect("solves");
        prop_assert_eq!(o.status, Status::Optimal);
        let m = o.makespan.expect("a schedule") as u64;
        prop_assert!(m <= by_orders, "model {} above the plan {}", m, by_orders);
        let s = o.schedule.expect("a schedule");
        let starts: Vec<u64> = s.starts().iter().map(|&t| t as u64).collect();
        let ends: Vec<u64> = p.ends(s.starts()).expect("fits").iter().map(|&t| t as u64).collect();
        let plan = StreamPlan::from_timed(&g, &starts, &ends).expect("a plan");
        let t = simulate(&g, &plan, &d, contention).expect("simulates");
        prop_assert_eq!(&t.start, &starts);
        prop_assert_eq!(t.makespan, m);
    }
}
