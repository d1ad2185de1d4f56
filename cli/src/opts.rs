//! The options shared by `optimize`, `decompose`, `bench graphs|ablation` and `run-cuda`, and
//! how they become a [`Pipeline`].

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use concerto_extract::hlo::ImportOptions;
use concerto_graph::list::{ListConfig, Rule};
use concerto_graph::Hardware;
use concerto_pipeline::{Config, MemoryBudget, Pipeline, ScheduleConfig, Solvers};
use concerto_rcpsp::OddEvenConfig;

use crate::solve::{default_solver, registry, time_limit};

/// Whether to fuse collectives.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Fuse {
    /// No fusion.
    Off,
    /// Fuse, then schedule.
    On,
}

/// Whether and how to decompose ([`concerto_pipeline::Decompose`]).
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Decompose {
    /// Schedule only.
    Off,
    /// Choose decompositions with the exact selection model (a MILP through the backends),
    /// then schedule.
    Sequential,
    /// Choose decompositions greedily, re-evaluating after each, then schedule.
    Greedy,
    /// Sequential first, then decide every region's decomposition together with the order
    /// around it (exact windows over the union of all candidates).
    Joint,
}

impl From<Decompose> for concerto_pipeline::Decompose {
    fn from(d: Decompose) -> Self {
        match d {
            Decompose::Off => Self::Off,
            Decompose::Sequential => Self::Sequential,
            Decompose::Greedy => Self::Greedy,
            Decompose::Joint => Self::Joint,
        }
    }
}

/// Which decomposition families the selection tries ([`concerto_pipeline::Families`]).
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Families {
    /// Both: splits into chunks and collective-matmul rings.
    All,
    /// Concerto's splits into chunks only.
    Split,
    /// Collective-matmul rings only (Wang et al., ASPLOS 2023).
    Ring,
}

impl From<Families> for concerto_pipeline::Families {
    fn from(f: Families) -> Self {
        match f {
            Families::All => Self::All,
            Families::Split => Self::Split,
            Families::Ring => Self::Ring,
        }
    }
}

/// The time limit when neither `--time-limit` nor `--work-limit` is given (seconds).
const DEFAULT_TIME_LIMIT_S: f64 = 10.0;

/// How a graph file is read and costed: the flags of every command that imports one
/// (`optimize` and the commands built on it, `simulate`, `import`).
#[derive(Args, Debug, Clone, serde::Serialize)]
pub(crate) struct ImportFlags {
    /// Hardware profile: `h100` (measured tables), `h200` (the same die, HBM3e, measured
    /// memory efficiencies), `a800` (roofline, the paper's cluster), `a800-pcie` (the same
    /// without NVLink), `a100`, `v100` (datasheet peaks, tiled GEMMs), or a fitted profile
    /// file (`concerto calibrate -o FILE`).
    #[arg(long, default_value = "h100")]
    pub(crate) hardware: String,
    /// GPUs per node: decides which collectives of an imported `.hlo` cross nodes, and the
    /// profile's node size.
    #[arg(long, default_value_t = 8)]
    pub(crate) gpus_per_node: u32,
    /// The trip count of a `while` loop of an imported `.hlo` whose count the module does not
    /// give (a decode loop, say), by the loop's instruction name: `--trip-count while.3=16`.
    /// Repeatable; wins over the loop's `backend_config`.
    #[arg(long = "trip-count", value_name = "NAME=N", value_parser = parse_trip_count)]
    pub(crate) trip_counts: Vec<(String, u64)>,
    /// The trip count of every `while` loop of an imported `.hlo` whose count is neither
    /// given (`--trip-count`, `backend_config`) nor read from the loop, with a warning per
    /// loop that says why its count could not be read. Without it such a loop is an error.
    /// XLA's own cost analysis counts such a loop once: `--unknown-trip-count 1`.
    #[arg(long = "unknown-trip-count", value_name = "N")]
    pub(crate) unknown_trip_count: Option<u64>,
    /// The size of every unbounded dynamic dimension (`f32[?,8]`) of an imported `.hlo`.
    /// Without it such a dimension is an error: no cost can be computed without a size.
    #[arg(long = "unbounded-dim-size", value_name = "N")]
    pub(crate) unbounded_dim_size: Option<u64>,
}

impl ImportFlags {
    /// The options of importing a graph: `--gpus-per-node`, `--trip-count`,
    /// `--unknown-trip-count` and `--unbounded-dim-size`.
    pub(crate) fn import_options(&self) -> anyhow::Result<ImportOptions> {
        let mut options = import_options(self.gpus_per_node, &self.trip_counts)?;
        options.unknown_trip_count = self.unknown_trip_count;
        options.unbounded_dim_size = self.unbounded_dim_size;
        Ok(options)
    }

    /// The hardware profile of `--hardware` and `--gpus-per-node`.
    pub(crate) fn hardware(&self) -> anyhow::Result<Hardware> {
        Ok(Hardware::load(&self.hardware)?.with_gpus_per_node(self.gpus_per_node)?)
    }
}

/// Options shared by `concerto optimize` and the commands built on the same pipeline. They
/// serialise (by their field names) into a `bench graphs` shard file's configuration, which
/// every shard of one run must share.
#[derive(Args, Debug, Clone, serde::Serialize)]
pub(crate) struct OptimizeOpts {
    /// How the graph file is read and costed.
    #[command(flatten)]
    #[serde(flatten)]
    pub(crate) import: ImportFlags,
    /// Compute slowdown while a collective runs (default: the profile's; 1 for a profiler
    /// trace, whose measured durations contain it).
    #[arg(long, value_name = "X")]
    pub(crate) contention: Option<f64>,
    /// For a profiler trace: import `ProfilerStep#N` (default: the median step).
    #[arg(long, value_name = "N")]
    pub(crate) step: Option<u64>,
    /// For a profiler trace: drop the CPU launch times, as if every launch cost nothing (a
    /// CUDA graph): what the GPU alone would take, in the recorded order and in concerto's.
    #[arg(long)]
    pub(crate) no_launch_times: bool,
    /// The exact solver of the windows (`concerto solvers` lists them).
    #[arg(long, default_value_t = default_solver().to_string())]
    pub(crate) solver: String,
    /// Ops per odd-even block (a window holds two blocks).
    #[arg(long, value_name = "B", default_value_t = ScheduleConfig::default().oddeven.block)]
    pub(crate) window: usize,
    /// Largest block of the escalating windows (the driver doubles the block while more than
    /// half the budget is left).
    #[arg(long, value_name = "B", default_value_t = ScheduleConfig::default().max_block)]
    pub(crate) max_window: usize,
    /// Odd-even rounds.
    #[arg(long, value_name = "K", default_value_t = ScheduleConfig::default().oddeven.rounds)]
    pub(crate) rounds: usize,
    /// Time limit of each window's solve, in seconds (without `--work-limit`); at most a
    /// fifth of `--time-limit`, which keeps four window limits back for the windows in flight.
    #[arg(long, value_name = "SECS", default_value_t = ScheduleConfig::default().oddeven.window_time_limit.as_secs_f64())]
    pub(crate) window_time_limit: f64,
    /// Time limit of the whole call (import, baselines, bounds, search, simulation), in
    /// seconds [default: 10, none with --work-limit].
    #[arg(long, value_name = "SECS")]
    pub(crate) time_limit: Option<f64>,
    /// A deterministic work budget for each schedule (solver work: conflicts for pumpkin):
    /// the same input and seed give a byte-identical plan on any machine and load. Replaces
    /// the default time limit; an explicit `--time-limit` stays as a safety net.
    #[arg(long, value_name = "N")]
    pub(crate) work_limit: Option<u64>,
    /// How far the Inductor-like baseline moves an op, in program positions.
    #[arg(long, value_name = "N", default_value_t = concerto_graph::baselines::INDUCTOR_DISTANCE)]
    pub(crate) inductor_distance: usize,
    /// Seed of every random choice.
    #[arg(long, default_value_t = 0)]
    pub(crate) seed: u64,
    /// Decomposition around critical collectives: `off`, `sequential` (choose decompositions
    /// on the schedule-only result, then schedule the rewritten graph), `greedy` or `joint`.
    #[arg(long, value_enum, default_value_t = Decompose::Off)]
    pub(crate) decompose: Decompose,
    /// Collective fusion (bucketing, boundaries chosen by simulating concerto's plan with
    /// each candidate bucket): `on` adds the row `concerto+fuse`, the schedule of the fused
    /// graph, kept when not longer than unfused.
    #[arg(long, value_enum, default_value_t = Fuse::Off)]
    pub(crate) fuse: Fuse,
    /// Cost chunks as the op's duration x X / N instead of looking them up in the tables.
    #[arg(long, value_name = "X")]
    pub(crate) split_slowdown: Option<f64>,
    /// Decomposition families tried: `all`, `split` (Concerto's chunks) or `ring`
    /// (collective matmul around all-gathers and reduce-scatters that feed or follow a GEMM).
    #[arg(long, value_enum, default_value_t = Families::All)]
    pub(crate) families: Families,
    /// Worker threads (windows of one pass in parallel).
    #[arg(long, default_value_t = 1)]
    pub(crate) threads: usize,
    /// The priority rules of concerto's list-scheduling portfolio, in order (the windows start
    /// from the best): cp-forward, cp-comm-fifo, energy-tail, cp-plus-comm, cp-backward,
    /// justified, sampled [default: all but cp-comm-fifo, the LHS-like rule].
    #[arg(long, value_name = "RULE,...", value_delimiter = ',')]
    pub(crate) rules: Vec<String>,
    /// A memory budget that concerto's plan keeps: bytes (`80000000000`, `72GiB`) or a
    /// percentage of the program order's peak (`100%`). What is counted: resident parameters
    /// and inputs, live tensors from their producer's start to their last reader's end,
    /// collective buffers, and the step's outputs kept to its end. A budget no plan found
    /// keeps is an error naming the smallest peak found.
    #[arg(long, value_name = "BYTES|PCT%", value_parser = MemoryBudget::parse)]
    pub(crate) memory_budget: Option<MemoryBudget>,
    /// Random list schedules the `sampled` rule draws.
    #[arg(long, value_name = "N", default_value_t = concerto_graph::list::ListConfig::default().samples)]
    pub(crate) list_samples: usize,
}

/// Parses a `--trip-count` value, `NAME=N` (a leading `%` on the name is dropped).
pub(crate) fn parse_trip_count(value: &str) -> Result<(String, u64), String> {
    let (name, count) = value.split_once('=').ok_or_else(|| {
        format!("expected NAME=N (a while loop's name and its trip count), found `{value}`")
    })?;
    let name = name.trim();
    let name = name.strip_prefix('%').unwrap_or(name);
    if name.is_empty() {
        return Err(format!("no loop name before `=` in `{value}`"));
    }
    let count = count.trim().parse::<u64>().map_err(|_| {
        format!(
            "`{}` is not a trip count (a whole number) in `{value}`",
            count.trim()
        )
    })?;
    Ok((name.to_string(), count))
}

/// The import options of `--gpus-per-node` and the `--trip-count NAME=N` values: an error
/// when `gpus_per_node` is 0 or a loop is given two different counts.
pub(crate) fn import_options(
    gpus_per_node: u32,
    trip_counts: &[(String, u64)],
) -> anyhow::Result<ImportOptions> {
    if gpus_per_node == 0 {
        anyhow::bail!("--gpus-per-node must be at least 1");
    }
    let mut counts = BTreeMap::new();
    for (name, n) in trip_counts {
        if let Some(old) = counts.insert(name.clone(), *n) {
            if old != *n {
                anyhow::bail!("--trip-count gives loop `{name}` two counts, {old} and {n}");
            }
        }
    }
    Ok(ImportOptions {
        gpus_per_node,
        trip_counts: counts,
        ..ImportOptions::default()
    })
}

impl OptimizeOpts {
    /// The options of importing an `.hlo` graph: `--gpus-per-node` and `--trip-count`.
    pub(crate) fn import_options(&self) -> anyhow::Result<ImportOptions> {
        self.import.import_options()
    }

    /// The portfolio of `--rules` and `--list-samples`.
    pub(crate) fn list_config(&self) -> anyhow::Result<ListConfig> {
        let mut config = ListConfig {
            samples: self.list_samples,
            ..ListConfig::default()
        };
        if !self.rules.is_empty() {
            config.rules = self
                .rules
                .iter()
                .map(|name| {
                    Rule::parse(name).ok_or_else(|| {
                        anyhow::anyhow!(
                            "--rules: unknown rule `{name}` (known: {})",
                            Rule::ALL.map(Rule::as_str).join(", ")
                        )
                    })
                })
                .collect::<anyhow::Result<_>>()?;
        }
        Ok(config)
    }

    /// The hardware profile of `--hardware`, `--gpus-per-node` and `--contention`.
    pub(crate) fn hardware(&self) -> anyhow::Result<Hardware> {
        let hw = self.import.hardware()?;
        Ok(match self.contention {
            Some(c) => hw.with_contention(c)?,
            None => hw,
        })
    }

    /// The time limit of each schedule: `--time-limit`, else 10 s unless `--work-limit`.
    pub(crate) fn time_limit(&self) -> anyhow::Result<Option<Duration>> {
        match (self.time_limit, self.work_limit) {
            (Some(t), _) => time_limit(Some(t)),
            (None, Some(_)) => Ok(None),
            (None, None) => time_limit(Some(DEFAULT_TIME_LIMIT_S)),
        }
    }

    /// The S step's options.
    pub(crate) fn schedule_config(&self) -> anyhow::Result<ScheduleConfig> {
        if self.window == 0 {
            anyhow::bail!("--window must be at least 1");
        }
        if self.threads == 0 {
            anyhow::bail!("--threads must be at least 1");
        }
        if self.work_limit == Some(0) {
            anyhow::bail!("--work-limit must be at least 1");
        }
        let window_time_limit = time_limit(Some(self.window_time_limit))
            .map_err(|_| {
                anyhow::anyhow!("--window-time-limit must be a positive number of seconds")
            })?
            .unwrap_or(Duration::from_millis(100));
        let defaults = ScheduleConfig::default();
        Ok(ScheduleConfig {
            oddeven: OddEvenConfig {
                block: self.window,
                rounds: self.rounds,
                window_time_limit,
                ..defaults.oddeven
            },
            time_limit: self.time_limit()?,
            bounds_time_limit: None,
            work_limit: self.work_limit,
            seed: self.seed,
            threads: self.threads,
            inductor_distance: self.inductor_distance,
            max_block: self.max_window.max(self.window),
            list: self.list_config()?,
            hints: Vec::new(),
            module_schedule: None,
            // Resolved against the graph by the pipeline (`Config::memory_budget`).
            memory_budget: None,
        })
    }

    /// The pipeline's options.
    pub(crate) fn config(&self) -> anyhow::Result<Config> {
        if let Some(x) = self.split_slowdown {
            if !(x.is_finite() && x > 0.0) {
                anyhow::bail!("--split-slowdown must be a positive number, got {x}");
            }
        }
        let mut config = Config::new(self.hardware()?);
        config.schedule = self.schedule_config()?;
        config.decompose = self.decompose.into();
        config.select =
            concerto_pipeline::Families::from(self.families).select_config(self.split_slowdown);
        config.fuse = self.fuse == Fuse::On;
        config.memory_budget = self.memory_budget;
        Ok(config)
    }

    /// The solvers: `--solver` from the registry for the windows and, in joint mode, as the
    /// modal solver; the backends' default selector for the decomposition choice.
    pub(crate) fn solvers(&self) -> anyhow::Result<Solvers> {
        let solver: Arc<dyn concerto_rcpsp::Solver> = registry().get(&self.solver)?.into();
        let mut solvers =
            Solvers::new(solver).with_selector(concerto_backends::default_selector().into());
        if self.decompose == Decompose::Joint {
            solvers = solvers.with_modal(registry().modal(&self.solver)?.into());
        }
        Ok(solvers)
    }

    /// The pipeline these options describe.
    pub(crate) fn pipeline(&self) -> anyhow::Result<Pipeline> {
        Ok(Pipeline::new(self.config()?, self.solvers()?))
    }
}
