//! Lower bounds on the optimal makespan.
//!
//! - [`critical_path`]: the longest path of durations and lags (resources ignored).
//! - [`energy`]: per resource, the work it must do divided by its capacity, plus the
//!   smallest head (earliest start) and smallest tail (longest path after the finish) of the
//!   activities that use it: they all run inside `[min head, makespan - min tail]`. This is
//!   the one-machine (Jackson) relaxation generalised to capacity `C` by area
//!   (Carlier & Pinson; Klein & Scholl, EJOR 112, 1999, bound LB_R with heads and tails).
//!
//! All bounds cost `O(n R + m)`.

use crate::problem::{Problem, Time};
use crate::temporal::{earliest_starts, tails};

/// Which argument a lower bound comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum BoundKind {
    /// The critical path.
    CriticalPath,
    /// Resource work with heads and tails.
    Energy,
    /// A proof by an exact solver.
    Solver,
}

impl BoundKind {
    /// A short lowercase name for reports.
    pub fn as_str(self) -> &'static str {
        match self {
            BoundKind::CriticalPath => "critical-path",
            BoundKind::Energy => "energy",
            BoundKind::Solver => "solver",
        }
    }
}

/// A lower bound with the argument that gives it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
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

/// The best of all bounds of this module (the critical path on a tie).
pub fn lower_bound(problem: &Problem) -> LowerBound {
    let cp = critical_path(problem);
    let en = energy(problem);
    if en.value > cp.value {
        en
    } else {
        cp
    }
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
        assert_eq!(lower_bound(&p).kind, BoundKind::Energy);
    }
}
