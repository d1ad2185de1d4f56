//! Tests of the pumpkin modal backend.

use std::time::Duration;

use concerto_rcpsp::{brute_force, ProblemBuilder, Region};

use super::*;
use crate::pumpkin::Pumpkin;

/// Solves with `search`, checks the solution independently and against brute force.
fn solve_with(
    problem: &ModalProblem,
    search: ModalSearch,
    initial: Option<&ModalSolution>,
) -> ModalOutcome {
    let solver = PumpkinModal::new(PumpkinModalConfig { search });
    let limits = Limits::with_time_limit(Duration::from_secs(10)).seed(1);
    let outcome = solver
        .solve_modal(problem, &limits, initial)
        .expect("solves");
    assert_eq!(outcome.solver, "pumpkin");
    assert_eq!(outcome.status, Status::Optimal, "{outcome}");
    let solution = outcome.solution.as_ref().expect("a solution");
    assert_eq!(
        check_modal(problem, solution),
        Ok(outcome.makespan.unwrap())
    );
    assert_eq!(outcome.lower_bound, outcome.makespan.unwrap());
    let reference = brute_force(problem, &Pumpkin::default(), &limits).expect("solves");
    assert_eq!(reference.status, Status::Optimal);
    assert_eq!(outcome.makespan, reference.makespan);
    outcome
}

fn solve(problem: &ModalProblem, initial: Option<&ModalSolution>) -> ModalOutcome {
    let outcome = solve_with(problem, ModalSearch::ModesThenSst, initial);
    let other = solve_with(problem, ModalSearch::Vsids, initial);
    assert_eq!(outcome.makespan, other.makespan);
    outcome
}

/// `a -> x -> c` (mode 0) or `a -> y1 -> y2 -> c` (mode 1) on one unit resource; `x`
/// takes 6, `y1` and `y2` take `split` each.
fn chain(split: Time) -> ModalProblem {
    let mut b = ProblemBuilder::new();
    let r = b.resource("r", 1);
    let a = b.activity("a", 1);
    let x = b.activity("x", 6);
    let y1 = b.activity("y1", split);
    let y2 = b.activity("y2", split);
    let c = b.activity("c", 1);
    for act in [a, x, y1, y2, c] {
        b.demand(act, r, 1);
    }
    for (f, t) in [(a, x), (x, c), (a, y1), (y1, y2), (y2, c)] {
        b.precedence(f, t);
    }
    ModalProblem::new(
        b.build().expect("valid"),
        vec![Region {
            name: "x".into(),
            modes: vec![vec![x], vec![y1, y2]],
        }],
    )
    .expect("valid")
}

#[test]
fn the_split_mode_wins_when_it_is_shorter() {
    let outcome = solve(&chain(2), None);
    assert_eq!(outcome.makespan, Some(6));
    assert_eq!(outcome.solution.unwrap().modes, vec![1]);
}

#[test]
fn the_default_mode_wins_when_the_split_is_longer() {
    let outcome = solve(&chain(4), None);
    assert_eq!(outcome.makespan, Some(8));
    assert_eq!(outcome.solution.unwrap().modes, vec![0]);
}

/// Two regions and a mandatory `m` (4 units, demand 1) on one resource of capacity 2.
/// Each region runs 4 units at demand 1 (mode 0) or 2 units at demand 2 (mode 1). Both
/// in mode 0 or both in mode 1 take 8; one of each takes 6.
#[test]
fn two_regions_share_a_resource() {
    let mut b = ProblemBuilder::new();
    let r = b.resource("r", 2);
    let m = b.activity("m", 4);
    b.demand(m, r, 1);
    let mut regions = Vec::new();
    for name in ["A", "B"] {
        let slow = b.activity(format!("{name}0"), 4);
        b.demand(slow, r, 1);
        let fast = b.activity(format!("{name}1"), 2);
        b.demand(fast, r, 2);
        regions.push(Region {
            name: name.into(),
            modes: vec![vec![slow], vec![fast]],
        });
    }
    let problem = ModalProblem::new(b.build().expect("valid"), regions).expect("valid");
    let outcome = solve(&problem, None);
    assert_eq!(outcome.makespan, Some(6));
    let modes = outcome.solution.unwrap().modes;
    assert!(modes == vec![0, 1] || modes == vec![1, 0], "{modes:?}");
}

/// `a -> x -> c` with `x` optional: a mode without activities drops it and its
/// precedences.
#[test]
fn a_mode_without_activities_is_allowed() {
    let mut b = ProblemBuilder::new();
    let r = b.resource("r", 1);
    let a = b.activity("a", 2);
    let x = b.activity("x", 3);
    let c = b.activity("c", 2);
    for act in [a, x, c] {
        b.demand(act, r, 1);
    }
    b.precedence(a, x);
    b.precedence_with_lag(x, c, 1);
    let problem = ModalProblem::new(
        b.build().expect("valid"),
        vec![Region {
            name: "x".into(),
            modes: vec![vec![x], vec![]],
        }],
    )
    .expect("valid");
    let outcome = solve(&problem, None);
    assert_eq!(outcome.makespan, Some(4));
    assert_eq!(outcome.solution.unwrap().modes, vec![1]);
}

#[test]
fn an_optimal_initial_solution_is_returned_proven() {
    let problem = chain(2);
    // a [0,1), y1 [1,3), y2 [3,5), c [5,6); x absent.
    let initial = ModalSolution {
        modes: vec![1],
        starts: vec![0, 0, 1, 3, 5],
    };
    let outcome = solve(&problem, Some(&initial));
    assert_eq!(outcome.solution, Some(initial));
    assert_eq!(outcome.makespan, Some(6));
    // A poor initial solution (mode 0, with a gap) is improved.
    let poor = ModalSolution {
        modes: vec![0],
        starts: vec![0, 3, 0, 0, 9],
    };
    assert_eq!(check_modal(&problem, &poor), Ok(10));
    assert_eq!(solve(&problem, Some(&poor)).makespan, Some(6));
}

#[test]
fn release_dates_and_deadlines_hold_for_present_activities() {
    // The split mode is shorter but y2 has a release date that makes it later.
    let mut b = ProblemBuilder::new();
    let r = b.resource("r", 1);
    let x = b.activity("x", 5);
    let y1 = b.activity("y1", 2);
    let y2 = b.activity("y2", 2);
    let z = b.activity("z", 1);
    for act in [x, y1, y2, z] {
        b.demand(act, r, 1);
    }
    b.release(y2, 6);
    b.deadline(z, 3);
    b.precedence(y1, y2);
    let problem = ModalProblem::new(
        b.build().expect("valid"),
        vec![Region {
            name: "x".into(),
            modes: vec![vec![x], vec![y1, y2]],
        }],
    )
    .expect("valid");
    // Mode 0: z [0,1), x [1,6) = 6; mode 1: y2 ends at 8.
    let outcome = solve(&problem, None);
    assert_eq!(outcome.makespan, Some(6));
    assert_eq!(outcome.solution.unwrap().modes, vec![0]);
}

#[test]
fn bad_requests_are_errors() {
    let problem = chain(2);
    let solver = PumpkinModal::default();
    assert!(matches!(
        solver.solve_modal(&problem, &Limits::with_time_limit(Duration::ZERO), None),
        Err(SolveError::ZeroTimeLimit)
    ));
    let bad = ModalSolution {
        modes: vec![1],
        starts: vec![0, 0, 0, 0, 0],
    };
    let err = solver
        .solve_modal(&problem, &Limits::default(), Some(&bad))
        .expect_err("invalid initial");
    assert!(
        matches!(err, SolveError::InvalidModalInitial { .. }),
        "{err}"
    );

    // Durations beyond i32 with no initial solution: the horizon does not fit.
    let mut b = ProblemBuilder::new();
    let r = b.resource("r", 1);
    let x = b.activity("x", 1 << 40);
    let y = b.activity("y", 1 << 40);
    b.demand(x, r, 1);
    b.demand(y, r, 1);
    let big = ModalProblem::new(
        b.build().expect("valid"),
        vec![Region {
            name: "y".into(),
            modes: vec![vec![y], vec![]],
        }],
    )
    .expect("valid");
    let err = solver
        .solve_modal(&big, &Limits::default(), None)
        .expect_err("too large");
    assert!(matches!(err, SolveError::Unsupported { .. }), "{err}");
}

#[test]
fn no_solution_within_the_deadlines_is_infeasible() {
    let mut b = ProblemBuilder::new();
    let r = b.resource("r", 1);
    let x = b.activity("x", 3);
    let y = b.activity("y", 3);
    let z = b.activity("z", 4);
    for act in [x, y, z] {
        b.demand(act, r, 1);
        b.deadline(act, 5);
    }
    let problem = ModalProblem::new(
        b.build().expect("valid"),
        vec![Region {
            name: "yz".into(),
            modes: vec![vec![y], vec![z]],
        }],
    )
    .expect("valid");
    let outcome = PumpkinModal::default()
        .solve_modal(&problem, &Limits::default(), None)
        .expect("solves");
    assert_eq!(outcome.status, Status::Infeasible);
    assert!(outcome.solution.is_none());
}
