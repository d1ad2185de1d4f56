//! Building and validating a [`Problem`]: names, durations, demands, precedences, the
//! horizon and acyclicity, then the adjacency and a topological order.

use std::collections::BTreeMap;

use super::{
    Activity, ActivityId, Arc, Precedence, Problem, ProblemError, Resource, ResourceId, Time,
};

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
        let resource_index = self.resource_index()?;
        let by_name = self.activity_index()?;
        let n = self.activities.len();
        let mut activities = self.checked_activities()?;
        self.apply_demands(&mut activities, &resource_index, &by_name)?;
        let precedences = self.merged_precedences(&activities, &by_name)?;
        let horizon = horizon(&activities, &precedences)?;
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
        let (load_start, loads) = loads(&activities);
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

    /// The resources by name; errors on an empty or repeated name.
    fn resource_index(&self) -> Result<BTreeMap<String, ResourceId>, ProblemError> {
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
        Ok(resource_index)
    }

    /// The activities by name; errors on an empty or repeated name.
    fn activity_index(&self) -> Result<BTreeMap<String, ActivityId>, ProblemError> {
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
        Ok(by_name)
    }

    /// The activities without demands; errors on a negative duration or release, or a time
    /// window too short for the duration.
    fn checked_activities(&self) -> Result<Vec<Activity>, ProblemError> {
        let nr = self.resources.len();
        let mut activities = Vec::with_capacity(self.activities.len());
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
        Ok(activities)
    }

    /// Sets each demand on its activity; errors on an unknown activity or resource, or a
    /// demand over the capacity.
    fn apply_demands(
        &self,
        activities: &mut [Activity],
        resource_index: &BTreeMap<String, ResourceId>,
        by_name: &BTreeMap<String, ActivityId>,
    ) -> Result<(), ProblemError> {
        let nr = self.resources.len();
        for (activity, resource, amount) in &self.demands {
            let resource_text = || match resource {
                ResourceRef::Id(id) => format!("#{}", id.0),
                ResourceRef::Name(name) => name.clone(),
            };
            let aid = resolve(activity, activities.len(), by_name, &|| {
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
        Ok(())
    }

    /// The precedences sorted by (from, to), each pair once with its largest lag; errors on
    /// an unknown activity or a negative lag.
    fn merged_precedences(
        &self,
        activities: &[Activity],
        by_name: &BTreeMap<String, ActivityId>,
    ) -> Result<Vec<Precedence>, ProblemError> {
        let n = activities.len();
        let mut pairs: Vec<(ActivityId, ActivityId, Time)> =
            Vec::with_capacity(self.precedences.len());
        for (k, (from, to, lag)) in self.precedences.iter().enumerate() {
            let f = resolve(from, n, by_name, &|| format!("precedence {} (from)", k + 1))?;
            let t = resolve(to, n, by_name, &|| format!("precedence {} (to)", k + 1))?;
            if *lag < 0 {
                return Err(ProblemError::NegativeLag {
                    from: activities[f.0].name.clone(),
                    to: activities[t.0].name.clone(),
                    lag: *lag,
                });
            }
            pairs.push((f, t, *lag));
        }
        pairs.sort_unstable();
        // Equal pairs are adjacent, the largest lag last.
        let mut precedences: Vec<Precedence> = Vec::with_capacity(pairs.len());
        for (from, to, lag) in pairs {
            match precedences.last_mut() {
                Some(p) if p.from == from && p.to == to => p.lag = lag,
                _ => precedences.push(Precedence { from, to, lag }),
            }
        }
        Ok(precedences)
    }
}

/// The activity `r` names among `n`, or [`ProblemError::UnknownActivity`] with `context`.
fn resolve(
    r: &ActivityRef,
    n: usize,
    by_name: &BTreeMap<String, ActivityId>,
    context: &dyn Fn() -> String,
) -> Result<ActivityId, ProblemError> {
    match r {
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
    }
}

/// The horizon: the latest release plus every duration and largest outgoing lag; errors on
/// overflow, naming the activity where it happens.
fn horizon(activities: &[Activity], precedences: &[Precedence]) -> Result<Time, ProblemError> {
    let mut max_lag = vec![0 as Time; activities.len()];
    for p in precedences {
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
    Ok(horizon)
}

/// Each activity's nonzero demands, if its duration is positive, in compressed rows.
fn loads(activities: &[Activity]) -> (Vec<usize>, Vec<(ResourceId, u32)>) {
    let mut load_start = Vec::with_capacity(activities.len() + 1);
    let mut loads = Vec::new();
    load_start.push(0);
    for a in activities {
        if a.duration > 0 {
            for (r, &d) in a.demands.iter().enumerate() {
                if d > 0 {
                    loads.push((ResourceId(r), d));
                }
            }
        }
        load_start.push(loads.len());
    }
    (load_start, loads)
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
