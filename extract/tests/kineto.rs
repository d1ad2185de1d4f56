//! Small hand-made profiler traces, replayed exactly: FIFO order on a stream, a cross-stream
//! wait (recorded by `cuda_sync` and inferred from `cudaStreamWaitEvent`), a launch-bound
//! stretch, a second compute stream, an NCCL channel, step selection, and clear errors for bad
//! input. Times in the traces are microseconds, as Kineto writes them.

use concerto_extract::kineto::{self, TraceError, TraceOptions, TraceReport};
use concerto_graph::{simulate, CollectiveKind, Graph, OpKind, StreamPlan};
use serde_json::{json, Value};

/// A launch call of correlation `corr` at `ts` on the main thread.
fn launch(corr: i64, ts: f64) -> Value {
    call("cudaLaunchKernel", corr, ts)
}

fn call(name: &str, corr: i64, ts: f64) -> Value {
    json!({"ph": "X", "cat": "cuda_runtime", "name": name, "pid": 1, "tid": 1, "ts": ts,
           "dur": 0.5, "args": {"correlation": corr, "External id": corr}})
}

/// A kernel of correlation `corr` on `stream`.
fn kernel(name: &str, corr: i64, stream: i64, ts: f64, dur: f64) -> Value {
    json!({"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": stream, "ts": ts,
           "dur": dur, "args": {"stream": stream, "correlation": corr, "device": 0}})
}

fn step(n: u64, ts: f64, dur: f64) -> Value {
    json!({"ph": "X", "cat": "user_annotation", "name": format!("ProfilerStep#{n}"),
           "pid": 1, "tid": 1, "ts": ts, "dur": dur, "args": {}})
}

fn trace(events: Vec<Value>) -> String {
    json!({"schemaVersion": 1, "distributedInfo": {"backend": "nccl", "rank": 0, "world_size": 2},
           "traceEvents": events})
    .to_string()
}

fn import(text: &str) -> (Graph, TraceReport) {
    kineto::import(text, &TraceOptions::default()).unwrap()
}

/// The recorded order replays to the measured step, op by op: each op starts and ends when it
/// did on the GPU (in ns from the step's first start).
fn assert_exact_replay(graph: &Graph, report: &TraceReport) {
    let plan = StreamPlan::program_order(graph).unwrap();
    let d: Vec<u64> = graph.ops().map(|o| o.duration_ns.unwrap()).collect();
    let t = simulate(graph, &plan, &d, 1.0).unwrap();
    for v in graph.ids() {
        assert_eq!(
            (t.start[v.0], t.end[v.0]),
            report.measured[v.0],
            "{}",
            graph.op(v).name
        );
    }
    assert_eq!(t.makespan, report.measured_step_ns);
    assert_eq!(kineto::replay(graph).unwrap(), report.measured_step_ns);
}

fn edge(graph: &Graph, from: &str, to: &str) -> bool {
    let (a, b) = (graph.find(from).unwrap(), graph.find(to).unwrap());
    graph.predecessors(b).contains(&a)
}

#[test]
fn fifo_on_a_stream_replays_exactly() {
    // A starts 5 us after its launch (launch-bound); B and C queue behind it.
    let text = trace(vec![
        launch(1, 0.0),
        launch(2, 1.0),
        launch(3, 2.0),
        kernel("gemm_a", 1, 7, 5.0, 10.0),
        kernel("gemm_b", 2, 7, 15.0, 20.0),
        kernel("relu_c", 3, 7, 35.0, 5.0),
    ]);
    let (g, r) = import(&text);
    assert_eq!(g.len(), 3);
    assert!(edge(&g, "gemm_a#1", "gemm_b#2") && edge(&g, "gemm_b#2", "relu_c#3"));
    assert_eq!(r.measured_step_ns, 35_000);
    assert_eq!(r.launch_latency_ns, 5_000);
    assert_eq!(g.op(g.find("gemm_b#2").unwrap()).release_ns, 1_000);
    assert_eq!(r.step, "whole trace");
    assert_exact_replay(&g, &r);
}

/// Stream 7 runs A; stream 20 runs B, which waits for A's event; C on stream 7 is independent
/// of B and overlaps it.
fn waiting(with_sync_event: bool) -> String {
    let mut events = vec![
        launch(1, 0.0),
        call("cudaEventRecord", 100, 1.0),
        call("cudaStreamWaitEvent", 101, 2.0),
        launch(2, 3.0),
        launch(3, 4.0),
        kernel("a", 1, 7, 5.0, 10.0),
        kernel("b", 2, 20, 15.0, 10.0),
        kernel("c", 3, 7, 15.0, 6.0),
    ];
    if with_sync_event {
        events.push(
            json!({"ph": "X", "cat": "cuda_sync", "name": "Stream Wait Event",
            "pid": 0, "tid": 20, "ts": 2.0, "dur": 0.1,
            "args": {"cuda_sync_kind": "Stream Wait Event", "stream": 20, "wait_on_stream": 7,
                     "wait_on_cuda_event_record_corr_id": 100, "correlation": 101}}),
        );
    }
    trace(events)
}

#[test]
fn a_cross_stream_wait_replays_exactly() {
    for sync in [true, false] {
        let (g, r) = import(&waiting(sync));
        assert!(edge(&g, "a#1", "b#2"), "sync event: {sync}");
        assert!(!edge(&g, "b#2", "c#3") && edge(&g, "a#1", "c#3"));
        let counts = r.waits;
        assert_eq!(
            (counts.exact, counts.inferred),
            if sync { (1, 0) } else { (0, 1) }
        );
        // Two compute streams: the busiest (7) is lane 0, stream 20 lane 1.
        let streams: Vec<(i64, &str)> = r
            .streams
            .iter()
            .map(|s| (s.cuda_stream, s.stream.as_str()))
            .collect();
        assert_eq!(streams, vec![(7, "compute"), (20, "compute.1")]);
        assert_eq!(r.measured_step_ns, 20_000);
        assert_exact_replay(&g, &r);
    }
}

#[test]
fn a_launch_bound_stretch_replays_exactly_and_is_shorter_without_launch_times() {
    // Ten 1-us kernels, one launched every 10 us: the GPU idles between them.
    let mut events = Vec::new();
    for k in 0..10 {
        let t = 10.0 * k as f64;
        events.push(launch(k + 1, t));
        events.push(kernel("tiny", k + 1, 7, t + 5.0, 1.0));
    }
    let text = trace(events);
    let (g, r) = import(&text);
    assert_eq!(r.measured_step_ns, 91_000);
    assert_eq!(r.launch_latency_ns, 5_000);
    assert_exact_replay(&g, &r);
    let options = TraceOptions {
        launch_times: false,
        ..TraceOptions::default()
    };
    let (g, _) = kineto::import(&text, &options).unwrap();
    assert!(g.ops().all(|o| o.release_ns == 0));
    assert_eq!(kineto::replay(&g).unwrap(), 10_000);
}

/// A step with an NCCL all-reduce on its own stream, which waits for the gradient; the
/// optimizer step waits for the all-reduce.
fn ddp_step(n: u64, at: f64, grad_us: f64) -> Vec<Value> {
    let c = |k: i64| n as i64 * 100 + k;
    let mut nccl = kernel(
        "ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)",
        c(2),
        13,
        at + 5.0 + grad_us,
        30.0,
    );
    nccl["args"]["In msg nelems"] = json!(1024);
    nccl["args"]["Out msg nelems"] = json!(1024);
    nccl["args"]["dtype"] = json!("Float");
    nccl["args"]["Group size"] = json!(2);
    vec![
        step(n, at, 200.0),
        launch(c(1), at),
        call("cudaEventRecord", c(10), at + 1.0),
        call("cudaStreamWaitEvent", c(11), at + 1.5),
        launch(c(2), at + 2.0),
        call("cudaEventRecord", c(12), at + 2.5),
        call("cudaStreamWaitEvent", c(13), at + 3.0),
        launch(c(3), at + 4.0),
        kernel("sgemm_grad", c(1), 7, at + 5.0, grad_us),
        nccl,
        kernel("sgd_update", c(3), 7, at + 35.0 + grad_us, 10.0),
    ]
}

#[test]
fn an_nccl_stream_is_a_channel_and_the_median_step_is_imported() {
    let mut events = ddp_step(1, 0.0, 40.0);
    events.extend(ddp_step(2, 1000.0, 60.0));
    events.extend(ddp_step(3, 2000.0, 20.0));
    let text = trace(events);
    let (g, r) = import(&text);
    assert_eq!(r.step, "ProfilerStep#1");
    let spans: Vec<u64> = r.steps.iter().map(|s| s.measured_ns).collect();
    assert_eq!(spans, vec![80_000, 100_000, 60_000]);
    assert_eq!(r.measured_step_ns, 80_000);
    let ar = g.op(g
        .find("ncclKernel_AllReduce_RING_LL_Sum_float#102")
        .unwrap());
    match ar.kind {
        OpKind::Collective {
            kind, bytes, group, ..
        } => assert_eq!((kind, bytes, group), (CollectiveKind::AllReduce, 4096, 2)),
        _ => panic!("not a collective: {ar:?}"),
    }
    assert!(edge(
        &g,
        "sgemm_grad#101",
        "ncclKernel_AllReduce_RING_LL_Sum_float#102"
    ));
    assert!(edge(
        &g,
        "ncclKernel_AllReduce_RING_LL_Sum_float#102",
        "sgd_update#103"
    ));
    assert_eq!(r.streams[1].stream, "comm.intra-node");
    assert_exact_replay(&g, &r);
    let pick = TraceOptions {
        step: Some(2),
        ..TraceOptions::default()
    };
    let (_, r2) = kineto::import(&text, &pick).unwrap();
    assert_eq!(
        (r2.step.as_str(), r2.measured_step_ns),
        ("ProfilerStep#2", 100_000)
    );
    let e = kineto::import(
        &text,
        &TraceOptions {
            step: Some(9),
            ..TraceOptions::default()
        },
    )
    .unwrap_err();
    assert!(matches!(e, TraceError::NoStep { .. }), "{e}");
    assert!(e.to_string().contains("ProfilerStep#9") && e.to_string().contains("ProfilerStep#3"));
}

#[test]
fn a_wait_the_measured_times_contradict_is_moved_or_dropped() {
    // The wait is inferred onto `late` (launched last on stream 7), but `b` started before
    // `late` ended: the wait moves to `early`, which ended in time.
    let text = trace(vec![
        launch(1, 0.0),
        launch(2, 1.0),
        call("cudaStreamWaitEvent", 9, 2.0),
        launch(3, 7.0),
        kernel("early", 1, 7, 5.0, 5.0),
        kernel("late", 2, 7, 10.0, 50.0),
        kernel("b", 3, 20, 12.0, 5.0),
    ]);
    let (g, r) = import(&text);
    assert_eq!(r.waits.moved, 1);
    assert!(edge(&g, "early#1", "b#3") && !edge(&g, "late#2", "b#3"));
    assert_exact_replay(&g, &r);
}

#[test]
fn bad_input_gets_clear_errors() {
    let err = |text: &str| kineto::import(text, &TraceOptions::default()).unwrap_err();
    let e = err("{\"traceEvents\": [");
    assert!(matches!(e, TraceError::Json { line: 1, .. }), "{e}");
    assert!(e.to_string().contains("EOF"), "{e}");
    let e = err("{\"nodes\": []}");
    assert!(matches!(e, TraceError::NotATrace { .. }), "{e}");
    assert!(e.to_string().contains("traceEvents"), "{e}");
    let e = err("[1, 2]");
    assert!(e.to_string().contains("not an object"), "{e}");
    let e = err("{\"traceEvents\": 3}");
    assert!(e.to_string().contains("not an array"), "{e}");
    let e = err(&trace(vec![json!(7)]));
    assert!(matches!(e, TraceError::Event { index: 0, .. }), "{e}");
    let mut k = kernel("k", 1, 7, 1.0, 1.0);
    k["args"].as_object_mut().unwrap().remove("stream");
    let e = err(&trace(vec![launch(1, 0.0), k]));
    assert!(
        e.to_string().contains("trace event 1 (`k`)") && e.to_string().contains("args.stream"),
        "{e}"
    );
    let e = err(&trace(vec![kernel("k", 1, 7, 1.0, -2.0)]));
    assert!(e.to_string().contains("negative duration"), "{e}");
    let e = err(&trace(vec![launch(1, 0.0), step(1, 0.0, 5.0)]));
    assert!(matches!(e, TraceError::NoGpuEvents { .. }), "{e}");
    assert!(e.to_string().contains("CPU-only"), "{e}");
    // A GPU op outside every step: the steps launched nothing.
    let e = err(&trace(vec![
        step(1, 0.0, 5.0),
        launch(1, 10.0),
        kernel("k", 1, 7, 12.0, 1.0),
    ]));
    assert!(
        e.to_string()
            .contains("no GPU op was launched inside a step"),
        "{e}"
    );
    // Gzip: decoded by its magic number; a broken stream is an error, not garbage.
    let e = kineto::decode(&[0x1f, 0x8b, 0, 1, 2]).unwrap_err();
    assert!(matches!(e, TraceError::Gzip(_)), "{e}");
    let e = kineto::decode(&[0xff, 0xfe]).unwrap_err();
    assert!(e.to_string().contains("UTF-8"), "{e}");
}

#[test]
fn gzipped_traces_decode() {
    use std::io::Write;
    let text = waiting(true);
    let mut z = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    z.write_all(text.as_bytes()).unwrap();
    let bytes = z.finish().unwrap();
    assert!(kineto::is_gzip(&bytes));
    assert_eq!(kineto::decode(&bytes).unwrap(), text);
    assert!(kineto::looks_like_trace(&text));
}

/// A rank of a 2-rank job: all-reduces of three sizes whose times follow a known ring (alpha
/// 10 us per step, 50 GB/s), device copies at 1 TB/s, and one elementwise kernel run four
/// times alone (2 us) and four times beside an all-reduce (3 us).
fn calibration_trace() -> String {
    let mut events = Vec::new();
    let mut corr = 0;
    let mut t = 0.0;
    let mut next = |events: &mut Vec<Value>, mut k: Value, at: f64| {
        corr += 1;
        events.push(launch(corr, at - 5.0));
        k["args"]["correlation"] = json!(corr);
        events.push(k);
    };
    for (i, bytes) in [1u64 << 20, 8 << 20, 64 << 20, 8 << 20]
        .into_iter()
        .enumerate()
    {
        // 2 ranks: 2 (1/2) B / bw + 2 steps of alpha.
        let us = bytes as f64 / 50e9 * 1e6 + 2.0 * 10.0;
        let mut ar = kernel(
            "ncclKernel_AllReduce_RING_LL_Sum_float(x)",
            0,
            13,
            t + 10.0,
            us,
        );
        ar["args"]["Out msg nelems"] = json!(bytes / 4);
        ar["args"]["dtype"] = json!("Float");
        next(&mut events, ar, t + 10.0);
        // Beside it on the compute stream: the elementwise kernel, slowed to 3 us.
        next(
            &mut events,
            kernel("vectorized_elementwise_kernel<4>", 0, 7, t + 10.0, 3.0),
            t + 10.0,
        );
        t += 10.0 + us + 10.0;
        // Alone: 2 us; then a device copy of 8 MB read and written at 1 TB/s (16 us).
        next(
            &mut events,
            kernel("vectorized_elementwise_kernel<4>", 0, 7, t, 2.0),
            t,
        );
        let mut cp = json!({"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy DtoD (Device -> Device)",
            "pid": 0, "tid": 7, "ts": t + 5.0, "dur": 16.0,
            "args": {"stream": 7, "bytes": 8_000_000}});
        cp["args"]["device"] = json!(0);
        next(&mut events, cp, t + 5.0);
        t += 40.0 + i as f64;
    }
    trace(events)
}

#[test]
fn calibration_recovers_a_known_ring_copy_bandwidth_and_contention() {
    use concerto_graph::hardware::Hardware;
    let (g, r) = import(&calibration_trace());
    let hw = Hardware::a100();
    let c = kineto::calibrate::calibrate(&g, &r, &hw, "hand-made");
    let ring = c.fit.collective.as_ref().expect("a ring fitted");
    assert!((ring.bytes_per_sec / 50e9 - 1.0).abs() < 1e-3, "{ring:?}");
    assert!((ring.alpha_ns - 10_000.0).abs() < 10.0, "{ring:?}");
    assert!(
        c.fit.collective_scale.is_empty(),
        "{:?}",
        c.fit.collective_scale
    );
    let rows: Vec<&str> = c.rows.iter().map(|x| x.class.as_str()).collect();
    assert_eq!(rows, vec!["all-reduce", "memory"]);
    // a100 HBM: 2.039 TB/s, streamed at 0.8 of it; the copies ran at 1 TB/s: the
    // memory-bound classes get x1.631.
    let scale = c.fit.compute_scale["elementwise"];
    assert!((scale - 0.8 * 2.039).abs() < 0.01, "{scale}");
    let k = c.contention.as_ref().expect("a contention estimate");
    assert_eq!(
        (k.factor, k.kernels, k.overlapped_runs, k.alone_runs),
        (1.5, 1, 4, 4)
    );
    assert_eq!(c.fit.contention, Some(1.5));
    // The fitted profile costs the same step's modelled ops as measured.
    let fitted = Hardware::fitted(&c.fit).unwrap();
    let again = kineto::calibrate::calibrate(&g, &r, &fitted, "hand-made");
    for row in &again.rows {
        assert!(row.error_pct.abs() < 0.5, "{row:?}");
    }
    assert_eq!(c.unmodelled.get("elementwise"), Some(&8));
}

#[test]
fn a_consumer_the_inferred_producer_does_not_explain_waits_for_another_stream() {
    // `b` (stream 20) waits; the op launched last on another stream is `quick` (stream 7,
    // ended at 10 us), but `b` started at 300 us, right when `long` (stream 22) ended: the wait
    // is taken to be on `long`.
    let text = trace(vec![
        launch(1, 0.0),
        launch(2, 1.0),
        call("cudaStreamWaitEvent", 9, 2.0),
        launch(3, 3.0),
        kernel("long", 1, 22, 5.0, 295.0),
        kernel("quick", 2, 7, 6.0, 4.0),
        kernel("b", 3, 20, 300.0, 5.0),
    ]);
    let (g, r) = import(&text);
    assert_eq!(r.waits.moved, 1, "{:?}", r.waits);
    assert!(edge(&g, "long#1", "b#3") && !edge(&g, "quick#2", "b#3"));
    assert_exact_replay(&g, &r);
}

#[test]
fn every_step_is_replayed_by_the_fidelity_report() {
    let mut events = ddp_step(1, 0.0, 40.0);
    events.extend(ddp_step(2, 1000.0, 60.0));
    let f = kineto::fidelity::fidelity(&trace(events), &TraceOptions::default()).unwrap();
    assert_eq!(f.steps.len(), 2);
    for s in &f.steps {
        assert_eq!(s.replay_ns, s.measured_ns, "{s:?}");
        assert_eq!((s.error_pct, s.max_shift_ns), (0.0, 0));
        assert!(s.gpu_only_ns <= s.replay_ns);
    }
    assert_eq!(f.steps[f.median].step, "ProfilerStep#1");
}
