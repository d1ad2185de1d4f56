//! Tests of the step builder: recorded shapes, and hostile traces (found by fuzzing) that
//! must give clear errors, never overflow.

use super::ops::gemm_shape;
use super::*;
use crate::kineto::events::{Shapes, Span};
use crate::kineto::{import, replay};
use concerto_graph::DType;
use serde_json::{json, Value};

/// Imports a trace of `events`, and replays the graph when it imports: never a panic.
fn run(events: Value) -> Result<u64, String> {
    let text = json!({ "traceEvents": events }).to_string();
    let (graph, _) = import(&text, &TraceOptions::default()).map_err(|e| e.to_string())?;
    Ok(replay(&graph).expect("an imported step replays"))
}

fn launch(corr: i64, ts: impl Into<Value>) -> Value {
    let ts = ts.into();
    json!({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1,
           "tid": 1, "ts": ts, "dur": 1, "args": {"correlation": corr}})
}

fn kernel(name: &str, corr: i64, stream: i64, ts: impl Into<Value>, dur: f64) -> Value {
    let ts = ts.into();
    json!({"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": stream, "ts": ts,
           "dur": dur, "args": {"stream": stream, "correlation": corr}})
}

fn cpu_op(name: &str, dims: Value) -> Value {
    json!({"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": 1, "ts": 0,
           "dur": 10, "args": {"Input Dims": dims}})
}

/// The largest `ts` in µs whose ns still fit i64 (9_223_372_036_854_775_000 ns); an
/// integer, as the fuzzer wrote it (a float that large is already refused by `ns`).
const BIG_US: i64 = 9_223_372_036_854_775;

// Inputs the fuzz target `kineto_import` (extract/fuzz) made panic with an overflow, in a
// debug build (a release build wrapped around silently). Each now gives a clear error or a
// graph that replays.

#[test]
fn fuzz_a_kernel_ending_beyond_i64_is_an_error() {
    // Was: `start + dur` overflowed in `span_of`.
    let e = run(json!([
        launch(1, 0.0),
        kernel("gemm", 1, 7, BIG_US, 1000.0)
    ]))
    .unwrap_err();
    assert_eq!(
        e,
        "trace event 1 (`gemm`): `ts` is 9223372036854775000 ns, beyond 2^62 ns (146 years)"
    );
}

#[test]
fn fuzz_a_step_ending_beyond_i64_is_an_error() {
    // Not a crash (the sum fits), but spans take the same bound as GPU ops.
    let step = json!({"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1",
                      "pid": 1, "tid": 1, "ts": 0, "dur": BIG_US, "args": {}});
    let e = run(json!([
        step,
        launch(1, 0.0),
        kernel("gemm", 1, 7, 0.0, 1.0)
    ]))
    .unwrap_err();
    assert_eq!(
        e,
        "trace event 0 (`ProfilerStep#1`): `dur` is 9223372036854775000 ns, beyond 2^62 ns \
         (146 years)"
    );
}

#[test]
fn fuzz_negative_times_are_errors() {
    // Was: `start - launch` and the span's `hi - lo` overflowed between far-apart times.
    let e = run(json!([
        launch(1, -BIG_US),
        kernel("gemm", 1, 7, BIG_US / 2, 1.0)
    ]))
    .unwrap_err();
    assert_eq!(
        e,
        "trace event 0 (`cudaLaunchKernel`): `ts` is negative (-9223372036854775000 ns)"
    );
    let e = run(json!([launch(1, 0.0), kernel("gemm", 1, 7, -1.5, 1.0)])).unwrap_err();
    assert_eq!(e, "trace event 1 (`gemm`): `ts` is negative (-1500 ns)");
}

#[test]
fn fuzz_a_call_ending_beyond_i64_is_an_error() {
    // Was: the submit time `ts + dur - typical` overflowed for a call that ran "forever".
    let mut call = launch(1, 1000);
    call["dur"] = json!(BIG_US);
    let e = run(json!([call, kernel("gemm", 1, 7, 2000, 1.0)])).unwrap_err();
    assert_eq!(
        e,
        "trace event 0 (`cudaLaunchKernel`): `dur` is 9223372036854775000 ns: the call ends \
         beyond 2^62 ns"
    );
    // A missing or negative call duration still counts as 0.
    let mut call = launch(1, 1000);
    call["dur"] = json!(-5);
    assert!(run(json!([call, kernel("gemm", 1, 7, 2000, 1.0)])).is_ok());
}

#[test]
fn fuzz_a_step_too_long_to_replay_is_an_error() {
    // Was: a 5.6-hour kernel overflowed the replay's clock (ns in thousandths), and eight
    // 46-day kernels overflowed the streams' busy time.
    let e = run(json!([launch(1, 0.0), kernel("gemm", 1, 7, 1.0, 2e13)])).unwrap_err();
    assert_eq!(
        e,
        "not a PyTorch profiler trace: step `whole trace` adds up to 20000000000000000 ns \
         (its GPU ops' durations and its latest launch), beyond 2^53 ns (104 days): no \
         profiled step lasts that long"
    );
    let mut events: Vec<Value> = (1..=8).map(|i| launch(i, i as f64)).collect();
    events.extend((1..=8).map(|i| kernel("gemm", i, 7, i as f64 * 1e12, 4e15)));
    let e = run(Value::Array(events)).unwrap_err();
    assert!(e.contains("beyond 2^53 ns (104 days)"), "{e}");
    // Just inside: one op of 2^53 ns replays to its measured time.
    let edge = (1u64 << 53) as f64 / 1000.0;
    let t = run(json!([launch(1, 0.0), kernel("gemm", 1, 7, 0.0, edge)])).unwrap();
    assert_eq!(t, 1 << 53);
}

#[test]
fn fuzz_huge_recorded_shapes_do_not_overflow() {
    // Was: the product of `aten::linear`'s leading dimensions overflowed, and so did the
    // input bytes of a collective from `nccl:all_reduce`'s recorded shape.
    let huge = 4_294_967_296u64;
    let linear = cpu_op("aten::linear", json!([[huge, huge, 2], [16, 2]]));
    assert_eq!(
        run(json!([
            linear,
            launch(1, 1.0),
            kernel("gemm", 1, 7, 2.0, 1.0)
        ])),
        Ok(1000)
    );
    // `Op::gemm` would overflow counting these operands' bytes: no GEMM shape then.
    let mm = cpu_op("aten::mm", json!([[huge, huge], [huge, 2]]));
    assert!(gemm_shape(&span("aten::mm", vec![vec![huge, huge], vec![huge, 2]])).is_none());
    assert_eq!(
        run(json!([mm, launch(1, 1.0), kernel("gemm", 1, 7, 2.0, 1.0)])),
        Ok(1000)
    );
    let ar = cpu_op("nccl:all_reduce", json!([[huge, huge]]));
    let k = kernel("ncclKernel_AllReduce", 1, 40, 2.0, 1.0);
    assert_eq!(run(json!([ar, launch(1, 1.0), k])), Ok(1000));
}

fn span(name: &str, dims: Vec<Vec<u64>>) -> Span {
    Span {
        name: name.into(),
        ts: 0,
        dur: 1,
        thread: 0,
        shapes: Some(Box::new(Shapes {
            dims,
            types: vec!["c10::BFloat16".into()],
        })),
    }
}

#[test]
fn recorded_matrix_multiplies_give_gemm_shapes() {
    let (s, t) = gemm_shape(&span("aten::mm", vec![vec![64, 32], vec![32, 16]])).unwrap();
    assert_eq!((s.b, s.m, s.k, s.n), (1, 64, 32, 16));
    assert_eq!(t, DType::Bf16);
    let (s, _) = gemm_shape(&span(
        "aten::addmm",
        vec![vec![16], vec![64, 32], vec![32, 16]],
    ))
    .unwrap();
    assert_eq!((s.m, s.k, s.n), (64, 32, 16));
    let (s, _) = gemm_shape(&span("aten::bmm", vec![vec![4, 8, 2], vec![4, 2, 3]])).unwrap();
    assert_eq!((s.b, s.m, s.k, s.n), (4, 8, 2, 3));
    let (s, _) = gemm_shape(&span(
        "aten::linear",
        vec![vec![2, 8, 32], vec![16, 32], vec![16]],
    ))
    .unwrap();
    assert_eq!((s.m, s.k, s.n), (16, 32, 16));
    assert!(gemm_shape(&span("aten::mm", vec![vec![64]])).is_none());
    assert!(gemm_shape(&span("aten::relu", vec![vec![64, 2]])).is_none());
}
