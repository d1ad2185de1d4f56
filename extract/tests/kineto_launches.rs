//! The launch shapes of real traces, on hand-made ones (`fixtures/kineto/graph_launches*.json`,
//! written by `make_graph_launches.py` beside them): a graph launch whose one correlation ran
//! twenty kernels and memsets, and kernels whose launch calls the trace lacks. Every device
//! event of the step is imported, under a unique name, and the step replays within 5 %.

use concerto_extract::kineto::{self, Trace, TraceOptions};

fn fixture(name: &str) -> String {
    let path = format!("{}/../fixtures/kineto/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The fixture's device events (kernels and memsets) that started inside the step's CPU span
/// or before its GPU work ended: all but the one the generator puts after the step.
fn device_events(text: &str) -> Vec<serde_json::Value> {
    let v: serde_json::Value = serde_json::from_str(text).unwrap();
    v["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| matches!(e["cat"].as_str(), Some("kernel" | "gpu_memset")))
        .filter(|e| e["ts"].as_f64().unwrap() < 1500.0)
        .cloned()
        .collect()
}

fn check(name: &str, graph_call: &str) {
    let text = fixture(name);
    assert!(text.contains(graph_call), "{name} has a {graph_call}");
    let (g, r) = kineto::import(&text, &TraceOptions::default()).unwrap();
    // Every device event of the step is an op; the one after the step is left out and said so.
    let events = device_events(&text);
    assert_eq!(g.len(), events.len(), "{name}");
    assert_eq!(r.steps[0].ops, events.len());
    assert_eq!(r.unlaunched_ops, 6);
    assert_eq!(r.multi_op_launches, 1);
    assert!(r
        .warnings
        .iter()
        .any(|w| w.contains("6 GPU ops of the step have no launch")));
    assert!(r
        .warnings
        .iter()
        .any(|w| w.contains("1 GPU ops without a launch call ran outside")));
    // Unique names: the graph launch's twenty ops are `<kernel>#<corr>.<k>` in start order.
    let mut names: Vec<&str> = g.ops().map(|o| o.name.as_str()).collect();
    names.sort_unstable();
    let before = names.len();
    names.dedup();
    assert_eq!(names.len(), before);
    let graph_ops: Vec<_> = g.ops().filter(|o| o.name.contains("#106.")).collect();
    assert_eq!(graph_ops.len(), 20);
    assert!(g
        .find("sm80_xmma_gemm_f16f16_f16f32_f32_tn_n_kernel#106.0")
        .is_some());
    assert!(g.find("Memset#106.3").is_some() && g.find("Memset#106.19").is_some());
    // Release times: every op of the graph launch gets the launch's (its call at 110 us, plus
    // the latency, from the step's first start at 15 us); each later one follows its stream.
    let release = 110_000 + r.launch_latency_ns - 15_000;
    assert!(graph_ops.iter().all(|o| o.release_ns == release), "{name}");
    let measured_start = |name: &str| r.measured[g.find(name).unwrap().0].0;
    let starts: Vec<u64> = (0..20)
        .map(|k| {
            let op = graph_ops
                .iter()
                .find(|o| o.name.ends_with(&format!("#106.{k}")));
            measured_start(&op.unwrap().name)
        })
        .collect();
    assert!(
        starts.windows(2).all(|w| w[0] < w[1]),
        "start order: {starts:?}"
    );
    // Ops without a launch call: released at their measured start.
    for o in g.ops().filter(|o| o.name.contains("permute_kernel")) {
        assert_eq!(o.release_ns, measured_start(&o.name), "{}", o.name);
    }
    // The replay keeps within 5 % of the measured step.
    let replay = kineto::replay(&g).unwrap();
    let error = kineto::error_pct(replay, r.measured_step_ns);
    assert!(
        error.abs() <= 5.0,
        "{name}: replay {replay} ns, error {error} %"
    );
}

#[test]
fn a_cuda_graph_launch_and_unlaunched_kernels_are_all_imported() {
    check("graph_launches.json", "cudaGraphLaunch");
}

#[test]
fn a_hip_graph_launch_reads_like_a_cuda_one() {
    check("graph_launches_hip.json", "hipGraphLaunch");
}

/// The streaming reader and the text reader agree, gzipped or not.
#[test]
fn a_gzipped_stream_reads_like_the_text() {
    use std::io::Write as _;
    let text = fixture("graph_launches.json");
    let mut z = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    z.write_all(text.as_bytes()).unwrap();
    let bytes = z.finish().unwrap();
    let options = TraceOptions::default();
    let (a, ra) = kineto::import(&text, &options).unwrap();
    let (b, rb) = Trace::read(&bytes[..]).unwrap().import(&options).unwrap();
    assert_eq!(a.fingerprint(), b.fingerprint());
    assert_eq!(ra, rb);
    let e = Trace::read(&bytes[..bytes.len() / 2]).unwrap_err();
    assert!(matches!(e, kineto::TraceError::Gzip(_)), "{e}");
}
