//! RCPSP with contention: activities that run slower while others run.
//!
//! On a GPU, a compute kernel beside a collective (NCCL takes SMs and memory bandwidth)
//! progresses `c` times slower. A [`ContendedProblem`] is a [`Problem`] whose activities each
//! have a [`Role`]: a *slowed* activity (compute) has the problem's duration as its work at
//! full speed, and while at least one *slowing* activity (a collective) runs it completes
//! only [`ContendedProblem::rate`] of [`RATE_UNITS`] work units per time unit, against
//! [`RATE_UNITS`] otherwise; it ends at the first whole time unit by which its work is done
//! and holds its resources until then. Slowing and plain activities keep their durations.
//! These are the event simulator's semantics of `concerto-graph` at one time unit per ns
//! (work in thousandths, the rate `round(1000 / c)`, ends rounded up to the unit), so a
//! simulated timeline is a schedule of the problem with the same makespan.
//!
//! A schedule is still one start per activity; the ends follow from the starts of the slowing
//! activities ([`ContendedProblem::ends`]). [`check_contended`] is the independent check:
//! it derives every end from the rate rule alone, then checks the problem with those
//! durations ([`ContendedProblem::realised`]) with [`check`]. Every schedule that breaks no
//! constraint with the durations slowed everywhere ([`ContendedProblem::worst_case`]) is a
//! schedule of the contended problem, and every contended schedule is one of the
//! contention-free [`ContendedProblem::problem`]; so that problem's lower bounds hold.
//!
//! A problem may also require starts at events ([`ContendedProblem::launched_at_events`]):
//! at 0, at the activity's release, or when an activity of positive duration ends, which is
//! when a GPU stream launches a kernel. Then the contended optimum is the best plan's simulated
//! makespan, not only a bound on it: a schedule may otherwise hold a collective back to a
//! time at which nothing ends, which no plan can. A worst-case schedule may break this rule.
//!
//! [`exhaustive`] enumerates every integer start vector up to a horizon: the reference the
//! exact contended models are tested against (exponential: for a handful of activities).
//!
//! Cost: [`ContendedProblem::ends`] is O(n log n + slowed x slowing intervals);
//! [`check_contended`] adds [`check`]'s cost.

use crate::check::{check, Violation, Violations};
use crate::problem::{Problem, ProblemBuilder, ProblemError, Time};
use crate::schedule::Schedule;
use crate::solver::{verified_by, Outcome, SolveError};

/// Work units per time unit at full speed.
pub const RATE_UNITS: u64 = 1000;

/// What contention does to an activity.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum Role {
    /// Neither slowed nor slowing.
    Plain,
    /// Progresses at [`ContendedProblem::rate`] while a slowing activity runs (compute).
    Slowed,
    /// Slows the slowed activities while it runs, at full speed itself (a collective).
    Slowing,
}

/// Why a contended problem cannot be built.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ContentionError {
    /// The roles do not give one role per activity.
    #[error("{roles} roles for {activities} activities: give one role per activity")]
    Roles {
        /// How many roles were given.
        roles: usize,
        /// How many activities the problem has.
        activities: usize,
    },
    /// The slowed rate is not in `1..=RATE_UNITS`.
    #[error("the slowed rate must be 1 to {RATE_UNITS} work units per time unit, got {rate}")]
    Rate {
        /// The rate given.
        rate: u64,
    },
    /// The contention factor is not a finite number of at least 1.
    #[error("the contention factor must be finite and at least 1, got {factor}")]
    Factor {
        /// The factor given.
        factor: f64,
    },
}

/// A [`Problem`] with contention (see the module docs).
#[derive(Clone, Debug)]
pub struct ContendedProblem {
    problem: Problem,
    roles: Vec<Role>,
    rate: u64,
    events: bool,
}

impl ContendedProblem {
    /// `problem` with one role per activity and the slowed `rate` in work units per time unit
    /// (out of [`RATE_UNITS`]).
    pub fn new(problem: Problem, roles: Vec<Role>, rate: u64) -> Result<Self, ContentionError> {
        if roles.len() != problem.len() {
            return Err(ContentionError::Roles {
                roles: roles.len(),
                activities: problem.len(),
            });
        }
        if !(1..=RATE_UNITS).contains(&rate) {
            return Err(ContentionError::Rate { rate });
        }
        Ok(Self {
            problem,
            roles,
            rate,
            events: false,
        })
    }

    /// `problem` with a contention factor `c` (slowed activities run `c` times slower): the
    /// rate `round(RATE_UNITS / c)`, at least 1, as the graph simulator rounds it.
    pub fn with_factor(
        problem: Problem,
        roles: Vec<Role>,
        factor: f64,
    ) -> Result<Self, ContentionError> {
        if !(factor.is_finite() && factor >= 1.0) {
            return Err(ContentionError::Factor { factor });
        }
        let rate = ((RATE_UNITS as f64 / factor).round() as u64).clamp(1, RATE_UNITS);
        Self::new(problem, roles, rate)
    }

    /// The problem whose activities start only at events: at 0, at their release, or when
    /// an activity of positive duration ends. A GPU stream launches a kernel only then (the
    /// simulator of `concerto-graph` advances from event to event), so every simulated
    /// timeline keeps the rule, and every schedule that keeps it is some plan's timeline
    /// (`StreamPlan::from_timed`). Without it a schedule may hold a collective back to an
    /// arbitrary time, which no plan can.
    pub fn launched_at_events(mut self) -> Self {
        self.events = true;
        self
    }

    /// Whether activities start only at events ([`Self::launched_at_events`]).
    pub fn at_events(&self) -> bool {
        self.events
    }

    /// The contention-free problem: the durations are the work at full speed.
    pub fn problem(&self) -> &Problem {
        &self.problem
    }

    /// The role of every activity.
    pub fn roles(&self) -> &[Role] {
        &self.roles
    }

    /// Work units a slowed activity completes per time unit beside a slowing one.
    pub fn rate(&self) -> u64 {
        self.rate
    }

    /// Whether contention can change a schedule: a slowed and a slowing activity of positive
    /// duration, and a rate below [`RATE_UNITS`].
    pub fn is_contended(&self) -> bool {
        let has = |role: Role| {
            self.problem
                .ids()
                .any(|a| self.roles[a.index()] == role && self.problem.duration(a) > 0)
        };
        self.rate < RATE_UNITS && has(Role::Slowed) && has(Role::Slowing)
    }

    /// The longest a slowed activity of work `duration` can take: slowed throughout,
    /// `ceil(duration * RATE_UNITS / rate)`; `None` past [`Time::MAX`].
    pub fn slowest(&self, duration: Time) -> Option<Time> {
        let units = u128::try_from(duration).ok()? * u128::from(RATE_UNITS);
        Time::try_from(units.div_ceil(u128::from(self.rate))).ok()
    }

    /// The end of every activity for `starts` (one per activity): `start + duration`, except
    /// for slowed activities, which end when their work is done at the rates the slowing
    /// activities' runs impose. `None` when `starts` has the wrong length or an end passes
    /// [`Time::MAX`].
    pub fn ends(&self, starts: &[Time]) -> Option<Vec<Time>> {
        if starts.len() != self.problem.len() {
            return None;
        }
        let busy = self.slowing_runs(starts)?;
        self.problem
            .ids()
            .map(|a| {
                let (s, d) = (starts[a.index()], self.problem.duration(a));
                match self.roles[a.index()] {
                    Role::Slowed => self.slowed_end(s, d, &busy),
                    _ => s.checked_add(d),
                }
            })
            .collect()
    }

    /// The sorted, merged intervals during which some slowing activity runs.
    fn slowing_runs(&self, starts: &[Time]) -> Option<Vec<(Time, Time)>> {
        let mut runs = Vec::new();
        for a in self.problem.ids() {
            let d = self.problem.duration(a);
            if self.roles[a.index()] == Role::Slowing && d > 0 {
                let s = starts[a.index()];
                runs.push((s, s.checked_add(d)?));
            }
        }
        runs.sort_unstable();
        let mut merged: Vec<(Time, Time)> = Vec::with_capacity(runs.len());
        for (a, b) in runs {
            match merged.last_mut() {
                Some(last) if a <= last.1 => last.1 = last.1.max(b),
                _ => merged.push((a, b)),
            }
        }
        Some(merged)
    }

    /// When work `duration` started at `start` is done, beside the slowing `busy` runs.
    fn slowed_end(&self, start: Time, duration: Time, busy: &[(Time, Time)]) -> Option<Time> {
        let full = u128::from(RATE_UNITS);
        let slow = u128::from(self.rate);
        let mut left = u128::try_from(duration).ok()? * full;
        let mut at = start;
        // Time units to do `left` at `rate`, and whether they fit before `until`.
        let finish = |at: Time, left: u128, rate: u128| -> Option<Time> {
            at.checked_add(Time::try_from(left.div_ceil(rate)).ok()?)
        };
        let first = busy.partition_point(|iv| iv.1 <= start);
        for &(a, b) in &busy[first..] {
            if left == 0 {
                break;
            }
            if a > at {
                let room = u128::try_from(a - at).ok()? * full;
                if left <= room {
                    return finish(at, left, full);
                }
                left -= room;
                at = a;
            }
            let room = u128::try_from(b - at).ok()? * slow;
            if left <= room {
                return finish(at, left, slow);
            }
            left -= room;
            at = b;
        }
        finish(at, left, full)
    }

    /// The problem with each activity's duration as it runs in `schedule` (slowed activities
    /// take their realised time): a schedule is valid for the contended problem exactly when
    /// it is valid for this one. `None` when `schedule` has the wrong length or an end
    /// overflows.
    pub fn realised(&self, schedule: &Schedule) -> Option<Problem> {
        let starts = schedule.starts();
        self.realised_with(starts, &self.ends(starts)?)
    }

    /// [`Self::realised`] with the `ends` of `starts` already known.
    fn realised_with(&self, starts: &[Time], ends: &[Time]) -> Option<Problem> {
        let durations: Vec<Time> = starts.iter().zip(ends).map(|(s, e)| e - s).collect();
        with_durations(&self.problem, &durations).ok()
    }

    /// The problem with every slowed activity slowed throughout ([`Self::slowest`]): each of
    /// its schedules is one of the contended problem, with ends no later.
    pub fn worst_case(&self) -> Result<Problem, ProblemError> {
        let durations: Vec<Time> = self
            .problem
            .ids()
            .map(|a| {
                let d = self.problem.duration(a);
                match self.roles[a.index()] {
                    Role::Slowed => self.slowest(d).unwrap_or(Time::MAX),
                    _ => d,
                }
            })
            .collect();
        with_durations(&self.problem, &durations)
    }
}

impl ContendedProblem {
    /// The activities that start between events ([`Self::launched_at_events`]) for `starts`
    /// and their `ends`; none unless the problem has the rule. O(n log n).
    fn between_events<'a>(
        &'a self,
        starts: &'a [Time],
        ends: &'a [Time],
    ) -> impl Iterator<Item = usize> + 'a {
        let mut events: Vec<Time> = starts
            .iter()
            .zip(ends)
            .filter(|(s, e)| e > s)
            .map(|(_, &e)| e)
            .collect();
        events.sort_unstable();
        let acts = self.problem.activities();
        (0..starts.len()).filter(move |&a| {
            let s = starts[a];
            self.events
                && ends.len() == starts.len()
                && s > 0
                && s != acts[a].release
                && events.binary_search(&s).is_err()
        })
    }
}

/// `problem` with other durations (same names, resources, demands, windows and precedences).
fn with_durations(problem: &Problem, durations: &[Time]) -> Result<Problem, ProblemError> {
    let mut b = ProblemBuilder::new();
    let resources: Vec<_> = problem
        .resources()
        .iter()
        .map(|r| b.resource(r.name.clone(), r.capacity))
        .collect();
    for (act, &d) in problem.activities().iter().zip(durations) {
        let a = b.activity(act.name.clone(), d);
        if act.release > 0 {
            b.release(a, act.release);
        }
        if let Some(deadline) = act.deadline {
            b.deadline(a, deadline);
        }
        for (r, &q) in resources.iter().zip(&act.demands) {
            if q > 0 {
                b.demand(a, *r, q);
            }
        }
    }
    for p in problem.precedences() {
        b.precedence_with_lag(p.from, p.to, p.lag);
    }
    b.build()
}

/// Checks `schedule` against every constraint of the contended problem and returns its
/// makespan, or every violation found: each end is derived from the rate rule alone (no
/// solver code), then the problem with those durations is checked by [`check`].
pub fn check_contended(
    problem: &ContendedProblem,
    schedule: &Schedule,
) -> Result<Time, Violations> {
    if schedule.len() != problem.problem.len() {
        // Missing or extra starts: the contention-free check names them.
        check(&problem.problem, schedule)?;
    }
    let ends = problem.ends(schedule.starts());
    match ends
        .as_deref()
        .and_then(|ends| Some((problem.realised_with(schedule.starts(), ends)?, ends)))
    {
        Some((realised, ends)) => {
            let checked = check(&realised, schedule);
            let between: Vec<Violation> = problem
                .between_events(schedule.starts(), ends)
                .map(|a| Violation::BetweenEvents {
                    activity: problem.problem.activities()[a].name.clone(),
                    start: schedule.starts()[a],
                })
                .collect();
            match (checked, between.is_empty()) {
                (Ok(m), true) => Ok(m),
                (Ok(_), false) => Err(Violations(between)),
                (Err(mut v), _) => {
                    v.0.extend(between);
                    Err(v)
                }
            }
        }
        None => {
            // An end past `Time::MAX`: name the first activity whose end overflows.
            let starts = schedule.starts();
            let busy = problem.slowing_runs(starts);
            let activity = problem
                .problem
                .ids()
                .find(|&a| {
                    let (s, d) = (starts[a.index()], problem.problem.duration(a));
                    match (&busy, problem.roles[a.index()]) {
                        (Some(busy), Role::Slowed) => problem.slowed_end(s, d, busy).is_none(),
                        _ => s.checked_add(d).is_none(),
                    }
                })
                .map_or_else(String::new, |a| problem.problem.activity(a).name.clone());
            let start = problem
                .problem
                .find(&activity)
                .map_or(0, |a| starts[a.index()]);
            Err(Violations(vec![Violation::FinishOverflow {
                activity,
                start,
            }]))
        }
    }
}

/// `outcome` of a contended solve, checked: its schedule passes [`check_contended`], its
/// makespan is the checked one and its bound is not above it.
pub fn verified_contended(
    problem: &ContendedProblem,
    outcome: Outcome,
) -> Result<Outcome, SolveError> {
    let (solver, reported) = (outcome.solver.clone(), outcome.makespan);
    verified_by(outcome, |s| {
        let makespan =
            check_contended(problem, s).map_err(|violations| SolveError::InvalidAnswer {
                solver: solver.clone(),
                violations,
            })?;
        if reported != Some(makespan) {
            return Err(SolveError::Backend {
                solver,
                message: format!(
                    "reports makespan {reported:?} for a schedule whose contended makespan is {makespan}"
                ),
            });
        }
        Ok(makespan)
    })
}

/// The best schedule of `problem` whose every start lies in `[release, horizon - duration]`,
/// by enumeration of those integer start vectors, with its makespan (checked with
/// [`check_contended`]); `None` when no such vector is a schedule. Every schedule of makespan
/// at most `horizon` is among them, so a result of makespan `horizon` or less is the
/// contended optimum (slowed activities may end past the horizon, so the best found can be
/// longer). Cost `O(horizon^n)` ends computations: for tests with a handful of activities and
/// a short horizon.
pub fn exhaustive(problem: &ContendedProblem, horizon: Time) -> Option<(Schedule, Time)> {
    let p = &problem.problem;
    let ranges: Vec<(Time, Time)> = p
        .activities()
        .iter()
        .map(|a| (a.release, horizon - a.duration))
        .collect();
    if ranges.iter().any(|(lo, hi)| lo > hi) {
        return None;
    }
    let mut starts: Vec<Time> = ranges.iter().map(|r| r.0).collect();
    let mut best: Option<(Vec<Time>, Time)> = None;
    loop {
        if let Some(m) = quick_makespan(problem, &starts) {
            if best.as_ref().is_none_or(|b| m < b.1) {
                best = Some((starts.clone(), m));
            }
        }
        // The next vector, odometer style.
        let mut i = 0;
        loop {
            if i == starts.len() {
                let (starts, m) = best?;
                let schedule = Schedule::new(starts);
                debug_assert_eq!(check_contended(problem, &schedule), Ok(m));
                return Some((schedule, m));
            }
            if starts[i] < ranges[i].1 {
                starts[i] += 1;
                break;
            }
            starts[i] = ranges[i].0;
            i += 1;
        }
    }
}

/// The makespan of `starts` if they are feasible (for [`exhaustive`]: precedences and, by a
/// per-unit load count, resources and deadlines), without building the realised problem.
fn quick_makespan(problem: &ContendedProblem, starts: &[Time]) -> Option<Time> {
    let p = &problem.problem;
    let ends = problem.ends(starts)?;
    for pr in p.precedences() {
        if starts[pr.to.index()] < ends[pr.from.index()] + pr.lag {
            return None;
        }
    }
    for a in p.ids() {
        if p.deadline(a).is_some_and(|d| ends[a.index()] > d) {
            return None;
        }
    }
    if problem.between_events(starts, &ends).next().is_some() {
        return None;
    }
    let makespan = ends.iter().copied().max().unwrap_or(0);
    for (r, res) in p.resources().iter().enumerate() {
        for t in 0..makespan {
            let load: u64 = p
                .ids()
                .filter(|a| starts[a.index()] <= t && t < ends[a.index()])
                .map(|a| u64::from(p.activity(a).demands[r]))
                .sum();
            if load > u64::from(res.capacity) {
                return None;
            }
        }
    }
    Some(makespan)
}

#[cfg(test)]
mod tests;
