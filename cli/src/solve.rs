//! `concerto solve` and `concerto solvers`.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, Context};
use clap::Args;
use concerto_rcpsp::{io, read_problem, Limits, Registry};
use serde::Serialize;

use crate::Failure;

/// Arguments of `concerto solve`.
#[derive(Args, Debug)]
pub(crate) struct SolveArgs {
    /// The instance: PSPLIB `.sm`, Patterson `.rcp` or Concerto `.json`.
    pub(crate) file: PathBuf,
    /// The solver, by name (`concerto solvers` lists them).
    #[arg(long, default_value = "sgs")]
    pub(crate) solver: String,
    /// Wall-clock limit in seconds (fractions allowed).
    #[arg(long, value_name = "SECS")]
    pub(crate) time_limit: Option<f64>,
    /// Seed of every random choice.
    #[arg(long, default_value_t = 0)]
    pub(crate) seed: u64,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub(crate) json: bool,
    /// Write the schedule found as JSON to this file.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub(crate) output: Option<PathBuf>,
}

/// The registry of every solver this build knows.
pub(crate) fn registry() -> Registry {
    Registry::with_builtin()
}

/// Parses a time limit in seconds: positive and finite.
pub(crate) fn time_limit(secs: Option<f64>) -> anyhow::Result<Option<Duration>> {
    match secs {
        None => Ok(None),
        Some(s) if s.is_finite() && s > 0.0 => Ok(Some(Duration::from_secs_f64(s))),
        Some(s) => bail!("--time-limit must be a positive number of seconds, got {s}"),
    }
}

#[derive(Serialize)]
struct SolveReport<'a> {
    status: &'a str,
    stop_reason: Option<&'a str>,
    makespan: Option<i64>,
    lower_bound: i64,
    solver: &'a str,
    time_s: f64,
    /// Work done in the solver's unit (schedules, nodes, conflicts).
    work: u64,
    instance: String,
}

pub(crate) fn run(args: &SolveArgs) -> Result<(), Failure> {
    let problem = read_problem(&args.file)?;
    let solver = registry().get(&args.solver)?;
    let limits = Limits {
        time_limit: time_limit(args.time_limit)?,
        seed: args.seed,
        ..Limits::default()
    };
    let outcome = solver
        .solve(&problem, &limits)
        .with_context(|| format!("solving {}", args.file.display()))?;
    if let (Some(path), Some(schedule)) = (&args.output, &outcome.schedule) {
        std::fs::write(path, io::schedule_to_json(&problem, schedule))
            .with_context(|| format!("writing {}", path.display()))?;
    }
    let report = SolveReport {
        status: outcome.status.as_str(),
        stop_reason: outcome.status.stop_reason().map(|r| r.as_str()),
        makespan: outcome.makespan,
        lower_bound: outcome.lower_bound,
        solver: &outcome.solver,
        time_s: outcome.elapsed.as_secs_f64(),
        work: outcome.work,
        instance: args.file.display().to_string(),
    };
    if args.json {
        println!("{}", serde_json::to_string(&report)?);
    } else {
        let makespan = report.makespan.map_or("-".to_string(), |m| m.to_string());
        println!("instance     {}", report.instance);
        println!("status       {}", outcome.status);
        println!("makespan     {makespan}");
        println!("lower bound  {}", report.lower_bound);
        println!("solver       {}", report.solver);
        println!("time         {:.3} s", report.time_s);
        println!("work         {}", report.work);
    }
    Ok(())
}

pub(crate) fn list_solvers() {
    for info in registry().list() {
        match info.missing_feature {
            None => println!("{:<10} {}", info.name, info.description),
            Some((krate, feature)) => println!(
                "{:<10} {} [not compiled in: feature `{feature}` of {krate}]",
                info.name, info.description
            ),
        }
    }
}
