//! Lower bounds on the optimal makespan.
//!
//! - [`critical_path`]: the longest path of durations and lags (resources ignored).
//! - [`energy`]: per resource, the work it must do divided by its capacity, plus the
//!   smallest head (earliest start) and smallest tail (longest path after the finish) of the
//!   activities that use it: they all run inside `[min head, makespan - min tail]`. This is
//!   the one-machine (Jackson) relaxation generalised to capacity `C` by area
//!   (Carlier & Pinson; Klein & Scholl, EJOR 112, 1999, bound LB_R with heads and tails).
//!
//! - [`energetic`]: destructive lower bounding with energetic reasoning. A trial makespan
//!   `T` is refuted when some resource must do more work inside some interval than its
//!   capacity allows, counting for every activity the least part of it that must fall inside
//!   the interval given its time window `[ES_j, T - tail_j - d_j]` (Baptiste, Le Pape &
//!   Nuijten, "Satisfiability tests and time-bound adjustments for cumulative scheduling
//!   problems", Annals of OR 92, 1999; used destructively by Klein & Scholl, EJOR 112, 1999).
//!   Refutation is monotone in `T`, so the bound is found by binary search.
//!
//! [`critical_path`] and [`energy`] cost `O(n R + m)`; [`energetic`] costs
//! `O(log(H) R n^3)` for the horizon `H`, so [`lower_bound`] applies it only up to
//! [`ENERGETIC_MAX_ACTIVITIES`] activities.

use crate::problem::{Problem, Time};
use crate::temporal::{earliest_starts, latest_starts, tails};

/// Which argument a lower bound comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "kebab-case"))]
#[non_exhaustive]
pub enum BoundKind {
    /// The critical path.
    CriticalPath,
    /// Resource work with heads and tails.
    Energy,
    /// Energetic reasoning on intervals (destructive).
    Energetic,
    /// A proof by an exact solver.
    Solver,
}

impl BoundKind {
    /// A short lowercase name for reports.
    pub fn as_str(self) -> &'static str {
        match self {
            BoundKind::CriticalPath => "critical-path",
            BoundKind::Energy => "energy",
            BoundKind::Energetic => "energetic",
            BoundKind::Solver => "solver",
        }
    }
}

/// A lower bound with the argument that gives it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct LowerBound {
    /// No schedule has a smaller makespan.
    pub value: Time,
    /// Where the value comes from.
    pub kind: BoundKind,
}

/// The critical-path bound.
pub fn critical_path(problem: &Problem) -> LowerBound {
    LowerBound {
        value: crate::temporal::critical_path_length(problem),
        kind: BoundKind::CriticalPath,
    }
}

/// The resource-energy bound with heads and tails (see the module docs); 0 without resources.
pub fn energy(problem: &Problem) -> LowerBound {
    let heads = earliest_starts(problem);
    let tails = tails(problem);
    let mut best: Time = 0;
    for (r, res) in problem.resources().iter().enumerate() {
        if res.capacity == 0 {
            continue;
        }
        let mut work: i128 = 0;
        let mut head = Time::MAX;
        let mut tail = Time::MAX;
        for (j, a) in problem.activities().iter().enumerate() {
            if a.duration > 0 && a.demands[r] > 0 {
                work += i128::from(a.duration) * i128::from(a.demands[r]);
                head = head.min(heads[j]);
                tail = tail.min(tails[j]);
            }
        }
        if work == 0 {
            continue;
        }
        let cap = i128::from(res.capacity);
        let span = (work + cap - 1) / cap;
        let bound = i128::from(head) + span + i128::from(tail);
        best = best.max(Time::try_from(bound).unwrap_or(Time::MAX));
    }
    LowerBound {
        value: best,
        kind: BoundKind::Energy,
    }
}

/// Largest problem for which [`lower_bound`] runs [`energetic`].
pub const ENERGETIC_MAX_ACTIVITIES: usize = 250;

/// The best of all bounds of this module (the first of critical path, energy, energetic on a
/// tie); energetic reasoning only for problems of at most [`ENERGETIC_MAX_ACTIVITIES`]
/// activities.
pub fn lower_bound(problem: &Problem) -> LowerBound {
    let cp = critical_path(problem);
    let en = energy(problem);
    let mut best = if en.value > cp.value { en } else { cp };
    if problem.len() <= ENERGETIC_MAX_ACTIVITIES {
        let er = energetic(problem, best.value, problem.horizon());
        if er.value > best.value {
            best = er;
        }
    }
    best
}

/// The smallest makespan in `[lower, upper]` that energetic reasoning cannot refute (see the
/// module docs), or `upper` if it refutes every smaller one. `lower` must be a valid bound
/// (for example [`critical_path`]) and `upper` an achievable makespan (for example the
/// problem's horizon or a heuristic's makespan).
pub fn energetic(problem: &Problem, lower: Time, upper: Time) -> LowerBound {
    let heads = earliest_starts(problem);
    let tails = tails(problem);
    let (mut lo, mut hi) = (lower, upper.max(lower));
    // Invariant: every makespan below `lo` is refuted; `hi` is not refuted (or is `upper`).
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if refuted(problem, &heads, &tails, mid) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    LowerBound {
        value: lo,
        kind: BoundKind::Energetic,
    }
}

/// Whether energetic reasoning proves that no schedule has makespan `t`.
fn refuted(problem: &Problem, heads: &[Time], tails: &[Time], t: Time) -> bool {
    let acts = problem.activities();
    let ls: Vec<Time> = if problem.has_time_windows() {
        latest_starts(problem, t)
    } else {
        (0..acts.len())
            .map(|j| t - tails[j] - acts[j].duration)
            .collect()
    };
    if ls.iter().zip(heads).any(|(l, e)| l < e) {
        return true;
    }
    for (r, res) in problem.resources().iter().enumerate() {
        let users: Vec<usize> = (0..acts.len())
            .filter(|&j| acts[j].duration > 0 && acts[j].demands[r] > 0)
            .collect();
        if users.is_empty() {
            continue;
        }
        // Interval ends from the characterisation of Baptiste et al. (1999).
        let mut starts: Vec<Time> = users
            .iter()
            .flat_map(|&j| [heads[j], heads[j] + acts[j].duration, ls[j]])
            .collect();
        let mut ends: Vec<Time> = users
            .iter()
            .flat_map(|&j| [ls[j] + acts[j].duration, heads[j] + acts[j].duration, ls[j]])
            .collect();
        starts.sort_unstable();
        starts.dedup();
        ends.sort_unstable();
        ends.dedup();
        let cap = i128::from(res.capacity);
        for &t1 in &starts {
            for &t2 in ends.iter().filter(|&&t2| t2 > t1) {
                let length = t2 - t1;
                let mut need: i128 = 0;
                for &j in &users {
                    let d = acts[j].duration;
                    let inside = length.min(d).min(heads[j] + d - t1).min(t2 - ls[j]).max(0);
                    need += i128::from(inside) * i128::from(acts[j].demands[r]);
                }
                if need > cap * i128::from(length) {
                    return true;
                }
            }
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::problem::ProblemBuilder;

    #[test]
    fn energy_beats_critical_path_on_parallel_work() {
        let mut b = ProblemBuilder::new();
        let r = b.resource("r", 2);
        let s = b.activity("s", 1);
        for k in 0..5 {
            let a = b.activity(format!("a{k}"), 3);
            b.demand(a, r, 1);
            b.precedence(s, a);
        }
        let p = b.build().unwrap();
        assert_eq!(critical_path(&p).value, 4);
        // head 1 + ceil(15 / 2) (= 8) + tail 0.
        assert_eq!(energy(&p).value, 9);
        assert_eq!(energetic(&p, 4, 100).value, 9);
    }

    #[test]
    fn energetic_reasoning_is_valid_and_can_beat_area() {
        // Capacity 2: `big` needs both units for 3; three `small` need one unit for 3 each.
        // The optimum is 9 (`big` alone, then the small ones in two rounds); area says 8.
        let mut b = ProblemBuilder::new();
        let r = b.resource("r", 2);
        let big = b.activity("big", 3);
        b.demand(big, r, 2);
        for k in 0..3 {
            let a = b.activity(format!("small{k}"), 3);
            b.demand(a, r, 1);
        }
        let p = b.build().unwrap();
        let e = energetic(&p, 3, 20).value;
        assert!(
            (8..=9).contains(&e),
            "never above the optimum 9, never below area 8: {e}"
        );

        // A release time makes part of the work fall late: `x` (4, no resource) precedes `y`
        // (4 on a unit resource) and `z` (4 on it too). Optimal: z [0,4), x [0,4), y [4,8) = 8.
        let mut b = ProblemBuilder::new();
        let r = b.resource("r", 1);
        let x = b.activity("x", 4);
        let y = b.activity("y", 4);
        let z = b.activity("z", 4);
        b.demand(y, r, 1);
        b.demand(z, r, 1);
        b.precedence(x, y);
        let p = b.build().unwrap();
        assert_eq!(energetic(&p, 8, 20).value, 8);

        // Two unit-resource jobs that must both run inside [2, 6): a makespan of 6 is refuted
        // by energy in that interval (8 > 4), though the critical path is 6.
        let mut b = ProblemBuilder::new();
        let r = b.resource("r", 1);
        let head = b.activity("head", 2);
        let u = b.activity("u", 4);
        let v = b.activity("v", 4);
        b.demand(u, r, 1);
        b.demand(v, r, 1);
        b.precedence(head, u);
        b.precedence(head, v);
        let p = b.build().unwrap();
        assert_eq!(critical_path(&p).value, 6);
        assert_eq!(energetic(&p, 6, 20).value, 10);
    }
}
