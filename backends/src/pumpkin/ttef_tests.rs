//! TTEF against a brute-force oracle: on random small resources with random start domains,
//! every propagated bound keeps every feasible schedule, every reason implies its bound on
//! every feasible schedule that satisfies it (over the initial domains), and a conflict's
//! conjunction admits no feasible schedule.
//!
//! pumpkin 0.5's `TestSolver` is the way to run one propagator alone; its methods are marked
//! deprecated in favour of a state API that 0.5 does not yet export.
#![allow(deprecated)]

use proptest::prelude::*;
use pumpkin_core::predicates::Predicate;
use pumpkin_core::state::Conflict;
use pumpkin_core::variables::{DomainId, TransformableVariable};
use pumpkin_core::TestSolver;

use super::{mirrored, Task, TtefConstructor};

/// A resource: (earliest start, latest start, duration, demand) per task, and a capacity.
#[derive(Clone, Debug)]
struct Instance {
    tasks: Vec<(i32, i32, i32, i32)>,
    capacity: i32,
}

fn instance() -> impl Strategy<Value = Instance> {
    (2..=4i32).prop_flat_map(|capacity| {
        (
            prop::collection::vec((0..6i32, 0..4i32, 1..=4i32, 1..=capacity), 2..=4),
            Just(capacity),
        )
            .prop_map(|(tasks, capacity)| Instance {
                tasks: tasks
                    .into_iter()
                    .map(|(est, width, p, c)| (est, est + width, p, c))
                    .collect(),
                capacity,
            })
    })
}

/// Every assignment of starts within the initial domains that the resource fits.
fn feasible(instance: &Instance) -> Vec<Vec<i32>> {
    widened(instance, 0)
}

/// Every assignment of starts within the initial domains widened by `by` on both sides that
/// the resource fits. A reason must hold beyond the domains it was made in: a learned
/// nogood is used wherever the search goes.
fn widened(instance: &Instance, by: i32) -> Vec<Vec<i32>> {
    let mut all = vec![Vec::new()];
    for &(est, lst, _, _) in &instance.tasks {
        all = all
            .into_iter()
            .flat_map(|prefix: Vec<i32>| {
                (est - by..=lst + by).map(move |s| {
                    let mut next = prefix.clone();
                    next.push(s);
                    next
                })
            })
            .collect();
    }
    all.retain(|starts| fits(instance, starts));
    all
}

fn fits(instance: &Instance, starts: &[i32]) -> bool {
    let end = starts
        .iter()
        .zip(&instance.tasks)
        .map(|(s, t)| s + t.2)
        .max()
        .unwrap_or(0);
    (0..end).all(|time| {
        let load: i32 = starts
            .iter()
            .zip(&instance.tasks)
            .filter(|(&s, t)| s <= time && time < s + t.2)
            .map(|(_, t)| t.3)
            .sum();
        load <= instance.capacity
    })
}

/// Whether `predicate` holds when the variables `vars` take `starts`.
fn holds(predicate: Predicate, vars: &[DomainId], starts: &[i32]) -> bool {
    let Some(k) = vars.iter().position(|&v| v == predicate.get_domain()) else {
        panic!("a predicate on a variable that is no task's start: {predicate:?}");
    };
    let (value, rhs) = (starts[k], predicate.get_right_hand_side());
    if predicate.is_lower_bound_predicate() {
        value >= rhs
    } else if predicate.is_upper_bound_predicate() {
        value <= rhs
    } else if predicate.is_equality_predicate() {
        value == rhs
    } else {
        value != rhs
    }
}

/// Posts both directions of TTEF on a test solver; the variables and the outcome.
fn propagate(instance: &Instance) -> (TestSolver, Vec<DomainId>, Result<(), Conflict>) {
    let mut solver = TestSolver::default();
    let vars: Vec<DomainId> = instance
        .tasks
        .iter()
        .map(|&(est, lst, _, _)| solver.new_variable(est, lst))
        .collect();
    let tasks: Vec<(DomainId, i32, i32)> = vars
        .iter()
        .zip(&instance.tasks)
        .map(|(&v, t)| (v, t.2, t.3))
        .collect();
    let tag = solver.new_constraint_tag();
    let forward = tasks.iter().map(|&(s, p, c)| Task {
        start: s.scaled(1),
        duration: p,
        demand: c,
    });
    let mut outcome = solver
        .new_propagator(TtefConstructor::new(forward, instance.capacity, tag))
        .map(|_| ());
    if outcome.is_ok() {
        outcome = solver
            .new_propagator(TtefConstructor::new(
                mirrored(&tasks),
                instance.capacity,
                tag,
            ))
            .map(|_| ());
    }
    (solver, vars, outcome)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    #[test]
    fn ttef_is_sound_and_explains_what_it_does(instance in instance()) {
        let schedules = feasible(&instance);
        let wide = widened(&instance, 3);
        let (mut solver, vars, outcome) = propagate(&instance);
        match outcome {
            Err(_) => {
                prop_assert!(schedules.is_empty(), "a conflict on a feasible resource");
            }
            Ok(()) => {
                for (k, &v) in vars.iter().enumerate() {
                    let (lb, ub) = (solver.lower_bound(v), solver.upper_bound(v));
                    for s in &schedules {
                        prop_assert!(lb <= s[k] && s[k] <= ub, "task {k} lost {}", s[k]);
                    }
                    let (est, lst, _, _) = instance.tasks[k];
                    let mut bounds = Vec::new();
                    if lb > est {
                        bounds.push(pumpkin_core::predicate!(v >= lb));
                    }
                    if ub < lst {
                        bounds.push(pumpkin_core::predicate!(v <= ub));
                    }
                    for bound in bounds {
                        let reason: Vec<Predicate> =
                            solver.get_reason_int(bound).into_iter().collect();
                        // Every schedule that fits the resource and satisfies the reason
                        // satisfies the bound, in and around the initial domains.
                        for s in &wide {
                            if reason.iter().all(|&p| holds(p, &vars, s)) {
                                prop_assert!(holds(bound, &vars, s), "{bound:?} from {reason:?}");
                            }
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn a_conflict_explanation_admits_no_schedule(instance in instance()) {
        let (_, vars, outcome) = propagate(&instance);
        if let Err(Conflict::Propagator(conflict)) = outcome {
            let conjunction: Vec<Predicate> = conflict.conjunction.into_iter().collect();
            // In and around the initial domains, nothing that satisfies the conjunction fits.
            for s in widened(&instance, 3) {
                prop_assert!(!conjunction.iter().all(|&p| holds(p, &vars, &s)));
            }
        }
    }
}

/// The example of the module docs in numbers: two tasks of demand 2 on capacity 2 that must
/// both lie in `[0, 4)` leave no room there for a third, which TTEF pushes to 4 where
/// time-tabling (no compulsory parts) sees nothing.
#[test]
fn pushes_a_task_past_a_full_window() {
    let instance = Instance {
        tasks: vec![(0, 2, 2, 2), (0, 2, 2, 2), (0, 6, 2, 1)],
        capacity: 2,
    };
    let (solver, vars, outcome) = propagate(&instance);
    assert!(outcome.is_ok());
    assert_eq!(solver.lower_bound(vars[2]), 4);
    assert_eq!(solver.upper_bound(vars[0]), 2);
}

/// Three tasks that must all lie in `[0, 4)` with 12 units of energy on capacity 2: overload.
#[test]
fn an_overloaded_window_is_a_conflict() {
    let instance = Instance {
        tasks: vec![(0, 2, 2, 2), (0, 2, 2, 2), (0, 2, 2, 2)],
        capacity: 2,
    };
    let (_, _, outcome) = propagate(&instance);
    assert!(matches!(outcome, Err(Conflict::Propagator(_))));
}
