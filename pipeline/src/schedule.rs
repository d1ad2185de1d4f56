//! The schedule-only step (S): the baselines, the proven bounds, concerto's search, and one
//! comparison under the simulator.
//!
//! 1. Cost every op with the hardware profile ([`Hardware::durations`]).
//! 2. Build the baseline plans ([`baselines`], and the critical-path list schedule
//!    [`Scheduler::List`]) and simulate each, with contention.
//! 3. Compute the graph's proven lower bounds ([`concerto_graph::bounds`]); the solver's own
//!    bound joins them after the search, and [`Optimized::bound_kind`] says which binds.
//! 4. Concerto's search, in two stages that together can move any op anywhere: first the
//!    list-scheduling portfolio ([`concerto_graph::list::portfolio`]: priority rules on every
//!    stream, forward and backward, justification, seeded random sampling), within half the
//!    time limit; then exact windows: the graph lowered to an RCPSP ([`lower`]) and solved by
//!    the odd-even driver ([`concerto_rcpsp::OddEven`]) around an exact solver, from the
//!    portfolio plan (or hint) with the shortest contention-free timeline, so the windows can
//!    only improve on it. When the driver converges with more than half its budget left
//!    (time, or work under [`ScheduleConfig::work_limit`]), it runs again from its result
//!    with blocks twice as large, up to [`ScheduleConfig::max_block`]. The baselines' plans
//!    are never starts: what the search returns is its own.
//! 5. Check the windows' schedule with [`concerto_rcpsp::check`], turn it into a stream plan
//!    ([`StreamPlan::from_starts`]) and simulate it with contention. The windows minimise the
//!    contention-free makespan; contention can reorder candidates, so the search's result
//!    ([`Optimized::solver_plan`]) is the windows' plan or the best portfolio plan, whichever
//!    simulates shorter.
//! 6. Concerto's plan is the search's, unless a baseline or hint plan simulates strictly
//!    shorter; [`Optimized::origin`] says which one was kept. Every makespan reported is
//!    simulated.
//!
//! # Memory
//!
//! Under [`ScheduleConfig::memory_budget`] memory is a constraint, not a penalty (what is
//! counted: [`concerto_graph::memory`]). A budget below the proven floor
//! ([`concerto_graph::memory::peak_lower_bound`]) fails at once. The portfolio's forward rules
//! start an op only when its buffers fit and rank plans within the budget first
//! ([`ListConfig::memory_budget`]); only plans within the budget (by the checker, on their
//! simulated timeline) start the windows, unless none is; each window pass is kept only if the
//! plan of its schedule, simulated with contention, stays within the budget (an exact check
//! per pass, [`concerto_rcpsp::Admission`]: one plan and one simulation, up to 15 per pass when
//! halves of the windows are tried). Every choice between plans (the search's result,
//! concerto's plan among it, the baselines and the hints) puts plans within the budget first;
//! the returned plan passes [`concerto_graph::memory::check_memory`], and when no plan built
//! keeps the budget the step fails with [`PipelineError::MemoryBudget`], naming the smallest
//! peak found and the floor. The LHS baseline gets XLA's treatment
//! ([`baselines::lhs_within`]); the other baselines ignore memory and report their peak.
//!
//! The time limit covers the whole step: the portfolio stops at half of it, and the
//! windows stop early enough to leave room for the final simulations (measured on the first
//! baseline's). Cost: the baselines, the bounds and each simulation are O((ops + deps) log
//! ops); the portfolio and the windows are bounded by the time limit or the work budget.

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use concerto_graph::bounds::bounds_contended;
use concerto_graph::list::{self, ListConfig};
use concerto_graph::lower::{lower, schedule_of};
use concerto_graph::{
    baselines, memory, simulate, Graph, GraphError, Hardware, StreamPlan, Timeline,
};
use concerto_rcpsp::{
    check, Admission, Limits, OddEven, OddEvenConfig, Outcome, Problem, Solver, Status,
};

use crate::error::PipelineError;

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
            list: ListConfig::default(),
            hints: Vec::new(),
            memory_budget: None,
            module_schedule: None,
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
    /// The solver's (contention-free) makespan.
    pub solver_makespan_ns: u64,
    /// The solve's status.
    pub solver_status: Status,
    /// The solver's name (`<inner>+oddeven`).
    pub solver: String,
    /// Work the solver spent (its deterministic unit: conflicts for pumpkin).
    pub work: u64,
    /// Contention-free makespan of the starting plan given to the windows.
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

/// Most portfolio plans over a memory budget that the step repairs.
const REPAIRED: usize = 3;

/// Share of the step's time limit the list-scheduling portfolio may use.
const PORTFOLIO_SHARE: f64 = 0.5;

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
    let budget = config.memory_budget;
    let peak_floor = memory::peak_lower_bound(graph, &durations)?;
    // Within the budget: the independent checker's peak of the simulated timeline.
    let within = |s: &Scheduled| budget.is_none_or(|b| s.peak_memory_bytes <= b);
    let program = Scheduled::new(
        Scheduler::ProgramOrder,
        graph,
        baselines::program_order(graph)?,
        &durations,
        contention,
    )?;
    // What one simulation costs here: the time kept back at the end of the step for the
    // simulations that follow the search.
    let one_simulation = began.elapsed();
    let mut results = vec![program];
    if let Some(plan) = config
        .module_schedule
        .as_ref()
        .and_then(|m| m.plan_for(graph))
    {
        results.push(Scheduled::new(
            Scheduler::Xla,
            graph,
            plan.clone(),
            &durations,
            contention,
        )?);
    }
    results.extend([
        Scheduled::new(
            Scheduler::Lhs,
            graph,
            match budget {
                Some(b) => baselines::lhs_within(graph, &durations, b, contention)?,
                None => baselines::lhs(graph, &durations)?,
            },
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
    ]);
    // With contention the contended bound joins the others: every gap is against a bound on
    // the makespan the simulator measures, at every contention.
    let mut all_bounds: Vec<BoundValue> = bounds_contended(graph, &durations, contention)
        .all
        .iter()
        .map(|b| BoundValue {
            kind: b.kind.as_str().to_string(),
            value_ns: b.value_ns,
            stream: b.stream.map(|s| s.name()),
        })
        .collect();
    if let Some(b) = budget {
        // No order can keep a budget under the proven floor: say so before searching.
        if b < peak_floor {
            return Err(over_budget(
                b,
                peak_floor,
                results
                    .iter()
                    .map(|r| (r.scheduler.to_string(), r.peak_memory_bytes)),
            ));
        }
    }
    let lowered = lower(graph, &durations)?;
    let deadline = config.time_limit.map(|t| began + t);
    // Kept back for the simulations after the search (the solver's plan, the hints).
    let reserve = one_simulation * (2 + config.hints.len() as u32) + Duration::from_millis(20);
    let past = |share: f64| {
        config
            .time_limit
            .is_some_and(|t| began.elapsed() >= t.mul_f64(share).saturating_sub(reserve))
    };
    // Concerto's own starts: the list-scheduling portfolio, under a share of the time limit
    // (its size is fixed by the configuration, so under a work budget it is deterministic
    // unless that share runs out).
    let candidates = list::portfolio(
        graph,
        &durations,
        &ListConfig {
            contention,
            seed: config.seed,
            memory_budget: budget,
            ..config.list.clone()
        },
        &|| match config.work_limit {
            // Under a work budget the clock is only a safety net.
            Some(_) => past(1.0),
            None => past(PORTFOLIO_SHARE),
        },
    )?;
    // The `list` baseline is the portfolio's critical-path rule: taken from it when it ran
    // (and was not held back by a memory budget: the baseline knows nothing of memory).
    let list_plan = match candidates
        .iter()
        .find(|c| c.rule == list::Rule::CriticalPath && budget.is_none())
    {
        Some(c) => c.plan.clone(),
        None => list::list_schedule(
            graph,
            &durations,
            &baselines::bottom_levels(graph, &durations),
            list::Direction::Forward,
            contention,
        )?,
    };
    results.push(Scheduled::new(
        Scheduler::List,
        graph,
        list_plan,
        &durations,
        contention,
    )?);
    let mut portfolio: Vec<(String, u64)> = candidates
        .iter()
        .map(|c| (c.rule.to_string(), c.makespan_ns))
        .collect();
    // Under a budget, the portfolio plans over it that are shorter than every plan within
    // it are repaired (list::repair_memory), the shortest first, up to REPAIRED of them and
    // until three quarters of the time limit.
    let mut repaired: Vec<(String, Scheduled)> = Vec::new();
    if let Some(b) = budget {
        let best_fitting = candidates
            .iter()
            .filter(|c| c.peak_bytes <= b)
            .map(|c| c.makespan_ns)
            .min()
            .unwrap_or(u64::MAX);
        let mut over: Vec<&list::Candidate> = candidates
            .iter()
            .filter(|c| c.peak_bytes > b && c.makespan_ns < best_fitting)
            .collect();
        over.sort_by_key(|c| c.makespan_ns);
        over.dedup_by(|x, y| x.plan == y.plan);
        let stop = || match config.work_limit {
            Some(_) => past(1.0),
            None => past(0.75),
        };
        for c in over.into_iter().take(REPAIRED) {
            if stop() {
                break;
            }
            let moves = 4 * graph.len();
            if let Some((plan, _)) =
                list::repair_memory(graph, &c.plan, &durations, contention, b, moves, &stop)?
            {
                let s = Scheduled::new(Scheduler::Concerto, graph, plan, &durations, contention)?;
                let name = format!("repaired-{}", c.rule);
                portfolio.push((name.clone(), s.makespan_ns()));
                repaired.push((name, s));
            }
        }
        portfolio.sort_by_key(|p| p.1);
    }
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
    // The windows start from the own plan (portfolio or hint) with the shortest
    // contention-free timeline; the baselines are not starts.
    // Under a memory budget, only plans within it (by the checker, on their simulated
    // timeline) are starts, unless none is.
    let mut own: Vec<(&StreamPlan, String, bool)> = Vec::new();
    for c in &candidates {
        let fits = match budget {
            Some(_) => within(&Scheduled::new(
                Scheduler::Concerto,
                graph,
                c.plan.clone(),
                &durations,
                contention,
            )?),
            None => true,
        };
        own.push((&c.plan, c.rule.to_string(), fits));
    }
    own.extend(
        hints
            .iter()
            .map(|h| (&h.plan, "hint".to_string(), within(h))),
    );
    own.extend(
        repaired
            .iter()
            .map(|(n, s)| (&s.plan, n.clone(), within(s))),
    );
    let any_fits = own.iter().any(|o| o.2);
    let mut start: Option<(u64, Timeline, String)> = None;
    for (plan, name, fits) in own {
        if any_fits && !fits {
            continue;
        }
        let t = simulate(graph, plan, &durations, 1.0)?;
        if start.as_ref().is_none_or(|(m, _, _)| t.makespan < *m) {
            start = Some((t.makespan, t, name));
        }
    }
    let (start_makespan_ns, start, start_rule) =
        start.expect("the portfolio always returns a plan");
    let initial = schedule_of(&start);
    check(&lowered.problem, &initial).map_err(|v| GraphError::InvalidPlan {
        reason: format!("a list schedule's timeline is not a valid schedule: {v}"),
    })?;
    // Escalating windows: run the odd-even driver; when it has converged with budget left,
    // run it again from its result with blocks twice as large (up to `max_block`).
    let mut driver = OddEven::new(Box::new(Shared(solver)), config.oddeven.clone());
    if let Some(b) = budget {
        driver = driver.with_admission(Arc::new(WithinBudget {
            graph: Arc::new(graph.clone()),
            durations: durations.clone(),
            contention,
            budget: b,
        }));
    }
    let mut best = initial;
    let mut work = 0u64;
    let mut outcome;
    let windows_began = began.elapsed();
    loop {
        // The driver may finish the windows in flight, rebuild its state and verify its
        // result past its limit (measured: up to 0.35 s on 40k ops): it gets two window
        // limits and 3 % of the step's limit less.
        let margin = config.oddeven.window_time_limit * 2
            + config
                .time_limit
                .map_or(Duration::ZERO, |t| t.mul_f64(0.03));
        let left = deadline.map(|d| {
            d.saturating_duration_since(Instant::now())
                .saturating_sub(reserve + margin)
                .max(Duration::from_millis(1))
        });
        let limits = Limits {
            time_limit: left,
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
            None => config.time_limit.is_some_and(|t| {
                (began.elapsed() - windows_began) * 2 >= t.saturating_sub(windows_began)
            }),
        };
        if spent_half
            || past(1.0)
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
    all_bounds.push(BoundValue {
        kind: "solver".into(),
        value_ns: outcome.lower_bound.max(0) as u64,
        stream: None,
    });
    let starts: Vec<u64> = best.starts().iter().map(|&s| s as u64).collect();
    let windows_plan = Scheduled::new(
        Scheduler::Concerto,
        graph,
        StreamPlan::from_starts(graph, &starts)?,
        &durations,
        contention,
    )?;
    // The search's result: the windows' plan, or a portfolio plan that simulates strictly
    // shorter under contention (the windows minimise the contention-free makespan); under a
    // budget, plans within it first.
    let key = |s: &Scheduled| (!within(s), s.makespan_ns());
    let windows_peak = windows_plan.peak_memory_bytes;
    let mut solver_plan = windows_plan;
    if let Some(c) = candidates.first() {
        let c = Scheduled::new(
            Scheduler::Concerto,
            graph,
            c.plan.clone(),
            &durations,
            contention,
        )?;
        if key(&c) < key(&solver_plan) {
            solver_plan = c;
        }
    }
    for (_, r) in &repaired {
        if key(r) < key(&solver_plan) {
            solver_plan = r.clone();
        }
    }
    let mut concerto = solver_plan.clone();
    let mut origin = Origin::Solver;
    for (r, o) in results
        .iter()
        .map(|r| (r, Origin::Baseline(r.scheduler)))
        .chain(hints.iter().map(|h| (h, Origin::Hint)))
    {
        if key(r) < key(&concerto) {
            concerto = Scheduled {
                scheduler: Scheduler::Concerto,
                ..r.clone()
            };
            origin = o;
        }
    }
    if let Some(b) = budget {
        if !within(&concerto) {
            let found = results
                .iter()
                .map(|r| (r.scheduler.to_string(), r.peak_memory_bytes))
                .chain(
                    candidates
                        .iter()
                        .map(|c| (c.rule.to_string(), c.peak_bytes)),
                )
                .chain([("windows".to_string(), windows_peak)]);
            return Err(over_budget(b, peak_floor, found));
        }
        // The independent checker, once more, on the plan returned.
        memory::check_memory(graph, &concerto.timeline, b)?;
    }
    results.push(concerto);
    let binding = all_bounds
        .iter()
        .rev()
        .max_by_key(|b| b.value_ns)
        .expect("the graph's bounds are never empty")
        .clone();
    Ok(Optimized {
        ops: graph.len(),
        collectives: graph.collective_count(),
        lower_bound_ns: binding.value_ns,
        bound_kind: binding.kind,
        bounds: all_bounds,
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
        start: start_rule,
        portfolio,
        memory_budget_bytes: budget,
        peak_lower_bound_bytes: peak_floor,
        time: began.elapsed(),
    })
}

/// [`PipelineError::MemoryBudget`] with the smallest of the `found` peaks.
fn over_budget(
    budget: u64,
    floor: u64,
    found: impl Iterator<Item = (String, u64)>,
) -> PipelineError {
    let (by, smallest) = found
        .min_by_key(|(_, p)| *p)
        .unwrap_or_else(|| ("none".into(), u64::MAX));
    PipelineError::MemoryBudget {
        budget_bytes: budget,
        smallest_bytes: smallest,
        by,
        lower_bound_bytes: floor,
    }
}

/// The windows' side constraint under a memory budget: the plan of a schedule's start order
/// ([`StreamPlan::from_starts`]), simulated with contention, peaks within the budget
/// ([`concerto_graph::memory::profile`]). Cost per call: one plan and one simulation,
/// O((ops + deps) log ops).
struct WithinBudget {
    graph: Arc<Graph>,
    durations: Vec<u64>,
    contention: f64,
    budget: u64,
}

impl Admission for WithinBudget {
    fn admits(&self, starts: &[i64]) -> bool {
        let starts: Vec<u64> = starts.iter().map(|&s| s.max(0) as u64).collect();
        let Ok(plan) = StreamPlan::from_starts(&self.graph, &starts) else {
            return false;
        };
        simulate(&self.graph, &plan, &self.durations, self.contention)
            .and_then(|t| memory::profile(&self.graph, &t))
            .is_ok_and(|p| p.peak_bytes <= self.budget)
    }
}
