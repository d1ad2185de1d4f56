//! One window of [`super::improve`]: the sub-problem of a span of the current order, where
//! the regions whose mode changes lie inside it are decided, solved and decoded back.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::{backend, removed, JointConfig};
use crate::modal::{check_modal, Membership, ModalProblem, ModalSolution, ModalSolver, Region};
use crate::problem::{ActivityId, ProblemBuilder, Time};
use crate::sgs::{ActivityList, Decoder};
use crate::solver::{Limits, SolveError};

/// Solves the window of positions `lo..=hi` (plus neighbours) for region `r` within `limits`
/// and decodes the answer: `None` when the solve found nothing or the window decides no mode
/// of `r`; and the work the solver reported.
pub(super) fn solve_window(
    problem: &ModalProblem,
    current: &ModalSolution,
    (r, lo, hi): (usize, usize, usize),
    solver: &dyn ModalSolver,
    config: &JointConfig,
    limits: &Limits,
) -> Result<(Option<ModalSolution>, u64), SolveError> {
    let cur = Current { problem, current };
    let Some(window) = cur.window((r, lo, hi), config) else {
        return Ok((None, 0));
    };
    let Some(span) = cur.span(&window.activities, config.resolution) else {
        return Ok((None, 0));
    };
    let sub = cur.sub_problem(&window, &span)?;
    let Some(initial) = cur.initial(&window, &span, &sub) else {
        // Flooring broke a tight spot (lags): skip this window rather than start infeasible.
        return Ok((None, 0));
    };
    let outcome = solver.solve_modal(&sub.modal, limits, Some(&initial))?;
    let work = outcome.work;
    let Some(found) = outcome.solution else {
        return Ok((None, work));
    };
    let solution = cur.decode(&window, &span, &sub, &found)?;
    Ok((Some(solution), work))
}

/// The current solution of the problem a window improves.
struct Current<'a> {
    /// The problem.
    problem: &'a ModalProblem,
    /// The current solution.
    current: &'a ModalSolution,
}

/// The activities and modes of one window.
struct Window {
    /// The current order of present activities.
    order: Vec<ActivityId>,
    /// Whether each activity is in the window.
    in_window: Vec<bool>,
    /// Per region, the modes the window may choose.
    allowed: Vec<Vec<usize>>,
    /// The regions the window decides: those with another choice than their current mode.
    free: Vec<usize>,
    /// The window's activities, by id.
    activities: Vec<ActivityId>,
}

/// The time span of a window's present activities and its coarse time unit.
struct Span {
    /// The span's start.
    t0: Time,
    /// The span's end.
    t1: Time,
    /// The coarse unit.
    q: Time,
}

impl Span {
    /// `t` in coarse units from the span's start (0 before it).
    fn coarse(&self, t: Time) -> Time {
        (t - self.t0).max(0) / self.q
    }
}

/// A window's sub-problem.
struct Sub {
    /// The sub-problem: window activities, then pinned outside activities.
    modal: ModalProblem,
    /// Each activity's sub-problem activity, if it is in the window.
    sub_of: Vec<Option<ActivityId>>,
    /// The window activities in sub-problem order.
    back: Vec<ActivityId>,
}

impl Current<'_> {
    /// Whether `a` is present in the current solution.
    fn present(&self, a: ActivityId) -> bool {
        self.problem.present(a, &self.current.modes)
    }

    /// The current finish of `a`.
    fn finish(&self, a: ActivityId) -> Time {
        self.current.starts[a.index()] + self.problem.problem().duration(a)
    }

    /// The window of positions `lo..=hi` plus neighbours, with the modes it may choose and
    /// the activities those modes add; `None` when it decides no mode of region `r`.
    fn window(&self, (r, lo, hi): (usize, usize, usize), config: &JointConfig) -> Option<Window> {
        let (problem, current) = (self.problem, self.current);
        let p = problem.problem();
        // The current order of present activities.
        let mut order: Vec<ActivityId> = p.ids().filter(|&a| self.present(a)).collect();
        order.sort_by_key(|&a| (current.starts[a.index()], a.0));
        let from = lo.saturating_sub(config.neighbours);
        let to = (hi + config.neighbours + 1).min(order.len());
        let mut in_window = vec![false; p.len()];
        for &a in &order[from..to] {
            in_window[a.index()] = true;
        }
        // The modes the window may choose: per region, the current one and every mode whose
        // change (the present activities it removes) lies inside the window. A region with
        // another choice than its current mode is decided by the window.
        let allowed: Vec<Vec<usize>> = (0..problem.regions().len())
            .map(|x| {
                (0..problem.regions()[x].modes.len())
                    .filter(|&k| {
                        k == current.modes[x]
                            || removed(problem, current, x, k)
                                .iter()
                                .all(|a| in_window[a.index()])
                    })
                    .collect()
            })
            .collect();
        let free: Vec<usize> = (0..problem.regions().len())
            .filter(|&x| allowed[x].len() > 1)
            .collect();
        if !free.contains(&r) {
            return None;
        }
        let activities = self.window_activities(&mut in_window, &allowed, &free);
        Some(Window {
            order,
            in_window,
            allowed,
            free,
            activities,
        })
    }

    /// The window's activities: those in it and those the allowed modes of the `free`
    /// regions would add, never one of a mode the window cannot choose (`in_window` updated).
    fn window_activities(
        &self,
        in_window: &mut [bool],
        allowed: &[Vec<usize>],
        free: &[usize],
    ) -> Vec<ActivityId> {
        let problem = self.problem;
        let p = problem.problem();
        // The activities the allowed modes would add join the window; present ones outside
        // it stay where they are (every allowed mode keeps them).
        let mut in_allowed = vec![false; p.len()];
        for &x in free {
            for &k in &allowed[x] {
                for &a in &problem.regions()[x].modes[k] {
                    in_allowed[a.index()] = true;
                    if !self.present(a) {
                        in_window[a.index()] = true;
                    }
                }
            }
        }
        // Never take activities of modes the window cannot choose.
        let window: Vec<ActivityId> = p
            .ids()
            .filter(|&a| in_window[a.index()])
            .filter(|&a| match problem.membership(a) {
                Membership::Mandatory => true,
                Membership::Modes { .. } => in_allowed[a.index()] || self.present(a),
            })
            .collect();
        for a in p.ids() {
            if in_window[a.index()] && !window.contains(&a) {
                in_window[a.index()] = false;
            }
        }
        window
    }

    /// The span of the window's present activities in units of its `resolution`-th part;
    /// `None` when none is present.
    fn span(&self, window: &[ActivityId], resolution: Time) -> Option<Span> {
        let current = self.current;
        let spanned: Vec<ActivityId> = window
            .iter()
            .copied()
            .filter(|&a| self.present(a))
            .collect();
        if spanned.is_empty() {
            return None;
        }
        let t0 = spanned
            .iter()
            .map(|a| current.starts[a.index()])
            .min()
            .expect("non-empty");
        let t1 = spanned
            .iter()
            .map(|&a| self.finish(a))
            .max()
            .expect("non-empty");
        let q = ((t1 - t0).max(1) + resolution - 1) / resolution.max(1);
        let q = q.max(1);
        Some(Span { t0, t1, q })
    }

    /// The sub-problem: window activities, then pinned outside activities clipped to the
    /// span, with the free regions' allowed modes.
    fn sub_problem(&self, w: &Window, span: &Span) -> Result<Sub, SolveError> {
        let (problem, current) = (self.problem, self.current);
        let p = problem.problem();
        let (t0, t1, q) = (span.t0, span.t1, span.q);
        let horizon = span.coarse(t1);
        let mut b = ProblemBuilder::new();
        let resources: Vec<_> = p
            .resources()
            .iter()
            .map(|res| b.resource(res.name.clone(), res.capacity))
            .collect();
        let mut sub_of = vec![None; p.len()];
        let mut back: Vec<ActivityId> = Vec::new();
        for &a in &w.activities {
            let act = p.activity(a);
            let id = b.activity(act.name.clone(), act.duration / q);
            for (k, &amount) in act.demands.iter().enumerate() {
                if amount > 0 {
                    b.demand(id, resources[k], amount);
                }
            }
            let (release, deadline) = self.time_window(a, &w.in_window, span, horizon);
            if release > 0 {
                b.release(id, release);
            }
            b.deadline(id, deadline);
            sub_of[a.index()] = Some(id);
            back.push(a);
        }
        for &a in &w.order {
            if w.in_window[a.index()] || self.finish(a) <= t0 || current.starts[a.index()] >= t1 {
                continue;
            }
            let act = p.activity(a);
            if act.demands.iter().all(|&d| d == 0) {
                continue;
            }
            let s = span.coarse(current.starts[a.index()].max(t0));
            let e = span.coarse(self.finish(a).min(t1));
            if e <= s {
                continue;
            }
            let id = b.activity(format!("{}#pinned", act.name), e - s);
            for (k, &amount) in act.demands.iter().enumerate() {
                if amount > 0 {
                    b.demand(id, resources[k], amount);
                }
            }
            if s > 0 {
                b.release(id, s);
            }
            b.deadline(id, e);
        }
        for pr in p.precedences() {
            if let (Some(f), Some(t)) = (sub_of[pr.from.index()], sub_of[pr.to.index()]) {
                b.precedence_with_lag(f, t, pr.lag / q);
            }
        }
        let sub = b
            .build()
            .map_err(|e| backend(format!("a window sub-problem: {e}")))?;
        let modal = ModalProblem::new(sub, self.sub_regions(w, &sub_of))
            .map_err(|e| backend(format!("a window sub-problem: {e}")))?;
        Ok(Sub {
            modal,
            sub_of,
            back,
        })
    }

    /// The coarse release and deadline of window activity `a`: from present predecessors
    /// and successors outside the window, its own, and the span's end (`horizon`).
    fn time_window(
        &self,
        a: ActivityId,
        in_window: &[bool],
        span: &Span,
        horizon: Time,
    ) -> (Time, Time) {
        let p = self.problem.problem();
        let act = p.activity(a);
        let q = span.q;
        let mut release = span.coarse(act.release.max(span.t0));
        for arc in p.predecessors(a) {
            let o = arc.activity;
            if !in_window[o.index()] && self.present(o) {
                release = release.max(span.coarse(self.finish(o) + arc.lag));
            }
        }
        let mut deadline = horizon;
        for arc in p.successors(a) {
            let o = arc.activity;
            if !in_window[o.index()] && self.present(o) {
                deadline = deadline.min(span.coarse(self.current.starts[o.index()] - arc.lag));
            }
        }
        if let Some(d) = act.deadline {
            deadline = deadline.min(span.coarse(d));
        }
        let release = release.min(deadline - act.duration / q).max(0);
        (release, deadline.max(release + act.duration / q))
    }

    /// The free regions with their allowed modes, in sub-problem activities.
    fn sub_regions(&self, w: &Window, sub_of: &[Option<ActivityId>]) -> Vec<Region> {
        w.free
            .iter()
            .map(|&x| {
                let reg = &self.problem.regions()[x];
                Region {
                    name: reg.name.clone(),
                    modes: w.allowed[x]
                        .iter()
                        .map(|&k| {
                            reg.modes[k]
                                .iter()
                                .filter_map(|a| sub_of[a.index()])
                                .collect()
                        })
                        .collect(),
                }
            })
            .collect()
    }

    /// The floored current solution, which starts the solve; `None` when it fails the check.
    fn initial(&self, w: &Window, span: &Span, sub: &Sub) -> Option<ModalSolution> {
        let current = self.current;
        let mut starts: Vec<Time> = vec![0; sub.modal.problem().len()];
        for (i, &a) in sub.back.iter().enumerate() {
            starts[i] = if self.present(a) {
                span.coarse(current.starts[a.index()])
            } else {
                0
            };
        }
        for (i, act) in sub
            .modal
            .problem()
            .activities()
            .iter()
            .enumerate()
            .skip(sub.back.len())
        {
            starts[i] = act.release;
        }
        let initial = ModalSolution {
            modes: w
                .free
                .iter()
                .map(|&x| {
                    w.allowed[x]
                        .iter()
                        .position(|&k| k == current.modes[x])
                        .expect("the current mode is allowed")
                })
                .collect(),
            starts,
        };
        check_modal(&sub.modal, &initial).ok().map(|_| initial)
    }

    /// Decodes the window's solution `found`: the new modes, and the order by new (window) or
    /// current (outside) start, scheduled by the serial decoder.
    fn decode(
        &self,
        w: &Window,
        span: &Span,
        sub: &Sub,
        found: &ModalSolution,
    ) -> Result<ModalSolution, SolveError> {
        let (problem, current) = (self.problem, self.current);
        let mut modes = current.modes.clone();
        for (i, &x) in w.free.iter().enumerate() {
            modes[x] = w.allowed[x][found.modes[i]];
        }
        let key = |a: ActivityId| -> Time {
            match sub.sub_of[a.index()] {
                Some(i) => span.t0 + found.starts[i.index()] * span.q,
                None => current.starts[a.index()],
            }
        };
        let reduced = problem.reduce(&modes).map_err(|e| backend(e.to_string()))?;
        let rp = &reduced.problem;
        let mut indegree: Vec<usize> = rp.ids().map(|a| rp.predecessors(a).len()).collect();
        let mut ready: BinaryHeap<Reverse<(Time, usize)>> = rp
            .ids()
            .filter(|a| indegree[a.index()] == 0)
            .map(|a| Reverse((key(reduced.activities[a.index()]), a.0)))
            .collect();
        let mut list = Vec::with_capacity(rp.len());
        while let Some(Reverse((_, i))) = ready.pop() {
            list.push(ActivityId(i));
            for arc in rp.successors(ActivityId(i)) {
                let j = arc.activity.index();
                indegree[j] -= 1;
                if indegree[j] == 0 {
                    ready.push(Reverse((key(reduced.activities[j]), j)));
                }
            }
        }
        let list = ActivityList::new(rp, list).map_err(|e| backend(e.to_string()))?;
        let mut decoder = Decoder::new(rp);
        decoder.decode(&list);
        let starts = reduced.expand(&decoder.schedule(), problem.problem().len());
        Ok(ModalSolution { modes, starts })
    }
}
