//! Tests of the trace exports: Chrome trace JSON, its validation, and the SVG Gantt chart.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use super::gantt::tick_step;
use super::*;
use crate::ir::{CollectiveKind, ComputeClass, Op};
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
                matches!(entity, "amp" | "lt" | "gt" | "quot" | "apos") || entity.starts_with('#'),
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
    // Op rects: 3 per scheduler; plus background, 2 stream rows and the exposed row per
    // panel, 3 legend classes (GEMM, other compute, all-reduce), one exposed interval per
    // panel.
    assert_eq!(svg.matches("<rect class=\"op\"").count(), 6);
    assert_eq!(svg.matches("<rect class=\"row\"").count(), 6);
    assert_eq!(svg.matches("<rect class=\"legend\"").count(), 3);
    assert_eq!(svg.matches("<rect class=\"exposed\"").count(), 2);
    assert_eq!(counts["rect"], 6 + 6 + 3 + 1 + 2);
    // One tooltip per op rect and per exposed interval, plus the document title.
    assert_eq!(counts["title"], 9);
    // Program order exposes all of ar; concerto hides its first 0.75 µs behind add.
    assert!(svg.contains("<title>exposed communication 1.5 – 4 µs (2.5 µs)</title>"));
    assert!(svg.contains("<title>exposed communication 2.25 – 4 µs (1.75 µs)</title>"));
    assert_eq!(counts["g"], 3);
    // Escaped names and titles.
    assert!(svg.contains("<title>add&lt;&amp;&gt; (compute)\n4 – 4.7 µs (0.7 µs)</title>"));
    assert!(
        svg.contains("&lt;concerto &amp; co&gt; — makespan 4 µs, exposed communication 1.75 µs")
    );
    assert!(svg.contains("program order — makespan 4.7 µs, exposed communication 2.5 µs"));
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
