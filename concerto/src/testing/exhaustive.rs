//! An exact RCPSP solver by enumeration, the reference the conformance kit tests against.

use std::time::Instant;

use concerto_rcpsp::bounds::{critical_path, energy};
use concerto_rcpsp::{
    verified, ActivityId, Clock, Limits, Outcome, Problem, Schedule, SolveError, Solver, Status,
    StopReason, Time,
};

/// Exact RCPSP solver by enumeration of activity lists decoded by the serial
/// schedule-generation scheme (SGS), registered nowhere and named `exhaustive`: the reference
/// of [`assert_conforms`](super::assert_conforms) and, through
/// [`brute_force`](concerto_rcpsp::brute_force), of
/// [`assert_modal_conforms`](super::assert_modal_conforms). It shares no code with the
/// backends (nor with the SGS of `concerto-rcpsp`).
///
/// **What it does.** A depth-first search over precedence-feasible activity lists; each list
/// prefix is decoded as the serial SGS does (every activity at its earliest precedence- and
/// resource-feasible start given the activities before it), so a node is a partial schedule.
/// The makespan of a regular objective is minimised by some *active* schedule, and the serial
/// SGS generates every active schedule from its list sorted by start times (Kolisch, EJOR 90,
/// 1996); decoding that list, each activity lands exactly at its start in that schedule. So the
/// search keeps only lists whose decoded starts do not decrease, which loses no active
/// schedule, and it prunes a node when `max(lower bound of the problem, start + tail)` over
/// its placed activities reaches the incumbent (the tail of an activity is the longest path
/// from its start to the end of the project: its duration, then lags and durations of its
/// successors). It stops as soon as the incumbent meets the larger of the critical-path and
/// energy bounds ([`concerto_rcpsp::bounds`]).
///
/// **Cost.** Exponential: at most `n!` lists of `n` activities, each decoding step
/// `O(n^2 R)`; the pruning makes problems of up to a dozen activities take milliseconds.
/// Limits are honoured as by any solver: the time limit, the cancel flag and
/// [`Limits::work_limit`] (in search nodes) stop it with the best schedule so far;
/// [`Limits::upper_bound`] prunes everything longer (then [`Status::Infeasible`] means no
/// schedule within it); [`Limits::initial`] is the first incumbent.
///
/// **Scope.** Finish-to-start precedences with non-negative lags and release dates, which keep
/// the objective regular. An activity with a deadline makes the serial SGS incomplete: such a
/// problem is [`SolveError::Unsupported`], naming the activity.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Exhaustive;

impl Solver for Exhaustive {
    fn name(&self) -> &str {
        "exhaustive"
    }

    fn solve(&self, problem: &Problem, limits: &Limits) -> Result<Outcome, SolveError> {
        let began = Instant::now();
        let initial = limits.validate(problem)?;
        if let Some(a) = problem.activities().iter().find(|a| a.deadline.is_some()) {
            return Err(SolveError::Unsupported {
                solver: self.name().to_string(),
                reason: format!(
                    "activity `{}` has a deadline, and the serial SGS enumeration is complete only without deadlines",
                    a.name
                ),
            });
        }
        let clock = limits.clock();
        // The two O(activities + precedences) bounds: the stronger ones of `bounds` cost more
        // than a small search.
        let bound = critical_path(problem).value.max(energy(problem).value);
        let mut search = Search::new(problem, clock, limits.work_limit, bound);
        // Everything at or above `threshold` is pruned: the incumbent, or one past the upper
        // bound (a schedule of makespan exactly the bound is still wanted).
        search.threshold = limits
            .upper_bound
            .map_or(Time::MAX, |ub| ub.saturating_add(1));
        if let (Some(s), Some(m)) = (&limits.initial, initial) {
            if m < search.threshold {
                search.threshold = m;
                search.best = Some(s.starts().to_vec());
            }
        }
        let stopped = if search.best.is_some() && search.threshold <= bound {
            None
        } else {
            search.run()
        };
        let elapsed = began.elapsed();
        let outcome = match (search.best, stopped) {
            (Some(starts), None) => {
                let m = search.threshold;
                Outcome::with_schedule(
                    problem,
                    Schedule::new(starts),
                    m,
                    StopReason::Exhausted,
                    self.name(),
                    elapsed,
                    search.nodes,
                )
            }
            (Some(starts), Some(reason)) => Outcome::with_schedule(
                problem,
                Schedule::new(starts),
                bound,
                reason,
                self.name(),
                elapsed,
                search.nodes,
            ),
            (None, None) => Outcome {
                status: Status::Infeasible,
                schedule: None,
                makespan: None,
                lower_bound: search.threshold.max(bound),
                solver: self.name().to_string(),
                elapsed,
                work: search.nodes,
            },
            (None, Some(reason)) => Outcome {
                status: Status::Unknown(reason),
                schedule: None,
                makespan: None,
                lower_bound: bound,
                solver: self.name().to_string(),
                elapsed,
                work: search.nodes,
            },
        };
        verified(problem, outcome)
    }
}

/// Why the search ended early.
enum Halt {
    /// A limit (time, cancel, work) was reached.
    Limit(StopReason),
    /// The incumbent meets the lower bound.
    Optimal,
}

/// The depth-first search of [`Exhaustive`].
struct Search<'p> {
    problem: &'p Problem,
    clock: Clock,
    work_limit: Option<u64>,
    /// The problem's lower bound: an incumbent meeting it ends the search.
    bound: Time,
    /// Longest path from an activity's start to the project's end.
    tail: Vec<Time>,
    /// Starts of the placed activities (meaningful where `placed`).
    starts: Vec<Time>,
    placed: Vec<bool>,
    /// Placed activities, in list order.
    list: Vec<ActivityId>,
    /// Unplaced predecessors per activity.
    waiting: Vec<usize>,
    /// Incumbent makespan, or the pruning threshold from an upper bound.
    threshold: Time,
    best: Option<Vec<Time>>,
    nodes: u64,
}

impl<'p> Search<'p> {
    fn new(problem: &'p Problem, clock: Clock, work_limit: Option<u64>, bound: Time) -> Self {
        let n = problem.len();
        let mut tail = vec![0; n];
        for &a in problem.topological_order().iter().rev() {
            let after = problem
                .successors(a)
                .iter()
                .map(|arc| arc.lag + tail[arc.activity.index()])
                .max()
                .unwrap_or(0);
            tail[a.index()] = problem.duration(a) + after;
        }
        Self {
            problem,
            clock,
            work_limit,
            bound,
            tail,
            starts: vec![0; n],
            placed: vec![false; n],
            list: Vec::with_capacity(n),
            waiting: problem
                .ids()
                .map(|a| problem.predecessors(a).len())
                .collect(),
            threshold: Time::MAX,
            best: None,
            nodes: 0,
        }
    }

    /// Runs the search; `Some(reason)` when a limit stopped it before it finished.
    fn run(&mut self) -> Option<StopReason> {
        match self.descend(0, self.bound) {
            Ok(()) | Err(Halt::Optimal) => None,
            Err(Halt::Limit(reason)) => Some(reason),
        }
    }

    /// Extends the current prefix (its last start `last`, its pruning bound `reach`).
    fn descend(&mut self, last: Time, reach: Time) -> Result<(), Halt> {
        if self.work_limit.is_some_and(|w| self.nodes >= w) {
            return Err(Halt::Limit(StopReason::WorkLimit));
        }
        if let Some(reason) = self.clock.should_stop() {
            return Err(Halt::Limit(reason));
        }
        self.nodes += 1;
        let p = self.problem;
        if self.list.len() == p.len() {
            let makespan = p
                .ids()
                .map(|a| self.starts[a.index()] + p.duration(a))
                .max()
                .unwrap_or(0);
            if makespan < self.threshold {
                self.threshold = makespan;
                self.best = Some(self.starts.clone());
                if makespan <= self.bound {
                    return Err(Halt::Optimal);
                }
            }
            return Ok(());
        }
        // Children: every eligible activity at its serial-SGS start, earliest first.
        let mut children: Vec<(Time, ActivityId)> = p
            .ids()
            .filter(|a| !self.placed[a.index()] && self.waiting[a.index()] == 0)
            .map(|a| (self.earliest_fit(a), a))
            .filter(|&(t, a)| t >= last && reach.max(t + self.tail[a.index()]) < self.threshold)
            .collect();
        children.sort_unstable();
        for (t, a) in children {
            // The threshold may have dropped since the children were listed.
            let child_reach = reach.max(t + self.tail[a.index()]);
            if child_reach >= self.threshold {
                continue;
            }
            self.place(a, t);
            let result = self.descend(t, child_reach);
            self.unplace(a);
            result?;
        }
        Ok(())
    }

    fn place(&mut self, a: ActivityId, t: Time) {
        self.starts[a.index()] = t;
        self.placed[a.index()] = true;
        self.list.push(a);
        for arc in self.problem.successors(a) {
            self.waiting[arc.activity.index()] -= 1;
        }
    }

    fn unplace(&mut self, a: ActivityId) {
        self.placed[a.index()] = false;
        self.list.pop();
        for arc in self.problem.successors(a) {
            self.waiting[arc.activity.index()] += 1;
        }
    }

    /// The serial SGS start of `a` after the placed activities: the earliest time at or after
    /// its precedence-feasible start at which its demands fit for its whole duration.
    fn earliest_fit(&self, a: ActivityId) -> Time {
        let p = self.problem;
        let es = p
            .predecessors(a)
            .iter()
            .map(|arc| {
                let b = arc.activity;
                self.starts[b.index()] + p.duration(b) + arc.lag
            })
            .max()
            .unwrap_or(0)
            .max(p.release(a));
        if p.duration(a) == 0 || p.loads(a).is_empty() {
            return es;
        }
        // Resource usage only changes at finishes, so the earliest fit is `es` or a finish.
        let mut candidates: Vec<Time> = self
            .list
            .iter()
            .map(|&b| self.starts[b.index()] + p.duration(b))
            .filter(|&f| f > es)
            .collect();
        candidates.push(es);
        candidates.sort_unstable();
        candidates
            .into_iter()
            .find(|&t| self.fits(a, t))
            .expect("after the last finish nothing overlaps")
    }

    /// Whether `a` started at `t` fits the capacities next to the placed activities: usage is
    /// checked at `t` and at every placed start inside `(t, t + duration)`.
    fn fits(&self, a: ActivityId, t: Time) -> bool {
        let p = self.problem;
        let end = t + p.duration(a);
        let overlapping: Vec<ActivityId> = self
            .list
            .iter()
            .copied()
            .filter(|&b| {
                let (s, d) = (self.starts[b.index()], p.duration(b));
                d > 0 && s < end && t < s + d
            })
            .collect();
        let mut points = vec![t];
        points.extend(
            overlapping
                .iter()
                .map(|b| self.starts[b.index()])
                .filter(|&s| s > t),
        );
        p.loads(a).iter().all(|&(r, q)| {
            let capacity = p.resources()[r.index()].capacity;
            points.iter().all(|&point| {
                let used: u32 = overlapping
                    .iter()
                    .filter(|&&b| {
                        let s = self.starts[b.index()];
                        s <= point && point < s + p.duration(b)
                    })
                    .map(|&b| p.activity(b).demands[r.index()])
                    .sum();
                used + q <= capacity
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use concerto_rcpsp::{check, ProblemBuilder};
    use std::time::Duration;

    /// Capacity 2; three jobs of length 3 needing 1 and one needing 2: optimum 9 (the job
    /// needing 2 runs alone), against an energy bound of 8.
    fn packing() -> Problem {
        let mut b = ProblemBuilder::new();
        let r = b.resource("r", 2);
        for (i, q) in [1, 1, 1, 2].into_iter().enumerate() {
            let a = b.activity(format!("j{i}"), 3);
            b.demand(a, r, q);
        }
        b.build().expect("valid")
    }

    #[test]
    fn proves_the_optimum_above_the_energy_bound() {
        let p = packing();
        assert_eq!(energy(&p).value, 8);
        let o = Exhaustive.solve(&p, &Limits::default()).expect("solves");
        assert_eq!(o.status, Status::Optimal);
        assert_eq!((o.makespan, o.lower_bound), (Some(9), 9));
        assert_eq!(check(&p, o.schedule.as_ref().expect("a schedule")), Ok(9));
    }

    #[test]
    fn an_upper_bound_below_the_optimum_is_infeasible() {
        let p = packing();
        let o = Exhaustive
            .solve(
                &p,
                &Limits {
                    upper_bound: Some(8),
                    ..Limits::default()
                },
            )
            .expect("solves");
        assert_eq!(o.status, Status::Infeasible);
        assert_eq!(o.lower_bound, 9);
        let o = Exhaustive
            .solve(
                &p,
                &Limits {
                    upper_bound: Some(9),
                    ..Limits::default()
                },
            )
            .expect("solves");
        assert_eq!((o.status, o.makespan), (Status::Optimal, Some(9)));
    }

    #[test]
    fn lags_and_releases_shift_starts() {
        // a -> b with lag 5, c released at 1, all on one machine: a [0,2) c [2,6) b [7,9).
        let mut b = ProblemBuilder::new();
        let m = b.resource("m", 1);
        let x = b.activity("a", 2);
        let y = b.activity("b", 2);
        let z = b.activity("c", 4);
        for act in [x, y, z] {
            b.demand(act, m, 1);
        }
        b.precedence_with_lag(x, y, 5);
        b.release(z, 1);
        let p = b.build().expect("valid");
        let o = Exhaustive.solve(&p, &Limits::default()).expect("solves");
        assert_eq!((o.status, o.makespan), (Status::Optimal, Some(9)));
    }

    #[test]
    fn deadlines_are_unsupported_and_named() {
        let mut b = ProblemBuilder::new();
        let a = b.activity("due", 2);
        b.deadline(a, 5);
        let p = b.build().expect("valid");
        let e = Exhaustive.solve(&p, &Limits::default()).unwrap_err();
        assert!(e.to_string().contains("`due`"), "{e}");
    }

    #[test]
    fn a_work_limit_stops_it_with_a_schedule_or_none() {
        let p = super::super::hard::hard_instance();
        let limits = Limits {
            work_limit: Some(200),
            time_limit: Some(Duration::from_secs(30)),
            ..Limits::default()
        };
        let o = Exhaustive.solve(&p, &limits).expect("solves");
        assert_eq!(o.status.stop_reason(), Some(StopReason::WorkLimit));
        assert_eq!(o.work, 200);
    }
}
