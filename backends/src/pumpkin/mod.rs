//! The `pumpkin` backend: RCPSP by lazy clause generation (LCG) with the pumpkin CP solver.
//!
//! # What it does
//! 1. **Incumbent.** The starting schedule of [`Limits::initial`], or else a short, seeded run
//!    of the `sgs` heuristic ([`Heuristic`], budget [`PumpkinConfig::heuristic_schedules`]).
//!    If its makespan meets the lower bound (critical path, resource energy and, with
//!    [`Reasoning::Full`], energetic reasoning: [`concerto_rcpsp::bounds`]) the schedule is
//!    returned as optimal without building a CP model. Energetic reasoning binary-searches
//!    between the other bounds and the incumbent's makespan (the problem's horizon without
//!    one): every makespan it could return lies there.
//! 2. **Model.** One integer start variable `s_i` per activity with the domain
//!    `[ES_i, LS_i]`: the earliest start of the critical path method and the latest start for
//!    the deadline `UB` = the incumbent's makespan (tight domains matter a lot for LCG: every
//!    value is a potential literal). A makespan variable `M` in `[LB, UB]`. Each precedence
//!    `i -> j` with lag `l` is the linear inequality `s_i + d_i + l <= s_j`; `M >= s_i + d_i`
//!    for every activity without successors. Each resource is one `cumulative` (time-table
//!    propagation over intervals, pointwise explanations, Schutt et al. 2011) over its
//!    activities with positive duration and demand; zero-duration activities need none, and a
//!    resource whose total demand fits its capacity is dropped. Greedy cliques of activities
//!    that pairwise cannot overlap get pumpkin's edge-finding `disjunctive_strict`
//!    ([`PumpkinConfig::edge_finding`]; with [`Reasoning::Light`], one direction only and
//!    without the activities fixed at the root).
//!    With [`PumpkinConfig::ttef`], each such resource also gets this crate's time-table edge
//!    finding (`ttef.rs`, both directions): the energy of windows between an earliest start
//!    and a latest end, from compulsory parts and the tasks inside, overloads or pushes
//!    tasks where time-tabling alone sees nothing.
//! 3. **Warm start.** A `WarmStart` brancher ahead of the search's brancher
//!    ([`PumpkinConfig::search`]: by default the start-time series of Schutt et al., built
//!    backwards from the deadline ([`PumpkinConfig::direction`], see [`Direction`]); VSIDS
//!    with solution-based phase saving is an option) reproduces the incumbent as the model's
//!    first solution; then `M <= UB - 1` is added as a clause: the search only looks for
//!    improvements.
//! 4. **Hybrid search, anytime in both directions.** One pumpkin solver (learned nogoods
//!    persist) alternates two kinds of probe, each limited by a slice of conflicts that grows
//!    geometrically ([`PumpkinConfig::first_slice`], [`PumpkinConfig::slice_growth`]):
//!    - *primal* (linear SAT-UNSAT): solve with `M <= UB - 1`; a solution is a new incumbent and
//!      the cap becomes a clause `M <= UB' - 1`; root infeasibility proves `UB` optimal;
//!    - *dual* (linear UNSAT-SAT, destructive lower bounding): solve under the assumption
//!      `M <= LB`; failure adds the clause `M >= LB + 1` and root propagation may lift the bound
//!      further (read back from `M`'s root domain); a solution is optimal.
//!
//!    - *neighbourhoods* (large-neighbourhood search, [`PumpkinConfig::lns`]): before each
//!      primal probe, time windows of the incumbent are freed and the rest fixed (the prefix
//!      where it is, the suffix one unit earlier) as assumptions, each repaired within a
//!      small slice (`lns.rs`); a repair is a new incumbent. The nogoods learned stay valid,
//!      so the same solver goes on proving.
//!
//!    A probe that makes progress gets a fresh slice. It stops when `LB = UB`, at the time limit,
//!    when cancelled, or at [`PumpkinConfig::max_conflicts`]; on a stop it returns the best
//!    schedule and the best bound proven, never just one of them.
//!
//! # Limits and semantics
//! - The clock starts when [`Solver::solve`] is called; the heuristic gets a share of the time
//!   ([`PumpkinConfig::heuristic_time_share`]) and every pumpkin call a `TimeBudget` of the time
//!   left, joined with a termination condition that polls [`Limits::cancel`] and the conflict
//!   budget. pumpkin checks its termination before every decision and conflict, so a stop
//!   lands within one propagation round of the deadline.
//! - [`Limits::upper_bound`] `U`: when the incumbent's makespan `H` exceeds `U`, the model is
//!   built with `M <= U`. A proof that no schedule has `M <= U` is then
//!   [`Status::Infeasible`] (the optimum is above `U`; the outcome has no schedule and the lower
//!   bound `U + 1`). When the solve stops first, the outcome is `Feasible` with the incumbent,
//!   although its makespan is above `U`: a valid schedule is worth returning. With `H <= U`, `U`
//!   adds nothing and is ignored.
//! - pumpkin's domains are `i32`: an upper bound above `i32::MAX / 2`, or a resource whose
//!   demands do not fit `i32`, is [`SolveError::Unsupported`] (rescale time to solve it).
//! - **Work budget.** [`Limits::work_limit`] is a budget of conflicts (the smaller of it and
//!   [`PumpkinConfig::max_conflicts`]); reaching it stops with [`StopReason::WorkLimit`]. The
//!   heuristic start has its own budget ([`PumpkinConfig::heuristic_schedules`]) and, under a
//!   work budget, the whole time left rather than a share of it.
//! - With one thread, deterministic for a seed (the heuristic and pumpkin's random generator
//!   are seeded with [`Limits::seed`]; slices count conflicts, not time) unless the clock
//!   stops the solve.
//! - **Portfolio.** With [`Limits::threads`] `t >= 2` (and [`PumpkinConfig::portfolio`]),
//!   `t` searches run on their own threads, each on its own model: the even ones with the
//!   configuration as given, the odd ones with [`diversified`] (the other direction, no edge
//!   finding, small dual probes) and their own heuristic start (seed `s + w`, kept when no
//!   longer than the shared one). Before each probe a worker publishes its incumbent makespan
//!   and bound and adopts the others' (`M <= UB - 1` and `M >= LB` as clauses); the first to
//!   close the gap stops the rest, and the outcome is the best schedule and the best bound of
//!   all. Which worker finds what depends on thread timing, so the proven makespan and status
//!   are reproducible but the schedule of an optimum, the bound of a stopped solve and
//!   [`Outcome::work`] (conflicts of all workers) may differ between runs. The conflict budget
//!   applies to each worker. On PSPLIB j30 at 10 s on 2 cores it proves all 480, the slowest
//!   (`j3013_6`) in 6.1 s.
//! - **Deterministic portfolio.** Under a work budget the workers share nothing (no bounds,
//!   no stop flag): each runs to its own proof or budget, and the outcome takes, in worker
//!   order, the first of the shortest schedules, the largest bound and the sum of the
//!   conflicts. The outcome is then the same on any machine and load for a given number of
//!   threads (see the determinism contract of [`Limits`]), at the price of workers that keep
//!   searching after another one closed the gap.
//! - [`Outcome::work`] counts the conflicts of the CP search (0 when the model was not needed);
//!   the heuristic's schedules are not included.
//! - Nothing is printed: pumpkin writes statistics only when its statistic logging is
//!   configured, which this module never does.
//!
//! # Cost
//! The model has `n + 1` variables, one linear propagator per precedence and one cumulative per
//! resource; memory grows with the learned nogoods (pumpkin reserves 50 MB of address space for
//! them lazily). Each time-table propagation is `O(n log n)` per resource. The search is
//! exponential in the worst case; on PSPLIB see the measurements in the crate's reports.
//!
//! # Sources
//! - A. Schutt, T. Feydy, P. J. Stuckey, M. G. Wallace, "Solving RCPSP/max by lazy clause
//!   generation", Journal of Scheduling 16 (2013) 273-289; and "Explaining the cumulative
//!   propagator", Constraints 16 (2011) 250-282.
//! - The pumpkin solver (ConSol Lab, TU Delft; <https://github.com/consol-lab/pumpkin>), crates
//!   `pumpkin-core`, `pumpkin-constraints` and `pumpkin-conflict-resolvers` 0.5; the citation its
//!   authors ask for: I. Marijnissen, M. Flippo, E. Demirović, "From literals to atomic
//!   constraints: generalising conflict-driven clause learning for constraint programming",
//!   CP 2026, LIPIcs 379, 42:1-42:21.
//! - E. Demirović, G. Chu, P. J. Stuckey, "Solution-based phase saving for CP", CP 2018.

mod branching;
mod common;
mod lns;
pub mod modal;
mod model;
mod portfolio;
mod probing;
#[cfg(test)]
mod tests;
mod ttef;

use concerto_rcpsp::bounds::{self, ENERGETIC_MAX_ACTIVITIES};
use concerto_rcpsp::temporal::window_conflict;
use concerto_rcpsp::{
    Clock, Heuristic, HeuristicConfig, Limits, Outcome, Problem, Schedule, SolveError, Solver,
    Status, StopReason, Time,
};

pub use common::{MAX_HORIZON, NAME};
pub use model::{MAX_CLIQUE, MAX_CLIQUE_PROBLEM, MAX_CLIQUE_SEEDS};
pub use portfolio::diversified;

use common::unsupported;
use model::Model;
use portfolio::portfolio;
use probing::Run;

/// Strategy options of the [`Pumpkin`] backend.
#[derive(Clone, Debug)]
pub struct PumpkinConfig {
    /// Schedules the `sgs` heuristic may generate for the first incumbent (when
    /// [`Limits::initial`] is not given). Default 50 000, about 0.2 s on a j60 instance: on
    /// the first 120 j60 instances at 3 s it gives 0.240 % above the best known makespans
    /// against 0.394 % with 5 000 (and 0.269 % with 200 000), with the same 103 proofs.
    pub heuristic_schedules: u64,
    /// Largest share of the time limit the heuristic may use (its schedule budget normally ends
    /// it first, which keeps the result deterministic).
    pub heuristic_time_share: f64,
    /// Reproduce the incumbent as the first solution of the model (a `WarmStart` brancher), so
    /// that solution-based phase saving searches around it.
    pub warm_start: bool,
    /// Conflicts of the first primal and dual probes.
    pub first_slice: u64,
    /// Factor by which the slice grows after each round without progress.
    pub slice_growth: f64,
    /// Whether to run dual (lower-bounding) probes at all. Without them the search is pure
    /// linear SAT-UNSAT and the bound only moves at the end of a proof.
    pub dual_probes: bool,
    /// The slice of a dual probe relative to a primal one.
    pub dual_weight: f64,
    /// Whether dual slices grow with the primal ones; if not, every dual probe gets
    /// `first_slice * dual_weight` conflicts, so the dual share shrinks as the search goes on.
    pub dual_growth: bool,
    /// Post pumpkin's `disjunctive_strict` (edge finding on a Θ-Λ tree, both directions,
    /// Vilím 2008) on greedy maximal cliques of the disjunctive graph: activities that pairwise
    /// cannot overlap, because their demands on some resource exceed its capacity or a
    /// precedence path orders them. Measured neutral on PSPLIB (j60, first 80 instances at 3 s:
    /// 67 proven with and without); it matters on instances with large disjunctive sets.
    pub edge_finding: bool,
    /// Post time-table edge finding (this crate's propagator, both directions, Vilím 2011 with
    /// the explanations of Schutt et al. 2013) on every resource beside its `cumulative`: a
    /// window `[a, b)` whose compulsory parts and inside tasks leave a task too little room
    /// pushes it out, and one they overload is a conflict. See `ttef.rs` for the rule, its
    /// explanations and its cost. Default `false`: measured with `examples/pumpkin_config`,
    /// one thread, 10 s, two solves at a time on 2 idle Intel Xeon cores, on the 78 j60
    /// instances the default leaves unproven there, it raises the proven bound on 49 and
    /// lowers it on 14 (sum of bounds 7,448 against 7,268), proves none (the default 1), and
    /// makes 12.8k conflicts per solve against 23.3k (medians). As the odd worker of a
    /// 2-thread portfolio it proved 1 of the 78. Stronger bounds, no more proofs in 10 s.
    pub ttef: bool,
    /// Large-neighbourhood search around the incumbent (`lns.rs`): before each primal probe,
    /// time-window neighbourhoods of the incumbent (the prefix kept, the suffix one unit
    /// earlier, the window free) are repaired by the same model under assumptions, for
    /// [`PumpkinConfig::lns_weight`] times the probe's conflicts, [`PumpkinConfig::lns_slice`]
    /// each. The learned nogoods stay valid, so proofs go on. Only on problems without release
    /// dates or deadlines: not on the odd-even driver's windows, solved in about a millisecond
    /// each. In a portfolio, the even workers (the configuration as given) search
    /// neighbourhoods and the odd ones ([`diversified`]) do not: one improves, the other
    /// proves. Default `true`: measured with `examples/pumpkin_config`, one thread, 10 s, two
    /// solves at a time on 2 Intel Xeon cores, on the 82 j60 instances that the 2-thread
    /// portfolio had left unproven, it finds a shorter schedule on 10 and a longer one on
    /// none, 23 at the best known makespan against 18 (the mean distance to it over the 82:
    /// 1.27 % against 1.44 %), with the same 4 proofs. A slice of 300 (7 shorter) or a weight
    /// of 2 (8) did less.
    pub lns: bool,
    /// Conflicts of one neighbourhood's repair under [`PumpkinConfig::lns`] (default 100).
    pub lns_slice: u64,
    /// Conflicts of a round of neighbourhoods under [`PumpkinConfig::lns`], relative to the
    /// primal probe that follows it (default 1).
    pub lns_weight: f64,
    /// With [`Limits::threads`] of 2 or more, run that many searches in parallel (a
    /// portfolio, see the module docs) instead of one. Default `true`.
    pub portfolio: bool,
    /// A budget of conflicts for the whole search (for each worker of a portfolio): reaching
    /// it stops with [`StopReason::WorkLimit`]. `None`: no budget but [`Limits::work_limit`];
    /// with both, the smaller.
    pub max_conflicts: Option<u64>,
    /// The branching strategy (default [`Search::Sst`]).
    pub search: Search,
    /// Restarts: `None` keeps pumpkin's default (Glucose-style, driven by the learned
    /// nogoods' quality, none in the first 10 000 conflicts); `Some(b)` restarts on the Luby
    /// sequence times `b` conflicts.
    pub luby_restarts: Option<u64>,
    /// From which end the start-time series of [`Search::Sst`] and [`Search::VsidsSst`]
    /// builds schedules (default [`Direction::Auto`]).
    pub direction: Direction,
    /// How much reasoning a solve spends before and during the search (default
    /// [`Reasoning::Auto`]).
    pub reasoning: Reasoning,
}

/// How much reasoning a solve spends before and during its search: all of it for a problem
/// solved whole, less for the many small windows of the odd-even driver
/// ([`concerto_rcpsp::OddEven`]), each solved in about a millisecond, where the fixed costs of
/// a solve decide how many windows a second gets.
///
/// Measured on the odd-even windows of `concerto bench scale` (generated training steps, two
/// rounds of windows of 16 activities, about 33 with the pinned outside ones; one thread,
/// under a work budget so that runs compare): at 100k activities (25 050 windows) the windows
/// take 33.9 s of CPU time with [`Reasoning::Full`] (makespan 0.478 % above the lower bound)
/// and 12.5 s with [`Reasoning::Light`] (0.466 %). At 10k, step by step: 3.64 s; without the
/// energetic bound 2.79 s (the root propagation proves the same window optima: the same
/// makespan); without the fixed activities in the cliques (about half of the largest one)
/// 1.75 s, the same makespan; edge finding one way 1.43 s; no warm-start dive 1.22 s. The
/// last two change which optimal window schedule is found, so the run's makespan differs
/// (0.883 % against 0.907 % at 10k).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Reasoning {
    /// [`Reasoning::Light`] for a problem with time windows (release dates or deadlines,
    /// such as an odd-even window), else [`Reasoning::Full`].
    #[default]
    Auto,
    /// The energetic-reasoning bound before the search (problems of at most
    /// [`ENERGETIC_MAX_ACTIVITIES`] activities), edge finding in both directions on every
    /// clique, and the warm-start dive of [`PumpkinConfig::warm_start`].
    Full,
    /// No energetic bound (the critical-path and energy bounds, then the model's root
    /// propagation); edge finding ([`PumpkinConfig::edge_finding`]) only on the side the
    /// start-time series branches on (earliest starts forward, latest ends backward) and only
    /// over the activities not fixed at the root (an activity pinned by its time window stays
    /// in the cumulatives, which place its whole interval); and with [`Search::Sst`] no
    /// warm-start dive, which reproduces the incumbent only for the phase saving that the
    /// start-time series does not use. Each of these removes redundant reasoning only: the
    /// model's solutions, and so its optimum, stay the same.
    Light,
}

impl Reasoning {
    /// The reasoning for `problem`: [`Reasoning::Auto`] resolved, the others unchanged.
    pub fn resolve(self, problem: &Problem) -> Reasoning {
        match self {
            Reasoning::Auto if problem.has_time_windows() => Reasoning::Light,
            Reasoning::Auto => Reasoning::Full,
            other => other,
        }
    }
}

/// From which end of the schedule the start-time series branches.
///
/// Scheduling an RCPSP backwards, from the deadline, is scheduling the reversed project
/// (every precedence turned around) forwards; which of the two is easier differs from
/// instance to instance (R. Klein, "Bidirectional planning: improving priority rule-based
/// heuristics for scheduling resource-constrained projects", EJOR 127 (2000) 619-638, and the
/// forward-backward improvement of Li and Willis 1992). The same holds for the proofs of the
/// CP search. On PSPLIB at 10 s (one thread each, two solves at a time) the backward series
/// proves 480 of the 480 j30 instances against 478 forwards, and 406 of the 480 j60 ones
/// against 402 (0.225 % above the best known makespans against 0.237 %). But it is slower on
/// some instances that the forward one finds easy (`j3013_6`: 8.7 s backward, 7.4 s forward;
/// `j3013_2`: 5.0 s backward, not proven in 10 s forward), so a portfolio runs both (see
/// [`diversified`]). On the windows of the odd-even driver (problems with pinned activities,
/// release dates and deadlines) the forward series is the better one: `concerto bench scale
/// --sizes 10000` took 2.4 s forwards against 9.0 s backwards (makespans 1 480 269 606 and
/// 1 480 298 604), and `concerto optimize` on GPT tp 8 3.1 s against 5.8 s (both measured
/// with [`Reasoning::Full`] on the windows, before [`Reasoning::Light`]). Hence
/// [`Direction::Auto`], the default.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Direction {
    /// [`Direction::Forward`] for a problem with time windows (release dates or deadlines,
    /// such as an odd-even window), else [`Direction::Backward`].
    #[default]
    Auto,
    /// The unfixed activity with the smallest earliest start (ties: smallest latest start)
    /// starts there; on backtracking it starts later.
    Forward,
    /// The unfixed activity with the largest latest end (ties: largest earliest end) ends
    /// there; on backtracking it ends earlier. A solution found this way is shifted left as
    /// far as every activity's earliest start allows.
    Backward,
}

impl Direction {
    /// The direction for `problem`: [`Direction::Auto`] resolved, the others unchanged.
    pub fn resolve(self, problem: &Problem) -> Direction {
        match self {
            Direction::Auto if problem.has_time_windows() => Direction::Forward,
            Direction::Auto => Direction::Backward,
            other => other,
        }
    }
}

/// The branching strategy of the CP search.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Search {
    /// pumpkin's default brancher: VSIDS on the predicates met in conflicts, with
    /// solution-based phase saving; random variable and random split when no such predicate
    /// is open.
    Vsids,
    /// VSIDS with phase saving as [`Search::Vsids`], but the smallest-start-time series
    /// instead of random choices when no conflict predicate is open.
    VsidsSst,
    /// The start-time series alone, in [`PumpkinConfig::direction`]: forward, the activity
    /// with the smallest earliest start (ties: the smallest latest start) starts there, or
    /// later on backtracking. The default. Measured with the forward series, on PSPLIB j30 at
    /// 10 s (5 000-schedule start) it proved 477 of 480 against 474 for [`Search::Vsids`] (the
    /// j3029 instances close in 5-7 s), and on the first 80 j60 instances at 3 s both prove 67.
    Sst,
}

impl Default for PumpkinConfig {
    fn default() -> Self {
        Self {
            heuristic_schedules: 50_000,
            heuristic_time_share: 0.1,
            warm_start: true,
            first_slice: 500,
            slice_growth: 1.5,
            dual_probes: true,
            dual_weight: 1.0,
            dual_growth: false,
            edge_finding: true,
            ttef: false,
            lns: true,
            lns_slice: 100,
            lns_weight: 1.0,
            portfolio: true,
            max_conflicts: None,
            search: Search::Sst,
            luby_restarts: None,
            direction: Direction::Auto,
            reasoning: Reasoning::Auto,
        }
    }
}

/// The pumpkin LCG backend, registered as `pumpkin`. See the module docs.
#[derive(Clone, Debug, Default)]
pub struct Pumpkin {
    /// Its configuration.
    pub config: PumpkinConfig,
}

impl Pumpkin {
    /// The backend with a configuration.
    pub fn new(config: PumpkinConfig) -> Self {
        Self { config }
    }
}

impl Solver for Pumpkin {
    fn name(&self) -> &str {
        NAME
    }

    fn solve(&self, problem: &Problem, limits: &Limits) -> Result<Outcome, SolveError> {
        let initial_makespan = limits.validate(problem)?;
        let clock = limits.clock();
        let reasoning = self.config.reasoning.resolve(problem);
        let cheap = bounds::critical_path(problem)
            .value
            .max(bounds::energy(problem).value);
        let mut run = Run {
            problem,
            clock: &clock,
            best: None,
            best_makespan: Time::MAX,
            lower_bound: cheap,
            cap: 0,
            conflicts: 0,
            shared: None,
        };
        // Energetic reasoning returns the smallest makespan in [cheap, upper] that it cannot
        // refute; a schedule's makespan is never refuted, so the incumbent's is as good an
        // upper end as the horizon, and closer.
        let energetic = |upper: Time| {
            (reasoning == Reasoning::Full && problem.len() <= ENERGETIC_MAX_ACTIVITIES)
                .then(|| bounds::energetic(problem, cheap, upper).value)
                .map_or(cheap, |e| e.max(cheap))
        };
        if window_conflict(problem).is_some() {
            // Some release date or deadline cannot be met even without resources.
            run.lower_bound = energetic(problem.horizon());
            return Ok(run.no_schedule(Status::Infeasible));
        }
        // The incumbent: the caller's schedule, or the heuristic's (none when every schedule
        // it tried missed a deadline).
        let (incumbent, mut stop) = match (&limits.initial, initial_makespan) {
            (Some(s), Some(_)) => (Some(s.clone()), None),
            _ => self.heuristic(problem, limits, &clock)?,
        };
        if let Some(schedule) = incumbent {
            run.best_makespan = schedule.makespan(problem);
            run.best = Some(schedule);
        }
        run.lower_bound = energetic(if run.best.is_some() {
            run.best_makespan
        } else {
            problem.horizon()
        });
        let bound = run.lower_bound;
        // The model's deadline: the incumbent's makespan (or the horizon, which every active
        // schedule meets, without one), or a caller's bound below it.
        let mut cap = if run.best.is_some() {
            run.best_makespan
        } else {
            problem.horizon()
        };
        if let Some(u) = limits.upper_bound.filter(|&u| u < cap) {
            cap = u;
        }
        if cap < bound {
            // Below the lower bound (without an incumbent, the horizon can only be below it
            // when the problem has no schedule).
            return Ok(run.infeasible(cap));
        }
        if run.lower_bound >= run.best_makespan {
            return run.finish(StopReason::Exhausted);
        }
        if cap > MAX_HORIZON {
            return Err(unsupported(format!(
                "the makespan bound {cap} exceeds the i32 domains of pumpkin (at most \
                 {MAX_HORIZON}); rescale the time unit"
            )));
        }
        if stop.is_none() {
            stop = clock.should_stop();
        }
        if let Some(reason) = stop {
            return run.finish(reason);
        }
        run.cap = cap;
        let workers = self.workers(problem, limits);
        let reason = if workers.len() > 1 {
            portfolio(&mut run, &workers, limits, bound)?
        } else {
            let (config, seed) = &workers[0];
            let mut model = Model::build(problem, config, *seed, bound, cap)?;
            run.search(&mut model, config, limits)
        };
        if run.best_makespan > cap && run.lower_bound > cap {
            // No schedule within the caller's upper bound or the time windows.
            return Ok(run.infeasible(cap));
        }
        run.finish(reason)
    }
}

impl Pumpkin {
    /// The configurations and seeds of the searches to run: one, or with
    /// [`PumpkinConfig::portfolio`] one per thread, alternating the configuration as given
    /// (seed `s`) and [`diversified`] (seeds `s + 1`, `s + 2`, ...).
    fn workers(&self, problem: &Problem, limits: &Limits) -> Vec<(PumpkinConfig, u64)> {
        // The caller's work budget caps the configured one (each worker gets it all).
        let max_conflicts = match (self.config.max_conflicts, limits.work_limit) {
            (Some(c), Some(w)) => Some(c.min(w)),
            (c, w) => c.or(w),
        };
        let given = PumpkinConfig {
            // The odd-even driver's windows (time windows) solve in about a millisecond each:
            // no neighbourhoods there.
            lns: self.config.lns && !problem.has_time_windows(),
            direction: self.config.direction.resolve(problem),
            reasoning: self.config.reasoning.resolve(problem),
            max_conflicts,
            ..self.config.clone()
        };
        if !given.portfolio || limits.threads < 2 {
            return vec![(given, limits.seed)];
        }
        (0..limits.threads)
            .map(|w| {
                let config = if w % 2 == 0 {
                    given.clone()
                } else {
                    diversified(&given)
                };
                (config, limits.seed.wrapping_add(w as u64))
            })
            .collect()
    }

    /// A short seeded heuristic run for the first incumbent (none when every schedule it tried
    /// missed a deadline), and why the solve must stop if the clock or the cancel flag stopped
    /// it.
    fn heuristic(
        &self,
        problem: &Problem,
        limits: &Limits,
        clock: &Clock,
    ) -> Result<(Option<Schedule>, Option<StopReason>), SolveError> {
        let outcome = start(&self.config, problem, limits, clock, limits.seed)?;
        let stop = match outcome.status {
            Status::Feasible(StopReason::Cancelled) => Some(StopReason::Cancelled),
            _ => clock.should_stop(),
        };
        Ok((outcome.schedule, stop))
    }
}

/// The `sgs` heuristic's run for a search's first incumbent: [`PumpkinConfig::heuristic_schedules`]
/// schedules (its own budget: the caller's work budget counts conflicts), at most
/// [`PumpkinConfig::heuristic_time_share`] of the time left, seeded with `seed`.
fn start(
    config: &PumpkinConfig,
    problem: &Problem,
    limits: &Limits,
    clock: &Clock,
    seed: u64,
) -> Result<Outcome, SolveError> {
    let heuristic = Heuristic::new(HeuristicConfig {
        max_schedules: Some(config.heuristic_schedules.max(1)),
        ..HeuristicConfig::default()
    });
    let helper = Limits {
        work_limit: None,
        ..limits.helper(clock.share(config.heuristic_time_share))
    };
    heuristic.solve(problem, &helper.seed(seed))
}
