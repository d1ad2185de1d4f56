//! The schedule-only step (S): the baselines, the proven bounds, concerto's search, and one
//! comparison under the simulator.
//!
//! 1. Cost every op with the hardware profile ([`Hardware::durations`]).
//! 2. Build the baseline plans ([`baselines`], and the critical-path list schedule
//!    [`Scheduler::List`]) and simulate each, with contention.
//! 3. Compute the graph's proven lower bounds ([`concerto_graph::bounds`]); the solver's own
//!    bound joins them after the search, and [`Optimized::bound_kind`] says which binds.
//! 4. Concerto's search, in three stages that together can move any op anywhere: first the
//!    list-scheduling portfolio ([`concerto_graph::list::portfolio`]: priority rules on every
//!    stream, forward and backward, justification, seeded random sampling), within half the
//!    time left when it begins; then, on graphs of at most 5,000 ops without a
//!    memory budget, a local search on the best plan's launch orders timed by the simulator
//!    with contention ([`concerto_graph::list::polish`]); then exact windows: the graph
//!    lowered to an RCPSP ([`concerto_graph::lower::lower`]) and solved by the odd-even driver
//!    ([`concerto_rcpsp::OddEven`]) around an exact solver, from the plan (or hint) with the
//!    shortest simulated makespan. When the driver converges with more than half its budget
//!    left (time, or work under [`ScheduleConfig::work_limit`]), it runs again from its
//!    result with blocks twice as large, up to [`ScheduleConfig::max_block`]. Under
//!    contention the windows run in passes, each on the graph lowered with the durations of
//!    its start's simulated timeline (see `Step::windows`). The baselines' plans are never
//!    starts: what the search returns is its own.
//! 5. Check the windows' schedule with [`concerto_rcpsp::check`], turn it into a stream plan
//!    ([`StreamPlan::from_starts`]) and simulate it with contention. The search's result
//!    ([`Optimized::solver_plan`]) is the windows' plan, their start, or the best portfolio
//!    plan, whichever simulates shortest.
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
//! The time limit covers the whole step: the portfolio stops at half of what is left when it
//! begins, the polish at three quarters of the limit, and the windows (skipped when the time
//! left would not hold a pass: its cost beside the driver and one window) stop early enough
//! to leave room for the final simulations (measured on the first baseline's). Cost: the baselines, the bounds and each simulation are O((ops + deps) log
//! ops); the portfolio and the windows are bounded by the time limit or the work budget.

mod config;
mod report;
mod windows;

use std::sync::Arc;
use std::time::{Duration, Instant};

use concerto_graph::bounds::{bounds_contended_within, ENERGY_WORK_BUDGET};
use concerto_graph::list::{self, ListConfig};
use concerto_graph::{
    baselines, memory, simulate, Graph, GraphError, Hardware, StreamPlan, Timeline,
};
use concerto_rcpsp::{Admission, Limits, Outcome, Problem, Solver};

pub use config::{ModuleSchedule, ScheduleConfig};
pub use report::{BoundValue, Optimized, Origin, Scheduled, Scheduler};

use crate::error::PipelineError;

/// Most portfolio plans over a memory budget that the step repairs.
const REPAIRED: usize = 3;

/// Share of the time left when the list-scheduling portfolio begins that it may use.
const PORTFOLIO_SHARE: f64 = 0.5;

/// A solver shared by every step of the pipeline and the benches: the odd-even driver owns
/// its inner solver as a `Box<dyn Solver>`, and this boxes a shared one.
pub struct Shared(pub Arc<dyn Solver>);

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

/// Runs the S step (see the module docs) with `solver` inside the odd-even driver. Reads as
/// the module docs' list: the baselines, the bounds, the portfolio, the windows and the
/// choice of concerto's plan, each a stage of a private `Step`.
pub fn schedule(
    graph: &Graph,
    hardware: &Hardware,
    solver: Arc<dyn Solver>,
    config: &ScheduleConfig,
) -> Result<Optimized, PipelineError> {
    let mut step = Step::new(graph, hardware, config)?;
    let mut stages = Stages::new(step.began);
    stages.lap("costs");
    let mut results = step.baselines()?;
    stages.lap("baselines");
    let mut bounds = step.bounds(&results)?;
    stages.lap("bounds");
    let portfolio = step.portfolio(&mut results)?;
    stages.lap("portfolio");
    let hints = step.hints()?;
    let start = step.start(&portfolio, &hints)?;
    stages.lap("start");
    let start = step.polish(start)?;
    stages.lap("polish");
    let windows = step.windows(solver, &start)?;
    stages.lap("windows");
    if let Some(value_ns) = windows.bound {
        bounds.push(BoundValue {
            kind: "solver".into(),
            value_ns,
            stream: None,
        });
    }
    let choice = step.choice(&results, &portfolio, &hints, windows.plan)?;
    stages.lap("choice");
    results.push(choice.concerto);
    let binding = bounds
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
        bounds,
        contention: step.contention,
        results,
        origin: choice.origin,
        solver_plan: choice.solver_plan,
        solver_makespan_ns: windows.makespan_ns,
        solver_status: windows.outcome.status,
        solver: windows.outcome.solver,
        work: windows.work,
        window_passes: windows.passes,
        start_makespan_ns: start.makespan_ns,
        start: start.name,
        portfolio: portfolio.makespans,
        memory_budget_bytes: step.budget,
        peak_lower_bound_bytes: step.peak_floor,
        time: step.began.elapsed(),
        stages: stages.laps,
        durations: step.durations,
    })
}

/// Where a step's time went: each stage's wall time, in order.
struct Stages {
    last: Instant,
    laps: Vec<(String, Duration)>,
}

impl Stages {
    fn new(began: Instant) -> Self {
        Self {
            last: began,
            laps: Vec::new(),
        }
    }

    /// Ends the stage `name` now.
    fn lap(&mut self, name: &str) {
        let now = Instant::now();
        self.laps.push((name.to_string(), now - self.last));
        self.last = now;
    }
}

/// One run of the S step: what every stage reads (the graph, its costs, the budget and the
/// clock), with a method per stage.
struct Step<'a> {
    graph: &'a Graph,
    config: &'a ScheduleConfig,
    /// When the step began: the time limit counts from here.
    began: Instant,
    /// Contention-free op durations (ns), by op.
    durations: Vec<u64>,
    /// The hardware's contention factor.
    contention: f64,
    /// [`ScheduleConfig::memory_budget`].
    budget: Option<u64>,
    /// A peak no plan can go below ([`memory::peak_lower_bound`]).
    peak_floor: u64,
    /// What the first simulation cost (program order's, timed from the step's start), set by
    /// [`Step::baselines`]: the unit of [`Step::reserve`] and of what the windows expect a
    /// pass to cost.
    one_simulation: Duration,
}

/// What the portfolio stage found: concerto's own plans.
struct Portfolio {
    /// The list-scheduling portfolio's plans, best first.
    candidates: Vec<list::Candidate>,
    /// Every plan that ran (repaired ones included), with its simulated makespan (ns), best
    /// first ([`Optimized::portfolio`]).
    makespans: Vec<(String, u64)>,
    /// Under a memory budget, the plans repaired to fit it (`repaired-<rule>`), simulated.
    repaired: Vec<(String, Scheduled)>,
}

/// The plan the windows start from.
struct Start {
    /// The plan.
    plan: StreamPlan,
    /// Its simulated makespan (ns), with contention.
    makespan_ns: u64,
    /// Its simulated timeline, with contention.
    timeline: Timeline,
    /// The portfolio rule it comes from, `repaired-<rule>`, or `hint`.
    name: String,
}

/// What the choice stage kept.
struct Choice {
    /// The search's result ([`Optimized::solver_plan`]).
    solver_plan: Scheduled,
    /// Concerto's plan.
    concerto: Scheduled,
    /// Where concerto's plan comes from.
    origin: Origin,
}

impl<'a> Step<'a> {
    /// Checks the input and costs every op; the clock starts here.
    fn new(
        graph: &'a Graph,
        hardware: &Hardware,
        config: &'a ScheduleConfig,
    ) -> Result<Self, PipelineError> {
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
        let durations = hardware.checked_durations(graph)?;
        let peak_floor = memory::peak_lower_bound(graph, &durations)?;
        Ok(Self {
            graph,
            config,
            began,
            durations,
            contention: hardware.contention,
            budget: config.memory_budget,
            peak_floor,
            one_simulation: Duration::ZERO,
        })
    }

    /// `plan`, simulated with contention, reported as `scheduler`.
    fn simulated(&self, scheduler: Scheduler, plan: StreamPlan) -> Result<Scheduled, GraphError> {
        Scheduled::new(
            scheduler,
            self.graph,
            plan,
            &self.durations,
            self.contention,
        )
    }

    /// Whether `s` keeps the memory budget: the independent checker's peak of its simulated
    /// timeline (always, without a budget).
    fn within(&self, s: &Scheduled) -> bool {
        self.budget.is_none_or(|b| s.peak_memory_bytes <= b)
    }

    /// Kept back at the end of the step for the simulations that follow the search (the
    /// solver's plan, the hints): one simulation each, and the program order's twice, plus
    /// 20 ms.
    fn reserve(&self) -> Duration {
        self.one_simulation * (2 + self.config.hints.len() as u32) + Duration::from_millis(20)
    }

    /// Whether `share` of the time limit, less the reserve, has passed (never without one).
    fn past(&self, share: f64) -> bool {
        self.past_from(Duration::ZERO, share)
    }

    /// Whether `share` of the time left at `at` (since the step began), less the reserve, has
    /// passed since then (never without a time limit).
    fn past_from(&self, at: Duration, share: f64) -> bool {
        self.config.time_limit.is_some_and(|t| {
            let end = at + t.saturating_sub(at).mul_f64(share);
            self.began.elapsed() >= end.saturating_sub(self.reserve())
        })
    }

    /// Stage 1, the baselines: program order, the module's own schedule (where the input
    /// carried one for this graph), LHS (with XLA's memory treatment under a budget) and
    /// Inductor, each simulated with contention. The `list` baseline comes with the
    /// portfolio. Measures what one simulation costs, for [`Step::reserve`].
    fn baselines(&mut self) -> Result<Vec<Scheduled>, PipelineError> {
        let (graph, durations) = (self.graph, &self.durations);
        let program = self.simulated(Scheduler::ProgramOrder, baselines::program_order(graph)?)?;
        self.one_simulation = self.began.elapsed();
        let mut results = vec![program];
        if let Some(plan) = self
            .config
            .module_schedule
            .as_ref()
            .and_then(|m| m.plan_for(graph))
        {
            results.push(self.simulated(Scheduler::Xla, plan.clone())?);
        }
        let lhs = match self.budget {
            Some(b) => baselines::lhs_within(graph, durations, b, self.contention)?,
            None => baselines::lhs(graph, durations)?,
        };
        results.push(self.simulated(Scheduler::Lhs, lhs)?);
        let inductor = baselines::inductor(graph, self.config.inductor_distance)?;
        results.push(self.simulated(Scheduler::Inductor, inductor)?);
        Ok(results)
    }

    /// Stage 2, the bounds: the graph's proven lower bounds on every plan's simulated
    /// makespan ([`concerto_graph::bounds`]; the solver's joins them after the windows).
    /// With contention the contended bound joins the others: every gap is against a bound on
    /// the makespan the simulator measures, at every contention. Under a memory budget below
    /// the proven peak floor no order can keep it: the step fails here, before any search,
    /// naming the baselines' peaks.
    fn bounds(&self, baselines: &[Scheduled]) -> Result<Vec<BoundValue>, PipelineError> {
        // The energy sums' budget (about 0.4 s on 100k ops) shrinks with a time limit
        // below 10 s, in proportion (a function of the limit, not of the clock).
        let energy_budget = match (self.config.bounds_limit(), self.config.work_limit) {
            (Some(t), None) => {
                (ENERGY_WORK_BUDGET as f64 * (t.as_secs_f64() / 10.0).min(1.0)) as u64
            }
            _ => ENERGY_WORK_BUDGET,
        };
        let all =
            bounds_contended_within(self.graph, &self.durations, self.contention, energy_budget)
                .all
                .iter()
                .map(|b| BoundValue {
                    kind: b.kind.as_str().to_string(),
                    value_ns: b.value_ns,
                    stream: b.stream.map(|s| s.name()),
                })
                .collect();
        if let Some(b) = self.budget {
            if b < self.peak_floor {
                return Err(over_budget(
                    b,
                    self.peak_floor,
                    baselines
                        .iter()
                        .map(|r| (r.scheduler.to_string(), r.peak_memory_bytes)),
                ));
            }
        }
        Ok(all)
    }

    /// Stage 3, the portfolio: concerto's own starts from the list-scheduling portfolio
    /// ([`list::portfolio`]), under a share of the time limit (its size is fixed by the
    /// configuration, so under a work budget it is deterministic unless that share runs
    /// out). Pushes the `list` baseline onto `results`: the portfolio's critical-path rule
    /// when it ran and no memory budget held it back (the baseline knows nothing of memory),
    /// else its own list schedule. Under a budget, then repairs the shortest plans over it
    /// ([`Step::repair`]).
    fn portfolio(&self, results: &mut Vec<Scheduled>) -> Result<Portfolio, PipelineError> {
        let (graph, durations) = (self.graph, &self.durations);
        let config = self.config;
        // Its share is of the time left when it begins: on a 100k-op step the import, the
        // baselines and the bounds take about half of a 3 s limit.
        let at = self.began.elapsed();
        let candidates = list::portfolio(
            graph,
            durations,
            &ListConfig {
                contention: self.contention,
                seed: config.seed,
                memory_budget: self.budget,
                ..config.list.clone()
            },
            &|| match config.work_limit {
                // Under a work budget the clock is only a safety net.
                Some(_) => self.past(1.0),
                None => self.past_from(at, PORTFOLIO_SHARE),
            },
        )?;
        let list_plan = match candidates
            .iter()
            .find(|c| c.rule == list::Rule::CriticalPath && self.budget.is_none())
        {
            Some(c) => c.plan.clone(),
            None => list::list_schedule(
                graph,
                durations,
                &baselines::bottom_levels(graph, durations),
                list::Direction::Forward,
                self.contention,
            )?,
        };
        results.push(self.simulated(Scheduler::List, list_plan)?);
        let mut makespans: Vec<(String, u64)> = candidates
            .iter()
            .map(|c| (c.rule.to_string(), c.makespan_ns))
            .collect();
        let mut repaired = Vec::new();
        if let Some(b) = self.budget {
            repaired = self.repair(&candidates, b)?;
            makespans.extend(repaired.iter().map(|(n, s)| (n.clone(), s.makespan_ns())));
            makespans.sort_by_key(|p| p.1);
        }
        Ok(Portfolio {
            candidates,
            makespans,
            repaired,
        })
    }

    /// Under `budget`, the portfolio plans over it that are shorter than every plan within it,
    /// repaired ([`list::repair_memory`]): the shortest first, up to [`REPAIRED`] of them and
    /// until three quarters of the time limit. Each is named `repaired-<rule>`.
    fn repair(
        &self,
        candidates: &[list::Candidate],
        budget: u64,
    ) -> Result<Vec<(String, Scheduled)>, PipelineError> {
        let best_fitting = candidates
            .iter()
            .filter(|c| c.peak_bytes <= budget)
            .map(|c| c.makespan_ns)
            .min()
            .unwrap_or(u64::MAX);
        let mut over: Vec<&list::Candidate> = candidates
            .iter()
            .filter(|c| c.peak_bytes > budget && c.makespan_ns < best_fitting)
            .collect();
        over.sort_by_key(|c| c.makespan_ns);
        over.dedup_by(|x, y| x.plan == y.plan);
        let stop = || match self.config.work_limit {
            Some(_) => self.past(1.0),
            None => self.past(0.75),
        };
        let mut repaired = Vec::new();
        for c in over.into_iter().take(REPAIRED) {
            if stop() {
                break;
            }
            let moves = 4 * self.graph.len();
            let plan = list::repair_memory(
                self.graph,
                &c.plan,
                &self.durations,
                self.contention,
                budget,
                moves,
                &stop,
            )?;
            if let Some((plan, _)) = plan {
                let s = self.simulated(Scheduler::Concerto, plan)?;
                repaired.push((format!("repaired-{}", c.rule), s));
            }
        }
        Ok(repaired)
    }

    /// [`ScheduleConfig::hints`], simulated with contention.
    fn hints(&self) -> Result<Vec<Scheduled>, PipelineError> {
        let mut hints = Vec::with_capacity(self.config.hints.len());
        for plan in &self.config.hints {
            hints.push(self.simulated(Scheduler::Concerto, plan.clone())?);
        }
        Ok(hints)
    }

    /// The windows' start: of concerto's own plans (the portfolio's, the hints, the repaired
    /// ones; the baselines are not starts), the one with the shortest simulated timeline, with
    /// contention. Under a memory budget, only plans within it (by the checker, on their
    /// simulated timeline) are starts, unless none is.
    fn start(&self, portfolio: &Portfolio, hints: &[Scheduled]) -> Result<Start, PipelineError> {
        // (plan, name, fits, simulated makespan): a candidate's makespan is the list engine's,
        // which times plans exactly as the simulator does, so only the chosen one is simulated.
        let mut own: Vec<(&StreamPlan, String, bool, u64)> = Vec::new();
        for c in &portfolio.candidates {
            let fits = match self.budget {
                Some(_) => self.within(&self.simulated(Scheduler::Concerto, c.plan.clone())?),
                None => true,
            };
            own.push((&c.plan, c.rule.to_string(), fits, c.makespan_ns));
        }
        own.extend(
            hints
                .iter()
                .map(|h| (&h.plan, "hint".to_string(), self.within(h), h.makespan_ns())),
        );
        own.extend(
            portfolio
                .repaired
                .iter()
                .map(|(n, s)| (&s.plan, n.clone(), self.within(s), s.makespan_ns())),
        );
        let any_fits = own.iter().any(|o| o.2);
        let (plan, name, _, _) = own
            .into_iter()
            .filter(|o| !any_fits || o.2)
            .min_by_key(|o| o.3)
            .expect("the portfolio always returns a plan");
        let timeline = simulate(self.graph, plan, &self.durations, self.contention)?;
        Ok(Start {
            plan: plan.clone(),
            makespan_ns: timeline.makespan,
            timeline,
            name,
        })
    }

    /// Stage 5, the choice. The search's result: the windows' plan, or the best portfolio
    /// plan or a repaired one when it simulates strictly shorter under contention (the
    /// windows minimise the contention-free makespan). Concerto's plan: the search's, unless
    /// a baseline or a hint simulates strictly shorter. Under a budget, plans within it come
    /// first in both choices, and when concerto's plan is still over it the step fails;
    /// otherwise the independent memory checker runs once more on it.
    fn choice(
        &self,
        results: &[Scheduled],
        portfolio: &Portfolio,
        hints: &[Scheduled],
        windows: Scheduled,
    ) -> Result<Choice, PipelineError> {
        let key = |s: &Scheduled| (!self.within(s), s.makespan_ns());
        let windows_peak = windows.peak_memory_bytes;
        let mut solver_plan = windows;
        // The list engine's makespan is the simulator's: without a budget, a candidate no
        // shorter needs no simulation.
        if let Some(c) = portfolio
            .candidates
            .first()
            .filter(|c| self.budget.is_some() || c.makespan_ns < solver_plan.makespan_ns())
        {
            let c = self.simulated(Scheduler::Concerto, c.plan.clone())?;
            if key(&c) < key(&solver_plan) {
                solver_plan = c;
            }
        }
        for (_, r) in &portfolio.repaired {
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
        if let Some(b) = self.budget {
            if !self.within(&concerto) {
                let found = results
                    .iter()
                    .map(|r| (r.scheduler.to_string(), r.peak_memory_bytes))
                    .chain(
                        portfolio
                            .candidates
                            .iter()
                            .map(|c| (c.rule.to_string(), c.peak_bytes)),
                    )
                    .chain([("windows".to_string(), windows_peak)]);
                return Err(over_budget(b, self.peak_floor, found));
            }
            memory::check_memory(self.graph, &concerto.timeline, b)?;
        }
        Ok(Choice {
            solver_plan,
            concerto,
            origin,
        })
    }
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
