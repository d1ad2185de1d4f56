//! Property tests over random small problems: schedule-generation schemes and the heuristic
//! give schedules that pass the independent checker and respect every lower bound; the
//! heuristic is deterministic for a seed; the checker catches a broken precedence; on problems
//! small enough to enumerate, lower bound <= optimum <= heuristic; JSON round trips are exact.

use concerto_rcpsp::io::{json, problem_to_json, schedule_from_json, schedule_to_json};
use concerto_rcpsp::{
    bounds, check, sgs, ActivityList, Heuristic, HeuristicConfig, Limits, Problem, ProblemBuilder,
    Schedule, Solver, Status, Time, Violation,
};
use concerto_tests::{brute_force_optimum, problems, random_topological_list};
use proptest::prelude::*;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// The problem with every duration and lag multiplied by `k`.
fn scaled(p: &Problem, k: Time) -> Problem {
    let mut b = ProblemBuilder::new();
    let resources: Vec<_> = p
        .resources()
        .iter()
        .map(|r| b.resource(r.name.clone(), r.capacity))
        .collect();
    for a in p.activities() {
        let id = b.activity(a.name.clone(), a.duration * k);
        for (&q, &r) in a.demands.iter().zip(&resources) {
            b.demand(id, r, q);
        }
    }
    for arc in p.precedences() {
        b.precedence_with_lag(arc.from, arc.to, arc.lag * k);
    }
    b.build().expect("scaling keeps a problem valid")
}

fn heuristic(max_schedules: u64) -> Heuristic {
    Heuristic::new(HeuristicConfig {
        max_schedules: Some(max_schedules),
        ..HeuristicConfig::default()
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn sgs_schedules_are_valid(p in problems(12), seed in any::<u64>()) {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let lb = bounds::lower_bound(&p).value;
        let list = ActivityList::new(&p, random_topological_list(&p, &mut rng))
            .expect("a topological order is a feasible list");
        let serial = sgs::serial(&p, &list);
        let m = check(&p, &serial).map_err(|v| TestCaseError::fail(format!("serial: {v}")))?;
        prop_assert!(m >= lb, "serial makespan {} below bound {}", m, lb);
        prop_assert!(m <= p.horizon());

        let priorities: Vec<i64> = (0..p.len()).map(|_| rng.random_range(-50..50)).collect();
        let parallel = sgs::parallel(&p, &priorities);
        let m = check(&p, &parallel).map_err(|v| TestCaseError::fail(format!("parallel: {v}")))?;
        prop_assert!(m >= lb, "parallel makespan {} below bound {}", m, lb);
        prop_assert!(m <= p.horizon());
    }

    /// The schemes compare times only, so scaling every duration and lag scales the schedule.
    /// A large factor (nanoseconds, as in deep-learning graphs) makes the schemes use another
    /// resource-profile representation than small integer times do: both must agree.
    #[test]
    fn sgs_schedules_scale_with_time(p in problems(12), seed in any::<u64>()) {
        const K: Time = 1_000_003;
        let big = scaled(&p, K);
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let order = random_topological_list(&p, &mut rng);
        let small_list = ActivityList::new(&p, order.clone()).expect("topological");
        let big_list = ActivityList::new(&big, order).expect("topological");
        let times_k = |s: &Schedule| Schedule::new(s.starts().iter().map(|t| t * K).collect());
        let serial = sgs::serial(&p, &small_list);
        prop_assert_eq!(sgs::serial(&big, &big_list), times_k(&serial));
        let priorities: Vec<i64> = (0..p.len()).map(|_| rng.random_range(-50..50)).collect();
        let parallel = sgs::parallel(&p, &priorities);
        prop_assert_eq!(sgs::parallel(&big, &priorities), times_k(&parallel));
        prop_assert_eq!(bounds::critical_path(&big).value, bounds::critical_path(&p).value * K);

        let outcome = heuristic(200).solve(&big, &Limits::default().seed(seed))
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        let m = check(&big, outcome.schedule.as_ref().expect("a schedule"))
            .map_err(|v| TestCaseError::fail(v.to_string()))?;
        prop_assert!(m >= bounds::lower_bound(&big).value);
    }

    #[test]
    fn heuristic_never_worsens_a_warm_start(p in problems(12), seed in any::<u64>()) {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let list = ActivityList::new(&p, random_topological_list(&p, &mut rng)).expect("topological");
        let initial = sgs::serial(&p, &list);
        let initial_makespan = check(&p, &initial).map_err(|v| TestCaseError::fail(v.to_string()))?;
        let outcome = heuristic(50).solve(&p, &Limits::default().seed(seed).initial(initial))
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        let m = check(&p, outcome.schedule.as_ref().expect("a schedule"))
            .map_err(|v| TestCaseError::fail(v.to_string()))?;
        prop_assert!(m <= initial_makespan, "warm start {} worsened to {}", initial_makespan, m);
    }

    #[test]
    fn heuristic_respects_every_bound(p in problems(12), seed in any::<u64>()) {
        let outcome = heuristic(300).solve(&p, &Limits::default().seed(seed))
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        let schedule = outcome.schedule.as_ref().expect("a heuristic always has a schedule");
        let m = check(&p, schedule).map_err(|v| TestCaseError::fail(v.to_string()))?;
        prop_assert_eq!(outcome.makespan, Some(m));
        for bound in [bounds::critical_path(&p), bounds::energy(&p), bounds::lower_bound(&p)] {
            prop_assert!(m >= bound.value, "makespan {} below the {} bound {}", m, bound.kind.as_str(), bound.value);
        }
        prop_assert!(outcome.lower_bound <= m);
        if outcome.status == Status::Optimal {
            prop_assert_eq!(m, outcome.lower_bound);
        }
    }

    #[test]
    fn heuristic_is_deterministic(p in problems(12), seed in any::<u64>()) {
        let limits = Limits::default().seed(seed);
        let a = heuristic(400).solve(&p, &limits).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let b = heuristic(400).solve(&p, &limits).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(a.schedule, b.schedule);
        prop_assert_eq!(a.status, b.status);
        prop_assert_eq!(a.work, b.work);
    }

    #[test]
    fn check_reports_a_broken_precedence(p in problems(12), pick in any::<prop::sample::Index>()) {
        let list = ActivityList::new(&p, p.topological_order().to_vec()).expect("topological");
        let valid = sgs::serial(&p, &list);
        prop_assert!(check(&p, &valid).is_ok());
        // Arcs whose successor can be moved to time 0, before its predecessor's finish + lag.
        let breakable: Vec<_> = p
            .precedences()
            .iter()
            .filter(|arc| valid.finish(&p, arc.from) + arc.lag > 0)
            .collect();
        prop_assume!(!breakable.is_empty());
        let arc = *pick.get(&breakable);
        let earliest = valid.finish(&p, arc.from) + arc.lag;
        let mut starts = valid.into_starts();
        starts[arc.to.index()] = 0;
        let violations = check(&p, &Schedule::new(starts)).expect_err("a precedence is broken").0;
        let expected = Violation::Precedence {
            from: p.activity(arc.from).name.clone(),
            to: p.activity(arc.to).name.clone(),
            lag: arc.lag,
            earliest,
            start: 0,
        };
        prop_assert!(violations.contains(&expected), "{:?} not in {:?}", expected, violations);
    }

    #[test]
    fn heuristic_finds_the_optimum_of_tiny_problems(p in problems(7), seed in any::<u64>()) {
        let (optimum, witness) = brute_force_optimum(&p);
        prop_assert_eq!(check(&p, &witness), Ok(optimum));
        let lb = bounds::lower_bound(&p).value;
        prop_assert!(lb <= optimum, "lower bound {} above the optimum {}", lb, optimum);
        let outcome = heuristic(5000).solve(&p, &Limits::default().seed(seed))
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        let m = check(&p, outcome.schedule.as_ref().expect("a schedule"))
            .map_err(|v| TestCaseError::fail(v.to_string()))?;
        prop_assert!(m >= optimum, "heuristic {} below the optimum {}", m, optimum);
        prop_assert!(outcome.lower_bound <= optimum);
        prop_assert_eq!(m, optimum, "the heuristic misses the optimum");
    }

    #[test]
    fn json_round_trip_is_exact(p in problems(12), seed in any::<u64>()) {
        let text = problem_to_json(&p);
        let q = json::parse_problem(&text, "round-trip.json").map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(p.activities(), q.activities());
        prop_assert_eq!(p.resources(), q.resources());
        prop_assert_eq!(p.precedences(), q.precedences());
        prop_assert_eq!(problem_to_json(&q), text);

        // Any start times survive, valid or not.
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let schedule = Schedule::new((0..p.len()).map(|_| rng.random_range(-5..100)).collect());
        let text = schedule_to_json(&p, &schedule);
        let back = schedule_from_json(&p, &text, "schedule.json").map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(back, schedule);
    }
}
