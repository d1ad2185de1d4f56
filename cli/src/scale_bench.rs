//! `concerto bench scale`: the odd-even driver on generated DL-like training steps of growing
//! size, against the plain heuristic given the same wall time. The bench is
//! [`concerto_pipeline::bench::scale`]; this parses the arguments and renders its report.

use std::sync::Arc;

use clap::Args;
use concerto_pipeline::bench::scale::{self, ScaleConfig};

use crate::progress;
use crate::solve::{default_solver, registry, time_limit};
use crate::Failure;
use concerto_pipeline::table::Table;

/// Arguments of `concerto bench scale`.
#[derive(Args, Debug)]
pub(crate) struct ScaleArgs {
    /// Sizes (activities, approximately) of the generated training steps.
    #[arg(long, value_delimiter = ',', default_values_t = ScaleConfig::default().sizes)]
    sizes: Vec<usize>,
    /// The solver of every window. Default: `pumpkin` when compiled in, else `sgs`.
    #[arg(long, default_value_t = default_solver().to_string())]
    solver: String,
    /// Activities per block (a window holds two).
    #[arg(long, value_name = "B", default_value_t = ScaleConfig::default().block)]
    window: usize,
    /// Odd-even rounds; with no time limit, the work is fixed, so times compare across sizes.
    #[arg(long, value_name = "K", default_value_t = ScaleConfig::default().rounds)]
    rounds: usize,
    /// Time limit of each window's solve, in seconds.
    #[arg(long, value_name = "SECS", default_value_t = ScaleConfig::default().window_time_limit.as_secs_f64())]
    window_time_limit: f64,
    /// Schedules the starting heuristic may generate.
    #[arg(long, default_value_t = ScaleConfig::default().start_schedules)]
    start_schedules: u64,
    /// Communication channels of the generated steps (1 or 2).
    #[arg(long, default_value_t = ScaleConfig::default().channels)]
    channels: usize,
    /// Seed of the generator and the solvers.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Worker threads (default: every core).
    #[arg(long)]
    threads: Option<usize>,
    /// Print one JSON object instead of the table.
    #[arg(long)]
    json: bool,
}

pub(crate) fn run(args: &ScaleArgs) -> Result<(), Failure> {
    let window_time_limit = time_limit(Some(args.window_time_limit))
        .map_err(|_| {
            anyhow::anyhow!(
                "--window-time-limit must be a positive number of seconds, got {}",
                args.window_time_limit
            )
        })?
        .expect("given");
    let threads = args
        .threads
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    let config = ScaleConfig {
        sizes: args.sizes.clone(),
        channels: args.channels,
        block: args.window,
        rounds: args.rounds,
        window_time_limit,
        start_schedules: args.start_schedules,
        seed: args.seed,
        threads,
    };
    let solver = Arc::from(registry().get(&args.solver)?);
    let report = scale::run(&config, solver, progress::bar(args.json).as_ref())?;
    if args.json {
        println!(
            "{}",
            serde_json::json!({
                "solver": args.solver,
                "window": args.window,
                "rounds": args.rounds,
                "window_time_limit_s": args.window_time_limit,
                "threads": threads,
                "sizes": report.rows,
            })
        );
        return Ok(());
    }
    let mut t = Table::new(&[
        "n",
        "rounds",
        "time s",
        "start",
        "odd-even",
        "lower bound",
        "gap %",
        "heuristic (same time)",
        "heuristic gap %",
        "peak MiB",
    ]);
    for r in &report.rows {
        t.row(vec![
            r.n.to_string(),
            r.rounds.to_string(),
            format!("{:.2}", r.time_s),
            r.start_makespan.to_string(),
            r.makespan.to_string(),
            r.lower_bound.to_string(),
            format!("{:.3}", r.gap_pct),
            r.heuristic_makespan.to_string(),
            format!("{:.3}", r.heuristic_gap_pct),
            r.peak_rss_mb.map_or("-".into(), |m| format!("{m:.0}")),
        ]);
    }
    print!("{}", t.render());
    Ok(())
}
