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

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use rayon::prelude::*;

use crate::bounds::{self, LowerBound};
use crate::problem::{ActivityId, Problem, ProblemBuilder, ResourceId, Time};
use crate::schedule::Schedule;
use crate::search::{Heuristic, HeuristicConfig};
use crate::sgs::Decoder;
use crate::solver::{verified, Clock, Limits, Outcome, SolveError, Solver, StopReason};

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

/// The order by start time, each activity's position in it, its schedule, and the latest
/// starts that keep the makespan.
struct State<'p> {
    order: Vec<ActivityId>,
    position: Vec<usize>,
    rank: Vec<usize>,
    decoder: Decoder<'p>,
    makespan: Time,
    /// Without time windows: the order right-justified (serial SGS on the reversed problem,
    /// by decreasing finish) and shifted to end at the makespan; with time windows: the starts.
    latest: Vec<Time>,
    reversed: Option<Problem>,
    /// How long the last pass took to combine, decode and refresh (at least 50 ms).
    finishing: Duration,
}

impl<'p> State<'p> {
    /// The state whose order sorts `starts` (a valid schedule).
    fn new(problem: &'p Problem, starts: &[Time]) -> Self {
        let mut rank = vec![0; problem.len()];
        for (k, a) in problem.topological_order().iter().enumerate() {
            rank[a.index()] = k;
        }
        let mut state = Self {
            order: Vec::new(),
            position: vec![0; problem.len()],
            rank,
            decoder: Decoder::new(problem),
            makespan: 0,
            latest: Vec::new(),
            reversed: (!problem.has_time_windows()).then(|| problem.reversed()),
            finishing: Duration::from_millis(50),
        };
        state.order = state.sorted(problem, starts);
        state.makespan = state.decoder.serial(&state.order);
        state.refresh(problem);
        state
    }

    /// The activities by start, then finish, then topological rank, always
    /// precedence-feasible: windows solved side by side can move a predecessor later and its
    /// successor earlier, so combined start times are taken as priorities of a topological
    /// sort. For a valid schedule this is its start order, whose serial SGS starts no activity
    /// later.
    fn sorted(&self, problem: &Problem, starts: &[Time]) -> Vec<ActivityId> {
        let mut ranked: Vec<usize> = (0..problem.len()).collect();
        ranked.sort_unstable_by_key(|&k| {
            let s = starts[k];
            (s, s + problem.duration(ActivityId(k)), self.rank[k])
        });
        let mut priority = vec![0i64; ranked.len()];
        for (p, &k) in ranked.iter().enumerate() {
            priority[k] = p as i64;
        }
        crate::priority::list_from_priorities(problem, &priority)
    }

    /// Recomputes positions and latest starts after the schedule changed.
    fn refresh(&mut self, problem: &Problem) {
        for (k, a) in self.order.iter().enumerate() {
            self.position[a.index()] = k;
        }
        let starts = self.decoder.starts();
        let Some(reversed) = &self.reversed else {
            self.latest = starts.to_vec();
            return;
        };
        let mut list: Vec<ActivityId> = problem.ids().collect();
        let rank = &self.rank;
        list.sort_unstable_by_key(|a| {
            let s = starts[a.index()];
            (
                std::cmp::Reverse(s + problem.duration(*a)),
                std::cmp::Reverse(s),
                std::cmp::Reverse(rank[a.index()]),
            )
        });
        let mut backward = Decoder::new(reversed);
        backward.serial(&list);
        self.latest = problem
            .ids()
            .map(|a| self.makespan - backward.starts()[a.index()] - problem.duration(a))
            .collect();
    }

    /// Applies the windows' new starts together if the makespan does not get worse, else
    /// halves of them (up to `depth` levels); returns how many windows were kept.
    fn apply(
        &mut self,
        problem: &'p Problem,
        moves: &[Vec<(ActivityId, Time)>],
        depth: usize,
    ) -> usize {
        if moves.is_empty() {
            return 0;
        }
        let mut starts = self.decoder.starts().to_vec();
        for m in moves {
            for &(a, t) in m {
                starts[a.index()] = t;
            }
        }
        let candidate = self.sorted(problem, &starts);
        let makespan = self.decoder.serial(&candidate);
        if makespan <= self.makespan {
            // Sorting by the decoded schedule and decoding again starts nothing later.
            let decoded = self.decoder.starts().to_vec();
            self.order = self.sorted(problem, &decoded);
            self.makespan = self.decoder.serial(&self.order);
            debug_assert!(self.makespan <= makespan);
            self.refresh(problem);
            return moves.len();
        }
        // Restore the decoder's schedule of the current order.
        self.decoder.serial(&self.order);
        if depth == 0 || moves.len() == 1 {
            return 0;
        }
        let (first, second) = moves.split_at(moves.len() / 2);
        self.apply(problem, first, depth - 1) + self.apply(problem, second, depth - 1)
    }
}

/// Per resource, the activities sorted by start time, and the longest duration on it: the
/// activities that overlap an interval are found by binary search.
struct TimeIndex {
    by_start: Vec<Vec<(Time, ActivityId)>>,
    longest: Vec<Time>,
}

impl TimeIndex {
    fn new(problem: &Problem, starts: &[Time]) -> Self {
        let nr = problem.resources().len();
        let mut by_start = vec![Vec::new(); nr];
        let mut longest = vec![0; nr];
        for a in problem.ids() {
            for &(r, _) in problem.loads(a) {
                by_start[r.index()].push((starts[a.index()], a));
                longest[r.index()] = longest[r.index()].max(problem.duration(a));
            }
        }
        for list in &mut by_start {
            list.sort_unstable();
        }
        Self { by_start, longest }
    }

    /// Activities using `r` that may overlap `[from, until)` (a superset; the caller filters).
    fn candidates(&self, r: ResourceId, from: Time, until: Time) -> &[(Time, ActivityId)] {
        let list = &self.by_start[r.index()];
        let lo = list.partition_point(|&(s, _)| s < from - self.longest[r.index()]);
        let hi = list.partition_point(|&(s, _)| s < until);
        &list[lo..hi.max(lo)]
    }
}

/// A window's sub-problem and how to read its answer back.
struct Window {
    sub: Problem,
    members: Vec<ActivityId>,
    initial: Schedule,
    /// The sink's start in the initial schedule (what a new schedule must beat).
    current: Time,
    sink: ActivityId,
    base: Time,
    unit: Time,
}

impl Window {
    /// The sub-problem of positions `[a, b)` (see the module docs); `None` when coarse time
    /// leaves some activity no room.
    fn build(
        problem: &Problem,
        state: &State<'_>,
        index: &TimeIndex,
        a: usize,
        b: usize,
    ) -> Option<Self> {
        let starts = state.decoder.starts();
        let makespan = state.makespan;
        let members: Vec<ActivityId> = state.order[a..b].to_vec();
        let mut local = BTreeMap::new();
        for (k, &j) in members.iter().enumerate() {
            local.insert(j, k);
        }
        let finish = |j: ActivityId| starts[j.index()] + problem.duration(j);
        let base = members.iter().map(|&j| starts[j.index()]).min()?;
        let span = members.iter().map(|&j| finish(j)).max()? - base;
        let mut release = Vec::with_capacity(members.len());
        let mut deadline = Vec::with_capacity(members.len());
        let mut tail = Vec::with_capacity(members.len());
        for &j in &members {
            let outside = |arc: &&crate::problem::Arc| !local.contains_key(&arc.activity);
            let r = problem
                .predecessors(j)
                .iter()
                .filter(outside)
                .map(|arc| finish(arc.activity) + arc.lag)
                .max()
                .unwrap_or(0)
                .max(problem.release(j))
                .max(base);
            let mut d = (finish(j) + span).min(makespan);
            if let Some(g) = problem.deadline(j) {
                d = d.min(g);
            }
            let mut q: Time = 0;
            for arc in problem.successors(j).iter().filter(outside) {
                d = d.min(starts[arc.activity.index()] - arc.lag);
                q = q.max(arc.lag + makespan - state.latest[arc.activity.index()]);
            }
            release.push(r);
            deadline.push(d);
            tail.push(q);
        }
        let end = *deadline.iter().max()?;

        // Time unit: about RESOLUTION units across [base, end). Every time is floored: then
        // the current schedule, floored, satisfies every constraint of the sub-problem
        // (floor(s) + floor(d) <= floor(s + d)), so it is the warm start, and the sub-problem
        // is a relaxation; its answer is only used for its order.
        let unit = ((end - base) / RESOLUTION).max(1);
        let down = |t: Time| t.div_euclid(unit);
        let at = |j: ActivityId| down(starts[j.index()] - base);

        let mut builder = ProblemBuilder::new();
        let res: Vec<ResourceId> = problem
            .resources()
            .iter()
            .map(|r| builder.resource(r.name.clone(), r.capacity))
            .collect();
        let mut ids = Vec::with_capacity(members.len());
        let mut initial = Vec::new();
        for (k, &j) in members.iter().enumerate() {
            let id = builder.activity(format!("w{k}"), down(problem.duration(j)));
            builder.release(id, down(release[k] - base));
            builder.deadline(id, down(deadline[k] - base));
            for &(r, q) in problem.loads(j) {
                builder.demand(id, res[r.index()], q);
            }
            ids.push(id);
            initial.push(at(j));
        }
        // Everything outside that runs during [base, end) on the members' resources, pinned.
        let mut resources: Vec<ResourceId> = members
            .iter()
            .flat_map(|&j| problem.loads(j).iter().map(|&(r, _)| r))
            .collect();
        resources.sort_unstable();
        resources.dedup();
        let mut blockers: Vec<ActivityId> = resources
            .iter()
            .flat_map(|&r| index.candidates(r, base, end))
            .map(|&(_, f)| f)
            .filter(|&f| !local.contains_key(&f) && finish(f) > base && problem.duration(f) > 0)
            .collect();
        blockers.sort_unstable();
        blockers.dedup();
        let mut blocker_end: Time = 0;
        for (k, &f) in blockers.iter().enumerate() {
            // The part from `base` on, floored like everything else.
            let from = starts[f.index()].max(base) - base;
            let length = down(finish(f) - base - from);
            let id = builder.activity(format!("b{k}"), length);
            builder.release(id, down(from));
            builder.deadline(id, down(from) + length);
            for &(r, q) in problem.loads(f) {
                builder.demand(id, res[r.index()], q);
            }
            initial.push(down(from));
            blocker_end = blocker_end.max(down(from) + length);
        }
        // Tails: only those within a window's length of the largest can define the maximum.
        let shift = (tail.iter().copied().max().unwrap_or(0) - (end - base)).max(0);
        let sink = builder.activity("end", 0);
        let mut sink_start = blocker_end;
        for (k, &j) in members.iter().enumerate() {
            let lag = down((tail[k] - shift).max(0)) + blocker_end;
            builder.precedence_with_lag(ids[k], sink, lag);
            sink_start = sink_start.max(initial[k] + down(problem.duration(j)) + lag);
            for arc in problem.successors(j) {
                if let Some(&m) = local.get(&arc.activity) {
                    builder.precedence_with_lag(ids[k], ids[m], down(arc.lag));
                }
            }
        }
        initial.push(sink_start);
        let sub = builder.build().ok()?;
        let initial = Schedule::new(initial);
        debug_assert!(
            crate::check::check(&sub, &initial).is_ok(),
            "the floored current schedule satisfies the window"
        );
        Some(Window {
            current: sink_start,
            initial,
            sub,
            members,
            sink,
            base,
            unit,
        })
    }

    /// Solves the window; returns its members' new starts (real time) if the sink moved
    /// earlier.
    fn solve(
        &self,
        inner: &dyn Solver,
        limits: &Limits,
        window_limit: Duration,
    ) -> Option<Vec<(ActivityId, Time)>> {
        let time = window_limit;
        let outcome = inner
            .solve(
                &self.sub,
                &Limits {
                    time_limit: Some(time),
                    work_limit: None,
                    seed: limits.seed,
                    threads: 1,
                    initial: Some(self.initial.clone()),
                    upper_bound: None,
                    cancel: limits.cancel.clone(),
                },
            )
            // A window the inner solver cannot take (too large for its number types, say) is
            // left as it is.
            .ok()?;
        let schedule = outcome.schedule?;
        if schedule.start(self.sink) >= self.current {
            return None;
        }
        Some(
            self.members
                .iter()
                .enumerate()
                .map(|(k, &j)| (j, self.base + schedule.starts()[k] * self.unit))
                .collect(),
        )
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
