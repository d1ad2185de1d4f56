//! Flat, serialisable summaries of the report's parts, for tables and JSON.

use concerto_decomp::select::Decomposition;
use serde::Serialize;

use crate::pipeline::Report;
use crate::schedule::{Optimized, Scheduled, Scheduler};

/// One decomposition applied, as reports list it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct DecompositionSummary {
    /// The collective's name in the graph it was chosen in.
    pub collective: String,
    /// `split` or `collective-matmul`.
    pub family: &'static str,
    /// The axis (`rows`, `batch`, `cols`).
    pub axis: &'static str,
    /// Chunks (a ring's: its ranks).
    pub n: u32,
    /// Ops in the context (the collective included).
    pub context_size: usize,
    /// `rows/4` for a split, `ring/8` for a collective matmul (tables only).
    #[serde(skip)]
    pub label: String,
}

impl DecompositionSummary {
    /// The summary of `d`.
    pub fn of(d: &Decomposition) -> Self {
        Self {
            collective: d.collective.clone(),
            family: d.family.as_str(),
            axis: d.axis.as_str(),
            n: d.n,
            context_size: d.context_ops,
            label: d.label(),
        }
    }

    /// The summaries of `ds`, in order.
    pub fn all(ds: &[Decomposition]) -> Vec<Self> {
        ds.iter().map(Self::of).collect()
    }
}

/// `count x label`, e.g. `6x rows/4, 16x cols/2, 2x ring/8`, or `-` when empty.
pub fn count_labels(decompositions: &[DecompositionSummary]) -> String {
    let mut groups: Vec<(&str, usize)> = Vec::new();
    for d in decompositions {
        match groups.iter_mut().find(|(k, _)| *k == d.label) {
            Some((_, c)) => *c += 1,
            None => groups.push((&d.label, 1)),
        }
    }
    if groups.is_empty() {
        return "-".to_string();
    }
    groups
        .iter()
        .map(|(label, c)| format!("{c}x {label}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The keys every optimisation report shares (`concerto optimize --json`, the rows of
/// `concerto bench graphs --json`): concerto's plan against the baselines and the bound.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Comparison {
    /// Ops in the graph.
    pub ops: usize,
    /// Collectives in the graph.
    pub collectives: usize,
    /// The best proven lower bound on every plan's makespan (ns).
    pub lower_bound_ns: u64,
    /// Which bound binds (`critical-path`, `busiest-stream`, `jackson`, `solver`, ...).
    pub bound_kind: String,
    /// Program order's simulated makespan (ns).
    pub program_order_ns: u64,
    /// The input's own schedule's (XLA's, for a compiled module; ns), where it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub xla_ns: Option<u64>,
    /// The LHS-like baseline's (ns).
    pub lhs_ns: u64,
    /// The Inductor-like baseline's (ns).
    pub inductor_ns: u64,
    /// The critical-path list schedule's (ns).
    pub list_ns: u64,
    /// Concerto's (S) (ns).
    pub optimized_ns: u64,
    /// Concerto's exposed communication (ns).
    pub exposed_comm_ns: u64,
    /// Concerto's peak memory (bytes).
    pub peak_memory_bytes: u64,
}

impl Comparison {
    /// The comparison of an S step.
    pub fn of(r: &Optimized) -> Self {
        let get = |s: Scheduler| r.get(s).map_or(0, |s| s.makespan_ns());
        let c = r.concerto();
        Self {
            ops: r.ops,
            collectives: r.collectives,
            lower_bound_ns: r.lower_bound_ns,
            bound_kind: r.bound_kind.clone(),
            program_order_ns: get(Scheduler::ProgramOrder),
            xla_ns: r.get(Scheduler::Xla).map(Scheduled::makespan_ns),
            lhs_ns: get(Scheduler::Lhs),
            inductor_ns: get(Scheduler::Inductor),
            list_ns: get(Scheduler::List),
            optimized_ns: c.makespan_ns(),
            exposed_comm_ns: c.exposed_comm_ns,
            peak_memory_bytes: c.peak_memory_bytes,
        }
    }
}

/// One scheduler of a [`ReportSummary`].
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SchedulerSummary {
    /// Simulated makespan (ns).
    pub makespan_ns: u64,
    /// Exposed communication (ns).
    pub exposed_comm_ns: u64,
    /// Peak memory (bytes).
    pub peak_memory_bytes: u64,
    /// Mean makespan under noise (ns), when measured.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub noise_mean_ns: Option<f64>,
    /// Worst makespan under noise (ns), when measured.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub noise_worst_ns: Option<u64>,
}

/// A [`Report`] flattened for JSON (`concerto optimize --json`): the comparison, the solver's
/// own result apart from any fallback, every row's makespan, and which row was kept.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ReportSummary {
    /// The graph's name.
    pub graph: String,
    /// The hardware profile's name.
    pub hardware: String,
    /// Compute slowdown while a collective runs.
    pub contention: f64,
    /// Concerto's plan against the baselines and the bound.
    #[serde(flatten)]
    pub comparison: Comparison,
    /// Wall time of the call (s).
    pub time_s: f64,
    /// Where concerto's S plan comes from (`solver`, a baseline's name, `hint`).
    pub origin: &'static str,
    /// The solver (`<inner>+oddeven`).
    pub solver: String,
    /// The solve's status.
    pub solver_status: String,
    /// The solver's contention-free makespan (ns).
    pub solver_makespan_ns: u64,
    /// The solver's own plan, simulated (ns), apart from any fallback to a baseline.
    pub solver_plan_ns: u64,
    /// The solver's own plan's memory peak (bytes).
    pub solver_plan_peak_bytes: u64,
    /// The memory budget kept (bytes), when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory_budget_bytes: Option<u64>,
    /// A peak no plan can go below (bytes; [`concerto_graph::memory::peak_lower_bound`]).
    pub peak_lower_bound_bytes: u64,
    /// Solver work spent by the S step (its deterministic unit).
    pub work: u64,
    /// Contention-free makespan of the solver's start (ns).
    pub start_makespan_ns: u64,
    /// The portfolio rule the windows started from.
    pub start: String,
    /// Concerto's list-scheduling portfolio: each rule's simulated makespan (ns).
    pub portfolio: std::collections::BTreeMap<String, u64>,
    /// Every proven bound (ns) by kind.
    pub bounds: std::collections::BTreeMap<String, u64>,
    /// The row whose plan is the result: `S`, `S+AD`, `joint` or `S+F`.
    pub kept: &'static str,
    /// Its simulated makespan (ns).
    pub kept_ns: u64,
    /// Every S scheduler by name.
    pub schedulers: std::collections::BTreeMap<&'static str, SchedulerSummary>,
    /// S+F as reported (the fused graph's makespan when kept, else S).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fused_ns: Option<u64>,
    /// Buckets of the kept fusion (0 when not kept).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub buckets: Option<usize>,
    /// S+AD as reported (the rewritten graph's makespan when kept, else S).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decomposed_ns: Option<u64>,
    /// The decompositions S+AD applied.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decompositions: Option<Vec<DecompositionSummary>>,
    /// The rewritten graph's makespan when the decompositions were not kept.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rejected_decomposed_ns: Option<u64>,
    /// The joint makespan, never above S+AD (or S).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub joint_ns: Option<u64>,
    /// The candidates the joint choice applied.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub joint_decompositions: Option<Vec<String>>,
    /// Wall time of the joint step (s).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub joint_time_s: Option<f64>,
    /// Noise half-width (percent), when measured.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub noise_pct: Option<f64>,
    /// Noise samples, when measured.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub noise_samples: Option<usize>,
}

impl Report {
    /// The report flattened for JSON (see [`ReportSummary`]).
    pub fn summary(&self) -> ReportSummary {
        let s = &self.schedule;
        ReportSummary {
            graph: self.graph.name().to_string(),
            hardware: self.hardware.clone(),
            contention: s.contention,
            comparison: Comparison::of(s),
            time_s: self.time.as_secs_f64(),
            origin: s.origin.as_str(),
            solver: s.solver.clone(),
            solver_status: s.solver_status.to_string(),
            solver_makespan_ns: s.solver_makespan_ns,
            solver_plan_ns: s.solver_plan.makespan_ns(),
            solver_plan_peak_bytes: s.solver_plan.peak_memory_bytes,
            memory_budget_bytes: s.memory_budget_bytes,
            peak_lower_bound_bytes: s.peak_lower_bound_bytes,
            work: s.work,
            start_makespan_ns: s.start_makespan_ns,
            start: s.start.clone(),
            portfolio: s.portfolio.iter().cloned().collect(),
            bounds: s
                .bounds
                .iter()
                .map(|b| (b.kind.clone(), b.value_ns))
                .collect(),
            kept: self.kept.as_str(),
            kept_ns: self.result().1.makespan_ns(),
            schedulers: s
                .results
                .iter()
                .enumerate()
                .map(|(i, x)| {
                    (
                        x.scheduler.as_str(),
                        SchedulerSummary {
                            makespan_ns: x.makespan_ns(),
                            exposed_comm_ns: x.exposed_comm_ns,
                            peak_memory_bytes: x.peak_memory_bytes,
                            noise_mean_ns: self.noise.as_ref().map(|n| n[i].mean_ns),
                            noise_worst_ns: self.noise.as_ref().map(|n| n[i].worst_ns),
                        },
                    )
                })
                .collect(),
            fused_ns: self.fusion.as_ref().map(|f| f.makespan_ns),
            buckets: self
                .fusion
                .as_ref()
                .map(|f| if f.kept { f.fused.buckets.len() } else { 0 }),
            decomposed_ns: self.decomposed.as_ref().map(|d| d.makespan_ns),
            decompositions: self
                .decomposed
                .as_ref()
                .map(|d| DecompositionSummary::all(d.applied())),
            rejected_decomposed_ns: self
                .decomposed
                .as_ref()
                .and_then(|d| d.rejected())
                .map(|(ns, _)| ns),
            joint_ns: self.joint.as_ref().map(|j| j.makespan_ns),
            joint_decompositions: self.joint.as_ref().map(|j| j.chosen.clone()),
            joint_time_s: self.joint.as_ref().map(|j| j.time.as_secs_f64()),
            noise_pct: self.noise_config.map(|n| n.pct),
            noise_samples: self.noise_config.map(|n| n.samples),
        }
    }
}

/// `candidate` vs `reference`, positive when shorter (percent; 0 when `reference` is 0).
pub fn gain_pct(reference: u64, candidate: u64) -> f64 {
    if reference == 0 {
        0.0
    } else {
        (1.0 - candidate as f64 / reference as f64) * 100.0
    }
}
