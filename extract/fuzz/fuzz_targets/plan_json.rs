//! Fuzzes the stream plan reader (`StreamPlan::from_json`, what `concerto simulate --plan`
//! reads) against a fixed graph of two compute lanes and a collective, then simulates a plan it
//! accepts: reading must give a plan or a clear error, and an accepted plan must simulate
//! without a deadlock (the reader's validation rejects those), panic or hang.
//!
//! From `extract/`: `cargo +nightly fuzz run plan_json -- -max_len=2048 -dict=fuzz/graph.dict`.
#![no_main]

use concerto_graph::StreamPlan;
use concerto_graph::{simulate, CollectiveKind, ComputeClass, Graph, GraphBuilder, LinkClass, Op};
use libfuzzer_sys::fuzz_target;

/// fc -> ar -> add, fc -> side (lane 1) -> add.
fn graph() -> Graph {
    let compute = |name: &str| Op::compute(name, ComputeClass::Other, 10, 10);
    let mut b = GraphBuilder::new("fuzz");
    let fc = b.add(compute("fc"), &[]);
    let ar = b.add(
        Op::collective(
            "ar",
            CollectiveKind::AllReduce,
            256,
            8,
            LinkClass::IntraNode,
        ),
        &[fc],
    );
    let side = b.add(compute("side").on_lane(1), &[fc]);
    b.add(compute("add"), &[ar, side]);
    b.finish()
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let graph = graph();
    if let Ok(plan) = StreamPlan::from_json(&graph, text) {
        let t = simulate(&graph, &plan, &[3, 4, 2, 1], 1.5).expect("a valid plan simulates");
        assert_eq!(t.start.len(), graph.len());
        let back = StreamPlan::from_json(&graph, &plan.to_json(&graph)).expect("reads back");
        assert_eq!(back, plan);
    }
});
