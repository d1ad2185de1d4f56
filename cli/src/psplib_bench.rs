//! `concerto bench psplib`: solve a directory of PSPLIB instances (or one shard of them),
//! check every schedule, and compare with a reference table. The bench is
//! [`concerto_benches::psplib`]; this parses the arguments and renders its report (a
//! table or JSON, and a CSV of the rows).

use std::io::Write as _;
use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::Args;
use concerto_benches::psplib::peers::{self, OwnSettings};
use concerto_benches::psplib::{
    self, PsplibConfig, PsplibJson, PsplibReport, PsplibRow, PsplibRun, PsplibShardConfig,
    ReferenceRuns,
};
use concerto_benches::shard::Shard;
use concerto_rcpsp::Limits;

use crate::data::DataArgs;
use crate::progress;
use crate::solve::{time_limit, WindowArgs};
use crate::Failure;

/// Arguments of `concerto bench psplib`.
#[derive(Args, Debug)]
pub(crate) struct PsplibArgs {
    /// Directory of `.sm` files, gzipped or not. Default: PSPLIB's j30 set in the data
    /// folder (`data/psplib/j30`, see `data/README.md`).
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Reference table (`instance,lower_bound,upper_bound,optimal,...`, gzipped or not).
    /// Default: `reference/<set>.csv.gz` (or `.csv`) beside the instances' directory, where
    /// `<set>` is its name: `data/psplib/reference/j30.csv.gz` for `data/psplib/j30`.
    #[arg(long)]
    reference: Option<PathBuf>,
    #[command(flatten)]
    data: DataArgs,
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
    /// Print one JSON object instead of the table (with `--shard`: the shard's file for
    /// `concerto bench merge`, its rows and the run's settings).
    #[arg(long)]
    json: bool,
    /// Solve only shard I of N (I from 0): instance k of the selection, in the order above,
    /// belongs to shard k mod N. `concerto bench merge` joins the shards' `--json` files into
    /// the unsharded summary.
    #[arg(long, value_name = "I/N")]
    shard: Option<Shard>,
    /// After the run, print how many of its instances other solvers' published runs proved
    /// optimal within this run's `--time-limit` (and within their own, longer limits), beside
    /// this run's own count, from the table of `--reference-runs-csv`; with `--json`, under
    /// `reference_runs`. Counted on the instances this run solved.
    #[arg(long, conflicts_with = "shard")]
    reference_runs: bool,
    /// The table of other solvers' runs for `--reference-runs`
    /// (`solver,version,run,set,instance,status,...,time_s,time_limit_s,workers,hardware`,
    /// gzipped or not). Default: `reference/solvers_j30_j60.csv.gz` beside the instances'
    /// directory (`data/psplib/reference/solvers_j30_j60.csv.gz`).
    #[arg(long, value_name = "CSV", requires = "reference_runs")]
    reference_runs_csv: Option<PathBuf>,
    #[command(flatten)]
    windows: WindowArgs,
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

/// The reference table beside `dir`: `reference/<set>.csv.gz`, then `.csv`, in `dir`'s
/// parent, `<set>` being `dir`'s name; an error naming both when neither is there.
fn default_reference(dir: &Path) -> anyhow::Result<PathBuf> {
    let dir = std::path::absolute(dir).with_context(|| format!("--dir {}", dir.display()))?;
    let set = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let parent = dir.parent().unwrap_or(&dir).join("reference");
    let tried = [
        parent.join(format!("{set}.csv.gz")),
        parent.join(format!("{set}.csv")),
    ];
    tried
        .iter()
        .find(|p| p.is_file())
        .cloned()
        .with_context(|| {
            format!(
                "bench psplib: no reference table for {} (tried {} and {}): pass --reference CSV",
                dir.display(),
                tried[0].display(),
                tried[1].display()
            )
        })
}

/// The table of other solvers' runs beside `dir`: `reference/solvers_j30_j60.csv.gz` in
/// `dir`'s parent, as [`default_reference`] finds the bounds; an error naming it when it is
/// not there.
fn default_reference_runs(dir: &Path) -> anyhow::Result<PathBuf> {
    // Relative stays relative (the table prints the path), unless `dir` has no parent to name.
    let dir = match dir.parent() {
        Some(p) if !p.as_os_str().is_empty() => dir.to_path_buf(),
        _ => std::path::absolute(dir).with_context(|| format!("--dir {}", dir.display()))?,
    };
    let path = dir
        .parent()
        .unwrap_or(&dir)
        .join("reference")
        .join("solvers_j30_j60.csv.gz");
    anyhow::ensure!(
        path.is_file(),
        "bench psplib: no table of other solvers' runs for {} (tried {}): pass \
         --reference-runs-csv CSV",
        dir.display(),
        path.display()
    );
    Ok(path)
}

pub(crate) fn run(args: &PsplibArgs) -> Result<(), Failure> {
    let dir = match &args.dir {
        Some(dir) => dir.clone(),
        None => args.data.sub("psplib/j30", "bench psplib")?,
    };
    let reference_path = match &args.reference {
        Some(path) => path.clone(),
        None => default_reference(&dir)?,
    };
    let instances = psplib::list_instances(&dir, args.only.as_deref(), args.limit)?;
    let reference = psplib::read_reference(&reference_path)?;
    // Read before the run, so that a bad table stops it before hours of solving.
    let peer_runs = match (args.reference_runs, &args.reference_runs_csv) {
        (false, _) => None,
        (true, Some(path)) => Some((path.clone(), peers::read_peers(path)?)),
        (true, None) => {
            let path = default_reference_runs(&dir)?;
            let rows = peers::read_peers(&path)?;
            Some((path, rows))
        }
    };
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
    let shard = args.shard.unwrap_or(Shard::WHOLE);
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
    let bar = progress::bar(args.json);
    let report = psplib::run_shard(&config, shard, solver.as_ref(), bar.as_ref())?;
    if let Some(out) = &args.out {
        write_csv(out, &report.rows)?;
    }
    let run = PsplibRun {
        solver: args.solver.clone(),
        dir: dir.display().to_string(),
        time_limit_s: args.time_limit,
        work_limit: args.work_limit,
        seed: args.seed,
        jobs: args.jobs,
        threads,
    };
    let reference_runs = peer_runs.map(|(path, rows)| {
        peers::reference_runs(
            &rows,
            &report.rows,
            OwnSettings {
                solver: &args.solver,
                version: concat!("concerto ", env!("CARGO_PKG_VERSION")),
                threads,
                time_limit_s: args.time_limit,
            },
            &path.display().to_string(),
        )
    });
    let reference = reference_path.display().to_string();
    let json = match (args.json, args.shard) {
        (false, _) => None,
        (true, None) => Some(summary_json(&run, &report, reference_runs.as_ref())?),
        (true, Some(shard)) => {
            let shard_config = PsplibShardConfig {
                run: run.clone(),
                reference: reference.clone(),
                only: args.only.clone(),
                limit: args.limit,
                window: args.windows.settings(),
            };
            let file = psplib::shard_file(shard_config, shard, &config.instances, report.clone())?;
            Some(serde_json::to_string(&file)?)
        }
    };
    finish(&run, &reference, &report, reference_runs.as_ref(), json)
}

/// The JSON of the summary: the run's settings, then the summary's keys, then
/// `reference_runs` when given.
pub(crate) fn summary_json(
    run: &PsplibRun,
    report: &PsplibReport,
    reference_runs: Option<&ReferenceRuns>,
) -> anyhow::Result<String> {
    Ok(serde_json::to_string(&PsplibJson {
        run,
        summary: &report.summary,
        reference_runs,
    })?)
}

/// What a run (or a merge of its shards) reports: a warning for the instances without a
/// reference row and a line per result with findings, to standard error; then `json` when
/// given, else the table (and the table of other solvers' runs when given); exit 1 when the
/// bench does not pass.
pub(crate) fn finish(
    run: &PsplibRun,
    reference: &str,
    report: &PsplibReport,
    reference_runs: Option<&ReferenceRuns>,
    json: Option<String>,
) -> Result<(), Failure> {
    let missing_reference = report.missing_reference();
    if missing_reference > 0 {
        eprintln!("warning: {missing_reference} instance(s) have no row in {reference}");
    }
    for r in &report.rows {
        if let Some(problem) = r.problem() {
            eprintln!("{}: {}: {problem}", r.instance, r.status);
        }
    }
    match json {
        Some(json) => println!("{json}"),
        None => {
            print!("{}", report.summary.table(&run.solver));
            if let Some(r) = reference_runs {
                print!("\n{}", r.table());
            }
        }
    }
    if !report.summary.passed() {
        return Err(Failure::Rejected);
    }
    Ok(())
}
