//! A hand-written graph whose durations overflow the simulator's arithmetic: `import`,
//! `optimize` and `simulate --plan` exit 2 (bad input) with an error naming the op, never a
//! panic or a wrapped makespan. (Run against the debug binary, where an unchecked overflow
//! panics.)

mod common;

use common::{concerto, scratch, stderr, stdout};

/// A native graph of three ops; `fc`'s `duration_ns` is `duration`.
fn graph(duration: u64) -> String {
    format!(
        r#"{{"format": "concerto-graph", "version": 1, "name": "overflow",
 "ops": [
   {{"name": "fc", "kind": {{"type": "compute", "class": "gemm", "flops": 2000, "bytes": 300}},
    "duration_ns": {duration}}},
   {{"name": "ar", "kind": {{"type": "collective", "kind": "all-reduce", "bytes": 200,
                          "group": 8, "link": "intra-node"}},
    "inputs": [0], "duration_ns": 1500}},
   {{"name": "add", "kind": {{"type": "compute", "class": "elementwise", "flops": 10, "bytes": 10}},
    "inputs": [1], "duration_ns": 100}}
 ]}}"#
    )
}

/// The plan file of [`graph`] (no fingerprint: it is for any duration).
const PLAN: &str = r#"{"format": "concerto-plan", "version": 1, "graph": "overflow",
 "streams": [{"stream": "compute", "ops": ["fc", "add"]},
             {"stream": "comm.intra-node", "ops": ["ar"]}],
 "waits": [["fc", "ar"], ["ar", "add"]]}"#;

/// Writes the graph with `duration` and the plan; returns their paths.
fn files(test: &str, duration: u64) -> (String, String) {
    let dir = scratch(test);
    let graph_path = dir.join("graph.json");
    let plan_path = dir.join("plan.json");
    std::fs::write(&graph_path, graph(duration)).unwrap();
    std::fs::write(&plan_path, PLAN).unwrap();
    (
        graph_path.display().to_string(),
        plan_path.display().to_string(),
    )
}

/// Asserts a clean failure (exit 2, bad input) that names `fc` and its duration.
fn names_the_op(args: &[&str]) {
    let o = concerto(args);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
    assert!(!err.contains("panicked"), "{args:?}: {err}");
    assert!(err.contains("op `fc`"), "{args:?}: {err}");
    assert!(err.contains(&(u64::MAX / 2).to_string()), "{args:?}: {err}");
    assert!(stdout(&o).is_empty(), "{args:?}: {}", stdout(&o));
}

#[test]
fn a_duration_of_half_u64_max_is_an_error_naming_the_op() {
    let (graph, plan) = files("half-max", u64::MAX / 2);
    names_the_op(&["import", &graph]);
    names_the_op(&["optimize", &graph, "--work-limit", "100"]);
    names_the_op(&["simulate", &graph, "--plan", &plan]);
}

#[test]
fn the_same_graph_with_a_real_duration_runs() {
    let (graph, plan) = files("real", 1000);
    let o = concerto(&["simulate", &graph, "--plan", &plan, "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    // fc 1000, ar 1500, add 100: one chain.
    assert_eq!(v["makespan_ns"].as_u64(), Some(2600), "{v}");
}
