//! Prints every proven lower bound of a graph and the time [`bounds`] takes.
//!
//! ```text
//! cargo run --release -p concerto-extract --example bounds -- <graph.hlo | graph.json>...
//! ```
//!
//! Each file is read by its extension (HLO text for `.hlo` / `.txt`, the native JSON graph
//! otherwise, 8 GPUs per node) and costed with `Hardware::h100()` (contention does not
//! matter: the bounds are contention-free, and contention only lengthens a schedule).

use std::path::Path;
use std::process::ExitCode;
use std::time::Instant;

use concerto_extract::hlo::ImportOptions;
use concerto_graph::bounds::{bounds, horizons};
use concerto_graph::{Hardware, Stream};

fn main() -> ExitCode {
    let paths: Vec<String> = std::env::args().skip(1).collect();
    if paths.is_empty() {
        eprintln!("usage: bounds <graph.hlo | graph.json>...");
        return ExitCode::from(2);
    }
    let hw = Hardware::h100();
    for path in &paths {
        let graph = match concerto_extract::read_graph(Path::new(path), &ImportOptions::default()) {
            Ok((graph, _warnings)) => graph,
            Err(e) => {
                eprintln!("error: {e}");
                return ExitCode::FAILURE;
            }
        };
        let d = hw.durations(&graph);
        let start = Instant::now();
        let b = bounds(&graph, &d);
        let secs = start.elapsed().as_secs_f64();
        println!(
            "{path}: {} ops, {} collectives; bounds() took {:.3} s",
            graph.len(),
            graph.collective_count(),
            secs
        );
        for x in &b.all {
            println!(
                "  {:<24} {:>14.3} ms  {}",
                x.kind.as_str(),
                x.value_ns as f64 / 1e6,
                x.stream.map(Stream::name).unwrap_or_default()
            );
        }
        let start = Instant::now();
        let h = horizons(&graph, &d);
        println!(
            "  energy heads and tails: exact sums for {} of {} collectives, work {:.2e} ({:.3} s alone)",
            h.exact_collectives,
            h.collectives,
            h.work as f64,
            start.elapsed().as_secs_f64()
        );
        let best = b.best();
        println!(
            "  best: {} {:.3} ms",
            best.kind.as_str(),
            best.value_ns as f64 / 1e6
        );
    }
    ExitCode::SUCCESS
}
