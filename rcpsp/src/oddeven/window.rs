//! A window's sub-problem: its activities with release dates and deadlines from everything
//! outside, the outside activities that run meanwhile pinned, a sink carrying the time the
//! current order needs after it, all in coarse time (see the parent module's docs).

use std::collections::BTreeMap;

use super::state::State;
use super::{Solved, RESOLUTION};
use crate::problem::{ActivityId, Problem, ProblemBuilder, ResourceId, Time};
use crate::schedule::Schedule;
use crate::solver::{Limits, Solver};

/// Per resource, the activities sorted by start time, and the longest duration on it: the
/// activities that overlap an interval are found by binary search.
pub(super) struct TimeIndex {
    by_start: Vec<Vec<(Time, ActivityId)>>,
    longest: Vec<Time>,
}

impl TimeIndex {
    pub(super) fn new(problem: &Problem, starts: &[Time]) -> Self {
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
pub(super) struct Window {
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
    pub(super) fn build(
        problem: &Problem,
        state: &State<'_>,
        index: &TimeIndex,
        a: usize,
        b: usize,
    ) -> Option<Self> {
        let members: Vec<ActivityId> = state.order[a..b].to_vec();
        let mut local = BTreeMap::new();
        for (k, &j) in members.iter().enumerate() {
            local.insert(j, k);
        }
        let bounds = Bounds::new(problem, state, &members, &local)?;
        let (base, end) = (bounds.base, bounds.end);
        // Time unit: about RESOLUTION units across [base, end). Every time is floored: then
        // the current schedule, floored, satisfies every constraint of the sub-problem
        // (floor(s) + floor(d) <= floor(s + d)), so it is the warm start, and the sub-problem
        // is a relaxation; its answer is only used for its order.
        let unit = ((end - base) / RESOLUTION).max(1);
        let mut sub = SubBuilder::new(problem, state.decoder.starts(), base, unit);
        let ids = sub.add_members(&members, &bounds);
        let blocker_end = sub.add_blockers(index, &members, &local, end);
        let (sink, sink_start) = sub.add_sink(&members, &local, &ids, &bounds, blocker_end);
        let SubBuilder {
            builder, initial, ..
        } = sub;
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

    /// Solves the window within `limits` (from the current window schedule); returns its
    /// members' new starts (real time) if the sink moved earlier, and the inner solver's work.
    pub(super) fn solve(&self, inner: &dyn Solver, limits: &Limits) -> Solved {
        let limits = Limits {
            initial: Some(self.initial.clone()),
            ..limits.clone()
        };
        // A window the inner solver cannot take (too large for its number types, say) is
        // left as it is.
        let Ok(outcome) = inner.solve(&self.sub, &limits) else {
            return Solved {
                moves: None,
                work: 0,
            };
        };
        let moves = outcome
            .schedule
            .filter(|schedule| schedule.start(self.sink) < self.current)
            .map(|schedule| {
                self.members
                    .iter()
                    .enumerate()
                    .map(|(k, &j)| (j, self.base + schedule.starts()[k] * self.unit))
                    .collect()
            });
        Solved {
            moves,
            work: outcome.work,
        }
    }
}

/// The members' time bounds in real time, from everything outside the window.
struct Bounds {
    /// The members' earliest current start.
    base: Time,
    /// The latest deadline.
    end: Time,
    /// Each member's release: its outside predecessors' finishes, its own, `base`.
    release: Vec<Time>,
    /// Each member's deadline: a window's span after its finish, its own, its outside
    /// successors' starts, the makespan.
    deadline: Vec<Time>,
    /// The time each member's outside successors need after it.
    tail: Vec<Time>,
}

impl Bounds {
    /// The bounds of `members` (`local` their positions); `None` when there are none.
    fn new(
        problem: &Problem,
        state: &State<'_>,
        members: &[ActivityId],
        local: &BTreeMap<ActivityId, usize>,
    ) -> Option<Self> {
        let starts = state.decoder.starts();
        let makespan = state.makespan;
        let finish = |j: ActivityId| starts[j.index()] + problem.duration(j);
        let base = members.iter().map(|&j| starts[j.index()]).min()?;
        let span = members.iter().map(|&j| finish(j)).max()? - base;
        let mut release = Vec::with_capacity(members.len());
        let mut deadline = Vec::with_capacity(members.len());
        let mut tail = Vec::with_capacity(members.len());
        for &j in members {
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
        Some(Self {
            base,
            end,
            release,
            deadline,
            tail,
        })
    }
}

/// The window's sub-problem under construction, in coarse time from `base`, with the floored
/// current schedule.
struct SubBuilder<'a> {
    /// The problem.
    problem: &'a Problem,
    /// The current starts.
    starts: &'a [Time],
    /// The window's time origin.
    base: Time,
    /// The coarse time unit.
    unit: Time,
    /// The sub-problem's builder.
    builder: ProblemBuilder,
    /// The sub-problem's resources.
    res: Vec<ResourceId>,
    /// The floored current start of each sub-problem activity so far.
    initial: Vec<Time>,
}

impl<'a> SubBuilder<'a> {
    /// A sub-problem with the problem's resources and no activities.
    fn new(problem: &'a Problem, starts: &'a [Time], base: Time, unit: Time) -> Self {
        let mut builder = ProblemBuilder::new();
        let res: Vec<ResourceId> = problem
            .resources()
            .iter()
            .map(|r| builder.resource(r.name.clone(), r.capacity))
            .collect();
        Self {
            problem,
            starts,
            base,
            unit,
            builder,
            res,
            initial: Vec::new(),
        }
    }

    /// `t` floored to coarse units.
    fn down(&self, t: Time) -> Time {
        t.div_euclid(self.unit)
    }

    /// The current finish of `j`.
    fn finish(&self, j: ActivityId) -> Time {
        self.starts[j.index()] + self.problem.duration(j)
    }

    /// The members with their bounds; returns their sub-problem ids.
    fn add_members(&mut self, members: &[ActivityId], bounds: &Bounds) -> Vec<ActivityId> {
        let (problem, base) = (self.problem, self.base);
        let mut ids = Vec::with_capacity(members.len());
        for (k, &j) in members.iter().enumerate() {
            let id = self
                .builder
                .activity(format!("w{k}"), self.down(problem.duration(j)));
            self.builder
                .release(id, self.down(bounds.release[k] - base));
            self.builder
                .deadline(id, self.down(bounds.deadline[k] - base));
            for &(r, q) in problem.loads(j) {
                self.builder.demand(id, self.res[r.index()], q);
            }
            ids.push(id);
            self.initial.push(self.down(self.starts[j.index()] - base));
        }
        ids
    }

    /// Everything outside that runs during `[base, end)` on the members' resources, pinned;
    /// returns the latest end of those blockers.
    fn add_blockers(
        &mut self,
        index: &TimeIndex,
        members: &[ActivityId],
        local: &BTreeMap<ActivityId, usize>,
        end: Time,
    ) -> Time {
        let (problem, base) = (self.problem, self.base);
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
            .filter(|&f| {
                !local.contains_key(&f) && self.finish(f) > base && problem.duration(f) > 0
            })
            .collect();
        blockers.sort_unstable();
        blockers.dedup();
        let mut blocker_end: Time = 0;
        for (k, &f) in blockers.iter().enumerate() {
            // The part from `base` on, floored like everything else.
            let from = self.starts[f.index()].max(base) - base;
            let length = self.down(self.finish(f) - base - from);
            let id = self.builder.activity(format!("b{k}"), length);
            self.builder.release(id, self.down(from));
            self.builder.deadline(id, self.down(from) + length);
            for &(r, q) in problem.loads(f) {
                self.builder.demand(id, self.res[r.index()], q);
            }
            self.initial.push(self.down(from));
            blocker_end = blocker_end.max(self.down(from) + length);
        }
        blocker_end
    }

    /// The sink after every member (with its tail) and the blockers, and the members'
    /// precedences among themselves; returns the sink and its floored current start.
    fn add_sink(
        &mut self,
        members: &[ActivityId],
        local: &BTreeMap<ActivityId, usize>,
        ids: &[ActivityId],
        bounds: &Bounds,
        blocker_end: Time,
    ) -> (ActivityId, Time) {
        let problem = self.problem;
        let tail = &bounds.tail;
        // Tails: only those within a window's length of the largest can define the maximum.
        let shift = (tail.iter().copied().max().unwrap_or(0) - (bounds.end - bounds.base)).max(0);
        let sink = self.builder.activity("end", 0);
        let mut sink_start = blocker_end;
        for (k, &j) in members.iter().enumerate() {
            let lag = self.down((tail[k] - shift).max(0)) + blocker_end;
            self.builder.precedence_with_lag(ids[k], sink, lag);
            sink_start = sink_start.max(self.initial[k] + self.down(problem.duration(j)) + lag);
            for arc in problem.successors(j) {
                if let Some(&m) = local.get(&arc.activity) {
                    self.builder
                        .precedence_with_lag(ids[k], ids[m], self.down(arc.lag));
                }
            }
        }
        self.initial.push(sink_start);
        (sink, sink_start)
    }
}
