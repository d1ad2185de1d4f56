//! Decomposition on a builder graph: GPT's forward tensor-parallel all-reduces are critical,
//! each has a rows context, and the selection keeps a decomposition only when the rewritten
//! (checked) graph schedules shorter.

use concerto_decomp::context::context;
use concerto_decomp::critical::critical;
use concerto_decomp::select::{evaluate, select, SelectConfig};
use concerto_decomp::Axis;
use concerto_graph::Hardware;
use concerto_models::{build, GptConfig, Model, Parallel};

/// A two-layer GPT with 8-way tensor parallelism.
fn gpt_tp8() -> concerto_graph::Graph {
    let model = Model::Gpt(GptConfig {
        layers: 2,
        ..GptConfig::default()
    });
    let parallel = Parallel {
        tp: 8,
        ..Parallel::default()
    };
    build(&model, &parallel).unwrap()
}

#[test]
fn gpt_tensor_parallel_all_reduces_are_critical_and_decomposed() {
    let g = gpt_tp8();
    let hw = Hardware::h100();
    let (before, t) = evaluate(&g, &hw).unwrap();
    let crit = critical(&g, &t, 0.002);
    let forward: Vec<_> = crit
        .iter()
        .filter(|c| {
            let n = &g.op(c.op).name;
            n.starts_with("layer") && n.contains(".fwd.tp_allreduce.")
        })
        .collect();
    assert!(forward.len() >= 3, "{crit:?}");
    for c in &forward {
        let ctx = context(&g, c.op, Axis::Rows, 2, 4).expect("a rows context");
        assert!(ctx.ops.len() > 2 && ctx.ops.contains(&c.op));
        // A context never grows through another collective.
        assert!(ctx
            .ops
            .iter()
            .all(|&o| o == c.op || !g.op(o).is_collective()));
    }
    let s = select(&g, &hw, &SelectConfig::default()).unwrap();
    assert!(s.after_ns < before, "{before} -> {}", s.after_ns);
    assert!(!s.decompositions.is_empty());
    for d in &s.decompositions {
        assert!(d.after_ns < d.before_ns);
    }
    assert!(s.graph.len() > g.len());
}

#[test]
fn the_exact_selection_never_returns_a_longer_graph_and_respects_its_constraints() {
    use concerto_decomp::select::select_exact;
    use concerto_rcpsp::{Enumeration, Selection, Selector};
    let g = gpt_tp8();
    let hw = Hardware::h100();
    let s = select_exact(&g, &hw, &SelectConfig::default(), &Enumeration).unwrap();
    assert!(s.after_ns <= s.before_ns);
    // At most one decomposition per collective.
    let mut names: Vec<_> = s.decompositions.iter().map(|d| &d.collective).collect();
    names.sort();
    let len = names.len();
    names.dedup();
    assert_eq!(names.len(), len);
    // The enumerator itself: groups and conflicts.
    let chosen = Enumeration
        .select(
            &Selection {
                weights: vec![5, 4, 3, 1],
                groups: vec![vec![0, 1], vec![2], vec![3]],
                conflicts: vec![(0, 2)],
            },
            None,
        )
        .unwrap();
    assert_eq!(chosen.items, vec![1, 2, 3]);
    assert!(chosen.optimal);
}
