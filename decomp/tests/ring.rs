//! Random sequence-parallel-like chains of all-gather -> GEMM -> GEMM -> reduce-scatter
//! blocks, with random extra readers: every collective-matmul ring found rewrites, passes the
//! independent check, keeps the GEMM work, and both graphs simulate (measured and roofline
//! costs); a found ring is exactly where the shapes allow one.

use concerto_decomp::ring::{find, rewrite, RingPattern};
use concerto_decomp::rules::chunk;
use concerto_decomp::Axis;
use concerto_graph::{
    baselines, simulate, CollectiveKind, ComputeClass, DType, GemmShape, Graph, GraphBuilder,
    Hardware, LinkClass, Op, OpKind, Tensor,
};
use proptest::prelude::*;

/// One block: shard tokens, features, the first GEMM's width, whether a weight gradient also
/// reads the gathered tensor, whether the gather is along the features instead (no ring).
type Block = (u64, u64, u64, bool, bool);

fn blocks() -> impl Strategy<Value = (u32, Vec<Block>)> {
    (
        prop::sample::select(vec![2u32, 4, 8]),
        prop::collection::vec(
            (
                1u64..=64,
                1u64..=96,
                1u64..=128,
                any::<bool>(),
                prop::bool::weighted(0.2),
            ),
            1..=3,
        ),
    )
}

fn act(shape: &[u64]) -> Tensor {
    Tensor::new(shape.to_vec(), DType::Bf16)
}

/// The chain of `blocks` over `p` ranks; each block reads the previous block's output.
fn graph(p: u32, blocks: &[Block]) -> Graph {
    let mut b = GraphBuilder::new("chain");
    let pp = u64::from(p);
    let (t0, f0) = (blocks[0].0, blocks[0].1);
    let mut x = b.add(
        Op::compute("input", ComputeClass::Other, 0, 1).with_output(act(&[1, t0, f0])),
        &[],
    );
    for (i, &(t, f, n, wgrad, on_features)) in blocks.iter().enumerate() {
        let ln = b.add(
            Op::compute(format!("b{i}.ln"), ComputeClass::Norm, t * f, 4 * t * f)
                .with_output(act(&[1, t, f])),
            &[x],
        );
        let gathered = if on_features {
            act(&[1, t, f * pp])
        } else {
            act(&[1, t * pp, f])
        };
        let bytes = gathered.bytes();
        let ag = b.add(
            Op::collective(
                format!("b{i}.ag"),
                CollectiveKind::AllGather,
                bytes,
                p,
                LinkClass::IntraNode,
            )
            .with_output(gathered.clone()),
            &[ln],
        );
        let (m, k) = (gathered.shape[1], gathered.shape[2]);
        let up = b.add(
            Op::gemm(format!("b{i}.up"), GemmShape { b: 1, m, n, k }, DType::Bf16),
            &[ag],
        );
        if wgrad {
            let wg = GemmShape {
                b: 1,
                m: k,
                n,
                k: m,
            };
            b.add(Op::gemm(format!("b{i}.wgrad"), wg, DType::Bf16), &[ag, up]);
        }
        let down = b.add(
            Op::gemm(
                format!("b{i}.down"),
                GemmShape {
                    b: 1,
                    m,
                    n: f,
                    k: n,
                },
                DType::Bf16,
            ),
            &[up],
        );
        // The down projection's output [1, m, f] scattered back over the tokens.
        let rs = b.add(
            Op::collective(
                format!("b{i}.rs"),
                CollectiveKind::ReduceScatter,
                act(&[1, m / pp, f]).bytes(),
                p,
                LinkClass::IntraNode,
            )
            .with_output(act(&[1, m / pp, f])),
            &[down],
        );
        x = b.add(
            Op::compute(
                format!("b{i}.residual"),
                ComputeClass::Elementwise,
                t * f,
                3 * t * f,
            )
            .with_output(act(&[1, m / pp, f])),
            &[rs, ln],
        );
    }
    b.finish()
}

fn makespan(g: &Graph, hw: &Hardware) -> u64 {
    let d = hw.durations(g);
    let plan = baselines::lhs(g, &d).expect("a list schedule");
    simulate(g, &plan, &d, hw.contention)
        .expect("a valid plan simulates")
        .makespan
}

fn gemm_flops(g: &Graph) -> u64 {
    g.ops()
        .filter_map(|o| match o.kind {
            OpKind::Compute {
                class: ComputeClass::Gemm,
                flops,
                ..
            } => Some(flops),
            _ => None,
        })
        .sum()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn rings_rewrite_check_and_simulate((p, spec) in blocks()) {
        let g = graph(p, &spec);
        let hw = [Hardware::h100(), Hardware::a800()];
        for (i, &(t, _, _, _, on_features)) in spec.iter().enumerate() {
            for (name, pattern) in [
                (format!("b{i}.ag"), RingPattern::AllGatherMatmul),
                (format!("b{i}.rs"), RingPattern::MatmulReduceScatter),
            ] {
                let c = g.find(&name).expect("built");
                let ring = find(&g, c);
                // A gather along the features feeds no ring; a scatter does when the down
                // projection's rows (the gathered tokens, or one shard's along the features)
                // divide among the ranks.
                let m = if on_features { t } else { t * u64::from(p) };
                let expected = match pattern {
                    RingPattern::AllGatherMatmul => !on_features,
                    _ => m % u64::from(p) == 0,
                };
                prop_assert_eq!(ring.is_some(), expected, "{}", name);
                let Some(ring) = ring else { continue };
                prop_assert_eq!(ring.pattern, pattern);
                prop_assert_eq!(ring.ranks, p);
                let rows = |op: &Op, j: u32| chunk(op, Axis::Rows, p, j, None);
                let r = rewrite(&g, &ring, &rows).expect("a found ring rewrites (and checks)");
                // The context dispatch of the loop decomposition hands a ring to the same
                // rewrite.
                let again = concerto_decomp::rewrite::rewrite(&g, &ring.context(), &rows)
                    .expect("the dispatch rewrites a found ring");
                prop_assert_eq!(&again.origin, &r.origin);
                prop_assert!(again.graph.ops().eq(r.graph.ops()));
                prop_assert_eq!(r.origin.len(), r.graph.len());
                prop_assert!(r.graph.find(&name).is_none());
                let steps = r
                    .graph
                    .ops()
                    .filter(|o| matches!(o.kind, OpKind::Collective { kind: CollectiveKind::SendRecv, .. }))
                    .count();
                prop_assert_eq!(steps, p as usize - 1);
                let (a, b) = (gemm_flops(&g), gemm_flops(&r.graph));
                prop_assert!(a.abs_diff(b) <= u64::from(p), "GEMM flops {} -> {}", a, b);
                for h in &hw {
                    prop_assert!(makespan(&g, h) > 0);
                    prop_assert!(makespan(&r.graph, h) > 0);
                }
            }
        }
    }
}
