//! The PSPLIB bench: solve a set of instances with one solver, check every schedule, and
//! compare every result with a reference table of best known bounds.
//!
//! For each instance (Kolisch and Sprecher's PSPLIB `.sm` files, read by
//! [`concerto_rcpsp::read_problem`]): compute the critical-path bound, solve under the
//! configured [`Limits`], check the schedule with [`concerto_rcpsp::check`] (its makespan must
//! be the one the solver reported), and hold the result against the reference row
//! ([`concerto_rcpsp::io::psplib::Reference`]): a makespan below the reference's lower bound,
//! a proven optimum other than a proven reference optimum, a lower bound above the best known
//! makespan, or a critical path other than the reference's is a [`Finding`]. An instance that
//! cannot be read or solved becomes a row with status `error`, and the bench goes on.
//!
//! Beside the reference bounds, [`peers`] reads a table of other solvers' published runs
//! (`data/psplib/reference/solvers_j30_j60.csv.gz`) and counts how many of the instances a
//! bench ran each of them proved optimal within the bench's time limit.
//!
//! Instances run `jobs` at a time on scoped threads, each solve with `limits.threads`
//! threads; rows come back in instance order. Cost: one solve per instance (bounded by the
//! time limit), plus O(activities + precedences) for the bound and the check.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use concerto_rcpsp::io::psplib::{read_reference as read_reference_rows, Reference};
use concerto_rcpsp::{bounds, check, read_problem, Limits, Solver, Status};

use crate::shard::Shard;
use crate::{pct_above, BenchError};
use concerto_pipeline::progress::Progress;

pub mod peers;
mod shards;
pub use peers::ReferenceRuns;
pub use shards::{shard_file, Psplib, PsplibMerged, PsplibShardConfig, WindowSettings};

/// What to solve, against which reference, under which limits.
#[derive(Clone, Debug)]
pub struct PsplibConfig {
    /// The instance files, in report order ([`list_instances`] selects them from a
    /// directory).
    pub instances: Vec<PathBuf>,
    /// Reference rows by instance name (the file stem, `j301_1`); instances without a row
    /// are solved and checked but not compared ([`read_reference`] reads a table).
    pub reference: BTreeMap<String, Reference>,
    /// The limits of every solve (time, seed, threads). They hold for every instance, so
    /// they carry no starting schedule.
    pub limits: Limits,
    /// Instances solved at the same time (at least 1).
    pub jobs: usize,
}

impl PsplibConfig {
    /// `instances` against `reference`, one at a time, with default limits.
    pub fn new(instances: Vec<PathBuf>, reference: BTreeMap<String, Reference>) -> Self {
        Self {
            instances,
            reference,
            limits: Limits::default(),
            jobs: 1,
        }
    }
}

/// Something about one instance's result that is wrong or could not be established.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
#[non_exhaustive]
pub enum Finding {
    /// The instance file could not be read (the row's status is `error`).
    Unreadable {
        /// The reader's error, which names the file and place.
        message: String,
    },
    /// The solver failed with an error (the row's status is `error`).
    SolveFailed {
        /// The solver's error.
        message: String,
    },
    /// Our critical-path bound differs from the reference's.
    CriticalPathDiffers {
        /// Ours.
        ours: i64,
        /// The reference's.
        reference: i64,
    },
    /// The checker accepts the schedule, but with another makespan than the solver reported.
    MakespanDiffers {
        /// The checker's makespan.
        checked: i64,
        /// The solver's.
        reported: Option<i64>,
    },
    /// The schedule fails the checker.
    Violations {
        /// What the checker found.
        message: String,
    },
    /// The makespan is below the reference's lower bound.
    BelowReferenceBound {
        /// The makespan found.
        makespan: i64,
        /// The reference's lower bound.
        lower_bound: i64,
    },
    /// A proven optimum differs from a proven reference optimum.
    OptimumDiffers {
        /// Our proven optimum.
        optimum: i64,
        /// The reference's.
        reference: i64,
    },
    /// The proven lower bound is above the best known makespan.
    BoundAboveBestKnown {
        /// Our lower bound.
        lower_bound: i64,
        /// The reference's best known makespan.
        best_known: i64,
    },
}

impl Finding {
    /// Whether this finding means the instance was not solved at all (unreadable file,
    /// solver error), rather than a result that contradicts the checker or the reference.
    pub fn is_error(&self) -> bool {
        matches!(
            self,
            Finding::Unreadable { .. } | Finding::SolveFailed { .. }
        )
    }
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Finding::Unreadable { message }
            | Finding::SolveFailed { message }
            | Finding::Violations { message } => f.write_str(message),
            Finding::CriticalPathDiffers { ours, reference } => {
                write!(
                    f,
                    "critical path {ours} differs from the reference's {reference}"
                )
            }
            Finding::MakespanDiffers { checked, reported } => {
                write!(
                    f,
                    "makespan {checked} differs from the reported {reported:?}"
                )
            }
            Finding::BelowReferenceBound {
                makespan,
                lower_bound,
            } => write!(
                f,
                "makespan {makespan} is below the reference lower bound {lower_bound}"
            ),
            Finding::OptimumDiffers { optimum, reference } => write!(
                f,
                "proven optimum {optimum} differs from the reference optimum {reference}"
            ),
            Finding::BoundAboveBestKnown {
                lower_bound,
                best_known,
            } => write!(
                f,
                "lower bound {lower_bound} is above the best known makespan {best_known}"
            ),
        }
    }
}

/// The result on one instance.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PsplibRow {
    /// The instance name (the file stem, `j301_1`).
    pub instance: String,
    /// Its activities (0 when the file could not be read).
    pub jobs: usize,
    /// The solve's status ([`Status::as_str`]: `optimal`, `feasible`, `infeasible`,
    /// `unknown`), or `error` when the instance could not be read or solved.
    pub status: String,
    /// The makespan of the schedule found.
    pub makespan: Option<i64>,
    /// The lower bound the solver proved (`None` on `error`).
    pub lower_bound: Option<i64>,
    /// The critical-path bound (0 when the file could not be read).
    pub critical_path: i64,
    /// The reference's best known makespan.
    pub best_known: Option<i64>,
    /// Whether the reference's best known makespan is proven optimal.
    pub best_known_optimal: Option<bool>,
    /// Percent of the makespan above the best known one.
    pub pct_above_best_known: Option<f64>,
    /// Percent of the makespan above the critical path.
    pub pct_above_cpm: Option<f64>,
    /// Wall time of the solve, in seconds.
    pub time_s: f64,
    /// Whether the schedule passed [`concerto_rcpsp::check`] with the reported makespan.
    pub checked: bool,
    /// What is wrong with this result, in the order found.
    pub findings: Vec<Finding>,
}

impl PsplibRow {
    /// The status of a row whose instance could not be read or solved.
    pub const ERROR: &'static str = "error";

    /// Whether the instance could not be read or solved.
    pub fn is_error(&self) -> bool {
        self.status == Self::ERROR
    }

    /// Whether the result contradicts the checker or the reference (a solved instance with
    /// findings).
    pub fn is_contradiction(&self) -> bool {
        !self.is_error() && !self.findings.is_empty()
    }

    /// The findings in one line, `; `-separated, or `None` without findings.
    pub fn problem(&self) -> Option<String> {
        (!self.findings.is_empty()).then(|| {
            self.findings
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("; ")
        })
    }
}

/// The bench over every instance.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PsplibSummary {
    /// Instances run.
    pub instances: usize,
    /// Schedules that passed the checker with the reported makespan.
    pub checked: usize,
    /// Instances whose status is `optimal`.
    pub proven_optimal: usize,
    /// Instances whose makespan equals the best known one.
    pub equal_best_known: usize,
    /// Mean percent above the best known makespan, over instances with both.
    pub mean_pct_above_best_known: Option<f64>,
    /// Mean percent above the critical path, over instances with a makespan.
    pub mean_pct_above_cpm: Option<f64>,
    /// Median solve time, in seconds.
    pub median_time_s: f64,
    /// Longest solve time, in seconds.
    pub max_time_s: f64,
    /// Solved instances whose result contradicts the checker or the reference.
    pub contradictions: usize,
    /// Instances that could not be read or solved.
    pub errors: usize,
}

impl PsplibSummary {
    /// Summarises rows. Cost: O(n log n) in the rows (the median sorts the times).
    pub fn of(rows: &[PsplibRow]) -> Self {
        let mut times: Vec<f64> = rows.iter().map(|r| r.time_s).collect();
        times.sort_by(f64::total_cmp);
        let median = match times.len() {
            0 => 0.0,
            n if n % 2 == 1 => times[n / 2],
            n => (times[n / 2 - 1] + times[n / 2]) / 2.0,
        };
        Self {
            instances: rows.len(),
            checked: rows.iter().filter(|r| r.checked).count(),
            proven_optimal: rows
                .iter()
                .filter(|r| r.status == Status::Optimal.as_str())
                .count(),
            equal_best_known: rows
                .iter()
                .filter(|r| r.makespan.is_some() && r.makespan == r.best_known)
                .count(),
            mean_pct_above_best_known: mean(rows.iter().filter_map(|r| r.pct_above_best_known)),
            mean_pct_above_cpm: mean(rows.iter().filter_map(|r| r.pct_above_cpm)),
            median_time_s: median,
            max_time_s: times.last().copied().unwrap_or(0.0),
            contradictions: rows.iter().filter(|r| r.is_contradiction()).count(),
            errors: rows.iter().filter(|r| r.is_error()).count(),
        }
    }

    /// The bench passes when every instance was solved, every schedule checked, and nothing
    /// contradicts the reference.
    pub fn passed(&self) -> bool {
        self.contradictions == 0 && self.errors == 0 && self.checked == self.instances
    }
}

/// What [`run`] returns.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PsplibReport {
    /// One row per instance, in the configuration's order.
    pub rows: Vec<PsplibRow>,
    /// Over every row.
    pub summary: PsplibSummary,
}

impl PsplibReport {
    /// Rows with no reference row.
    pub fn missing_reference(&self) -> usize {
        self.rows.iter().filter(|r| r.best_known.is_none()).count()
    }
}

/// What `bench psplib --json` prints about the run, before the summary's keys.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PsplibRun {
    /// The solver's name as asked for.
    pub solver: String,
    /// The instance directory, as given.
    pub dir: String,
    /// The time limit of each solve, in seconds, as given.
    pub time_limit_s: Option<f64>,
    /// The work limit of each solve (absent from the JSON when not set).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub work_limit: Option<u64>,
    /// The seed of every solve.
    pub seed: u64,
    /// Instances solved at the same time.
    pub jobs: usize,
    /// Threads of each solve.
    pub threads: usize,
}

/// The JSON object of `bench psplib --json`: the run's settings, then the summary's keys.
#[derive(Clone, Copy, Debug, serde::Serialize)]
pub struct PsplibJson<'a> {
    /// The run.
    #[serde(flatten)]
    pub run: &'a PsplibRun,
    /// The summary.
    #[serde(flatten)]
    pub summary: &'a PsplibSummary,
    /// Other solvers' runs beside this one's proofs (`--reference-runs`; absent from the
    /// JSON when not asked for).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reference_runs: Option<&'a ReferenceRuns>,
}

impl PsplibSummary {
    /// The one-row table of `bench psplib`, `solver` named in its first column.
    pub fn table(&self, solver: &str) -> String {
        let f = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.2}"));
        let mut t = concerto_pipeline::table::Table::new(&[
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
            solver.to_owned(),
            self.instances.to_string(),
            self.checked.to_string(),
            self.proven_optimal.to_string(),
            self.equal_best_known.to_string(),
            f(self.mean_pct_above_best_known),
            f(self.mean_pct_above_cpm),
            format!("{:.3}", self.median_time_s),
            format!("{:.3}", self.max_time_s),
        ]);
        t.render()
    }
}

/// An instance's name: its file name without `.sm` or `.sm.gz` (`j301_1`).
pub fn instance_name(path: &Path) -> String {
    concerto_rcpsp::io::instance_name(path)
}

/// The `.sm` files of `dir`, gzipped or not (`.sm.gz`), whose file name without `.gz` matches
/// `only` (`*` matches any run of characters, e.g. `j30*_1.sm`), in natural order (digit runs compare as numbers, so
/// `j302_1` comes before `j3010_1`), the first `limit` of them. An empty selection is an
/// error. Cost: O(f log f) in the directory's files.
pub fn list_instances(
    dir: &Path,
    only: Option<&str>,
    limit: Option<usize>,
) -> Result<Vec<PathBuf>, BenchError> {
    let read_dir = |source| BenchError::ReadDir {
        dir: dir.to_path_buf(),
        source,
    };
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(read_dir)? {
        let path = entry.map_err(read_dir)?.path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        let name = name.strip_suffix(".gz").unwrap_or(name);
        if name.ends_with(".sm") && only.is_none_or(|p| glob(p, name)) {
            files.push(path);
        }
    }
    files.sort_by_cached_key(|p| natural_key(&p.file_name().unwrap_or_default().to_string_lossy()));
    if let Some(n) = limit {
        files.truncate(n);
    }
    if files.is_empty() {
        return Err(BenchError::NoInstances {
            dir: dir.to_path_buf(),
            pattern: only.map(str::to_owned),
        });
    }
    Ok(files)
}

/// Reads a reference table (see [`concerto_rcpsp::io::psplib::parse_reference`]) into rows
/// by instance name.
pub fn read_reference(path: &Path) -> Result<BTreeMap<String, Reference>, BenchError> {
    Ok(read_reference_rows(path)?
        .into_iter()
        .map(|r| (r.instance.clone(), r))
        .collect())
}

/// The threads of each solve when `jobs` instances run at once: the cores divided by `jobs`,
/// at least 1.
pub fn default_threads(jobs: usize) -> usize {
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
    (cores / jobs.max(1)).max(1)
}

/// Runs the bench: every instance of `config` with `solver`, `config.jobs` at a time,
/// reporting one item per instance to `progress`. See the module docs.
pub fn run(
    config: &PsplibConfig,
    solver: &dyn Solver,
    progress: &dyn Progress,
) -> Result<PsplibReport, BenchError> {
    validate(config)?;
    if config.instances.is_empty() {
        return Err(BenchError::InvalidConfig {
            reason: "no instance to solve".into(),
        });
    }
    let files = &config.instances;
    progress.start("psplib", Some(files.len() as u64));
    let next = AtomicUsize::new(0);
    let rows: Mutex<Vec<Option<PsplibRow>>> = Mutex::new(vec![None; files.len()]);
    std::thread::scope(|scope| {
        for _ in 0..config.jobs.min(files.len()) {
            scope.spawn(|| loop {
                let k = next.fetch_add(1, Ordering::Relaxed);
                let Some(path) = files.get(k) else {
                    return;
                };
                let row = solve_instance(
                    path,
                    solver,
                    &config.limits,
                    config.reference.get(&instance_name(path)),
                );
                let message = format!(
                    "{} {}",
                    row.instance,
                    row.makespan.map_or("-".into(), |m| m.to_string())
                );
                rows.lock().unwrap_or_else(|e| e.into_inner())[k] = Some(row);
                progress.advance(1, &message);
            });
        }
    });
    progress.finish();
    let rows: Vec<PsplibRow> = rows
        .into_inner()
        .unwrap_or_else(|e| e.into_inner())
        .into_iter()
        .map(|r| r.expect("every instance is taken by a worker"))
        .collect();
    let summary = PsplibSummary::of(&rows);
    Ok(PsplibReport { rows, summary })
}

/// [`run`] on the instances of `shard` only: of `config.instances` (the unsharded run's, in
/// its order), those at positions `k` with `k mod N = I` ([`crate::shard`]). A shard without
/// instances of a split in several (more shards than instances) is an empty report, not an
/// error, so that every shard of a split has its file to merge.
pub fn run_shard(
    config: &PsplibConfig,
    shard: Shard,
    solver: &dyn Solver,
    progress: &dyn Progress,
) -> Result<PsplibReport, BenchError> {
    let config = PsplibConfig {
        instances: shard.pick(&config.instances),
        ..config.clone()
    };
    if config.instances.is_empty() && shard.count() > 1 {
        validate(&config)?;
        return Ok(PsplibReport {
            rows: Vec::new(),
            summary: PsplibSummary::of(&[]),
        });
    }
    run(&config, solver, progress)
}

/// An error for a configuration [`run`] cannot run, whatever its instances.
fn validate(config: &PsplibConfig) -> Result<(), BenchError> {
    let invalid = |reason: &str| {
        Err(BenchError::InvalidConfig {
            reason: reason.to_owned(),
        })
    };
    if config.jobs == 0 {
        return invalid("jobs must be at least 1");
    }
    if config.limits.threads == 0 {
        return invalid("threads must be at least 1");
    }
    if config.limits.initial.is_some() {
        return invalid("a starting schedule cannot hold for every instance");
    }
    Ok(())
}

/// Reads, solves, checks and compares one instance (see the module docs). Never fails: an
/// unreadable file or a solver error is a row with status `error` and a [`Finding`].
pub fn solve_instance(
    path: &Path,
    solver: &dyn Solver,
    limits: &Limits,
    reference: Option<&Reference>,
) -> PsplibRow {
    let instance = instance_name(path);
    let failed = |finding: Finding, jobs: usize, cp: i64| PsplibRow {
        instance: instance.clone(),
        jobs,
        status: PsplibRow::ERROR.into(),
        makespan: None,
        lower_bound: None,
        critical_path: cp,
        best_known: reference.map(|r| r.upper_bound),
        best_known_optimal: reference.map(|r| r.optimal),
        pct_above_best_known: None,
        pct_above_cpm: None,
        time_s: 0.0,
        checked: false,
        findings: vec![finding],
    };
    let problem = match read_problem(path) {
        Ok(p) => p,
        Err(e) => {
            return failed(
                Finding::Unreadable {
                    message: e.to_string(),
                },
                0,
                0,
            )
        }
    };
    let cp = bounds::critical_path(&problem).value;
    let mut findings = Vec::new();
    if let Some(r) = reference.and_then(|r| r.critical_path) {
        if r != cp {
            findings.push(Finding::CriticalPathDiffers {
                ours: cp,
                reference: r,
            });
        }
    }
    let outcome = match solver.solve(&problem, limits) {
        Ok(o) => o,
        Err(e) => {
            return failed(
                Finding::SolveFailed {
                    message: e.to_string(),
                },
                problem.len(),
                cp,
            )
        }
    };
    let checked = match &outcome.schedule {
        Some(s) => match check(&problem, s) {
            Ok(m) if Some(m) == outcome.makespan => true,
            Ok(m) => {
                findings.push(Finding::MakespanDiffers {
                    checked: m,
                    reported: outcome.makespan,
                });
                false
            }
            Err(v) => {
                findings.push(Finding::Violations {
                    message: v.to_string(),
                });
                false
            }
        },
        None => false,
    };
    if let Some(r) = reference {
        if let Some(m) = outcome.makespan {
            if m < r.lower_bound {
                findings.push(Finding::BelowReferenceBound {
                    makespan: m,
                    lower_bound: r.lower_bound,
                });
            }
            if outcome.status == Status::Optimal && r.optimal && m != r.upper_bound {
                findings.push(Finding::OptimumDiffers {
                    optimum: m,
                    reference: r.upper_bound,
                });
            }
        }
        if outcome.lower_bound > r.upper_bound {
            findings.push(Finding::BoundAboveBestKnown {
                lower_bound: outcome.lower_bound,
                best_known: r.upper_bound,
            });
        }
    }
    PsplibRow {
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
            .map(|(m, r)| pct_above(m, r.upper_bound)),
        pct_above_cpm: outcome.makespan.map(|m| pct_above(m, cp)),
        time_s: outcome.elapsed.as_secs_f64(),
        checked,
        findings,
    }
}

fn mean(values: impl Iterator<Item = f64>) -> Option<f64> {
    let (sum, n) = values.fold((0.0, 0usize), |(s, n), v| (s + v, n + 1));
    (n > 0).then(|| sum / n as f64)
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

    #[test]
    fn summary_median_and_verdict() {
        let row = |time_s: f64, status: &str, findings: Vec<Finding>| PsplibRow {
            instance: "x".into(),
            jobs: 3,
            status: status.into(),
            makespan: Some(10),
            lower_bound: Some(10),
            critical_path: 8,
            best_known: Some(10),
            best_known_optimal: Some(true),
            pct_above_best_known: Some(0.0),
            pct_above_cpm: Some(25.0),
            time_s,
            checked: findings.is_empty(),
            findings,
        };
        let rows = vec![
            row(3.0, "optimal", vec![]),
            row(1.0, "feasible", vec![]),
            row(2.0, "optimal", vec![]),
            row(
                4.0,
                "optimal",
                vec![Finding::OptimumDiffers {
                    optimum: 10,
                    reference: 11,
                }],
            ),
        ];
        let s = PsplibSummary::of(&rows);
        assert_eq!(s.median_time_s, 2.5);
        assert_eq!(s.max_time_s, 4.0);
        assert_eq!(s.proven_optimal, 3);
        assert_eq!((s.checked, s.contradictions, s.errors), (3, 1, 0));
        assert!(!s.passed());
        assert!(PsplibSummary::of(&rows[..3]).passed());
        assert_eq!(
            rows[3].problem().as_deref(),
            Some("proven optimum 10 differs from the reference optimum 11")
        );
    }
}
