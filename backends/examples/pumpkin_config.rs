//! Solves RCPSP files with the `pumpkin` backend under a strategy chosen by flags, one line per
//! file: the status, the checked makespan, the proven bound, the wall time and the conflicts.
//! It is how the strategy measurements in `PumpkinConfig`'s docs and the README are taken.
//!
//! ```console
//! $ cargo run --release -p concerto-backends --example pumpkin_config -- \
//!     --time-limit 30 --edge-finding false --dual-probes false data/psplib/j30/j3013_2.sm
//! ```
//!
//! Flags (each optional, defaults from `PumpkinConfig::default()`): `--time-limit SECS`
//! (default 30), `--seed N`, `--threads N` (a portfolio of N searches when 2 or more),
//! `--portfolio BOOL`, `--edge-finding BOOL`, `--ttef BOOL`, `--lns BOOL`, `--lns-slice N`, `--lns-weight X`, `--dual-probes BOOL`, `--dual-weight X`,
//! `--dual-growth BOOL`, `--first-slice N`, `--slice-growth X`, `--luby N`,
//! `--search sst|vsids|vsids-sst`, `--direction forward|backward`, `--heuristic-schedules N`. Everything else is a file.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use concerto_backends::pumpkin::{Direction, Pumpkin, PumpkinConfig, Search};
use concerto_rcpsp::{check, io::read_problem, Limits, Solver};

fn value<T: std::str::FromStr>(flag: &str, text: Option<String>) -> Result<T, String> {
    let text = text.ok_or_else(|| format!("{flag} needs a value"))?;
    text.parse()
        .map_err(|_| format!("{flag}: cannot read `{text}`"))
}

fn run() -> Result<(), String> {
    let mut config = PumpkinConfig::default();
    let mut time_limit = 30.0;
    let mut seed = 0;
    let mut threads = 1;
    let mut files = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--time-limit" => time_limit = value(&arg, args.next())?,
            "--seed" => seed = value(&arg, args.next())?,
            "--threads" => threads = value(&arg, args.next())?,
            "--portfolio" => config.portfolio = value(&arg, args.next())?,
            "--edge-finding" => config.edge_finding = value(&arg, args.next())?,
            "--ttef" => config.ttef = value(&arg, args.next())?,
            "--lns" => config.lns = value(&arg, args.next())?,
            "--lns-slice" => config.lns_slice = value(&arg, args.next())?,
            "--lns-weight" => config.lns_weight = value(&arg, args.next())?,
            "--dual-probes" => config.dual_probes = value(&arg, args.next())?,
            "--dual-weight" => config.dual_weight = value(&arg, args.next())?,
            "--dual-growth" => config.dual_growth = value(&arg, args.next())?,
            "--first-slice" => config.first_slice = value(&arg, args.next())?,
            "--slice-growth" => config.slice_growth = value(&arg, args.next())?,
            "--luby" => config.luby_restarts = Some(value(&arg, args.next())?),
            "--heuristic-schedules" => config.heuristic_schedules = value(&arg, args.next())?,
            "--direction" => {
                config.direction = match value::<String>(&arg, args.next())?.as_str() {
                    "forward" => Direction::Forward,
                    "backward" => Direction::Backward,
                    other => return Err(format!("--direction: unknown direction `{other}`")),
                }
            }
            "--search" => {
                config.search = match value::<String>(&arg, args.next())?.as_str() {
                    "sst" => Search::Sst,
                    "vsids" => Search::Vsids,
                    "vsids-sst" => Search::VsidsSst,
                    other => return Err(format!("--search: unknown strategy `{other}`")),
                }
            }
            flag if flag.starts_with("--") => return Err(format!("unknown flag `{flag}`")),
            _ => files.push(arg),
        }
    }
    if files.is_empty() {
        return Err("no instance file given".into());
    }
    if !(time_limit > 0.0 && f64::is_finite(time_limit)) {
        return Err(format!("--time-limit must be positive, got {time_limit}"));
    }
    if threads == 0 {
        return Err("--threads must be at least 1".into());
    }
    let limits = Limits {
        threads,
        ..Limits::with_time_limit(Duration::from_secs_f64(time_limit)).seed(seed)
    };
    for path in files {
        let problem = read_problem(&path).map_err(|e| e.to_string())?;
        let began = Instant::now();
        let outcome = Pumpkin::new(config.clone())
            .solve(&problem, &limits)
            .map_err(|e| format!("{path}: {e}"))?;
        let makespan = match &outcome.schedule {
            Some(s) => check(&problem, s)
                .map_err(|v| format!("{path}: the returned schedule fails the check: {v}"))?
                .to_string(),
            None => "-".into(),
        };
        println!(
            "{path}\t{}\t{makespan}\tbound {}\t{:.2} s\t{} conflicts",
            outcome.status,
            outcome.lower_bound,
            began.elapsed().as_secs_f64(),
            outcome.work
        );
    }
    Ok(())
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
