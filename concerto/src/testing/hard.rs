//! The hard instance on which the kit tests time limits, cancellation and work limits.

use concerto_rcpsp::io::psplib;
use concerto_rcpsp::{ActivityId, ModalProblem, Problem, ProblemBuilder, Region, Time};

/// The best lower bound known on the hard instance's optimum (PSPLIB reference, 2024).
pub const HARD_LOWER_BOUND: Time = 105;
/// The best makespan known on the hard instance.
pub const HARD_UPPER_BOUND: Time = 112;

/// PSPLIB j6013_1 (Kolisch & Sprecher 1996): 60 jobs (62 activities with the dummy source and
/// sink) on 4 renewable resources, whose optimum is still open: the best known bounds are
/// [`HARD_LOWER_BOUND`] and [`HARD_UPPER_BOUND`]. No backend proves it in seconds, so a short
/// time limit or a raised cancel flag always interrupts a search on it.
pub fn hard_instance() -> Problem {
    psplib::parse(include_str!("j6013_1.sm"), "j6013_1.sm")
        .expect("the bundled PSPLIB instance parses")
}

/// [`hard_instance`] with one region of two modes: mode 0 is PSPLIB job 32 (activity 31,
/// duration 8) as it is, mode 1 replaces it by a copy named `<job>.split` with the same
/// precedences and demands and a duration one unit shorter. Every solution is a solution of the hard instance with at most that job
/// shortened, so the known bounds hold up to one unit: optimum in
/// `[HARD_LOWER_BOUND - 1, HARD_UPPER_BOUND]`.
pub fn hard_modal_instance() -> ModalProblem {
    let p = hard_instance();
    let job = ActivityId(31);
    let mut b = ProblemBuilder::new();
    let resources: Vec<_> = p
        .resources()
        .iter()
        .map(|r| b.resource(r.name.clone(), r.capacity))
        .collect();
    let copy_demands = |b: &mut ProblemBuilder, from: ActivityId, to: ActivityId| {
        for &(r, q) in p.loads(from) {
            b.demand(to, resources[r.index()], q);
        }
    };
    let ids: Vec<ActivityId> = p
        .activities()
        .iter()
        .map(|a| b.activity(a.name.clone(), a.duration))
        .collect();
    for a in p.ids() {
        copy_demands(&mut b, a, ids[a.index()]);
    }
    let split = b.activity(
        format!("{}.split", p.activity(job).name),
        (p.duration(job) - 1).max(0),
    );
    copy_demands(&mut b, job, split);
    for pr in p.precedences() {
        b.precedence_with_lag(ids[pr.from.index()], ids[pr.to.index()], pr.lag);
        if pr.from == job {
            b.precedence_with_lag(split, ids[pr.to.index()], pr.lag);
        }
        if pr.to == job {
            b.precedence_with_lag(ids[pr.from.index()], split, pr.lag);
        }
    }
    let problem = b.build().expect("a copy of a valid problem");
    ModalProblem::new(
        problem,
        vec![Region {
            name: p.activity(job).name.clone(),
            modes: vec![vec![ids[job.index()]], vec![split]],
        }],
    )
    .expect("one region of two single-activity modes")
}
