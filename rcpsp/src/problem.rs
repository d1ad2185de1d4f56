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
//! Release dates and deadlines go beyond the model of `shared/DESIGN.md` (finish-to-start
//! precedences with non-negative lags): a window of the odd-even driver
//! ([`crate::oddeven`]) must pin the activities around it to the times they have in the global
//! schedule, which precedences with non-negative lags cannot express. Every backend supports
//! them natively (bounds of start variables).

use std::collections::BTreeMap;
use std::fmt;

/// An integer point or span of time. Nanoseconds for deep-learning graphs, abstract units for
/// PSPLIB instances. Never a float, so that every solver model is exact.
pub type Time = i64;

/// Index of an activity in a [`Problem`] (its position in [`Problem::activities`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
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
pub struct Resource {
    /// Unique name, used in files, errors and reports.
    pub name: String,
    /// Units available at every time point.
    pub capacity: u32,
}

/// An activity (a job, an op): it runs without interruption for `duration`.
#[derive(Clone, Debug, PartialEq, Eq)]
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
pub struct Arc {
    /// The activity at the other end.
    pub activity: ActivityId,
    /// The lag of the precedence.
    pub lag: Time,
}

/// Why a problem could not be built. Every variant names the offending item.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ProblemError {
    /// The problem has no activity at all.
    #[error("the problem has no activities")]
    Empty,
    /// An activity or resource was given an empty name.
    #[error("{kind} number {index} has an empty name")]
    EmptyName {
        /// `"activity"` or `"resource"`.
        kind: &'static str,
        /// Its position in the order it was added.
        index: usize,
    },
    /// Two activities share a name.
    #[error("activity name `{name}` is used twice")]
    DuplicateActivity {
        /// The repeated name.
        name: String,
    },
    /// Two resources share a name.
    #[error("resource name `{name}` is used twice")]
    DuplicateResource {
        /// The repeated name.
        name: String,
    },
    /// A precedence or demand refers to an activity that does not exist.
    #[error("unknown activity `{name}` in {context}")]
    UnknownActivity {
        /// The name (or `#index`) that was not found.
        name: String,
        /// Where it was referred to, for example `precedence 3 (from)`.
        context: String,
    },
    /// A demand refers to a resource that does not exist.
    #[error("unknown resource `{name}` in the demands of activity `{activity}`")]
    UnknownResource {
        /// The name (or `#index`) that was not found.
        name: String,
        /// The activity whose demand names it.
        activity: String,
    },
    /// An activity has a negative duration.
    #[error("activity `{activity}` has a negative duration {duration}")]
    NegativeDuration {
        /// The activity.
        activity: String,
        /// Its duration.
        duration: Time,
    },
    /// An activity has a negative release date.
    #[error("activity `{activity}` has a negative release date {release}")]
    NegativeRelease {
        /// The activity.
        activity: String,
        /// The release date given.
        release: Time,
    },
    /// An activity's deadline leaves no room for it after its release date.
    #[error(
        "activity `{activity}` cannot run between its release {release} and its deadline {deadline} (duration {duration})"
    )]
    EmptyTimeWindow {
        /// The activity.
        activity: String,
        /// Its release date.
        release: Time,
        /// Its deadline.
        deadline: Time,
        /// Its duration.
        duration: Time,
    },
    /// A precedence has a negative lag (only finish-to-start with non-negative lags are
    /// modelled).
    #[error("precedence `{from}` -> `{to}` has a negative lag {lag}")]
    NegativeLag {
        /// The predecessor.
        from: String,
        /// The successor.
        to: String,
        /// The lag given.
        lag: Time,
    },
    /// An activity needs more of a resource than the resource has: no schedule exists.
    #[error(
        "activity `{activity}` demands {demand} of resource `{resource}`, whose capacity is {capacity}"
    )]
    DemandOverCapacity {
        /// The activity.
        activity: String,
        /// The resource.
        resource: String,
        /// The demand.
        demand: u32,
        /// The capacity.
        capacity: u32,
    },
    /// The precedences contain a cycle, so no schedule exists.
    #[error("the precedences contain a cycle: {}", cycle_text(.activities))]
    Cycle {
        /// The activities on one cycle, in order; the last one precedes the first.
        activities: Vec<String>,
    },
    /// The sum of all durations and lags does not fit in a [`Time`], so schedules could not be
    /// represented.
    #[error("the sum of durations and lags overflows a 64-bit time at activity `{activity}`")]
    HorizonOverflow {
        /// The activity at which the running sum overflowed.
        activity: String,
    },
}

fn cycle_text(activities: &[String]) -> String {
    let mut text = activities
        .iter()
        .map(|a| format!("`{a}`"))
        .collect::<Vec<_>>()
        .join(" -> ");
    if let Some(first) = activities.first() {
        text.push_str(&format!(" -> `{first}`"));
    }
    text
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

#[derive(Clone, Debug)]
enum ActivityRef {
    Id(ActivityId),
    Name(String),
}

#[derive(Clone, Debug)]
enum ResourceRef {
    Id(ResourceId),
    Name(String),
}

#[derive(Clone, Debug)]
struct DraftActivity {
    name: String,
    duration: Time,
    release: Time,
    deadline: Option<Time>,
}

/// Builds a [`Problem`], validating it in [`ProblemBuilder::build`].
///
/// Items can be referred to by the ids the builder returns or by name (for readers of files
/// where names come first); unknown names and ids are reported by `build`, not by a panic.
#[derive(Clone, Debug, Default)]
pub struct ProblemBuilder {
    resources: Vec<Resource>,
    activities: Vec<DraftActivity>,
    demands: Vec<(ActivityRef, ResourceRef, u32)>,
    precedences: Vec<(ActivityRef, ActivityRef, Time)>,
}

impl ProblemBuilder {
    /// An empty builder.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a renewable resource and returns its id.
    pub fn resource(&mut self, name: impl Into<String>, capacity: u32) -> ResourceId {
        self.resources.push(Resource {
            name: name.into(),
            capacity,
        });
        ResourceId(self.resources.len() - 1)
    }

    /// Adds an activity with no demands yet and returns its id.
    pub fn activity(&mut self, name: impl Into<String>, duration: Time) -> ActivityId {
        self.activities.push(DraftActivity {
            name: name.into(),
            duration,
            release: 0,
            deadline: None,
        });
        ActivityId(self.activities.len() - 1)
    }

    /// Sets the release date of `activity`: it starts at or after `release`.
    ///
    /// # Panics
    /// If `activity` was not returned by this builder.
    pub fn release(&mut self, activity: ActivityId, release: Time) {
        self.activities[activity.0].release = release;
    }

    /// Sets the deadline of `activity`: it finishes at or before `deadline`.
    ///
    /// # Panics
    /// If `activity` was not returned by this builder.
    pub fn deadline(&mut self, activity: ActivityId, deadline: Time) {
        self.activities[activity.0].deadline = Some(deadline);
    }

    /// Sets the demand of `activity` for `resource` (a repeated call for the same pair keeps
    /// the last amount). Ids not returned by this builder are reported by `build`.
    pub fn demand(&mut self, activity: ActivityId, resource: ResourceId, amount: u32) {
        self.demands
            .push((ActivityRef::Id(activity), ResourceRef::Id(resource), amount));
    }

    /// Sets a demand by activity and resource names; unknown names are reported by `build`.
    pub fn demand_by_name(&mut self, activity: &str, resource: &str, amount: u32) {
        self.demands.push((
            ActivityRef::Name(activity.to_owned()),
            ResourceRef::Name(resource.to_owned()),
            amount,
        ));
    }

    /// Adds the precedence `from -> to` with lag 0.
    pub fn precedence(&mut self, from: ActivityId, to: ActivityId) {
        self.precedence_with_lag(from, to, 0);
    }

    /// Adds the precedence `from -> to`: `to` starts at least `lag` after `from` finishes.
    pub fn precedence_with_lag(&mut self, from: ActivityId, to: ActivityId, lag: Time) {
        self.precedences
            .push((ActivityRef::Id(from), ActivityRef::Id(to), lag));
    }

    /// Adds a precedence by activity names; unknown names are reported by `build`.
    pub fn precedence_by_name(&mut self, from: &str, to: &str, lag: Time) {
        self.precedences.push((
            ActivityRef::Name(from.to_owned()),
            ActivityRef::Name(to.to_owned()),
            lag,
        ));
    }

    /// Number of activities added so far.
    pub fn activity_count(&self) -> usize {
        self.activities.len()
    }

    /// Validates and builds the problem.
    ///
    /// Checks, in this order: names (non-empty, unique), durations (non-negative), demands
    /// (known resource, within capacity), precedences (known activities, non-negative lag), the
    /// horizon (no overflow), acyclicity (a cycle is reported with its activities). Cost:
    /// `O(n log n + m log m)` for `n` activities and `m` precedences.
    pub fn build(self) -> Result<Problem, ProblemError> {
        if self.activities.is_empty() {
            return Err(ProblemError::Empty);
        }
        let mut resource_index = BTreeMap::new();
        for (i, r) in self.resources.iter().enumerate() {
            if r.name.is_empty() {
                return Err(ProblemError::EmptyName {
                    kind: "resource",
                    index: i,
                });
            }
            if resource_index
                .insert(r.name.clone(), ResourceId(i))
                .is_some()
            {
                return Err(ProblemError::DuplicateResource {
                    name: r.name.clone(),
                });
            }
        }
        let mut by_name = BTreeMap::new();
        for (i, a) in self.activities.iter().enumerate() {
            if a.name.is_empty() {
                return Err(ProblemError::EmptyName {
                    kind: "activity",
                    index: i,
                });
            }
            if by_name.insert(a.name.clone(), ActivityId(i)).is_some() {
                return Err(ProblemError::DuplicateActivity {
                    name: a.name.clone(),
                });
            }
        }
        let n = self.activities.len();
        let nr = self.resources.len();
        let mut activities = Vec::with_capacity(n);
        for a in &self.activities {
            if a.duration < 0 {
                return Err(ProblemError::NegativeDuration {
                    activity: a.name.clone(),
                    duration: a.duration,
                });
            }
            if a.release < 0 {
                return Err(ProblemError::NegativeRelease {
                    activity: a.name.clone(),
                    release: a.release,
                });
            }
            if let Some(deadline) = a.deadline {
                if a.release
                    .checked_add(a.duration)
                    .is_none_or(|f| f > deadline)
                {
                    return Err(ProblemError::EmptyTimeWindow {
                        activity: a.name.clone(),
                        release: a.release,
                        deadline,
                        duration: a.duration,
                    });
                }
            }
            activities.push(Activity {
                name: a.name.clone(),
                duration: a.duration,
                demands: vec![0u32; nr],
                release: a.release,
                deadline: a.deadline,
            });
        }

        let resolve = |r: &ActivityRef, context: &dyn Fn() -> String| match r {
            ActivityRef::Id(id) if id.0 < n => Ok(*id),
            ActivityRef::Id(id) => Err(ProblemError::UnknownActivity {
                name: format!("#{}", id.0),
                context: context(),
            }),
            ActivityRef::Name(name) => {
                by_name
                    .get(name)
                    .copied()
                    .ok_or_else(|| ProblemError::UnknownActivity {
                        name: name.clone(),
                        context: context(),
                    })
            }
        };
        for (activity, resource, amount) in &self.demands {
            let resource_text = || match resource {
                ResourceRef::Id(id) => format!("#{}", id.0),
                ResourceRef::Name(name) => name.clone(),
            };
            let aid = resolve(activity, &|| {
                format!("a demand for resource `{}`", resource_text())
            })?;
            let rid = match resource {
                ResourceRef::Id(id) if id.0 < nr => *id,
                ResourceRef::Name(name) if resource_index.contains_key(name) => {
                    resource_index[name]
                }
                _ => {
                    return Err(ProblemError::UnknownResource {
                        name: resource_text(),
                        activity: activities[aid.0].name.clone(),
                    })
                }
            };
            let res = &self.resources[rid.0];
            if *amount > res.capacity {
                return Err(ProblemError::DemandOverCapacity {
                    activity: activities[aid.0].name.clone(),
                    resource: res.name.clone(),
                    demand: *amount,
                    capacity: res.capacity,
                });
            }
            activities[aid.0].demands[rid.0] = *amount;
        }

        let mut pairs: BTreeMap<(ActivityId, ActivityId), Time> = BTreeMap::new();
        for (k, (from, to, lag)) in self.precedences.iter().enumerate() {
            let f = resolve(from, &|| format!("precedence {} (from)", k + 1))?;
            let t = resolve(to, &|| format!("precedence {} (to)", k + 1))?;
            if *lag < 0 {
                return Err(ProblemError::NegativeLag {
                    from: activities[f.0].name.clone(),
                    to: activities[t.0].name.clone(),
                    lag: *lag,
                });
            }
            let e = pairs.entry((f, t)).or_insert(*lag);
            *e = (*e).max(*lag);
        }
        let precedences: Vec<Precedence> = pairs
            .into_iter()
            .map(|((from, to), lag)| Precedence { from, to, lag })
            .collect();

        // Horizon: sum of duration + largest outgoing lag.
        let mut max_lag = vec![0 as Time; n];
        for p in &precedences {
            max_lag[p.from.0] = max_lag[p.from.0].max(p.lag);
        }
        let mut horizon: Time = activities.iter().map(|a| a.release).max().unwrap_or(0);
        for (i, a) in activities.iter().enumerate() {
            horizon = horizon
                .checked_add(a.duration)
                .and_then(|h| h.checked_add(max_lag[i]))
                .ok_or_else(|| ProblemError::HorizonOverflow {
                    activity: a.name.clone(),
                })?;
        }

        let (pred_start, preds) = csr(n, precedences.iter().map(|p| (p.to, p.from, p.lag)));
        let (succ_start, succs) = csr(n, precedences.iter().map(|p| (p.from, p.to, p.lag)));
        let topo =
            topological_order(n, &pred_start, &preds, &succ_start, &succs).map_err(|cycle| {
                ProblemError::Cycle {
                    activities: cycle
                        .into_iter()
                        .map(|a| activities[a.0].name.clone())
                        .collect(),
                }
            })?;

        let mut load_start = Vec::with_capacity(n + 1);
        let mut loads = Vec::new();
        load_start.push(0);
        for a in &activities {
            if a.duration > 0 {
                for (r, &d) in a.demands.iter().enumerate() {
                    if d > 0 {
                        loads.push((ResourceId(r), d));
                    }
                }
            }
            load_start.push(loads.len());
        }

        Ok(Problem {
            activities,
            resources: self.resources,
            precedences,
            pred_start,
            preds,
            succ_start,
            succs,
            load_start,
            loads,
            topo,
            horizon,
            by_name,
        })
    }
}

/// Compressed adjacency: for each `key`, the arcs `(other, lag)` in the order given.
fn csr(
    n: usize,
    arcs: impl Iterator<Item = (ActivityId, ActivityId, Time)> + Clone,
) -> (Vec<usize>, Vec<Arc>) {
    let mut start = vec![0usize; n + 1];
    for (key, _, _) in arcs.clone() {
        start[key.0 + 1] += 1;
    }
    for i in 0..n {
        start[i + 1] += start[i];
    }
    let mut fill = start.clone();
    let mut out = vec![
        Arc {
            activity: ActivityId(0),
            lag: 0
        };
        start[n]
    ];
    for (key, other, lag) in arcs {
        out[fill[key.0]] = Arc {
            activity: other,
            lag,
        };
        fill[key.0] += 1;
    }
    (start, out)
}

/// Kahn's algorithm with a min-heap on the index, so the order is canonical. On a cycle,
/// returns the activities of one cycle, found by walking predecessors among the unsorted
/// activities (every one of them has an unsorted predecessor).
fn topological_order(
    n: usize,
    pred_start: &[usize],
    preds: &[Arc],
    succ_start: &[usize],
    succs: &[Arc],
) -> Result<Vec<ActivityId>, Vec<ActivityId>> {
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;
    let mut indegree: Vec<usize> = (0..n).map(|i| pred_start[i + 1] - pred_start[i]).collect();
    let mut heap: BinaryHeap<Reverse<usize>> =
        (0..n).filter(|&i| indegree[i] == 0).map(Reverse).collect();
    let mut order = Vec::with_capacity(n);
    while let Some(Reverse(i)) = heap.pop() {
        order.push(ActivityId(i));
        for arc in &succs[succ_start[i]..succ_start[i + 1]] {
            let j = arc.activity.0;
            indegree[j] -= 1;
            if indegree[j] == 0 {
                heap.push(Reverse(j));
            }
        }
    }
    if order.len() == n {
        return Ok(order);
    }
    // Every activity left has indegree > 0, i.e. an unsorted predecessor: walking backwards
    // must revisit an activity, which closes a cycle.
    let start = (0..n)
        .find(|&i| indegree[i] > 0)
        .expect("some activity is unsorted");
    let mut seen_at = vec![usize::MAX; n];
    let mut walk = Vec::new();
    let mut cur = start;
    while seen_at[cur] == usize::MAX {
        seen_at[cur] = walk.len();
        walk.push(cur);
        cur = preds[pred_start[cur]..pred_start[cur + 1]]
            .iter()
            .map(|a| a.activity.0)
            .find(|&p| indegree[p] > 0)
            .expect("an unsorted activity has an unsorted predecessor");
    }
    let mut cycle: Vec<ActivityId> = walk[seen_at[cur]..]
        .iter()
        .map(|&i| ActivityId(i))
        .collect();
    // The walk went backwards along arcs; report the cycle in arc direction.
    cycle.reverse();
    Err(cycle)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chain() -> ProblemBuilder {
        let mut b = ProblemBuilder::new();
        let r = b.resource("r", 2);
        let a = b.activity("a", 2);
        let c = b.activity("c", 3);
        b.demand(a, r, 1);
        b.demand(c, r, 2);
        b.precedence(a, c);
        b
    }

    #[test]
    fn builds_adjacency_and_order() {
        let p = chain().build().unwrap();
        assert_eq!(p.len(), 2);
        assert_eq!(p.successors(ActivityId(0))[0].activity, ActivityId(1));
        assert_eq!(p.predecessors(ActivityId(1))[0].activity, ActivityId(0));
        assert_eq!(p.topological_order(), &[ActivityId(0), ActivityId(1)]);
        assert_eq!(p.horizon(), 5);
        assert_eq!(p.loads(ActivityId(1)), &[(ResourceId(0), 2)]);
    }

    #[test]
    fn cycle_is_named_in_arc_order() {
        let mut b = ProblemBuilder::new();
        let x = b.activity("x", 1);
        let y = b.activity("y", 1);
        let z = b.activity("z", 1);
        let w = b.activity("w", 1);
        b.precedence(w, x);
        b.precedence(x, y);
        b.precedence(y, z);
        b.precedence(z, x);
        match b.build() {
            Err(ProblemError::Cycle { activities }) => {
                assert_eq!(activities.len(), 3);
                // Rotate so x is first, then check arc order x -> y -> z.
                let k = activities.iter().position(|a| a == "x").unwrap();
                let rotated: Vec<_> = activities[k..].iter().chain(&activities[..k]).collect();
                assert_eq!(rotated, ["x", "y", "z"]);
            }
            other => panic!("expected a cycle, got {other:?}"),
        }
    }

    #[test]
    fn duplicate_precedences_keep_the_largest_lag() {
        let mut b = chain();
        b.precedence_with_lag(ActivityId(0), ActivityId(1), 4);
        let p = b.build().unwrap();
        assert_eq!(p.precedences().len(), 1);
        assert_eq!(p.precedences()[0].lag, 4);
    }

    #[test]
    fn reversed_swaps_arcs() {
        let p = chain().build().unwrap();
        let r = p.reversed();
        assert_eq!(r.topological_order(), &[ActivityId(1), ActivityId(0)]);
    }
}
