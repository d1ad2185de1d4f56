//! The pumpkin modal backend against brute force over the mode combinations, on random modal
//! problems; and its limits on a larger one.

#![cfg(feature = "pumpkin")]

use std::time::{Duration, Instant};

use concerto_backends::pumpkin::Pumpkin;
use concerto_backends::pumpkin_modal::{ModalSearch, PumpkinModal, PumpkinModalConfig};
use concerto_rcpsp::{
    brute_force, check_modal, ActivityId, CancelFlag, Limits, ModalProblem, ModalSolver,
    ProblemBuilder, Region, Status, StopReason, Time,
};
use proptest::prelude::*;

/// A small deterministic generator (xorshift64).
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Self {
        Self(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1)
    }

    /// A value in `0..m`.
    fn below(&mut self, m: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % m
    }
}

/// Sizes of a random modal problem.
struct Shape {
    mandatory: u64,
    regions: u64,
    modes: u64,
    per_mode: u64,
    resources: u64,
    max_duration: u64,
}

/// A random modal problem: `mandatory` (at most) mandatory activities, regions of 2 to
/// `modes` modes with 1 to `per_mode` activities each, created in a random interleaving whose
/// order is topological for the random precedences (lags 0 to 2), including precedences
/// between modes of different regions and between modes and mandatory activities.
fn random_modal(seed: u64, shape: &Shape) -> ModalProblem {
    let mut rng = Rng::new(seed);
    let mut b = ProblemBuilder::new();
    let caps: Vec<u32> = (0..1 + rng.below(shape.resources))
        .map(|_| 1 + rng.below(3) as u32)
        .collect();
    let resources: Vec<_> = caps
        .iter()
        .enumerate()
        .map(|(k, &c)| b.resource(format!("r{k}"), c))
        .collect();
    // What each activity is: None mandatory, Some((region, mode)).
    let mut kinds: Vec<Option<(usize, usize)>> =
        vec![None; rng.below(shape.mandatory + 1) as usize];
    let mut mode_counts = Vec::new();
    for r in 0..1 + rng.below(shape.regions) as usize {
        let modes = 2 + rng.below(shape.modes - 1) as usize;
        mode_counts.push(modes);
        for m in 0..modes {
            for _ in 0..1 + rng.below(shape.per_mode) {
                kinds.push(Some((r, m)));
            }
        }
    }
    // Shuffle (Fisher-Yates): the creation order is the topological order.
    for i in (1..kinds.len()).rev() {
        let j = rng.below(i as u64 + 1) as usize;
        kinds.swap(i, j);
    }
    let mut regions: Vec<Region> = mode_counts
        .iter()
        .enumerate()
        .map(|(r, &k)| Region {
            name: format!("R{r}"),
            modes: vec![Vec::new(); k],
        })
        .collect();
    let mut ids: Vec<ActivityId> = Vec::new();
    for (i, kind) in kinds.iter().enumerate() {
        let a = b.activity(format!("a{i}"), rng.below(shape.max_duration + 1) as Time);
        for (k, &r) in resources.iter().enumerate() {
            b.demand(a, r, rng.below(u64::from(caps[k]) + 1) as u32);
        }
        if let Some((r, m)) = kind {
            regions[*r].modes[*m].push(a);
        }
        ids.push(a);
    }
    for j in 0..ids.len() {
        for i in 0..j {
            // Denser between a mode and the rest, as in joint decomposition.
            let odds = if kinds[i].is_some() != kinds[j].is_some() {
                3
            } else {
                5
            };
            if rng.below(odds) == 0 {
                let lag = if rng.below(4) == 0 {
                    rng.below(3) as Time
                } else {
                    0
                };
                b.precedence_with_lag(ids[i], ids[j], lag);
            }
        }
    }
    ModalProblem::new(b.build().expect("valid"), regions).expect("valid")
}

const SMALL: Shape = Shape {
    mandatory: 8,
    regions: 2,
    modes: 3,
    per_mode: 3,
    resources: 2,
    max_duration: 6,
};

fn limits(seed: u64) -> Limits {
    Limits::with_time_limit(Duration::from_secs(10)).seed(seed)
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 40,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn pumpkin_modal_matches_brute_force(seed in any::<u64>()) {
        let problem = random_modal(seed, &SMALL);
        let reference = brute_force(&problem, &Pumpkin::default(), &limits(seed)).expect("solves");
        prop_assert_eq!(reference.status, Status::Optimal);
        for search in [ModalSearch::ModesThenSst, ModalSearch::Vsids] {
            let solver = PumpkinModal::new(PumpkinModalConfig { search });
            let outcome = solver.solve_modal(&problem, &limits(seed), None).expect("solves");
            prop_assert_eq!(outcome.status, Status::Optimal, "{:?}: {}", search, outcome);
            prop_assert_eq!(outcome.makespan, reference.makespan, "{:?}", search);
            prop_assert_eq!(outcome.lower_bound, outcome.makespan.unwrap());
            let solution = outcome.solution.as_ref().expect("a solution");
            prop_assert_eq!(check_modal(&problem, solution), Ok(outcome.makespan.unwrap()));
        }
        // From the optimum as the initial solution: proven without a better one.
        let optimum = reference.solution.as_ref().expect("a solution");
        let outcome = PumpkinModal::default()
            .solve_modal(&problem, &limits(seed), Some(optimum))
            .expect("solves");
        prop_assert_eq!(outcome.status, Status::Optimal);
        prop_assert_eq!(outcome.makespan, reference.makespan);
        prop_assert_eq!(outcome.solution.as_ref(), Some(optimum));
    }
}

const LARGE: Shape = Shape {
    mandatory: 70,
    regions: 6,
    modes: 4,
    per_mode: 6,
    resources: 2,
    max_duration: 9,
};

#[test]
fn the_time_limit_and_the_cancel_flag_stop_a_large_solve() {
    let problem = random_modal(11, &LARGE);
    let limit = Duration::from_millis(300);
    let started = Instant::now();
    let outcome = PumpkinModal::default()
        .solve_modal(&problem, &Limits::with_time_limit(limit), None)
        .expect("solves");
    let elapsed = started.elapsed();
    assert!(
        elapsed < limit + Duration::from_millis(200),
        "took {elapsed:?} for a limit of {limit:?}"
    );
    assert!(
        matches!(
            outcome.status,
            Status::Optimal
                | Status::Feasible(StopReason::TimeLimit)
                | Status::Unknown(StopReason::TimeLimit)
        ),
        "{outcome}"
    );
    if let Some(s) = &outcome.solution {
        assert_eq!(check_modal(&problem, s), Ok(outcome.makespan.unwrap()));
    }

    let cancel = CancelFlag::new();
    cancel.cancel();
    let limits = Limits {
        cancel: Some(cancel),
        ..Limits::default()
    };
    let started = Instant::now();
    let outcome = PumpkinModal::default()
        .solve_modal(&problem, &limits, outcome.solution.as_ref())
        .expect("solves");
    assert!(started.elapsed() < Duration::from_secs(2));
    assert!(
        matches!(
            outcome.status,
            Status::Optimal
                | Status::Feasible(StopReason::Cancelled)
                | Status::Unknown(StopReason::Cancelled)
        ),
        "{outcome}"
    );
}

#[test]
fn deterministic_for_a_seed() {
    let problem = random_modal(5, &SMALL);
    let solver = PumpkinModal::default();
    let a = solver
        .solve_modal(&problem, &limits(3), None)
        .expect("solves");
    let b = solver
        .solve_modal(&problem, &limits(3), None)
        .expect("solves");
    assert_eq!(a.solution, b.solution);
    assert_eq!((a.status, a.lower_bound), (b.status, b.lower_bound));
}
