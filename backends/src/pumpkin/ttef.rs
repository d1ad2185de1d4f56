//! Time-table edge finding (TTEF) for one resource: a `cumulative` propagator of this crate
//! that reasons on the energy of windows `[a, b)`, beside pumpkin's time-tabling.
//!
//! # What it does
//! For tasks with start `s_i` in `[est_i, lst_i]`, duration `p_i` and demand `c_i` on a
//! resource of capacity `C`, the *compulsory part* of `i` is `[lst_i, est_i + p_i)` when that
//! is not empty, and `TT` is the profile of all compulsory parts (what time-tabling
//! propagates). The *free energy* of `i` is `c_i` times the part of `p_i` outside its
//! compulsory part. For a window `[a, b)` with `a` an earliest start and `b` a latest end,
//! the energy every schedule spends in it is at least
//! `E(a, b) = TT-energy of [a, b) + the free energy of the tasks inside [a, b)`
//! (a task inside has `a <= est_i` and `lst_i + p_i <= b`). Then:
//! - **overload**: `E(a, b) > C (b - a)` is a conflict;
//! - **edge finding**: a task `u` not inside, with `a <= est_u < b < lst_u + p_u`, may spend at
//!   most `r = floor((C (b - a) - E_u) / c_u)` time units in the window, `E_u` being `E(a, b)`
//!   without `u`'s compulsory part; when `r < p_u`, `u` must start at or after `b - r`.
//!
//! The latest-start side is the same propagator on the mirrored tasks (start `-s_i - p_i`),
//! posted by [`post`].
//!
//! # Explanations
//! A conflict or a new bound is explained by the bounds that give the window its energy:
//! `[s_i >= a]` and `[s_i <= b - p_i]` for a task inside, and for any other task whose
//! compulsory part meets the window, `[s_i <= max(lst_i, a)]` and `[s_i >= min(est_i, b -
//! p_i)]` (lifted to the window's edges: they keep the same overlap); a new bound of `u`
//! adds `[s_u >= a]`. Every predicate holds when the explanation is made, and whatever
//! assignment satisfies them all spends at least `E(a, b)` (without `u`) in the window, so
//! the explanation is valid whatever else the search has done: the brute-force tests check
//! exactly that.
//!
//! # Cost
//! `O(n^2)` windows per call (`n` tasks) after `O(n log n)` of sorting and prefix sums: the
//! profile's energy before every earliest start is computed once, so a window costs `O(1)`.
//! Per window end `b`, one pass over the tasks that start before `b`, by decreasing earliest
//! start, adds the free energies, and one by increasing earliest start keeps, for every task,
//! the window of least slack to its left, so the edge-finding step is `O(n)` per `b` as well;
//! each task is pushed at most once per call, by its largest bound. It runs at pumpkin's
//! lowest priority, after the cheaper propagators have reached their fixpoint. On a j60
//! instance it takes about a third of the search's time: `j605_1` makes 3.1k conflicts in 2 s
//! with it against 5.5k without (one thread).
//!
//! # Sources
//! - P. Vilím, "Timetable edge finding filtering algorithm for discrete cumulative resources",
//!   CPAIOR 2011, LNCS 6697, 230-245 (the rule and its energy: compulsory parts plus free
//!   parts of the tasks inside a window).
//! - A. Schutt, T. Feydy, P. J. Stuckey, "Explaining time-table-edge-finding propagation for
//!   the cumulative resource constraint", CPAIOR 2013, LNCS 7874, 234-250 (the explanations:
//!   window bounds for the tasks inside, compulsory-part bounds for the rest).
//! - The propagator API of pumpkin-core 0.5 (`Propagator`, `PropagationContext::post`), as
//!   its own `DisjunctivePropagator` uses it.

use pumpkin_core::declare_inference_label;
use pumpkin_core::predicate;
use pumpkin_core::predicates::PropositionalConjunction;
use pumpkin_core::proof::{ConstraintTag, InferenceCode};
use pumpkin_core::propagation::{
    DomainEvents, EventsToRegister, LocalId, PropagationContext, Propagator, PropagatorConstructor,
    PropagatorConstructorContext, PropagatorSpec, ReadDomains, RuntimeCheckers,
};
use pumpkin_core::state::{propagator_conflict, PropagationStatusCP};
use pumpkin_core::variables::{AffineView, DomainId, IntegerVariable, TransformableVariable};

declare_inference_label!(TimeTableEdgeFinding);

/// One task of the resource: its start variable, duration and demand (both positive).
#[derive(Clone, Debug)]
pub(super) struct Task<Var> {
    pub(super) start: Var,
    pub(super) duration: i32,
    pub(super) demand: i32,
}

/// Posts TTEF on `tasks` (start, duration, demand; all durations and demands positive) and a
/// capacity, both directions: the earliest starts on the tasks, the latest on their mirror.
pub(super) fn post(
    solver: &mut pumpkin_core::Solver,
    tasks: &[(DomainId, i32, i32)],
    capacity: i32,
    tag: ConstraintTag,
) {
    let forward = tasks.iter().map(|&(s, p, c)| Task {
        start: s.scaled(1),
        duration: p,
        demand: c,
    });
    let _ = solver.add_propagator(TtefConstructor::new(forward, capacity, tag));
    let _ = solver.add_propagator(TtefConstructor::new(mirrored(tasks), capacity, tag));
}

/// The mirrored tasks: start `-s - p`, so that earliest starts are the latest ends negated.
pub(super) fn mirrored(
    tasks: &[(DomainId, i32, i32)],
) -> impl Iterator<Item = Task<AffineView<DomainId>>> + '_ {
    tasks.iter().map(|&(s, p, c)| Task {
        start: s.offset(p).scaled(-1),
        duration: p,
        demand: c,
    })
}

/// Builds a [`TtefPropagator`]: what pumpkin's `add_propagator` takes.
pub(super) struct TtefConstructor<Var> {
    tasks: Vec<Task<Var>>,
    capacity: i32,
    tag: ConstraintTag,
}

impl<Var> TtefConstructor<Var> {
    /// TTEF on `tasks` (durations and demands positive) under `capacity`, earliest starts.
    pub(super) fn new(
        tasks: impl IntoIterator<Item = Task<Var>>,
        capacity: i32,
        tag: ConstraintTag,
    ) -> Self {
        Self {
            tasks: tasks.into_iter().collect(),
            capacity,
            tag,
        }
    }
}

impl<Var: IntegerVariable + 'static> PropagatorConstructor for TtefConstructor<Var> {
    type PropagatorImpl = TtefPropagator<Var>;

    fn create(self, _: PropagatorConstructorContext<'_>) -> PropagatorSpec<Self::PropagatorImpl> {
        let mut registration = EventsToRegister::builder();
        for (i, task) in self.tasks.iter().enumerate() {
            let id = LocalId::from(u32::try_from(i).expect("fewer than 2^32 tasks"));
            registration = registration.add(&task.start, DomainEvents::BOUNDS, id);
        }
        PropagatorSpec {
            registration: registration.build(),
            checkers: RuntimeCheckers::empty(),
            propagator: TtefPropagator {
                tasks: self.tasks.into_boxed_slice(),
                capacity: self.capacity,
                inference_code: InferenceCode::new(self.tag, TimeTableEdgeFinding),
            },
        }
    }
}

/// The propagator (see the module docs).
#[derive(Clone, Debug)]
pub(super) struct TtefPropagator<Var> {
    tasks: Box<[Task<Var>]>,
    capacity: i32,
    inference_code: InferenceCode,
}

impl<Var: IntegerVariable + 'static> Propagator for TtefPropagator<Var> {
    fn name(&self) -> &str {
        "TimeTableEdgeFinding"
    }

    fn propagate_from_scratch(&self, mut context: PropagationContext<'_>) -> PropagationStatusCP {
        let bounds: Vec<Bounds> = self.tasks.iter().map(|t| Bounds::of(t, &context)).collect();
        let windows = Windows::new(&bounds, self.capacity);
        match windows.search() {
            Found::Overload { a, b } => {
                propagator_conflict(self.explain(&bounds, a, b, None), &self.inference_code)
            }
            Found::Pushes(pushes) => {
                for push in pushes {
                    let task = &self.tasks[push.task];
                    if push.bound <= context.lower_bound(&task.start) {
                        continue;
                    }
                    let reason = self.explain(&bounds, push.a, push.b, Some(push.task));
                    let start = &task.start;
                    context.post(
                        predicate!(start >= push.bound),
                        (reason, &self.inference_code),
                    )?;
                }
                Ok(())
            }
        }
    }
}

impl<Var: IntegerVariable> TtefPropagator<Var> {
    /// The bounds that give window `[a, b)` its energy (see the module docs), without task
    /// `pushed`'s compulsory part and with `[s_pushed >= a]` when it is given.
    fn explain(
        &self,
        bounds: &[Bounds],
        a: i32,
        b: i32,
        pushed: Option<usize>,
    ) -> PropositionalConjunction {
        let mut reason = PropositionalConjunction::default();
        for (i, (task, t)) in self.tasks.iter().zip(bounds).enumerate() {
            let start = &task.start;
            if Some(i) == pushed {
                reason.push(predicate!(start >= a));
            } else if t.inside(a, b) {
                reason.push(predicate!(start >= a));
                reason.push(predicate!(start <= b - t.duration));
            } else if t.compulsory_in(a, b) > 0 {
                reason.push(predicate!(start <= t.lst.max(a)));
                reason.push(predicate!(start >= t.est.min(b - t.duration)));
            }
        }
        reason
    }
}

/// A task's bounds at the time of the call.
#[derive(Clone, Copy, Debug)]
struct Bounds {
    est: i32,
    lst: i32,
    duration: i32,
    demand: i32,
}

impl Bounds {
    fn of<Var: IntegerVariable>(task: &Task<Var>, context: &PropagationContext<'_>) -> Self {
        Self {
            est: context.lower_bound(&task.start),
            lst: context.upper_bound(&task.start),
            duration: task.duration,
            demand: task.demand,
        }
    }

    fn ect(&self) -> i32 {
        self.est + self.duration
    }

    fn lct(&self) -> i32 {
        self.lst + self.duration
    }

    /// Whether the task lies in `[a, b)` whatever its start.
    fn inside(&self, a: i32, b: i32) -> bool {
        a <= self.est && self.lct() <= b
    }

    /// The length of the compulsory part `[lst, ect)` within `[a, b)`.
    fn compulsory_in(&self, a: i32, b: i32) -> i64 {
        (i64::from(self.ect().min(b)) - i64::from(self.lst.max(a))).max(0)
    }

    /// Demand times the duration outside the compulsory part.
    fn free_energy(&self) -> i64 {
        let compulsory = (self.ect() - self.lst).max(0).min(self.duration);
        i64::from(self.demand) * i64::from(self.duration - compulsory)
    }
}

/// What one call found: a window in overload, or the new earliest starts.
enum Found {
    Overload { a: i32, b: i32 },
    Pushes(Vec<Push>),
}

/// A new earliest start `bound` for `task`, from window `[a, b)`.
struct Push {
    task: usize,
    bound: i32,
    a: i32,
    b: i32,
}

/// The profile of compulsory parts with its energy prefix sums, and the tasks sorted by
/// earliest start and by latest end.
struct Windows<'a> {
    tasks: &'a [Bounds],
    capacity: i64,
    /// Breakpoints of the profile, increasing.
    times: Vec<i32>,
    /// Height of the profile from `times[k]` to `times[k + 1]`.
    heights: Vec<i64>,
    /// Energy of the profile before `times[k]`.
    energy: Vec<i64>,
    by_est: Vec<usize>,
    /// The profile's energy before the earliest start of the task of each rank of `by_est`.
    before_est: Vec<i64>,
    by_lct: Vec<usize>,
}

impl<'a> Windows<'a> {
    fn new(tasks: &'a [Bounds], capacity: i32) -> Self {
        let mut events: Vec<(i32, i64)> = Vec::new();
        for t in tasks.iter().filter(|t| t.lst < t.ect()) {
            events.push((t.lst, i64::from(t.demand)));
            events.push((t.ect(), -i64::from(t.demand)));
        }
        events.sort_unstable();
        let (mut times, mut heights, mut energy) = (Vec::new(), Vec::new(), Vec::new());
        let (mut height, mut total) = (0i64, 0i64);
        for (k, &(time, delta)) in events.iter().enumerate() {
            height += delta;
            if events.get(k + 1).is_some_and(|e| e.0 == time) {
                continue;
            }
            if let (Some(&last), Some(&h)) = (times.last(), heights.last()) {
                total += h * i64::from(time - last);
            }
            times.push(time);
            heights.push(height);
            energy.push(total);
        }
        let mut by_est: Vec<usize> = (0..tasks.len()).collect();
        by_est.sort_by_key(|&i| (tasks[i].est, i));
        let mut by_lct: Vec<usize> = (0..tasks.len()).collect();
        by_lct.sort_by_key(|&i| (tasks[i].lct(), i));
        by_lct.dedup_by_key(|i| tasks[*i].lct());
        let mut windows = Self {
            tasks,
            capacity: i64::from(capacity),
            times,
            heights,
            energy,
            by_est,
            before_est: Vec::new(),
            by_lct,
        };
        windows.before_est = windows
            .by_est
            .iter()
            .map(|&i| windows.before(tasks[i].est))
            .collect();
        windows
    }

    /// The profile's energy before time `t`.
    fn before(&self, t: i32) -> i64 {
        match self.times.partition_point(|&x| x <= t) {
            0 => 0,
            k => self.energy[k - 1] + self.heights[k - 1] * i64::from(t - self.times[k - 1]),
        }
    }

    /// Every window `[a, b)`: the first overload, else the largest push of each task.
    fn search(&self) -> Found {
        let mut pushes: Vec<Option<Push>> = Vec::new();
        pushes.resize_with(self.tasks.len(), || None);
        // Per earliest-start rank: the slack of window [a, b) for the current b.
        let mut slack = vec![0; self.by_est.len()];
        for &last in &self.by_lct {
            let b = self.tasks[last].lct();
            let top = self.opening(b);
            if let Some((a, b)) = self.slacks(b, top, &mut slack) {
                return Found::Overload { a, b };
            }
            self.push_right(b, &slack[..top], &mut pushes);
        }
        Found::Pushes(pushes.into_iter().flatten().collect())
    }

    /// The number of ranks of `by_est` whose earliest start is before `b`: only they open a
    /// window `[a, b)`, and only their tasks can lie in one.
    fn opening(&self, b: i32) -> usize {
        self.by_est.partition_point(|&i| self.tasks[i].est < b)
    }

    /// Fills `slack[k]` for the first `top` ranks with `C (b - a) - E(a, b)`, `a` the
    /// earliest start of the task of rank `k`; returns a window in overload if there is one.
    fn slacks(&self, b: i32, top: usize, slack: &mut [i64]) -> Option<(i32, i32)> {
        let mut free = 0i64;
        let after_b = self.before(b);
        for k in (0..top).rev() {
            let t = &self.tasks[self.by_est[k]];
            if t.lct() <= b {
                free += t.free_energy();
            }
            let a = t.est;
            let used = after_b - self.before_est[k] + free;
            slack[k] = self.capacity * i64::from(b - a) - used;
            if slack[k] < 0 {
                return Some((a, b));
            }
        }
        None
    }

    /// For every task `u` that ends after `b` and starts before it, the window `[a, b)` of
    /// least slack with `a <= est_u`; a push when `u` cannot fit its part there.
    fn push_right(&self, b: i32, slack: &[i64], pushes: &mut [Option<Push>]) {
        // The least slack (and its rank) over the ranks seen so far.
        let mut best: Option<(i64, usize)> = None;
        for (k, &u) in self.by_est[..slack.len()].iter().enumerate() {
            if best.is_none_or(|(s, _)| slack[k] < s) {
                best = Some((slack[k], k));
            }
            let t = &self.tasks[u];
            if t.lct() <= b {
                continue;
            }
            let Some((s, rank)) = best else { continue };
            let a = self.tasks[self.by_est[rank]].est;
            // The window's slack once u's own compulsory part is given back.
            let room = s + i64::from(t.demand) * t.compulsory_in(a, b);
            let r = room / i64::from(t.demand);
            if r < i64::from(t.duration) && i64::from(b) - r > i64::from(t.est) {
                let bound = i32::try_from(i64::from(b) - r).expect("within the window");
                if pushes[u].as_ref().is_none_or(|p| p.bound < bound) {
                    pushes[u] = Some(Push {
                        task: u,
                        bound,
                        a,
                        b,
                    });
                }
            }
        }
    }
}

#[cfg(test)]
#[path = "ttef_tests.rs"]
mod tests;
