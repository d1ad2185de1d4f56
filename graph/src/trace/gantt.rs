//! Timelines as an SVG Gantt chart (see the [`super`] module docs for what it draws).

use std::fmt::Write as _;

use super::{category, check_lengths, decimal, latest, stream_count, stream_name, NS_PER_US};
use crate::ir::{CollectiveKind, ComputeClass, Graph, Op, OpKind};
use crate::simulate::Timeline;

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
pub(super) fn tick_step(span: u64) -> u64 {
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
    let span = timelines
        .iter()
        .map(|(_, t)| latest(t))
        .max()
        .unwrap_or(0)
        .max(1);
    let axis = TimeAxis::new(span);
    let height = TOP
        + LEGEND_HEIGHT
        + timelines
            .iter()
            .map(|(_, t)| panel_height(t) + PANEL_GAP)
            .sum::<f64>()
        + TOP;

    let mut out = String::with_capacity(512 + 256 * graph.len() * timelines.len());
    write_head(&mut out, graph, height);
    write_legend(&mut out, graph);
    let mut y = TOP + LEGEND_HEIGHT;
    for &(name, t) in timelines {
        write_panel(&mut out, graph, name, t, y, &axis);
        y += panel_height(t) + PANEL_GAP;
    }
    out.push_str("</svg>\n");
    out
}

/// The time scale shared by every panel.
struct TimeAxis {
    /// Width of the plot area (px).
    plot_width: f64,
    /// The latest end over all timelines (ns, at least 1).
    span: u64,
    /// Pixels per nanosecond.
    scale: f64,
    /// The axis unit (ns) and its name.
    unit: (u64, &'static str),
    /// Nanoseconds between ticks.
    step: u64,
}

impl TimeAxis {
    /// The scale that fits `span` ns into the plot area, in ms from 1 ms on, else in µs.
    fn new(span: u64) -> Self {
        let plot_width = WIDTH - PLOT_LEFT - RIGHT_MARGIN;
        TimeAxis {
            plot_width,
            span,
            scale: plot_width / span as f64,
            unit: if span >= NS_PER_MS {
                (NS_PER_MS, "ms")
            } else {
                (NS_PER_US, "µs")
            },
            step: tick_step(span),
        }
    }

    /// The x coordinate of time `ns`.
    fn x_of(&self, ns: u64) -> f64 {
        PLOT_LEFT + ns as f64 * self.scale
    }
}

/// The height of timeline `t`'s panel: its title, its stream rows, the exposed-communication
/// row and its axis.
fn panel_height(t: &Timeline) -> f64 {
    TITLE_HEIGHT + (stream_count(t) + 1) as f64 * ROW_HEIGHT + AXIS_HEIGHT
}

/// Colour of the exposed-communication row's bars.
const EXPOSED: &str = "#d62728";

/// Writes the `<svg>` element's opening, the chart's title and its white background.
fn write_head(out: &mut String, graph: &Graph, height: f64) {
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
}

/// Writes the legend: the classes present in the graph, in a fixed order.
fn write_legend(out: &mut String, graph: &Graph) {
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
}

/// Writes timeline `t`'s panel, its top at `y`: the title, the stream rows, the
/// exposed-communication row, the time axis, the ops and the makespan.
fn write_panel(out: &mut String, graph: &Graph, name: &str, t: &Timeline, y: f64, axis: &TimeAxis) {
    let rows = stream_count(t);
    let rows_top = y + TITLE_HEIGHT;
    let rows_bottom = rows_top + (rows + 1) as f64 * ROW_HEIGHT;
    let exposed = t.exposed_comm(graph);
    let _ = writeln!(out, "<g class=\"panel\">");
    let _ = writeln!(
        out,
        "<text class=\"title\" x=\"{PLOT_LEFT}\" y=\"{:.2}\" font-size=\"14\" \
         font-weight=\"bold\">{} — makespan {} µs, exposed communication {} µs</text>",
        y + 17.0,
        escaped(name),
        decimal(t.makespan, NS_PER_US),
        decimal(exposed.iter().map(|(a, b)| b - a).sum(), NS_PER_US),
    );
    // Row bands and stream labels.
    for s in 0..rows {
        let row_y = rows_top + s as f64 * ROW_HEIGHT;
        let fill = if s % 2 == 0 { "#f4f4f4" } else { "#eaeaea" };
        let _ = writeln!(
            out,
            "<rect class=\"row\" x=\"{PLOT_LEFT}\" y=\"{row_y:.2}\" width=\"{}\" \
             height=\"{ROW_HEIGHT}\" fill=\"{fill}\"/><text x=\"{:.2}\" y=\"{:.2}\" \
             text-anchor=\"end\">{}</text>",
            axis.plot_width,
            PLOT_LEFT - 8.0,
            row_y + ROW_HEIGHT / 2.0 + 4.0,
            escaped(&stream_name(t, s)),
        );
    }
    write_exposed_row(out, &exposed, rows_top + rows as f64 * ROW_HEIGHT, axis);
    let axis_y = rows_bottom;
    write_axis(out, axis, rows_top, axis_y);
    write_ops(out, graph, t, rows_top, axis);
    // The makespan.
    let mx = axis.x_of(t.makespan);
    let _ = writeln!(
        out,
        "<line x1=\"{mx:.2}\" y1=\"{:.2}\" x2=\"{mx:.2}\" y2=\"{axis_y:.2}\" \
         stroke=\"#d62728\" stroke-width=\"1.5\" stroke-dasharray=\"4 3\"/>",
        rows_top - 4.0,
    );
    out.push_str("</g>\n");
}

/// Writes the row under a panel's streams that marks its exposed communication (some
/// collective runs, no compute op does: [`Timeline::exposed_comm`]), its top at `row_y`.
fn write_exposed_row(out: &mut String, exposed: &[(u64, u64)], row_y: f64, axis: &TimeAxis) {
    let _ = writeln!(
        out,
        "<rect class=\"row\" x=\"{PLOT_LEFT}\" y=\"{row_y:.2}\" width=\"{}\" \
         height=\"{ROW_HEIGHT}\" fill=\"#fbeaea\"/><text x=\"{:.2}\" y=\"{:.2}\" \
         text-anchor=\"end\" fill=\"{EXPOSED}\">exposed comm</text>",
        axis.plot_width,
        PLOT_LEFT - 8.0,
        row_y + ROW_HEIGHT / 2.0 + 4.0,
    );
    let bar_y = row_y + (ROW_HEIGHT - BAR_HEIGHT) / 2.0;
    for &(a, b) in exposed {
        let _ = writeln!(
            out,
            "<rect class=\"exposed\" x=\"{:.2}\" y=\"{bar_y:.2}\" width=\"{:.2}\" \
             height=\"{BAR_HEIGHT}\" fill=\"{EXPOSED}\"><title>exposed communication {} – {} µs \
             ({} µs)</title></rect>",
            axis.x_of(a),
            ((b - a) as f64 * axis.scale).max(MIN_BAR),
            decimal(a, NS_PER_US),
            decimal(b, NS_PER_US),
            decimal(b - a, NS_PER_US),
        );
    }
}

/// Writes a panel's grid lines (from `rows_top`) and its time axis at `axis_y`.
fn write_axis(out: &mut String, axis: &TimeAxis, rows_top: f64, axis_y: f64) {
    let (unit, unit_name) = axis.unit;
    let _ = writeln!(
        out,
        "<line x1=\"{PLOT_LEFT}\" y1=\"{axis_y:.2}\" x2=\"{:.2}\" y2=\"{axis_y:.2}\" \
         stroke=\"#333333\"/>",
        PLOT_LEFT + axis.plot_width,
    );
    let _ = writeln!(
        out,
        "<text x=\"{:.2}\" y=\"{:.2}\" text-anchor=\"end\" fill=\"#555555\">time ({unit_name})</text>",
        PLOT_LEFT - 8.0,
        axis_y + 18.0,
    );
    let mut tick = 0u64;
    while tick <= axis.span {
        let tx = axis.x_of(tick);
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
        match tick.checked_add(axis.step) {
            Some(next) => tick = next,
            None => break,
        }
    }
}

/// Writes timeline `t`'s ops as bars with tooltips, in program order (rows never overlap
/// within a valid timeline).
fn write_ops(out: &mut String, graph: &Graph, t: &Timeline, rows_top: f64, axis: &TimeAxis) {
    for id in graph.ids() {
        let op = graph.op(id);
        let (start, end) = (t.start[id.0], t.end[id.0]);
        let dur = end.saturating_sub(start);
        let bar_y = rows_top + t.stream[id.0] as f64 * ROW_HEIGHT + (ROW_HEIGHT - BAR_HEIGHT) / 2.0;
        let width = (dur as f64 * axis.scale).max(MIN_BAR);
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
            axis.x_of(start),
            CLASSES[class_index(op)].1,
        );
        push_escaped(out, &op.name);
        let _ = writeln!(
            out,
            " ({})\n{} – {} µs ({} µs)</title></rect>",
            category(op),
            decimal(start, NS_PER_US),
            decimal(end, NS_PER_US),
            decimal(dur, NS_PER_US),
        );
    }
}
