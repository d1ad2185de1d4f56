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

/// ORs the `words`-long bitset row at word offset `src` into the one at `dst` (`dst != src`).
pub(crate) fn or_row(bits: &mut [u64], words: usize, dst: usize, src: usize) {
    let (to, from) = if dst < src {
        let (lo, hi) = bits.split_at_mut(src);
        (&mut lo[dst..dst + words], &hi[..words])
    } else {
        let (lo, hi) = bits.split_at_mut(dst);
        (&mut hi[..words], &lo[src..src + words])
    };
    for (t, f) in to.iter_mut().zip(from) {
        *t |= *f;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::problem::ProblemBuilder;

    #[test]
    fn reachability_is_the_transitive_closure() {
        // 70 activities (two bitset words), indices against topological order: a chain
        // 69 -> 68 -> ... -> 35, and 0 -> 69, plus an isolated activity 1.
        let mut b = ProblemBuilder::new();
        let ids: Vec<_> = (0..70).map(|k| b.activity(format!("a{k}"), 1)).collect();
        for k in (36..70).rev() {
            b.precedence(ids[k], ids[k - 1]);
        }
        b.precedence(ids[0], ids[69]);
        let p = b.build().unwrap();
        let r = Reachability::new(&p);
        assert!(r.precedes(0, 35) && r.precedes(0, 69) && r.precedes(69, 35));
        assert!(!r.precedes(35, 69) && !r.precedes(1, 0) && !r.precedes(0, 1));
        assert!(!r.precedes(40, 40));
        let count: usize = (0..70)
            .map(|i| (0..70).filter(|&j| r.precedes(i, j)).count())
            .sum();
        // Chain of 35 activities: 35 * 34 / 2 pairs, and 0 precedes all 35 of them.
        assert_eq!(count, 35 * 34 / 2 + 35);
    }

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

/// The transitive precedence relation: whether a chain of precedences leads from one
/// activity to another, as one bitset row per activity. Built in one reverse topological pass,
/// `O((n + m) n / 64)` time and `n^2 / 64` words of memory: meant for problems of up to some
/// thousands of activities (windows, PSPLIB), not for whole 100k-activity graphs.
#[derive(Clone, Debug)]
pub struct Reachability {
    words: usize,
    bits: Vec<u64>,
}

impl Reachability {
    /// The relation of `problem`.
    pub fn new(problem: &Problem) -> Self {
        let words = problem.len().div_ceil(64);
        let mut bits = vec![0u64; problem.len() * words];
        for &a in problem.topological_order().iter().rev() {
            let row = a.index() * words;
            for arc in problem.successors(a) {
                let j = arc.activity.index();
                bits[row + j / 64] |= 1 << (j % 64);
                // Successors come later in topological order: their rows are complete.
                or_row(&mut bits, words, row, j * words);
            }
        }
        Self { words, bits }
    }

    /// Whether activity `i` precedes activity `j` (by index) through a chain of precedences.
    #[inline]
    pub fn precedes(&self, i: usize, j: usize) -> bool {
        self.bits[i * self.words + j / 64] >> (j % 64) & 1 == 1
    }
}
