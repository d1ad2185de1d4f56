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
//! [`svg_gantt`] draws one panel per scheduler (its title gives the makespan and the exposed
//! communication in µs), one row per stream with its name at the left, a row under them that
//! marks in red where communication is exposed (some collective runs and no compute op does:
//! [`crate::Timeline::exposed_comm`]), and one rectangle per op, coloured by class (GEMM,
//! attention, other compute, and one colour per collective kind; a legend lists the classes
//! present). Every panel shares one time scale, so shorter schedules end further left; each
//! panel has its own time axis (µs, or ms from 1 ms on) and a dashed line at its makespan. Each
//! op rectangle carries a `<title>` (a tooltip in browsers) with the op name, class and times.
//! Op rectangles have `class="op"`, exposed intervals `class="exposed"`; row bands
//! `class="row"`, legend swatches `class="legend"` and the page background
//! `class="background"` are the only other rectangles.
//!
//! Both exports cost O(ops) per timeline, plus sorting each stream's ops by start time for the
//! JSON (O(ops log ops)).

mod chrome;
mod gantt;
#[cfg(test)]
mod tests;
mod validate;

pub use chrome::{chrome_trace, chrome_trace_string};
pub use gantt::svg_gantt;
pub use validate::validate_chrome_trace;

use crate::ir::{Graph, Op, OpKind};
use crate::simulate::Timeline;

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

/// Nanoseconds per microsecond.
const NS_PER_US: u64 = 1_000;

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
