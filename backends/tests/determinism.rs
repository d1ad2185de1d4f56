//! The work-budget contract of `Limits`: with a work limit (and a time limit that is only a
//! safety net), the same problem, limits and seed give the same outcome twice, and again while
//! other threads load the machine. For pumpkin on one thread and as a two-worker portfolio,
//! for the odd-even driver around pumpkin, and for the joint windows around modal pumpkin.

#![cfg(feature = "pumpkin")]

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use concerto_backends::pumpkin::modal::PumpkinModal;
use concerto_backends::pumpkin::{Pumpkin, PumpkinConfig};
use concerto_rcpsp::generate::{project, Project};
use concerto_rcpsp::joint::{improve, JointConfig};
use concerto_rcpsp::{
    check, check_modal, ActivityId, Heuristic, Limits, ModalProblem, ModalSolution, OddEven,
    OddEvenConfig, Outcome, Problem, ProblemBuilder, Region, Solver, Status, StopReason,
};

/// Runs `f` while three other threads spin (each for at most two minutes), then joins them.
fn under_load<T>(f: impl FnOnce() -> T) -> T {
    let stop = Arc::new(AtomicBool::new(false));
    let burners: Vec<_> = (0..3)
        .map(|_| {
            let stop = Arc::clone(&stop);
            std::thread::spawn(move || {
                let began = Instant::now();
                let mut x = 1u64;
                while !stop.load(Ordering::Relaxed) && began.elapsed() < Duration::from_secs(120) {
                    x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
                    std::hint::black_box(x);
                }
            })
        })
        .collect();
    let out = f();
    stop.store(true, Ordering::Relaxed);
    for burner in burners {
        burner.join().expect("a burner thread ends");
    }
    out
}

/// Everything but the wall time agrees.
fn assert_same(a: &Outcome, b: &Outcome, what: &str) {
    assert_eq!(a.schedule, b.schedule, "{what}");
    assert_eq!(a.makespan, b.makespan, "{what}");
    assert_eq!(a.status, b.status, "{what}");
    assert_eq!(a.lower_bound, b.lower_bound, "{what}");
    assert_eq!(a.work, b.work, "{what}");
}

/// A PSPLIB-like project of 64 activities that pumpkin does not close in the budgets below.
fn problem() -> Problem {
    project(&Project::with_size(64, 1))
}

/// pumpkin with a short heuristic start (the test runs unoptimised).
fn pumpkin() -> Pumpkin {
    Pumpkin::new(PumpkinConfig {
        heuristic_schedules: 1_000,
        ..PumpkinConfig::default()
    })
}

/// A work budget, seed 5, `threads` threads, and a generous time limit as a safety net.
fn limits(work: u64, threads: usize) -> Limits {
    Limits::with_time_limit(Duration::from_secs(120))
        .work_limit(work)
        .threads(threads)
        .seed(5)
}

#[test]
fn pumpkin_with_a_work_limit_is_deterministic_on_one_and_two_threads() {
    let p = problem();
    for threads in [1, 2] {
        let limits = limits(400, threads);
        let solve = || pumpkin().solve(&p, &limits).expect("solves");
        let a = solve();
        let b = solve();
        let c = under_load(solve);
        let what = format!("{threads} threads");
        assert_eq!(
            a.status,
            Status::Feasible(StopReason::WorkLimit),
            "{what}: the budget binds"
        );
        // Each worker spends the budget (a stop lands right after a decision).
        assert!(a.work >= 400 * threads as u64, "{what}: {}", a.work);
        assert_eq!(
            check(&p, a.schedule.as_ref().expect("a schedule")),
            Ok(a.makespan.unwrap())
        );
        assert_same(&a, &b, &what);
        assert_same(&a, &c, &format!("{what}, under load"));
    }
}

#[test]
fn the_odd_even_driver_over_pumpkin_with_a_work_budget_is_deterministic() {
    let p = problem();
    let driver = OddEven::new(
        Box::new(pumpkin()),
        OddEvenConfig {
            block: 8,
            window_work_limit: Some(100),
            ..OddEvenConfig::default()
        },
    );
    let limits = limits(1_000, 2);
    let a = driver.run(&p, &limits).expect("runs");
    let b = driver.run(&p, &limits).expect("runs");
    let c = under_load(|| driver.run(&p, &limits).expect("runs"));
    assert_eq!(a.work, a.outcome.work);
    assert_eq!(a.work, a.rounds.iter().map(|r| r.work).sum::<u64>());
    if a.outcome.status == Status::Feasible(StopReason::WorkLimit) {
        assert!(a.work >= 1_000, "{}", a.work);
    } else {
        assert!(a.work < 1_000, "{:?} after {}", a.outcome.status, a.work);
    }
    for (other, what) in [(&b, "again"), (&c, "under load")] {
        assert_same(&a.outcome, &other.outcome, what);
        let rounds = |r: &concerto_rcpsp::OddEvenReport| -> Vec<_> {
            r.rounds
                .iter()
                .map(|r| (r.makespan, r.windows, r.improved, r.work))
                .collect()
        };
        assert_eq!(rounds(&a), rounds(other), "{what}");
    }
}

/// The project of [`problem`] with four of its activities made regions of two modes: the
/// activity, or two halves (each a little over half as long) one after the other, with the
/// same demands and neighbours.
fn modal_problem() -> ModalProblem {
    let base = problem();
    let mut b = ProblemBuilder::new();
    for r in base.resources() {
        b.resource(r.name.clone(), r.capacity);
    }
    let demands = |b: &mut ProblemBuilder, from: ActivityId, to: ActivityId| {
        for (r, &q) in base.activity(from).demands.iter().enumerate() {
            if q > 0 {
                b.demand(to, concerto_rcpsp::ResourceId(r), q);
            }
        }
    };
    for a in base.ids() {
        let id = b.activity(base.activity(a).name.clone(), base.duration(a));
        demands(&mut b, a, id);
    }
    let mut regions = Vec::new();
    for k in [6, 20, 34, 48] {
        let a = ActivityId(k);
        let half = base.duration(a) / 2 + 1;
        let first = b.activity(format!("a{k}.0"), half);
        let second = b.activity(format!("a{k}.1"), half);
        demands(&mut b, a, first);
        demands(&mut b, a, second);
        b.precedence(first, second);
        for arc in base.predecessors(a) {
            b.precedence_with_lag(arc.activity, first, arc.lag);
        }
        for arc in base.successors(a) {
            b.precedence_with_lag(second, arc.activity, arc.lag);
        }
        regions.push(Region {
            name: format!("a{k}"),
            modes: vec![vec![a], vec![first, second]],
        });
    }
    for p in base.precedences() {
        b.precedence_with_lag(p.from, p.to, p.lag);
    }
    ModalProblem::new(b.build().expect("valid"), regions).expect("valid regions")
}

#[test]
fn the_joint_windows_over_modal_pumpkin_with_a_work_budget_are_deterministic() {
    let m = modal_problem();
    // Start: every region unsplit, scheduled by a short heuristic run.
    let modes = vec![0; m.regions().len()];
    let reduced = m.reduce(&modes).expect("mode 0");
    let schedule = Heuristic::default()
        .solve(&reduced.problem, &Limits::default().work_limit(500))
        .expect("solves")
        .schedule
        .expect("a schedule");
    let start = ModalSolution {
        starts: reduced.expand(&schedule, m.problem().len()),
        modes,
    };
    let before = check_modal(&m, &start).expect("a valid start");
    let config = JointConfig {
        window_work_limit: Some(100),
        ..JointConfig::default()
    };
    let limits = limits(150, 1);
    let run = || improve(&m, &start, &PumpkinModal::default(), &config, &limits).expect("runs");
    let a = run();
    let b = run();
    let c = under_load(run);
    assert!(a.makespan <= before);
    assert_eq!(check_modal(&m, &a.solution), Ok(a.makespan));
    assert!(a.budget_spent && a.work >= 150, "{}", a.work);
    for (other, what) in [(&b, "again"), (&c, "under load")] {
        assert_eq!(a.solution, other.solution, "{what}");
        assert_eq!(
            (
                a.makespan,
                a.windows,
                a.improved,
                a.mode_changes,
                a.work,
                a.budget_spent
            ),
            (
                other.makespan,
                other.windows,
                other.improved,
                other.mode_changes,
                other.work,
                other.budget_spent
            ),
            "{what}"
        );
    }
}
