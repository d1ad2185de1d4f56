//! The [`Solver`] trait shared by every backend, and what goes in and out of a solve.
//!
//! A solve takes a [`Problem`] and [`Limits`] and returns an [`Outcome`]: a [`Status`] (proven
//! optimal, feasible with the reason it stopped, infeasible, unknown), the best schedule found
//! and the best lower bound proven. Outcomes are not errors: running out of time is an
//! outcome. A [`SolveError`] is for a bad request (a zero time limit, an invalid starting
//! schedule) or a failing backend (including an answer that fails the independent
//! [`check`](crate::check)).

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::check::{check, Violations};
use crate::modal::ModalError;
use crate::problem::{Problem, Time};
use crate::schedule::Schedule;

/// A flag another thread can raise to stop a solve early; the solver then returns its best
/// schedule with [`StopReason::Cancelled`].
#[derive(Clone, Debug, Default)]
pub struct CancelFlag(Arc<AtomicBool>);

impl CancelFlag {
    /// A lowered flag.
    pub fn new() -> Self {
        Self::default()
    }

    /// Raises the flag.
    pub fn cancel(&self) {
        self.0.store(true, Ordering::Relaxed);
    }

    /// Whether the flag is raised.
    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }

    /// The shared atomic, for backends that poll it themselves.
    pub fn as_atomic(&self) -> &Arc<AtomicBool> {
        &self.0
    }
}

/// What a solve may use and start from.
///
/// # Determinism
/// With [`Limits::work_limit`](#structfield.work_limit) set and no time limit, the same
/// problem, limits and seed give the same [`Outcome`] (schedule, status, lower bound and
/// work) on any machine and under any load, for a fixed number of threads: every decision
/// of the solve is taken on counted work, never on the clock. A time limit given as well is a
/// safety net: the result is the same as long as it is not reached (a solve it stops says
/// [`StopReason::TimeLimit`]). Without a work budget, a solve that the clock stops depends on
/// the machine's speed and load. [`Limits::cancel`](#structfield.cancel) is never
/// deterministic.
///
/// Built from [`Limits::default`] (no limit, seed 0, one thread) with the setters:
///
/// ```
/// use std::time::Duration;
/// use concerto_rcpsp::{CancelFlag, Limits};
///
/// let cancel = CancelFlag::new();
/// let limits = Limits::default()
///     .time_limit(Duration::from_secs(10))
///     .work_limit(20_000)
///     .seed(7)
///     .threads(2)
///     .upper_bound(120)
///     .cancel(cancel.clone());
/// assert_eq!(limits.time_limit, Some(Duration::from_secs(10)));
/// assert_eq!((limits.work_limit, limits.seed, limits.threads), (Some(20_000), 7, 2));
/// assert_eq!(limits.upper_bound, Some(120));
/// cancel.cancel();
/// assert!(limits.cancel.is_some_and(|c| c.is_cancelled()));
/// ```
#[derive(Clone, Debug)]
pub struct Limits {
    /// Wall-clock budget. `None`: run until the solver's own criterion (proof, or a work
    /// budget in its configuration). Must not be zero.
    pub time_limit: Option<Duration>,
    /// A deterministic budget of work, in the solver's own unit, the one of
    /// [`Outcome::work`]: schedules generated for the `sgs` heuristic, conflicts for pumpkin
    /// (each worker of a portfolio gets the whole budget), branch-and-bound nodes for HiGHS
    /// and CBC (which do not report their node count: their work is 0; microlp has no such
    /// limit: it runs to its proof, which is deterministic), the windows' work for the
    /// odd-even driver. Reaching it stops the solve with
    /// [`StopReason::WorkLimit`] (see the determinism contract above). `None`: no budget.
    /// Must not be zero.
    pub work_limit: Option<u64>,
    /// Seed of every random choice. Same problem, limits and seed: same result (when the
    /// solve ends for a reason other than the clock).
    pub seed: u64,
    /// Worker threads the solver may use (at least 1).
    pub threads: usize,
    /// A schedule to start from (a warm start / initial incumbent). It must pass
    /// [`check`](crate::check).
    pub initial: Option<Schedule>,
    /// A makespan known to be achievable: the solver may discard everything longer. With it,
    /// [`Status::Infeasible`] means "no schedule of makespan at most this bound".
    pub upper_bound: Option<Time>,
    /// Cooperative cancellation.
    pub cancel: Option<CancelFlag>,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            time_limit: None,
            work_limit: None,
            seed: 0,
            threads: 1,
            initial: None,
            upper_bound: None,
            cancel: None,
        }
    }
}

impl Limits {
    /// Default limits with a time limit.
    pub fn with_time_limit(time_limit: Duration) -> Self {
        Self {
            time_limit: Some(time_limit),
            ..Self::default()
        }
    }

    /// Sets the wall-clock budget (see [`Limits::time_limit`](#structfield.time_limit)).
    pub fn time_limit(mut self, time_limit: Duration) -> Self {
        self.time_limit = Some(time_limit);
        self
    }

    /// Sets the deterministic work budget (see [`Limits::work_limit`](#structfield.work_limit)).
    pub fn work_limit(mut self, work_limit: u64) -> Self {
        self.work_limit = Some(work_limit);
        self
    }

    /// Sets the seed.
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// Sets the number of worker threads (0 is rejected by [`Limits::validate`]).
    pub fn threads(mut self, threads: usize) -> Self {
        self.threads = threads;
        self
    }

    /// Sets the starting schedule.
    pub fn initial(mut self, schedule: Schedule) -> Self {
        self.initial = Some(schedule);
        self
    }

    /// Sets a makespan known to be achievable (see
    /// [`Limits::upper_bound`](#structfield.upper_bound)).
    pub fn upper_bound(mut self, upper_bound: Time) -> Self {
        self.upper_bound = Some(upper_bound);
        self
    }

    /// Sets the cancel flag.
    pub fn cancel(mut self, cancel: CancelFlag) -> Self {
        self.cancel = Some(cancel);
        self
    }

    /// Checks the limits against `problem`: a zero time limit, a zero work budget, zero
    /// threads or an invalid starting schedule is an error. Returns the starting schedule's
    /// makespan, if any.
    pub fn validate(&self, problem: &Problem) -> Result<Option<Time>, SolveError> {
        if self.time_limit == Some(Duration::ZERO) {
            return Err(SolveError::ZeroTimeLimit);
        }
        if self.work_limit == Some(0) {
            return Err(SolveError::InvalidLimits {
                reason: "the work limit must be positive, got 0".into(),
            });
        }
        if self.threads == 0 {
            return Err(SolveError::InvalidLimits {
                reason: "threads must be at least 1".into(),
            });
        }
        match &self.initial {
            None => Ok(None),
            Some(s) => check(problem, s)
                .map(Some)
                .map_err(|violations| SolveError::InvalidInitial { violations }),
        }
    }

    /// The limits of a helper solve inside this one (a starting heuristic, a sub-problem):
    /// the same seed, cancel flag and work budget, one thread, no starting schedule or upper
    /// bound, and `time_limit`.
    ///
    /// The work budget passes on because a sub-problem solved by a solver of the same kind
    /// (the reduced problems of [`crate::brute_force`]) may spend at most the caller's
    /// budget, in the same unit. A helper that counts another unit (the `sgs` start of a CP
    /// search counts schedules, the search conflicts) has its own budget: the caller clears
    /// the field (`Limits { work_limit: None, ..limits.helper(t) }`). Under a work budget,
    /// pass [`Clock::share`] as `time_limit`: it is then the whole time left, a safety net,
    /// not a share that the machine's speed would turn into a decision.
    pub fn helper(&self, time_limit: Option<Duration>) -> Limits {
        Limits {
            time_limit,
            work_limit: self.work_limit,
            seed: self.seed,
            threads: 1,
            initial: None,
            upper_bound: None,
            cancel: self.cancel.clone(),
        }
    }

    /// A clock for this solve: the deadline and the cancel flag, and whether a work budget
    /// makes the solve deterministic (see [`Clock::share`]).
    pub fn clock(&self) -> Clock {
        Clock {
            start: Instant::now(),
            deadline: self.time_limit.map(|d| Instant::now() + d),
            cancel: self.cancel.clone(),
            deterministic: self.work_limit.is_some(),
        }
    }
}

/// The deadline and cancel flag of a running solve.
#[derive(Clone, Debug)]
pub struct Clock {
    start: Instant,
    deadline: Option<Instant>,
    cancel: Option<CancelFlag>,
    /// Under a work budget: the deadline is a safety net only.
    deterministic: bool,
}

impl Clock {
    /// Why the solve must stop now, if it must.
    pub fn should_stop(&self) -> Option<StopReason> {
        if self.cancel.as_ref().is_some_and(CancelFlag::is_cancelled) {
            return Some(StopReason::Cancelled);
        }
        match self.deadline {
            Some(d) if Instant::now() >= d => Some(StopReason::TimeLimit),
            _ => None,
        }
    }

    /// Time left before the deadline (`None` without one).
    pub fn remaining(&self) -> Option<Duration> {
        self.deadline
            .map(|d| d.saturating_duration_since(Instant::now()))
    }

    /// `share` (clamped to `[0, 1]`) of the time left, at least 1 ms so that it is a valid
    /// time limit (`None` without a deadline).
    ///
    /// Under a work budget ([`Limits::work_limit`](Limits#structfield.work_limit)) the whole
    /// time left: a share of the time is a decision the machine's speed would take, and a
    /// deterministic solve takes none; the deadline stays a safety net.
    pub fn share(&self, share: f64) -> Option<Duration> {
        let share = if self.deterministic { 1.0 } else { share };
        self.remaining().map(|left| {
            left.mul_f64(share.clamp(0.0, 1.0))
                .max(Duration::from_millis(1))
        })
    }

    /// How long ago the deadline passed (`None` without a deadline or before it).
    pub fn overdue(&self) -> Option<Duration> {
        self.deadline
            .and_then(|d| Instant::now().checked_duration_since(d))
    }

    /// Time since the solve started.
    pub fn elapsed(&self) -> Duration {
        self.start.elapsed()
    }

    /// The whole time limit, from the start to the deadline (`None` without a deadline).
    pub fn limit(&self) -> Option<Duration> {
        self.deadline
            .map(|d| d.saturating_duration_since(self.start))
    }
}

/// Why a solve stopped without a proof.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "kebab-case"))]
#[non_exhaustive]
pub enum StopReason {
    /// The time limit was reached.
    TimeLimit,
    /// The cancel flag was raised.
    Cancelled,
    /// A work budget of the solver's configuration (schedules, nodes, conflicts) ran out.
    WorkLimit,
    /// The relative gap between the best schedule and the bound reached the requested one.
    GapLimit,
    /// The solver has no way to prove more (a heuristic that finished its search).
    Exhausted,
}

impl StopReason {
    /// A short lowercase name for reports.
    pub fn as_str(self) -> &'static str {
        match self {
            StopReason::TimeLimit => "time-limit",
            StopReason::Cancelled => "cancelled",
            StopReason::WorkLimit => "work-limit",
            StopReason::GapLimit => "gap-limit",
            StopReason::Exhausted => "exhausted",
        }
    }
}

/// What a solve established.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "kebab-case"))]
#[non_exhaustive]
pub enum Status {
    /// The schedule's makespan equals the proven lower bound.
    Optimal,
    /// A schedule was found; optimality is not proven.
    Feasible(StopReason),
    /// Proven: no schedule exists (within [`Limits::upper_bound`] when one was given).
    Infeasible,
    /// Nothing was established: no schedule found, no infeasibility proof.
    Unknown(StopReason),
}

impl Status {
    /// `optimal`, `feasible`, `infeasible` or `unknown`.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Optimal => "optimal",
            Status::Feasible(_) => "feasible",
            Status::Infeasible => "infeasible",
            Status::Unknown(_) => "unknown",
        }
    }

    /// Why the solve stopped, for `Feasible` and `Unknown`.
    pub fn stop_reason(self) -> Option<StopReason> {
        match self {
            Status::Feasible(r) | Status::Unknown(r) => Some(r),
            _ => None,
        }
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.stop_reason() {
            Some(r) => write!(f, "{} ({})", self.as_str(), r.as_str()),
            None => f.write_str(self.as_str()),
        }
    }
}

/// The result of a solve.
#[derive(Clone, Debug)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Outcome {
    /// What was established.
    pub status: Status,
    /// The best schedule found (`Some` exactly for `Optimal` and `Feasible`).
    pub schedule: Option<Schedule>,
    /// Its makespan.
    pub makespan: Option<Time>,
    /// The best lower bound proven on the optimal makespan.
    pub lower_bound: Time,
    /// The name the solver is registered under.
    pub solver: String,
    /// Wall time of the solve.
    pub elapsed: Duration,
    /// Work done, in the solver's own unit, the one of
    /// [`Limits::work_limit`](Limits#structfield.work_limit): schedules generated (`sgs`),
    /// conflicts (pumpkin, all workers of a portfolio together), branch-and-bound nodes (the
    /// MILPs), the windows' work (the odd-even driver). Deterministic under a work budget.
    pub work: u64,
}

impl Outcome {
    /// An outcome with a schedule: `Optimal` when its makespan meets `lower_bound`, else
    /// `Feasible(reason)`.
    pub fn with_schedule(
        problem: &Problem,
        schedule: Schedule,
        lower_bound: Time,
        reason: StopReason,
        solver: &str,
        elapsed: Duration,
        work: u64,
    ) -> Self {
        let makespan = schedule.makespan(problem);
        Self {
            status: if makespan == lower_bound {
                Status::Optimal
            } else {
                Status::Feasible(reason)
            },
            schedule: Some(schedule),
            makespan: Some(makespan),
            lower_bound,
            solver: solver.to_owned(),
            elapsed,
            work,
        }
    }

    /// The relative gap `(makespan - lower bound) / makespan`, if there is a schedule.
    pub fn gap(&self) -> Option<f64> {
        self.makespan.map(|m| {
            if m == 0 {
                0.0
            } else {
                (m - self.lower_bound) as f64 / m as f64
            }
        })
    }
}

/// Why a solve could not run or its answer cannot be trusted.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SolveError {
    /// A time limit of zero leaves no time to do anything.
    #[error("the time limit must be positive, got 0")]
    ZeroTimeLimit,
    /// Limits that make no sense (zero threads, a negative value).
    #[error("invalid limits: {reason}")]
    InvalidLimits {
        /// What is wrong.
        reason: String,
    },
    /// The starting schedule breaks the problem.
    #[error("the initial schedule is invalid: {violations}")]
    InvalidInitial {
        /// What it breaks.
        violations: Violations,
    },
    /// The solver cannot take this problem (too large for its number type, a feature it lacks).
    #[error("solver `{solver}` cannot solve this problem: {reason}")]
    Unsupported {
        /// The solver.
        solver: String,
        /// Why.
        reason: String,
    },
    /// The backend failed.
    #[error("solver `{solver}` failed: {message}")]
    Backend {
        /// The solver.
        solver: String,
        /// The backend's message.
        message: String,
    },
    /// The backend claims a lower bound above a schedule it found: a bug, never a result.
    #[error(
        "solver `{solver}` claims lower bound {lower_bound} above its own makespan {makespan}"
    )]
    InconsistentBound {
        /// The solver.
        solver: String,
        /// The bound claimed.
        lower_bound: Time,
        /// The makespan of its schedule.
        makespan: Time,
    },
    /// The backend returned a schedule that fails the independent check: a bug, never a
    /// result.
    #[error("solver `{solver}` returned an invalid schedule: {violations}")]
    InvalidAnswer {
        /// The solver.
        solver: String,
        /// What the schedule breaks.
        violations: Violations,
    },
    /// The starting modal solution fails [`check_modal`](crate::check_modal).
    #[error("the initial modal solution is invalid: {source}")]
    InvalidModalInitial {
        /// What it breaks.
        source: ModalError,
    },
    /// A modal solver returned a solution that fails [`check_modal`](crate::check_modal): a
    /// bug, never a result.
    #[error("solver `{solver}` returned an invalid modal solution: {source}")]
    InvalidModalAnswer {
        /// The solver.
        solver: String,
        /// What the solution breaks.
        source: ModalError,
    },
}

/// An exact or heuristic RCPSP solver.
///
/// Implementations must: validate the limits ([`Limits::validate`]); stop at the time limit or
/// when cancelled and return the best schedule found with the best bound proven; never return
/// a schedule that fails [`check`](crate::check) (use [`verified`] before returning); be
/// deterministic for a seed when not stopped by the clock.
pub trait Solver: Send + Sync {
    /// The name the solver is registered under (`sgs`, `pumpkin`, `highs`, ...).
    fn name(&self) -> &str;

    /// Solves `problem` within `limits`.
    fn solve(&self, problem: &Problem, limits: &Limits) -> Result<Outcome, SolveError>;
}

/// Runs the independent check on an outcome's schedule: an invalid schedule becomes
/// [`SolveError::InvalidAnswer`], a bound above the makespan
/// [`SolveError::InconsistentBound`]. Every solver passes its outcome through this before
/// returning it.
pub fn verified(problem: &Problem, outcome: Outcome) -> Result<Outcome, SolveError> {
    let solver = outcome.solver.clone();
    verified_by(outcome, |s| {
        check(problem, s).map_err(|violations| SolveError::InvalidAnswer { solver, violations })
    })
}

/// `outcome`, checked: its schedule's makespan by `check` (which errors on a schedule it
/// refuses), and the lower bound not above it. What [`verified`] and
/// [`verified_contended`](crate::verified_contended) share.
pub(crate) fn verified_by(
    outcome: Outcome,
    check: impl FnOnce(&Schedule) -> Result<Time, SolveError>,
) -> Result<Outcome, SolveError> {
    if let Some(s) = &outcome.schedule {
        let makespan = check(s)?;
        if outcome.lower_bound > makespan {
            return Err(SolveError::InconsistentBound {
                solver: outcome.solver.clone(),
                lower_bound: outcome.lower_bound,
                makespan,
            });
        }
    }
    Ok(outcome)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_helper_keeps_seed_cancel_flag_and_work_budget_and_nothing_else() {
        let cancel = CancelFlag::new();
        let limits = Limits {
            time_limit: Some(Duration::from_secs(9)),
            work_limit: Some(300),
            seed: 42,
            threads: 4,
            initial: Some(Schedule::new(vec![0])),
            upper_bound: Some(7),
            cancel: Some(cancel.clone()),
        };
        let helper = limits.helper(Some(Duration::from_millis(5)));
        assert_eq!(helper.time_limit, Some(Duration::from_millis(5)));
        assert_eq!((helper.seed, helper.threads), (42, 1));
        assert_eq!(helper.work_limit, Some(300));
        assert!(helper.initial.is_none() && helper.upper_bound.is_none());
        cancel.cancel();
        assert!(helper.cancel.expect("kept").is_cancelled());
    }

    #[test]
    fn a_share_of_the_clock_is_a_valid_time_limit() {
        let clock = Limits::with_time_limit(Duration::from_secs(10)).clock();
        let share = clock.share(0.1).expect("a deadline");
        assert!(share <= Duration::from_secs(1) && share > Duration::from_millis(900));
        assert_eq!(clock.share(0.0), Some(Duration::from_millis(1)));
        assert!(clock.share(7.0).expect("clamped") <= Duration::from_secs(10));
        assert_eq!(Limits::default().clock().share(0.5), None);
        // Under a work budget the deadline is a safety net: no share of it decides anything.
        let clock = Limits::with_time_limit(Duration::from_secs(10))
            .work_limit(5)
            .clock();
        assert!(clock.share(0.1).expect("a deadline") > Duration::from_secs(9));
    }

    #[test]
    fn a_zero_work_limit_is_an_error() {
        let mut b = crate::ProblemBuilder::new();
        b.activity("a", 1);
        let problem = b.build().expect("valid");
        let err = Limits::default()
            .work_limit(0)
            .validate(&problem)
            .expect_err("zero work");
        assert!(err.to_string().contains("work limit"), "{err}");
    }

    #[cfg(feature = "serde")]
    #[test]
    fn an_outcome_round_trips_through_json() {
        use crate::generate::{project, Project};
        let problem = project(&Project::with_size(30, 2));
        let outcome = crate::Heuristic::default()
            .solve(&problem, &Limits::default().work_limit(300).seed(1))
            .expect("solves");
        assert_eq!(outcome.status, Status::Feasible(StopReason::WorkLimit));
        let text = serde_json::to_string(&outcome).expect("serialises");
        assert!(
            text.contains(r#""status":{"feasible":"work-limit"}"#),
            "{text}"
        );
        let back: Outcome = serde_json::from_str(&text).expect("deserialises");
        assert_eq!(back.schedule, outcome.schedule);
        assert_eq!(back.status, outcome.status);
        assert_eq!(
            (back.makespan, back.lower_bound, back.work),
            (outcome.makespan, outcome.lower_bound, outcome.work)
        );
        assert_eq!(
            (back.solver, back.elapsed),
            (outcome.solver, outcome.elapsed)
        );
        // The schedule is the list of its start times.
        let starts = serde_json::to_string(outcome.schedule.as_ref().unwrap().starts()).unwrap();
        assert!(text.contains(&format!(r#""schedule":{starts}"#)), "{text}");
        for status in [
            Status::Optimal,
            Status::Infeasible,
            Status::Unknown(StopReason::Cancelled),
        ] {
            let text = serde_json::to_string(&status).unwrap();
            assert_eq!(
                serde_json::from_str::<Status>(&text).unwrap(),
                status,
                "{text}"
            );
        }
    }
}
