//! Priority rules and the activity lists they induce.
//!
//! A rule gives every activity a value; smaller values are scheduled first. The rules are the
//! classic ones of Kolisch, "Efficient priority rules for the RCPSP" (Production Planning &
//! Control 7, 1996) and Kolisch & Hartmann (1999): LFT and LST (from the critical-path
//! deadline) are the strongest single-pass rules for the serial SGS; MTS and GRPW favour
//! activities with much work behind them.
//!
//! [`list_from_priorities`] picks, among the eligible activities (all predecessors listed), the
//! one with the smallest value; [`sample_list`] picks one at random with the regret-based
//! biased probabilities of Drexl (1991) / Kolisch & Drexl (1996): weight
//! `(max_E v - v_j + 1)^alpha`. Both cost `O(n log n + m)` and `O(n |E|)` respectively.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use rand::Rng;

use crate::problem::{ActivityId, Problem, Time};
use crate::temporal::{critical_path_length, earliest_starts, latest_starts};

/// A priority rule (smaller value first).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum Rule {
    /// Latest finish time (with the critical-path deadline).
    Lft,
    /// Latest start time.
    Lst,
    /// Most total successors (transitive).
    Mts,
    /// Greatest rank positional weight: own duration plus the durations of direct successors.
    Grpw,
    /// Earliest start time.
    Est,
    /// Shortest processing time.
    Spt,
    /// Minimum slack (`LST - EST`).
    Mslk,
    /// Random keys drawn from the seed (a fresh random priority per draw).
    RandomKeys,
}

impl Rule {
    /// Every rule, in a fixed order.
    pub const ALL: [Rule; 8] = [
        Rule::Lft,
        Rule::Lst,
        Rule::Mts,
        Rule::Grpw,
        Rule::Est,
        Rule::Spt,
        Rule::Mslk,
        Rule::RandomKeys,
    ];

    /// The rule's usual abbreviation in lowercase.
    pub fn as_str(self) -> &'static str {
        match self {
            Rule::Lft => "lft",
            Rule::Lst => "lst",
            Rule::Mts => "mts",
            Rule::Grpw => "grpw",
            Rule::Est => "est",
            Rule::Spt => "spt",
            Rule::Mslk => "mslk",
            Rule::RandomKeys => "random",
        }
    }

    /// Parses [`Rule::as_str`].
    pub fn from_name(name: &str) -> Option<Rule> {
        Rule::ALL.into_iter().find(|r| r.as_str() == name)
    }
}

/// The priority value of every activity under `rule` (random keys use `rng`).
pub fn priorities(problem: &Problem, rule: Rule, rng: &mut impl Rng) -> Vec<i64> {
    let n = problem.len();
    match rule {
        Rule::Lft | Rule::Lst | Rule::Mslk | Rule::Est => {
            let es = earliest_starts(problem);
            let ls = latest_starts(problem, critical_path_length(problem));
            problem
                .ids()
                .map(|a| {
                    let i = a.index();
                    match rule {
                        Rule::Lft => ls[i] + problem.duration(a),
                        Rule::Lst => ls[i],
                        Rule::Mslk => ls[i] - es[i],
                        _ => es[i],
                    }
                })
                .collect()
        }
        Rule::Mts => total_successors(problem)
            .into_iter()
            .map(|c| -(c as i64))
            .collect(),
        Rule::Grpw => problem
            .ids()
            .map(|a| {
                let w: Time = problem.duration(a)
                    + problem
                        .successors(a)
                        .iter()
                        .map(|s| problem.duration(s.activity))
                        .sum::<Time>();
                -w
            })
            .collect(),
        Rule::Spt => problem.ids().map(|a| problem.duration(a)).collect(),
        Rule::RandomKeys => (0..n)
            .map(|_| rng.random_range(0..i64::from(u32::MAX)))
            .collect(),
    }
}

/// Number of transitive successors of every activity, exactly, with reachability bitsets
/// over chunks of 4096 target activities: `O(m n / 64)` time, `O(n)` memory per chunk.
pub fn total_successors(problem: &Problem) -> Vec<usize> {
    const CHUNK: usize = 4096;
    let n = problem.len();
    let chunk = n.min(CHUNK);
    let words = chunk.div_ceil(64);
    let topo = problem.topological_order();
    let mut rank = vec![0usize; n];
    for (k, a) in topo.iter().enumerate() {
        rank[a.index()] = k;
    }
    let mut count = vec![0usize; n];
    let mut bits = vec![0u64; n * words];
    let mut base = 0;
    while base < n {
        // Targets of this chunk: activities with topological rank in [base, base + chunk).
        // Only activities of smaller rank can reach them.
        let targets = base..(base + chunk).min(n);
        bits.iter_mut().for_each(|w| *w = 0);
        for &i in topo[..targets.end].iter().rev() {
            let row = i.index() * words;
            for arc in problem.successors(i) {
                let j = arc.activity.index();
                if targets.contains(&rank[j]) {
                    let k = rank[j] - base;
                    bits[row + k / 64] |= 1 << (k % 64);
                }
                if rank[j] < targets.end {
                    crate::temporal::or_row(&mut bits, words, row, j * words);
                }
            }
            count[i.index()] += bits[row..row + words]
                .iter()
                .map(|w| w.count_ones() as usize)
                .sum::<usize>();
        }
        base += chunk;
    }
    count
}

/// The activity list that always takes the eligible activity with the smallest value (ties
/// by index).
pub fn list_from_priorities(problem: &Problem, values: &[i64]) -> Vec<ActivityId> {
    let n = problem.len();
    let mut waiting: Vec<usize> = problem
        .ids()
        .map(|a| problem.predecessors(a).len())
        .collect();
    let mut heap: BinaryHeap<Reverse<(i64, usize)>> = problem
        .ids()
        .filter(|a| waiting[a.index()] == 0)
        .map(|a| Reverse((values[a.index()], a.index())))
        .collect();
    let mut list = Vec::with_capacity(n);
    while let Some(Reverse((_, i))) = heap.pop() {
        list.push(ActivityId(i));
        for arc in problem.successors(ActivityId(i)) {
            let j = arc.activity.index();
            waiting[j] -= 1;
            if waiting[j] == 0 {
                heap.push(Reverse((values[j], j)));
            }
        }
    }
    list
}

/// Scratch space for [`sample_list`], reused across samples.
#[derive(Clone, Debug, Default)]
pub(crate) struct Sampler {
    waiting: Vec<usize>,
    eligible: Vec<usize>,
    weights: Vec<f64>,
}

impl Sampler {
    /// Regret-based biased random sampling of an activity list (see the module docs), into
    /// `list`. `alpha = 0` samples uniformly among eligible activities.
    pub(crate) fn sample_list(
        &mut self,
        problem: &Problem,
        values: &[i64],
        alpha: f64,
        rng: &mut impl Rng,
        list: &mut Vec<ActivityId>,
    ) {
        list.clear();
        self.waiting.clear();
        self.waiting
            .extend(problem.ids().map(|a| problem.predecessors(a).len()));
        self.eligible.clear();
        self.eligible
            .extend((0..problem.len()).filter(|&i| self.waiting[i] == 0));
        while !self.eligible.is_empty() {
            let worst = self
                .eligible
                .iter()
                .map(|&i| values[i])
                .max()
                .expect("non-empty");
            self.weights.clear();
            self.weights.extend(
                self.eligible
                    .iter()
                    .map(|&i| ((worst - values[i]) as f64 + 1.0).powf(alpha)),
            );
            let total: f64 = self.weights.iter().sum();
            let mut x = rng.random::<f64>() * total;
            let mut pick = self.eligible.len() - 1;
            for (k, w) in self.weights.iter().enumerate() {
                if x < *w {
                    pick = k;
                    break;
                }
                x -= w;
            }
            let i = self.eligible.swap_remove(pick);
            list.push(ActivityId(i));
            for arc in problem.successors(ActivityId(i)) {
                let j = arc.activity.index();
                self.waiting[j] -= 1;
                if self.waiting[j] == 0 {
                    self.eligible.push(j);
                }
            }
        }
    }
}

/// One regret-biased random activity list (see the module docs).
pub fn sample_list(
    problem: &Problem,
    values: &[i64],
    alpha: f64,
    rng: &mut impl Rng,
) -> Vec<ActivityId> {
    let mut list = Vec::with_capacity(problem.len());
    Sampler::default().sample_list(problem, values, alpha, rng, &mut list);
    list
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::problem::ProblemBuilder;
    use crate::sgs::ActivityList;
    use rand::SeedableRng;

    fn diamond() -> Problem {
        let mut b = ProblemBuilder::new();
        let a = b.activity("a", 1);
        let x = b.activity("x", 5);
        let y = b.activity("y", 2);
        let z = b.activity("z", 1);
        let w = b.activity("w", 1);
        b.precedence(a, x);
        b.precedence(a, y);
        b.precedence(x, z);
        b.precedence(y, z);
        b.precedence(y, w);
        b.build().unwrap()
    }

    #[test]
    fn total_successors_counts_each_once() {
        assert_eq!(total_successors(&diamond()), vec![4, 1, 2, 0, 0]);
    }

    #[test]
    fn rules_give_feasible_lists() {
        let p = diamond();
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        for rule in Rule::ALL {
            let v = priorities(&p, rule, &mut rng);
            ActivityList::new(&p, list_from_priorities(&p, &v)).unwrap();
            for alpha in [0.0, 1.0] {
                ActivityList::new(&p, sample_list(&p, &v, alpha, &mut rng)).unwrap();
            }
        }
        // MTS: y (2 successors) before x (1).
        let v = priorities(&p, Rule::Mts, &mut rng);
        assert_eq!(
            list_from_priorities(&p, &v),
            vec![
                ActivityId(0),
                ActivityId(2),
                ActivityId(1),
                ActivityId(3),
                ActivityId(4)
            ]
        );
    }
}
