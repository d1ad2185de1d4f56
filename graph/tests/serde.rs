//! The `serde` feature: graphs, plans, timelines, ops and hardware profiles round-trip, and a
//! graph's serde form is its native JSON format.
#![cfg(feature = "serde")]

use concerto_graph::{
    simulate, CollectiveKind, ComputeClass, DType, GemmShape, Graph, GraphBuilder, Hardware,
    LinkClass, Op, OpId, OpKind, Stream, StreamPlan, Tensor, Timeline,
};
use concerto_models::{build, GptConfig, Model, Parallel};

/// A GEMM with two outputs read by an all-reduce (at output 1) and an elementwise op with a
/// measured duration.
fn tiny() -> Graph {
    let mut b = GraphBuilder::new("tiny");
    let shape = GemmShape {
        b: 1,
        m: 64,
        n: 32,
        k: 16,
    };
    let fc = b.add(
        Op::gemm("fc", shape, DType::Bf16).with_output(Tensor::new(vec![64], DType::F32)),
        &[],
    );
    let ar = b
        .try_add(
            Op::collective(
                "ar",
                CollectiveKind::AllReduce,
                256,
                8,
                LinkClass::InterNode,
            ),
            &[(fc, 1)],
        )
        .unwrap();
    let mut add = Op::compute("add", ComputeClass::Elementwise, 64, 512);
    add.duration_ns = Some(1500);
    b.add(add, &[ar, fc]);
    b.finish()
}

#[test]
fn a_graph_serialises_as_its_native_json_and_reads_back() {
    for g in [
        tiny(),
        build(
            &Model::Gpt(GptConfig::default()),
            &Parallel {
                dp: 2,
                tp: 2,
                ..Parallel::default()
            },
        )
        .expect("GPT builds"),
    ] {
        let text = serde_json::to_string_pretty(&g).unwrap();
        assert_eq!(text, g.to_json(), "one format");
        let back: Graph = serde_json::from_str(&text).unwrap();
        assert_eq!(back.to_json(), g.to_json());
        assert_eq!(back.fingerprint(), g.fingerprint());
        // A native file reads through serde too.
        let read: Graph = serde_json::from_str(&g.to_json()).unwrap();
        assert_eq!(read.len(), g.len());
    }
}

#[test]
fn serde_reading_a_graph_checks_it_as_from_json_does() {
    let text = tiny().to_json();
    let e = serde_json::from_str::<Graph>(&text.replace("\"version\": 1", "\"version\": 9"))
        .unwrap_err();
    assert!(e.to_string().contains('9'), "{e}");
    // An op that reads a later one.
    let forward = r#"{"format":"concerto-graph","version":1,"name":"g","ops":[
        {"name":"a","kind":{"type":"compute","class":"other","flops":0,"bytes":0},"inputs":[1]},
        {"name":"b","kind":{"type":"compute","class":"other","flops":0,"bytes":0}}]}"#;
    assert!(serde_json::from_str::<Graph>(forward).is_err());
}

#[test]
fn ops_plans_and_timelines_round_trip() {
    let g = tiny();
    for op in g.ops() {
        let back: Op = serde_json::from_str(&serde_json::to_string(op).unwrap()).unwrap();
        assert_eq!(&back, op);
        let kind: OpKind = serde_json::from_str(&serde_json::to_string(&op.kind).unwrap()).unwrap();
        assert_eq!(kind, op.kind);
    }
    let id: OpId = serde_json::from_str(&serde_json::to_string(&OpId(7)).unwrap()).unwrap();
    assert_eq!(id, OpId(7));

    let plan = StreamPlan::program_order(&g).unwrap();
    let text = serde_json::to_string(&plan).unwrap();
    assert!(
        text.contains("\"comm.inter-node\""),
        "streams by name: {text}"
    );
    let back: StreamPlan = serde_json::from_str(&text).unwrap();
    assert_eq!(back, plan);
    back.validate(&g).unwrap();
    let bad = text.replace("comm.inter-node", "comm.nowhere");
    let e = serde_json::from_str::<StreamPlan>(&bad).unwrap_err();
    assert!(e.to_string().contains("`comm.nowhere`"), "{e}");
    let s: Stream = serde_json::from_str("\"compute\"").unwrap();
    assert_eq!(s, Stream::Compute);

    let hw = Hardware::h100();
    let t = simulate(&g, &plan, &hw.durations(&g), hw.contention).unwrap();
    let back: Timeline = serde_json::from_str(&serde_json::to_string(&t).unwrap()).unwrap();
    assert_eq!(back, t);
}

#[test]
fn hardware_profiles_round_trip_by_name_and_settings() {
    for name in Hardware::NAMES {
        let hw = Hardware::by_name(name)
            .unwrap()
            .with_gpus_per_node(4)
            .unwrap()
            .with_contention(1.25)
            .unwrap();
        let text = serde_json::to_string(&hw).unwrap();
        assert_eq!(
            text,
            format!(r#"{{"name":"{name}","gpus_per_node":4,"contention":1.25}}"#)
        );
        let back: Hardware = serde_json::from_str(&text).unwrap();
        assert_eq!(back, hw);
    }
    let e =
        serde_json::from_str::<Hardware>(r#"{"name":"tpu-v5","gpus_per_node":8,"contention":1.1}"#)
            .unwrap_err();
    assert!(e.to_string().contains("tpu-v5"), "{e}");
    let e =
        serde_json::from_str::<Hardware>(r#"{"name":"h100","gpus_per_node":8,"contention":0.5}"#)
            .unwrap_err();
    assert!(e.to_string().contains("0.5"), "{e}");
}
