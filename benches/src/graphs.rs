//! `bench graphs`: every scheduler on model x parallelism configurations.
//!
//! The configurations are the Concerto paper's GPT plans ((pp, tp, dp) = (1,16,1), (1,8,2),
//! (2,4,2)), GPT tensor-parallel on 8 GPUs, ZeRO-2/3 data parallelism on 8/16/32 GPUs, and ViT,
//! Wide ResNet and Evoformer. Each runs the whole [`Pipeline`] (whatever steps its
//! configuration asks for); its Chrome trace is validated against the Trace Event Format, and
//! a configuration where concerto's plan loses to a baseline is listed in
//! [`GraphsBench::worse`]. Cost: one pipeline run per configuration.

use concerto_graph::{trace, Graph, StreamPlan};
use concerto_models::{
    EvoformerConfig, GptConfig, Model, Parallel, VitConfig, WideResNetConfig, Zero,
};

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::shard::Shard;
use crate::BenchError;

mod chart;
mod gap;
mod json;
mod shards;
mod table;
pub use chart::svg_chart;
use concerto_pipeline::pipeline::{Pipeline, Report};
use concerto_pipeline::progress::Progress;
use concerto_pipeline::schedule::{ModuleSchedule, Optimized};
use concerto_pipeline::summary::{gain_pct, Comparison, DecompositionSummary};
pub use shards::{Graphs, GraphsMerged, GraphsShardRow};
pub use table::GraphsTable;

/// A benchmark configuration: a model under a parallel plan.
#[derive(Clone, Debug)]
pub struct GraphConfig {
    /// Its name (`gpt-tp8`, ...).
    pub name: &'static str,
    /// The model.
    pub model: Model,
    /// The parallel plan.
    pub parallel: Parallel,
}

fn parallel(pp: u32, tp: u32, dp: u32, zero: Zero) -> Parallel {
    Parallel {
        dp,
        tp,
        pp,
        zero,
        microbatches: if pp > 1 { 2 * pp } else { 1 },
        ..Parallel::default()
    }
}

/// The configurations (see the module docs).
pub fn configs() -> Vec<GraphConfig> {
    let gpt = GptConfig::default();
    let small_gpt = GptConfig {
        layers: 8,
        hidden: 2048,
        heads: 16,
        seq: 2048,
        micro_batch: 4,
        ..GptConfig::default()
    };
    let c = |name, model, parallel| GraphConfig {
        name,
        model,
        parallel,
    };
    vec![
        c(
            "gpt-tp8",
            Model::Gpt(gpt.clone()),
            parallel(1, 8, 1, Zero::None),
        ),
        c(
            "gpt-pp1-tp16-dp1",
            Model::Gpt(gpt.clone()),
            parallel(1, 16, 1, Zero::None),
        ),
        c(
            "gpt-pp1-tp8-dp2",
            Model::Gpt(gpt.clone()),
            parallel(1, 8, 2, Zero::None),
        ),
        c(
            "gpt-pp2-tp4-dp2",
            Model::Gpt(gpt),
            parallel(2, 4, 2, Zero::None),
        ),
        c(
            "gpt-zero3-dp8",
            Model::Gpt(small_gpt.clone()),
            parallel(1, 1, 8, Zero::Stage3),
        ),
        c(
            "gpt-zero3-dp16",
            Model::Gpt(small_gpt.clone()),
            parallel(1, 1, 16, Zero::Stage3),
        ),
        c(
            "gpt-zero3-dp32",
            Model::Gpt(small_gpt.clone()),
            parallel(1, 1, 32, Zero::Stage3),
        ),
        c(
            "gpt-zero2-dp16",
            Model::Gpt(small_gpt),
            parallel(1, 1, 16, Zero::Stage2),
        ),
        c(
            "vit-tp4-dp2",
            Model::Vit(VitConfig::default()),
            parallel(1, 4, 2, Zero::None),
        ),
        c(
            "wide-resnet-dp16",
            Model::WideResNet(WideResNetConfig::default()),
            parallel(1, 1, 16, Zero::None),
        ),
        c(
            "evoformer-dap4-dp2",
            Model::Evoformer(EvoformerConfig::default()),
            parallel(1, 4, 2, Zero::None),
        ),
    ]
}

/// One configuration's result.
#[derive(Clone, Debug)]
pub struct GraphsRow {
    /// The configuration's name (or the extra graph's).
    pub config: String,
    /// The pipeline's report on its graph.
    pub report: Report,
    /// Events of the validated Chrome trace of every scheduler's timeline.
    pub trace_events: usize,
    /// Under a memory budget: the S step of the same graph without it (what the budget
    /// costs), else `None`.
    pub unbounded: Option<Optimized>,
    /// Whether concerto's plan simulates longer than a baseline's ([`GraphsBench::worse`]).
    pub worse: bool,
    /// Whether concerto's own search lost to a baseline ([`GraphsBench::search_worse`]).
    pub search_worse: bool,
}

/// What [`run`] found.
#[derive(Clone, Debug)]
pub struct GraphsBench {
    /// Every graph of the unsharded run by name, in run order (the extra graphs, then the
    /// configurations), those of other shards too.
    pub items: Vec<String>,
    /// The shard run ([`Shard::WHOLE`] when unsharded).
    pub shard: Shard,
    /// One row per graph run, in run order.
    pub rows: Vec<GraphsRow>,
    /// Configurations where concerto's plan simulates longer than a baseline's (never, unless
    /// something is broken: concerto falls back to a shorter baseline).
    pub worse: Vec<String>,
    /// Configurations where concerto's own search (its solver plan, before any fallback)
    /// simulates longer than a baseline's: the search lost to that baseline.
    pub search_worse: Vec<String>,
}

/// A graph of a [`run`]: a configuration's name and how to build it, or an extra graph given
/// whole (for example an imported XLA module).
enum Source<'a> {
    Config(GraphConfig),
    Extra(&'a str, &'a Graph, Option<&'a StreamPlan>),
}

impl Source<'_> {
    fn name(&self) -> &str {
        match self {
            Source::Config(c) => c.name,
            Source::Extra(n, _, _) => n,
        }
    }
}

/// Runs `pipeline` on every extra graph (`(name, graph, schedule)`, for example imported XLA
/// modules, with the schedule the module carried, reported as [`Scheduler::Xla`]) and every
/// configuration, those whose name contains `only` (all when `None`), telling `progress` after
/// each.
///
/// [`Scheduler::Xla`]: concerto_pipeline::Scheduler::Xla
pub fn run(
    pipeline: &Pipeline,
    only: Option<&str>,
    extra: &[(String, Graph, Option<StreamPlan>)],
    progress: &dyn Progress,
) -> Result<GraphsBench, BenchError> {
    run_shard(pipeline, only, extra, Shard::WHOLE, progress)
}

/// [`run`] on the graphs of `shard` only: of the graphs [`run`] would run, in its order, those
/// at positions `k` with `k mod N = I` ([`crate::shard`]).
pub fn run_shard(
    pipeline: &Pipeline,
    only: Option<&str>,
    extra: &[(String, Graph, Option<StreamPlan>)],
    shard: Shard,
    progress: &dyn Progress,
) -> Result<GraphsBench, BenchError> {
    let all: Vec<Source<'_>> = extra
        .iter()
        .map(|(n, g, p)| Source::Extra(n, g, p.as_ref()))
        .chain(configs().into_iter().map(Source::Config))
        .filter(|c| only.is_none_or(|p| c.name().contains(p)))
        .collect();
    let items: Vec<String> = all.iter().map(|c| c.name().to_owned()).collect();
    let chosen: Vec<Source<'_>> = all
        .into_iter()
        .enumerate()
        .filter(|(k, _)| shard.contains(*k))
        .map(|(_, c)| c)
        .collect();
    progress.start("bench graphs", Some(chosen.len() as u64));
    // Under a memory budget, the same S step without it, for the memory table.
    let budgeted =
        pipeline.config.memory_budget.is_some() || pipeline.config.schedule.memory_budget.is_some();
    let free = budgeted.then(|| {
        let mut config = pipeline.config.clone();
        config.memory_budget = None;
        config.schedule.memory_budget = None;
        Pipeline::new(config, pipeline.solvers.clone())
    });
    let mut rows = Vec::new();
    for source in chosen {
        let row = run_one(pipeline, free.as_ref(), &source)?;
        let s = &row.report.schedule;
        progress.advance(
            1,
            &format!(
                "{}: concerto {:.3} ms vs best baseline {:.3} ms",
                row.config,
                s.concerto().makespan_ns() as f64 / 1e6,
                s.best_baseline_ns() as f64 / 1e6
            ),
        );
        rows.push(row);
    }
    progress.finish();
    let named = |flag: fn(&GraphsRow) -> bool| -> Vec<String> {
        rows.iter()
            .filter(|r| flag(r))
            .map(|r| r.config.clone())
            .collect()
    };
    Ok(GraphsBench {
        items,
        shard,
        worse: named(|r| r.worse),
        search_worse: named(|r| r.search_worse),
        rows,
    })
}

/// One graph of [`run_shard`]: the pipeline's report (with the module's own schedule as a
/// baseline where the source carries one), its Chrome trace validated, the memory checker on
/// concerto's plan under a budget, and the S step without the budget on `free` (when given).
fn run_one(
    pipeline: &Pipeline,
    free: Option<&Pipeline>,
    source: &Source<'_>,
) -> Result<GraphsRow, BenchError> {
    let name = source.name().to_owned();
    let failed = |source: concerto_pipeline::PipelineError| BenchError::Pipeline {
        config: name.clone(),
        source: Box::new(source),
    };
    let built;
    let graph = match source {
        Source::Config(c) => {
            built = concerto_models::build(&c.model, &c.parallel).map_err(|e| failed(e.into()))?;
            &built
        }
        Source::Extra(_, g, _) => *g,
    };
    // The module's own schedule is a baseline of its graph.
    let own = match source {
        Source::Extra(_, g, Some(plan)) => {
            let mut config = pipeline.config.clone();
            config.schedule.module_schedule =
                Some(ModuleSchedule::new(g, (*plan).clone()).map_err(|e| failed(e.into()))?);
            Some(Pipeline::new(config, pipeline.solvers.clone()))
        }
        _ => None,
    };
    let report = own
        .as_ref()
        .unwrap_or(pipeline)
        .run(graph, &concerto_pipeline::progress::Silent)
        .map_err(failed)?;
    let s = &report.schedule;
    let timelines: Vec<_> = s
        .results
        .iter()
        .map(|x| (x.scheduler.as_str(), &x.timeline))
        .collect();
    let trace_events = trace::validate_chrome_trace(&trace::chrome_trace(graph, &timelines))
        .map_err(|reason| {
            failed(
                concerto_graph::GraphError::InvalidPlan {
                    reason: format!("invalid Chrome trace: {reason}"),
                }
                .into(),
            )
        })?;
    let opt = s.concerto().makespan_ns();
    // Under a budget, the independent checker on concerto's plan, and baselines count
    // only when within the budget.
    let fits = |x: &concerto_pipeline::Scheduled| {
        s.memory_budget_bytes
            .is_none_or(|b| x.peak_memory_bytes <= b)
    };
    if let Some(b) = s.memory_budget_bytes {
        concerto_graph::memory::check_memory(graph, &s.concerto().timeline, b)
            .map_err(|e| failed(e.into()))?;
    }
    let baselines = || {
        s.results
            .iter()
            .filter(|x| x.scheduler != concerto_pipeline::Scheduler::Concerto && fits(x))
    };
    let is_worse = baselines().any(|x| opt > x.makespan_ns());
    let best_fitting = baselines().map(|x| x.makespan_ns()).min();
    let lost = best_fitting.is_some_and(|b| s.solver_plan.makespan_ns() > b);
    let search_lost = !fits(&s.solver_plan) || lost;
    let unbounded = match free {
        Some(p) => Some(p.schedule(graph, Vec::new()).map_err(failed)?),
        None => None,
    };
    Ok(GraphsRow {
        config: name,
        report,
        trace_events,
        unbounded,
        worse: is_worse,
        search_worse: search_lost,
    })
}

/// The memory side of a [`GraphsRow`] run under a budget: program order, concerto without the
/// budget and with it, and the LHS baseline with XLA's memory treatment, each with its
/// simulated makespan and its peak ([`concerto_graph::memory`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemorySummary {
    /// The budget (bytes).
    pub budget_bytes: u64,
    /// Program order's peak (bytes).
    pub program_peak_bytes: u64,
    /// Concerto without the budget: makespan (ns) and peak (bytes).
    pub unbounded_ns: u64,
    /// See [`MemorySummary::unbounded_ns`].
    pub unbounded_peak_bytes: u64,
    /// Whether the unbounded plan's peak is above program order's.
    pub unbounded_raises_peak: bool,
    /// Concerto within the budget: makespan (ns) and peak (bytes).
    pub concerto_ns: u64,
    /// See [`MemorySummary::concerto_ns`].
    pub concerto_peak_bytes: u64,
    /// Share of the unbounded gain over program order kept within the budget (%); 100 when
    /// the unbounded plan gains nothing.
    pub kept_gain_pct: f64,
    /// The LHS baseline under the budget (memory as a tie-breaker, retry at 0.9): makespan
    /// (ns), peak (bytes), and whether it is within the budget.
    pub lhs_ns: u64,
    /// See [`MemorySummary::lhs_ns`].
    pub lhs_peak_bytes: u64,
    /// See [`MemorySummary::lhs_ns`].
    pub lhs_within: bool,
    /// A peak no plan can go below (bytes).
    pub peak_lower_bound_bytes: u64,
}

impl MemorySummary {
    /// The summary of a budgeted S step `s` and the unbounded one `free` of the same graph.
    pub fn of(s: &Optimized, free: &Optimized) -> Option<MemorySummary> {
        let budget = s.memory_budget_bytes?;
        let program = s.get(concerto_pipeline::Scheduler::ProgramOrder)?;
        let lhs = s.get(concerto_pipeline::Scheduler::Lhs)?;
        let (p, u, c) = (
            program.makespan_ns() as f64,
            free.concerto().makespan_ns() as f64,
            s.concerto().makespan_ns() as f64,
        );
        Some(MemorySummary {
            budget_bytes: budget,
            program_peak_bytes: program.peak_memory_bytes,
            unbounded_ns: free.concerto().makespan_ns(),
            unbounded_peak_bytes: free.concerto().peak_memory_bytes,
            unbounded_raises_peak: free.concerto().peak_memory_bytes > program.peak_memory_bytes,
            concerto_ns: s.concerto().makespan_ns(),
            concerto_peak_bytes: s.concerto().peak_memory_bytes,
            kept_gain_pct: if p > u {
                (p - c) / (p - u) * 100.0
            } else {
                100.0
            },
            lhs_ns: lhs.makespan_ns(),
            lhs_peak_bytes: lhs.peak_memory_bytes,
            lhs_within: lhs.peak_memory_bytes <= budget,
            peak_lower_bound_bytes: s.peak_lower_bound_bytes,
        })
    }
}

/// A [`GraphsRow`] flattened for JSON (`concerto bench graphs --json`); it reads back from
/// that JSON too.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct GraphsRowSummary {
    /// The configuration.
    pub config: String,
    /// Concerto's plan against the baselines and the bound.
    #[serde(flatten)]
    pub comparison: Comparison,
    /// S vs the best baseline, positive when shorter.
    pub gain_vs_best_baseline_pct: f64,
    /// S above the lower bound (percent).
    pub gap_to_bound_pct: f64,
    /// Where concerto's S plan comes from.
    pub origin: &'static str,
    /// Concerto's own search result (its solver plan, simulated, before any fallback; ns).
    pub solver_plan_ns: u64,
    /// The best plan of the list-scheduling portfolio, simulated (ns).
    pub portfolio_ns: u64,
    /// The plan the windows started from, simulated (ns): the best portfolio plan, polished on
    /// small graphs (`start` ends in `+polish` when that shortened it).
    pub start_ns: u64,
    /// The portfolio rule the windows started from.
    pub start: String,
    /// The best of the graph's own bounds, without the solver's (ns): the bound before the
    /// exact search.
    pub graph_bound_ns: u64,
    /// The solver's bound on the lowered problem (ns), where it reported one.
    pub solver_bound_ns: Option<u64>,
    /// The solve's status.
    pub solver_status: String,
    /// Events of the validated Chrome trace.
    pub trace_events: usize,
    /// Wall time of the S step (s).
    pub time_s: f64,
    /// Under a memory budget: what keeping it cost (see [`MemorySummary`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory: Option<MemorySummary>,
    /// S+AD: concerto on the rewritten graph, never above `optimized_ns` (S is kept when the
    /// rewrite schedules longer). With `--decompose` only, like the fields below.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decomposed_ns: Option<u64>,
    /// S+AD vs S, positive when shorter.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ad_gain_pct: Option<f64>,
    /// The decompositions applied (empty when none helped or the rewrite was rejected).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decompositions: Option<Vec<DecompositionSummary>>,
    /// Why the decompositions chosen were not applied, when they were not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ad_note: Option<String>,
    /// Selection plus scheduling of the rewritten graph.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ad_time_s: Option<f64>,
    /// `--decompose joint`: modes and order decided together, never above S+AD.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub joint_ns: Option<u64>,
    /// The candidates the joint solve applied.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub joint_decompositions: Option<Vec<String>>,
    /// Wall time of the joint step (candidates, union, windows, final schedule).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub joint_time_s: Option<f64>,
    /// Why S+AD was kept, when the joint plan simulated longer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub joint_note: Option<String>,
    /// S+F: concerto on the fused graph, never above `optimized_ns` (S is kept when the fused
    /// graph schedules longer). With `--fuse on` only, like the fields below.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fused_ns: Option<u64>,
    /// S+F vs S, positive when shorter.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fuse_gain_pct: Option<f64>,
    /// Collective calls before and after fusion.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub collective_calls: Option<(usize, usize)>,
    /// Why the fusion found was not kept, when it was not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fuse_note: Option<String>,
    /// Bucket search plus scheduling of the fused graph.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fuse_time_s: Option<f64>,
}

impl GraphsRow {
    /// The row flattened for JSON.
    pub fn summary(&self) -> GraphsRowSummary {
        let g = self;
        let r = &g.report;
        let s = &r.schedule;
        let opt = r.s_ns();
        let best = s.best_baseline_ns();
        let ad = r.decomposed.as_ref();
        let joint = r.joint.as_ref();
        let fu = r.fusion.as_ref();
        GraphsRowSummary {
            config: g.config.clone(),
            comparison: Comparison::of(s),
            gain_vs_best_baseline_pct: gain_pct(best, opt),
            gap_to_bound_pct: (opt as f64 / s.lower_bound_ns as f64 - 1.0) * 100.0,
            origin: s.origin.as_str(),
            solver_plan_ns: s.solver_plan.makespan_ns(),
            portfolio_ns: s.portfolio.first().map_or(0, |p| p.1),
            start_ns: s.start_makespan_ns,
            start: s.start.clone(),
            graph_bound_ns: bound_of(s, false).unwrap_or(0),
            solver_bound_ns: bound_of(s, true),
            solver_status: s.solver_status.to_string(),
            trace_events: g.trace_events,
            time_s: s.time.as_secs_f64(),
            decomposed_ns: ad.map(|a| a.makespan_ns),
            ad_gain_pct: ad.map(|a| gain_pct(opt, a.makespan_ns)),
            ad_time_s: ad.map(|a| a.time.as_secs_f64()),
            decompositions: ad.map(|a| DecompositionSummary::all(a.applied())),
            ad_note: ad.and_then(|a| a.rejected()).map(|(ns, k)| {
                format!(
                    "not applied: {k} decomposition(s) scheduled to {:.3} ms > S {:.3} ms",
                    ns as f64 / 1e6,
                    opt as f64 / 1e6
                )
            }),
            joint_ns: joint.map(|j| j.makespan_ns),
            joint_decompositions: joint.map(|j| j.chosen.clone()),
            joint_time_s: joint.map(|j| j.time.as_secs_f64()),
            joint_note: joint.and_then(|j| j.note.clone()),
            fused_ns: fu.map(|f| f.makespan_ns),
            fuse_gain_pct: fu.map(|f| gain_pct(opt, f.makespan_ns)),
            collective_calls: fu.map(|f| (s.collectives, f.calls_after(s))),
            fuse_note: fu.and_then(|f| f.note()),
            fuse_time_s: fu.map(|f| f.time.as_secs_f64()),
            memory: g
                .unbounded
                .as_ref()
                .and_then(|free| MemorySummary::of(s, free)),
        }
    }
}

/// The largest of `s`'s bounds that are the solver's (`solver`) or, with `solver` false, the
/// graph's own.
fn bound_of(s: &Optimized, solver: bool) -> Option<u64> {
    s.bounds
        .iter()
        .filter(|b| (b.kind == "solver") == solver)
        .map(|b| b.value_ns)
        .max()
}

/// The comparison table of the rows' summaries ([`GraphsTable`]).
impl fmt::Display for GraphsBench {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let summaries: Vec<GraphsRowSummary> = self.rows.iter().map(GraphsRow::summary).collect();
        GraphsTable(&summaries).fmt(f)
    }
}
