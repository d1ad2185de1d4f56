//! What the S step reports: the schedulers ([`Scheduler`]), each one's plan simulated
//! ([`Scheduled`]), the proven bounds ([`BoundValue`]) and the whole step ([`Optimized`]).

use std::fmt;
use std::time::Duration;

use concerto_graph::{simulate, Graph, GraphError, StreamPlan, Timeline};
use concerto_rcpsp::Status;

#[cfg(doc)]
use super::{schedule, ScheduleConfig};
#[cfg(doc)]
use concerto_graph::{baselines, list};

/// A scheduler whose plan the pipeline reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "kebab-case"))]
#[non_exhaustive]
pub enum Scheduler {
    /// The graph's program order on every stream ([`baselines::program_order`]).
    ProgramOrder,
    /// The schedule the input module carried: for an XLA module compiled for a GPU, the
    /// sequence XLA's own latency-hiding scheduler chose, run as XLA's GPU runtime runs it
    /// (collective starts and dones where XLA put them; [`ScheduleConfig::module_schedule`]).
    /// Reported only where the input has one.
    Xla,
    /// XLA's latency-hiding scheduler, approximated ([`baselines::lhs`]).
    Lhs,
    /// PyTorch Inductor's overlap pass, approximated ([`baselines::inductor`]).
    Inductor,
    /// A non-delay list schedule on every stream, compute and collectives alike by
    /// critical-path priority ([`list::list_schedule`] with [`baselines::bottom_levels`]): the
    /// simplest strong priority rule.
    List,
    /// Concerto's plan (the solver's, or the baseline that simulated shorter).
    Concerto,
}

impl Scheduler {
    /// Every scheduler, in declaration order (a new one fails to compile in
    /// [`Origin::all`] until listed).
    pub const ALL: [Scheduler; 6] = [
        Scheduler::ProgramOrder,
        Scheduler::Xla,
        Scheduler::Lhs,
        Scheduler::Inductor,
        Scheduler::List,
        Scheduler::Concerto,
    ];

    /// The baselines, in report order.
    pub const BASELINES: [Scheduler; 4] = [
        Scheduler::ProgramOrder,
        Scheduler::Lhs,
        Scheduler::Inductor,
        Scheduler::List,
    ];

    /// The name used in tables and JSON keys (`program-order`, `xla`, `lhs`, `inductor`,
    /// `list`, `concerto`).
    pub fn as_str(self) -> &'static str {
        match self {
            Scheduler::ProgramOrder => "program-order",
            Scheduler::Xla => "xla",
            Scheduler::Lhs => "lhs",
            Scheduler::Inductor => "inductor",
            Scheduler::List => "list",
            Scheduler::Concerto => "concerto",
        }
    }
}

impl fmt::Display for Scheduler {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where concerto's plan comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[non_exhaustive]
pub enum Origin {
    /// The solver's schedule.
    Solver,
    /// A baseline's plan, which simulated strictly shorter than the solver's.
    Baseline(Scheduler),
    /// One of [`ScheduleConfig::hints`], which simulated strictly shorter.
    Hint,
}

impl Origin {
    /// Every origin: the solver, a hint, then each of [`Scheduler::ALL`] as a baseline (a
    /// new scheduler or origin fails to compile in the matches below until listed).
    pub fn all() -> Vec<Origin> {
        for s in Scheduler::ALL {
            match s {
                Scheduler::ProgramOrder
                | Scheduler::Xla
                | Scheduler::Lhs
                | Scheduler::Inductor
                | Scheduler::List
                | Scheduler::Concerto => {}
            }
        }
        let all: Vec<Origin> = [Origin::Solver, Origin::Hint]
            .into_iter()
            .chain(Scheduler::ALL.map(Origin::Baseline))
            .collect();
        for o in &all {
            match o {
                Origin::Solver | Origin::Hint | Origin::Baseline(_) => {}
            }
        }
        all
    }

    /// `solver`, the baseline's name, or `hint` (the JSON key `origin`).
    pub fn as_str(self) -> &'static str {
        match self {
            Origin::Solver => "solver",
            Origin::Baseline(s) => s.as_str(),
            Origin::Hint => "hint",
        }
    }
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One scheduler's plan and its simulated timeline.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Clone, Debug)]
pub struct Scheduled {
    /// Which scheduler.
    pub scheduler: Scheduler,
    /// The plan.
    pub plan: StreamPlan,
    /// Its simulated timeline (with contention).
    pub timeline: Timeline,
    /// Time some collective runs while no compute does (ns).
    pub exposed_comm_ns: u64,
    /// Peak memory of the tensor lifetimes (bytes).
    pub peak_memory_bytes: u64,
}

impl Scheduled {
    /// Simulates `plan` of `graph` with `durations` and `contention`.
    pub fn new(
        scheduler: Scheduler,
        graph: &Graph,
        plan: StreamPlan,
        durations: &[u64],
        contention: f64,
    ) -> Result<Self, GraphError> {
        let timeline = simulate(graph, &plan, durations, contention)?;
        Ok(Self::from_timeline(scheduler, graph, plan, timeline))
    }

    /// `plan` of `graph` with `timeline`, its simulated timeline (with contention), already
    /// computed.
    pub fn from_timeline(
        scheduler: Scheduler,
        graph: &Graph,
        plan: StreamPlan,
        timeline: Timeline,
    ) -> Self {
        Self {
            scheduler,
            exposed_comm_ns: timeline.exposed_comm_ns(graph),
            peak_memory_bytes: timeline.peak_memory_bytes(graph),
            plan,
            timeline,
        }
    }

    /// The simulated makespan (ns).
    pub fn makespan_ns(&self) -> u64 {
        self.timeline.makespan
    }
}

/// One proven lower bound on every plan's simulated makespan.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BoundValue {
    /// Which bound: a [`concerto_graph::bounds::BoundKind`] name (`critical-path`,
    /// `busiest-stream`, `precedence-energy`, `jackson`, ...) or `solver` (the exact solver's
    /// bound on the lowered problem).
    pub kind: String,
    /// Its value (ns).
    pub value_ns: u64,
    /// The stream it comes from, for the per-stream bounds.
    pub stream: Option<String>,
}

/// What [`schedule`] found.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Clone, Debug)]
pub struct Optimized {
    /// Ops in the graph.
    pub ops: usize,
    /// Collectives in the graph.
    pub collectives: usize,
    /// The best proven lower bound on every plan's simulated makespan (ns): the largest of
    /// [`Optimized::bounds`].
    pub lower_bound_ns: u64,
    /// Which bound binds ([`BoundValue::kind`] of the largest; the first in
    /// [`Optimized::bounds`] order on a tie).
    pub bound_kind: String,
    /// Every bound computed: the graph's ([`concerto_graph::bounds::bounds`]: contention only
    /// lengthens ops, so each bounds simulated makespans too), then the solver's own.
    pub bounds: Vec<BoundValue>,
    /// Contention-free op durations (ns), by op.
    pub durations: Vec<u64>,
    /// The contention factor simulated.
    pub contention: f64,
    /// Program order, xla (where the input carried a schedule), lhs, inductor, list and
    /// concerto, in that order.
    pub results: Vec<Scheduled>,
    /// Where concerto's plan comes from.
    pub origin: Origin,
    /// The solver's own plan, simulated (the same as concerto's when
    /// [`Optimized::origin`] is [`Origin::Solver`]).
    pub solver_plan: Scheduled,
    /// The windows' makespan with the durations they solved: contention-free at contention
    /// 1, else each op's duration in the last pass's start (see [`crate::schedule()`]).
    pub solver_makespan_ns: u64,
    /// The solve's status.
    pub solver_status: Status,
    /// The solver's name (`<inner>+oddeven`).
    pub solver: String,
    /// Work the solver spent (its deterministic unit: conflicts for pumpkin).
    pub work: u64,
    /// Passes of the windows: 1 at contention 1; under contention, each pass after the
    /// first starts from the previous one's plan with its simulated durations.
    #[cfg_attr(feature = "serde", serde(default))]
    pub window_passes: u32,
    /// Simulated makespan (with contention) of the starting plan given to the windows.
    pub start_makespan_ns: u64,
    /// The portfolio rule whose plan the windows started from ([`concerto_graph::list::Candidate::rule`]), or
    /// `hint`.
    pub start: String,
    /// Every plan of concerto's list-scheduling portfolio that ran, with its simulated
    /// makespan (ns), best first.
    pub portfolio: Vec<(String, u64)>,
    /// The memory budget the step kept ([`ScheduleConfig::memory_budget`], bytes).
    pub memory_budget_bytes: Option<u64>,
    /// A peak no plan can go below ([`concerto_graph::memory::peak_lower_bound`], bytes).
    pub peak_lower_bound_bytes: u64,
    /// Wall time of the whole step.
    pub time: Duration,
    /// Where [`Optimized::time`] went: each stage's wall time, in order (`costs`,
    /// `baselines`, `bounds`, `lowering`, `portfolio`, `start`, `windows`, `choice`).
    #[cfg_attr(feature = "serde", serde(default))]
    pub stages: Vec<(String, Duration)>,
}

impl Optimized {
    /// The result of `scheduler`.
    pub fn get(&self, scheduler: Scheduler) -> Option<&Scheduled> {
        self.results.iter().find(|r| r.scheduler == scheduler)
    }

    /// Concerto's result.
    pub fn concerto(&self) -> &Scheduled {
        self.results
            .last()
            .expect("schedule always ends with the concerto row")
    }

    /// The best baseline's simulated makespan.
    pub fn best_baseline_ns(&self) -> u64 {
        self.results
            .iter()
            .filter(|r| r.scheduler != Scheduler::Concerto)
            .map(Scheduled::makespan_ns)
            .min()
            .unwrap_or(0)
    }
}
