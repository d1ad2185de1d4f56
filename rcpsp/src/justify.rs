//! Forward-backward improvement (justification).
//!
//! Shift every activity as far right as it can go (serial SGS on the reversed problem, taking
//! activities by decreasing finish time), then as far left (serial SGS forward, by increasing
//! start time of the right-justified schedule). Each pass can only shorten the schedule; the
//! pair is repeated while it does. Cost: two serial SGS passes and two sorts per iteration.
//! Source: Li & Willis (EJOR 56, 1992); Valls, Ballestín & Quintanilla, "Justification and
//! RCPSP: a technique that pays" (EJOR 165, 2005).

use crate::problem::{ActivityId, Problem, Time};
use crate::schedule::Schedule;
use crate::sgs::Decoder;

/// Justifies a valid schedule of `problem` (see the module docs) until a round brings no
/// improvement; the result is never longer. Cost per round: two serial SGS passes.
///
/// The schedule must pass [`crate::check`]; an invalid one gives an arbitrary (but valid)
/// schedule.
pub fn justify(problem: &Problem, schedule: &Schedule) -> Schedule {
    let reversed = problem.reversed();
    let mut forward = Decoder::new(problem);
    forward.serial(&schedule.order_by_start(problem));
    Justifier::new(problem, &reversed).justify(&mut forward, usize::MAX);
    forward.schedule()
}

/// Reusable state for justifying many schedules of one problem.
#[derive(Clone, Debug)]
pub(crate) struct Justifier<'p> {
    problem: &'p Problem,
    backward: Decoder<'p>,
    rank: Vec<usize>,
    keys: Vec<(Time, Time, usize)>,
    list: Vec<ActivityId>,
    /// Forward-time starts of the last right-justified schedule.
    right: Vec<Time>,
}

impl<'p> Justifier<'p> {
    /// `reversed` must be `problem.reversed()`.
    pub(crate) fn new(problem: &'p Problem, reversed: &'p Problem) -> Self {
        let mut rank = vec![0; problem.len()];
        for (k, a) in problem.topological_order().iter().enumerate() {
            rank[a.index()] = k;
        }
        Self {
            problem,
            backward: Decoder::new(reversed),
            rank,
            keys: Vec::with_capacity(problem.len()),
            list: Vec::with_capacity(problem.len()),
            right: vec![0; problem.len()],
        }
    }

    /// Improves the schedule held by `forward` (which must decode `problem`) in place and
    /// returns its new makespan and the number of schedules generated.
    pub(crate) fn justify(&mut self, forward: &mut Decoder<'p>, max_rounds: usize) -> (Time, u64) {
        let mut makespan = forward.makespan();
        let mut generated = 0;
        for _ in 0..max_rounds {
            // Backward: decreasing finish, then decreasing start, then reverse topological
            // rank, which keeps every successor ahead of its predecessors even with zero
            // durations and lags.
            let starts = forward.starts();
            self.keys.clear();
            for a in self.problem.ids() {
                let s = starts[a.index()];
                let f = s + self.problem.duration(a);
                self.keys.push((-f, -s, usize::MAX - self.rank[a.index()]));
            }
            self.sort_list();
            let back = self.backward.serial(&self.list);
            generated += 1;
            // Read the reversed schedule forwards: [M - s' - d, M - s').
            for a in self.problem.ids() {
                self.right[a.index()] =
                    back - self.backward.starts()[a.index()] - self.problem.duration(a);
            }
            self.keys.clear();
            for a in self.problem.ids() {
                let s = self.right[a.index()];
                self.keys
                    .push((s, s + self.problem.duration(a), self.rank[a.index()]));
            }
            self.sort_list();
            let fwd = forward.serial(&self.list);
            generated += 1;
            debug_assert!(
                fwd <= back && back <= makespan,
                "justification never lengthens"
            );
            if fwd >= makespan {
                makespan = fwd;
                break;
            }
            makespan = fwd;
        }
        (makespan, generated)
    }

    fn sort_list(&mut self) {
        let keys = &self.keys;
        self.list.clear();
        self.list.extend(self.problem.ids());
        self.list.sort_unstable_by_key(|a| keys[a.index()]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::check;
    use crate::problem::ProblemBuilder;
    use crate::schedule::Schedule;

    #[test]
    fn justification_closes_a_gap() {
        // x (1 long) and y (3 long) share a unit resource; z (5 long, no resource) follows x.
        // List y, x, z: y [0,3), x [3,4), z [4,9): makespan 9.
        // Backward pass (z, x, y on the reversed problem): z [0,5), x [5,6), y [0,3): 6.
        // Read forwards: x [0,1), z [1,6), y [3,6); forward pass by start: x, z, y -> 6.
        let mut bld = ProblemBuilder::new();
        let r = bld.resource("r", 1);
        let x = bld.activity("x", 1);
        let y = bld.activity("y", 3);
        let z = bld.activity("z", 5);
        bld.demand(x, r, 1);
        bld.demand(y, r, 1);
        bld.precedence(x, z);
        let p = bld.build().unwrap();
        let rev = p.reversed();
        let mut fwd = Decoder::new(&p);
        assert_eq!(fwd.serial(&[y, x, z]), 9);
        let mut j = Justifier::new(&p, &rev);
        let (m, generated) = j.justify(&mut fwd, 4);
        assert_eq!(m, 6);
        assert_eq!(generated, 4, "one improving round, one that confirms");
        assert_eq!(fwd.starts(), &[0, 1, 1]);
        assert_eq!(check(&p, &Schedule::new(fwd.starts().to_vec())), Ok(6));
    }
}
