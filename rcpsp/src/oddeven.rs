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
//!   changes, after `patience` rounds without a shorter makespan, or at the overall time limit,
//!   and always has its best schedule. A problem no larger than one window is solved whole by
//!   the inner solver.
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
pub struct OddEvenConfig {
    /// Activities per block; a window holds two blocks.
    pub block: usize,
    /// Rounds (an odd and an even pass each).
    pub rounds: usize,
    /// Time limit of each window's solve.
    pub window_time_limit: Duration,
    /// Schedules the starting heuristic may generate (when no starting schedule is given).
    pub start_schedules: u64,
    /// When set, the starting heuristic runs for this long instead (no schedule budget).
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
            start_schedules: 200,
            start_time: None,
            start_time_share: 0.2,
            patience: 2,
        }
    }
}

/// What one round did.
#[derive(Clone, Debug, PartialEq)]
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
    /// Wall time of the round.
    pub time: Duration,
}

/// The result of a run: the outcome, the starting makespan and one report per round.
#[derive(Clone, Debug)]
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
}

/// The odd-even driver around an inner solver. See the module docs.
pub struct OddEven {
    inner: Box<dyn Solver>,
    name: String,
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
            config,
        }
    }

    /// Runs the driver; the starting order is `limits.initial`'s, else the best schedule of a
    /// short `sgs` run.
    pub fn run(&self, problem: &Problem, limits: &Limits) -> Result<OddEvenReport, SolveError> {
        limits.validate(problem)?;
        if self.config.block == 0 || self.config.window_time_limit.is_zero() {
            return Err(SolveError::InvalidLimits {
                reason: "the block size and the window time limit must be positive".into(),
            });
        }
        let clock = limits.clock();
        let bound = if problem.len() <= bounds::ENERGETIC_MAX_ACTIVITIES {
            bounds::lower_bound(problem)
        } else {
            let cp = bounds::critical_path(problem);
            let en = bounds::energy(problem);
            if en.value > cp.value {
                en
            } else {
                cp
            }
        };
        if problem.len() <= 2 * self.config.block {
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
            return Ok(OddEvenReport {
                start_makespan,
                start_time: outcome.elapsed,
                outcome,
                rounds: Vec::new(),
                bound,
            });
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
        let mut rounds = Vec::new();
        let mut reason = StopReason::WorkLimit;
        let mut stale = 0;
        'rounds: for round in 1..=self.config.rounds {
            let began = Instant::now();
            let before = state.makespan;
            let (mut windows, mut improved) = (0, 0);
            for offset in [0, self.config.block] {
                if let Some(r) = clock.should_stop() {
                    reason = r;
                    rounds.push(report(round, &state, bound, windows, improved, began));
                    break 'rounds;
                }
                let (w, i) =
                    pool.install(|| self.pass(problem, &mut state, offset, limits, &clock));
                windows += w;
                improved += i;
            }
            rounds.push(report(round, &state, bound, windows, improved, began));
            if state.makespan <= bound.value {
                break;
            }
            stale = if state.makespan < before {
                0
            } else {
                stale + 1
            };
            if improved == 0 || stale >= self.config.patience {
                reason = StopReason::Exhausted;
                break;
            }
        }
        let outcome = verified(
            problem,
            Outcome::with_schedule(
                problem,
                Schedule::new(state.decoder.starts().to_vec()),
                bound.value,
                reason,
                &self.name,
                clock.elapsed(),
                rounds.len() as u64,
            ),
        )?;
        Ok(OddEvenReport {
            outcome,
            start_makespan,
            start_time,
            rounds,
            bound,
        })
    }

    /// The starting schedule: a short `sgs` run.
    fn start(
        &self,
        problem: &Problem,
        limits: &Limits,
        clock: &Clock,
    ) -> Result<Schedule, SolveError> {
        let (time_limit, budget) = match self.config.start_time {
            Some(t) => (Some(clock.remaining().map_or(t, |left| left.min(t))), None),
            None => (
                clock.share(self.config.start_time_share),
                Some(self.config.start_schedules),
            ),
        };
        let heuristic = Heuristic::new(HeuristicConfig {
            max_schedules: budget,
            ..HeuristicConfig::default()
        });
        let outcome = heuristic.solve(problem, &limits.helper(time_limit))?;
        outcome.schedule.ok_or_else(|| SolveError::Backend {
            solver: self.name.clone(),
            message: "the starting heuristic found no schedule that meets every deadline".into(),
        })
    }

    /// One pass at `offset`; returns (windows solved, windows whose change was kept).
    fn pass<'p>(
        &self,
        problem: &'p Problem,
        state: &mut State<'p>,
        offset: usize,
        limits: &Limits,
        clock: &Clock,
    ) -> (usize, usize) {
        let n = problem.len();
        let width = 2 * self.config.block;
        let ranges: Vec<(usize, usize)> = (offset..n)
            .step_by(width)
            .map(|a| (a, (a + width).min(n)))
            .filter(|(a, b)| b - a >= 2)
            .collect();
        let index = TimeIndex::new(problem, state.decoder.starts());
        let shared: &State<'_> = state;
        // A window starts only if its limit fits before the deadline with room left to combine
        // the answers, decode the order and check the result (measured on the last pass).
        let reserve = self.config.window_time_limit * 2 + state.finishing * 2;
        let moves: Vec<Option<Vec<(ActivityId, Time)>>> = ranges
            .par_iter()
            .map(|&(a, b)| {
                if clock.remaining().is_some_and(|left| left < reserve)
                    || clock.should_stop().is_some()
                {
                    return None;
                }
                Window::build(problem, shared, &index, a, b)?.solve(
                    self.inner.as_ref(),
                    limits,
                    self.config.window_time_limit,
                )
            })
            .collect();
        let moves: Vec<Vec<(ActivityId, Time)>> = moves.into_iter().flatten().collect();
        let began = Instant::now();
        let kept = state.apply(problem, &moves, 3);
        state.finishing = began.elapsed().max(Duration::from_millis(50));
        (ranges.len(), kept)
    }
}

fn report(
    round: usize,
    state: &State<'_>,
    bound: LowerBound,
    windows: usize,
    improved: usize,
    began: Instant,
) -> RoundReport {
    RoundReport {
        round,
        makespan: state.makespan,
        lower_bound: bound.value,
        windows,
        improved,
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
    use crate::generate::{training_step, TrainingStep};

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
