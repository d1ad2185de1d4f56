//! `concerto bench scale`: the odd-even driver on generated DL-like training steps of growing
//! size, against the plain heuristic given the same wall time. The bench is
//! [`concerto_benches::scale`]; this parses the arguments and renders its report.

use std::sync::Arc;

use clap::Args;
use concerto_benches::scale::{self, ScaleConfig, ScaleRow, ScaleRun, ScaleShardConfig};
use concerto_benches::shard::Shard;

use crate::progress;
use crate::solve::{default_solver, registry, time_limit};
use crate::Failure;

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
    /// Print one JSON object instead of the table (with `--shard`: the shard's file for
    /// `concerto bench merge`).
    #[arg(long)]
    json: bool,
    /// Run only shard I of N (I from 0): size k of `--sizes`, in the order given, belongs to
    /// shard k mod N. `concerto bench merge` joins the shards' `--json` files. Each row's
    /// peak memory is its own shard process's.
    #[arg(long, value_name = "I/N")]
    shard: Option<Shard>,
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
    let shard = args.shard.unwrap_or(Shard::WHOLE);
    let solver = Arc::from(registry().get(&args.solver)?);
    let report = scale::run(
        &ScaleConfig {
            sizes: shard.pick(&config.sizes),
            ..config.clone()
        },
        solver,
        progress::bar(args.json).as_ref(),
    )?;
    let run = ScaleRun {
        solver: args.solver.clone(),
        window: args.window,
        rounds: args.rounds,
        window_time_limit_s: args.window_time_limit,
        threads,
    };
    let json = match (args.json, args.shard) {
        (false, _) => None,
        (true, None) => Some(summary_json(&run, &report.rows)?),
        (true, Some(shard)) => {
            let config = ScaleShardConfig {
                run: run.clone(),
                sizes: config.sizes,
                channels: config.channels,
                start_schedules: config.start_schedules,
                seed: config.seed,
            };
            let file = scale::shard_file(config, shard, report.rows.clone())?;
            Some(serde_json::to_string(&file)?)
        }
    };
    finish(&report.rows, json)
}

/// The JSON of a run: its settings and its rows under `sizes`.
pub(crate) fn summary_json(run: &ScaleRun, rows: &[ScaleRow]) -> anyhow::Result<String> {
    Ok(scale::json(run, rows)?.to_string())
}

/// Prints `json` when given, else the table of `rows`.
pub(crate) fn finish(rows: &[ScaleRow], json: Option<String>) -> Result<(), Failure> {
    match json {
        Some(json) => println!("{json}"),
        None => print!("{}", scale::table(rows)),
    }
    Ok(())
}
