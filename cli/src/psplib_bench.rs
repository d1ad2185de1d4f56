//! `concerto bench psplib`: solve a directory of PSPLIB instances, check every schedule, and
//! compare with a reference table.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use anyhow::{bail, Context};
use clap::Args;
use concerto_rcpsp::io::psplib::{read_reference, Reference};
use concerto_rcpsp::{bounds, check, read_problem, Limits, Solver};
use indicatif::{ProgressBar, ProgressStyle};
use serde::Serialize;

use crate::solve::{time_limit, WindowArgs};
use crate::table::Table;
use crate::Failure;

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

/// The result on one instance.
#[derive(Clone, Debug, Serialize)]
struct Row {
    instance: String,
    jobs: usize,
    status: String,
    makespan: Option<i64>,
    lower_bound: Option<i64>,
    critical_path: i64,
    best_known: Option<i64>,
    best_known_optimal: Option<bool>,
    pct_above_best_known: Option<f64>,
    pct_above_cpm: Option<f64>,
    time_s: f64,
    checked: bool,
    problem: Option<String>,
}

#[derive(Serialize)]
struct Summary {
    solver: String,
    dir: String,
    time_limit_s: Option<f64>,
    seed: u64,
    jobs: usize,
    threads: usize,
    instances: usize,
    checked: usize,
    proven_optimal: usize,
    equal_best_known: usize,
    mean_pct_above_best_known: Option<f64>,
    mean_pct_above_cpm: Option<f64>,
    median_time_s: f64,
    max_time_s: f64,
    contradictions: usize,
    errors: usize,
}

/// Natural order: digit runs compare as numbers (`j302_1` < `j3010_1`).
fn natural_key(name: &str) -> Vec<(String, u64)> {
    let mut key = Vec::new();
    let mut text = String::new();
    let mut chars = name.chars().peekable();
    while let Some(c) = chars.next() {
        if c.is_ascii_digit() {
            let mut digits = c.to_string();
            while let Some(d) = chars.peek().copied().filter(char::is_ascii_digit) {
                digits.push(d);
                chars.next();
            }
            key.push((
                std::mem::take(&mut text),
                digits.parse().unwrap_or(u64::MAX),
            ));
        } else {
            text.push(c);
        }
    }
    key.push((text, 0));
    key
}

/// `*` matches any run of characters; everything else matches itself.
fn glob(pattern: &str, name: &str) -> bool {
    match pattern.split_once('*') {
        None => pattern == name,
        Some((head, rest)) => {
            let Some(tail) = name.strip_prefix(head) else {
                return false;
            };
            (0..=tail.len()).any(|k| tail.is_char_boundary(k) && glob(rest, &tail[k..]))
        }
    }
}

fn instances(args: &PsplibArgs) -> anyhow::Result<Vec<PathBuf>> {
    let entries = std::fs::read_dir(&args.dir)
        .with_context(|| format!("reading directory {}", args.dir.display()))?;
    let mut files = Vec::new();
    for e in entries {
        let path = e?.path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if path.extension().is_some_and(|x| x == "sm")
            && args.only.as_deref().is_none_or(|p| glob(p, name))
        {
            files.push(path);
        }
    }
    files.sort_by_cached_key(|p| natural_key(&p.file_name().unwrap_or_default().to_string_lossy()));
    if let Some(n) = args.limit {
        files.truncate(n);
    }
    if files.is_empty() {
        bail!("no .sm instance in {} matches", args.dir.display());
    }
    Ok(files)
}

fn pct(value: i64, base: i64) -> f64 {
    if base == 0 {
        0.0
    } else {
        100.0 * (value - base) as f64 / base as f64
    }
}

fn solve_one(
    path: &Path,
    solver: &dyn Solver,
    limits: &Limits,
    reference: Option<&Reference>,
) -> Row {
    let instance = path
        .file_stem()
        .unwrap_or_default()
        .to_string_lossy()
        .into_owned();
    let failed = |problem: String, jobs: usize, cp: i64| Row {
        instance: instance.clone(),
        jobs,
        status: "error".into(),
        makespan: None,
        lower_bound: None,
        critical_path: cp,
        best_known: reference.map(|r| r.upper_bound),
        best_known_optimal: reference.map(|r| r.optimal),
        pct_above_best_known: None,
        pct_above_cpm: None,
        time_s: 0.0,
        checked: false,
        problem: Some(problem),
    };
    let problem = match read_problem(path) {
        Ok(p) => p,
        Err(e) => return failed(e.to_string(), 0, 0),
    };
    let cp = bounds::critical_path(&problem).value;
    let mut problems = Vec::new();
    if let Some(r) = reference.and_then(|r| r.critical_path) {
        if r != cp {
            problems.push(format!(
                "critical path {cp} differs from the reference's {r}"
            ));
        }
    }
    let outcome = match solver.solve(&problem, limits) {
        Ok(o) => o,
        Err(e) => return failed(e.to_string(), problem.len(), cp),
    };
    let checked = match &outcome.schedule {
        Some(s) => match check(&problem, s) {
            Ok(m) if Some(m) == outcome.makespan => true,
            Ok(m) => {
                problems.push(format!(
                    "makespan {m} differs from the reported {:?}",
                    outcome.makespan
                ));
                false
            }
            Err(v) => {
                problems.push(v.to_string());
                false
            }
        },
        None => false,
    };
    if let Some(r) = reference {
        if let Some(m) = outcome.makespan {
            if m < r.lower_bound {
                problems.push(format!(
                    "makespan {m} is below the reference lower bound {}",
                    r.lower_bound
                ));
            }
            if outcome.status.as_str() == "optimal" && r.optimal && m != r.upper_bound {
                problems.push(format!(
                    "proven optimum {m} differs from the reference optimum {}",
                    r.upper_bound
                ));
            }
        }
        if outcome.lower_bound > r.upper_bound {
            problems.push(format!(
                "lower bound {} is above the best known makespan {}",
                outcome.lower_bound, r.upper_bound
            ));
        }
    }
    Row {
        instance,
        jobs: problem.len(),
        status: outcome.status.as_str().into(),
        makespan: outcome.makespan,
        lower_bound: Some(outcome.lower_bound),
        critical_path: cp,
        best_known: reference.map(|r| r.upper_bound),
        best_known_optimal: reference.map(|r| r.optimal),
        pct_above_best_known: outcome
            .makespan
            .zip(reference)
            .map(|(m, r)| pct(m, r.upper_bound)),
        pct_above_cpm: outcome.makespan.map(|m| pct(m, cp)),
        time_s: outcome.elapsed.as_secs_f64(),
        checked,
        problem: (!problems.is_empty()).then(|| problems.join("; ")),
    }
}

fn mean(values: impl Iterator<Item = f64>) -> Option<f64> {
    let (sum, n) = values.fold((0.0, 0usize), |(s, n), v| (s + v, n + 1));
    (n > 0).then(|| sum / n as f64)
}

fn write_csv(path: &Path, rows: &[Row]) -> anyhow::Result<()> {
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
            r.problem.as_deref().unwrap_or("").replace(',', ";"),
        )?;
    }
    f.flush()?;
    Ok(())
}

pub(crate) fn run(args: &PsplibArgs) -> Result<(), Failure> {
    let files = instances(args)?;
    let reference: BTreeMap<String, Reference> = read_reference(&args.reference)?
        .into_iter()
        .map(|r| (r.instance.clone(), r))
        .collect();
    // Make the solver once up front so that a missing backend or a bad option fails before
    // any work.
    args.windows.solver(&args.solver)?;
    if args.jobs == 0 {
        return Err(anyhow::anyhow!("--jobs must be at least 1").into());
    }
    let threads = match args.threads {
        Some(0) => return Err(anyhow::anyhow!("--threads must be at least 1").into()),
        Some(t) => t,
        None => {
            let cores = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
            (cores / args.jobs).max(1)
        }
    };
    let limits = Limits {
        time_limit: time_limit(args.time_limit)?,
        seed: args.seed,
        threads,
        ..Limits::default()
    };

    let bar = ProgressBar::new(files.len() as u64);
    bar.set_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} [{elapsed_precise} < {eta}] {msg}")
            .expect("valid template"),
    );
    let next = AtomicUsize::new(0);
    let rows: Mutex<Vec<Option<Row>>> = Mutex::new(vec![None; files.len()]);
    let mut failure: Option<anyhow::Error> = None;
    std::thread::scope(|scope| {
        let workers: Vec<_> = (0..args.jobs.min(files.len()))
            .map(|_| {
                scope.spawn(|| -> anyhow::Result<()> {
                    let solver = args.windows.solver(&args.solver)?;
                    loop {
                        let k = next.fetch_add(1, Ordering::Relaxed);
                        let Some(path) = files.get(k) else {
                            return Ok(());
                        };
                        let stem = path.file_stem().unwrap_or_default().to_string_lossy();
                        let row =
                            solve_one(path, solver.as_ref(), &limits, reference.get(stem.as_ref()));
                        bar.set_message(format!(
                            "{} {}",
                            row.instance,
                            row.makespan.map_or("-".into(), |m| m.to_string())
                        ));
                        rows.lock().expect("no worker panics")[k] = Some(row);
                        bar.inc(1);
                    }
                })
            })
            .collect();
        for w in workers {
            if let Err(e) = w.join().expect("worker does not panic") {
                failure.get_or_insert(e);
            }
        }
    });
    bar.finish_and_clear();
    if let Some(e) = failure {
        return Err(e.into());
    }
    let rows: Vec<Row> = rows
        .into_inner()
        .expect("no worker panics")
        .into_iter()
        .map(|r| r.expect("every instance solved"))
        .collect();

    let mut times: Vec<f64> = rows.iter().map(|r| r.time_s).collect();
    times.sort_by(f64::total_cmp);
    let median = if times.is_empty() {
        0.0
    } else if times.len() % 2 == 1 {
        times[times.len() / 2]
    } else {
        (times[times.len() / 2 - 1] + times[times.len() / 2]) / 2.0
    };
    let summary = Summary {
        solver: args.solver.clone(),
        dir: args.dir.display().to_string(),
        time_limit_s: args.time_limit,
        seed: args.seed,
        jobs: args.jobs,
        threads: limits.threads,
        instances: rows.len(),
        checked: rows.iter().filter(|r| r.checked).count(),
        proven_optimal: rows.iter().filter(|r| r.status == "optimal").count(),
        equal_best_known: rows
            .iter()
            .filter(|r| r.makespan.is_some() && r.makespan == r.best_known)
            .count(),
        mean_pct_above_best_known: mean(rows.iter().filter_map(|r| r.pct_above_best_known)),
        mean_pct_above_cpm: mean(rows.iter().filter_map(|r| r.pct_above_cpm)),
        median_time_s: median,
        max_time_s: times.last().copied().unwrap_or(0.0),
        contradictions: rows
            .iter()
            .filter(|r| r.problem.is_some() && r.status != "error")
            .count(),
        errors: rows.iter().filter(|r| r.status == "error").count(),
    };
    if let Some(out) = &args.out {
        write_csv(out, &rows)?;
    }
    let missing_reference = rows.iter().filter(|r| r.best_known.is_none()).count();
    if missing_reference > 0 {
        eprintln!(
            "warning: {missing_reference} instance(s) have no row in {}",
            args.reference.display()
        );
    }
    for r in rows.iter().filter(|r| r.problem.is_some()) {
        eprintln!(
            "{}: {}: {}",
            r.instance,
            r.status,
            r.problem.as_deref().unwrap_or("")
        );
    }
    if args.json {
        println!("{}", serde_json::to_string(&summary)?);
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
            summary.solver.clone(),
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
    if summary.contradictions > 0 || summary.errors > 0 || summary.checked < summary.instances {
        return Err(Failure::Rejected);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn natural_order_and_glob() {
        let mut names = vec!["j3010_1", "j302_10", "j302_2", "j301_1"];
        names.sort_by_cached_key(|n| natural_key(n));
        assert_eq!(names, ["j301_1", "j302_2", "j302_10", "j3010_1"]);
        assert!(glob("j30*_1.sm", "j3048_1.sm"));
        assert!(!glob("j30*_1.sm", "j3048_10.sm"));
        assert!(glob("*", "x"));
    }
}
