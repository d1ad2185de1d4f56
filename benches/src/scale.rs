//! The scale bench: the odd-even driver on generated DL-like training steps of growing size,
//! against the plain heuristic given the same wall time.
//!
//! For each size: generate a training step of about that many activities
//! ([`concerto_rcpsp::generate::training_step`]), run the odd-even driver
//! ([`concerto_rcpsp::OddEven`], the windowed method of Cheng et al., ASPLOS 2025) around the
//! given window solver for a fixed number of rounds (no overall time limit and no early stop,
//! so the work per size is fixed and times compare across sizes), check its schedule with
//! [`concerto_rcpsp::check`], then run [`Heuristic`] for the same wall time and check its
//! schedule too. Gaps are against the driver's global lower bound, whose kind
//! [`ScaleRow::bound`] names.
//!
//! Cost per size: O(k * t_b * n / b) for k rounds of windows of b activities each solved in
//! at most t_b, plus the heuristic's equal time.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use concerto_rcpsp::generate::{training_step, TrainingStep};
use concerto_rcpsp::{
    check, BoundKind, Heuristic, Limits, OddEven, OddEvenConfig, Problem, Schedule, Solver,
};

use crate::shard::{MergeError, Merged, Shard, ShardFile, Shardable};
use crate::{pct_above, BenchError};
use concerto_pipeline::progress::Progress;
use concerto_pipeline::schedule::Shared;
pub use concerto_pipeline::solve::RoundSummary;

/// The sizes and the driver's settings.
#[derive(Clone, Debug, PartialEq)]
pub struct ScaleConfig {
    /// Sizes (activities, approximately) of the generated training steps, in report order.
    pub sizes: Vec<usize>,
    /// Communication channels of the generated steps (1 or 2).
    pub channels: usize,
    /// Activities per block (a window holds two).
    pub block: usize,
    /// Odd-even rounds, all of them run.
    pub rounds: usize,
    /// Time limit of each window's solve.
    pub window_time_limit: Duration,
    /// Schedules the starting heuristic may generate. Each one costs a serial SGS and its
    /// forward-backward justification, about 50 ms at 100k activities, and the start runs
    /// before the windows, on one thread: 50 schedules took 2.5 s of a 9.4 s run at 100k,
    /// 10 schedules 0.6 s, for the same starting makespan at 10k (seeds 0 to 3, one and two
    /// channels) and 100k (seed 0).
    pub start_schedules: u64,
    /// Seed of the generator and the solvers.
    pub seed: u64,
    /// Worker threads of the driver (windows of one pass run in parallel).
    pub threads: usize,
}

impl Default for ScaleConfig {
    /// Sizes 1k, 10k and 100k, two channels, the driver's default block and window time
    /// limit, 2 rounds, 10 starting schedules, seed 0, one thread.
    fn default() -> Self {
        let driver = OddEvenConfig::default();
        Self {
            sizes: vec![1_000, 10_000, 100_000],
            channels: 2,
            block: driver.block,
            rounds: 2,
            window_time_limit: driver.window_time_limit,
            start_schedules: 10,
            seed: 0,
            threads: 1,
        }
    }
}

/// The result at one size.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ScaleRow {
    /// Activities of the generated step.
    pub n: usize,
    /// Rounds run.
    pub rounds: usize,
    /// Wall time of the driver, in seconds.
    pub time_s: f64,
    /// Makespan of the starting schedule.
    pub start_makespan: i64,
    /// Time spent on the starting schedule, in seconds.
    pub start_time_s: f64,
    /// The driver's checked makespan.
    pub makespan: i64,
    /// The global lower bound.
    pub lower_bound: i64,
    /// Which bound gives [`lower_bound`](Self::lower_bound) (serialised by its
    /// [`BoundKind::as_str`] name).
    #[serde(with = "bound_kind")]
    pub bound: BoundKind,
    /// Percent of the makespan above the lower bound.
    pub gap_pct: f64,
    /// The heuristic's checked makespan, given the driver's wall time.
    pub heuristic_makespan: i64,
    /// The heuristic's wall time, in seconds.
    pub heuristic_time_s: f64,
    /// Percent of the heuristic's makespan above the lower bound.
    pub heuristic_gap_pct: f64,
    /// Peak resident memory of the process so far, in MiB (Linux only).
    pub peak_rss_mb: Option<f64>,
    /// One entry per round.
    pub round_reports: Vec<RoundSummary>,
}

/// [`BoundKind`] as its [`BoundKind::as_str`] name.
mod bound_kind {
    use concerto_rcpsp::BoundKind;
    use serde::{Deserialize, Deserializer, Serializer};

    const KINDS: [BoundKind; 4] = [
        BoundKind::CriticalPath,
        BoundKind::Energy,
        BoundKind::Energetic,
        BoundKind::Solver,
    ];

    pub(super) fn serialize<S: Serializer>(kind: &BoundKind, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(kind.as_str())
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<BoundKind, D::Error> {
        let name = String::deserialize(d)?;
        KINDS
            .into_iter()
            .find(|k| k.as_str() == name)
            .ok_or_else(|| {
                serde::de::Error::unknown_variant(
                    &name,
                    &["critical-path", "energy", "energetic", "solver"],
                )
            })
    }
}

/// What [`run`] returns.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ScaleReport {
    /// The window solver's name.
    pub solver: String,
    /// One row per size, in the configuration's order.
    pub rows: Vec<ScaleRow>,
}

/// What `bench scale --json` prints about the run besides its rows.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ScaleRun {
    /// The window solver's name as asked for.
    pub solver: String,
    /// Activities per block ([`ScaleConfig::block`]).
    pub window: usize,
    /// Odd-even rounds.
    pub rounds: usize,
    /// Time limit of each window's solve, in seconds, as given.
    pub window_time_limit_s: f64,
    /// Worker threads.
    pub threads: usize,
}

/// The JSON object of `bench scale --json`: the run's settings and its rows under `sizes`.
pub fn json(run: &ScaleRun, rows: &[ScaleRow]) -> serde_json::Result<serde_json::Value> {
    let mut v = serde_json::to_value(run)?;
    v["sizes"] = serde_json::to_value(rows)?;
    Ok(v)
}

/// The table of `bench scale`: one line per size.
pub fn table(rows: &[ScaleRow]) -> String {
    let mut t = concerto_pipeline::table::Table::new(&[
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
    for r in rows {
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
    t.render()
}

/// Everything about a `bench scale` run that decides its rows: what every shard of one run
/// shares ([`crate::shard`]). Its items are the sizes.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ScaleShardConfig {
    /// What the JSON prints.
    pub run: ScaleRun,
    /// Every size of the unsharded run, in its order.
    pub sizes: Vec<usize>,
    /// Communication channels of the generated steps.
    pub channels: usize,
    /// Schedules the starting heuristic may generate.
    pub start_schedules: u64,
    /// Seed of the generator and the solvers.
    pub seed: u64,
}

/// The unsharded run rebuilt from its shards ([`crate::shard::merge`] of [`Scale`]).
#[derive(Clone, Debug, PartialEq)]
pub struct ScaleMerged {
    /// The configuration every shard shares.
    pub config: ScaleShardConfig,
    /// One row per size, in the unsharded order.
    pub rows: Vec<ScaleRow>,
}

/// `bench scale` as a [`Shardable`] kind: its items are the sizes, its rows [`ScaleRow`]s.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Scale;

impl Shardable for Scale {
    const NAME: &'static str = "scale";
    type Config = ScaleShardConfig;
    type Row = ScaleRow;
    type Unsharded = ScaleMerged;

    /// The items must be the configuration's sizes.
    fn check(file: &Path, f: &ShardFile<Self>) -> Result<(), MergeError> {
        if f.items == size_items(&f.config.sizes) {
            return Ok(());
        }
        Err(MergeError::Rows {
            file: file.to_path_buf(),
            reason: format!(
                "its items {:?} are not its sizes {:?}",
                f.items, f.config.sizes
            ),
        })
    }

    fn unsharded(merged: Merged<Self>) -> ScaleMerged {
        ScaleMerged {
            config: merged.config,
            rows: merged.rows,
        }
    }
}

/// The sizes as a shard file's items.
fn size_items(sizes: &[usize]) -> Vec<String> {
    sizes.iter().map(ToString::to_string).collect()
}

/// The shard file of `shard` of the run `config` (every size of the unsharded run), whose
/// rows over the shard's sizes are `rows`. Each row's peak memory is its shard process's.
pub fn shard_file(
    config: ScaleShardConfig,
    shard: Shard,
    rows: Vec<ScaleRow>,
) -> Result<ShardFile<Scale>, BenchError> {
    let items = size_items(&config.sizes);
    ShardFile::new(shard, config, items, rows)
}

/// Runs the bench: every size of `config`, windows solved by `solver`, reporting one item per
/// size to `progress`. See the module docs.
pub fn run(
    config: &ScaleConfig,
    solver: Arc<dyn Solver>,
    progress: &dyn Progress,
) -> Result<ScaleReport, BenchError> {
    let invalid = |reason: String| Err(BenchError::InvalidConfig { reason });
    if !matches!(config.channels, 1 | 2) {
        return invalid(format!("channels must be 1 or 2, got {}", config.channels));
    }
    if config.block == 0 {
        return invalid("the block size must be positive".into());
    }
    if let Some(k) = config.sizes.iter().position(|&s| s == 0) {
        return invalid(format!("size {} of the list is 0", k + 1));
    }
    if config.window_time_limit.is_zero() {
        return invalid("the window time limit must be positive".into());
    }
    if config.threads == 0 {
        return invalid("threads must be at least 1".into());
    }
    let name = solver.name().to_owned();
    let driver = OddEven::new(
        Box::new(Shared(solver)),
        OddEvenConfig {
            block: config.block,
            rounds: config.rounds,
            window_time_limit: config.window_time_limit,
            start_schedules: config.start_schedules,
            // With no overall limit every round runs: the work per size is fixed.
            patience: usize::MAX,
            ..OddEvenConfig::default()
        },
    );
    progress.start("scale", Some(config.sizes.len() as u64));
    let mut rows = Vec::with_capacity(config.sizes.len());
    for &size in &config.sizes {
        let row = run_size(config, &driver, size)?;
        progress.advance(1, &format!("n = {}: {:.1} s", row.n, row.time_s));
        rows.push(row);
    }
    progress.finish();
    Ok(ScaleReport { solver: name, rows })
}

fn run_size(config: &ScaleConfig, driver: &OddEven, size: usize) -> Result<ScaleRow, BenchError> {
    let problem = training_step(&TrainingStep::with_size(size, config.channels, config.seed));
    let instance = format!(
        "the training step of size {size} ({} activities, {} channel(s), seed {})",
        problem.len(),
        config.channels,
        config.seed
    );
    let driver_name = driver.name().to_owned();
    let began = Instant::now();
    let report = driver
        .run(
            &problem,
            &Limits {
                seed: config.seed,
                threads: config.threads,
                ..Limits::default()
            },
        )
        .map_err(|source| BenchError::Solve {
            instance: instance.clone(),
            solver: driver_name.clone(),
            source: Box::new(source),
        })?;
    let time = began.elapsed();
    let makespan = checked(
        &problem,
        report.outcome.schedule.as_ref(),
        &instance,
        &driver_name,
    )?;
    // The plain heuristic, given the same wall time.
    let heuristic = Heuristic::default();
    let heuristic_name = heuristic.name().to_owned();
    let plain = heuristic
        .solve(
            &problem,
            &Limits {
                time_limit: Some(time.max(Duration::from_millis(1))),
                seed: config.seed,
                ..Limits::default()
            },
        )
        .map_err(|source| BenchError::Solve {
            instance: instance.clone(),
            solver: heuristic_name.clone(),
            source: Box::new(source),
        })?;
    let heuristic_makespan = checked(
        &problem,
        plain.schedule.as_ref(),
        &instance,
        &heuristic_name,
    )?;
    let bound = report.bound.value;
    Ok(ScaleRow {
        n: problem.len(),
        rounds: report.rounds.len(),
        time_s: time.as_secs_f64(),
        start_makespan: report.start_makespan,
        start_time_s: report.start_time.as_secs_f64(),
        makespan,
        lower_bound: bound,
        bound: report.bound.kind,
        gap_pct: pct_above(makespan, bound),
        heuristic_makespan,
        heuristic_time_s: plain.elapsed.as_secs_f64(),
        heuristic_gap_pct: pct_above(heuristic_makespan, bound),
        peak_rss_mb: peak_rss_mb(),
        round_reports: report.rounds.iter().map(RoundSummary::from).collect(),
    })
}

/// The checker's makespan of a schedule the bench needs.
fn checked(
    problem: &Problem,
    schedule: Option<&Schedule>,
    instance: &str,
    solver: &str,
) -> Result<i64, BenchError> {
    let schedule = schedule.ok_or_else(|| BenchError::NoSchedule {
        instance: instance.to_owned(),
        solver: solver.to_owned(),
    })?;
    check(problem, schedule).map_err(|source| BenchError::Unchecked {
        instance: instance.to_owned(),
        solver: solver.to_owned(),
        source: Box::new(source),
    })
}

/// Peak resident memory of this process so far (Linux's `VmHWM`), in MiB.
fn peak_rss_mb() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_row_round_trips_through_json_with_its_bound_named() {
        let row = ScaleRow {
            n: 10,
            rounds: 1,
            time_s: 0.5,
            start_makespan: 12,
            start_time_s: 0.1,
            makespan: 11,
            lower_bound: 10,
            bound: BoundKind::Energy,
            gap_pct: 10.0,
            heuristic_makespan: 12,
            heuristic_time_s: 0.5,
            heuristic_gap_pct: 20.0,
            peak_rss_mb: None,
            round_reports: vec![RoundSummary {
                round: 1,
                makespan: 11,
                lower_bound: 10,
                windows: 2,
                improved: 1,
                time_s: 0.4,
            }],
        };
        let json = serde_json::to_value(&row).unwrap();
        assert_eq!(json["bound"], "energy");
        let back: ScaleRow = serde_json::from_value(json).unwrap();
        assert_eq!(back, row);
        let mut bad = serde_json::to_value(&row).unwrap();
        bad["bound"] = "guess".into();
        assert!(serde_json::from_value::<ScaleRow>(bad).is_err());
    }
}
