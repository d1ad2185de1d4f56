//! Tests of the pumpkin RCPSP backend.

use std::time::{Duration, Instant};

use concerto_rcpsp::temporal::earliest_starts;
use concerto_rcpsp::{
    check, lower_bound, read_problem, sgs, ActivityId, ActivityList, CancelFlag, ProblemBuilder,
};

use super::model::shifted_left;
use super::*;

fn fixture(name: &str) -> (Problem, concerto_fixtures::Fixture) {
    let f = concerto_fixtures::all()
        .into_iter()
        .find(|f| f.name == name)
        .unwrap_or_else(|| panic!("no fixture {name}"));
    (read_problem(&f.path).expect("fixtures parse"), f)
}

fn solve(problem: &Problem, limits: &Limits) -> Outcome {
    let outcome = Pumpkin::default().solve(problem, limits).expect("solves");
    if let Some(s) = &outcome.schedule {
        assert_eq!(
            Some(check(problem, s).expect("valid schedule")),
            outcome.makespan
        );
    }
    assert!(outcome.makespan.is_none_or(|m| outcome.lower_bound <= m));
    outcome
}

#[test]
fn tiny_and_j30_fixtures_are_solved_to_their_optimum() {
    let fixtures: Vec<_> = concerto_fixtures::all()
        .into_iter()
        .filter(|f| f.name.starts_with("tiny/") || f.name.starts_with("psplib/j30/"))
        .collect();
    assert!(fixtures.len() >= 7);
    for f in fixtures {
        assert!(f.optimal, "{} has a known optimum", f.name);
        let problem = read_problem(&f.path).expect("fixtures parse");
        for (direction, ttef, lns) in [
            (Direction::Backward, false, false),
            (Direction::Forward, false, false),
            (Direction::Backward, true, false),
            (Direction::Backward, false, true),
        ] {
            let solver = Pumpkin::new(PumpkinConfig {
                direction,
                ttef,
                lns,
                ..PumpkinConfig::default()
            });
            let outcome = solver
                .solve(&problem, &Limits::default().seed(1))
                .expect("solves");
            let schedule = outcome.schedule.as_ref().expect("a schedule");
            assert_eq!(check(&problem, schedule), Ok(f.upper_bound), "{}", f.name);
            assert_eq!(
                outcome.status,
                Status::Optimal,
                "{} {direction:?} ttef {ttef} lns {lns}",
                f.name
            );
            assert_eq!(outcome.makespan, Some(f.upper_bound), "{}", f.name);
            assert_eq!(outcome.lower_bound, f.upper_bound, "{}", f.name);
            assert_eq!(outcome.solver, "pumpkin");
        }
    }
}

#[test]
fn a_shift_left_stops_at_the_first_earliest_start() {
    // The second activity has slack 3, the first 2: both move by 2.
    assert_eq!(shifted_left(vec![4, 9], &[2, 6]), vec![2, 7]);
    // An activity at its earliest start (a pinned one, say) keeps everything in place.
    assert_eq!(shifted_left(vec![4, 9], &[4, 0]), vec![4, 9]);
    assert_eq!(shifted_left(Vec::new(), &[]), Vec::<Time>::new());
}

#[test]
fn the_backward_series_returns_left_shifted_schedules() {
    // From the activities in a chain, far from the optimum: each solution the backward
    // series finds ends near the cap and would leave every activity after its earliest
    // start; shifted, one of them is at its earliest start.
    let (problem, f) = fixture("psplib/j30/j305_1.sm");
    let solver = Pumpkin::new(PumpkinConfig {
        direction: Direction::Backward,
        ..PumpkinConfig::default()
    });
    let outcome = solver
        .solve(&problem, &Limits::default().initial(chain(&problem)))
        .expect("solves");
    let schedule = outcome.schedule.expect("a schedule");
    assert_eq!(check(&problem, &schedule), Ok(f.upper_bound));
    let es = earliest_starts(&problem);
    assert!(schedule.starts().iter().zip(&es).any(|(s, e)| s == e));
}

#[test]
fn a_two_worker_portfolio_proves_the_same_optima() {
    let fixtures: Vec<_> = concerto_fixtures::all()
        .into_iter()
        .filter(|f| f.name.starts_with("tiny/") || f.name.starts_with("psplib/j30/"))
        .collect();
    for f in fixtures {
        let problem = read_problem(&f.path).expect("fixtures parse");
        let limits = Limits {
            threads: 2,
            ..Limits::default().seed(1)
        };
        let outcome = solve(&problem, &limits);
        assert_eq!(outcome.status, Status::Optimal, "{}", f.name);
        assert_eq!(outcome.makespan, Some(f.upper_bound), "{}", f.name);
        assert_eq!(outcome.lower_bound, f.upper_bound, "{}", f.name);
    }
}

#[test]
fn a_portfolio_stops_at_its_time_limit_and_on_cancel() {
    let (problem, f) = fixture("psplib/j60/j609_1.sm");
    let limit = Duration::from_secs(1);
    let limits = Limits {
        threads: 2,
        ..Limits::with_time_limit(limit)
    };
    let started = Instant::now();
    let outcome = solve(&problem, &limits);
    let elapsed = started.elapsed();
    assert!(
        elapsed.as_secs_f64() < limit.as_secs_f64() * 1.1 + 0.05,
        "took {elapsed:?} for a limit of {limit:?}"
    );
    assert_eq!(outcome.status, Status::Feasible(StopReason::TimeLimit));
    assert!(outcome.lower_bound <= f.upper_bound);
    assert!(outcome.makespan.is_some_and(|m| m >= f.lower_bound));
    stops_when_cancelled(&problem, 2);
}

/// Solves `problem` on `threads` threads without a time limit, raises the cancel flag
/// after 200 ms, and checks that the solve stops soon with `Cancelled`.
fn stops_when_cancelled(problem: &Problem, threads: usize) {
    let cancel = CancelFlag::new();
    let limits = Limits {
        threads,
        cancel: Some(cancel.clone()),
        ..Limits::default()
    };
    let raiser = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(200));
        cancel.cancel();
    });
    let started = Instant::now();
    let outcome = solve(problem, &limits);
    raiser.join().expect("the raiser thread ends");
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(outcome.status, Status::Feasible(StopReason::Cancelled));
}

#[test]
fn without_the_portfolio_threads_change_nothing() {
    let (problem, _) = fixture("psplib/j30/j305_1.sm");
    let solver = Pumpkin::new(PumpkinConfig {
        max_conflicts: Some(300),
        portfolio: false,
        ..PumpkinConfig::default()
    });
    let one = solver
        .solve(&problem, &Limits::default().seed(7))
        .expect("solves");
    let two = solver
        .solve(
            &problem,
            &Limits {
                threads: 2,
                ..Limits::default().seed(7)
            },
        )
        .expect("solves");
    assert_eq!(one.schedule, two.schedule);
    assert_eq!((one.lower_bound, one.work), (two.lower_bound, two.work));
}

#[test]
fn open_j60_instance_brackets_the_known_interval() {
    let (problem, f) = fixture("psplib/j60/j609_1.sm");
    assert_eq!((f.lower_bound, f.upper_bound), (84, 87));
    let limits = Limits::with_time_limit(Duration::from_secs(2)).seed(3);
    let outcome = solve(&problem, &limits);
    assert_eq!(outcome.status, Status::Feasible(StopReason::TimeLimit));
    assert!(
        outcome.lower_bound <= f.upper_bound,
        "bound {}",
        outcome.lower_bound
    );
    assert!(outcome.makespan.expect("a schedule") >= f.lower_bound);
    assert!(outcome.lower_bound >= lower_bound(&problem).value);
}

#[test]
fn a_short_time_limit_is_respected_on_a_hard_instance() {
    // One second rather than less: the 10 % margin (plus 50 ms) must absorb the wall-clock
    // noise of a loaded 2-core machine, where 300 ms limits overran by 110-230 ms.
    let (problem, _) = fixture("psplib/j60/j6013_1.sm");
    let limit = Duration::from_secs(1);
    let started = Instant::now();
    let outcome = solve(&problem, &Limits::with_time_limit(limit));
    let elapsed = started.elapsed();
    assert!(
        elapsed.as_secs_f64() < limit.as_secs_f64() * 1.1 + 0.05,
        "took {elapsed:?} for a limit of {limit:?}"
    );
    assert_eq!(outcome.status, Status::Feasible(StopReason::TimeLimit));
    assert!(outcome.schedule.is_some());
}

#[test]
fn deterministic_for_a_seed() {
    let (problem, _) = fixture("psplib/j30/j305_1.sm");
    let solver = Pumpkin::new(PumpkinConfig {
        max_conflicts: Some(300),
        ..PumpkinConfig::default()
    });
    let limits = Limits::default().seed(7);
    let a = solver.solve(&problem, &limits).expect("solves");
    let b = solver.solve(&problem, &limits).expect("solves");
    assert_eq!(a.schedule, b.schedule);
    assert_eq!(a.status, b.status);
    assert_eq!((a.lower_bound, a.work), (b.lower_bound, b.work));
}

#[test]
fn large_neighbourhood_search_is_deterministic_under_a_work_budget() {
    // An open j60 instance of PSPLIB (best known 82) and its known lower bound.
    let open = [("j609_2", 77)];
    let solve = |name: &str, lower: Time, lns: bool, threads: usize| {
        let path = format!(
            "{}/../data/psplib/j60/{name}.sm.gz",
            env!("CARGO_MANIFEST_DIR")
        );
        let problem = read_problem(&path).expect("the PSPLIB instance parses");
        let solver = Pumpkin::new(PumpkinConfig {
            lns,
            ..PumpkinConfig::default()
        });
        // The caller's work budget: under it a portfolio shares nothing (see the module
        // docs), so two threads are deterministic too.
        let limits = Limits {
            threads,
            work_limit: Some(3_000),
            ..Limits::default().seed(5)
        };
        let outcome = solver.solve(&problem, &limits).expect("solves");
        let schedule = outcome.schedule.as_ref().expect("a schedule");
        assert_eq!(
            Some(check(&problem, schedule).expect("valid")),
            outcome.makespan
        );
        assert!(outcome.makespan >= Some(lower), "{name}");
        outcome
    };
    let (name, lower) = open[0];
    for threads in [1, 2] {
        let (a, b) = (
            solve(name, lower, true, threads),
            solve(name, lower, true, threads),
        );
        assert_eq!(a.schedule, b.schedule, "{threads} threads");
        assert_eq!((a.lower_bound, a.work), (b.lower_bound, b.work));
    }
}

#[test]
fn a_raised_cancel_flag_stops_the_solve() {
    let (problem, _) = fixture("psplib/j60/j609_1.sm");
    stops_when_cancelled(&problem, 1);
}

#[test]
fn a_work_limit_is_reported() {
    let (problem, _) = fixture("psplib/j60/j6013_1.sm");
    let solver = Pumpkin::new(PumpkinConfig {
        max_conflicts: Some(50),
        ..PumpkinConfig::default()
    });
    let outcome = solver.solve(&problem, &Limits::default()).expect("solves");
    assert_eq!(outcome.status, Status::Feasible(StopReason::WorkLimit));
    assert!(outcome.work >= 50);
}

#[test]
fn an_upper_bound_below_the_optimum_is_infeasible() {
    let (problem, f) = fixture("psplib/j30/j301_1.sm");
    let limits = Limits {
        upper_bound: Some(f.upper_bound - 1),
        ..Limits::default()
    };
    let outcome = solve(&problem, &limits);
    assert_eq!(outcome.status, Status::Infeasible);
    assert_eq!(outcome.schedule, None);
    assert_eq!(outcome.lower_bound, f.upper_bound);

    // A bound at the optimum: the optimum is found.
    let limits = Limits {
        upper_bound: Some(f.upper_bound),
        ..Limits::default()
    };
    let outcome = solve(&problem, &limits);
    assert_eq!(outcome.status, Status::Optimal);
    assert_eq!(outcome.makespan, Some(f.upper_bound));
}

#[test]
fn an_initial_schedule_is_the_first_incumbent() {
    let (problem, f) = fixture("psplib/j30/j305_1.sm");
    // A poor but valid start: the activities one after another.
    let mut t = 0;
    let mut starts = vec![0; problem.len()];
    for &a in problem.topological_order() {
        starts[a.index()] = t;
        t += problem.duration(a);
    }
    let limits = Limits::default().initial(Schedule::new(starts));
    let outcome = solve(&problem, &limits);
    assert_eq!(outcome.status, Status::Optimal);
    assert_eq!(outcome.makespan, Some(f.upper_bound));
}

#[test]
fn durations_beyond_i32_are_unsupported() {
    let mut b = ProblemBuilder::new();
    let r = b.resource("r", 1);
    let x = b.activity("x", 1 << 40);
    let y = b.activity("y", 1 << 40);
    b.demand(x, r, 1);
    b.demand(y, r, 1);
    let problem = b.build().expect("valid");
    // The heuristic's schedule (2^41) meets the energy bound: no model needed.
    let outcome = solve(&problem, &Limits::default());
    assert_eq!(outcome.status, Status::Optimal);
    // Three pairwise disjoint activities (demand 2 of 3): the bound 2^41 is below the
    // optimum 3 * 2^40, and the model would overflow i32.
    let mut b = ProblemBuilder::new();
    let r = b.resource("r", 3);
    for k in 0..3 {
        let a = b.activity(format!("a{k}"), 1 << 40);
        b.demand(a, r, 2);
    }
    let problem = b.build().expect("valid");
    let err = Pumpkin::default()
        .solve(&problem, &Limits::default())
        .expect_err("too large for i32");
    assert!(matches!(err, SolveError::Unsupported { .. }), "{err}");
}

/// `x` must run in `[1, 3]`; `y` fits before it only if it did not take 2 units: the
/// non-delay choice (y at 0) misses x's deadline, the optimum is x at 1, y at 3.
fn windows(extra: bool) -> Problem {
    let mut b = ProblemBuilder::new();
    let r = b.resource("r", 1);
    let x = b.activity("x", 2);
    let y = b.activity("y", 2);
    b.release(x, 1);
    b.deadline(x, 3);
    b.deadline(y, 10);
    b.demand(x, r, 1);
    b.demand(y, r, 1);
    if extra {
        // A second activity inside x's window: 3 units of work in a window of 2.
        let z = b.activity("z", 1);
        b.release(z, 1);
        b.deadline(z, 3);
        b.demand(z, r, 1);
    }
    b.build().expect("valid")
}

#[test]
fn release_dates_and_deadlines_are_met_with_or_without_an_incumbent() {
    for (schedules, direction) in [
        (1, Direction::Backward),
        (5_000, Direction::Backward),
        (1, Direction::Forward),
    ] {
        let solver = Pumpkin::new(PumpkinConfig {
            heuristic_schedules: schedules,
            direction,
            ..PumpkinConfig::default()
        });
        let outcome = solver
            .solve(&windows(false), &Limits::default())
            .expect("solves");
        assert_eq!(outcome.status, Status::Optimal, "{schedules} schedules");
        assert_eq!(outcome.makespan, Some(5));
        let schedule = outcome.schedule.expect("a schedule");
        assert_eq!(check(&windows(false), &schedule), Ok(5));
        let outcome = solver
            .solve(&windows(true), &Limits::default())
            .expect("solves");
        assert_eq!(outcome.status, Status::Infeasible, "{schedules} schedules");
        assert!(outcome.schedule.is_none());
    }
}

#[test]
fn a_deadline_before_the_critical_path_is_infeasible() {
    let mut b = ProblemBuilder::new();
    let a = b.activity("a", 3);
    let c = b.activity("c", 2);
    b.precedence(a, c);
    b.deadline(c, 4);
    let problem = b.build().expect("valid");
    let outcome = solve(&problem, &Limits::default());
    assert_eq!(outcome.status, Status::Infeasible);
    assert!(outcome.schedule.is_none());
}

#[test]
fn zero_duration_activities_and_lags() {
    let mut b = ProblemBuilder::new();
    let r = b.resource("stream", 1);
    let start = b.activity("start", 0);
    let a = b.activity("a", 3);
    let c = b.activity("c", 2);
    let d = b.activity("d", 4);
    let end = b.activity("end", 0);
    for x in [a, c, d] {
        b.demand(x, r, 1);
        b.precedence(start, x);
        b.precedence(x, end);
    }
    b.precedence_with_lag(a, c, 4);
    let problem = b.build().expect("valid");
    let outcome = solve(&problem, &Limits::default());
    assert_eq!(outcome.status, Status::Optimal);
    // a [0,3), d [3,7), c [7,9): the lag a -> c (3 + 4 = 7) is met.
    assert_eq!(outcome.makespan, Some(9));
}

/// The optimum by brute force: the serial SGS over every precedence-feasible activity list
/// generates every active schedule, and one of them is optimal.
fn brute_force(problem: &Problem) -> Time {
    fn permute(k: usize, items: &mut Vec<ActivityId>, problem: &Problem, best: &mut Time) {
        if k == items.len() {
            if let Ok(list) = ActivityList::new(problem, items.clone()) {
                *best = (*best).min(sgs::serial(problem, &list).makespan(problem));
            }
            return;
        }
        for x in k..items.len() {
            items.swap(k, x);
            permute(k + 1, items, problem, best);
            items.swap(k, x);
        }
    }
    let mut items: Vec<ActivityId> = problem.ids().collect();
    let mut best = Time::MAX;
    permute(0, &mut items, problem, &mut best);
    best
}

/// The activities one after another in topological order: valid, and far from optimal.
fn chain(problem: &Problem) -> Schedule {
    let mut starts = vec![0; problem.len()];
    let mut t = 0;
    for &a in problem.topological_order() {
        let ready = problem
            .predecessors(a)
            .iter()
            .map(|arc| starts[arc.activity.index()] + problem.duration(arc.activity) + arc.lag)
            .max()
            .unwrap_or(0);
        t = t.max(ready);
        starts[a.index()] = t;
        t += problem.duration(a);
    }
    Schedule::new(starts)
}

#[test]
fn random_small_problems_match_brute_force() {
    let mut state = 0x9e37_79b9_7f4a_7c15_u64;
    let mut next = |m: u64| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state % m
    };
    for case in 0..60 {
        let mut b = ProblemBuilder::new();
        let caps = [2 + next(3) as u32, 1 + next(3) as u32];
        let rs: Vec<_> = caps
            .iter()
            .enumerate()
            .map(|(k, &c)| b.resource(format!("r{k}"), c))
            .collect();
        let ids: Vec<_> = (0..6)
            .map(|k| b.activity(format!("a{k}"), next(6) as Time))
            .collect();
        for &a in &ids {
            for (k, &r) in rs.iter().enumerate() {
                b.demand(a, r, next(u64::from(caps[k]) + 1) as u32);
            }
        }
        for i in 0..ids.len() {
            for j in i + 1..ids.len() {
                if next(4) == 0 {
                    b.precedence_with_lag(ids[i], ids[j], next(3) as Time);
                }
            }
        }
        let problem = b.build().expect("valid");
        let optimum = brute_force(&problem);
        for (edge_finding, ttef, direction) in [
            (true, false, Direction::Backward),
            (false, false, Direction::Backward),
            (true, false, Direction::Forward),
            (false, false, Direction::Forward),
            (true, true, Direction::Backward),
            (false, true, Direction::Forward),
        ] {
            let solver = Pumpkin::new(PumpkinConfig {
                edge_finding,
                ttef,
                direction,
                ..PumpkinConfig::default()
            });
            let limits = Limits::default().seed(case).initial(chain(&problem));
            let outcome = solver.solve(&problem, &limits).expect("solves");
            assert_eq!(outcome.status, Status::Optimal, "case {case}");
            assert_eq!(
                outcome.makespan,
                Some(optimum),
                "case {case}, edge finding {edge_finding}, ttef {ttef}, {direction:?}"
            );
            let schedule = outcome.schedule.expect("a schedule");
            assert_eq!(check(&problem, &schedule), Ok(optimum), "case {case}");
        }
    }
}

#[test]
fn a_zero_time_limit_is_an_error() {
    let (problem, _) = fixture("tiny/packing.rcp");
    let limits = Limits::with_time_limit(Duration::ZERO);
    assert!(matches!(
        Pumpkin::default().solve(&problem, &limits),
        Err(SolveError::ZeroTimeLimit)
    ));
}

/// A window-like problem: activities with release dates and deadlines around a sequential
/// schedule (returned as the start), some of them pinned where they run, precedences with
/// lags consistent with that schedule, two resources.
fn window_like(next: &mut impl FnMut(u64) -> u64) -> (Problem, Schedule) {
    let mut b = ProblemBuilder::new();
    let caps = [1 + next(2) as u32, 2 + next(2) as u32];
    let rs: Vec<_> = caps
        .iter()
        .enumerate()
        .map(|(k, &c)| b.resource(format!("r{k}"), c))
        .collect();
    let mut starts = Vec::new();
    let mut ids = Vec::new();
    let mut t: Time = 0;
    for k in 0..8 {
        let d = 1 + next(4) as Time;
        let a = b.activity(format!("a{k}"), d);
        for (r, &c) in rs.iter().zip(&caps) {
            b.demand(a, *r, next(u64::from(c) + 1) as u32);
        }
        if next(3) == 0 {
            // Pinned where it runs, like the outside activities of an odd-even window.
            b.release(a, t);
            b.deadline(a, t + d);
        } else {
            b.release(a, t.saturating_sub(next(3) as Time).max(0));
            b.deadline(a, t + d + 2 + next(6) as Time);
        }
        starts.push(t);
        ids.push((a, t, d));
        t += d + 2;
    }
    for i in 0..ids.len() {
        for j in i + 1..ids.len() {
            if next(5) == 0 {
                // The sequential schedule leaves a gap of 2 after every activity.
                b.precedence_with_lag(ids[i].0, ids[j].0, next(3) as Time);
            }
        }
    }
    (b.build().expect("valid"), Schedule::new(starts))
}

#[test]
fn light_reasoning_proves_the_same_optima_as_full_reasoning() {
    let mut state = 0x2545_f491_4f6c_dd1d_u64;
    let mut next = |m: u64| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state % m
    };
    let mut improved = 0;
    for case in 0..40 {
        let (problem, start) = window_like(&mut next);
        assert!(problem.has_time_windows());
        assert_eq!(Reasoning::Auto.resolve(&problem), Reasoning::Light);
        let start_makespan = check(&problem, &start).expect("the start is valid");
        let mut optima = Vec::new();
        for reasoning in [Reasoning::Full, Reasoning::Light] {
            for direction in [Direction::Forward, Direction::Backward] {
                let solver = Pumpkin::new(PumpkinConfig {
                    reasoning,
                    direction,
                    ..PumpkinConfig::default()
                });
                let limits = Limits::default().seed(case).initial(start.clone());
                let outcome = solver.solve(&problem, &limits).expect("solves");
                assert_eq!(outcome.status, Status::Optimal, "case {case} {reasoning:?}");
                let schedule = outcome.schedule.expect("a schedule");
                assert_eq!(check(&problem, &schedule).ok(), outcome.makespan);
                optima.push(outcome.makespan.expect("a makespan"));
            }
        }
        assert!(
            optima.iter().all(|&m| m == optima[0]),
            "case {case}: {optima:?}"
        );
        improved += usize::from(optima[0] < start_makespan);
    }
    // The cases are not trivial: the sequential start is beaten in many of them (19 of 40).
    assert!(improved >= 10, "{improved} of 40 improved");
}

#[test]
fn auto_reasoning_is_full_without_time_windows() {
    let (problem, _) = fixture("tiny/packing.rcp");
    assert!(!problem.has_time_windows());
    assert_eq!(Reasoning::Auto.resolve(&problem), Reasoning::Full);
    assert_eq!(Reasoning::Light.resolve(&problem), Reasoning::Light);
    assert_eq!(Reasoning::Full.resolve(&windows(false)), Reasoning::Full);
    assert_eq!(Reasoning::Auto.resolve(&windows(false)), Reasoning::Light);
}
