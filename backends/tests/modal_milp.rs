//! The modal MILP (mode binaries, time-indexed) against brute force over the mode
//! combinations, on every MILP backend compiled in.

#![cfg(any(feature = "microlp", feature = "highs", feature = "cbc"))]

use std::time::Duration;

use concerto_backends::milp::{Backend, Milp, MilpModal};
use concerto_rcpsp::{brute_force, check_modal, Limits, ModalSolver, Status};
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
fn the_interaction_case_is_solved_by_every_backend() {
    let m = interaction();
    let limits = Limits::with_time_limit(Duration::from_secs(20));
    for b in backends() {
        let o = MilpModal::new(b).solve_modal(&m, &limits, None).unwrap();
        assert_eq!(
            (o.makespan, o.status),
            (Some(12), Status::Optimal),
            "{}",
            b.name()
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn the_modal_milp_optimum_is_the_best_mode_combination(seed in 0u64..1_000_000) {
        let m = random_problem(seed);
        let limits = Limits::with_time_limit(Duration::from_secs(30));
        for b in backends() {
            let brute = brute_force(&m, &Milp::new(b), &limits).unwrap();
            prop_assert_eq!(brute.status, Status::Optimal);
            let o = MilpModal::new(b).solve_modal(&m, &limits, None).unwrap();
            prop_assert_eq!(o.status, Status::Optimal, "{}", b.name());
            prop_assert_eq!(o.makespan, brute.makespan, "{}: {}", b.name(), o);
            let s = o.solution.unwrap();
            prop_assert_eq!(check_modal(&m, &s), Ok(o.makespan.unwrap()));
            // From the brute-force optimum as a start: still optimal, never worse.
            let again = MilpModal::new(b)
                .solve_modal(&m, &limits, brute.solution.as_ref())
                .unwrap();
            prop_assert_eq!(again.makespan, brute.makespan);
        }
    }
}
