//! The schedule-only step (S): the baselines, the exact windowed solve, and one comparison
//! under the simulator.
//!
//! 1. Cost every op with the hardware profile ([`Hardware::durations`]).
//! 2. Build the baseline plans ([`baselines`]) and simulate each, with contention.
//! 3. Lower the graph to an RCPSP ([`lower`]) and solve it with the odd-even driver
//!    ([`concerto_rcpsp::OddEven`]) around an exact solver, starting from the plan with the
//!    shortest contention-free timeline among the baselines and the hints (a valid schedule
//!    of the lowered problem), so the solver can only improve on it. When the driver
//!    converges with more than half its budget left (time, or work under
//!    [`ScheduleConfig::work_limit`]), it runs again from its result with blocks twice as
//!    large, up to [`ScheduleConfig::max_block`].
//! 4. Check the solver's schedule with [`concerto_rcpsp::check`], turn it into a stream plan
//!    ([`StreamPlan::from_starts`]) and simulate it with contention.
//! 5. The solver minimises the contention-free makespan; contention can reorder candidates.
//!    Concerto's plan is the solver's plan, unless a baseline or hint plan simulates strictly
//!    shorter; [`Optimized::origin`] says which one was kept, and
//!    [`Optimized::solver_plan`] keeps the solver's own plan apart from any fallback. Every
//!    makespan reported is simulated.
//!
//! Cost: the baselines and the simulation are O(ops + deps) each (the LHS-like list
//! scheduler O(ops log ops)); the search is bounded by the time limit or the work budget.

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use concerto_graph::lower::{lower, lower_bound, schedule_of};
use concerto_graph::{baselines, simulate, Graph, GraphError, Hardware, StreamPlan, Timeline};
use concerto_rcpsp::{check, Limits, OddEven, OddEvenConfig, Outcome, Problem, Solver, Status};

use crate::error::PipelineError;

/// A scheduler whose plan the pipeline reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "kebab-case"))]
#[non_exhaustive]
pub enum Scheduler {
    /// The graph's program order on every stream ([`baselines::program_order`]).
    ProgramOrder,
    /// XLA's latency-hiding scheduler, approximated ([`baselines::lhs`]).
    Lhs,
    /// PyTorch Inductor's overlap pass, approximated ([`baselines::inductor`]).
    Inductor,
    /// Concerto's plan (the solver's, or the baseline that simulated shorter).
    Concerto,
}

impl Scheduler {
    /// The baselines, in report order.
    pub const BASELINES: [Scheduler; 3] =
        [Scheduler::ProgramOrder, Scheduler::Lhs, Scheduler::Inductor];

    /// The name used in tables and JSON keys (`program-order`, `lhs`, `inductor`,
    /// `concerto`).
    pub fn as_str(self) -> &'static str {
        match self {
            Scheduler::ProgramOrder => "program-order",
            Scheduler::Lhs => "lhs",
            Scheduler::Inductor => "inductor",
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

/// Options of [`schedule`].
#[derive(Clone, Debug)]
pub struct ScheduleConfig {
    /// The odd-even driver's options.
    pub oddeven: OddEvenConfig,
    /// Wall-clock limit of the step (baselines, bounds, search and simulation). With
    /// [`ScheduleConfig::work_limit`] it is only a safety net: the result is deterministic as
    /// long as it is not reached.
    pub time_limit: Option<Duration>,
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
    /// Extra plans of the graph (for example a plan carried over from the graph before a
    /// rewrite): each competes with the baselines for the solver's start and with the solver
    /// for concerto's plan ([`Origin::Hint`] when one is kept). Default none.
    pub hints: Vec<StreamPlan>,
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
            work_limit: None,
            seed: 0,
            threads: 1,
            inductor_distance: baselines::INDUCTOR_DISTANCE,
            max_block: 32,
            hints: Vec::new(),
        }
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
        Ok(Self {
            scheduler,
            exposed_comm_ns: timeline.exposed_comm_ns(graph),
            peak_memory_bytes: timeline.peak_memory_bytes(graph),
            plan,
            timeline,
        })
    }

    /// The simulated makespan (ns).
    pub fn makespan_ns(&self) -> u64 {
        self.timeline.makespan
    }
}

/// What [`schedule`] found.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Clone, Debug)]
pub struct Optimized {
    /// Ops in the graph.
    pub ops: usize,
    /// Collectives in the graph.
    pub collectives: usize,
    /// `max(critical path, busiest stream)` (ns), a bound on every plan.
    pub lower_bound_ns: u64,
    /// Contention-free op durations (ns), by op.
    pub durations: Vec<u64>,
    /// The contention factor simulated.
    pub contention: f64,
    /// Program order, lhs, inductor and concerto, in that order.
    pub results: Vec<Scheduled>,
    /// Where concerto's plan comes from.
    pub origin: Origin,
    /// The solver's own plan, simulated (the same as concerto's when
    /// [`Optimized::origin`] is [`Origin::Solver`]).
    pub solver_plan: Scheduled,
    /// The solver's (contention-free) makespan.
    pub solver_makespan_ns: u64,
    /// The solve's status.
    pub solver_status: Status,
    /// The solver's name (`<inner>+oddeven`).
    pub solver: String,
    /// Work the solver spent (its deterministic unit: conflicts for pumpkin).
    pub work: u64,
    /// Contention-free makespan of the starting plan given to the solver.
    pub start_makespan_ns: u64,
    /// Wall time of the whole step.
    pub time: Duration,
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

/// A solver shared by every step of the pipeline and the benches (the odd-even driver owns
/// its inner solver).
pub(crate) struct Shared(pub(crate) Arc<dyn Solver>);

impl Solver for Shared {
    fn name(&self) -> &str {
        self.0.name()
    }

    fn solve(
        &self,
        problem: &Problem,
        limits: &Limits,
    ) -> Result<Outcome, concerto_rcpsp::SolveError> {
        self.0.solve(problem, limits)
    }
}

/// Runs the S step (see the module docs) with `solver` inside the odd-even driver.
pub fn schedule(
    graph: &Graph,
    hardware: &Hardware,
    solver: Arc<dyn Solver>,
    config: &ScheduleConfig,
) -> Result<Optimized, PipelineError> {
    let began = Instant::now();
    if graph.is_empty() {
        return Err(GraphError::InvalidOp {
            op: graph.name().to_string(),
            reason: "the graph has no op".into(),
        }
        .into());
    }
    if config.threads == 0 {
        return Err(PipelineError::InvalidConfig {
            reason: "threads must be at least 1".into(),
        });
    }
    let durations = hardware.durations(graph);
    let contention = hardware.contention;
    let mut results = vec![
        Scheduled::new(
            Scheduler::ProgramOrder,
            graph,
            baselines::program_order(graph)?,
            &durations,
            contention,
        )?,
        Scheduled::new(
            Scheduler::Lhs,
            graph,
            baselines::lhs(graph, &durations)?,
            &durations,
            contention,
        )?,
        Scheduled::new(
            Scheduler::Inductor,
            graph,
            baselines::inductor(graph, config.inductor_distance)?,
            &durations,
            contention,
        )?,
    ];
    let lowered = lower(graph, &durations)?;
    let mut hints = Vec::with_capacity(config.hints.len());
    for plan in &config.hints {
        hints.push(Scheduled::new(
            Scheduler::Concerto,
            graph,
            plan.clone(),
            &durations,
            contention,
        )?);
    }
    // The solver starts from the plan with the shortest contention-free timeline.
    let mut start: Option<(u64, Timeline)> = None;
    for r in results.iter().chain(&hints) {
        let t = simulate(graph, &r.plan, &durations, 1.0)?;
        if start.as_ref().is_none_or(|(m, _)| t.makespan < *m) {
            start = Some((t.makespan, t));
        }
    }
    let (start_makespan_ns, start) = start.expect("three baselines");
    let initial = schedule_of(&start);
    check(&lowered.problem, &initial).map_err(|v| GraphError::InvalidPlan {
        reason: format!("a baseline timeline is not a valid schedule: {v}"),
    })?;
    // Escalating windows: run the odd-even driver; when it has converged with budget left,
    // run it again from its result with blocks twice as large (up to `max_block`).
    let mut driver = OddEven::new(Box::new(Shared(solver)), config.oddeven.clone());
    let mut best = initial;
    let mut work = 0u64;
    let mut outcome;
    loop {
        let time_limit = config.time_limit.map(|t| t.saturating_sub(began.elapsed()));
        let limits = Limits {
            time_limit: time_limit.map(|t| t.max(Duration::from_millis(1))),
            work_limit: config.work_limit.map(|w| w.saturating_sub(work).max(1)),
            seed: config.seed,
            threads: config.threads,
            initial: Some(best.clone()),
            ..Limits::default()
        };
        let report = driver.run(&lowered.problem, &limits)?;
        outcome = report.outcome;
        work = work.saturating_add(outcome.work);
        best = outcome
            .schedule
            .clone()
            .ok_or_else(|| GraphError::InvalidPlan {
                reason: format!("the solver returned no schedule ({})", outcome.status),
            })?;
        let spent_half = match config.work_limit {
            // Under a work budget the wall clock decides nothing (unless the safety-net time
            // limit ran out, which the status says).
            Some(w) => work.saturating_mul(2) >= w,
            None => config.time_limit.is_some_and(|t| began.elapsed() * 2 >= t),
        };
        let out_of_time = config.time_limit.is_some_and(|t| began.elapsed() >= t);
        if spent_half
            || out_of_time
            || matches!(outcome.status, Status::Optimal)
            || driver.config.block >= config.max_block
            || driver.config.block >= graph.len()
        {
            break;
        }
        driver.config.block = (driver.config.block * 2).min(config.max_block);
    }
    let solver_makespan = check(&lowered.problem, &best).map_err(|v| GraphError::InvalidPlan {
        reason: format!("the solver's schedule fails the checker: {v}"),
    })?;
    let starts: Vec<u64> = best.starts().iter().map(|&s| s as u64).collect();
    let solver_plan = Scheduled::new(
        Scheduler::Concerto,
        graph,
        StreamPlan::from_starts(graph, &starts)?,
        &durations,
        contention,
    )?;
    let mut concerto = solver_plan.clone();
    let mut origin = Origin::Solver;
    for (r, o) in results
        .iter()
        .map(|r| (r, Origin::Baseline(r.scheduler)))
        .chain(hints.iter().map(|h| (h, Origin::Hint)))
    {
        if r.makespan_ns() < concerto.makespan_ns() {
            concerto = Scheduled {
                scheduler: Scheduler::Concerto,
                ..r.clone()
            };
            origin = o;
        }
    }
    results.push(concerto);
    Ok(Optimized {
        ops: graph.len(),
        collectives: graph.collective_count(),
        lower_bound_ns: lower_bound(graph, &durations),
        durations,
        contention,
        results,
        origin,
        solver_plan,
        solver_makespan_ns: solver_makespan as u64,
        solver_status: outcome.status,
        solver: outcome.solver,
        work,
        start_makespan_ns,
        time: began.elapsed(),
    })
}
