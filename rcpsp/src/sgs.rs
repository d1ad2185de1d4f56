//! Schedule-generation schemes (SGS): turn an activity list or priority values into a
//! schedule.
//!
//! - **Serial SGS** (Kelley 1963): take the activities in list order and start each one at the
//!   earliest time that its predecessors (finish plus lag) and the resources allow. Generates
//!   active schedules, among which an optimal one always is. Cost `O(n (p + F))`, `p` the
//!   predecessors per activity and `F` the cost of finding a fit in the resource profile
//!   (a time-indexed array for short horizons with short activities: `O(d)` per attempt; an
//!   ordered step function otherwise: `O(log s + k)` for the `k` steps under the activity).
//! - **Parallel SGS** (Brooks' algorithm, Kelley 1963; the form of Kolisch, EJOR 90, 1996):
//!   advance time over decision points (finishes and release times); at each, start the
//!   eligible activities in priority order while they fit. Generates non-delay schedules,
//!   which are often better for large problems but may exclude every optimum.
//!
//! An activity list must be precedence-feasible (every predecessor listed before its
//! successors); [`ActivityList::new`] checks it.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use crate::problem::{ActivityId, Problem, Time};
use crate::profile::{AnyProfile, Profile};
use crate::schedule::Schedule;

/// Why a list of activities is not a precedence-feasible activity list.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ListError {
    /// The list's length differs from the number of activities.
    #[error("the list has {got} entries but the problem has {expected} activities")]
    Length {
        /// Entries in the list.
        got: usize,
        /// Activities in the problem.
        expected: usize,
    },
    /// An id in the list is out of range.
    #[error("the list contains {id}, but the problem has {activities} activities")]
    OutOfRange {
        /// The id.
        id: ActivityId,
        /// Activities in the problem.
        activities: usize,
    },
    /// An activity appears twice.
    #[error("activity `{activity}` appears twice in the list")]
    Repeated {
        /// The activity's name.
        activity: String,
    },
    /// A successor is listed before one of its predecessors.
    #[error("`{successor}` is listed before its predecessor `{predecessor}`")]
    Order {
        /// The predecessor.
        predecessor: String,
        /// The successor listed too early.
        successor: String,
    },
}

/// A precedence-feasible permutation of a problem's activities.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ActivityList(Vec<ActivityId>);

impl ActivityList {
    /// Checks that `order` is a permutation of the activities in which every predecessor
    /// comes before its successors. Cost `O(n + m)`.
    pub fn new(problem: &Problem, order: Vec<ActivityId>) -> Result<Self, ListError> {
        let n = problem.len();
        if order.len() != n {
            return Err(ListError::Length {
                got: order.len(),
                expected: n,
            });
        }
        let mut position = vec![usize::MAX; n];
        for (k, &a) in order.iter().enumerate() {
            if a.index() >= n {
                return Err(ListError::OutOfRange {
                    id: a,
                    activities: n,
                });
            }
            if position[a.index()] != usize::MAX {
                return Err(ListError::Repeated {
                    activity: problem.activity(a).name.clone(),
                });
            }
            position[a.index()] = k;
        }
        for p in problem.precedences() {
            if position[p.from.index()] > position[p.to.index()] {
                return Err(ListError::Order {
                    predecessor: problem.activity(p.from).name.clone(),
                    successor: problem.activity(p.to).name.clone(),
                });
            }
        }
        Ok(Self(order))
    }

    /// The activities in list order.
    pub fn as_slice(&self) -> &[ActivityId] {
        &self.0
    }

    /// Consumes the list, returning its activities.
    pub fn into_inner(self) -> Vec<ActivityId> {
        self.0
    }
}

/// Serial SGS over a checked activity list. See the module docs.
pub fn serial(problem: &Problem, list: &ActivityList) -> Schedule {
    let mut d = Decoder::new(problem);
    d.serial(list.as_slice());
    d.schedule()
}

/// Parallel SGS: at each decision point, eligible activities are started in increasing order
/// of `priority` (ties by index) while they fit. `priority` is indexed by activity.
///
/// # Panics
/// If `priority.len() != problem.len()`.
pub fn parallel(problem: &Problem, priority: &[i64]) -> Schedule {
    let mut d = Decoder::new(problem);
    d.parallel(priority);
    d.schedule()
}

/// Reusable state for decoding many lists of one problem without reallocating: what a
/// metaheuristic calls in its inner loop.
///
/// ```
/// use concerto_rcpsp::sgs::{ActivityList, Decoder};
/// use concerto_rcpsp::ProblemBuilder;
///
/// let mut b = ProblemBuilder::new();
/// let r = b.resource("r", 1);
/// let x = b.activity("x", 2);
/// let y = b.activity("y", 3);
/// b.demand(x, r, 1);
/// b.demand(y, r, 1);
/// let problem = b.build()?;
/// let mut decoder = Decoder::new(&problem);
/// let list = ActivityList::new(&problem, vec![y, x])?;
/// assert_eq!(decoder.decode(&list), 5);
/// assert_eq!(decoder.starts(), &[3, 0]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
pub struct Decoder<'p> {
    problem: &'p Problem,
    profile: AnyProfile,
    starts: Vec<Time>,
    makespan: Time,
    // Parallel SGS scratch.
    waiting: Vec<usize>,
    release: Vec<Time>,
}

impl<'p> Decoder<'p> {
    /// A decoder for `problem`; allocates its resource profile once.
    pub fn new(problem: &'p Problem) -> Self {
        Self {
            problem,
            profile: AnyProfile::for_problem(problem),
            starts: vec![0; problem.len()],
            makespan: 0,
            waiting: vec![0; problem.len()],
            release: vec![0; problem.len()],
        }
    }

    /// The start times of the last decoded schedule.
    #[inline]
    pub fn starts(&self) -> &[Time] {
        &self.starts
    }

    /// The makespan of the last decoded schedule.
    #[inline]
    pub fn makespan(&self) -> Time {
        self.makespan
    }

    /// The last decoded schedule.
    pub fn schedule(&self) -> Schedule {
        Schedule::new(self.starts.clone())
    }

    /// Serial SGS over a checked activity list; returns the makespan.
    pub fn decode(&mut self, list: &ActivityList) -> Time {
        self.serial(list.as_slice())
    }

    /// Parallel SGS with priority values (smaller first, ties by index); returns the makespan.
    ///
    /// # Panics
    /// If `priority` does not have one value per activity.
    pub fn decode_parallel(&mut self, priority: &[i64]) -> Time {
        self.parallel(priority)
    }

    /// Serial SGS over a precedence-feasible list; returns the makespan.
    pub(crate) fn serial(&mut self, list: &[ActivityId]) -> Time {
        match &mut self.profile {
            AnyProfile::Indexed(p) => serial_with(self.problem, p, list, &mut self.starts, &mut self.makespan),
            AnyProfile::Steps(p) => serial_with(self.problem, p, list, &mut self.starts, &mut self.makespan),
        }
        self.makespan
    }

    /// Parallel SGS with priority values (smaller first); returns the makespan.
    pub(crate) fn parallel(&mut self, priority: &[i64]) -> Time {
        assert_eq!(priority.len(), self.problem.len(), "one priority per activity");
        let Self {
            problem,
            profile,
            starts,
            makespan,
            waiting,
            release,
        } = self;
        match profile {
            AnyProfile::Indexed(p) => parallel_with(problem, p, priority, starts, makespan, waiting, release),
            AnyProfile::Steps(p) => parallel_with(problem, p, priority, starts, makespan, waiting, release),
        }
        self.makespan
    }
}

fn serial_with<P: Profile>(
    problem: &Problem,
    profile: &mut P,
    list: &[ActivityId],
    starts: &mut [Time],
    makespan: &mut Time,
) {
    profile.clear();
    let mut end = 0;
    for &j in list {
        let release = problem
            .predecessors(j)
            .iter()
            .map(|arc| starts[arc.activity.index()] + problem.duration(arc.activity) + arc.lag)
            .max()
            .unwrap_or(0);
        let d = problem.duration(j);
        let loads = problem.loads(j);
        let t = if loads.is_empty() {
            release
        } else {
            profile.earliest_fit(loads, d, release)
        };
        profile.add(loads, t, d);
        starts[j.index()] = t;
        end = end.max(t + d);
    }
    *makespan = end;
}

fn parallel_with<P: Profile>(
    problem: &Problem,
    profile: &mut P,
    priority: &[i64],
    starts: &mut [Time],
    makespan: &mut Time,
    waiting: &mut [usize],
    release: &mut [Time],
) {
    profile.clear();
    let n = problem.len();
    // Eligible: every predecessor started (its finish, hence the release, is known).
    let mut eligible: Vec<ActivityId> = Vec::new();
    for j in problem.ids() {
        waiting[j.index()] = problem.predecessors(j).len();
        release[j.index()] = 0;
        if waiting[j.index()] == 0 {
            eligible.push(j);
        }
    }
    let mut finishes: BinaryHeap<Reverse<Time>> = BinaryHeap::new();
    let mut scheduled = 0;
    let mut t: Time = 0;
    let mut end: Time = 0;
    let mut candidates: Vec<ActivityId> = Vec::new();
    while scheduled < n {
        // Start, in priority order, every eligible activity released by t that fits; repeat
        // while starts at t make new activities eligible at t (zero durations and lags).
        loop {
            candidates.clear();
            candidates.extend(eligible.iter().copied().filter(|j| release[j.index()] <= t));
            if candidates.is_empty() {
                break;
            }
            candidates.sort_unstable_by_key(|j| (priority[j.index()], j.index()));
            let mut started_any = false;
            for &j in &candidates {
                let d = problem.duration(j);
                let loads = problem.loads(j);
                if !loads.is_empty() && !profile.fits(loads, d, t) {
                    continue;
                }
                profile.add(loads, t, d);
                starts[j.index()] = t;
                end = end.max(t + d);
                scheduled += 1;
                started_any = true;
                if d > 0 {
                    finishes.push(Reverse(t + d));
                }
                let pos = eligible.iter().position(|&e| e == j).expect("candidate is eligible");
                eligible.swap_remove(pos);
                for arc in problem.successors(j) {
                    let s = arc.activity.index();
                    release[s] = release[s].max(t + d + arc.lag);
                    waiting[s] -= 1;
                    if waiting[s] == 0 {
                        eligible.push(arc.activity);
                    }
                }
            }
            if !started_any {
                break;
            }
        }
        if scheduled == n {
            break;
        }
        // Next decision point: the next finish or release after t.
        while finishes.peek().is_some_and(|f| f.0 <= t) {
            finishes.pop();
        }
        let next_finish = finishes.peek().map(|f| f.0);
        let next_release = eligible
            .iter()
            .map(|j| release[j.index()])
            .filter(|&r| r > t)
            .min();
        t = match (next_finish, next_release) {
            (Some(a), Some(b)) => a.min(b),
            (Some(a), None) => a,
            (None, Some(b)) => b,
            (None, None) => unreachable!("an unscheduled activity is eligible or waits on one that runs"),
        };
    }
    *makespan = end;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::check;
    use crate::problem::ProblemBuilder;

    /// Two activities competing for a unit resource, then one that needs both finished.
    fn small() -> Problem {
        let mut b = ProblemBuilder::new();
        let r = b.resource("r", 1);
        let a = b.activity("a", 3);
        let c = b.activity("c", 2);
        let z = b.activity("z", 1);
        b.demand(a, r, 1);
        b.demand(c, r, 1);
        b.precedence(a, z);
        b.precedence_with_lag(c, z, 2);
        b.build().unwrap()
    }

    #[test]
    fn serial_follows_list_order() {
        let p = small();
        let l1 = ActivityList::new(&p, vec![ActivityId(0), ActivityId(1), ActivityId(2)]).unwrap();
        let s1 = serial(&p, &l1);
        assert_eq!(s1.starts(), &[0, 3, 7]);
        assert_eq!(check(&p, &s1), Ok(8));
        let l2 = ActivityList::new(&p, vec![ActivityId(1), ActivityId(0), ActivityId(2)]).unwrap();
        let s2 = serial(&p, &l2);
        assert_eq!(s2.starts(), &[2, 0, 5]);
        assert_eq!(check(&p, &s2), Ok(6));
    }

    #[test]
    fn parallel_uses_priorities() {
        let p = small();
        let s = parallel(&p, &[1, 0, 0]);
        assert_eq!(s.starts(), &[2, 0, 5]);
        let s = parallel(&p, &[0, 1, 0]);
        assert_eq!(s.starts(), &[0, 3, 7]);
    }

    #[test]
    fn list_errors() {
        let p = small();
        assert!(matches!(
            ActivityList::new(&p, vec![ActivityId(2), ActivityId(0), ActivityId(1)]),
            Err(ListError::Order { .. })
        ));
        assert!(matches!(
            ActivityList::new(&p, vec![ActivityId(0), ActivityId(0), ActivityId(1)]),
            Err(ListError::Repeated { .. })
        ));
        assert!(matches!(ActivityList::new(&p, vec![]), Err(ListError::Length { .. })));
        assert!(matches!(
            ActivityList::new(&p, vec![ActivityId(0), ActivityId(1), ActivityId(7)]),
            Err(ListError::OutOfRange { .. })
        ));
    }
}
