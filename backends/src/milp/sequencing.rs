//! The sequencing formulation with resource flows (Artigues, Michelon & Reusser, "Insertion
//! techniques for static and dynamic resource-constrained project scheduling", EJOR 149,
//! 2003; see also Koné et al., "Event-based MILP models for RCPSP", C&OR 38, 2011).
//!
//! - integer starts `s_j` in `[ES_j, LS_j]` for the horizon `T`; makespan `M >= s_j + d_j`;
//! - precedences `s_j >= s_i + d_i + l`;
//! - for two activities that share a resource and are not already ordered (by the transitive
//!   precedences or by their time windows), binaries `y_ij`, `y_ji` ("finishes before the other
//!   starts") with `y_ij + y_ji <= 1` and `s_j >= s_i + d_i - M_ij (1 - y_ij)`,
//!   `M_ij = LS_i + d_i - ES_j`;
//! - per resource `k`, a flow of units from a source (holding `C_k`) through the activities
//!   that use `k` (each passes on exactly its demand) to a sink: `f_ijk <= min(q_ik, q_jk) y_ij`
//!   on arcs that need `y`. A schedule is resource-feasible exactly when such a flow exists.
//!
//! Size: `O(n^2)` binaries and `O(n^2 R)` flows, independent of the horizon.

use std::collections::BTreeMap;

use concerto_rcpsp::temporal::{earliest_starts, latest_starts, Reachability};
use concerto_rcpsp::{lower_bound, Problem, Schedule, Time};
use good_lp::{variable, Variable};

use super::{Model, StartsFrom};

/// Builds the model for `horizon`, with warm-start values from `warm` (a schedule of makespan
/// at most `horizon`).
pub(crate) fn build(
    problem: &Problem,
    horizon: Time,
    warm: Option<&Schedule>,
) -> (Model, StartsFrom) {
    let seq = Sequencing {
        problem,
        es: earliest_starts(problem),
        ls: latest_starts(problem, horizon),
        d: problem.ids().map(|j| problem.duration(j)).collect(),
        reach: Reachability::new(problem),
        warm,
    };
    let lower = lower_bound(problem).value.min(horizon);
    let mut model = Model::new(lower, horizon, warm.map(|s| s.makespan(problem)));
    let (starts, positions) = seq.add_starts(&mut model);
    // Sequencing binaries for unordered pairs that share a resource.
    let users = seq.users();
    let y = seq.add_sequencing(&mut model, &starts, &users);
    // Resource flows. Nodes: activities, then the source (n) and the sink (n + 1).
    for (r, u) in users.iter().enumerate() {
        seq.add_flow(&mut model, r, u, &y);
    }
    (model, StartsFrom::Variables(positions))
}

/// What the rows of [`build`] are made from: the problem, its time windows, durations and
/// transitive precedences, and the warm start.
struct Sequencing<'a> {
    /// The problem.
    problem: &'a Problem,
    /// Earliest starts.
    es: Vec<Time>,
    /// Latest starts for the horizon.
    ls: Vec<Time>,
    /// Durations.
    d: Vec<Time>,
    /// The transitive precedences.
    reach: Reachability,
    /// The warm start.
    warm: Option<&'a Schedule>,
}

impl Sequencing<'_> {
    /// `i` is surely finished before `j` starts.
    fn ordered(&self, i: usize, j: usize) -> bool {
        self.reach.precedes(i, j) || self.ls[i] + self.d[i] <= self.es[j]
    }

    /// `i` can finish before `j` starts.
    fn can_precede(&self, i: usize, j: usize) -> bool {
        !self.reach.precedes(j, i) && self.es[i] + self.d[i] <= self.ls[j]
    }

    /// The warm start's value of `y_ij`.
    fn finishes_before(&self, i: usize, j: usize) -> Option<f64> {
        let d = &self.d;
        self.warm
            .map(|s| f64::from(u8::from(s.starts()[i] + d[i] <= s.starts()[j])))
    }

    /// The start variables and their columns, with the precedence and makespan rows.
    fn add_starts(&self, model: &mut Model) -> (Vec<Variable>, Vec<usize>) {
        let (problem, d) = (self.problem, &self.d);
        let mut positions = Vec::with_capacity(problem.len());
        let starts: Vec<Variable> = problem
            .ids()
            .map(|j| {
                let def = variable()
                    .integer()
                    .min(self.es[j.index()] as f64)
                    .max(self.ls[j.index()] as f64);
                let v = model.var(def, self.warm.map(|s| s.start(j) as f64));
                positions.push(model.last());
                v
            })
            .collect();
        for p in problem.precedences() {
            let (i, j) = (p.from.index(), p.to.index());
            model.add(Model::sum([(1.0, starts[j]), (-1.0, starts[i])]).geq((d[i] + p.lag) as f64));
        }
        for j in problem.ids().filter(|&j| problem.successors(j).is_empty()) {
            let k = j.index();
            model.add(Model::sum([(1.0, model.objective), (-1.0, starts[k])]).geq(d[k] as f64));
        }
        (starts, positions)
    }

    /// The activities of positive duration that use each resource.
    fn users(&self) -> Vec<Vec<usize>> {
        let problem = self.problem;
        (0..problem.resources().len())
            .map(|r| {
                (0..problem.len())
                    .filter(|&j| self.d[j] > 0 && problem.activities()[j].demands[r] > 0)
                    .collect()
            })
            .collect()
    }

    /// The binaries `y_ij` of the unordered pairs that share a resource, with their big-M
    /// rows and `y_ij + y_ji <= 1`.
    fn add_sequencing(
        &self,
        model: &mut Model,
        starts: &[Variable],
        users: &[Vec<usize>],
    ) -> BTreeMap<(usize, usize), Variable> {
        let (n, d, es, ls) = (self.problem.len(), &self.d, &self.es, &self.ls);
        let mut shares = vec![false; n * n];
        for u in users {
            for &i in u {
                for &j in u {
                    shares[i * n + j] = true;
                }
            }
        }
        let mut y: BTreeMap<(usize, usize), Variable> = BTreeMap::new();
        for i in 0..n {
            for j in 0..n {
                if i == j
                    || !shares[i * n + j]
                    || self.ordered(i, j)
                    || self.ordered(j, i)
                    || !self.can_precede(i, j)
                {
                    continue;
                }
                let v = model.var(variable().binary(), self.finishes_before(i, j));
                y.insert((i, j), v);
                let big_m = (ls[i] + d[i] - es[j]) as f64;
                // s_j - s_i - M y_ij >= d_i - M
                model.add(
                    Model::sum([(1.0, starts[j]), (-1.0, starts[i]), (-big_m, v)])
                        .geq(d[i] as f64 - big_m),
                );
            }
        }
        for (&(i, j), &v) in &y {
            if i < j {
                if let Some(&w) = y.get(&(j, i)) {
                    model.add(Model::sum([(1.0, v), (1.0, w)]).leq(1.0));
                }
            }
        }
        y
    }

    /// The flow of resource `r` from the source through its users `u` to the sink, an arc
    /// `i -> j` gated by `y_ij` unless `i` is surely finished before `j` starts.
    fn add_flow(
        &self,
        model: &mut Model,
        r: usize,
        u: &[usize],
        y: &BTreeMap<(usize, usize), Variable>,
    ) {
        let problem = self.problem;
        let n = problem.len();
        let (source, sink) = (n, n + 1);
        let cap = problem.resources()[r].capacity;
        let q = |j: usize| {
            if j >= n {
                cap
            } else {
                problem.activities()[j].demands[r]
            }
        };
        let initial = self.warm.map(|s| warm_flow(problem, s, r, u));
        let mut out: BTreeMap<usize, Vec<Variable>> = BTreeMap::new();
        let mut inn: BTreeMap<usize, Vec<Variable>> = BTreeMap::new();
        let mut arc = |model: &mut Model, i: usize, j: usize, gate: Option<Variable>| {
            let upper = q(i).min(q(j));
            let value = initial
                .as_ref()
                .map(|f| f64::from(f.get(&(i, j)).copied().unwrap_or(0)));
            let f = model.var(variable().min(0.0).max(f64::from(upper)), value);
            if let Some(g) = gate {
                model.add(Model::sum([(1.0, f), (-f64::from(upper), g)]).leq(0.0));
            }
            out.entry(i).or_default().push(f);
            inn.entry(j).or_default().push(f);
        };
        arc(model, source, sink, None);
        for &j in u {
            arc(model, source, j, None);
            arc(model, j, sink, None);
        }
        for &i in u {
            for &j in u {
                if i == j {
                    continue;
                }
                if self.ordered(i, j) {
                    arc(model, i, j, None);
                } else if let Some(&g) = y.get(&(i, j)) {
                    arc(model, i, j, Some(g));
                }
            }
        }
        for node in u.iter().copied().chain([source, sink]) {
            let amount = f64::from(q(node));
            if node != sink {
                model.add(Model::sum(out[&node].iter().map(|&f| (1.0, f))).eq(amount));
            }
            if node != source {
                model.add(Model::sum(inn[&node].iter().map(|&f| (1.0, f))).eq(amount));
            }
        }
    }
}

/// A resource flow for resource `r` that a valid schedule admits: activities in start
/// order take the units they need from the source or from activities already finished, and
/// hand them on; what is left goes to the sink. Keys are `(from, to)` with the source `n` and
/// the sink `n + 1`.
fn warm_flow(
    problem: &Problem,
    schedule: &Schedule,
    r: usize,
    users: &[usize],
) -> BTreeMap<(usize, usize), u32> {
    let n = problem.len();
    let (source, sink) = (n, n + 1);
    let acts = problem.activities();
    let start = |j: usize| schedule.starts()[j];
    let mut order = users.to_vec();
    order.sort_by_key(|&j| (start(j), start(j) + acts[j].duration, j));
    // (node, finish, units not yet handed on)
    let mut pool: Vec<(usize, Time, u32)> =
        vec![(source, Time::MIN, problem.resources()[r].capacity)];
    let mut flow = BTreeMap::new();
    for &j in &order {
        let mut need = acts[j].demands[r];
        for entry in pool.iter_mut() {
            if need == 0 {
                break;
            }
            if entry.1 <= start(j) && entry.2 > 0 {
                let take = need.min(entry.2);
                *flow.entry((entry.0, j)).or_insert(0) += take;
                entry.2 -= take;
                need -= take;
            }
        }
        debug_assert_eq!(need, 0, "a valid schedule admits a flow");
        pool.push((j, start(j) + acts[j].duration, acts[j].demands[r]));
    }
    for (node, _, left) in pool {
        if left > 0 {
            *flow.entry((node, sink)).or_insert(0) += left;
        }
    }
    flow
}
