//! Joint windows with the exact pumpkin modal backend: a constructed case where choosing the
//! modes one by one (each one's gain measured alone, then added up) is provably worse than
//! deciding them together, and random modal problems on which the windows never make a
//! starting solution worse and, when one window covers everything, reach the brute-force
//! optimum.

#![cfg(feature = "pumpkin")]

use std::time::Duration;

use concerto_backends::pumpkin::Pumpkin;
use concerto_backends::pumpkin_modal::PumpkinModal;
use concerto_rcpsp::joint::{improve, JointConfig};
use concerto_rcpsp::{brute_force, check_modal, Limits, ModalProblem, ModalSolution, ModalSolver};
use proptest::prelude::*;

mod common;
use common::{interaction, random_problem};

/// The sequential choice: each region's mode by its makespan alone (others unsplit), every
/// improving one taken, then the combination scheduled exactly.
fn sequential(m: &ModalProblem, limits: &Limits) -> (Vec<usize>, i64) {
    let exact = Pumpkin::default();
    let solve = |modes: &[usize]| {
        let r = m.reduce(modes).unwrap();
        use concerto_rcpsp::Solver;
        exact.solve(&r.problem, limits).unwrap().makespan.unwrap()
    };
    let base = vec![0; m.regions().len()];
    let before = solve(&base);
    let mut chosen = base.clone();
    for r in 0..m.regions().len() {
        let mut best = (before, 0);
        for k in 1..m.regions()[r].modes.len() {
            let mut modes = base.clone();
            modes[r] = k;
            let v = solve(&modes);
            if v < best.0 {
                best = (v, k);
            }
        }
        chosen[r] = best.1;
    }
    let v = solve(&chosen);
    (chosen, v)
}

#[test]
fn deciding_modes_together_beats_adding_up_their_gains() {
    let m = interaction();
    let limits = Limits::with_time_limit(Duration::from_secs(10));
    let (modes, seq) = sequential(&m, &limits);
    assert_eq!(modes, vec![1, 1]);
    assert_eq!(seq, 18);
    // The exact joint solve over modes and times: 12, one region split.
    let joint = PumpkinModal::default()
        .solve_modal(&m, &limits, None)
        .unwrap();
    assert_eq!(joint.makespan, Some(12));
    assert_eq!(joint.lower_bound, 12);
    let brute = brute_force(&m, &Pumpkin::default(), &limits).unwrap();
    assert_eq!(brute.makespan, Some(12));
    // The windows, started from the sequential choice, find it too.
    let start = ModalSolution {
        modes: vec![1, 1],
        starts: vec![0, 0, 0, 0, 9],
    };
    assert_eq!(check_modal(&m, &start), Ok(18));
    let r = improve(
        &m,
        &start,
        &PumpkinModal::default(),
        &JointConfig::default(),
        &limits,
    )
    .unwrap();
    assert_eq!(r.makespan, 12);
    assert_eq!(check_modal(&m, &r.solution), Ok(12));
    assert!(r.mode_changes >= 1);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn windows_never_worsen_a_start_and_reach_the_optimum_when_they_cover_all(
        seed in 0u64..1_000_000,
        start_mode in 0usize..3,
    ) {
        let m = random_problem(seed);
        let limits = Limits::with_time_limit(Duration::from_secs(20));
        let brute = brute_force(&m, &Pumpkin::default(), &limits).unwrap();
        let optimum = brute.makespan.unwrap();
        // Start: every region in one mode (clipped), scheduled exactly.
        let modes: Vec<usize> = m
            .regions()
            .iter()
            .map(|r| start_mode.min(r.modes.len() - 1))
            .collect();
        let reduced = m.reduce(&modes).unwrap();
        use concerto_rcpsp::Solver;
        let s = Pumpkin::default().solve(&reduced.problem, &limits).unwrap();
        let start = ModalSolution {
            modes,
            starts: reduced.expand(s.schedule.as_ref().unwrap(), m.problem().len()),
        };
        let before = check_modal(&m, &start).unwrap();
        let config = JointConfig { neighbours: 1_000, ..JointConfig::default() };
        let r = improve(&m, &start, &PumpkinModal::default(), &config, &limits).unwrap();
        prop_assert!(r.makespan <= before);
        prop_assert_eq!(check_modal(&m, &r.solution), Ok(r.makespan));
        prop_assert!(r.makespan >= optimum);
        // One window holds every activity: its exact solve reaches the optimum.
        prop_assert_eq!(r.makespan, optimum, "start {}, brute force {:?}", before, brute.solution);
    }
}
