//! Timelines as Chrome trace event JSON (see the [`super`] module docs for the layout).

use serde_json::{json, Map, Value};

use super::{category, check_lengths, decimal, stream_count, stream_name, NS_PER_US};
use crate::ir::{Graph, Op, OpId, OpKind};
use crate::simulate::Timeline;

/// Nanoseconds as trace microseconds.
fn micros(ns: u64) -> Value {
    Value::from(ns as f64 / 1000.0)
}

/// The `args` of an op's complete event.
fn op_args(op: &Op, id: OpId, start: u64, end: u64, stream: &str) -> Value {
    let mut args = Map::new();
    args.insert("op".into(), Value::from(id.0));
    args.insert("start_ns".into(), Value::from(start));
    args.insert("end_ns".into(), Value::from(end));
    args.insert("dur_ns".into(), Value::from(end.saturating_sub(start)));
    args.insert("stream".into(), Value::from(stream));
    match &op.kind {
        OpKind::Compute {
            class,
            flops,
            bytes,
            gemm,
        } => {
            args.insert(
                "class".into(),
                serde_json::to_value(class).unwrap_or(Value::Null),
            );
            args.insert("flops".into(), Value::from(*flops));
            args.insert("bytes".into(), Value::from(*bytes));
            if let Some(g) = gemm {
                args.insert(
                    "gemm".into(),
                    json!({"b": g.b, "m": g.m, "n": g.n, "k": g.k}),
                );
            }
        }
        OpKind::Collective {
            kind,
            bytes,
            group,
            link,
        } => {
            args.insert("kind".into(), Value::from(kind.as_str()));
            args.insert("bytes".into(), Value::from(*bytes));
            args.insert("group".into(), Value::from(*group));
            args.insert("link".into(), Value::from(link.as_str()));
        }
    }
    Value::Object(args)
}

/// The trace events (metadata first, then complete events) of `timelines`.
fn trace_events(graph: &Graph, timelines: &[(&str, &Timeline)]) -> Vec<Value> {
    let mut metadata = Vec::new();
    let mut slices = Vec::with_capacity(graph.len() * timelines.len());
    for (i, &(name, t)) in timelines.iter().enumerate() {
        check_lengths(graph, name, t);
        let pid = i + 1;
        metadata.push(json!({
            "ph": "M", "name": "process_name", "pid": pid, "tid": 0, "ts": 0,
            "args": {
                "name": format!("{name} (makespan {} µs)", decimal(t.makespan, NS_PER_US)),
                "makespan_ns": t.makespan,
            },
        }));
        metadata.push(json!({
            "ph": "M", "name": "process_sort_index", "pid": pid, "tid": 0, "ts": 0,
            "args": {"sort_index": i},
        }));
        let streams = stream_count(t);
        let names: Vec<String> = (0..streams).map(|s| stream_name(t, s)).collect();
        for (s, stream) in names.iter().enumerate() {
            metadata.push(json!({
                "ph": "M", "name": "thread_name", "pid": pid, "tid": s + 1, "ts": 0,
                "args": {"name": stream},
            }));
            metadata.push(json!({
                "ph": "M", "name": "thread_sort_index", "pid": pid, "tid": s + 1, "ts": 0,
                "args": {"sort_index": s},
            }));
        }
        let mut by_stream: Vec<Vec<OpId>> = vec![Vec::new(); streams];
        for id in graph.ids() {
            by_stream[t.stream[id.0]].push(id);
        }
        for (s, mut ops) in by_stream.into_iter().enumerate() {
            ops.sort_by_key(|o| (t.start[o.0], o.0));
            for id in ops {
                let op = graph.op(id);
                let (start, end) = (t.start[id.0], t.end[id.0]);
                slices.push(json!({
                    "ph": "X",
                    "name": op.name,
                    "cat": category(op),
                    "ts": micros(start),
                    "dur": micros(end.saturating_sub(start)),
                    "pid": pid,
                    "tid": s + 1,
                    "args": op_args(op, id, start, end, &names[s]),
                }));
            }
        }
    }
    metadata.extend(slices);
    metadata
}

/// The `otherData` dictionary.
fn other_data(graph: &Graph, timelines: &[(&str, &Timeline)]) -> Value {
    json!({
        "generator": "concerto-graph",
        "graph": graph.name(),
        "ops": graph.len(),
        "schedulers": timelines.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", "),
        "time_unit": "ts and dur in microseconds with nanosecond precision; args in ns",
    })
}

/// The timelines of `graph` as a Chrome trace (JSON Object Format; see the module docs):
/// scheduler `i` is process `i + 1`, stream `s` its thread `s + 1`, each op a complete event.
///
/// # Panics
///
/// If a timeline does not have one `start`, `end` and `stream` entry per op of `graph`.
pub fn chrome_trace(graph: &Graph, timelines: &[(&str, &Timeline)]) -> Value {
    json!({
        "traceEvents": trace_events(graph, timelines),
        "displayTimeUnit": "ns",
        "otherData": other_data(graph, timelines),
    })
}

/// [`chrome_trace`] as text: valid JSON with one trace event per line (compact, yet easy to
/// grep and diff), ready to save as a `.json` file for Perfetto or `chrome://tracing`.
///
/// # Panics
///
/// As [`chrome_trace`].
pub fn chrome_trace_string(graph: &Graph, timelines: &[(&str, &Timeline)]) -> String {
    let events = trace_events(graph, timelines);
    let mut out = String::from("{\"traceEvents\": [\n");
    for (i, e) in events.iter().enumerate() {
        if i > 0 {
            out.push_str(",\n");
        }
        out.push_str(&e.to_string());
    }
    out.push_str("\n],\n\"displayTimeUnit\": \"ns\",\n\"otherData\": ");
    out.push_str(&other_data(graph, timelines).to_string());
    out.push_str("}\n");
    out
}
