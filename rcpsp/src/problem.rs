//! The RCPSP model: activities, renewable resources and finish-to-start precedences.
//!
//! A [`Problem`] is immutable once built. It is created through a [`ProblemBuilder`], which
//! validates everything a solver relies on (see [`ProblemError`] for the list), and it keeps
//! the adjacency of the precedence graph and a topological order, so that schedule-generation
//! schemes and bounds do not recompute them.
//!
//! Semantics: activity `j` with a precedence `i -> j` of lag `l` may start only at
//! `start(i) + duration(i) + l` or later; while an activity runs (during `[start, start +
//! duration)`) it uses its demand of every resource, and at every time point the sum of the
//! demands of running activities may not exceed a resource's capacity. An activity may also
//! have a release date (it starts at or after it) and a deadline (it finishes at or before
//! it); PSPLIB instances have neither. Times are integers ([`Time`]): nanoseconds for DL graphs,
//! the instance's unit for PSPLIB.
//!
//! Release dates and deadlines go beyond the project's core model (finish-to-start
//! precedences with non-negative lags): a window of the odd-even driver
//! ([`crate::oddeven`]) must pin the activities around it to the times they have in the global
//! schedule, which precedences with non-negative lags cannot express. Every backend supports
//! them natively (bounds of start variables).

use std::collections::BTreeMap;
use std::fmt;

mod builder;
mod error;

pub use builder::ProblemBuilder;
pub use error::ProblemError;

/// An integer point or span of time. Nanoseconds for deep-learning graphs, abstract units for
/// PSPLIB instances. Never a float, so that every solver model is exact.
pub type Time = i64;

/// Index of an activity in a [`Problem`] (its position in [`Problem::activities`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(transparent))]
pub struct ActivityId(pub usize);

impl ActivityId {
    /// The position of this activity in [`Problem::activities`].
    #[inline]
    pub fn index(self) -> usize {
        self.0
    }
}

impl fmt::Display for ActivityId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "#{}", self.0)
    }
}

/// Index of a renewable resource in a [`Problem`] (its position in [`Problem::resources`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(transparent))]
pub struct ResourceId(pub usize);

impl ResourceId {
    /// The position of this resource in [`Problem::resources`].
    #[inline]
    pub fn index(self) -> usize {
        self.0
    }
}

/// A renewable resource: at every time point at most `capacity` units are in use.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Resource {
    /// Unique name, used in files, errors and reports.
    pub name: String,
    /// Units available at every time point.
    pub capacity: u32,
}

/// An activity (a job, an op): it runs without interruption for `duration`.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Activity {
    /// Unique name, used in files, errors and reports.
    pub name: String,
    /// Processing time, `>= 0`. Zero-duration activities (PSPLIB's dummy source and sink, or
    /// free ops of a DL graph) use no resource.
    pub duration: Time,
    /// Demand per resource, indexed by [`ResourceId`]; always as long as the resource list.
    pub demands: Vec<u32>,
    /// Earliest start, `>= 0` (0 when not given).
    pub release: Time,
    /// Latest finish, if any (`>= release + duration`).
    pub deadline: Option<Time>,
}

impl Activity {
    /// Whether the time window leaves exactly one start time: `deadline - duration ==
    /// release`.
    pub fn is_pinned(&self) -> bool {
        self.deadline == Some(self.release + self.duration)
    }
}

/// A finish-to-start precedence `from -> to`: `start(to) >= start(from) + duration(from) + lag`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Precedence {
    /// The predecessor.
    pub from: ActivityId,
    /// The successor.
    pub to: ActivityId,
    /// Extra waiting time after `from` finishes, `>= 0`.
    pub lag: Time,
}

/// One arc of the precedence graph as seen from one of its ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Arc {
    /// The activity at the other end.
    pub activity: ActivityId,
    /// The lag of the precedence.
    pub lag: Time,
}

/// A validated resource-constrained project scheduling problem (single mode, renewable
/// resources, finish-to-start precedences with non-negative lags, makespan objective).
///
/// ```
/// use concerto_rcpsp::{ProblemBuilder, check, Schedule};
///
/// let mut b = ProblemBuilder::new();
/// let gpu = b.resource("compute", 1);
/// let load = b.activity("load", 3);
/// let gemm = b.activity("gemm", 5);
/// b.demand(load, gpu, 1);
/// b.demand(gemm, gpu, 1);
/// b.precedence(load, gemm);
/// let problem = b.build()?;
/// assert_eq!(problem.len(), 2);
/// let schedule = Schedule::new(vec![0, 3]);
/// assert_eq!(check(&problem, &schedule)?, 8);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// With the `serde` feature a problem (de)serialises in the JSON problem format of
/// [`crate::io::json`] (by names, validated by [`ProblemBuilder::build`] on the way in).
#[derive(Clone, Debug)]
pub struct Problem {
    activities: Vec<Activity>,
    resources: Vec<Resource>,
    precedences: Vec<Precedence>,
    pred_start: Vec<usize>,
    preds: Vec<Arc>,
    succ_start: Vec<usize>,
    succs: Vec<Arc>,
    /// Per activity, its non-zero demands as `(resource, amount)`; zero-duration activities
    /// have none (they occupy no time).
    load_start: Vec<usize>,
    loads: Vec<(ResourceId, u32)>,
    topo: Vec<ActivityId>,
    horizon: Time,
    by_name: BTreeMap<String, ActivityId>,
}

impl Problem {
    /// Number of activities.
    #[inline]
    pub fn len(&self) -> usize {
        self.activities.len()
    }

    /// Never true for a built problem (an empty one is rejected); present for symmetry with
    /// [`Problem::len`].
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.activities.is_empty()
    }

    /// All activities, indexed by [`ActivityId`].
    #[inline]
    pub fn activities(&self) -> &[Activity] {
        &self.activities
    }

    /// One activity.
    #[inline]
    pub fn activity(&self, a: ActivityId) -> &Activity {
        &self.activities[a.0]
    }

    /// Iterator over all activity ids in index order.
    pub fn ids(&self) -> impl ExactSizeIterator<Item = ActivityId> + Clone {
        (0..self.activities.len()).map(ActivityId)
    }

    /// The duration of an activity.
    #[inline]
    pub fn duration(&self, a: ActivityId) -> Time {
        self.activities[a.0].duration
    }

    /// The release date of an activity (0 when none was given).
    #[inline]
    pub fn release(&self, a: ActivityId) -> Time {
        self.activities[a.0].release
    }

    /// The deadline (latest finish) of an activity, if any.
    #[inline]
    pub fn deadline(&self, a: ActivityId) -> Option<Time> {
        self.activities[a.0].deadline
    }

    /// Whether some activity has a release date or a deadline.
    pub fn has_time_windows(&self) -> bool {
        self.activities
            .iter()
            .any(|a| a.release > 0 || a.deadline.is_some())
    }

    /// Whether the demands of activities `a` and `b` (by index) on some resource exceed its
    /// capacity together, so that they can never run at the same time. `O(R)`.
    pub fn resource_clash(&self, a: usize, b: usize) -> bool {
        let (a, b) = (&self.activities[a], &self.activities[b]);
        self.resources.iter().enumerate().any(|(r, res)| {
            u64::from(a.demands[r]) + u64::from(b.demands[r]) > u64::from(res.capacity)
        })
    }

    /// All resources, indexed by [`ResourceId`].
    #[inline]
    pub fn resources(&self) -> &[Resource] {
        &self.resources
    }

    /// All precedences, sorted by `(from, to)`, one per ordered pair (duplicates merged, the
    /// largest lag kept).
    #[inline]
    pub fn precedences(&self) -> &[Precedence] {
        &self.precedences
    }

    /// Direct predecessors of `a` with their lags.
    #[inline]
    pub fn predecessors(&self, a: ActivityId) -> &[Arc] {
        &self.preds[self.pred_start[a.0]..self.pred_start[a.0 + 1]]
    }

    /// Direct successors of `a` with their lags.
    #[inline]
    pub fn successors(&self, a: ActivityId) -> &[Arc] {
        &self.succs[self.succ_start[a.0]..self.succ_start[a.0 + 1]]
    }

    /// The non-zero demands of `a` as `(resource, amount)`. Empty for zero-duration
    /// activities, which occupy no time and hence no resource.
    #[inline]
    pub fn loads(&self, a: ActivityId) -> &[(ResourceId, u32)] {
        &self.loads[self.load_start[a.0]..self.load_start[a.0 + 1]]
    }

    /// A topological order of the activities (every predecessor before its successors);
    /// among activities that are ready at the same time the smaller index comes first.
    #[inline]
    pub fn topological_order(&self) -> &[ActivityId] {
        &self.topo
    }

    /// The largest release date plus the sum over activities of duration and largest outgoing
    /// lag: no schedule produced by a schedule-generation scheme is longer.
    #[inline]
    pub fn horizon(&self) -> Time {
        self.horizon
    }

    /// Finds an activity by name.
    pub fn find(&self, name: &str) -> Option<ActivityId> {
        self.by_name.get(name).copied()
    }

    /// Finds a resource by name.
    pub fn find_resource(&self, name: &str) -> Option<ResourceId> {
        self.resources
            .iter()
            .position(|r| r.name == name)
            .map(ResourceId)
    }

    /// The same problem with every precedence reversed (release dates and deadlines dropped).
    /// A schedule of the reversed problem read backwards in time is a schedule of this one
    /// when there are no time windows; forward-backward improvement uses this.
    pub fn reversed(&self) -> Problem {
        let mut b = ProblemBuilder::new();
        for r in &self.resources {
            b.resource(r.name.clone(), r.capacity);
        }
        for a in &self.activities {
            let id = b.activity(a.name.clone(), a.duration);
            for (r, &d) in a.demands.iter().enumerate() {
                if d > 0 {
                    b.demand(id, ResourceId(r), d);
                }
            }
        }
        for p in &self.precedences {
            b.precedence_with_lag(p.to, p.from, p.lag);
        }
        b.build().expect("reversing a valid problem keeps it valid")
    }
}
