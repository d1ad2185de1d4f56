//! `concerto bench psplib`: solve a directory of PSPLIB instances, check every schedule, and
//! compare with a reference table. The bench is [`concerto_pipeline::bench::psplib`]; this
//! parses the arguments and renders its report (a table or JSON, and a CSV of the rows).

use std::io::Write as _;
use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::Args;
use concerto_pipeline::bench::psplib::{self, PsplibConfig, PsplibRow, PsplibSummary};
use concerto_rcpsp::Limits;
use serde::Serialize;

use crate::progress;
use crate::solve::{time_limit, WindowArgs};
use crate::Failure;
use concerto_pipeline::table::Table;

/// Arguments of `concerto bench psplib`.
#[derive(Args, Debug)]
pub(crate) struct PsplibArgs {
    /// Directory of `.sm` files.
    #[arg(long)]
    dir: PathBuf,
    /// Reference table (`instance,lower_bound,upper_bound,optimal,...`).
    #[arg(long)]
    reference: PathBuf,
    /// The solver, by name. Default: `pumpkin` when compiled in, else `sgs`.
    #[arg(long, default_value_t = crate::solve::default_solver().to_string())]
    solver: String,
    /// Wall-clock limit per instance, in seconds.
    #[arg(long, value_name = "SECS")]
    time_limit: Option<f64>,
    /// A deterministic budget of solver work per instance (conflicts for pumpkin, schedules
    /// for sgs): the same instances and seed give the same rows on any machine and load.
    #[arg(long, value_name = "N")]
    work_limit: Option<u64>,
    /// Seed of every solve.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Solve only the first N instances (in natural name order).
    #[arg(long, value_name = "N")]
    limit: Option<usize>,
    /// Only instances whose file name matches this glob-like pattern (`*` wildcards), e.g.
    /// `j30*_1.sm`.
    #[arg(long, value_name = "PATTERN")]
    only: Option<String>,
    /// Instances solved at the same time.
    #[arg(long, default_value_t = 1)]
    jobs: usize,
    /// Threads of each solve (`pumpkin` runs a portfolio of that many searches). Default: the
    /// cores divided by `--jobs`, at least 1.
    #[arg(long, value_name = "N")]
    threads: Option<usize>,
    /// Write one CSV row per instance to this file.
    #[arg(long, value_name = "CSV")]
    out: Option<PathBuf>,
    /// Print one JSON object instead of the table.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    windows: WindowArgs,
}

/// The JSON object printed: the run's settings, then the summary's keys.
#[derive(Serialize)]
struct SummaryJson<'a> {
    solver: &'a str,
    dir: String,
    time_limit_s: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    work_limit: Option<u64>,
    seed: u64,
    jobs: usize,
    threads: usize,
    #[serde(flatten)]
    summary: &'a PsplibSummary,
}

fn write_csv(path: &Path, rows: &[PsplibRow]) -> anyhow::Result<()> {
    let mut f = std::io::BufWriter::new(
        std::fs::File::create(path).with_context(|| format!("creating {}", path.display()))?,
    );
    writeln!(
        f,
        "instance,jobs,status,makespan,lower_bound,critical_path,best_known,best_known_optimal,pct_above_best_known,pct_above_cpm,time_s,checked,problem"
    )?;
    let opt = |v: Option<i64>| v.map_or(String::new(), |v| v.to_string());
    let optf = |v: Option<f64>| v.map_or(String::new(), |v| format!("{v:.4}"));
    for r in rows {
        writeln!(
            f,
            "{},{},{},{},{},{},{},{},{},{},{:.4},{},{}",
            r.instance,
            r.jobs,
            r.status,
            opt(r.makespan),
            opt(r.lower_bound),
            r.critical_path,
            opt(r.best_known),
            r.best_known_optimal
                .map_or(String::new(), |b| b.to_string()),
            optf(r.pct_above_best_known),
            optf(r.pct_above_cpm),
            r.time_s,
            r.checked,
            r.problem().unwrap_or_default().replace(',', ";"),
        )?;
    }
    f.flush()?;
    Ok(())
}

pub(crate) fn run(args: &PsplibArgs) -> Result<(), Failure> {
    let instances = psplib::list_instances(&args.dir, args.only.as_deref(), args.limit)?;
    let reference = psplib::read_reference(&args.reference)?;
    if args.jobs == 0 {
        return Err(anyhow::anyhow!("--jobs must be at least 1").into());
    }
    if args.work_limit == Some(0) {
        return Err(anyhow::anyhow!("--work-limit must be at least 1").into());
    }
    let threads = match args.threads {
        Some(0) => return Err(anyhow::anyhow!("--threads must be at least 1").into()),
        Some(t) => t,
        None => psplib::default_threads(args.jobs),
    };
    let solver = args.windows.solver(&args.solver)?;
    let config = PsplibConfig {
        limits: Limits {
            time_limit: time_limit(args.time_limit)?,
            work_limit: args.work_limit,
            seed: args.seed,
            threads,
            ..Limits::default()
        },
        jobs: args.jobs,
        ..PsplibConfig::new(instances, reference)
    };
    let report = psplib::run(&config, solver.as_ref(), progress::bar(args.json).as_ref())?;
    let summary = &report.summary;
    if let Some(out) = &args.out {
        write_csv(out, &report.rows)?;
    }
    let missing_reference = report.missing_reference();
    if missing_reference > 0 {
        eprintln!(
            "warning: {missing_reference} instance(s) have no row in {}",
            args.reference.display()
        );
    }
    for r in &report.rows {
        if let Some(problem) = r.problem() {
            eprintln!("{}: {}: {problem}", r.instance, r.status);
        }
    }
    if args.json {
        let json = SummaryJson {
            solver: &args.solver,
            dir: args.dir.display().to_string(),
            time_limit_s: args.time_limit,
            work_limit: args.work_limit,
            seed: args.seed,
            jobs: args.jobs,
            threads,
            summary,
        };
        println!("{}", serde_json::to_string(&json)?);
    } else {
        let f = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.2}"));
        let mut t = Table::new(&[
            "solver",
            "instances",
            "checked",
            "proven optimal",
            "= best known",
            "% above best known",
            "% above CPM",
            "median time s",
            "max time s",
        ]);
        t.row(vec![
            args.solver.clone(),
            summary.instances.to_string(),
            summary.checked.to_string(),
            summary.proven_optimal.to_string(),
            summary.equal_best_known.to_string(),
            f(summary.mean_pct_above_best_known),
            f(summary.mean_pct_above_cpm),
            format!("{:.3}", summary.median_time_s),
            format!("{:.3}", summary.max_time_s),
        ]);
        print!("{}", t.render());
    }
    if !summary.passed() {
        return Err(Failure::Rejected);
    }
    Ok(())
}
