//! Schedules: a start time per activity.

use crate::problem::{ActivityId, Problem, Time};

/// A start time per activity, indexed by [`ActivityId`].
///
/// A schedule does not know its problem; [`crate::check`] says whether it is valid for one.
/// Activities run during `[start, start + duration)`.
///
/// With the `serde` feature it (de)serialises as the list of start times. The named JSON
/// format of [`crate::io::json`] needs the problem and is the one for files.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(transparent))]
pub struct Schedule {
    starts: Vec<Time>,
}

impl Schedule {
    /// A schedule from start times indexed by activity.
    pub fn new(starts: Vec<Time>) -> Self {
        Self { starts }
    }

    /// The start times, indexed by activity.
    #[inline]
    pub fn starts(&self) -> &[Time] {
        &self.starts
    }

    /// The start time of `a`.
    ///
    /// # Panics
    /// If the schedule has no start for `a` (it belongs to a smaller problem).
    #[inline]
    pub fn start(&self, a: ActivityId) -> Time {
        self.starts[a.0]
    }

    /// The finish time of `a` in `problem`.
    #[inline]
    pub fn finish(&self, problem: &Problem, a: ActivityId) -> Time {
        self.starts[a.0] + problem.duration(a)
    }

    /// Number of start times.
    #[inline]
    pub fn len(&self) -> usize {
        self.starts.len()
    }

    /// True when the schedule has no start time.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.starts.is_empty()
    }

    /// The makespan: the latest finish time over the activities of `problem` (0 if the
    /// schedule is empty). Activities the schedule lacks are ignored and a finish past
    /// [`Time::MAX`] counts as `Time::MAX`; [`crate::check`] reports both.
    pub fn makespan(&self, problem: &Problem) -> Time {
        self.starts
            .iter()
            .zip(problem.activities())
            .map(|(s, a)| s.saturating_add(a.duration))
            .max()
            .unwrap_or(0)
            .max(0)
    }

    /// The activities ordered by start time, ties broken by finish time then topological
    /// rank: for a valid schedule a precedence-feasible activity list, which the serial
    /// schedule-generation scheme turns into a schedule where no activity starts later.
    pub fn order_by_start(&self, problem: &Problem) -> Vec<ActivityId> {
        let mut rank = vec![0usize; problem.len()];
        for (k, a) in problem.topological_order().iter().enumerate() {
            rank[a.index()] = k;
        }
        let mut order: Vec<ActivityId> = problem.ids().collect();
        order.sort_by_key(|&a| {
            (
                self.starts[a.0],
                self.starts[a.0] + problem.duration(a),
                rank[a.0],
            )
        });
        order
    }

    /// Consumes the schedule, returning its start times.
    pub fn into_starts(self) -> Vec<Time> {
        self.starts
    }
}
