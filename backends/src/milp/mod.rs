//! MILP backends through good_lp: the same two formulations solved by microlp (pure Rust),
//! HiGHS or CBC.
//!
//! # Formulations
//! - **Time-indexed** ([`Formulation::TimeIndexed`], module `time_indexed`): per activity and
//!   possible start time within `[ES_j, LS_j]` for the horizon `T` (the incumbent's makespan)
//!   a step binary "started by `t`"; precedences with the LP strength of the disaggregated form
//!   of Christofides, Alvarez-Valdes & Tamarit (EJOR 29, 1987), tighter than the aggregated one
//!   of Pritsker, Watters & Wolfe (1969), at 2 nonzeros a row; one resource row per resource and
//!   time. Size grows with the horizon: `sum (LS_j - ES_j)` binaries.
//! - **Sequencing with resource flows** ([`Formulation::Sequencing`], module `sequencing`):
//!   integer starts, a binary `y[i][j]` ("`i` finishes before `j` starts") per pair of
//!   activities that share a resource and are not ordered by precedences, and per resource a
//!   flow of units from activity to activity (Artigues, Michelon & Reusser, EJOR 149, 2003).
//!   Size `O(n^2 R)`, independent of the horizon.
//!
//! [`Formulation::Auto`] takes the time-indexed form while it has at most
//! [`MilpConfig::max_time_indexed_binaries`] binaries, the sequencing form otherwise.
//!
//! # Solve
//! The `sgs` heuristic first gives an incumbent (a budget of schedules,
//! [`MilpConfig::heuristic_schedules`]), which sets the horizon and
//! is passed to the MILP as a complete warm start (HiGHS), or the model asks for a strictly
//! better schedule (horizon = incumbent - 1, where "infeasible" proves the incumbent optimal:
//! microlp and CBC, see below); a MILP answer that fails the independent
//! [`check`] is an error. Every variable of both formulations is
//! bounded, so a backend's "unbounded or infeasible" can only mean infeasible.
//!
//! # Backends
//! | backend | time limit | work limit ([`Limits::work_limit`]) | threads | dual bound | warm start |
//! |---|---|---|---|---|---|
//! | microlp | wall clock | none: runs to its proof, which is deterministic | 1 | `stats().best_bound` | none: horizon = incumbent - 1 (faster proofs, see below) |
//! | HiGHS | `time_limit` (wall clock) | `mip_max_nodes` | `threads` option | `mip_dual_bound` | `set_solution` |
//! | CBC | `seconds` with `timeMode=elapsed` | `maxNodes` | `threads` | `best_possible_value` | none: horizon = incumbent - 1 |
//!
//! [`Outcome::work`] counts branch-and-bound nodes: microlp's `nodes_solved`; HiGHS's
//! `mip_node_count` (an int64 info the highs crate cannot read) and CBC's node count (not in
//! coin_cbc's safe API) are not reachable, so their work is 0 although their node limit
//! applies. The heuristic's schedules are not included. A run stopped by its node limit is
//! [`StopReason::WorkLimit`]. With one thread and no time limit reached, HiGHS and CBC are
//! deterministic for a seed (CBC's parallel search is not).
//!
//! CBC 2.10.8's `Cbc_setInitialSolution` (what good_lp's warm start calls) makes CBC return
//! fractional values as "optimal": minimising `m` with binaries `x + y >= 1.5`, `x + y <= m`
//! and the start `x = y = 1` returned `x = 0.5, m = 1.5`. So CBC gets no warm start; its model
//! asks for a strictly better schedule (horizon = incumbent - 1), where "infeasible" proves the
//! incumbent optimal.
//!
//! microlp takes a warm start but does not use the makespan's integrality: with the incumbent
//! optimal (the usual case on small problems), its proof needs every node's LP value up to the
//! incumbent, where the capped model prunes a node at one unit less. It therefore also gets the
//! capped model; on random 10-activity problems that took its slowest proof from over 20 s
//! (still open) to 4.3 s. A proof of infeasibility reports no node count (work 0).
//!
//! # Deadlines
//! microlp and CBC check their clocks only between phases: on j6013_1 (62 activities) with a
//! 1 s limit, microlp's root LP ran 2.3 s and CBC's preprocessing 4.2 s. So a backend runs on
//! a worker thread and the solve stops waiting for it at the deadline (or when cancelled),
//! returning the incumbent and the bounds proven so far; the abandoned run ends at the
//! backend's own limit shortly after, and its answer is dropped. It still uses a core until
//! then (and, for CBC, the CBC mutex).
//!
//! CBC keeps global state: with the `cbc` feature this crate enables good_lp's
//! `singlethread-cbc`, a global mutex that serialises every CBC solve in the process
//! (concurrent solves without it returned wrong objective values with no error). Concurrent CBC solves are therefore safe but run one at a time.

mod contended;
mod model;
mod modes;
mod run;
mod selection;
mod sequencing;
mod time_indexed;

#[cfg(feature = "cbc")]
mod cbc;
#[cfg(feature = "highs")]
mod highs;
#[cfg(feature = "microlp")]
mod microlp;

use std::ops::ControlFlow;

pub use modes::{MilpModal, MAX_MODAL_BINARIES};
pub use selection::{default_backend, Chosen, Selection};

pub(crate) use model::{Model, RawResult, RawStatus, RunOptions, StartsFrom};

use concerto_rcpsp::{
    check, lower_bound, verified, Clock, Heuristic, HeuristicConfig, Limits, Outcome, Problem,
    Schedule, SolveError, Solver, Status, StopReason, Time,
};

/// Which MILP solver runs the model.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Backend {
    /// microlp, pure Rust.
    #[cfg(feature = "microlp")]
    Microlp,
    /// HiGHS, built from C++.
    #[cfg(feature = "highs")]
    Highs,
    /// CBC, the system library, serialised by a global mutex.
    #[cfg(feature = "cbc")]
    Cbc,
}

impl Backend {
    /// Whether the model asks for a strictly better schedule than the incumbent (horizon =
    /// incumbent - 1, where "infeasible" proves the incumbent optimal) instead of taking the
    /// incumbent as a warm start.
    ///
    /// - CBC: its warm start is unsafe (see the module docs).
    /// - microlp: its branch and bound does not know the makespan is an integer, so proving an
    ///   incumbent of 60 optimal takes every open node's LP value up to 60, where a model capped
    ///   at 59 prunes a node as soon as its LP exceeds 59. Measured on 600 random problems of at
    ///   most 10 activities (`problems(10)` of the tests crate, 20 s limit): 11.6 s in all and
    ///   4.3 s at most, against 59.4 s for the first 300 with the warm start, where one of them
    ///   (optimum 60, combinatorial bound 48) was still open at 20 s; the heuristic incumbent was
    ///   optimal in all of the slow ones.
    /// - HiGHS detects the objective's integrality itself and keeps the warm start.
    pub(crate) fn searches_below_incumbent(self) -> bool {
        match self {
            #[cfg(feature = "microlp")]
            Backend::Microlp => true,
            #[cfg(feature = "highs")]
            Backend::Highs => false,
            #[cfg(feature = "cbc")]
            Backend::Cbc => true,
        }
    }

    /// The name the solver is registered under.
    pub fn name(self) -> &'static str {
        match self {
            #[cfg(feature = "microlp")]
            Backend::Microlp => "microlp",
            #[cfg(feature = "highs")]
            Backend::Highs => "highs",
            #[cfg(feature = "cbc")]
            Backend::Cbc => "cbc",
        }
    }
}

/// Which formulation to build.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum Formulation {
    /// Time-indexed when small enough, else sequencing (see the module docs).
    #[default]
    Auto,
    /// Time-indexed with disaggregated precedences.
    TimeIndexed,
    /// Sequencing with resource flows.
    Sequencing,
}

/// Configuration of a MILP solve.
#[derive(Clone, Debug, PartialEq)]
pub struct MilpConfig {
    /// The formulation.
    pub formulation: Formulation,
    /// Largest number of start binaries for which [`Formulation::Auto`] picks the
    /// time-indexed form.
    pub max_time_indexed_binaries: usize,
    /// Relative gap `(incumbent - bound) / incumbent` at which to stop (0: prove optimality).
    pub mip_gap: f64,
    /// Schedules the `sgs` heuristic may generate for the incumbent and warm start.
    pub heuristic_schedules: u64,
    /// Largest share of the time limit the heuristic may use.
    pub heuristic_time_share: f64,
    /// Clique rows in the time-indexed form (see `time_indexed`). Measured at 30 s: HiGHS
    /// proves j309_1 in 6.8 s and j3021_1 in 4.2 s with them, neither without; CBC's bound on
    /// j3021_1 rises from 68 to 78; microlp's time on random 10-activity instances falls from
    /// 78.6 s to 9.8 s in all.
    pub clique_rows: bool,
}

impl Default for MilpConfig {
    fn default() -> Self {
        Self {
            formulation: Formulation::Auto,
            max_time_indexed_binaries: 20_000,
            mip_gap: 0.0,
            heuristic_schedules: 5_000,
            heuristic_time_share: 0.1,
            clique_rows: true,
        }
    }
}

/// A MILP solver: one [`Backend`] and a [`MilpConfig`].
#[derive(Clone, Debug)]
pub struct Milp {
    /// The backend.
    pub backend: Backend,
    /// The configuration.
    pub config: MilpConfig,
}

impl Milp {
    /// A solver with the default configuration.
    pub fn new(backend: Backend) -> Self {
        Self {
            backend,
            config: MilpConfig::default(),
        }
    }

    /// A solver with a configuration.
    pub fn with_config(backend: Backend, config: MilpConfig) -> Self {
        Self { backend, config }
    }
}

impl Solver for Milp {
    fn name(&self) -> &str {
        self.backend.name()
    }

    fn solve(&self, problem: &Problem, limits: &Limits) -> Result<Outcome, SolveError> {
        let initial = limits.validate(problem)?;
        self.check_gap()?;
        let run = Run {
            problem,
            name: self.name(),
            clock: limits.clock(),
        };
        let bound = lower_bound(problem).value;
        if concerto_rcpsp::temporal::window_conflict(problem).is_some() {
            return run.finish(None, bound, Status::Infeasible, 0);
        }
        let incumbent = self.incumbent(problem, limits, &run.clock, initial)?;
        let plan = match self.plan(&run, limits, incumbent, bound) {
            ControlFlow::Continue(plan) => plan,
            ControlFlow::Break(outcome) => return outcome,
        };
        let (model, starts) = self.build(problem, plan.horizon, plan.warm.as_ref());
        let options = RunOptions::new(&run.clock, limits, self.config.mip_gap);
        let raw = self
            .run(model, &options, &run.clock, limits)
            .map_err(|message| SolveError::Backend {
                solver: run.name.to_owned(),
                message,
            })?;
        self.settle(&run, plan, &raw, &starts, bound)
    }
}

/// What one RCPSP solve reports with: the problem, the solver's name and the clock.
struct Run<'a> {
    /// The problem.
    problem: &'a Problem,
    /// The solver's name.
    name: &'a str,
    /// The solve's clock.
    clock: Clock,
}

impl Run<'_> {
    /// The verified outcome of `schedule`, `bound`, `status` and `work`.
    fn finish(
        &self,
        schedule: Option<Schedule>,
        bound: Time,
        status: Status,
        work: u64,
    ) -> Result<Outcome, SolveError> {
        let makespan = schedule.as_ref().map(|s| s.makespan(self.problem));
        verified(
            self.problem,
            Outcome {
                status,
                makespan,
                schedule,
                lower_bound: bound,
                solver: self.name.to_owned(),
                elapsed: self.clock.elapsed(),
                work,
            },
        )
    }
}

/// The model a solve runs: its horizon, warm start and the incumbent it must beat.
struct Plan {
    /// The model's horizon (one below the incumbent's makespan when `improve_only`).
    horizon: Time,
    /// The warm start, if the backend takes one.
    warm: Option<Schedule>,
    /// Whether the model asks for a strictly better schedule than the incumbent.
    improve_only: bool,
    /// The incumbent, if the caller's bound allows it.
    within: Option<Schedule>,
}

/// How a backend's status reads, before the caller's bounds and outcome type (one mapping for
/// the RCPSP and the modal MILP).
pub(crate) enum Verdict {
    /// A model capped below the incumbent is infeasible: nothing better exists.
    IncumbentOptimal,
    /// The model is infeasible.
    Infeasible,
    /// The backend proved its solution optimal.
    Optimal,
    /// The backend stopped for this reason.
    Stopped(StopReason),
}

/// The verdict of a backend's `status` for a model capped below the incumbent
/// (`improve_only`) or given a `warm` start. Errors when a warm-started model is reported
/// infeasible (a backend failure, not an answer).
pub(crate) fn verdict(
    status: RawStatus,
    improve_only: bool,
    warm: bool,
    clock: &Clock,
    solver: &str,
) -> Result<Verdict, SolveError> {
    Ok(match status {
        RawStatus::Infeasible if improve_only => Verdict::IncumbentOptimal,
        RawStatus::Infeasible => {
            if warm {
                // The warm start is feasible for the model: a claim of infeasibility is a
                // backend failure, not an answer.
                return Err(SolveError::Backend {
                    solver: solver.to_owned(),
                    message: "reported infeasible although the warm start is feasible".into(),
                });
            }
            Verdict::Infeasible
        }
        RawStatus::Optimal => Verdict::Optimal,
        RawStatus::GapReached => Verdict::Stopped(StopReason::GapLimit),
        RawStatus::WorkLimit => Verdict::Stopped(StopReason::WorkLimit),
        // The wait for the backend ends at the deadline or on the cancel flag.
        RawStatus::TimeLimit => {
            Verdict::Stopped(clock.should_stop().unwrap_or(StopReason::TimeLimit))
        }
    })
}

impl Milp {
    /// The incumbent: the caller's starting schedule, or a short `sgs` run (deterministic
    /// for the seed and budget), whichever is better.
    fn incumbent(
        &self,
        problem: &Problem,
        limits: &Limits,
        clock: &Clock,
        initial: Option<Time>,
    ) -> Result<Option<Schedule>, SolveError> {
        let heuristic = Heuristic::new(HeuristicConfig {
            max_schedules: Some(self.config.heuristic_schedules),
            ..HeuristicConfig::default()
        });
        let outcome = heuristic.solve(
            problem,
            &Limits {
                initial: limits.initial.clone(),
                // Its own budget, in schedules: the caller's counts nodes.
                work_limit: None,
                ..limits.helper(clock.share(self.config.heuristic_time_share))
            },
        )?;
        // With deadlines the heuristic may find no on-time schedule: the MILP then starts cold.
        let best = match (outcome.schedule, &limits.initial, initial) {
            (Some(h), Some(s), Some(m)) if m < h.makespan(problem) => Some(s.clone()),
            (Some(h), _, _) => Some(h),
            (None, s, _) => s.clone(),
        };
        Ok(best)
    }

    /// Errors unless the configured MIP gap is finite and not negative.
    fn check_gap(&self) -> Result<(), SolveError> {
        if !(self.config.mip_gap.is_finite() && self.config.mip_gap >= 0.0) {
            return Err(SolveError::InvalidLimits {
                reason: format!(
                    "the MIP gap must be finite and >= 0, got {}",
                    self.config.mip_gap
                ),
            });
        }
        Ok(())
    }

    /// The model to run for `incumbent`, or the outcome when none is needed: the incumbent
    /// meets the lower bound, the caller's bound leaves no schedule, or time is up.
    fn plan(
        &self,
        run: &Run<'_>,
        limits: &Limits,
        incumbent: Option<Schedule>,
        bound: Time,
    ) -> ControlFlow<Result<Outcome, SolveError>, Plan> {
        let problem = run.problem;
        let incumbent_makespan = incumbent.as_ref().map(|s| s.makespan(problem));
        // The horizon: the incumbent's makespan, or a tighter bound the caller gave; without
        // either, the problem's horizon, which some optimal schedule (an active one) respects.
        let mut horizon = incumbent_makespan.unwrap_or(problem.horizon());
        if let Some(ub) = limits.upper_bound {
            horizon = horizon.min(ub);
        }
        let warm_schedule = incumbent
            .clone()
            .filter(|_| incumbent_makespan == Some(horizon));
        if warm_schedule.is_some() && bound >= horizon {
            return ControlFlow::Break(run.finish(incumbent, horizon, Status::Optimal, 0));
        }
        // Some backends search for a strictly better schedule instead of a warm start.
        let improve_only = warm_schedule.is_some() && self.backend.searches_below_incumbent();
        let (horizon, warm) = if improve_only {
            (horizon - 1, None)
        } else {
            (horizon, warm_schedule)
        };
        if horizon < bound {
            // No schedule within the caller's bound: the combinatorial bound proves it.
            return ControlFlow::Break(run.finish(None, bound, Status::Infeasible, 0));
        }
        // The incumbent, if the caller's bound allows it (for `improve_only` it is the one
        // schedule just above the model's horizon).
        let within = incumbent
            .clone()
            .filter(|s| s.makespan(problem) <= horizon + Time::from(improve_only));
        if let Some(reason) = run.clock.should_stop() {
            return ControlFlow::Break(match within {
                Some(s) => run.finish(Some(s), bound, Status::Feasible(reason), 0),
                None => run.finish(None, bound, Status::Unknown(reason), 0),
            });
        }
        ControlFlow::Continue(Plan {
            horizon,
            warm,
            improve_only,
            within,
        })
    }

    /// The backend's schedule, checked; `None` when it has none (or, for CBC stopped by its
    /// time limit, garbage). Errors on a fractional start or a schedule that fails the check.
    fn read_solution(
        &self,
        run: &Run<'_>,
        raw: &RawResult,
        starts: &StartsFrom,
    ) -> Result<Option<Schedule>, SolveError> {
        let Some(values) = &raw.values else {
            return Ok(None);
        };
        let starts = starts.read(values).ok_or_else(|| SolveError::Backend {
            solver: run.name.to_owned(),
            message: "the solution has a fractional or ambiguous start time".into(),
        })?;
        let schedule = Schedule::new(starts);
        match check(run.problem, &schedule) {
            Ok(_) => Ok(Some(schedule)),
            // CBC reports Ok with garbage values when it has no solution (objective 1e50);
            // other backends never should.
            Err(_) if raw.status == RawStatus::TimeLimit && self.garbage_possible() => Ok(None),
            Err(violations) => Err(SolveError::InvalidAnswer {
                solver: run.name.to_owned(),
                violations,
            }),
        }
    }

    /// The outcome of the backend's answer `raw` to `plan`'s model: the better of its
    /// schedule and the incumbent, with the bound the backend proved, by its status (see
    /// [`verdict`]).
    fn settle(
        &self,
        run: &Run<'_>,
        plan: Plan,
        raw: &RawResult,
        starts: &StartsFrom,
        mut bound: Time,
    ) -> Result<Outcome, SolveError> {
        let problem = run.problem;
        let work = raw.nodes;
        if let Some(b) = raw.bound.filter(|b| b.is_finite()) {
            // Integer makespans: a bound of 41.2 proves 42.
            bound = bound.max((b - 1e-6).ceil() as Time);
        }
        let solution = self.read_solution(run, raw, starts)?;
        // The best schedule: the backend's, unless the incumbent is better.
        let best = match (solution, plan.within) {
            (Some(s), Some(i)) if i.makespan(problem) < s.makespan(problem) => Some(i),
            (Some(s), _) => Some(s),
            (None, i) => i,
        };
        let horizon = plan.horizon;
        if plan.improve_only {
            // The model's bound holds only below the incumbent.
            bound = bound.min(horizon + 1);
        }
        let warm = plan.warm.is_some();
        match verdict(raw.status, plan.improve_only, warm, &run.clock, run.name)? {
            // Nothing better than the incumbent exists.
            Verdict::IncumbentOptimal => run.finish(best, horizon + 1, Status::Optimal, work),
            Verdict::Infeasible => {
                run.finish(None, bound.max(horizon + 1), Status::Infeasible, work)
            }
            Verdict::Optimal => match best {
                Some(s) => {
                    let m = s.makespan(problem);
                    run.finish(Some(s), m, Status::Optimal, work)
                }
                None => Err(SolveError::Backend {
                    solver: run.name.to_owned(),
                    message: "reported optimal without a solution".into(),
                }),
            },
            Verdict::Stopped(reason) => match best {
                Some(s) => {
                    let status = if bound >= s.makespan(problem) {
                        Status::Optimal
                    } else {
                        Status::Feasible(reason)
                    };
                    run.finish(Some(s), bound, status, work)
                }
                None => run.finish(None, bound, Status::Unknown(reason), work),
            },
        }
    }

    fn build(
        &self,
        problem: &Problem,
        horizon: Time,
        warm: Option<&Schedule>,
    ) -> (Model, StartsFrom) {
        let binaries = time_indexed::binaries(problem, horizon);
        let use_time_indexed = match self.config.formulation {
            Formulation::TimeIndexed => true,
            Formulation::Sequencing => false,
            Formulation::Auto => binaries <= self.config.max_time_indexed_binaries,
        };
        if use_time_indexed {
            time_indexed::build(problem, horizon, warm, self.config.clique_rows)
        } else {
            sequencing::build(problem, horizon, warm)
        }
    }

    fn garbage_possible(&self) -> bool {
        match self.backend {
            #[cfg(feature = "cbc")]
            Backend::Cbc => true,
            #[allow(
                unreachable_patterns,
                reason = "other backends exist only with their features"
            )]
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests;
