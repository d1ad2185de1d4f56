//! Random graphs and random decomposition contexts: every rewrite succeeds and passes the
//! independent check, both graphs simulate, and the rewritten graph round-trips through the
//! native JSON format.

use concerto_decomp::rewrite::{check, rewrite};
use concerto_decomp::{Axis, Context, Family};
use concerto_graph::{
    baselines, simulate, CollectiveKind, ComputeClass, DType, GemmShape, Graph, GraphBuilder,
    Hardware, LinkClass, Op, OpId, OpKind, Tensor,
};
use proptest::prelude::*;

/// One op of a random graph: kind selector, flops, bytes, GEMM rows, whether it has a second
/// output, and inputs as (producer, output) picks among earlier ops.
type OpSpec = (
    u8,
    u64,
    u64,
    u64,
    bool,
    Vec<(prop::sample::Index, prop::sample::Index)>,
);

fn op_specs() -> impl Strategy<Value = OpSpec> {
    (
        0u8..6,
        0u64..=1 << 30,
        0u64..=1 << 26,
        1u64..=4096,
        any::<bool>(),
        prop::collection::vec(
            (any::<prop::sample::Index>(), any::<prop::sample::Index>()),
            0..=3,
        ),
    )
}

/// A random DAG of 2..=30 ops, about a third collectives (at least one, at `forced`),
/// with a random context: a random collective, a random subset of the other ops, and
/// `n` in {2, 3, 4, 8}.
fn cases() -> impl Strategy<Value = (Graph, Context)> {
    (2usize..=30).prop_flat_map(|len| {
        (
            prop::collection::vec(op_specs(), len),
            any::<prop::sample::Index>(),
            any::<prop::sample::Index>(),
            prop::collection::vec(any::<bool>(), len),
            prop::sample::select(vec![2u32, 3, 4, 8]),
        )
            .prop_map(|(spec, forced, pick, members, n)| {
                let forced = forced.index(spec.len());
                let mut b = GraphBuilder::new("random");
                for (i, (kind, flops, bytes, m, two, inputs)) in spec.into_iter().enumerate() {
                    let t = Tensor::new(vec![m, 64], DType::Bf16);
                    let mut op = if kind < 2 || i == forced {
                        let link = if kind == 1 {
                            LinkClass::InterNode
                        } else {
                            LinkClass::IntraNode
                        };
                        Op::collective(format!("c{i}"), CollectiveKind::AllReduce, bytes, 8, link)
                    } else if kind == 2 {
                        let shape = GemmShape {
                            b: 1,
                            m,
                            n: 64,
                            k: 64,
                        };
                        let mut op = Op::gemm(format!("g{i}"), shape, DType::Bf16);
                        op.outputs.clear();
                        op
                    } else {
                        let class = [
                            ComputeClass::Elementwise,
                            ComputeClass::Norm,
                            ComputeClass::Other,
                        ][usize::from(kind - 3)];
                        Op::compute(format!("k{i}"), class, flops, bytes)
                    };
                    op.outputs.push(t.clone());
                    if two {
                        op.outputs.push(t);
                    }
                    let mut ins: Vec<(OpId, usize)> = if i == 0 {
                        vec![]
                    } else {
                        inputs
                            .iter()
                            .map(|(p, t)| {
                                let p = p.index(i);
                                (OpId(p), t.index(b.op(OpId(p)).outputs.len()))
                            })
                            .collect()
                    };
                    ins.sort_unstable();
                    ins.dedup();
                    b.try_add(op, &ins).expect("valid random op");
                }
                let g = b.finish();
                let collectives: Vec<OpId> = g.ids().filter(|o| g.op(*o).is_collective()).collect();
                let collective = collectives[pick.index(collectives.len())];
                let ops: Vec<OpId> = g
                    .ids()
                    .filter(|o| *o == collective || members[o.0])
                    .collect();
                let ctx = Context {
                    collective,
                    axis: Axis::Rows,
                    ops,
                    n,
                    family: Family::Split,
                };
                (g, ctx)
            })
    })
}

/// Divides flops and bytes by `n` with the remainder on chunk 0, and a GEMM's rows by `n`
/// rounding up.
fn chunk(n: u32) -> impl Fn(&Op, u32) -> Op {
    move |op, i| {
        let n = u64::from(n);
        let div = |x: u64| x / n + if i == 0 { x % n } else { 0 };
        let mut c = op.clone();
        match &mut c.kind {
            OpKind::Compute {
                flops, bytes, gemm, ..
            } => {
                *flops = div(*flops);
                *bytes = div(*bytes);
                if let Some(g) = gemm {
                    g.m = g.m.div_ceil(n);
                }
            }
            OpKind::Collective { bytes, .. } => *bytes = div(*bytes),
        }
        c
    }
}

fn makespan(g: &Graph, hw: &Hardware) -> u64 {
    let d = hw.durations(g);
    let plan = baselines::program_order(g).expect("program order is a valid plan");
    simulate(g, &plan, &d, hw.contention)
        .expect("a valid plan simulates")
        .makespan
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn random_rewrites_pass_the_check_and_simulate((g, ctx) in cases()) {
        let split = chunk(ctx.n);
        let r = rewrite(&g, &ctx, &split).expect("a valid context rewrites");
        check(&g, &r).expect("a rewrite passes the check");
        let k = ctx.ops.len();
        prop_assert!(r.graph.len() >= g.len() - k + k * ctx.n as usize);
        prop_assert!(r.graph.len() <= g.len() - k + k * (ctx.n as usize + 1));
        prop_assert_eq!(r.origin.len(), r.graph.len());

        let hw = Hardware::h100();
        prop_assert!(makespan(&g, &hw) > 0);
        prop_assert!(makespan(&r.graph, &hw) > 0);

        let back = Graph::from_json(&r.graph.to_json()).expect("round trip");
        prop_assert_eq!(back.len(), r.graph.len());
        for x in r.graph.ids() {
            prop_assert_eq!(back.op(x), r.graph.op(x));
            prop_assert_eq!(back.inputs(x), r.graph.inputs(x));
        }
    }
}
