//! Trace export: simulated timelines as Chrome trace event JSON and as an SVG Gantt chart.
//!
//! Both exports take one graph and several [`Timeline`]s of it, each named after the scheduler
//! that produced it (`program order`, `lhs`, `inductor`, `concerto`, ...), so that schedules
//! of the same step can be compared side by side.
//!
//! # Chrome trace event JSON
//!
//! [`chrome_trace`] writes the JSON Object Format of the Trace Event Format (Google, "Trace
//! Event Format"), which Perfetto (<https://ui.perfetto.dev>) and `chrome://tracing` load:
//!
//! ```json
//! {"traceEvents": [...], "displayTimeUnit": "ns", "otherData": {"generator": "concerto-graph", ...}}
//! ```
//!
//! * Scheduler `i` (0-based) is process `pid = i + 1`, with a `process_name` metadata event
//!   (`"lhs (makespan 12.345 µs)"`, and `makespan_ns` among its args) and a
//!   `process_sort_index` of `i`, so the schedulers are listed in the order given.
//! * Stream `s` of a timeline ([`Timeline::streams`]) is thread `tid = s + 1` of its process,
//!   with a `thread_name` (the stream name) and a `thread_sort_index` of `s`.
//! * Each op is a complete event (`"ph": "X"`): `name` is the op name, `cat` is `compute` or
//!   the collective kind (`all-reduce`, ...), `ts` and `dur` are microseconds as JSON numbers
//!   with nanosecond precision (`ts = start_ns / 1000`: 1500 ns is `1.5`; exact while times
//!   stay below 2^53 ns), and `args` holds the op id, `start_ns`, `end_ns`, `dur_ns`, the
//!   stream and what the cost model reads (class, flops and bytes of a compute op; kind,
//!   bytes, group and link of a collective).
//!
//! The order is deterministic: every metadata event first (by pid, then tid), then the complete
//! events by pid, tid, start time and op id. [`chrome_trace_string`] writes one event per line.
//!
//! [`validate_chrome_trace`] checks a value against the rules of the format for the events
//! this module emits, and that no two slices of one thread overlap (Perfetto would nest them,
//! which misrepresents a FIFO stream).
//!
//! # SVG Gantt chart
//!
//! [`svg_gantt`] draws one panel per scheduler (its title gives the makespan in µs), one row per
//! stream with its name at the left, and one rectangle per op, coloured by class (GEMM,
//! attention, other compute, and one colour per collective kind; a legend lists the classes
//! present). Every panel shares one time scale, so shorter schedules end further left; each
//! panel has its own time axis (µs, or ms from 1 ms on) and a dashed line at its makespan. Each
//! op rectangle carries a `<title>` (a tooltip in browsers) with the op name, class and times.
//! Op rectangles have `class="op"`; row bands `class="row"`, legend swatches `class="legend"`
//! and the page background `class="background"` are the only other rectangles.
//!
//! Both exports cost O(ops) per timeline, plus sorting each stream's ops by start time for the
//! JSON (O(ops log ops)).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde_json::{json, Map, Value};

use crate::ir::{CollectiveKind, ComputeClass, Graph, Op, OpId, OpKind};
use crate::simulate::Timeline;

// ---------------------------------------------------------------------------------------------
// Chrome trace event JSON
// ---------------------------------------------------------------------------------------------

/// The metadata event names this module emits (and [`validate_chrome_trace`] accepts).
const METADATA_NAMES: [&str; 4] = [
    "process_name",
    "process_sort_index",
    "thread_name",
    "thread_sort_index",
];

/// Checks that `timeline` has one entry per op of `graph`.
fn check_lengths(graph: &Graph, name: &str, timeline: &Timeline) {
    let n = graph.len();
    for (field, len) in [
        ("start", timeline.start.len()),
        ("end", timeline.end.len()),
        ("stream", timeline.stream.len()),
    ] {
        assert_eq!(
            len, n,
            "timeline `{name}` has {len} `{field}` entries for a graph of {n} ops"
        );
    }
}

/// Number of streams (rows, threads) of a timeline: its named streams, and any stream index an
/// op uses beyond them.
fn stream_count(timeline: &Timeline) -> usize {
    let used = timeline.stream.iter().map(|&s| s + 1).max().unwrap_or(0);
    timeline.streams.len().max(used)
}

/// The name of stream `s` (`stream N` when the timeline does not name it).
fn stream_name(timeline: &Timeline, s: usize) -> String {
    timeline
        .streams
        .get(s)
        .cloned()
        .unwrap_or_else(|| format!("stream {s}"))
}

/// The latest time of a timeline (its makespan, or a later end if the makespan is stale).
fn latest(timeline: &Timeline) -> u64 {
    timeline
        .end
        .iter()
        .copied()
        .max()
        .unwrap_or(0)
        .max(timeline.makespan)
}

/// `cat` of an op: `compute` or the collective kind.
fn category(op: &Op) -> &'static str {
    match op.kind {
        OpKind::Compute { .. } => "compute",
        OpKind::Collective { kind, .. } => kind.as_str(),
    }
}

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

/// An integer JSON value (signed or unsigned).
fn integer(v: &Value) -> Option<i128> {
    v.as_i64()
        .map(i128::from)
        .or_else(|| v.as_u64().map(i128::from))
}

/// Microseconds as rounded nanoseconds, as Perfetto stores them.
fn to_ns(us: f64) -> f64 {
    (us * 1000.0).round()
}

/// A complete event kept for the overlap check.
struct Slice {
    start_ns: f64,
    end_ns: f64,
    index: usize,
}

/// Checks a Chrome trace against the rules of the Trace Event Format (JSON Object Format) for
/// the events this module emits, so that Perfetto and `chrome://tracing` load it as meant:
///
/// * the top level is an object with a `traceEvents` array (`displayTimeUnit`, if present, is
///   `"ms"` or `"ns"`; `otherData`, if present, is an object);
/// * every event is an object whose `ph` is a string, `"X"` (complete) or `"M"` (metadata);
/// * a complete event has a string `name`, numeric `ts >= 0` and `dur >= 0`, integer `pid` and
///   `tid`, and, if present, a string `cat` and an object `args`;
/// * a metadata event is named `process_name`, `thread_name`, `process_sort_index` or
///   `thread_sort_index`, has an integer `pid` (and `tid` for the thread ones) and an `args`
///   object with a string `name` (the `*_name` events) or an integer `sort_index`;
/// * no two complete events of one thread (`pid`, `tid`) overlap, times rounded to whole
///   nanoseconds as Perfetto stores them (events that only touch, or have zero duration at an
///   end of another, do not overlap): Perfetto would nest overlapping slices, which
///   misrepresents a FIFO stream.
///
/// Returns the number of complete events, or a message naming the first offending event by its
/// index in `traceEvents`. Cost: O(events log events).
pub fn validate_chrome_trace(value: &Value) -> Result<usize, String> {
    let top = value.as_object().ok_or(
        "the trace is not a JSON object (the JSON Object Format is {\"traceEvents\": [...]})",
    )?;
    let events = top
        .get("traceEvents")
        .ok_or("the trace has no `traceEvents` field")?
        .as_array()
        .ok_or("`traceEvents` is not an array")?;
    if let Some(unit) = top.get("displayTimeUnit") {
        if unit != "ms" && unit != "ns" {
            return Err(format!("`displayTimeUnit` is {unit}, not \"ms\" or \"ns\""));
        }
    }
    if let Some(other) = top.get("otherData") {
        if !other.is_object() {
            return Err("`otherData` is not an object".into());
        }
    }
    let mut tracks: BTreeMap<(i128, i128), Vec<Slice>> = BTreeMap::new();
    let mut complete = 0;
    for (i, e) in events.iter().enumerate() {
        let at = |what: &str| format!("traceEvents[{i}]: {what}");
        let e = e.as_object().ok_or_else(|| at("not an object"))?;
        let ph = e
            .get("ph")
            .ok_or_else(|| at("no `ph`"))?
            .as_str()
            .ok_or_else(|| at("`ph` is not a string"))?;
        let int_field = |key: &str| -> Result<i128, String> {
            e.get(key)
                .and_then(integer)
                .ok_or_else(|| at(&format!("`{key}` is missing or not an integer")))
        };
        match ph {
            "X" => {
                let name = e
                    .get("name")
                    .and_then(Value::as_str)
                    .ok_or_else(|| at("complete event without a string `name`"))?;
                let at = |what: &str| at(&format!("complete event `{name}`: {what}"));
                let number = |key: &str| -> Result<f64, String> {
                    let v = e
                        .get(key)
                        .and_then(Value::as_f64)
                        .ok_or_else(|| at(&format!("`{key}` is missing or not a number")))?;
                    if v < 0.0 {
                        return Err(at(&format!("`{key}` is negative ({v})")));
                    }
                    Ok(v)
                };
                let ts = number("ts")?;
                let dur = number("dur")?;
                let pid = int_field("pid")?;
                let tid = int_field("tid")?;
                if e.get("cat").is_some_and(|c| !c.is_string()) {
                    return Err(at("`cat` is not a string"));
                }
                if e.get("args").is_some_and(|a| !a.is_object()) {
                    return Err(at("`args` is not an object"));
                }
                let start_ns = to_ns(ts);
                tracks.entry((pid, tid)).or_default().push(Slice {
                    start_ns,
                    end_ns: start_ns + to_ns(dur),
                    index: i,
                });
                complete += 1;
            }
            "M" => {
                let name = e
                    .get("name")
                    .and_then(Value::as_str)
                    .ok_or_else(|| at("metadata event without a string `name`"))?;
                if !METADATA_NAMES.contains(&name) {
                    return Err(at(&format!(
                        "metadata event `{name}` is not one of {}",
                        METADATA_NAMES.join(", ")
                    )));
                }
                int_field("pid")?;
                if name.starts_with("thread_") {
                    int_field("tid")?;
                }
                let args = e.get("args").and_then(Value::as_object).ok_or_else(|| {
                    at(&format!("metadata event `{name}` without an `args` object"))
                })?;
                let ok = if name.ends_with("_name") {
                    args.get("name").is_some_and(Value::is_string)
                } else {
                    args.get("sort_index").and_then(integer).is_some()
                };
                if !ok {
                    let key = if name.ends_with("_name") {
                        "a string `name`"
                    } else {
                        "an integer `sort_index`"
                    };
                    return Err(at(&format!(
                        "metadata event `{name}` needs {key} in `args`"
                    )));
                }
            }
            other => {
                return Err(at(&format!(
                    "phase `{other}` is not one this exporter emits (\"X\" or \"M\")"
                )))
            }
        }
    }
    // Overlaps: per thread, by start (then end), each slice must start at or after the latest
    // end so far. Report the offender with the smallest index.
    let mut first: Option<(usize, usize, (i128, i128))> = None;
    for (&track, slices) in &mut tracks {
        slices.sort_by(|a, b| {
            a.start_ns
                .total_cmp(&b.start_ns)
                .then(a.end_ns.total_cmp(&b.end_ns))
                .then(a.index.cmp(&b.index))
        });
        let mut latest: Option<(f64, usize)> = None;
        for s in slices.iter() {
            if let Some((end, holder)) = latest {
                if s.start_ns < end && first.is_none_or(|(f, _, _)| s.index < f) {
                    first = Some((s.index, holder, track));
                }
                if s.end_ns > end {
                    latest = Some((s.end_ns, s.index));
                }
            } else {
                latest = Some((s.end_ns, s.index));
            }
        }
    }
    if let Some((i, j, (pid, tid))) = first {
        let name = |k: usize| events[k].get("name").and_then(Value::as_str).unwrap_or("");
        let ts = |k: usize| events[k].get("ts").cloned().unwrap_or(Value::Null);
        return Err(format!(
            "traceEvents[{i}]: complete event `{}` (pid {pid}, tid {tid}, ts {}) overlaps \
             traceEvents[{j}] `{}` (ts {}) on the same thread; Perfetto would nest them",
            name(i),
            ts(i),
            name(j),
            ts(j),
        ));
    }
    Ok(complete)
}

// ---------------------------------------------------------------------------------------------
// SVG Gantt chart
// ---------------------------------------------------------------------------------------------

/// Nanoseconds per microsecond.
const NS_PER_US: u64 = 1_000;
/// Nanoseconds per millisecond.
const NS_PER_MS: u64 = 1_000_000;

/// Width of the whole chart (px).
const WIDTH: f64 = 1200.0;
/// Left of the plot area; stream labels are right-aligned before it (px).
const PLOT_LEFT: f64 = 150.0;
/// Right margin (px).
const RIGHT_MARGIN: f64 = 30.0;
/// Top margin (px).
const TOP: f64 = 10.0;
/// Height of the legend line (px).
const LEGEND_HEIGHT: f64 = 26.0;
/// Height of a panel title (px).
const TITLE_HEIGHT: f64 = 24.0;
/// Height of a stream row (px).
const ROW_HEIGHT: f64 = 22.0;
/// Height of an op bar within its row (px).
const BAR_HEIGHT: f64 = 16.0;
/// Height of a time axis under a panel (px).
const AXIS_HEIGHT: f64 = 28.0;
/// Space between panels (px).
const PANEL_GAP: f64 = 14.0;
/// Narrowest op bar (px), so that short ops stay visible.
const MIN_BAR: f64 = 0.5;
/// Narrowest op bar (px) drawn with a white edge.
const EDGE_FROM: f64 = 3.0;
/// Legend entry pitch (px).
const LEGEND_PITCH: f64 = 120.0;

/// Colour classes of ops, in legend order.
const CLASSES: [(&str, &str); 9] = [
    ("GEMM", "#4e79a7"),
    ("attention", "#76b7b2"),
    ("other compute", "#bab0ac"),
    ("all-reduce", "#e15759"),
    ("all-gather", "#f28e2b"),
    ("reduce-scatter", "#edc948"),
    ("all-to-all", "#b07aa1"),
    ("send-recv", "#9c755f"),
    ("broadcast", "#ff9da7"),
];

/// The colour class of an op: an index into [`CLASSES`].
fn class_index(op: &Op) -> usize {
    match op.kind {
        OpKind::Compute { class, .. } => match class {
            ComputeClass::Gemm => 0,
            ComputeClass::Attention => 1,
            _ => 2,
        },
        OpKind::Collective { kind, .. } => match kind {
            CollectiveKind::AllReduce => 3,
            CollectiveKind::AllGather => 4,
            CollectiveKind::ReduceScatter => 5,
            CollectiveKind::AllToAll => 6,
            CollectiveKind::SendRecv => 7,
            CollectiveKind::Broadcast => 8,
        },
    }
}

/// `ns / unit` (a power of ten) as an exact decimal without trailing zeros: `decimal(1500,
/// 1000)` is `1.5`.
fn decimal(ns: u64, unit: u64) -> String {
    let (whole, frac) = (ns / unit, ns % unit);
    if frac == 0 {
        return whole.to_string();
    }
    let digits = unit.ilog10() as usize;
    let frac = format!("{frac:0digits$}");
    format!("{whole}.{}", frac.trim_end_matches('0'))
}

/// Appends `s` escaped for XML text and attribute values; characters XML 1.0 forbids (most
/// control characters) become U+FFFD.
fn push_escaped(out: &mut String, s: &str) {
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\t' | '\n' | '\r' => out.push(c),
            c if (c as u32) < 0x20 || c == '\u{FFFE}' || c == '\u{FFFF}' => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
}

/// `s` escaped for XML.
fn escaped(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    push_escaped(&mut out, s);
    out
}

/// A tick step of 1, 2 or 5 times a power of ten (ns) giving at most about 8 intervals over
/// `span` ns.
fn tick_step(span: u64) -> u64 {
    let raw = span.div_ceil(8).max(1);
    let mut p = 1u64;
    while p.saturating_mul(10) <= raw {
        p *= 10;
    }
    [1, 2, 5, 10]
        .into_iter()
        .map(|m| p.saturating_mul(m))
        .find(|&s| s >= raw)
        .unwrap_or(u64::MAX)
}

/// The timelines of `graph` as a standalone SVG Gantt chart (see the module docs): one panel
/// per scheduler, one row per stream, one rectangle per op with a `<title>` tooltip, colours
/// by op class, a shared time scale with an axis under each panel. Deterministic; O(ops) per
/// timeline.
///
/// # Panics
///
/// If a timeline does not have one `start`, `end` and `stream` entry per op of `graph`.
pub fn svg_gantt(graph: &Graph, timelines: &[(&str, &Timeline)]) -> String {
    for &(name, t) in timelines {
        check_lengths(graph, name, t);
    }
    let plot_width = WIDTH - PLOT_LEFT - RIGHT_MARGIN;
    let span = timelines
        .iter()
        .map(|(_, t)| latest(t))
        .max()
        .unwrap_or(0)
        .max(1);
    let scale = plot_width / span as f64;
    let x_of = |ns: u64| PLOT_LEFT + ns as f64 * scale;
    let (unit, unit_name) = if span >= NS_PER_MS {
        (NS_PER_MS, "ms")
    } else {
        (NS_PER_US, "µs")
    };
    let step = tick_step(span);

    let panel_height =
        |t: &Timeline| TITLE_HEIGHT + stream_count(t) as f64 * ROW_HEIGHT + AXIS_HEIGHT;
    let height = TOP
        + LEGEND_HEIGHT
        + timelines
            .iter()
            .map(|(_, t)| panel_height(t) + PANEL_GAP)
            .sum::<f64>()
        + TOP;

    let mut out = String::with_capacity(512 + 256 * graph.len() * timelines.len());
    // `write!` to a String cannot fail.
    let _ = writeln!(
        out,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH}\" height=\"{height}\" \
         viewBox=\"0 0 {WIDTH} {height}\" font-family=\"sans-serif\" font-size=\"12\">"
    );
    let _ = writeln!(
        out,
        "<title>Concerto timelines of {}</title>",
        escaped(graph.name())
    );
    let _ = writeln!(
        out,
        "<rect class=\"background\" x=\"0\" y=\"0\" width=\"{WIDTH}\" height=\"{height}\" \
         fill=\"#ffffff\"/>"
    );

    // Legend: the classes present in the graph, in a fixed order.
    let mut present = [false; CLASSES.len()];
    for op in graph.ops() {
        present[class_index(op)] = true;
    }
    out.push_str("<g class=\"legend\">\n");
    let mut x = PLOT_LEFT;
    for (c, &(label, colour)) in CLASSES.iter().enumerate() {
        if !present[c] {
            continue;
        }
        let _ = writeln!(
            out,
            "<rect class=\"legend\" x=\"{x:.2}\" y=\"{TOP}\" width=\"12\" height=\"12\" \
             fill=\"{colour}\"/><text x=\"{:.2}\" y=\"{:.2}\">{label}</text>",
            x + 16.0,
            TOP + 10.5,
        );
        x += LEGEND_PITCH;
    }
    out.push_str("</g>\n");

    let mut y = TOP + LEGEND_HEIGHT;
    for &(name, t) in timelines {
        let rows = stream_count(t);
        let rows_top = y + TITLE_HEIGHT;
        let rows_bottom = rows_top + rows as f64 * ROW_HEIGHT;
        let _ = writeln!(out, "<g class=\"panel\">");
        let _ = writeln!(
            out,
            "<text class=\"title\" x=\"{PLOT_LEFT}\" y=\"{:.2}\" font-size=\"14\" \
             font-weight=\"bold\">{} — makespan {} µs</text>",
            y + 17.0,
            escaped(name),
            decimal(t.makespan, NS_PER_US),
        );
        // Row bands and stream labels.
        for s in 0..rows {
            let row_y = rows_top + s as f64 * ROW_HEIGHT;
            let fill = if s % 2 == 0 { "#f4f4f4" } else { "#eaeaea" };
            let _ = writeln!(
                out,
                "<rect class=\"row\" x=\"{PLOT_LEFT}\" y=\"{row_y:.2}\" width=\"{plot_width}\" \
                 height=\"{ROW_HEIGHT}\" fill=\"{fill}\"/><text x=\"{:.2}\" y=\"{:.2}\" \
                 text-anchor=\"end\">{}</text>",
                PLOT_LEFT - 8.0,
                row_y + ROW_HEIGHT / 2.0 + 4.0,
                escaped(&stream_name(t, s)),
            );
        }
        // Grid lines and the time axis.
        let axis_y = rows_bottom;
        let _ = writeln!(
            out,
            "<line x1=\"{PLOT_LEFT}\" y1=\"{axis_y:.2}\" x2=\"{:.2}\" y2=\"{axis_y:.2}\" \
             stroke=\"#333333\"/>",
            PLOT_LEFT + plot_width,
        );
        let _ = writeln!(
            out,
            "<text x=\"{:.2}\" y=\"{:.2}\" text-anchor=\"end\" fill=\"#555555\">time ({unit_name})</text>",
            PLOT_LEFT - 8.0,
            axis_y + 18.0,
        );
        let mut tick = 0u64;
        while tick <= span {
            let tx = x_of(tick);
            let _ = writeln!(
                out,
                "<line x1=\"{tx:.2}\" y1=\"{rows_top:.2}\" x2=\"{tx:.2}\" y2=\"{axis_y:.2}\" \
                 stroke=\"#ffffff\" stroke-width=\"1\"/><line x1=\"{tx:.2}\" y1=\"{axis_y:.2}\" \
                 x2=\"{tx:.2}\" y2=\"{:.2}\" stroke=\"#333333\"/><text x=\"{tx:.2}\" \
                 y=\"{:.2}\" text-anchor=\"middle\">{}</text>",
                axis_y + 5.0,
                axis_y + 18.0,
                decimal(tick, unit),
            );
            match tick.checked_add(step) {
                Some(next) => tick = next,
                None => break,
            }
        }
        // Ops, in program order (rows never overlap within a valid timeline).
        for id in graph.ids() {
            let op = graph.op(id);
            let (start, end) = (t.start[id.0], t.end[id.0]);
            let dur = end.saturating_sub(start);
            let bar_y =
                rows_top + t.stream[id.0] as f64 * ROW_HEIGHT + (ROW_HEIGHT - BAR_HEIGHT) / 2.0;
            let width = (dur as f64 * scale).max(MIN_BAR);
            // A hairline edge separates adjacent bars of one class; narrow bars go without,
            // so that the edge does not hide them.
            let edge = if width >= EDGE_FROM {
                " stroke=\"#ffffff\" stroke-width=\"0.5\""
            } else {
                ""
            };
            let _ = write!(
                out,
                "<rect class=\"op\" x=\"{:.2}\" y=\"{bar_y:.2}\" width=\"{width:.2}\" \
                 height=\"{BAR_HEIGHT}\"{edge} fill=\"{}\"><title>",
                x_of(start),
                CLASSES[class_index(op)].1,
            );
            push_escaped(&mut out, &op.name);
            let _ = writeln!(
                out,
                " ({})\n{} – {} µs ({} µs)</title></rect>",
                category(op),
                decimal(start, NS_PER_US),
                decimal(end, NS_PER_US),
                decimal(dur, NS_PER_US),
            );
        }
        // The makespan.
        let mx = x_of(t.makespan);
        let _ = writeln!(
            out,
            "<line x1=\"{mx:.2}\" y1=\"{:.2}\" x2=\"{mx:.2}\" y2=\"{axis_y:.2}\" \
             stroke=\"#d62728\" stroke-width=\"1.5\" stroke-dasharray=\"4 3\"/>",
            rows_top - 4.0,
        );
        out.push_str("</g>\n");
        y += panel_height(t) + PANEL_GAP;
    }
    out.push_str("</svg>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::{DType, GemmShape, GraphBuilder, LinkClass};

    /// `fc` (GEMM) -> `ar` (all-reduce), `fc` -> `add<&>` (elementwise).
    fn graph() -> Graph {
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
        b.add(
            Op::collective(
                "ar",
                CollectiveKind::AllReduce,
                8192,
                8,
                LinkClass::IntraNode,
            ),
            &[fc],
        );
        b.add(
            Op::compute("add<&>", ComputeClass::Elementwise, 4096, 24576),
            &[fc],
        );
        b.finish()
    }

    fn timeline(start: Vec<u64>, end: Vec<u64>) -> Timeline {
        let makespan = end.iter().copied().max().unwrap_or(0);
        Timeline {
            start,
            end,
            stream: vec![0, 1, 0],
            streams: vec!["compute".into(), "comm.intra-node".into()],
            makespan,
        }
    }

    /// Program order: fc [0, 1500), ar [1500, 4000), add [4000, 4700).
    /// Concerto: fc [0, 1500), ar [1500, 4000), add [1500, 2250) (hidden behind ar).
    fn timelines() -> (Timeline, Timeline) {
        (
            timeline(vec![0, 1500, 4000], vec![1500, 4000, 4700]),
            timeline(vec![0, 1500, 1500], vec![1500, 4000, 2250]),
        )
    }

    fn events(v: &Value) -> &Vec<Value> {
        v["traceEvents"].as_array().unwrap()
    }

    fn slices(v: &Value) -> Vec<&Value> {
        events(v).iter().filter(|e| e["ph"] == "X").collect()
    }

    #[test]
    fn trace_validates_with_metadata_and_exact_times() {
        let g = graph();
        let (a, b) = timelines();
        let v = chrome_trace(&g, &[("program order", &a), ("concerto", &b)]);
        assert_eq!(validate_chrome_trace(&v), Ok(6));
        assert_eq!(v["displayTimeUnit"], "ns");
        assert_eq!(v["otherData"]["graph"], "tiny");
        for pid in [1, 2] {
            let x = slices(&v).into_iter().filter(|e| e["pid"] == pid).count();
            assert_eq!(x, 3);
        }
        // Metadata first: per process a name, a sort index, and two of each per thread.
        let ev = events(&v);
        assert_eq!(ev.len(), 2 * (2 + 2 * 2) + 6);
        assert!(ev[..12].iter().all(|e| e["ph"] == "M"));
        assert!(ev[12..].iter().all(|e| e["ph"] == "X"));
        let meta = |name: &str, pid: u64| -> Vec<&Value> {
            ev.iter()
                .filter(|e| e["ph"] == "M" && e["name"] == name && e["pid"] == pid)
                .map(|e| &e["args"])
                .collect()
        };
        assert_eq!(
            meta("process_name", 1)[0]["name"],
            "program order (makespan 4.7 µs)"
        );
        assert_eq!(meta("process_name", 2)[0]["makespan_ns"], 4000);
        assert_eq!(meta("process_sort_index", 2)[0]["sort_index"], 1);
        let threads: Vec<&str> = meta("thread_name", 2)
            .iter()
            .map(|a| a["name"].as_str().unwrap())
            .collect();
        assert_eq!(threads, ["compute", "comm.intra-node"]);
        assert_eq!(meta("thread_sort_index", 1).len(), 2);

        // Times: program order, by (pid, tid, ts): fc, add<&> on tid 1, ar on tid 2.
        let x = slices(&v);
        let names: Vec<&str> = x.iter().map(|e| e["name"].as_str().unwrap()).collect();
        assert_eq!(names, ["fc", "add<&>", "ar", "fc", "add<&>", "ar"]);
        let ar = x[2];
        assert_eq!(ar["ts"].as_f64(), Some(1.5));
        assert_eq!(ar["dur"].as_f64(), Some(2.5));
        assert_eq!((ar["pid"].as_u64(), ar["tid"].as_u64()), (Some(1), Some(2)));
        assert_eq!(ar["cat"], "all-reduce");
        assert_eq!(ar["args"]["op"], 1);
        assert_eq!(ar["args"]["start_ns"], 1500);
        assert_eq!(ar["args"]["end_ns"], 4000);
        assert_eq!(ar["args"]["bytes"], 8192);
        assert_eq!(ar["args"]["group"], 8);
        assert_eq!(ar["args"]["link"], "intra-node");
        let add = x[1];
        assert_eq!(add["ts"].as_f64(), Some(4.0));
        assert_eq!(add["dur"].as_f64(), Some(0.7));
        assert_eq!(add["cat"], "compute");
        assert_eq!(add["args"]["class"], "elementwise");
        assert_eq!(add["args"]["flops"], 4096);
        assert_eq!(x[0]["args"]["gemm"]["k"], 64);
        assert_eq!(x[4]["ts"].as_f64(), Some(1.5));
        assert_eq!(x[4]["dur"].as_f64(), Some(0.75));
    }

    #[test]
    fn trace_text_is_the_same_json_and_deterministic() {
        let g = graph();
        let (a, b) = timelines();
        let tl = [("lhs", &a), ("concerto", &b)];
        let text = chrome_trace_string(&g, &tl);
        assert_eq!(text, chrome_trace_string(&g, &tl));
        let back: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(back, chrome_trace(&g, &tl));
        // One event per line.
        assert_eq!(text.lines().filter(|l| l.contains("\"ph\"")).count(), 18);
        // Sub-microsecond times print as short decimals.
        assert!(text.contains("\"ts\":4.0") || text.contains("\"ts\":4,"));
        assert!(text.contains("\"dur\":0.7,"), "{text}");
    }

    #[test]
    fn validate_rejects_what_perfetto_would_misread() {
        let g = graph();
        let (a, b) = timelines();
        let good = chrome_trace(&g, &[("lhs", &a), ("concerto", &b)]);
        let first_x = events(&good).iter().position(|e| e["ph"] == "X").unwrap();

        // Overlap on one track: move `add<&>` (program order, tid 1) to start inside `fc`.
        let mut v = good.clone();
        v["traceEvents"][first_x + 1]["ts"] = json!(1.0);
        let e = validate_chrome_trace(&v).unwrap_err();
        assert!(e.contains(&format!("traceEvents[{}]", first_x + 1)), "{e}");
        assert!(e.contains("overlaps"), "{e}");

        // The same overlap on another thread is fine.
        let mut v = good.clone();
        v["traceEvents"][first_x + 1]["ts"] = json!(1.0);
        v["traceEvents"][first_x + 1]["tid"] = json!(7);
        assert_eq!(validate_chrome_trace(&v), Ok(6));

        // A zero-duration slice where another starts, and slices whose float ends round
        // (0.1 + 0.2 > 0.3), do not overlap.
        let touching = json!({"traceEvents": [
            {"ph": "X", "name": "a", "ts": 0.1, "dur": 0.2, "pid": 1, "tid": 1},
            {"ph": "X", "name": "b", "ts": 0.3, "dur": 0.0, "pid": 1, "tid": 1},
            {"ph": "X", "name": "c", "ts": 0.3, "dur": 1, "pid": 1, "tid": 1},
        ]});
        assert_eq!(validate_chrome_trace(&touching), Ok(3));

        let mut v = good.clone();
        v.as_object_mut().unwrap().remove("traceEvents");
        assert!(validate_chrome_trace(&v)
            .unwrap_err()
            .contains("traceEvents"));
        assert!(validate_chrome_trace(&json!([])).is_err());
        assert!(validate_chrome_trace(&json!({"traceEvents": {}})).is_err());

        let mut v = good.clone();
        v["traceEvents"][first_x]["ph"] = json!("B");
        let e = validate_chrome_trace(&v).unwrap_err();
        assert!(e.contains(&format!("traceEvents[{first_x}]")), "{e}");
        let mut v = good.clone();
        v["traceEvents"][3]["ph"] = json!(88);
        assert!(validate_chrome_trace(&v)
            .unwrap_err()
            .contains("traceEvents[3]"));

        let mut v = good.clone();
        v["traceEvents"][first_x + 2]["dur"] = json!(-1.0);
        let e = validate_chrome_trace(&v).unwrap_err();
        assert!(e.contains(&format!("traceEvents[{}]", first_x + 2)), "{e}");
        assert!(e.contains("negative"), "{e}");

        let mut v = good.clone();
        v["traceEvents"][first_x]["pid"] = json!(1.5);
        assert!(validate_chrome_trace(&v).unwrap_err().contains("pid"));
        let mut v = good.clone();
        v["traceEvents"][0]["name"] = json!("process_labels");
        assert!(validate_chrome_trace(&v)
            .unwrap_err()
            .contains("traceEvents[0]"));
        let mut v = good.clone();
        v["traceEvents"][1]["args"] = json!({"sort_index": "first"});
        assert!(validate_chrome_trace(&v)
            .unwrap_err()
            .contains("traceEvents[1]"));
        let mut v = good;
        v["displayTimeUnit"] = json!("us");
        assert!(validate_chrome_trace(&v).is_err());
    }

    /// A minimal XML well-formedness check: balanced, properly nested tags, quoted attributes,
    /// no raw `<` or `&` outside markup except entity references. Returns the number of
    /// elements by name.
    fn well_formed(xml: &str) -> BTreeMap<String, usize> {
        fn check_text(t: &str) {
            assert!(!t.contains('<') && !t.contains('>'), "raw markup in {t:?}");
            let mut rest = t;
            while let Some(i) = rest.find('&') {
                let end = rest[i..].find(';').expect("unterminated entity") + i;
                let entity = &rest[i + 1..end];
                assert!(
                    matches!(entity, "amp" | "lt" | "gt" | "quot" | "apos")
                        || entity.starts_with('#'),
                    "unknown entity &{entity};"
                );
                rest = &rest[end + 1..];
            }
        }
        let mut counts = BTreeMap::new();
        let mut stack: Vec<String> = Vec::new();
        let mut rest = xml;
        let mut roots = 0;
        while let Some(open) = rest.find('<') {
            let text = &rest[..open];
            check_text(text);
            assert!(
                !stack.is_empty() || text.trim().is_empty(),
                "text outside the root"
            );
            let close = rest[open..].find('>').expect("unterminated tag") + open;
            let tag = &rest[open + 1..close];
            rest = &rest[close + 1..];
            if let Some(name) = tag.strip_prefix('/') {
                assert_eq!(stack.pop().as_deref(), Some(name), "mismatched </{name}>");
                continue;
            }
            let (body, empty) = match tag.strip_suffix('/') {
                Some(b) => (b, true),
                None => (tag, false),
            };
            let name_end = body.find(char::is_whitespace).unwrap_or(body.len());
            let name = &body[..name_end];
            assert!(
                !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-'),
                "bad tag name {name:?}"
            );
            // Attributes: name="value" pairs.
            let mut attrs = body[name_end..].trim();
            let mut seen = Vec::new();
            while !attrs.is_empty() {
                let eq = attrs.find("=\"").expect("attribute without =\"");
                let key = attrs[..eq].trim();
                assert!(!seen.contains(&key), "duplicate attribute {key}");
                seen.push(key);
                let value_end = attrs[eq + 2..].find('"').expect("unquoted") + eq + 2;
                check_text(&attrs[eq + 2..value_end]);
                attrs = attrs[value_end + 1..].trim_start();
            }
            if stack.is_empty() {
                roots += 1;
            }
            *counts.entry(name.to_string()).or_insert(0) += 1;
            if !empty {
                stack.push(name.to_string());
            }
        }
        check_text(rest);
        assert!(rest.trim().is_empty());
        assert!(stack.is_empty(), "unclosed {stack:?}");
        assert_eq!(roots, 1);
        counts
    }

    #[test]
    fn svg_has_a_rect_per_op_and_is_well_formed() {
        let g = graph();
        let (a, b) = timelines();
        let tl = [("program order", &a), ("<concerto & co>", &b)];
        let svg = svg_gantt(&g, &tl);
        assert_eq!(svg, svg_gantt(&g, &tl));
        let counts = well_formed(&svg);
        assert!(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"1200\""));
        assert!(svg.contains("viewBox=\"0 0 1200 "));
        // Op rects: 3 per scheduler; plus background, 2 rows per panel, 3 legend classes
        // (GEMM, other compute, all-reduce).
        assert_eq!(svg.matches("<rect class=\"op\"").count(), 6);
        assert_eq!(svg.matches("<rect class=\"row\"").count(), 4);
        assert_eq!(svg.matches("<rect class=\"legend\"").count(), 3);
        assert_eq!(counts["rect"], 6 + 4 + 3 + 1);
        // One tooltip per op rect, plus the document title.
        assert_eq!(counts["title"], 7);
        assert_eq!(counts["g"], 3);
        // Escaped names and titles.
        assert!(svg.contains("<title>add&lt;&amp;&gt; (compute)\n4 – 4.7 µs (0.7 µs)</title>"));
        assert!(svg.contains("&lt;concerto &amp; co&gt; — makespan 4 µs"));
        assert!(svg.contains("program order — makespan 4.7 µs"));
        assert!(!svg.contains("add<&>"));
        // Colours by class.
        assert!(svg.contains("fill=\"#4e79a7\"><title>fc"));
        assert!(svg.contains("fill=\"#e15759\"><title>ar"));
        // Axis in µs: span 4700 ns -> ticks every 1 µs, 0 .. 4.
        assert!(svg.contains("time (µs)"));
        assert!(svg.contains(">4</text>"));
        assert!(!svg.contains(">5</text>"));
    }

    #[test]
    fn svg_scales_widths_and_uses_ms_for_long_timelines() {
        let g = graph();
        // 10 ms of compute, a 1 ns all-reduce: its bar keeps the minimum width.
        let t = timeline(
            vec![0, 10_000_000, 10_000_001],
            vec![10_000_000, 10_000_001, 12_000_000],
        );
        let svg = svg_gantt(&g, &[("lhs", &t)]);
        well_formed(&svg);
        assert!(svg.contains("time (ms)"));
        assert!(svg.contains(">12</text>"));
        assert!(svg.contains("width=\"0.50\" height=\"16\" fill=\"#e15759\""));
        assert!(svg.contains("makespan 12000 µs"));
        // fc spans 10/12 of the 1020 px plot.
        assert!(
            svg.contains("x=\"150.00\" y=\"63.00\" width=\"850.00\""),
            "{svg}"
        );
        // Control characters in names do not break the XML.
        let mut b = GraphBuilder::new("ctl\u{1}");
        b.add(Op::compute("x\u{0}y", ComputeClass::Other, 0, 0), &[]);
        let g = b.finish();
        let t = Timeline {
            start: vec![0],
            end: vec![0],
            stream: vec![0],
            streams: vec!["compute".into()],
            makespan: 0,
        };
        let svg = svg_gantt(&g, &[("x", &t)]);
        well_formed(&svg);
        assert!(svg.contains("x\u{FFFD}y"));
        assert_eq!(
            validate_chrome_trace(&chrome_trace(&g, &[("x", &t)])),
            Ok(1)
        );
        // No timelines at all.
        well_formed(&svg_gantt(&g, &[]));
        assert_eq!(validate_chrome_trace(&chrome_trace(&g, &[])), Ok(0));
    }

    #[test]
    fn decimals_and_ticks_are_exact() {
        assert_eq!(decimal(0, 1000), "0");
        assert_eq!(decimal(1500, 1000), "1.5");
        assert_eq!(decimal(1, 1000), "0.001");
        assert_eq!(decimal(2_500_000, 1_000_000), "2.5");
        assert_eq!(decimal(12_000_000, 1_000_000), "12");
        assert_eq!(tick_step(4700), 1000);
        assert_eq!(tick_step(12_000_000), 2_000_000);
        assert_eq!(tick_step(1), 1);
        assert_eq!(tick_step(u64::MAX), 5_000_000_000_000_000_000);
    }

    #[test]
    #[should_panic(expected = "timeline `bad` has 2 `start` entries for a graph of 3 ops")]
    fn mismatched_timelines_panic_with_a_message() {
        let g = graph();
        let mut t = timelines().0;
        t.start.pop();
        chrome_trace(&g, &[("bad", &t)]);
    }
}
