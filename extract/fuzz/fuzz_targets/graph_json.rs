//! Fuzzes the native graph JSON reader (`Graph::from_json`) and what every command does next
//! with a graph it accepts: cost it on an H100 (checked against the horizon), simulate its
//! program order and profile its memory. Each step must give a result or a clear error, never
//! panic, overflow or hang.
//!
//! From `extract/`: `cargo +nightly fuzz run graph_json -- -max_len=4096 -dict=fuzz/graph.dict`.
#![no_main]

use concerto_graph::{memory, simulate, Graph, Hardware, StreamPlan};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(graph) = Graph::from_json(text) else {
        return;
    };
    // Written and read back, a graph is the same graph.
    let back = Graph::from_json(&graph.to_json()).expect("a written graph reads back");
    assert_eq!(back.to_json(), graph.to_json());
    if graph.len() > 256 {
        return;
    }
    let hardware = Hardware::h100();
    let Ok(durations) = hardware.checked_durations(&graph) else {
        return;
    };
    let Ok(plan) = StreamPlan::program_order(&graph) else {
        return;
    };
    if let Ok(timeline) = simulate(&graph, &plan, &durations, hardware.contention) {
        let _ = memory::profile(&graph, &timeline);
    }
    let _ = memory::peak_lower_bound(&graph, &durations);
});
