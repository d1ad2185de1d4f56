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
//! successors); [`ActivityList::new`] checks it. Both schemes respect release dates; the serial
//! scheme places pinned activities (a time window of one start) first; other deadlines may be
//! missed ([`Decoder::lateness`] says by how much).

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};

use crate::problem::{ActivityId, Problem, ResourceId, Time};
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
    /// Activities whose time window allows one start (see [`crate::Activity::is_pinned`]).
    pinned: Vec<ActivityId>,
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
            pinned: problem
                .ids()
                .filter(|&a| problem.activity(a).is_pinned())
                .collect(),
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

    /// Total lateness of the last decoded schedule: the sum over activities of how far they
    /// finish after their deadlines (0 when every deadline is met; schedule-generation schemes
    /// respect release dates and pinned activities, not other deadlines).
    pub fn lateness(&self) -> Time {
        self.problem
            .activities()
            .iter()
            .zip(&self.starts)
            .filter_map(|(a, &s)| a.deadline.map(|d| (s + a.duration - d).max(0)))
            .sum()
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
            AnyProfile::Indexed(p) => serial_with(
                self.problem,
                p,
                &self.pinned,
                list,
                &mut self.starts,
                &mut self.makespan,
            ),
            AnyProfile::Steps(p) => serial_with(
                self.problem,
                p,
                &self.pinned,
                list,
                &mut self.starts,
                &mut self.makespan,
            ),
            AnyProfile::Gaps(p) => serial_with(
                self.problem,
                p,
                &self.pinned,
                list,
                &mut self.starts,
                &mut self.makespan,
            ),
        }
        self.makespan
    }

    /// Parallel SGS with priority values (smaller first); returns the makespan.
    pub(crate) fn parallel(&mut self, priority: &[i64]) -> Time {
        assert_eq!(
            priority.len(),
            self.problem.len(),
            "one priority per activity"
        );
        let Self {
            problem,
            profile,
            starts,
            makespan,
            waiting,
            release,
            ..
        } = self;
        match profile {
            AnyProfile::Indexed(p) => {
                parallel_with(problem, p, priority, starts, makespan, waiting, release)
            }
            AnyProfile::Steps(p) => {
                parallel_with(problem, p, priority, starts, makespan, waiting, release)
            }
            AnyProfile::Gaps(p) => {
                parallel_with(problem, p, priority, starts, makespan, waiting, release)
            }
        }
        self.makespan
    }
}

fn serial_with<P: Profile>(
    problem: &Problem,
    profile: &mut P,
    pinned: &[ActivityId],
    list: &[ActivityId],
    starts: &mut [Time],
    makespan: &mut Time,
) {
    profile.clear();
    let mut end = 0;
    // Pinned activities (a time window of one start) go in first, where they must be; the
    // list then fills around them.
    for &j in pinned {
        let (t, d) = (problem.release(j), problem.duration(j));
        profile.add(problem.loads(j), t, d);
        starts[j.index()] = t;
        end = end.max(t + d);
    }
    for &j in list {
        if !pinned.is_empty() && problem.activity(j).is_pinned() {
            continue;
        }
        let release = problem
            .predecessors(j)
            .iter()
            .map(|arc| starts[arc.activity.index()] + problem.duration(arc.activity) + arc.lag)
            .max()
            .unwrap_or(0)
            .max(problem.release(j));
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

/// Released eligible activities of the parallel SGS, grouped by the resources they use, each
/// group ordered by (priority, index).
type Groups = BTreeMap<Vec<ResourceId>, std::collections::BTreeSet<(i64, usize)>>;

/// The best-priority released activity that fits at `t`: groups whose resources have no free
/// capacity at `t` are skipped whole; in the others, candidates are tried in priority order,
/// merged across groups.
fn best_fit<P: Profile>(
    problem: &Problem,
    profile: &P,
    groups: &Groups,
    t: Time,
) -> Option<(Vec<ResourceId>, (i64, usize))> {
    use std::ops::Bound::{Excluded, Unbounded};
    let open: Vec<_> = groups
        .iter()
        .filter(|(sig, set)| !set.is_empty() && sig.iter().all(|&r| profile.free_at(r, t) > 0))
        .collect();
    // Per open group, the last candidate tried without fitting.
    let mut tried: Vec<Option<(i64, usize)>> = vec![None; open.len()];
    loop {
        let mut best: Option<(usize, (i64, usize))> = None;
        for (g, (_, set)) in open.iter().enumerate() {
            let next = match tried[g] {
                Some(after) => set.range((Excluded(after), Unbounded)).next(),
                None => set.iter().next(),
            };
            if let Some(&key) = next {
                if best.is_none_or(|(_, b)| key < b) {
                    best = Some((g, key));
                }
            }
        }
        let (g, key) = best?;
        let j = ActivityId(key.1);
        let loads = problem.loads(j);
        if loads.is_empty() || profile.fits(loads, problem.duration(j), t) {
            return Some((open[g].0.clone(), key));
        }
        tried[g] = Some(key);
    }
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
    // Released eligible activities, grouped by the resources they use, each group by
    // priority: a group needing a resource with no free capacity at t is skipped whole.
    let mut groups = Groups::new();
    let signature =
        |j: ActivityId| -> Vec<ResourceId> { problem.loads(j).iter().map(|&(r, _)| r).collect() };
    // Eligible activities not yet released, by release time.
    let mut pending: BinaryHeap<Reverse<(Time, usize)>> = BinaryHeap::new();
    for j in problem.ids() {
        waiting[j.index()] = problem.predecessors(j).len();
        release[j.index()] = problem.release(j);
        if waiting[j.index()] == 0 {
            pending.push(Reverse((release[j.index()], j.index())));
        }
    }
    let mut finishes: BinaryHeap<Reverse<Time>> = BinaryHeap::new();
    let mut scheduled = 0;
    let mut t: Time = 0;
    let mut end: Time = 0;
    while scheduled < n {
        // Start, in priority order across groups, every released eligible activity that fits;
        // starts at t may release new activities at t (zero durations and lags).
        loop {
            while pending.peek().is_some_and(|Reverse((r, _))| *r <= t) {
                let Reverse((_, j)) = pending.pop().expect("peeked");
                groups
                    .entry(signature(ActivityId(j)))
                    .or_default()
                    .insert((priority[j], j));
            }
            let Some((sig, key)) = best_fit(problem, profile, &groups, t) else {
                break;
            };
            let j = ActivityId(key.1);
            groups.get_mut(&sig).expect("chosen from it").remove(&key);
            let d = problem.duration(j);
            profile.add(problem.loads(j), t, d);
            starts[j.index()] = t;
            end = end.max(t + d);
            scheduled += 1;
            if d > 0 {
                finishes.push(Reverse(t + d));
            }
            for arc in problem.successors(j) {
                let s = arc.activity.index();
                release[s] = release[s].max(t + d + arc.lag);
                waiting[s] -= 1;
                if waiting[s] == 0 {
                    pending.push(Reverse((release[s], s)));
                }
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
        let next_release = pending.peek().map(|Reverse((r, _))| *r).filter(|&r| r > t);
        t = match (next_finish, next_release) {
            (Some(a), Some(b)) => a.min(b),
            (Some(a), None) => a,
            (None, Some(b)) => b,
            (None, None) => {
                unreachable!("an unscheduled activity is eligible or waits on one that runs")
            }
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
        assert!(matches!(
            ActivityList::new(&p, vec![]),
            Err(ListError::Length { .. })
        ));
        assert!(matches!(
            ActivityList::new(&p, vec![ActivityId(0), ActivityId(1), ActivityId(7)]),
            Err(ListError::OutOfRange { .. })
        ));
    }
}
