//! `concerto solve` and `concerto solvers`.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, Context};
use clap::Args;
use concerto_rcpsp::{io, read_problem, Limits, OddEven, OddEvenConfig, Registry, Solver};

use crate::Failure;

/// Arguments of `concerto solve`.
#[derive(Args, Debug)]
pub(crate) struct SolveArgs {
    /// The instance: PSPLIB `.sm`, Patterson `.rcp` or Concerto `.json`.
    pub(crate) file: PathBuf,
    /// The solver, by name (`concerto solvers` lists them). Default: `pumpkin` when compiled
    /// in, else `sgs`.
    #[arg(long, default_value_t = default_solver().to_string())]
    pub(crate) solver: String,
    /// Wall-clock limit in seconds (fractions allowed).
    #[arg(long, value_name = "SECS")]
    pub(crate) time_limit: Option<f64>,
    /// A deterministic budget of solver work (conflicts for pumpkin, schedules for sgs):
    /// the same instance and seed give the same schedule on any machine and load.
    #[arg(long, value_name = "N")]
    pub(crate) work_limit: Option<u64>,
    /// Seed of every random choice.
    #[arg(long, default_value_t = 0)]
    pub(crate) seed: u64,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub(crate) json: bool,
    /// Write the schedule found as JSON to this file.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub(crate) output: Option<PathBuf>,
    #[command(flatten)]
    pub(crate) windows: WindowArgs,
    /// Worker threads (windows of one odd-even pass run in parallel).
    #[arg(long, default_value_t = 1)]
    pub(crate) threads: usize,
}

/// The odd-even driver's options (see `concerto_rcpsp::oddeven`).
#[derive(Args, Debug, Clone)]
pub(crate) struct WindowArgs {
    /// Solve windows of two blocks of B activities ("odd-even"), with the solver, instead of
    /// the whole problem at once.
    #[arg(long, value_name = "B")]
    pub(crate) window: Option<usize>,
    /// Odd-even rounds (an odd and an even pass each).
    #[arg(long, value_name = "K", default_value_t = OddEvenConfig::default().rounds)]
    pub(crate) rounds: usize,
    /// Time limit of each window's solve, in seconds.
    #[arg(long, value_name = "SECS", default_value_t = OddEvenConfig::default().window_time_limit.as_secs_f64())]
    pub(crate) window_time_limit: f64,
    /// Run the starting heuristic for this long (default: a budget of schedules).
    #[arg(long, value_name = "SECS")]
    pub(crate) start_time: Option<f64>,
}

impl WindowArgs {
    /// The driver's configuration, if `--window` was given.
    pub(crate) fn config(&self) -> anyhow::Result<Option<OddEvenConfig>> {
        let Some(block) = self.window else {
            return Ok(None);
        };
        if block == 0 {
            bail!("--window must be at least 1");
        }
        let window_time_limit = time_limit(Some(self.window_time_limit))
            .map_err(|_| {
                anyhow::anyhow!(
                    "--window-time-limit must be a positive number of seconds, got {}",
                    self.window_time_limit
                )
            })?
            .expect("given");
        let start_time = time_limit(self.start_time)
            .map_err(|_| anyhow::anyhow!("--start-time must be a positive number of seconds"))?;
        Ok(Some(OddEvenConfig {
            block,
            rounds: self.rounds,
            window_time_limit,
            start_time,
            ..OddEvenConfig::default()
        }))
    }

    /// The driver's settings as given, if `--window` was given (what a shard file records).
    pub(crate) fn settings(&self) -> Option<concerto_benches::psplib::WindowSettings> {
        self.window
            .map(|block| concerto_benches::psplib::WindowSettings {
                block,
                rounds: self.rounds,
                window_time_limit_s: self.window_time_limit,
                start_time_s: self.start_time,
            })
    }

    /// The solver called `name`, inside the odd-even driver if `--window` was given.
    pub(crate) fn solver(&self, name: &str) -> anyhow::Result<Box<dyn Solver>> {
        let inner = registry().get(name)?;
        Ok(match self.config()? {
            Some(config) => Box::new(OddEven::new(inner, config)),
            None => inner,
        })
    }
}

/// The registry of every solver this build knows, compiled in or not.
pub(crate) fn registry() -> Registry {
    concerto_backends::registry()
}

/// The exact CP solver when compiled in, else the heuristic.
pub(crate) fn default_solver() -> &'static str {
    if registry().get("pumpkin").is_ok() {
        "pumpkin"
    } else {
        "sgs"
    }
}

/// Parses a time limit in seconds: positive and finite.
pub(crate) fn time_limit(secs: Option<f64>) -> anyhow::Result<Option<Duration>> {
    match secs {
        None => Ok(None),
        Some(s) if s.is_finite() && s > 0.0 => Ok(Some(Duration::from_secs_f64(s))),
        Some(s) => bail!("--time-limit must be a positive number of seconds, got {s}"),
    }
}

pub(crate) fn run(args: &SolveArgs) -> Result<(), Failure> {
    let problem = read_problem(&args.file)?;
    let solver = registry().get(&args.solver)?;
    if args.threads == 0 {
        return Err(anyhow::anyhow!("--threads must be at least 1").into());
    }
    let limits = Limits {
        time_limit: time_limit(args.time_limit)?,
        work_limit: args.work_limit,
        seed: args.seed,
        threads: args.threads,
        ..Limits::default()
    };
    let name = args.file.display().to_string();
    let (outcome, report) =
        concerto_pipeline::solve::solve(&problem, &name, solver, args.windows.config()?, &limits)
            .with_context(|| format!("solving {name}"))?;
    if let (Some(path), Some(schedule)) = (&args.output, &outcome.schedule) {
        std::fs::write(path, io::schedule_to_json(&problem, schedule))
            .with_context(|| format!("writing {}", path.display()))?;
    }
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
        if let Some(m) = report.start_makespan {
            println!("start        {m}");
            for r in &report.rounds {
                println!(
                    "round {:>3}    makespan {}  bound {}  windows {}  improved {}  {:.3} s",
                    r.round, r.makespan, r.lower_bound, r.windows, r.improved, r.time_s
                );
            }
        }
    }
    Ok(())
}

pub(crate) fn list_solvers() {
    for info in registry().list() {
        let modal = if info.modal {
            " (also modal: joint mode)"
        } else {
            ""
        };
        match info.missing_feature {
            None => println!("{:<10} {}{modal}", info.name, info.description),
            Some((krate, feature)) => println!(
                "{:<10} {}{modal} [not compiled in: feature `{feature}` of {krate}]",
                info.name, info.description
            ),
        }
    }
}
