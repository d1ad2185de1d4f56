//! The `pumpkin` modal backend: regions of alternative modes and the schedule solved together,
//! by lazy clause generation with the pumpkin CP solver (a [`ModalSolver`]).
//!
//! # Encoding
//! The RCPSP model of Schutt et al. (LCG with time-table cumulative propagation, as in
//! [`crate::pumpkin`]) with *optional* activities: those of a mode are present exactly when
//! their region runs in that mode. pumpkin has no optional-interval variables (Laborie and
//! Rogerie's "optional interval" semantics, with Vilím's filtering of optional activities), so
//! absence is realised by *parking*: an absent activity is moved to a private slot after the
//! horizon, where it meets nothing, and every constraint that must not see it is half-reified
//! on its presence.
//!
//! - **Horizon `H`.** The initial solution's makespan when one is given (the model then asks
//!   for a makespan `<= H - 1`, and the initial solution is returned when none exists), else
//!   the full problem's [`Problem::horizon`](concerto_rcpsp::Problem::horizon) (every active
//!   schedule of every mode choice ends by it). `D` is the model's makespan cap: `H - 1` or
//!   `H`.
//! - **Modes.** One 0/1 variable `m[r][k]` per region `r` and mode `k`; exactly one per region:
//!   a clause over the region's literals and the pairwise at-most-one clauses (`O(k^2)` per
//!   region; regions have a few modes).
//! - **Starts.** A mandatory activity `a` gets `s_a` in `[ES_a, LS_a]`, the windows of
//!   [`ModalProblem::earliest_starts`] and [`ModalProblem::latest_starts`]`(D)` (valid for every
//!   mode choice). An activity of mode `(r, k)` gets `s_a` in `[ES_a, park_a]` with
//!   `park_a = P + (durations of the optional activities before a)`,
//!   `P = max(H, max ES of the optional ones)`, and two clauses:
//!   `m[r][k] -> s_a <= LS_a` and `!m[r][k] -> s_a >= park_a` (so an absent activity sits
//!   exactly at `park_a`). Present activities end by `M <= D <= P` and the slots are disjoint,
//!   so the cumulative constraints take every activity with its constant duration and demand.
//! - **Precedences** `a -> b` with lag `l`: `s_a + d_a + l <= s_b`, posted plainly between
//!   mandatory activities, half-reified on the mode literal when the ends are in the same mode
//!   or one is mandatory, and skipped between two modes of one region (never both present).
//!   Between modes of two regions it is implied by a fresh literal `c <-> p_a & p_b` (the
//!   clauses `!p_a | !p_b | c`, `!c | p_a`, `!c | p_b`, with `p_x` the presence literal).
//! - **Makespan** `M` in `[LB, D]`: `M >= s_a + d_a` for every activity without a successor
//!   that is present whenever it is (a mandatory one or one of its mode), half-reified on the
//!   presence of optional activities. `LB` is the largest of: the mandatory activities'
//!   `ES + d`; per region the smallest over its modes of their largest `ES + d`; per resource
//!   the energy bound `ceil((mandatory energy + sum over regions of the smallest mode energy)
//!   / capacity)`.
//! - **Cumulative** per resource (time-table, pointwise explanations) over every activity with
//!   positive duration and demand; a resource whose total demand fits its capacity is dropped.
//!
//! # Search
//! Linear SAT-UNSAT on one pumpkin solver (learned nogoods persist): find a solution, record
//! it, add `M <= makespan - 1` at the root, repeat; root infeasibility proves the incumbent
//! optimal. The branching ([`ModalSearch`]) is by default the mode literals first (per region,
//! the initial solution's mode first, then the others in order), then the smallest-start-time
//! series, then `M` at its lower bound.
//!
//! # Limits and semantics
//! - [`Limits::validate`] applies (on the full problem, without [`Limits::initial`], which the
//!   modal trait ignores); an initial solution failing [`check_modal`] is
//!   [`SolveError::InvalidModalInitial`]. [`Limits::upper_bound`] is ignored.
//! - The time limit and the cancel flag are polled by pumpkin before every decision and
//!   conflict; a stop returns the best solution and the best bound proven: the model's root
//!   lower bound on `M` (valid for every mode choice: each is in the model) or `LB`.
//! - Without an initial solution and with no solution of makespan `<= H`, the outcome is
//!   [`Status::Infeasible`] (lower bound `H + 1`).
//! - pumpkin's domains are `i32`: a horizon, parking slot, duration or lag above
//!   [`MAX_HORIZON`], or a resource whose total demand does not fit, is
//!   [`SolveError::Unsupported`].
//! - [`Limits::work_limit`] is a budget of conflicts ([`ModalOutcome::work`] counts them);
//!   reaching it stops with [`StopReason::WorkLimit`].
//! - Deterministic for a seed ([`Limits::seed`] seeds pumpkin's random generator) unless the
//!   clock stops the solve. Single-threaded.
//!
//! # Cost
//! `n + 1 + (modes)` variables plus one per cross-region precedence, one linear propagator per
//! precedence and activity end, two clauses per optional activity, `O(k^2)` clauses per region
//! of `k` modes, one cumulative per resource (`O(n log n)` per time-table propagation). The
//! search is exponential in the worst case; for one region of `k` modes it explores the `k`
//! sub-problems with shared nogoods instead of `k` separate solves.
//!
//! # Sources
//! - A. Schutt, T. Feydy, P. J. Stuckey, M. G. Wallace, "Solving RCPSP/max by lazy clause
//!   generation", Journal of Scheduling 16 (2013) 273-289; "Explaining the cumulative
//!   propagator", Constraints 16 (2011) 250-282.
//! - P. Laborie, J. Rogerie, "Reasoning with conditional time-intervals", FLAIRS 2008; P. Vilím,
//!   R. Barták, O. Čepek, "Extension of O(n log n) filtering algorithms for the unary resource
//!   constraint to optional activities", Constraints 10 (2005) 403-425.
//! - The pumpkin solver (ConSol Lab, TU Delft), crates `pumpkin-core`, `pumpkin-constraints`
//!   and `pumpkin-conflict-resolvers` 0.5.

use std::cell::Cell;
use std::rc::Rc;

use concerto_rcpsp::modal::Membership;
use concerto_rcpsp::{
    check_modal, verified_modal, ActivityId, CancelFlag, Clock, Limits, ModalOutcome, ModalProblem,
    ModalSolution, ModalSolver, SolveError, Status, StopReason, Time,
};
use pumpkin_conflict_resolvers::resolvers::ResolutionResolver;
use pumpkin_core::branching::{Brancher, BrancherEvent, SelectionContext};
use pumpkin_core::predicate;
use pumpkin_core::predicates::Predicate;
use pumpkin_core::results::{ProblemSolution, SatisfactionResult};
use pumpkin_core::termination::{Combinator, TerminationCondition, TimeBudget};
use pumpkin_core::variables::DomainId;

mod model;

use model::Model;

use super::branching::{smallest_start_decision, Counting};
use super::common::{fit, root_lower_bound};
pub use super::common::{MAX_HORIZON, NAME};

/// The branching strategy of [`PumpkinModal`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum ModalSearch {
    /// The mode of every region first (the initial solution's mode first), then the
    /// smallest-start-time series of Schutt et al., then the makespan at its lower bound.
    /// The default: on random modal problems (release build, 5 s limit, all proven by both)
    /// 200 small ones (at most 8 mandatory activities, 2 regions of 3 modes) take 71 ms in all
    /// against 191 ms with [`ModalSearch::Vsids`], 30 medium ones (25 mandatory, 3 regions of
    /// 3 modes of up to 4 activities) 0.28 s against 2.5 s.
    #[default]
    ModesThenSst,
    /// pumpkin's default brancher over every variable: VSIDS with solution-based phase saving.
    Vsids,
}

/// Options of [`PumpkinModal`].
#[derive(Clone, Debug, Default)]
pub struct PumpkinModalConfig {
    /// The branching strategy.
    pub search: ModalSearch,
}

/// The pumpkin modal backend (see the module docs).
#[derive(Clone, Debug, Default)]
pub struct PumpkinModal {
    /// Its configuration.
    pub config: PumpkinModalConfig,
}

impl PumpkinModal {
    /// The backend with a configuration.
    pub fn new(config: PumpkinModalConfig) -> Self {
        Self { config }
    }
}

/// The makespan of a solution: the largest end of a present activity (0 without one).
fn makespan_of(problem: &ModalProblem, solution: &ModalSolution) -> Time {
    let p = problem.problem();
    p.ids()
        .filter(|&a| problem.present(a, &solution.modes))
        .map(|a| solution.starts[a.index()] + p.duration(a))
        .max()
        .unwrap_or(0)
}

/// A lower bound on the makespan over every mode choice (see the module docs).
fn modal_lower_bound(problem: &ModalProblem, es: &[Time]) -> Time {
    let p = problem.problem();
    let end = |a: ActivityId| es[a.index()] + p.duration(a);
    let mut bound = p
        .ids()
        .filter(|&a| problem.membership(a) == Membership::Mandatory)
        .map(end)
        .max()
        .unwrap_or(0);
    for region in problem.regions() {
        let b = region
            .modes
            .iter()
            .map(|acts| acts.iter().map(|&a| end(a)).max().unwrap_or(0))
            .min()
            .unwrap_or(0);
        bound = bound.max(b);
    }
    for (r, resource) in p.resources().iter().enumerate() {
        if resource.capacity == 0 {
            continue;
        }
        let energy =
            |a: ActivityId| i128::from(p.duration(a)) * i128::from(p.activity(a).demands[r]);
        let mut total: i128 = p
            .ids()
            .filter(|&a| problem.membership(a) == Membership::Mandatory)
            .map(energy)
            .sum();
        for region in problem.regions() {
            total += region
                .modes
                .iter()
                .map(|acts| acts.iter().map(|&a| energy(a)).sum::<i128>())
                .min()
                .unwrap_or(0);
        }
        let cap = i128::from(resource.capacity);
        let b = (total + cap - 1) / cap;
        bound = bound.max(Time::try_from(b).unwrap_or(Time::MAX));
    }
    bound
}

impl ModalSolver for PumpkinModal {
    fn name(&self) -> &str {
        NAME
    }

    fn solve_modal(
        &self,
        problem: &ModalProblem,
        limits: &Limits,
        initial: Option<&ModalSolution>,
    ) -> Result<ModalOutcome, SolveError> {
        Limits {
            initial: None,
            ..limits.clone()
        }
        .validate(problem.problem())?;
        let clock = limits.clock();
        let initial_makespan = initial
            .map(|s| {
                check_modal(problem, s).map_err(|source| SolveError::InvalidModalInitial { source })
            })
            .transpose()?;
        let es = problem.earliest_starts();
        let bound = modal_lower_bound(problem, &es);
        let mut run = Run {
            problem,
            clock: &clock,
            best: initial.cloned().zip(initial_makespan),
            lower_bound: bound,
            conflicts: Rc::new(Cell::new(0)),
        };
        let (horizon, cap) = match initial_makespan {
            Some(h) => (h, h - 1),
            None => (problem.problem().horizon(), problem.problem().horizon()),
        };
        if run.lower_bound > cap {
            // Nothing below the cap: the initial solution is optimal, or there is none.
            run.lower_bound = run.lower_bound.max(cap + 1);
            return run.finish(StopReason::Exhausted);
        }
        let Some(mut model) = Model::build(problem, limits.seed, &es, bound, horizon, cap)? else {
            run.lower_bound = cap + 1;
            return run.finish(StopReason::Exhausted);
        };
        if let Some(reason) = clock.should_stop() {
            return run.finish(reason);
        }
        let budget = Budget {
            cancel: limits.cancel.clone(),
            conflicts: Rc::clone(&run.conflicts),
            until: limits.work_limit.unwrap_or(u64::MAX),
        };
        let reason = run.search(&mut model, &self.config, initial, budget, cap);
        run.finish(reason)
    }
}

/// The modal solution of a pumpkin solution of the model with these mode and start variables.
fn solution_of(
    modes: &[Vec<DomainId>],
    starts: &[DomainId],
    solution: &impl ProblemSolution,
) -> ModalSolution {
    ModalSolution {
        modes: modes
            .iter()
            .map(|vars| {
                vars.iter()
                    .position(|&v| solution.get_integer_value(v) == 1)
                    .expect("exactly one mode per region")
            })
            .collect(),
        starts: starts
            .iter()
            .map(|&s| Time::from(solution.get_integer_value(s)))
            .collect(),
    }
}

/// The modes of every region first, then the smallest-start-time series, then the makespan.
#[derive(Debug)]
struct ModesThenStarts {
    /// Each region's mode variables in the order they are tried.
    modes: Vec<Vec<DomainId>>,
    starts: Vec<DomainId>,
    makespan: DomainId,
}

impl Brancher for ModesThenStarts {
    fn next_decision(&mut self, context: &mut SelectionContext<'_>) -> Option<Predicate> {
        for vars in &self.modes {
            if vars.iter().any(|&v| context.lower_bound(v) == 1) {
                continue;
            }
            if let Some(&v) = vars.iter().find(|&&v| !context.is_integer_fixed(v)) {
                return Some(predicate![v >= 1]);
            }
        }
        smallest_start_decision(context, &self.starts, self.makespan)
    }

    fn subscribe_to_events(&self) -> Vec<BrancherEvent> {
        Vec::new()
    }
}

/// Stops a pumpkin call when the cancel flag is raised or the conflicts reach the work
/// budget. A stop ends the solve (no further call on the solver), so it may land anywhere,
/// the root included.
#[derive(Clone)]
struct Budget {
    cancel: Option<CancelFlag>,
    conflicts: Rc<Cell<u64>>,
    until: u64,
}

impl Budget {
    fn spent(&self) -> bool {
        self.conflicts.get() >= self.until
    }
}

impl TerminationCondition for Budget {
    fn should_stop(&mut self) -> bool {
        self.spent() || self.cancel.as_ref().is_some_and(CancelFlag::is_cancelled)
    }
}

/// The state of one solve.
struct Run<'a> {
    problem: &'a ModalProblem,
    clock: &'a Clock,
    /// The incumbent and its makespan.
    best: Option<(ModalSolution, Time)>,
    /// The best lower bound proven over every mode choice.
    lower_bound: Time,
    /// Conflicts of the search, the unit of [`ModalOutcome::work`].
    conflicts: Rc<Cell<u64>>,
}

impl Run<'_> {
    /// The outcome: `Optimal` when the bound meets the incumbent, `Infeasible` without an
    /// incumbent when the bound passed the horizon (set by the caller), otherwise stopped.
    fn finish(self, reason: StopReason) -> Result<ModalOutcome, SolveError> {
        let elapsed = self.clock.elapsed();
        let outcome = match self.best {
            Some((solution, makespan)) => {
                let lower_bound = self.lower_bound.min(makespan);
                ModalOutcome {
                    status: if lower_bound == makespan {
                        Status::Optimal
                    } else {
                        Status::Feasible(reason)
                    },
                    solution: Some(solution),
                    makespan: Some(makespan),
                    lower_bound,
                    solver: NAME.into(),
                    elapsed,
                    work: self.conflicts.get(),
                }
            }
            None => ModalOutcome {
                status: if reason == StopReason::Exhausted {
                    Status::Infeasible
                } else {
                    Status::Unknown(reason)
                },
                solution: None,
                makespan: None,
                lower_bound: self.lower_bound,
                solver: NAME.into(),
                elapsed,
                work: self.conflicts.get(),
            },
        };
        verified_modal(self.problem, outcome)
    }

    /// Linear SAT-UNSAT search on the model with the makespan at most `cap`. Returns why it
    /// stopped (`Exhausted`: proven, the bound is then above the last cap).
    fn search(
        &mut self,
        model: &mut Model,
        config: &PumpkinModalConfig,
        initial: Option<&ModalSolution>,
        budget: Budget,
        mut cap: Time,
    ) -> StopReason {
        let mut resolver = ResolutionResolver::default();
        let counting = |inner| Counting {
            inner,
            conflicts: Rc::clone(&budget.conflicts),
            decided: Rc::new(Cell::new(false)),
        };
        match config.search {
            ModalSearch::ModesThenSst => {
                let modes = model
                    .modes
                    .iter()
                    .enumerate()
                    .map(|(r, vars)| {
                        let first = initial.map_or(0, |s| s.modes[r]);
                        let mut order = vec![vars[first]];
                        order.extend(
                            vars.iter()
                                .enumerate()
                                .filter(|&(k, _)| k != first)
                                .map(|(_, &v)| v),
                        );
                        order
                    })
                    .collect();
                let mut brancher = counting(ModesThenStarts {
                    modes,
                    starts: model.starts.clone(),
                    makespan: model.makespan,
                });
                self.sat_unsat(model, &mut brancher, &mut resolver, &budget, &mut cap)
            }
            ModalSearch::Vsids => {
                let mut brancher = Counting {
                    inner: model.solver.default_brancher(),
                    conflicts: Rc::clone(&budget.conflicts),
                    decided: Rc::new(Cell::new(false)),
                };
                self.sat_unsat(model, &mut brancher, &mut resolver, &budget, &mut cap)
            }
        }
    }

    fn sat_unsat<B: Brancher>(
        &mut self,
        model: &mut Model,
        brancher: &mut B,
        resolver: &mut ResolutionResolver,
        budget: &Budget,
        cap: &mut Time,
    ) -> StopReason {
        loop {
            if self.root_bound(model, *cap) {
                return StopReason::Exhausted;
            }
            let mut termination = Combinator::new(
                self.clock.remaining().map(TimeBudget::starting_now),
                budget.clone(),
            );
            let found = match model.solver.satisfy(brancher, &mut termination, resolver) {
                SatisfactionResult::Satisfiable(sat) => {
                    Ok(solution_of(&model.modes, &model.starts, &sat.solution()))
                }
                SatisfactionResult::Unsatisfiable(..) => Err(None),
                SatisfactionResult::Unknown(..) => Err(Some(self.clock.should_stop().unwrap_or(
                    if budget.spent() {
                        StopReason::WorkLimit
                    } else {
                        StopReason::TimeLimit
                    },
                ))),
            };
            match found {
                Ok(solution) => {
                    let makespan = makespan_of(self.problem, &solution);
                    if self.best.as_ref().is_none_or(|(_, m)| makespan < *m) {
                        self.best = Some((solution, makespan));
                    }
                    *cap = makespan - 1;
                    if *cap < self.lower_bound {
                        return StopReason::Exhausted;
                    }
                    let m = model.makespan;
                    let tag = model.solver.new_constraint_tag();
                    let c = fit(*cap, "the cap").expect("below the model's cap");
                    model.solver.add_clause([predicate![m <= c]], tag);
                }
                Err(None) => {
                    self.lower_bound = self.lower_bound.max(*cap + 1);
                    return StopReason::Exhausted;
                }
                Err(Some(reason)) => {
                    // The root bound as the stopped call left it (no further call: pumpkin 0.5
                    // may not take one after a stop at the root).
                    if !model.solver.is_inconsistent() {
                        let lb = Time::from(model.solver.lower_bound(&model.makespan));
                        self.lower_bound = self.lower_bound.max(lb);
                    }
                    return reason;
                }
            }
        }
    }

    /// Propagates at the root and reads the makespan's lower bound: `true` when the root is
    /// infeasible (no solution within `cap`: the bound becomes `cap + 1`).
    fn root_bound(&mut self, model: &mut Model, cap: Time) -> bool {
        match root_lower_bound(&mut model.solver, model.makespan) {
            Some(lb) => {
                self.lower_bound = self.lower_bound.max(lb);
                false
            }
            None => {
                self.lower_bound = self.lower_bound.max(cap + 1);
                true
            }
        }
    }
}

#[cfg(test)]
mod tests;
