//! The modal MILP (mode binaries, time-indexed) against brute force over the mode
//! combinations, on every MILP backend compiled in.

#![cfg(any(feature = "microlp", feature = "highs", feature = "cbc"))]

use std::time::Duration;

use concerto_backends::milp::{Backend, Milp, MilpModal};
use concerto_rcpsp::{brute_force, check_modal, Limits, ModalSolution, ModalSolver, Status};
use proptest::prelude::*;

mod common;
use common::{interaction, random_problem};

fn backends() -> Vec<Backend> {
    vec![
        #[cfg(feature = "microlp")]
        Backend::Microlp,
        #[cfg(feature = "highs")]
        Backend::Highs,
        #[cfg(feature = "cbc")]
        Backend::Cbc,
    ]
}

#[test]
fn the_interaction_case_is_solved_by_every_backend_with_and_without_a_start() {
    let m = interaction();
    let limits = Limits::with_time_limit(Duration::from_secs(20));
    // Both splits (18), one split (12, optimal), and an invalid start.
    let both = ModalSolution {
        modes: vec![1, 1],
        starts: vec![0, 0, 0, 0, 9],
    };
    let one = ModalSolution {
        modes: vec![1, 0],
        starts: vec![0, 0, 0, 6, 0],
    };
    let bad = ModalSolution {
        modes: vec![0, 0],
        starts: vec![0; 5],
    };
    for b in backends() {
        let solver = MilpModal::new(b);
        for start in [None, Some(&both), Some(&one)] {
            let o = solver.solve_modal(&m, &limits, start).unwrap();
            assert_eq!(
                (o.makespan, o.status),
                (Some(12), Status::Optimal),
                "{}",
                b.name()
            );
            assert_eq!(o.solution.unwrap().modes.iter().sum::<usize>(), 1);
        }
        let e = solver.solve_modal(&m, &limits, Some(&bad)).unwrap_err();
        assert!(
            e.to_string().contains("initial modal solution is invalid"),
            "{e}"
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 16, ..ProptestConfig::default() })]

    /// Where the modal MILP proves optimality, its optimum is the brute-force one; where its
    /// time limit stops it first (microlp in a debug build can take tens of seconds on a
    /// case), its solution and bound still bracket the brute-force optimum.
    #[test]
    fn the_modal_milp_optimum_is_the_best_mode_combination(seed in 0u64..1_000_000) {
        let m = random_problem(seed);
        let limits = Limits::with_time_limit(Duration::from_secs(20));
        for b in backends() {
            let brute = brute_force(&m, &Milp::new(b), &limits).unwrap();
            prop_assert_eq!(brute.status, Status::Optimal);
            let best = brute.makespan.unwrap();
            let o = MilpModal::new(b).solve_modal(&m, &limits, None).unwrap();
            let s = o.solution.clone().unwrap();
            prop_assert_eq!(check_modal(&m, &s), Ok(o.makespan.unwrap()));
            if o.status == Status::Optimal {
                prop_assert_eq!(o.makespan, Some(best), "{}: {}", b.name(), o);
            } else {
                prop_assert!(o.makespan.unwrap() >= best && o.lower_bound <= best, "{}: {}", b.name(), o);
            }
            // From the brute-force optimum as a start: never worse, and proven at once when
            // the bound meets it.
            let again = MilpModal::new(b)
                .solve_modal(&m, &limits, brute.solution.as_ref())
                .unwrap();
            prop_assert_eq!(again.makespan, Some(best));
        }
    }
}
