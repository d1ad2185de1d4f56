//! Measures the list-scheduling portfolio (`concerto_graph::list`) on graph files: each rule's
//! simulated makespan and time, the whole default portfolio's time, and `baselines::lhs`.
//!
//! ```text
//! cargo run --release -p concerto-extract --example list_portfolio -- \
//!     data/hlo/mixtral_8x7b_bf16_2x8.hlo.gz [more graphs: .hlo or native .json]
//! ```
//!
//! Costed on `Hardware::h100()`; `CONTENTION` (default 1) sets the compute slowdown.

use std::path::Path;
use std::time::Instant;

use concerto_extract::hlo::ImportOptions;
use concerto_graph::list::{portfolio, ListConfig, Rule};
use concerto_graph::{baselines, bounds, simulate, Hardware};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let contention: f64 = std::env::var("CONTENTION")
        .ok()
        .map(|s| s.parse())
        .transpose()?
        .unwrap_or(1.0);
    let hw = Hardware::h100();
    for arg in std::env::args().skip(1) {
        let t = Instant::now();
        let (graph, _) = concerto_extract::read_graph(Path::new(&arg), &ImportOptions::default())?;
        let read_s = t.elapsed().as_secs_f64();
        let d = hw.durations(&graph);
        let ms = |ns: u64| ns as f64 / 1e6;
        println!(
            "{} ({} ops, {} collectives, read {read_s:.2} s), contention {contention}",
            graph.name(),
            graph.len(),
            graph.collective_count()
        );
        let bound = bounds::bounds(&graph, &d).value_ns();
        let t = Instant::now();
        let lhs = baselines::lhs(&graph, &d)?;
        let lhs_s = t.elapsed().as_secs_f64();
        let lhs_ns = simulate(&graph, &lhs, &d, contention)?.makespan;
        let po = simulate(&graph, &baselines::program_order(&graph)?, &d, contention)?.makespan;
        println!("  {:<14} {:>12.3} ms", "lower bound", ms(bound));
        println!("  {:<14} {:>12.3} ms", "program order", ms(po));
        println!("  {:<14} {:>12.3} ms {:>8.3} s", "lhs", ms(lhs_ns), lhs_s);
        // Each rule alone (Justified after the rules before it in the default order);
        // `PORTFOLIO_ONLY=1` skips them.
        let each = std::env::var("PORTFOLIO_ONLY").is_err();
        for rule in Rule::ALL.into_iter().filter(|_| each) {
            let rules = match rule {
                Rule::Justified => Rule::DEFAULT
                    .into_iter()
                    .take_while(|r| *r != Rule::Sampled)
                    .collect(),
                r => vec![r],
            };
            let config = ListConfig {
                contention,
                rules,
                ..ListConfig::default()
            };
            let t = Instant::now();
            let c = portfolio(&graph, &d, &config, &|| false)?;
            let s = t.elapsed().as_secs_f64();
            let mine = c.iter().find(|c| c.rule == rule).map(|c| c.makespan_ns);
            let mine = mine.unwrap_or(u64::MAX);
            println!(
                "  {:<14} {:>12.3} ms {:>8.3} s {:>+8.2} % vs lhs",
                rule.as_str(),
                ms(mine),
                s,
                (mine as f64 / lhs_ns as f64 - 1.0) * 100.0
            );
        }
        let config = ListConfig {
            contention,
            ..ListConfig::default()
        };
        let t = Instant::now();
        let all = portfolio(&graph, &d, &config, &|| false)?;
        let s = t.elapsed().as_secs_f64();
        println!(
            "  {:<14} {:>12.3} ms {:>8.3} s (best: {})",
            "portfolio",
            ms(all[0].makespan_ns),
            s,
            all[0].rule
        );
    }
    Ok(())
}
