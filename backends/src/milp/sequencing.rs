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
    let n = problem.len();
    let es = earliest_starts(problem);
    let ls = latest_starts(problem, horizon);
    let d: Vec<Time> = problem.ids().map(|j| problem.duration(j)).collect();
    let reach = Reachability::new(problem);
    let precedes = |i: usize, j: usize| reach.precedes(i, j);
    // `i` is surely finished before `j` starts.
    let ordered = |i: usize, j: usize| precedes(i, j) || ls[i] + d[i] <= es[j];
    // `i` can finish before `j` starts.
    let can_precede = |i: usize, j: usize| !precedes(j, i) && es[i] + d[i] <= ls[j];
    let finishes_before = |i: usize, j: usize| {
        warm.map(|s| f64::from(u8::from(s.starts()[i] + d[i] <= s.starts()[j])))
    };

    let lower = lower_bound(problem).value.min(horizon);
    let mut model = Model::new(lower, horizon, warm.map(|s| s.makespan(problem)));
    let mut positions = Vec::with_capacity(n);
    let starts: Vec<Variable> = problem
        .ids()
        .map(|j| {
            let def = variable()
                .integer()
                .min(es[j.index()] as f64)
                .max(ls[j.index()] as f64);
            let v = model.var(def, warm.map(|s| s.start(j) as f64));
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

    // Sequencing binaries for unordered pairs that share a resource.
    let users: Vec<Vec<usize>> = (0..problem.resources().len())
        .map(|r| {
            (0..n)
                .filter(|&j| d[j] > 0 && problem.activities()[j].demands[r] > 0)
                .collect()
        })
        .collect();
    let mut shares = vec![false; n * n];
    for u in &users {
        for &i in u {
            for &j in u {
                shares[i * n + j] = true;
            }
        }
    }
    let mut y: BTreeMap<(usize, usize), Variable> = BTreeMap::new();
    for i in 0..n {
        for j in 0..n {
            if i == j || !shares[i * n + j] || ordered(i, j) || ordered(j, i) || !can_precede(i, j)
            {
                continue;
            }
            let v = model.var(variable().binary(), finishes_before(i, j));
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

    // Resource flows. Nodes: activities, then the source (n) and the sink (n + 1).
    let (source, sink) = (n, n + 1);
    for (r, u) in users.iter().enumerate() {
        let cap = problem.resources()[r].capacity;
        let q = |j: usize| {
            if j >= n {
                cap
            } else {
                problem.activities()[j].demands[r]
            }
        };
        let initial = warm.map(|s| warm_flow(problem, s, r, u));
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
        arc(&mut model, source, sink, None);
        for &j in u {
            arc(&mut model, source, j, None);
            arc(&mut model, j, sink, None);
        }
        for &i in u {
            for &j in u {
                if i == j {
                    continue;
                }
                if ordered(i, j) {
                    arc(&mut model, i, j, None);
                } else if let Some(&g) = y.get(&(i, j)) {
                    arc(&mut model, i, j, Some(g));
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
    (model, StartsFrom::Variables(positions))
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
