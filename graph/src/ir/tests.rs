use super::*;
use crate::error::GraphError;

fn tiny() -> Graph {
    let mut b = GraphBuilder::new("tiny");
    let fc = b.add(
        Op::gemm(
            "fc",
            GemmShape {
                b: 1,
                m: 64,
                n: 64,
                k: 64,
            },
            DType::Bf16,
        ),
        &[],
    );
    let ar = b.add(
        Op::collective(
            "ar",
            CollectiveKind::AllReduce,
            8192,
            8,
            LinkClass::IntraNode,
        )
        .with_output(Tensor::new(vec![64, 64], DType::Bf16)),
        &[fc],
    );
    let mut add = Op::compute("add", ComputeClass::Elementwise, 4096, 24576);
    add.duration_ns = Some(700);
    b.try_add(add, &[(ar, 0), (fc, 0)]).unwrap();
    b.finish()
}

#[test]
fn json_round_trip_keeps_everything() {
    let g = tiny();
    let text = g.to_json();
    let back = Graph::from_json(&text).unwrap();
    assert_eq!(back.name(), "tiny");
    assert_eq!(back.len(), 3);
    for id in g.ids() {
        assert_eq!(g.op(id), back.op(id));
        assert_eq!(g.inputs(id), back.inputs(id));
    }
    assert_eq!(back.to_json(), text);
}

#[test]
fn bad_json_names_line_and_column() {
    let e =
        Graph::from_json("{\"format\": \"concerto-graph\",\n \"version\": 1,\n oops}").unwrap_err();
    assert!(matches!(e, GraphError::Json { line: 3, .. }), "{e}");
}

#[test]
fn forward_inputs_and_bad_versions_are_rejected() {
    let text = r#"{"format":"concerto-graph","version":1,"name":"g","ops":[
        {"name":"a","kind":{"type":"compute","class":"other","flops":0,"bytes":0},"inputs":[1]},
        {"name":"b","kind":{"type":"compute","class":"other","flops":0,"bytes":0}}]}"#;
    let e = Graph::from_json(text).unwrap_err();
    assert!(e.to_string().contains("`a`"), "{e}");
    let text = r#"{"format":"concerto-graph","version":7,"name":"g","ops":[]}"#;
    assert!(matches!(
        Graph::from_json(text).unwrap_err(),
        GraphError::Version { found: 7, .. }
    ));
    let text = r#"{"format":"concerto-graph","version":1,"name":"g","ops":[
        {"name":"a","kind":{"type":"collective","kind":"all-reduce","bytes":8,"group":1,"link":"intra-node"}}]}"#;
    assert!(Graph::from_json(text)
        .unwrap_err()
        .to_string()
        .contains("group"));
    let text = r#"{"format":"concerto-graph","version":1,"name":"g","ops":[
        {"name":"a","kind":{"type":"compute","class":"other","flops":0,"bytes":0}},
        {"name":"a","kind":{"type":"compute","class":"other","flops":0,"bytes":0}}]}"#;
    assert!(matches!(
        Graph::from_json(text).unwrap_err(),
        GraphError::DuplicateName { .. }
    ));
}

#[test]
fn accessors_follow_the_edges() {
    let g = tiny();
    assert_eq!(g.predecessors(OpId(2)), vec![OpId(0), OpId(1)]);
    assert_eq!(g.successors(OpId(0)), vec![OpId(1), OpId(2)]);
    assert_eq!(g.collective_count(), 1);
    assert_eq!(g.link_classes(), vec![LinkClass::IntraNode]);
    assert_eq!(g.find("add"), Some(OpId(2)));
    assert_eq!(g.dependencies().len(), 3);
}
