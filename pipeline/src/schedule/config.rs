//! What the S step is asked: its options ([`ScheduleConfig`]) and the plan an input carried
//! ([`ModuleSchedule`]).

use std::time::Duration;

use concerto_graph::list::ListConfig;
use concerto_graph::{baselines, Graph, GraphError, StreamPlan};
#[cfg(doc)]
use concerto_rcpsp::Limits;
use concerto_rcpsp::OddEvenConfig;

#[cfg(doc)]
use super::{schedule, Origin, Scheduler};
#[cfg(doc)]
use crate::error::PipelineError;

/// Options of [`schedule`].
#[derive(Clone, Debug)]
pub struct ScheduleConfig {
    /// The odd-even driver's options (its window time limit capped as
    /// [`ScheduleConfig::window_time_limit`] says).
    pub oddeven: OddEvenConfig,
    /// Wall-clock limit of the step (baselines, bounds, search and simulation). With
    /// [`ScheduleConfig::work_limit`] it is only a safety net: the result is deterministic as
    /// long as it is not reached.
    pub time_limit: Option<Duration>,
    /// The time limit that sizes the bounds' work (the energy sums and the contended bound's
    /// grid: their full budget at 10 s or more, in proportion below), when it is not
    /// [`ScheduleConfig::time_limit`]. [`crate::Pipeline`] sets it to the call's own limit, so
    /// that its steps, which each get a share of what is left, and two runs of one call
    /// compute the same bounds however long the import and the earlier steps took. `None`
    /// (default): the step's time limit.
    pub bounds_time_limit: Option<Duration>,
    /// A deterministic budget of solver work for the whole search
    /// ([`Limits::work_limit`]): with it, the same graph, hardware and seed give the same plan
    /// on any machine and load. `None`: the time limit decides.
    pub work_limit: Option<u64>,
    /// Seed of every random choice.
    pub seed: u64,
    /// Threads (windows of a pass in parallel).
    pub threads: usize,
    /// How far the Inductor-like pass moves an op.
    pub inductor_distance: usize,
    /// Largest block of the escalating windows: once the driver converges with more than
    /// half its budget left, it runs again with blocks twice as large, up to this.
    pub max_block: usize,
    /// The list-scheduling portfolio's options (its contention and seed are the step's).
    pub list: ListConfig,
    /// Extra plans of the graph (for example a plan carried over from the graph before a
    /// rewrite): each competes with the baselines for the solver's start and with the solver
    /// for concerto's plan ([`Origin::Hint`] when one is kept). Default none.
    pub hints: Vec<StreamPlan>,
    /// A memory budget (bytes, resident bytes included; see [`concerto_graph::memory`]), or
    /// `None` (default). Under a budget concerto's plan never exceeds it (checked with
    /// [`concerto_graph::memory::check_memory`]), or the step fails with
    /// [`PipelineError::MemoryBudget`]; see "Memory" in the module docs.
    pub memory_budget: Option<u64>,
    /// The schedule the input carried ([`Scheduler::Xla`]), for the graph it was made for: a
    /// baseline like the others, simulated with the same durations and contention. A step on
    /// another graph (a rewrite of S+AD, joint or fusion) does not report it. Default none.
    pub module_schedule: Option<ModuleSchedule>,
}

/// A plan the input carried, tied to its graph by the graph's fingerprint
/// ([`ScheduleConfig::module_schedule`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModuleSchedule {
    fingerprint: u64,
    plan: StreamPlan,
}

impl ModuleSchedule {
    /// `plan`, checked against `graph` ([`StreamPlan::validate`]).
    pub fn new(graph: &Graph, plan: StreamPlan) -> Result<Self, GraphError> {
        plan.validate(graph)?;
        Ok(Self {
            fingerprint: graph.fingerprint(),
            plan,
        })
    }

    /// The plan, when it was made for `graph`.
    pub fn plan_for(&self, graph: &Graph) -> Option<&StreamPlan> {
        (graph.fingerprint() == self.fingerprint).then_some(&self.plan)
    }
}

impl ScheduleConfig {
    /// Each window's time limit as the step runs it: under a time limit without a work
    /// budget, at most a fifth of the step's. The step keeps two window limits back from the
    /// driver (its margin to finish the windows in flight) and the driver two more before it
    /// starts a window, so a window limit of a quarter of the step's or more would let no
    /// window run at all. Measured on `gpt_tp8_l4_triton` of the compiled corpus before this:
    /// `--window-time-limit 5 --time-limit 20` ran no window (0 work, status "exhausted").
    pub fn window_time_limit(&self) -> Duration {
        let w = self.oddeven.window_time_limit;
        match (self.time_limit, self.work_limit) {
            (Some(t), None) => w.min(t / 5).max(Duration::from_millis(1)),
            _ => w,
        }
    }

    /// The time limit that sizes the bounds' work: [`ScheduleConfig::bounds_time_limit`],
    /// else [`ScheduleConfig::time_limit`].
    pub fn bounds_limit(&self) -> Option<Duration> {
        self.bounds_time_limit.or(self.time_limit)
    }

    /// The odd-even driver's options as the step runs them: [`ScheduleConfig::oddeven`] with
    /// [`ScheduleConfig::window_time_limit`].
    pub(crate) fn oddeven_run(&self) -> OddEvenConfig {
        OddEvenConfig {
            window_time_limit: self.window_time_limit(),
            ..self.oddeven.clone()
        }
    }
}

impl Default for ScheduleConfig {
    fn default() -> Self {
        Self {
            oddeven: OddEvenConfig {
                block: 8,
                rounds: 4,
                window_time_limit: Duration::from_millis(100),
                ..OddEvenConfig::default()
            },
            time_limit: Some(Duration::from_secs(10)),
            bounds_time_limit: None,
            work_limit: None,
            seed: 0,
            threads: 1,
            inductor_distance: baselines::INDUCTOR_DISTANCE,
            max_block: 32,
            list: ListConfig::default(),
            hints: Vec::new(),
            memory_budget: None,
            module_schedule: None,
        }
    }
}
