//! `concerto bench scale`: the odd-even driver on generated DL-like training steps of growing
//! size, against the plain heuristic given the same wall time.

use std::time::{Duration, Instant};

use clap::Args;
use concerto_rcpsp::generate::{training_step, TrainingStep};
use concerto_rcpsp::{check, Heuristic, Limits, OddEven, OddEvenConfig, Solver};
use serde::Serialize;

use crate::solve::{default_solver, registry, time_limit, RoundJson};
use crate::table::Table;
use crate::Failure;

/// Arguments of `concerto bench scale`.
#[derive(Args, Debug)]
pub(crate) struct ScaleArgs {
    /// Sizes (activities, approximately) of the generated training steps.
    #[arg(long, value_delimiter = ',', default_values_t = [1_000, 10_000, 100_000])]
    sizes: Vec<usize>,
    /// The solver of every window. Default: `pumpkin` when compiled in, else `sgs`.
    #[arg(long, default_value_t = default_solver().to_string())]
    solver: String,
    /// Activities per block (a window holds two).
    #[arg(long, value_name = "B", default_value_t = OddEvenConfig::default().block)]
    window: usize,
    /// Odd-even rounds; with no time limit, the work is fixed, so times compare across sizes.
    #[arg(long, value_name = "K", default_value_t = 2)]
    rounds: usize,
    /// Time limit of each window's solve, in seconds.
    #[arg(long, value_name = "SECS", default_value_t = OddEvenConfig::default().window_time_limit.as_secs_f64())]
    window_time_limit: f64,
    /// Schedules the starting heuristic may generate.
    #[arg(long, default_value_t = 50)]
    start_schedules: u64,
    /// Communication channels of the generated steps (1 or 2).
    #[arg(long, default_value_t = 2)]
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

#[derive(Serialize)]
struct SizeRow {
    n: usize,
    rounds: usize,
    time_s: f64,
    start_makespan: i64,
    start_time_s: f64,
    makespan: i64,
    lower_bound: i64,
    gap_pct: f64,
    heuristic_makespan: i64,
    heuristic_time_s: f64,
    heuristic_gap_pct: f64,
    peak_rss_mb: Option<f64>,
    round_reports: Vec<RoundJson>,
}

/// Peak resident memory of this process so far (Linux), in MiB.
fn peak_rss_mb() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024.0)
}

fn gap(makespan: i64, bound: i64) -> f64 {
    if bound == 0 {
        0.0
    } else {
        100.0 * (makespan - bound) as f64 / bound as f64
    }
}

pub(crate) fn run(args: &ScaleArgs) -> Result<(), Failure> {
    if !matches!(args.channels, 1 | 2) {
        return Err(anyhow::anyhow!("--channels must be 1 or 2, got {}", args.channels).into());
    }
    if args.window == 0 || args.sizes.contains(&0) {
        return Err(anyhow::anyhow!("--window and every size must be positive").into());
    }
    let window_time_limit = time_limit(Some(args.window_time_limit))?.expect("given");
    let threads = args
        .threads
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    registry().get(&args.solver)?;
    let mut rows = Vec::new();
    for &size in &args.sizes {
        let problem = training_step(&TrainingStep::with_size(size, args.channels, args.seed));
        let driver = OddEven::new(
            registry().get(&args.solver)?,
            OddEvenConfig {
                block: args.window,
                rounds: args.rounds,
                window_time_limit,
                start_schedules: args.start_schedules,
                // With no overall limit every round runs: the work per size is fixed.
                patience: usize::MAX,
                ..OddEvenConfig::default()
            },
        );
        let began = Instant::now();
        let report = driver.run(
            &problem,
            &Limits {
                seed: args.seed,
                threads,
                ..Limits::default()
            },
        )?;
        let time = began.elapsed();
        let makespan = check(
            &problem,
            report.outcome.schedule.as_ref().expect("a schedule"),
        )?;
        // The plain heuristic, given the same wall time.
        let heuristic = Heuristic::default().solve(
            &problem,
            &Limits {
                time_limit: Some(time.max(Duration::from_millis(1))),
                seed: args.seed,
                ..Limits::default()
            },
        )?;
        let heuristic_makespan = check(&problem, heuristic.schedule.as_ref().expect("a schedule"))?;
        let bound = report.bound.value;
        rows.push(SizeRow {
            n: problem.len(),
            rounds: report.rounds.len(),
            time_s: time.as_secs_f64(),
            start_makespan: report.start_makespan,
            start_time_s: report.start_time.as_secs_f64(),
            makespan,
            lower_bound: bound,
            gap_pct: gap(makespan, bound),
            heuristic_makespan,
            heuristic_time_s: heuristic.elapsed.as_secs_f64(),
            heuristic_gap_pct: gap(heuristic_makespan, bound),
            peak_rss_mb: peak_rss_mb(),
            round_reports: report.rounds.iter().map(RoundJson::from).collect(),
        });
        if !args.json {
            eprintln!("n = {}: {:.1} s", problem.len(), time.as_secs_f64());
        }
    }
    if args.json {
        println!(
            "{}",
            serde_json::json!({
                "solver": args.solver,
                "window": args.window,
                "rounds": args.rounds,
                "window_time_limit_s": args.window_time_limit,
                "threads": threads,
                "sizes": rows,
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
    for r in &rows {
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
