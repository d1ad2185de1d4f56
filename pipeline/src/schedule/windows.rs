//! The S step's polish and exact windows (stages of [`super::schedule`]): a local search on
//! the start's launch orders, and the odd-even driver, in passes under contention.

use std::sync::Arc;
use std::time::{Duration, Instant};

use concerto_graph::list;
use concerto_graph::lower::{lower, schedule_of};
use concerto_graph::{simulate, GraphError, StreamPlan, Timeline};
use concerto_rcpsp::{check, Limits, OddEven, Outcome, Problem, Solver, Status};

use super::{Scheduled, Scheduler, Shared, Start, Step, WithinBudget};
use crate::error::PipelineError;

/// What the windows stage found.
pub(super) struct Windows {
    /// The last run of the odd-even driver (its status and solver name).
    pub(super) outcome: Outcome,
    /// Solver work over every run of the driver.
    pub(super) work: u64,
    /// The windows' schedule's makespan with the durations they solved (by the checker):
    /// contention-free at contention 1, else those of the last pass's start.
    pub(super) makespan_ns: u64,
    /// The windows' schedule as a plan, simulated with contention.
    pub(super) plan: Scheduled,
    /// A proven lower bound on every plan's makespan from the RCPSP side: the driver's at
    /// contention 1, else the contention-free problem's ([`rcpsp_bound`]; a bound with
    /// durations taken from one plan's timeline bounds nothing). `None` when no time was left
    /// for the windows (the graph was not lowered).
    pub(super) bound: Option<u64>,
    /// Passes of the windows (see [`Step::windows`]).
    pub(super) passes: u32,
}

/// Most passes of the windows under contention (see [`Step::windows`]).
const MAX_PASSES: u32 = 16;
/// Most passes in a row that do not shorten the shortest plan so far.
const MAX_STALE: u32 = 2;

/// What one pass costs beside the driver (lowering the graph, checking the start, simulating
/// the result), in units of the step's first simulation (`Step::one_simulation`, measured
/// from the step's start, so with the costs and program order's plan): on the 102k-op ZeRO-3
/// step 0.39 s against 0.09 s. The windows begin only with that and one window's time limit
/// left; a pass begun without it overran a 1 s limit by 0.2 s.
const PASS_SIMULATIONS: u32 = 5;

/// The largest graph whose start [`Step::polish`] polishes.
const POLISH_MAX_OPS: usize = 5_000;
/// How far [`Step::polish`] moves an op within its stream's order.
const POLISH_DISTANCE: usize = 8;
/// Most plans [`Step::polish`] simulates.
const POLISH_EVALUATIONS: u64 = 50_000;

/// The lower bound the odd-even driver computes on `problem` ([`concerto_rcpsp::lower_bound`]),
/// in ns.
fn rcpsp_bound(problem: &Problem) -> u64 {
    concerto_rcpsp::lower_bound(problem).value.max(0) as u64
}

impl Step<'_> {
    /// Between the start and the windows: on graphs of at most [`POLISH_MAX_OPS`] ops without
    /// a memory budget, the start is polished by a local search on its launch orders timed by
    /// the simulator, contention included ([`list::polish`]: moves of up to
    /// [`POLISH_DISTANCE`] positions, at most [`POLISH_EVALUATIONS`] plans, until three
    /// quarters of the time limit), and renamed `<rule>+polish` when that shortens it.
    pub(super) fn polish(&self, start: Start) -> Result<Start, PipelineError> {
        let stop = || match self.config.work_limit {
            Some(_) => self.past(1.0),
            None => self.past(0.75),
        };
        Ok(
            match self.polished(&start.plan, start.makespan_ns, &stop)? {
                Some((plan, timeline)) => Start {
                    plan,
                    makespan_ns: timeline.makespan,
                    timeline,
                    name: format!("{}+polish", start.name),
                },
                None => start,
            },
        )
    }

    /// `plan`, simulated to `makespan_ns`, polished by [`list::polish`] until `stop`, with its
    /// simulated timeline; `None` unless that shortened it, and on graphs of more than
    /// [`POLISH_MAX_OPS`] ops or under a memory budget (the polish drops memory waits).
    fn polished(
        &self,
        plan: &StreamPlan,
        makespan_ns: u64,
        stop: &dyn Fn() -> bool,
    ) -> Result<Option<(StreamPlan, Timeline)>, PipelineError> {
        if self.budget.is_some() || self.graph.len() > POLISH_MAX_OPS {
            return Ok(None);
        }
        let p = list::polish(
            self.graph,
            plan,
            &self.durations,
            self.contention,
            POLISH_DISTANCE,
            POLISH_EVALUATIONS,
            stop,
        )?;
        if p.makespan_ns >= makespan_ns {
            return Ok(None);
        }
        let timeline = simulate(self.graph, &p.plan, &self.durations, self.contention)?;
        Ok(Some((p.plan, timeline)))
    }

    /// Stage 4, the windows: the odd-even driver around `solver` from `start`. Under a
    /// memory budget each run is admitted only if its plan keeps the budget
    /// ([`WithinBudget`]). The result passes the checker and is simulated with contention as a
    /// plan; it is never longer than the start.
    ///
    /// At contention 1 the driver solves the contention-free lowering, escalating: when it
    /// has converged with more than half its budget left, it runs again from its result with
    /// blocks twice as large (up to [`ScheduleConfig::max_block`]).
    ///
    /// Under contention it optimises what the simulator measures by an iterated approximation
    /// checked by simulation: each pass lowers the graph with every op's duration as it ran
    /// in the pass's start (its simulated timeline, slowdowns included; that timeline is then
    /// a schedule of the problem with the same makespan), runs the driver once from there,
    /// and simulates the result's plan with contention. The next pass starts from that plan
    /// (the approximation is not exact: a pass that did not shorten the plan still moves the
    /// durations); when a pass changed nothing, or [`MAX_STALE`] passes in a row did not
    /// shorten the shortest plan so far, the blocks double instead (up to
    /// [`ScheduleConfig::max_block`]; past it the passes end), for at most [`MAX_PASSES`]
    /// passes and while time is left. The shortest simulated plan is then polished like the
    /// start ([`list::polish`], until the time limit) when it is not the start. Measured on
    /// gpt-pp2-tp4-dp2 (`bench graphs`): 28.083 ms from the polished start, 27.922 after the
    /// passes, 27.840 after the polish. Cost per pass: a lowering and a simulation,
    /// O((ops + deps) log ops), and the driver's budget.
    ///
    /// [`ScheduleConfig::max_block`]: crate::ScheduleConfig::max_block
    pub(super) fn windows(
        &self,
        solver: Arc<dyn Solver>,
        start: &Start,
    ) -> Result<Windows, PipelineError> {
        let config = self.config;
        let contended = self.contention > 1.0;
        let mut driver = OddEven::new(Box::new(Shared(solver)), config.oddeven_run());
        if self.no_room_for_windows() {
            return self.skipped(start, driver.name());
        }
        let free = &lower(self.graph, &self.durations)?.problem;
        if let Some(b) = self.budget {
            driver = driver.with_admission(Arc::new(WithinBudget {
                graph: Arc::new(self.graph.clone()),
                durations: self.durations.clone(),
                contention: self.contention,
                budget: b,
            }));
        }
        let mut work = 0u64;
        let mut passes = 0u32;
        let mut timeline = start.timeline.clone();
        let mut best: Option<(Scheduled, u64, Outcome)> = None;
        let (mut shortest, mut stale) = (start.makespan_ns, 0u32);
        loop {
            let pass_began = Instant::now();
            let effective;
            let problem = if contended {
                let d: Vec<u64> = (0..self.graph.len())
                    .map(|v| timeline.end[v] - timeline.start[v])
                    .collect();
                effective = lower(self.graph, &d)?.problem;
                &effective
            } else {
                free
            };
            let initial = schedule_of(&timeline);
            check(problem, &initial).map_err(|v| GraphError::InvalidPlan {
                reason: format!("a plan's simulated timeline is not a valid schedule: {v}"),
            })?;
            let (outcome, spent) = self.escalate(&mut driver, problem, initial, work)?;
            work = work.saturating_add(spent);
            passes += 1;
            let schedule = outcome
                .schedule
                .clone()
                .ok_or_else(|| GraphError::InvalidPlan {
                    reason: format!("the solver returned no schedule ({})", outcome.status),
                })?;
            let makespan = check(problem, &schedule).map_err(|v| GraphError::InvalidPlan {
                reason: format!("the solver's schedule fails the checker: {v}"),
            })?;
            let starts: Vec<u64> = schedule.starts().iter().map(|&s| s as u64).collect();
            let plan = self.simulated(
                Scheduler::Concerto,
                StreamPlan::from_starts(self.graph, &starts)?,
            )?;
            // A pass that did not shorten the shortest plan so far still moves the durations
            // the next one solves (the approximation is not exact): up to `MAX_STALE` of them
            // in a row, while the plan changes.
            if plan.makespan_ns() < shortest {
                shortest = plan.makespan_ns();
                stale = 0;
            } else {
                stale += 1;
            }
            let changed = plan.timeline.start != timeline.start;
            // What a pass costs beside the driver (lowering, checks, simulation): another pass
            // starts only with twice that left, and the driver's own margin.
            let overhead = pass_began.elapsed().saturating_sub(outcome.elapsed);
            let no_time = !self.room_for(overhead);
            let kept = best
                .as_ref()
                .is_none_or(|(b, _, _)| plan.makespan_ns() < b.makespan_ns());
            let next = plan.timeline.clone();
            if kept {
                best = Some((plan, makespan as u64, outcome));
            }
            // Under contention the blocks grow between passes, not within one: when a pass
            // changed nothing or stalled, the next solves larger windows.
            let grow = !changed || stale >= MAX_STALE;
            if grow && contended && driver.config.block < config.max_block.min(self.graph.len()) {
                driver.config.block = (driver.config.block * 2).min(config.max_block);
                stale = 0;
            } else if grow {
                break;
            }
            if !contended
                || passes >= MAX_PASSES
                || self.past(1.0)
                || no_time
                || config.work_limit.is_some_and(|w| work >= w)
            {
                break;
            }
            timeline = next;
        }
        let (plan, makespan_ns, mut outcome) = best.expect("the windows ran at least once");
        let plan = self.settle(start, plan, contended)?;
        let bound = if contended {
            // Optimal for durations taken from one plan's timeline says nothing of the
            // contended problem.
            if outcome.status == Status::Optimal {
                outcome.status = Status::Feasible(concerto_rcpsp::StopReason::Exhausted);
            }
            Some(rcpsp_bound(free))
        } else {
            Some(outcome.lower_bound.max(0) as u64)
        };
        Ok(Windows {
            outcome,
            work,
            makespan_ns,
            plan,
            bound,
            passes,
        })
    }

    /// Whether another contended pass fits: without a time limit or under a work budget
    /// always; else while what is left (less the reserve) covers twice `overhead` (what the
    /// last pass cost beside the driver) and the driver's own margin.
    fn room_for(&self, overhead: Duration) -> bool {
        let config = self.config;
        if config.work_limit.is_some() {
            return true;
        }
        match (config.time_limit, self.left()) {
            (Some(t), Some(left)) => {
                left >= overhead * 2 + config.window_time_limit() * 2 + t.mul_f64(0.03)
            }
            _ => true,
        }
    }

    /// Whether the windows must be skipped: with a time limit and no work budget, when the
    /// limit (less the reserve) has passed or what is left would not hold a first pass (its
    /// cost beside the driver, [`PASS_SIMULATIONS`] first simulations, and one window's limit).
    fn no_room_for_windows(&self) -> bool {
        let config = self.config;
        let first_pass = self.one_simulation * PASS_SIMULATIONS + config.window_time_limit();
        let no_room = self.left().is_some_and(|left| left < first_pass);
        config.work_limit.is_none() && (self.past(1.0) || no_room)
    }

    /// The time left before the limit, less the reserve (`None` without a time limit).
    fn left(&self) -> Option<Duration> {
        self.config.time_limit.map(|t| {
            t.saturating_sub(self.began.elapsed())
                .saturating_sub(self.reserve())
        })
    }

    /// The windows' plan, settled: never longer than their start (a polished start is not
    /// among the portfolio's plans that the choice compares), and under contention, when it
    /// moved the start, polished with what time is left.
    fn settle(
        &self,
        start: &Start,
        plan: Scheduled,
        contended: bool,
    ) -> Result<Scheduled, PipelineError> {
        // The windows' result is never longer than their start (a polished start is not among
        // the portfolio's plans that the choice compares).
        if self.budget.is_none() && start.makespan_ns < plan.makespan_ns() {
            return self
                .simulated(Scheduler::Concerto, start.plan.clone())
                .map_err(Into::into);
        }
        if contended && plan.makespan_ns() < start.makespan_ns {
            // The windows moved the start: polish their plan too, with what time is left.
            if let Some((p, t)) =
                self.polished(&plan.plan, plan.makespan_ns(), &|| self.past(1.0))?
            {
                return Ok(Scheduled::from_timeline(
                    Scheduler::Concerto,
                    self.graph,
                    p,
                    t,
                ));
            }
        }
        Ok(plan)
    }

    /// The windows' result when no time is left for them (not for a pass beside the driver):
    /// their start, already simulated, with status `time-limit` and no bound.
    fn skipped(&self, start: &Start, solver: &str) -> Result<Windows, PipelineError> {
        // No time left for the windows (not even to lower the graph): their result is
        // their start.
        Ok(Windows {
            makespan_ns: start.makespan_ns,
            bound: None,
            outcome: Outcome {
                status: Status::Feasible(concerto_rcpsp::StopReason::TimeLimit),
                schedule: Some(schedule_of(&start.timeline)),
                makespan: Some(start.makespan_ns as i64),
                lower_bound: 0,
                solver: solver.to_string(),
                elapsed: Duration::ZERO,
                work: 0,
            },
            work: 0,
            // The start's timeline is already simulated, with contention.
            plan: Scheduled::from_timeline(
                Scheduler::Concerto,
                self.graph,
                start.plan.clone(),
                start.timeline.clone(),
            ),
            passes: 0,
        })
    }

    /// One pass of the windows: the odd-even `driver` on `problem` from `initial`, run again
    /// with blocks twice as large while it converges with more than half of the pass's budget
    /// left (time, or under a work budget the work left after `work_before`). Returns the
    /// last run's outcome and the work of every run.
    fn escalate(
        &self,
        driver: &mut OddEven,
        problem: &Problem,
        initial: concerto_rcpsp::Schedule,
        work_before: u64,
    ) -> Result<(Outcome, u64), PipelineError> {
        let config = self.config;
        let deadline = config.time_limit.map(|t| self.began + t);
        let mut best = initial;
        let mut work = 0u64;
        let pass_began = self.began.elapsed();
        loop {
            // The driver may finish the windows in flight, rebuild its state and verify its
            // result past its limit (measured: up to 0.35 s on 40k ops): it gets two window
            // limits and 3 % of the step's limit less.
            let margin = config.window_time_limit() * 2
                + config
                    .time_limit
                    .map_or(Duration::ZERO, |t| t.mul_f64(0.03));
            let left = deadline.map(|d| {
                d.saturating_duration_since(Instant::now())
                    .saturating_sub(self.reserve() + margin)
            });
            if left.is_some_and(|l| l.is_zero()) && config.work_limit.is_none() {
                // No time left for a run of the driver (its setup alone takes about a second
                // on 100k ops): the pass keeps its start.
                let outcome = Outcome::with_schedule(
                    problem,
                    best,
                    rcpsp_bound(problem) as i64,
                    concerto_rcpsp::StopReason::TimeLimit,
                    driver.name(),
                    Duration::ZERO,
                    0,
                );
                return Ok((outcome, work));
            }
            let left = left.map(|l| l.max(Duration::from_millis(1)));
            let spent = work_before.saturating_add(work);
            let limits = Limits {
                time_limit: left,
                work_limit: config.work_limit.map(|w| w.saturating_sub(spent).max(1)),
                seed: config.seed,
                threads: config.threads,
                initial: Some(best.clone()),
                ..Limits::default()
            };
            let report = driver.run(problem, &limits)?;
            let outcome = report.outcome;
            work = work.saturating_add(outcome.work);
            best = outcome
                .schedule
                .clone()
                .ok_or_else(|| GraphError::InvalidPlan {
                    reason: format!("the solver returned no schedule ({})", outcome.status),
                })?;
            let spent_half = match config.work_limit {
                // Under a work budget the wall clock decides nothing (unless the safety-net
                // time limit ran out, which the status says).
                Some(w) => (work_before + work).saturating_mul(2) >= w.saturating_add(work_before),
                None => config.time_limit.is_some_and(|t| {
                    (self.began.elapsed() - pass_began) * 2 >= t.saturating_sub(pass_began)
                }),
            };
            if spent_half
                || self.contention > 1.0
                || self.past(1.0)
                || matches!(outcome.status, Status::Optimal)
                || driver.config.block >= config.max_block
                || driver.config.block >= self.graph.len()
            {
                return Ok((outcome, work));
            }
            driver.config.block = (driver.config.block * 2).min(config.max_block);
        }
    }
}
