//! The CP model of an RCPSP: start variables with the critical-path windows, the makespan,
//! precedences as linear inequalities, one `cumulative` per resource and edge finding on
//! greedy cliques of the disjunctive graph (see the parent module's docs; with
//! [`Reasoning::Light`], one-sided edge finding over the activities not fixed at the root).

use concerto_rcpsp::temporal::{earliest_starts, latest_starts, Reachability};
use concerto_rcpsp::{Problem, Schedule, SolveError, Time};
use pumpkin_core::options::{SequenceGeneratorType, SolverOptions};
use pumpkin_core::rand::rngs::SmallRng;
use pumpkin_core::rand::SeedableRng;
use pumpkin_core::results::{ProblemSolution, SolutionReference};
use pumpkin_core::variables::{DomainId, TransformableVariable};
use pumpkin_propagators::disjunctive::{ArgDisjunctiveTask, DisjunctiveConstructor};

use super::common::{post_cumulatives, small};
use super::ttef;
use super::{Direction, PumpkinConfig, Reasoning};

/// The CP model of a problem.
pub(super) struct Model {
    pub(super) solver: pumpkin_core::Solver,
    pub(super) starts: Vec<DomainId>,
    pub(super) makespan: DomainId,
    /// The earliest start of every activity (critical path method and release dates).
    pub(super) earliest: Vec<Time>,
    /// The seed of the model's search (its random generator's and its neighbourhoods').
    pub(super) seed: u64,
}

impl Model {
    /// Builds the model with the makespan in `[bound, deadline]`.
    pub(super) fn build(
        problem: &Problem,
        config: &PumpkinConfig,
        seed: u64,
        bound: Time,
        deadline: Time,
    ) -> Result<Self, SolveError> {
        let mut options = SolverOptions {
            random_generator: SmallRng::seed_from_u64(seed),
            ..SolverOptions::default()
        };
        if let Some(base) = config.luby_restarts {
            options.restart_options.sequence_generator_type = SequenceGeneratorType::Luby;
            options.restart_options.base_interval = base.max(1);
            options
                .restart_options
                .min_num_conflicts_before_first_restart = 0;
            // Restart on the sequence alone: no nogood-quality condition, no blocking.
            options.restart_options.lbd_coef = 0.0;
            options.restart_options.num_assigned_coef = f64::INFINITY;
        }
        let mut solver = pumpkin_core::Solver::with_options(options);
        let es = earliest_starts(problem);
        let ls = latest_starts(problem, deadline);
        let starts: Vec<DomainId> = problem
            .ids()
            .map(|a| solver.new_bounded_integer(small(es[a.index()]), small(ls[a.index()])))
            .collect();
        let makespan = solver.new_bounded_integer(small(bound), small(deadline));
        let tag = solver.new_constraint_tag();
        for p in problem.precedences() {
            let gap = small(problem.duration(p.from) + p.lag);
            let (from, to) = (starts[p.from.index()], starts[p.to.index()]);
            solver
                .add_constraint(pumpkin_constraints::binary_less_than_or_equals(
                    from.offset(gap),
                    to.scaled(1),
                    tag,
                ))
                .post();
        }
        for a in problem.ids() {
            if problem.successors(a).is_empty() {
                let s = starts[a.index()];
                solver
                    .add_constraint(pumpkin_constraints::binary_less_than_or_equals(
                        s.offset(small(problem.duration(a))),
                        makespan.scaled(1),
                        tag,
                    ))
                    .post();
            }
        }
        let posted = post_cumulatives(&mut solver, problem, &starts, tag)?;
        if config.ttef {
            for resource in &posted {
                ttef::post(&mut solver, &resource.tasks, resource.capacity, tag);
            }
        }
        if config.edge_finding {
            let light = config.reasoning.resolve(problem) == Reasoning::Light;
            for mut clique in disjoint_cliques(problem) {
                if light {
                    // A fixed activity's interval is in the cumulatives' profiles already.
                    clique.retain(|&a| es[a] < ls[a]);
                    if clique.len() < 2 {
                        continue;
                    }
                }
                let tasks = clique.iter().map(|&a| ArgDisjunctiveTask {
                    start_time: starts[a],
                    processing_time: small(problem.activities()[a].duration),
                });
                if !light {
                    solver
                        .add_constraint(pumpkin_constraints::disjunctive_strict(tasks, tag))
                        .post();
                } else if config.direction.resolve(problem) == Direction::Backward {
                    // Latest ends: edge finding on the mirrored tasks (start -s - p), as
                    // `disjunctive_strict` posts for its second side.
                    let mirrored = tasks.map(|t| ArgDisjunctiveTask {
                        start_time: t.start_time.offset(t.processing_time).scaled(-1),
                        processing_time: t.processing_time,
                    });
                    let _ = solver.add_propagator(DisjunctiveConstructor::new(mirrored, tag));
                } else {
                    let _ = solver.add_propagator(DisjunctiveConstructor::new(tasks, tag));
                }
            }
        }
        Ok(Self {
            solver,
            starts,
            makespan,
            earliest: es,
            seed,
        })
    }
}

/// Problems above this many activities get no cliques (the disjunctive graph is quadratic).
pub const MAX_CLIQUE_PROBLEM: usize = 2_000;
/// Largest clique given to one edge-finding propagator (it costs `O(k^3)` per call).
pub const MAX_CLIQUE: usize = 48;
/// Most seeds of the greedy clique search (the activities of largest degree).
pub const MAX_CLIQUE_SEEDS: usize = 256;

/// Greedy maximal cliques of the disjunctive graph: activities of positive duration that
/// pairwise cannot overlap (a resource on which their demands exceed the capacity, or a
/// precedence path between them). One clique per seed activity, seeds and candidates by
/// decreasing degree; kept when it has at least 3 activities and one resource clash (a chain
/// of precedences alone adds nothing), without duplicates. `O(n^2 (R + n / 64))` for the
/// graph and `O(seeds n k)` for the cliques.
fn disjoint_cliques(problem: &Problem) -> Vec<Vec<usize>> {
    let n = problem.len();
    if n > MAX_CLIQUE_PROBLEM {
        return Vec::new();
    }
    let words = n.div_ceil(64);
    let reach = Reachability::new(problem);
    let ordered = |i: usize, j: usize| reach.precedes(i, j);
    let activities = problem.activities();
    let clash = |i: usize, j: usize| problem.resource_clash(i, j);
    let live: Vec<usize> = (0..n).filter(|&i| activities[i].duration > 0).collect();
    let mut disjoint = vec![0u64; n * words];
    let mut degree = vec![0usize; n];
    let mut any_clash = false;
    for (x, &i) in live.iter().enumerate() {
        for &j in &live[x + 1..] {
            let c = clash(i, j);
            any_clash |= c;
            if c || ordered(i, j) || ordered(j, i) {
                disjoint[i * words + j / 64] |= 1 << (j % 64);
                disjoint[j * words + i / 64] |= 1 << (i % 64);
                degree[i] += 1;
                degree[j] += 1;
            }
        }
    }
    if !any_clash {
        return Vec::new();
    }
    let adjacent = |i: usize, j: usize| disjoint[i * words + j / 64] >> (j % 64) & 1 == 1;
    let mut order = live;
    order.sort_by_key(|&i| (std::cmp::Reverse(degree[i]), i));
    let mut cliques: Vec<Vec<usize>> = Vec::new();
    for &seed in order.iter().take(MAX_CLIQUE_SEEDS) {
        let mut clique = vec![seed];
        for &c in &order {
            if clique.len() == MAX_CLIQUE {
                break;
            }
            if c != seed && adjacent(seed, c) && clique.iter().all(|&m| adjacent(m, c)) {
                clique.push(c);
            }
        }
        if clique.len() < 3 {
            continue;
        }
        let has_clash = clique
            .iter()
            .enumerate()
            .any(|(x, &i)| clique[x + 1..].iter().any(|&j| clash(i, j)));
        if !has_clash {
            continue;
        }
        clique.sort_unstable();
        if !cliques.contains(&clique) {
            cliques.push(clique);
        }
    }
    cliques
}

/// The schedule of a pumpkin solution, shifted left by the largest amount that keeps every
/// start at or after its earliest start `earliest` (0 for a schedule built forwards; the
/// backward series builds schedules that end at the deadline). A uniform shift keeps every
/// precedence and every resource profile, and pinned activities (earliest = latest start)
/// keep it at 0.
pub(super) fn schedule_of(
    starts: &[DomainId],
    earliest: &[Time],
    solution: &SolutionReference<'_>,
) -> Schedule {
    let values = starts
        .iter()
        .map(|&s| Time::from(solution.get_integer_value(s)))
        .collect();
    Schedule::new(shifted_left(values, earliest))
}

/// `starts` moved left together by `min_i (starts_i - earliest_i)` when that is positive.
pub(super) fn shifted_left(mut starts: Vec<Time>, earliest: &[Time]) -> Vec<Time> {
    let shift = starts
        .iter()
        .zip(earliest)
        .map(|(s, e)| s - e)
        .min()
        .unwrap_or(0);
    if shift > 0 {
        starts.iter_mut().for_each(|s| *s -= shift);
    }
    starts
}
