//! Time analysis of the precedence graph alone (the critical path method, CPM): earliest
//! and latest start times, ignoring resources.
//!
//! Both passes visit each activity and arc once in topological order: `O(n + m)`.
//! Source: Kelley & Walker, "Critical-path planning and scheduling" (1959).

use crate::problem::{ActivityId, Problem, Time};

/// Earliest start of every activity: `ES_j = max(release_j, max over i -> j of ES_i + d_i +
/// lag)`.
pub fn earliest_starts(problem: &Problem) -> Vec<Time> {
    let mut es = vec![0 as Time; problem.len()];
    for &j in problem.topological_order() {
        let e = problem
            .predecessors(j)
            .iter()
            .map(|arc| es[arc.activity.index()] + problem.duration(arc.activity) + arc.lag)
            .max()
            .unwrap_or(0)
            .max(problem.release(j));
        es[j.index()] = e;
    }
    es
}

/// Latest start of every activity such that everything finishes by `deadline` and by its own
/// deadline: `LS_i = min(min(deadline, D_i) - d_i, min over i -> j of LS_j - lag - d_i)`.
/// With `deadline` = the critical path length, activities with `LS = ES` are critical.
pub fn latest_starts(problem: &Problem, deadline: Time) -> Vec<Time> {
    let mut ls = vec![0 as Time; problem.len()];
    for &i in problem.topological_order().iter().rev() {
        let d = problem.duration(i);
        let own = problem.deadline(i).map_or(deadline, |di| di.min(deadline)) - d;
        let l = problem
            .successors(i)
            .iter()
            .map(|arc| ls[arc.activity.index()] - arc.lag - d)
            .min()
            .unwrap_or(own)
            .min(own);
        ls[i.index()] = l;
    }
    ls
}

/// An activity that cannot meet its time window even without resources (its earliest start
/// is after its latest start, with deadlines propagated backwards through precedences), if
/// any: then no schedule exists. `O(n + m)`.
pub fn window_conflict(problem: &Problem) -> Option<ActivityId> {
    if !problem.has_time_windows() {
        return None;
    }
    let es = earliest_starts(problem);
    let ls = latest_starts(problem, Time::MAX / 4);
    problem.ids().find(|a| es[a.index()] > ls[a.index()])
}

/// Length of the longest path (durations plus lags) from any activity's start to any
/// activity's finish: the critical-path lower bound on the makespan.
pub fn critical_path_length(problem: &Problem) -> Time {
    let es = earliest_starts(problem);
    problem
        .ids()
        .map(|a| es[a.index()] + problem.duration(a))
        .max()
        .unwrap_or(0)
}

/// Tail of every activity: the longest path from its finish to the end of the project
/// (`critical path - LF_j` for the critical-path deadline).
pub fn tails(problem: &Problem) -> Vec<Time> {
    let mut tail = vec![0 as Time; problem.len()];
    for &i in problem.topological_order().iter().rev() {
        tail[i.index()] = problem
            .successors(i)
            .iter()
            .map(|arc| arc.lag + problem.duration(arc.activity) + tail[arc.activity.index()])
            .max()
            .unwrap_or(0);
    }
    tail
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::problem::ProblemBuilder;

    #[test]
    fn diamond_with_lag() {
        let mut b = ProblemBuilder::new();
        let a = b.activity("a", 2);
        let x = b.activity("x", 3);
        let y = b.activity("y", 1);
        let z = b.activity("z", 4);
        b.precedence(a, x);
        b.precedence_with_lag(a, y, 5);
        b.precedence(x, z);
        b.precedence(y, z);
        let p = b.build().unwrap();
        assert_eq!(earliest_starts(&p), vec![0, 2, 7, 8]);
        assert_eq!(critical_path_length(&p), 12);
        assert_eq!(latest_starts(&p, 12), vec![0, 5, 7, 8]);
        assert_eq!(tails(&p), vec![10, 4, 4, 0]);
    }
}
