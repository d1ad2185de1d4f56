//! Test support shared by the suites in `tests/`: random valid problems for proptest, a
//! brute-force optimum for problems small enough to enumerate, and a machine under load.

use concerto_rcpsp::{sgs, ActivityId, ActivityList, Problem, Schedule, Time};
use proptest::prelude::*;
use rand::Rng;

/// The ingredients of a random valid problem, kept so that proptest can shrink them (the
/// conformance kit's).
pub use concerto::testing::ProblemSpec as Spec;

/// Random valid problems: 1 to `max_activities` activities, 1-3 resources of capacity 1-5,
/// demands within capacity, durations 0-10, forward arcs `i -> j` (`i < j`, so acyclic) with
/// probability 1/4, a third of them with a lag of 1-3.
pub fn problems(max_activities: usize) -> impl Strategy<Value = Problem> {
    (1..=max_activities, 1..=3usize)
        .prop_flat_map(|(n, r)| {
            let arc = (
                prop::bool::weighted(0.25),
                prop_oneof![2 => Just(0 as Time), 1 => 1..=3 as Time],
            );
            (
                prop::collection::vec(1..=5u32, r),
                prop::collection::vec(0..=10 as Time, n),
                prop::collection::vec(prop::collection::vec(0..=5u32, r), n),
                prop::collection::vec(arc, n * (n - 1) / 2),
            )
        })
        .prop_map(|(capacities, durations, demands, arcs)| {
            Spec {
                capacities,
                durations,
                demands,
                arcs,
            }
            .build()
        })
}

/// A uniformly random precedence-feasible order: repeatedly take a random eligible activity.
pub fn random_topological_list(p: &Problem, rng: &mut impl Rng) -> Vec<ActivityId> {
    let mut waiting: Vec<usize> = p.ids().map(|a| p.predecessors(a).len()).collect();
    let mut eligible: Vec<ActivityId> = p.ids().filter(|a| waiting[a.index()] == 0).collect();
    let mut list = Vec::with_capacity(p.len());
    while !eligible.is_empty() {
        let a = eligible.swap_remove(rng.random_range(0..eligible.len()));
        list.push(a);
        for arc in p.successors(a) {
            waiting[arc.activity.index()] -= 1;
            if waiting[arc.activity.index()] == 0 {
                eligible.push(arc.activity);
            }
        }
    }
    list
}

/// The optimal makespan, by decoding every precedence-feasible list with the serial SGS (the
/// serial SGS generates every active schedule, and some active schedule is optimal), with a
/// schedule reaching it.
pub fn brute_force_optimum(p: &Problem) -> (Time, Schedule) {
    fn extend(
        p: &Problem,
        list: &mut Vec<ActivityId>,
        placed: &mut [bool],
        best: &mut Option<(Time, Schedule)>,
    ) {
        if list.len() == p.len() {
            let l = ActivityList::new(p, list.clone()).expect("built precedence-feasible");
            let s = sgs::serial(p, &l);
            let m = s.makespan(p);
            if best.as_ref().is_none_or(|(b, _)| m < *b) {
                *best = Some((m, s));
            }
            return;
        }
        for a in p.ids() {
            let ready = !placed[a.index()]
                && p.predecessors(a)
                    .iter()
                    .all(|arc| placed[arc.activity.index()]);
            if ready {
                placed[a.index()] = true;
                list.push(a);
                extend(p, list, placed, best);
                list.pop();
                placed[a.index()] = false;
            }
        }
    }
    let mut best = None;
    extend(p, &mut Vec::new(), &mut vec![false; p.len()], &mut best);
    best.expect("a problem has at least one activity list")
}

/// Runs `f` while three other threads spin (each for at most two minutes), then stops and
/// joins them: a machine under load, for tests that the clock decides nothing.
pub fn under_load<T>(f: impl FnOnce() -> T) -> T {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    use std::time::{Duration, Instant};
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
