//! The hybrid search on one model: primal (linear SAT-UNSAT) and dual (destructive lower
//! bounding) probes, each limited by a slice of conflicts that grows geometrically (see the
//! parent module's docs).

use std::cell::Cell;
use std::rc::Rc;
use std::sync::atomic::Ordering;

use concerto_rcpsp::{
    verified, Clock, Limits, Outcome, Problem, Schedule, SolveError, Status, StopReason, Time,
};
use pumpkin_conflict_resolvers::resolvers::ResolutionResolver;
use pumpkin_core::branching::branchers::autonomous_search::AutonomousSearch;
use pumpkin_core::branching::branchers::dynamic_brancher::DynamicBrancher;
use pumpkin_core::branching::branchers::warm_start::WarmStart;
use pumpkin_core::branching::Brancher;
use pumpkin_core::predicate;
use pumpkin_core::predicates::Predicate;
use pumpkin_core::results::SatisfactionResultUnderAssumptions;
use pumpkin_core::termination::{Combinator, TerminationCondition, TimeBudget};

use super::branching::{Counting, StartTimeSeries};
use super::common::{root_lower_bound, small, NAME};
use super::lns::{Lns, Repair};
use super::model::{schedule_of, Model};
use super::portfolio::Shared;
use super::{PumpkinConfig, Reasoning, Search};

/// Most neighbourhoods of one round of large-neighbourhood search (most are refuted by
/// propagation alone, at no conflict).
const MAX_NEIGHBOURHOODS: usize = 64;

/// The answer of one pumpkin call, detached from the solver's borrow.
enum Answer {
    Solution(Schedule),
    FailedAssumption,
    Infeasible,
    Unknown,
}

/// Stops a pumpkin call when the cancel flag is raised or a conflict count is reached.
///
/// The conflict budget only stops the solver right after a decision. pumpkin 0.5 leaves its
/// state at "timeout" when it stops at the root (after a conflict whose nogood backjumps to
/// the root), and the next call on the same solver then panics; after a decision the solver is
/// below the root and returns to a clean state. A stop by the clock or the cancel flag ends the
/// solve, so it may stop anywhere.
struct SliceStop {
    cancel: Option<concerto_rcpsp::CancelFlag>,
    done: Option<concerto_rcpsp::CancelFlag>,
    conflicts: Rc<Cell<u64>>,
    decided: Rc<Cell<bool>>,
    until: u64,
}

impl TerminationCondition for SliceStop {
    fn should_stop(&mut self) -> bool {
        (self.decided.get() && self.conflicts.get() >= self.until)
            || [&self.cancel, &self.done].iter().any(|f| {
                f.as_ref()
                    .is_some_and(concerto_rcpsp::CancelFlag::is_cancelled)
            })
    }
}

/// What one probe established.
enum Probe {
    /// It improved the incumbent or the bound.
    Progress,
    /// The model has no solution below its cap: the bound reached `cap + 1`.
    Closed,
    /// Its slice ran out.
    SliceOut,
    /// The solve must stop.
    Stop(StopReason),
}

/// The state of one solve.
pub(super) struct Run<'a> {
    pub(super) problem: &'a Problem,
    pub(super) clock: &'a Clock,
    /// The incumbent, if any.
    pub(super) best: Option<Schedule>,
    /// Its makespan; `Time::MAX` without one.
    pub(super) best_makespan: Time,
    /// The best lower bound proven on the optimal makespan.
    pub(super) lower_bound: Time,
    /// The model's current upper limit on the makespan: the deadline it was built with, then
    /// the best makespan found minus 1.
    pub(super) cap: Time,
    pub(super) conflicts: u64,
    /// The bounds shared with the other workers of a portfolio.
    pub(super) shared: Option<&'a Shared>,
}

impl Run<'_> {
    pub(super) fn finish(self, reason: StopReason) -> Result<Outcome, SolveError> {
        let Some(best) = self.best else {
            return Ok(self.no_schedule(Status::Unknown(reason)));
        };
        let outcome = Outcome::with_schedule(
            self.problem,
            best,
            self.lower_bound,
            reason,
            NAME,
            self.clock.elapsed(),
            self.conflicts,
        );
        verified(self.problem, outcome)
    }

    /// An outcome without a schedule.
    pub(super) fn no_schedule(&self, status: Status) -> Outcome {
        Outcome {
            status,
            schedule: None,
            makespan: None,
            lower_bound: self.lower_bound,
            solver: NAME.into(),
            elapsed: self.clock.elapsed(),
            work: self.conflicts,
        }
    }

    /// No schedule of makespan at most `cap` (a caller's upper bound below the incumbent, or
    /// the horizon when the time windows admit no schedule).
    pub(super) fn infeasible(mut self, cap: Time) -> Outcome {
        self.lower_bound = self.lower_bound.max(cap + 1);
        self.no_schedule(Status::Infeasible)
    }

    /// Records a solution of the model if it improves the incumbent.
    pub(super) fn record(&mut self, schedule: Schedule) {
        let m = schedule.makespan(self.problem);
        if m < self.best_makespan {
            self.best = Some(schedule);
            self.best_makespan = m;
        }
    }

    /// Shares this worker's incumbent (its makespan and schedule) and bound with the
    /// portfolio.
    pub(super) fn publish(&self) {
        if let Some(shared) = self.shared {
            let previous = shared
                .upper
                .fetch_min(self.best_makespan, Ordering::Relaxed);
            if self.best_makespan < previous {
                let mut best = shared.best.lock().unwrap_or_else(|e| e.into_inner());
                if best
                    .as_ref()
                    .is_none_or(|b| self.best_makespan < b.makespan(self.problem))
                {
                    best.clone_from(&self.best);
                }
            }
            shared.lower.fetch_max(self.lower_bound, Ordering::Relaxed);
        }
    }

    /// Adopts the portfolio's best schedule when it is shorter than this worker's incumbent
    /// (the neighbourhoods of large-neighbourhood search are built around the incumbent).
    fn adopt(&mut self) {
        if let Some(shared) = self.shared {
            let best = shared.best.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(schedule) = best.as_ref() {
                if schedule.makespan(self.problem) < self.best_makespan {
                    let schedule = schedule.clone();
                    drop(best);
                    self.record(schedule);
                }
            }
        }
    }

    /// Whether the search is over: the bound meets the incumbent or passed the cap.
    pub(super) fn closed(&self) -> bool {
        self.lower_bound >= self.best_makespan || self.lower_bound > self.cap
    }

    /// The hybrid search (see the module docs). Returns why it stopped (`Exhausted` when the
    /// bound met the incumbent or passed the model's cap).
    pub(super) fn search(
        &mut self,
        model: &mut Model,
        config: &PumpkinConfig,
        limits: &Limits,
    ) -> StopReason {
        let counter = Rc::new(Cell::new(0u64));
        let model_seed = model.seed;
        // The warm-start dive only seeds phase saving, which the start-time series alone does
        // not use: light reasoning skips it there.
        let phases = config.search != Search::Sst
            || config.reasoning.resolve(self.problem) != Reasoning::Light;
        let warm_values = self
            .best
            .as_ref()
            .filter(|_| config.warm_start && phases && self.cap >= self.best_makespan)
            .map(|best| {
                best.starts()
                    .iter()
                    .map(|&s| small(s))
                    .collect::<Vec<i32>>()
            });
        let warm = warm_values.is_some();
        let mut inner = DynamicBrancher::new(Vec::new());
        if let Some(values) = warm_values {
            inner.add_brancher(Box::new(WarmStart::new(&model.starts, &values)));
        }
        let series = StartTimeSeries {
            starts: model.starts.clone(),
            durations: self
                .problem
                .ids()
                .map(|a| small(self.problem.duration(a)))
                .collect(),
            makespan: model.makespan,
            direction: config.direction.resolve(self.problem),
        };
        match config.search {
            Search::Vsids => inner.add_brancher(Box::new(model.solver.default_brancher())),
            Search::VsidsSst => inner.add_brancher(Box::new(AutonomousSearch::new(series))),
            Search::Sst => inner.add_brancher(Box::new(series)),
        }
        let decided = Rc::new(Cell::new(false));
        let mut brancher = Counting {
            inner,
            conflicts: Rc::clone(&counter),
            decided: Rc::clone(&decided),
        };

        let mut resolver = ResolutionResolver::default();
        let mut prober = Prober {
            model,
            brancher: &mut brancher,
            resolver: &mut resolver,
            counter: Rc::clone(&counter),
            decided,
            cancel: limits.cancel.clone(),
            done: self.shared.map(|s| s.done.clone()),
            max_conflicts: config.max_conflicts.unwrap_or(u64::MAX),
        };
        let reason = self.probe_loop(&mut prober, config, warm, model_seed);
        self.conflicts = counter.get();
        reason
    }

    fn probe_loop<B: Brancher>(
        &mut self,
        prober: &mut Prober<'_, B>,
        config: &PumpkinConfig,
        warm: bool,
        seed: u64,
    ) -> StopReason {
        let mut lns = config.lns.then(|| Lns::new(seed));
        if warm {
            // The incumbent as the model's first solution, for phase saving.
            match prober.solve(self, None, u64::MAX) {
                Probe::Stop(r) => return r,
                Probe::Closed => return StopReason::Exhausted,
                Probe::Progress | Probe::SliceOut => {}
            }
        }
        if self.cap >= self.best_makespan && prober.cap(self) {
            return StopReason::Exhausted;
        }
        let mut slice = config.first_slice.max(1) as f64;
        loop {
            let mut progress = false;
            // Primal probes until a slice passes without a new incumbent.
            loop {
                if prober.sync(self) || self.closed() {
                    return StopReason::Exhausted;
                }
                if let Some(lns) = lns.as_mut() {
                    self.adopt();
                    // Neighbourhoods first, for as many conflicts as the primal probe.
                    let budget = (slice * config.lns_weight.max(0.0)) as u64;
                    match prober.neighbourhoods(self, lns, config.lns_slice, budget) {
                        Probe::Progress => {
                            progress = true;
                            if prober.cap(self) {
                                return StopReason::Exhausted;
                            }
                            continue;
                        }
                        Probe::Closed => return StopReason::Exhausted,
                        Probe::Stop(r) => return r,
                        Probe::SliceOut => {}
                    }
                }
                match prober.solve(self, None, slice as u64) {
                    Probe::Progress => {
                        progress = true;
                        if prober.cap(self) {
                            return StopReason::Exhausted;
                        }
                    }
                    Probe::Closed => return StopReason::Exhausted,
                    Probe::SliceOut => break,
                    Probe::Stop(r) => return r,
                }
            }
            // Dual probes until a slice passes without a better bound.
            if config.dual_probes {
                loop {
                    if prober.sync(self) || self.closed() {
                        return StopReason::Exhausted;
                    }
                    let base = if config.dual_growth {
                        slice
                    } else {
                        config.first_slice as f64
                    };
                    let dual_slice = (base * config.dual_weight.max(0.0)) as u64;
                    match prober.solve(self, Some(self.lower_bound), dual_slice.max(1)) {
                        Probe::Progress => progress = true,
                        Probe::Closed => return StopReason::Exhausted,
                        Probe::SliceOut => break,
                        Probe::Stop(r) => return r,
                    }
                }
            }
            if !progress {
                slice *= config.slice_growth.max(1.0);
            }
        }
    }
}

/// Runs probes on the model; owns the brancher and resolver between calls.
struct Prober<'m, B> {
    model: &'m mut Model,
    brancher: &'m mut Counting<B>,
    resolver: &'m mut ResolutionResolver,
    counter: Rc<Cell<u64>>,
    decided: Rc<Cell<bool>>,
    cancel: Option<concerto_rcpsp::CancelFlag>,
    /// The portfolio's flag: another worker closed the gap.
    done: Option<concerto_rcpsp::CancelFlag>,
    max_conflicts: u64,
}

impl<B: Brancher> Prober<'_, B> {
    /// The termination of one call: the time left, the cancel flag, and `slice` more conflicts
    /// (capped by the global budget).
    fn termination(&self, clock: &Clock, slice: u64) -> Combinator<Option<TimeBudget>, SliceStop> {
        let until = self
            .counter
            .get()
            .saturating_add(slice)
            .min(self.max_conflicts);
        self.decided.set(false);
        Combinator::new(
            clock.remaining().map(TimeBudget::starting_now),
            SliceStop {
                cancel: self.cancel.clone(),
                done: self.done.clone(),
                conflicts: Rc::clone(&self.counter),
                decided: Rc::clone(&self.decided),
                until,
            },
        )
    }

    /// Why a call that returned "unknown" stopped.
    fn unknown(&self, clock: &Clock) -> Probe {
        if let Some(r) = clock.should_stop() {
            return Probe::Stop(r);
        }
        if self
            .done
            .as_ref()
            .is_some_and(concerto_rcpsp::CancelFlag::is_cancelled)
        {
            // Another worker of the portfolio closed the gap.
            return Probe::Stop(StopReason::Exhausted);
        }
        if self.counter.get() >= self.max_conflicts {
            return Probe::Stop(StopReason::WorkLimit);
        }
        Probe::SliceOut
    }

    /// Adopts the portfolio's bounds (a makespan found by another worker caps this model, a
    /// bound proven by another raises it) after publishing this worker's: `true` when that
    /// closes the gap. Nothing without a portfolio.
    fn sync(&mut self, run: &mut Run<'_>) -> bool {
        let Some(shared) = run.shared else {
            return false;
        };
        run.publish();
        let upper = shared.upper.load(Ordering::Relaxed);
        let lower = shared.lower.load(Ordering::Relaxed);
        let m = self.model.makespan;
        let mut changed = false;
        if upper - 1 < run.cap {
            run.cap = upper - 1;
            let tag = self.model.solver.new_constraint_tag();
            let cap = small(run.cap);
            self.model.solver.add_clause([predicate![m <= cap]], tag);
            changed = true;
        }
        if lower > run.lower_bound {
            run.lower_bound = lower;
            changed = true;
        }
        if run.lower_bound > run.cap {
            return true;
        }
        if lower == run.lower_bound && changed {
            let tag = self.model.solver.new_constraint_tag();
            let bound = small(run.lower_bound);
            self.model.solver.add_clause([predicate![m >= bound]], tag);
        }
        changed && self.root_bound(run)
    }

    /// Posts `M <= UB - 1` and propagates at the root: `true` when that proves `UB` optimal.
    fn cap(&mut self, run: &mut Run<'_>) -> bool {
        let m = self.model.makespan;
        let tag = self.model.solver.new_constraint_tag();
        run.cap = run.cap.min(run.best_makespan - 1);
        let cap = small(run.cap);
        self.model.solver.add_clause([predicate![m <= cap]], tag);
        self.root_bound(run)
    }

    /// Propagates at the root and reads the makespan's lower bound: `true` when the root is
    /// infeasible (no schedule within the cap).
    fn root_bound(&mut self, run: &mut Run<'_>) -> bool {
        match root_lower_bound(&mut self.model.solver, self.model.makespan) {
            Some(lb) => {
                run.lower_bound = run.lower_bound.max(lb);
                false
            }
            None => {
                run.lower_bound = run.lower_bound.max(run.cap + 1);
                true
            }
        }
    }

    /// Large-neighbourhood search (`lns.rs`): neighbourhoods of the incumbent, each repaired
    /// within `each` conflicts, until `budget` conflicts are spent or [`MAX_NEIGHBOURHOODS`]
    /// were tried. `Progress` when one held a shorter schedule (recorded), `SliceOut` when
    /// none did, `Closed` when the model has no schedule within the cap at all.
    fn neighbourhoods(
        &mut self,
        run: &mut Run<'_>,
        lns: &mut Lns,
        each: u64,
        budget: u64,
    ) -> Probe {
        let began = self.counter.get();
        for _ in 0..MAX_NEIGHBOURHOODS {
            if self.counter.get() - began >= budget {
                break;
            }
            if self.model.solver.is_inconsistent() {
                run.lower_bound = run.lower_bound.max(run.cap + 1);
                return Probe::Closed;
            }
            let Some(best) = run.best.as_ref() else {
                break;
            };
            let Some(assumptions) = lns.next(run.problem, best, &self.model.starts) else {
                break;
            };
            let repair = match self.call(run.clock, &assumptions, each.max(1)) {
                Answer::Solution(schedule) => {
                    run.record(schedule);
                    Repair::Improved
                }
                Answer::FailedAssumption => Repair::Refuted,
                Answer::Infeasible => {
                    run.lower_bound = run.lower_bound.max(run.cap + 1);
                    return Probe::Closed;
                }
                Answer::Unknown => match self.unknown(run.clock) {
                    Probe::SliceOut => Repair::SliceOut,
                    other => return other,
                },
            };
            lns.adapt(repair);
            if repair == Repair::Improved {
                return Probe::Progress;
            }
        }
        Probe::SliceOut
    }

    /// One pumpkin call under `assumptions`, of at most `slice` conflicts.
    fn call(&mut self, clock: &Clock, assumptions: &[Predicate], slice: u64) -> Answer {
        let mut termination = self.termination(clock, slice);
        let model = &mut *self.model;
        match model.solver.satisfy_under_assumptions(
            self.brancher,
            &mut termination,
            self.resolver,
            assumptions,
        ) {
            SatisfactionResultUnderAssumptions::Satisfiable(sat) => {
                Answer::Solution(schedule_of(&model.starts, &model.earliest, &sat.solution()))
            }
            SatisfactionResultUnderAssumptions::UnsatisfiableUnderAssumptions(_) => {
                Answer::FailedAssumption
            }
            SatisfactionResultUnderAssumptions::Unsatisfiable(..) => Answer::Infeasible,
            SatisfactionResultUnderAssumptions::Unknown(..) => Answer::Unknown,
        }
    }

    /// One pumpkin call of at most `slice` conflicts: a primal probe (`assume = None`: any
    /// schedule within the cap) or a dual probe (`Some(lb)`: a schedule of makespan `<= lb`,
    /// whose failure proves the bound `lb + 1`).
    fn solve(&mut self, run: &mut Run<'_>, assume: Option<Time>, slice: u64) -> Probe {
        if self.model.solver.is_inconsistent() {
            run.lower_bound = run.lower_bound.max(run.cap + 1);
            return Probe::Closed;
        }
        let m = self.model.makespan;
        let assumptions: Vec<Predicate> = assume
            .map(|lb| predicate![m <= small(lb)])
            .into_iter()
            .collect();
        let answer = self.call(run.clock, &assumptions, slice);
        match answer {
            Answer::Solution(schedule) => {
                run.record(schedule);
                Probe::Progress
            }
            Answer::FailedAssumption => {
                let lb = assume.expect("only assumptions fail under assumptions");
                let tag = self.model.solver.new_constraint_tag();
                let bound = small(lb + 1);
                self.model.solver.add_clause([predicate![m >= bound]], tag);
                run.lower_bound = run.lower_bound.max(lb + 1);
                if self.root_bound(run) {
                    return Probe::Closed;
                }
                Probe::Progress
            }
            Answer::Infeasible => {
                run.lower_bound = run.lower_bound.max(run.cap + 1);
                Probe::Closed
            }
            Answer::Unknown => self.unknown(run.clock),
        }
    }
}
