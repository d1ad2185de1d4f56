//! The contended model against the enumeration of every schedule.

use concerto_rcpsp::contended::exhaustive;
use concerto_rcpsp::{ContendedProblem, Limits, ProblemBuilder, Role, Status};
use proptest::prelude::*;

use crate::milp::{Backend, Milp};

/// Compute `a` (work 10) then `b` (work 2); collective `x` (4) on its own stream, `x -> b`.
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

#[cfg(feature = "microlp")]
fn microlp() -> Milp {
    Milp::new(Backend::Microlp)
}

#[cfg(feature = "microlp")]
#[test]
fn the_model_prices_the_slowdown_it_cannot_avoid() {
    // Contention-free, x hides behind a: 12. Slowed at half speed, x costs a 2 units beside
    // it, or b waits for x after a: 14 either way.
    let o = microlp()
        .solve_contended(&two_streams(500), &Limits::default())
        .expect("solves");
    assert_eq!(
        (o.status, o.makespan, o.lower_bound),
        (Status::Optimal, Some(14), 14)
    );
    let o = microlp()
        .solve_contended(&two_streams(1000), &Limits::default())
        .expect("solves");
    assert_eq!((o.status, o.makespan), (Status::Optimal, Some(12)));
}

#[cfg(feature = "microlp")]
#[test]
fn a_bad_initial_schedule_and_an_oversized_model_are_named() {
    let p = two_streams(500);
    let limits = Limits {
        initial: Some(concerto_rcpsp::Schedule::new(vec![0, 10, 0])),
        ..Limits::default()
    };
    let e = microlp()
        .solve_contended(&p, &limits)
        .expect_err("a ends at 12");
    assert!(e.to_string().contains("precedence `a` -> `b`"), "{e}");
    let small = Milp::with_config(
        Backend::Microlp,
        crate::milp::MilpConfig {
            max_time_indexed_binaries: 3,
            ..Default::default()
        },
    );
    let e = small
        .solve_contended(&p, &Limits::default())
        .expect_err("too large");
    assert!(e.to_string().contains("coarsen the time unit"), "{e}");
    // Few binaries over a long horizon: refused before anything is allocated per unit.
    let mut b = ProblemBuilder::new();
    let c = b.resource("compute", 1);
    let a = b.activity("a", 1 << 40);
    let x = b.activity("x", 1 << 40);
    b.demand(a, c, 1);
    b.demand(x, c, 1);
    let long = ContendedProblem::new(
        b.build().expect("valid"),
        vec![Role::Slowed, Role::Slowing],
        500,
    )
    .expect("valid");
    let e = microlp()
        .solve_contended(&long, &Limits::default())
        .expect_err("too long");
    assert!(e.to_string().contains("time units"), "{e}");
}

/// A random contended problem: 2 to 4 activities of work 0 to 3, on 1 or 2 resources of
/// capacity 1 or 2, precedences forward in index order, roles and rate drawn.
fn problems() -> impl Strategy<Value = ContendedProblem> {
    (2usize..=4, 1usize..=2).prop_flat_map(|(n, r)| {
        (
            proptest::collection::vec(0i64..=3, n),
            proptest::collection::vec(1u32..=2, r),
            proptest::collection::vec(proptest::collection::vec(0u32..=2, r), n),
            proptest::collection::vec(any::<bool>(), n * (n - 1) / 2),
            proptest::collection::vec(0usize..3, n),
            prop_oneof![Just(334u64), Just(500), Just(667), Just(1000)],
        )
            .prop_map(move |(durations, caps, demands, arcs, roles, rate)| {
                let mut b = ProblemBuilder::new();
                let res: Vec<_> = caps
                    .iter()
                    .enumerate()
                    .map(|(k, &c)| b.resource(format!("r{k}"), c))
                    .collect();
                let acts: Vec<_> = durations
                    .iter()
                    .enumerate()
                    .map(|(i, &d)| b.activity(format!("a{i}"), d))
                    .collect();
                for (i, row) in demands.iter().enumerate() {
                    for (k, &q) in row.iter().enumerate() {
                        if q > 0 {
                            b.demand(acts[i], res[k], q.min(caps[k]));
                        }
                    }
                }
                let mut arc = arcs.iter();
                for i in 0..n {
                    for j in i + 1..n {
                        if *arc.next().expect("one flag per pair") {
                            b.precedence(acts[i], acts[j]);
                        }
                    }
                }
                let roles = roles
                    .iter()
                    .map(|&k| [Role::Plain, Role::Slowed, Role::Slowing][k])
                    .collect();
                ContendedProblem::new(b.build().expect("valid"), roles, rate).expect("valid")
            })
    })
}

/// A random window of a training step: 3 to 5 ops of 1 to 3 units on a compute stream
/// (slowed) and one or two collective streams (slowing), capacity 1 each, random forward
/// dependencies, contention 1.5, 2 or 3.
fn windows() -> impl Strategy<Value = ContendedProblem> {
    (3usize..=5).prop_flat_map(|n| {
        (
            proptest::collection::vec(1i64..=3, n),
            proptest::collection::vec(0usize..3, n),
            proptest::collection::vec(0u8..10, n * (n - 1) / 2),
            prop_oneof![Just(334u64), Just(500), Just(667)],
        )
            .prop_map(move |(durations, streams, arcs, rate)| {
                let mut b = ProblemBuilder::new();
                let res = [
                    b.resource("compute", 1),
                    b.resource("comm.0", 1),
                    b.resource("comm.1", 1),
                ];
                let acts: Vec<_> = durations
                    .iter()
                    .enumerate()
                    .map(|(i, &d)| b.activity(format!("op{i}"), d))
                    .collect();
                for (i, &k) in streams.iter().enumerate() {
                    b.demand(acts[i], res[k], 1);
                }
                let mut arc = arcs.iter();
                for i in 0..n {
                    for j in i + 1..n {
                        if *arc.next().expect("one draw per pair") < 3 {
                            b.precedence(acts[i], acts[j]);
                        }
                    }
                }
                let roles = streams
                    .iter()
                    .map(|&k| if k == 0 { Role::Slowed } else { Role::Slowing })
                    .collect();
                ContendedProblem::new(b.build().expect("valid"), roles, rate).expect("valid")
            })
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// The model's optimum is the contended optimum, on every backend of the build: the
    /// enumeration of every schedule of makespan at most the model's (and more) finds none
    /// shorter, and the model's schedule passes the contended check with the makespan it
    /// reports.
    #[test]
    fn the_model_matches_the_enumeration(
        p in prop_oneof![problems(), windows()],
        events in any::<bool>(),
    ) {
        let p = if events { p.launched_at_events() } else { p };
        let mut optimum = None;
        for backend in crate::milp::tests::backends() {
            let o = Milp::new(backend).solve_contended(&p, &Limits::default()).expect("solves");
            prop_assert_eq!(o.status, Status::Optimal);
            let m = o.makespan.expect("a schedule");
            prop_assert_eq!(o.lower_bound, m);
            let best = *optimum.get_or_insert_with(|| {
                exhaustive(&p, m).expect("the model's schedule is within its makespan").1
            });
            prop_assert_eq!(m, best, "{}", backend.name());
        }
    }
}
