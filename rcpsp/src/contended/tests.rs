use super::*;
use crate::problem::ActivityId;

/// Compute `a` (work 10) then `b` (work 2) on one stream; collective `x` (4) on another,
/// `x -> b`.
fn two_streams(rate: u64) -> ContendedProblem {
    let mut b = ProblemBuilder::new();
    let compute = b.resource("compute", 1);
    let comm = b.resource("comm", 1);
    let a = b.activity("a", 10);
    let second = b.activity("b", 2);
    let x = b.activity("x", 4);
    b.demand(a, compute, 1);
    b.demand(second, compute, 1);
    b.demand(x, comm, 1);
    b.precedence(a, second);
    b.precedence(x, second);
    let problem = b.build().expect("valid");
    ContendedProblem::new(
        problem,
        vec![Role::Slowed, Role::Slowed, Role::Slowing],
        rate,
    )
    .expect("valid")
}

#[test]
fn a_slowed_activity_loses_work_only_while_a_slowing_one_runs() {
    let p = two_streams(500);
    // x over [0, 4): a does 2 units of work there, 8 more at full speed.
    assert_eq!(p.ends(&[0, 12, 0]), Some(vec![12, 14, 4]));
    // x after a: nothing slowed.
    assert_eq!(p.ends(&[0, 14, 10]), Some(vec![10, 16, 14]));
    // x in the middle of a: [2, 6) at half speed.
    assert_eq!(p.ends(&[0, 12, 2]), Some(vec![12, 14, 6]));
    assert_eq!(check_contended(&p, &Schedule::new(vec![0, 12, 0])), Ok(14));
}

#[test]
fn ends_round_up_to_the_unit_as_the_simulator_does() {
    // Contention 1.5: 667 units per time unit. One unit of work beside x takes 2 units.
    let mut b = ProblemBuilder::new();
    let c = b.resource("compute", 1);
    let k = b.resource("comm", 1);
    let a = b.activity("a", 1);
    let x = b.activity("x", 5);
    b.demand(a, c, 1);
    b.demand(x, k, 1);
    let problem = b.build().expect("valid");
    let p = ContendedProblem::with_factor(problem, vec![Role::Slowed, Role::Slowing], 1.5)
        .expect("valid");
    assert_eq!(p.rate(), 667);
    assert_eq!(p.ends(&[0, 0]), Some(vec![2, 5]));
    // Starting in x's last unit: 667 there, 333 in the next unit at full speed.
    assert_eq!(p.ends(&[4, 0]), Some(vec![6, 5]));
    assert_eq!(p.slowest(1), Some(2));
    assert_eq!(p.slowest(3), Some(5));
}

#[test]
fn the_check_finds_what_contention_breaks_and_the_plain_check_misses() {
    let p = two_streams(500);
    // b at 10 meets a's contention-free end, not its slowed one (12).
    let s = Schedule::new(vec![0, 10, 0]);
    assert_eq!(check(p.problem(), &s), Ok(12));
    let err = check_contended(&p, &s).expect_err("a ends at 12 beside x");
    assert!(
        matches!(&err.0[..], [Violation::Precedence { from, to, earliest: 12, .. }, Violation::OverCapacity { .. }] if from == "a" && to == "b"),
        "{err}"
    );
    // Missing starts are named.
    let err = check_contended(&p, &Schedule::new(vec![0, 10])).expect_err("x has no start");
    assert!(matches!(&err.0[..], [Violation::MissingActivity { activity }] if activity == "x"));
}

#[test]
fn every_worst_case_schedule_is_a_contended_one() {
    let p = two_streams(300);
    let worst = p.worst_case().expect("valid");
    assert_eq!(worst.duration(ActivityId(0)), 34);
    assert_eq!(worst.duration(ActivityId(2)), 4);
    let s = Schedule::new(vec![0, 34, 0]);
    assert_eq!(check(&worst, &s), Ok(41));
    // Contended, a does 1.2 units of work beside x by 4 and 8.8 more: it ends at 13; b runs
    // at full speed.
    assert_eq!(check_contended(&p, &s), Ok(36));
    assert_eq!(p.ends(s.starts()).expect("fits")[0], 13);
}

#[test]
fn bad_roles_and_rates_are_named() {
    let p = two_streams(500).problem().clone();
    assert_eq!(
        ContendedProblem::new(p.clone(), vec![Role::Plain], 500).err(),
        Some(ContentionError::Roles {
            roles: 1,
            activities: 3
        })
    );
    assert_eq!(
        ContendedProblem::new(p.clone(), vec![Role::Plain; 3], 0).err(),
        Some(ContentionError::Rate { rate: 0 })
    );
    assert_eq!(
        ContendedProblem::new(p.clone(), vec![Role::Plain; 3], 1001).err(),
        Some(ContentionError::Rate { rate: 1001 })
    );
    let e =
        ContendedProblem::with_factor(p.clone(), vec![Role::Plain; 3], 0.5).expect_err("below 1");
    assert!(e.to_string().contains("at least 1, got 0.5"), "{e}");
    assert!(ContendedProblem::with_factor(p, vec![Role::Plain; 3], f64::NAN).is_err());
}

#[test]
fn an_end_past_the_time_range_is_a_violation_not_a_panic() {
    let p = two_streams(1);
    let s = Schedule::new(vec![Time::MAX - 5, 0, Time::MAX - 9]);
    let err = check_contended(&p, &s).expect_err("overflows");
    assert!(
        err.0
            .iter()
            .any(|v| matches!(v, Violation::FinishOverflow { .. })),
        "{err}"
    );
}

#[test]
fn the_enumeration_finds_the_contended_optimum() {
    // Optimal: x runs while b cannot anyway, i.e. beside a; or after a, delaying b.
    // x at 0 beside a: a ends 12, b 14. x after a: b ends 16. Contention-free optimum: 12.
    let p = two_streams(500);
    let (s, m) = exhaustive(&p, 16).expect("a schedule within 16");
    assert_eq!(m, 14);
    assert_eq!(check_contended(&p, &s), Ok(14));
    assert!(exhaustive(&p, 13).is_none());
    // Without contention (rate 1000) the optimum is the plain one.
    assert_eq!(exhaustive(&two_streams(1000), 16).map(|r| r.1), Some(12));
}

#[test]
fn starts_between_events_are_named_when_the_rule_holds() {
    let p = two_streams(500);
    // x held back to 1, when nothing ends: a schedule, but not one a stream launches.
    let s = Schedule::new(vec![0, 12, 1]);
    assert_eq!(check_contended(&p, &s), Ok(14));
    let p = p.launched_at_events();
    let err = check_contended(&p, &s).expect_err("x starts at 1");
    assert!(
        matches!(&err.0[..], [Violation::BetweenEvents { activity, start: 1 }] if activity == "x"),
        "{err}"
    );
    assert!(err.to_string().contains("when no activity ends"), "{err}");
    // At 0 and at a's end (12) every start is an event.
    assert_eq!(check_contended(&p, &Schedule::new(vec![0, 12, 0])), Ok(14));
    assert_eq!(check_contended(&p, &Schedule::new(vec![0, 14, 10])), Ok(16));
    assert_eq!(exhaustive(&p, 16).map(|r| r.1), Some(14));
}
