//! Windowed "odd-even" solving: exact solves of small windows of the schedule, made to scale
//! to 100k activities.
//!
//! Cheng et al. (Concerto, ASPLOS 2025) make exact scheduling tractable by cutting the current
//! order into blocks of `b` activities and solving windows of two adjacent blocks while
//! everything else stays fixed; odd passes solve windows `(0,1), (2,3), ...`, even passes
//! `(1,2), (3,4), ...`, like odd-even transposition sort; `k` rounds cost `O(k t_b n / b)`.
//! This driver does it for any [`Solver`]:
//!
//! - **State.** The order of all activities by start time, and its schedule (the serial SGS of
//!   the order, [`crate::sgs`]).
//! - **A window's sub-problem** holds its activities; everything outside stays where it is:
//!   release dates from predecessors outside and from the window's earliest start; deadlines
//!   toward successors outside (`S_s - lag`) and no later than one window span after the
//!   current finish or the makespan; every outside activity that runs during the window's time
//!   span, pinned (release date = deadline - duration), so that the capacity it uses is taken.
//!   A sink's arc from every window activity carries the time the current order needs after
//!   that activity's outside successors (`lag + M - LS_s`, `LS_s` the latest start of `s` that
//!   keeps the makespan `M` in the current order). Minimising the sink's start moves the
//!   critical activities earlier, not merely the window's last task.
//! - **Coarse time.** A window spans about [`RESOLUTION`] time units (nanosecond windows would
//!   span millions, which an exact solver's domains do not like). Every time is floored, so the
//!   floored current schedule satisfies the sub-problem (`floor(s) + floor(d) <= floor(s + d)`)
//!   and is its warm start; the sub-problem is a relaxation whose answer is used for its order
//!   only.
//! - **Solve** with a per-window time limit from the current window schedule; if the sink
//!   moves earlier, the window's new start times replace the old ones. Because everything
//!   outside was fixed, that is (up to the coarse time) a feasible global schedule, and the
//!   serial SGS of a feasible schedule's start order starts no activity later.
//! - **Accept.** Windows of one pass are independent (they read the same global schedule) and
//!   run in parallel on a rayon pool of `limits.threads` threads. Their new starts are combined,
//!   the order is re-sorted by them and decoded; two windows can compete for capacity that was
//!   free, so if the makespan gets worse, halves of the windows are tried (three levels).
//! - It stops after `k` rounds (an odd and an even pass each), at a round in which no window
//!   changes, after `patience` rounds without a shorter makespan, when the work budget is spent,
//!   or at the overall time limit, and always has its best schedule. A problem no larger than
//!   one window is solved whole by the inner solver.
//! - **Work budget.** With [`Limits::work_limit`] the run is deterministic (see [`Limits`]):
//!   each window gets [`OddEvenConfig::window_work_limit`] (capped by the budget left when its
//!   pass began) instead of [`OddEvenConfig::window_time_limit`], and the overall time limit
//!   only as a safety net; no window is skipped for lack of time. The work each window reports
//!   ([`Outcome::work`], at least 1, so that the run always ends) is charged in window order,
//!   whether the windows ran in parallel or not; the first window that spends the budget is the
//!   last one whose answer is kept, and the run stops after its pass with
//!   [`StopReason::WorkLimit`]. The result is the same on any machine and load as long as the
//!   time limit, if any, is not reached. The starting heuristic then runs on its schedule budget
//!   ([`OddEvenConfig::start_schedules`]; [`OddEvenConfig::start_time`] is ignored) and is not
//!   charged. The report says how much work each round used.
//!
//! Per pass: `n / 2b` window solves; `O(n log n)` for the global SGS, the backward pass giving
//! latest starts, and the index of activities by time.

mod state;
mod window;

use std::time::{Duration, Instant};

use rayon::prelude::*;

use crate::bounds::{self, LowerBound};
use crate::problem::{ActivityId, Problem, Time};
use crate::schedule::Schedule;
use crate::search::{Heuristic, HeuristicConfig};
use crate::solver::{verified, Clock, Limits, Outcome, SolveError, Solver, StopReason};

use state::State;
use window::{TimeIndex, Window};

/// Time units across a window's sub-problem (see the module docs).
pub const RESOLUTION: Time = 1_000;

/// Configuration of the odd-even driver.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct OddEvenConfig {
    /// Activities per block; a window holds two blocks.
    pub block: usize,
    /// Rounds (an odd and an even pass each).
    pub rounds: usize,
    /// Time limit of each window's solve (without a work budget).
    pub window_time_limit: Duration,
    /// Work limit of each window's solve under [`Limits::work_limit`], in the inner solver's
    /// unit (conflicts for pumpkin, schedules for `sgs`, nodes for the MILPs); it replaces
    /// [`OddEvenConfig::window_time_limit`] then. `None`: a window may spend all the budget
    /// left. Default 2 000 (pumpkin spends it in about 10-50 ms on a window of 16 activities).
    pub window_work_limit: Option<u64>,
    /// Schedules the starting heuristic may generate (when no starting schedule is given).
    pub start_schedules: u64,
    /// When set, the starting heuristic runs for this long instead (no schedule budget).
    /// Ignored under a work budget, which the clock must not decide.
    pub start_time: Option<Duration>,
    /// Largest share of the overall time limit the starting heuristic may use.
    pub start_time_share: f64,
    /// Rounds without a shorter makespan before stopping.
    pub patience: usize,
}

impl Default for OddEvenConfig {
    fn default() -> Self {
        Self {
            block: 8,
            rounds: 8,
            window_time_limit: Duration::from_millis(10),
            window_work_limit: Some(2_000),
            start_schedules: 200,
            start_time: None,
            start_time_share: 0.2,
            patience: 2,
        }
    }
}

/// What one round did.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct RoundReport {
    /// 1-based round number.
    pub round: usize,
    /// Global makespan after the round.
    pub makespan: Time,
    /// Global lower bound (it does not change with rounds).
    pub lower_bound: Time,
    /// Windows solved in the round.
    pub windows: usize,
    /// Windows whose new schedule was kept.
    pub improved: usize,
    /// Work the round's windows reported (at least 1 per window solved), in the inner
    /// solver's unit.
    pub work: u64,
    /// Wall time of the round.
    pub time: Duration,
}

/// The result of a run: the outcome, the starting makespan and one report per round.
#[derive(Clone, Debug)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct OddEvenReport {
    /// The outcome (solver name `<inner>+oddeven`).
    pub outcome: Outcome,
    /// The makespan of the starting order.
    pub start_makespan: Time,
    /// Time spent on the starting schedule.
    pub start_time: Duration,
    /// One entry per round run.
    pub rounds: Vec<RoundReport>,
    /// The global lower bound and where it comes from.
    pub bound: LowerBound,
    /// Work used in all (the same as [`Outcome::work`]): the windows' work, charged as the
    /// module docs say, or the inner solver's for a problem solved whole.
    pub work: u64,
}

/// A side constraint of the odd-even driver that the RCPSP does not model (a memory budget,
/// for instance): the driver keeps a pass's new schedule only if this admits it.
pub trait Admission: Send + Sync {
    /// Whether the schedule with these start times (one per activity) is admitted. Called
    /// once per pass and once per half of a pass's windows tried (see [`OddEven`]).
    fn admits(&self, starts: &[Time]) -> bool;
}

/// The odd-even driver around an inner solver. See the module docs.
pub struct OddEven {
    inner: Box<dyn Solver>,
    name: String,
    admission: Option<std::sync::Arc<dyn Admission>>,
    /// The configuration.
    pub config: OddEvenConfig,
}

impl std::fmt::Debug for OddEven {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OddEven")
            .field("inner", &self.inner.name())
            .field("config", &self.config)
            .finish()
    }
}

impl OddEven {
    /// A driver that solves windows with `inner`.
    pub fn new(inner: Box<dyn Solver>, config: OddEvenConfig) -> Self {
        let name = format!("{}+oddeven", inner.name());
        Self {
            inner,
            name,
            admission: None,
            config,
        }
    }

    /// The driver with a side constraint: a pass's combined schedule replaces the current one
    /// only if `admission` admits it (else halves of its windows are tried, as for a longer
    /// makespan). The start must be admitted by the caller; a problem no larger than one
    /// window is solved whole and not checked (the caller checks the result). Cost: one call
    /// per pass, up to 15 when the pass's windows are halved.
    pub fn with_admission(mut self, admission: std::sync::Arc<dyn Admission>) -> Self {
        self.admission = Some(admission);
        self
    }

    /// Runs the driver; the starting order is `limits.initial`'s, else the best schedule of a
    /// short `sgs` run.
    pub fn run(&self, problem: &Problem, limits: &Limits) -> Result<OddEvenReport, SolveError> {
        limits.validate(problem)?;
        self.check_config()?;
        let clock = limits.clock();
        // Energetic reasoning only up to `ENERGETIC_MAX_ACTIVITIES`, as `lower_bound` decides.
        let bound = bounds::lower_bound(problem);
        if problem.len() <= 2 * self.config.block {
            return self.solve_whole(problem, limits, bound);
        }
        let start = match &limits.initial {
            Some(s) => s.clone(),
            None => self.start(problem, limits, &clock)?,
        };
        let start_time = clock.elapsed();
        let mut state = State::new(problem, start.starts());
        let start_makespan = state.makespan.min(start.makespan(problem));
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(limits.threads)
            .build()
            .map_err(|e| SolveError::Backend {
                solver: self.name.clone(),
                message: format!("cannot start {} threads: {e}", limits.threads),
            })?;
        let (rounds, reason, used) =
            self.run_rounds(problem, limits, &clock, bound, &pool, &mut state);
        let outcome = verified(
            problem,
            Outcome::with_schedule(
                problem,
                Schedule::new(state.decoder.starts().to_vec()),
                bound.value,
                reason,
                &self.name,
                clock.elapsed(),
                used,
            ),
        )?;
        Ok(OddEvenReport {
            outcome,
            start_makespan,
            start_time,
            rounds,
            bound,
            work: used,
        })
    }

    /// Errors unless the block size, the window time limit and the window work limit are
    /// positive.
    fn check_config(&self) -> Result<(), SolveError> {
        if self.config.block == 0
            || self.config.window_time_limit.is_zero()
            || self.config.window_work_limit == Some(0)
        {
            return Err(SolveError::InvalidLimits {
                reason: format!(
                    "the block size, the window time limit and the window work limit must be \
                     positive, got {}, {:?} and {:?}",
                    self.config.block, self.config.window_time_limit, self.config.window_work_limit
                ),
            });
        }
        Ok(())
    }

    /// A problem no larger than two blocks, solved whole by the inner solver; never worse
    /// than the caller's start.
    fn solve_whole(
        &self,
        problem: &Problem,
        limits: &Limits,
        bound: LowerBound,
    ) -> Result<OddEvenReport, SolveError> {
        let mut outcome = self.inner.solve(problem, limits)?;
        outcome.solver = self.name.clone();
        // The start is the caller's schedule when one was given; the inner solver's answer
        // never replaces it with a worse one.
        let start_makespan = match &limits.initial {
            Some(initial) => {
                let m = initial.makespan(problem);
                if outcome.makespan.is_none_or(|found| found > m) {
                    outcome = verified(
                        problem,
                        Outcome::with_schedule(
                            problem,
                            initial.clone(),
                            outcome.lower_bound.min(m),
                            outcome
                                .status
                                .stop_reason()
                                .unwrap_or(StopReason::WorkLimit),
                            &self.name,
                            outcome.elapsed,
                            outcome.work,
                        ),
                    )?;
                }
                m
            }
            None => outcome.makespan.unwrap_or(0),
        };
        Ok(OddEvenReport {
            start_makespan,
            start_time: outcome.elapsed,
            work: outcome.work,
            outcome,
            rounds: Vec::new(),
            bound,
        })
    }

    /// The rounds of odd and even passes over `state` until the bound, no improvement for
    /// `patience` rounds, the clock or the work budget stops them; returns each round's
    /// report, why they stopped and the work used.
    fn run_rounds<'p>(
        &self,
        problem: &'p Problem,
        limits: &Limits,
        clock: &Clock,
        bound: LowerBound,
        pool: &rayon::ThreadPool,
        state: &mut State<'p>,
    ) -> (Vec<RoundReport>, StopReason, u64) {
        let mut rounds = Vec::new();
        let mut reason = StopReason::WorkLimit;
        let mut stale = 0;
        let mut used = 0u64;
        'rounds: for round in 1..=self.config.rounds {
            let began = Instant::now();
            let before = state.makespan;
            let mut done = Pass::default();
            for offset in [0, self.config.block] {
                if let Some(r) = clock.should_stop() {
                    reason = r;
                    rounds.push(report(round, state, bound, &done, began));
                    break 'rounds;
                }
                let pass = pool.install(|| self.pass(problem, state, offset, limits, clock, used));
                used = used.saturating_add(pass.work);
                done.add(&pass);
                if pass.spent {
                    reason = StopReason::WorkLimit;
                    rounds.push(report(round, state, bound, &done, began));
                    break 'rounds;
                }
            }
            rounds.push(report(round, state, bound, &done, began));
            if state.makespan <= bound.value {
                break;
            }
            stale = if state.makespan < before {
                0
            } else {
                stale + 1
            };
            if done.improved == 0 || stale >= self.config.patience {
                reason = StopReason::Exhausted;
                break;
            }
        }
        (rounds, reason, used)
    }

    /// The starting schedule: a short `sgs` run.
    fn start(
        &self,
        problem: &Problem,
        limits: &Limits,
        clock: &Clock,
    ) -> Result<Schedule, SolveError> {
        let (time_limit, budget) = match self.config.start_time {
            Some(t) if limits.work_limit.is_none() => {
                (Some(clock.remaining().map_or(t, |left| left.min(t))), None)
            }
            _ => (
                clock.share(self.config.start_time_share),
                Some(self.config.start_schedules),
            ),
        };
        let heuristic = Heuristic::new(HeuristicConfig {
            max_schedules: budget,
            ..HeuristicConfig::default()
        });
        // Its own budget, in schedules: the run's budget counts the windows' work.
        let helper = Limits {
            work_limit: None,
            ..limits.helper(time_limit)
        };
        let outcome = heuristic.solve(problem, &helper)?;
        outcome.schedule.ok_or_else(|| SolveError::Backend {
            solver: self.name.clone(),
            message: "the starting heuristic found no schedule that meets every deadline".into(),
        })
    }

    /// One pass at `offset`, with `used` of the work budget spent before it (see the module
    /// docs).
    fn pass<'p>(
        &self,
        problem: &'p Problem,
        state: &mut State<'p>,
        offset: usize,
        limits: &Limits,
        clock: &Clock,
        used: u64,
    ) -> Pass {
        let n = problem.len();
        let width = 2 * self.config.block;
        let ranges: Vec<(usize, usize)> = (offset..n)
            .step_by(width)
            .map(|a| (a, (a + width).min(n)))
            .filter(|(a, b)| b - a >= 2)
            .collect();
        let index = TimeIndex::new(problem, state.decoder.starts());
        let shared: &State<'_> = state;
        let budget_left = limits.work_limit.map(|w| w.saturating_sub(used));
        let window_limits = Limits {
            time_limit: match budget_left {
                // The run's deadline, as a safety net.
                Some(_) => clock.remaining().map(|d| d.max(Duration::from_millis(1))),
                None => Some(self.config.window_time_limit),
            },
            work_limit: budget_left
                .map(|left| self.config.window_work_limit.map_or(left, |w| w.min(left))),
            seed: limits.seed,
            threads: 1,
            initial: None,
            upper_bound: None,
            cancel: limits.cancel.clone(),
        };
        // Without a work budget, a window starts only if its limit fits before the deadline
        // with room left to combine the answers, decode the order and check the result
        // (measured on the last pass). Under a budget the clock decides nothing.
        let reserve = self.config.window_time_limit * 2 + state.finishing * 2;
        let solved: Vec<Option<Solved>> = ranges
            .par_iter()
            .map(|&(a, b)| {
                let short =
                    budget_left.is_none() && clock.remaining().is_some_and(|left| left < reserve);
                if short || clock.should_stop().is_some() {
                    return None;
                }
                Some(match Window::build(problem, shared, &index, a, b) {
                    Some(window) => window.solve(self.inner.as_ref(), &window_limits),
                    None => Solved {
                        moves: None,
                        work: 0,
                    },
                })
            })
            .collect();
        // Charge in window order; the window that spends the budget is the last one kept.
        let mut pass = Pass {
            windows: ranges.len(),
            ..Pass::default()
        };
        let mut moves = Vec::new();
        for window in solved.into_iter().flatten() {
            pass.work = pass.work.saturating_add(window.work.max(1));
            moves.extend(window.moves);
            if budget_left.is_some_and(|left| pass.work >= left) {
                pass.spent = true;
                break;
            }
        }
        let began = Instant::now();
        pass.improved = state.apply(problem, &moves, 3, self.admission.as_deref());
        state.finishing = began.elapsed().max(Duration::from_millis(50));
        pass
    }
}

/// What a pass (or the passes of a round, added up) did.
#[derive(Clone, Copy, Debug, Default)]
struct Pass {
    /// Windows in the pass.
    windows: usize,
    /// Windows whose change was kept.
    improved: usize,
    /// Work charged.
    work: u64,
    /// Whether the work budget is spent.
    spent: bool,
}

impl Pass {
    fn add(&mut self, other: &Pass) {
        self.windows += other.windows;
        self.improved += other.improved;
        self.work = self.work.saturating_add(other.work);
        self.spent |= other.spent;
    }
}

/// A window's answer: its members' new starts if the sink moved earlier, and the work the
/// inner solver reported.
struct Solved {
    moves: Option<Vec<(ActivityId, Time)>>,
    work: u64,
}

fn report(
    round: usize,
    state: &State<'_>,
    bound: LowerBound,
    done: &Pass,
    began: Instant,
) -> RoundReport {
    RoundReport {
        round,
        makespan: state.makespan,
        lower_bound: bound.value,
        windows: done.windows,
        improved: done.improved,
        work: done.work,
        time: began.elapsed(),
    }
}

impl Solver for OddEven {
    fn name(&self) -> &str {
        &self.name
    }

    fn solve(&self, problem: &Problem, limits: &Limits) -> Result<Outcome, SolveError> {
        self.run(problem, limits).map(|r| r.outcome)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::check;
    use crate::generate::{project, training_step, Project, TrainingStep};
    use crate::solver::Status;

    fn driver(block: usize) -> OddEven {
        OddEven::new(
            Box::new(Heuristic::new(HeuristicConfig {
                max_schedules: Some(60),
                ..HeuristicConfig::default()
            })),
            OddEvenConfig {
                block,
                rounds: 2,
                window_time_limit: Duration::from_secs(1),
                start_schedules: 20,
                ..OddEvenConfig::default()
            },
        )
    }

    #[test]
    fn never_worse_than_its_start_and_always_checked() {
        let p = training_step(&TrainingStep::with_size(300, 2, 3));
        let report = driver(8)
            .run(
                &p,
                &Limits {
                    threads: 2,
                    ..Limits::default()
                },
            )
            .unwrap();
        let schedule = report.outcome.schedule.as_ref().unwrap();
        let m = check(&p, schedule).unwrap();
        assert_eq!(Some(m), report.outcome.makespan);
        assert!(m <= report.start_makespan);
        assert!(report.bound.value <= m);
        assert!(!report.rounds.is_empty());
        for pair in report.rounds.windows(2) {
            assert!(
                pair[1].makespan <= pair[0].makespan,
                "rounds never get worse"
            );
        }
        assert_eq!(report.outcome.solver, "sgs+oddeven");
    }

    /// Admits schedules in which activity `a` starts no earlier than `at`, counting calls.
    struct NotBefore {
        a: usize,
        at: Time,
        calls: std::sync::atomic::AtomicUsize,
    }

    impl Admission for NotBefore {
        fn admits(&self, starts: &[Time]) -> bool {
            self.calls
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            starts[self.a] >= self.at
        }
    }

    #[test]
    fn an_admission_keeps_every_accepted_pass_within_its_constraint() {
        let p = training_step(&TrainingStep::with_size(300, 2, 3));
        let limits = Limits {
            threads: 1,
            work_limit: Some(2_000),
            ..Limits::default()
        };
        let free = driver(8).run(&p, &limits).unwrap();
        let start = free.outcome.schedule.clone().unwrap();
        // From the free run's result: keep the activity that starts last where it is.
        let last = (0..p.len()).max_by_key(|&a| start.starts()[a]).unwrap();
        let at = start.starts()[last];
        let admission = std::sync::Arc::new(NotBefore {
            a: last,
            at,
            calls: Default::default(),
        });
        let report = driver(8)
            .with_admission(admission.clone())
            .run(
                &p,
                &Limits {
                    initial: Some(start.clone()),
                    ..limits.clone()
                },
            )
            .unwrap();
        let s = report.outcome.schedule.unwrap();
        check(&p, &s).unwrap();
        assert!(s.starts()[last] >= at, "the constraint holds");
        assert!(admission.calls.load(std::sync::atomic::Ordering::Relaxed) > 0);
        // An admission that refuses everything keeps the start's order.
        struct Never;
        impl Admission for Never {
            fn admits(&self, _: &[Time]) -> bool {
                false
            }
        }
        let report = driver(8)
            .with_admission(std::sync::Arc::new(Never))
            .run(
                &p,
                &Limits {
                    initial: Some(start.clone()),
                    ..limits
                },
            )
            .unwrap();
        assert_eq!(report.outcome.schedule.unwrap().starts(), start.starts());
        assert!(report.rounds.iter().all(|r| r.improved == 0));
    }

    #[test]
    fn a_work_budget_gives_the_same_outcome_under_load() {
        use crate::test_support::{assert_same, under_load};
        let p = project(&Project::with_size(120, 1));
        let driver = OddEven::new(
            Box::new(Heuristic::default()),
            OddEvenConfig {
                block: 8,
                window_work_limit: Some(150),
                ..OddEvenConfig::default()
            },
        );
        // Windows of a pass run on two threads; the time limit is a safety net.
        let limits = Limits::with_time_limit(Duration::from_secs(120))
            .work_limit(700)
            .threads(2)
            .seed(4);
        let a = driver.run(&p, &limits).unwrap();
        let b = driver.run(&p, &limits).unwrap();
        let c = under_load(|| driver.run(&p, &limits).unwrap());
        assert_eq!(a.outcome.status, Status::Feasible(StopReason::WorkLimit));
        // Charged in window order: the budget is spent by the last window kept.
        assert!(a.work >= 700 && a.work < 700 + 150, "{}", a.work);
        assert_eq!(a.work, a.outcome.work);
        assert_eq!(a.work, a.rounds.iter().map(|r| r.work).sum::<u64>());
        for other in [&b, &c] {
            assert_same(&a.outcome, &other.outcome);
            let rounds = |r: &OddEvenReport| -> Vec<_> {
                r.rounds
                    .iter()
                    .map(|r| (r.makespan, r.windows, r.improved, r.work))
                    .collect()
            };
            assert_eq!(rounds(&a), rounds(other));
        }
    }

    #[test]
    fn a_problem_within_one_window_is_solved_whole() {
        let p = training_step(&TrainingStep::with_size(10, 1, 1));
        assert!(p.len() <= 2 * 20);
        let report = driver(20).run(&p, &Limits::default()).unwrap();
        assert!(report.rounds.is_empty());
        check(&p, report.outcome.schedule.as_ref().unwrap()).unwrap();
    }

    #[test]
    fn a_small_problem_reports_the_given_start_not_the_answer() {
        let p = training_step(&TrainingStep::with_size(10, 1, 1));
        let good = Heuristic::default()
            .solve(&p, &Limits::default())
            .unwrap()
            .schedule
            .unwrap();
        // Every activity 5 later: still valid, 5 longer.
        let late = Schedule::new(good.starts().iter().map(|s| s + 5).collect());
        let start_makespan = check(&p, &late).unwrap();
        let report = driver(20)
            .run(&p, &Limits::default().initial(late))
            .unwrap();
        assert_eq!(report.start_makespan, start_makespan);
        let m = check(&p, report.outcome.schedule.as_ref().unwrap()).unwrap();
        assert!(
            m < start_makespan,
            "the inner solver improves on the late start"
        );
    }

    #[test]
    fn a_starting_schedule_is_used_and_validated() {
        let p = training_step(&TrainingStep::with_size(200, 1, 5));
        let start = Heuristic::default()
            .solve(&p, &Limits::default())
            .unwrap()
            .schedule
            .unwrap();
        let report = driver(8)
            .run(&p, &Limits::default().initial(start.clone()))
            .unwrap();
        assert_eq!(report.start_makespan, start.makespan(&p));
        let broken = Schedule::new(vec![0; p.len()]);
        assert!(matches!(
            driver(8).run(&p, &Limits::default().initial(broken)),
            Err(SolveError::InvalidInitial { .. })
        ));
    }
}
