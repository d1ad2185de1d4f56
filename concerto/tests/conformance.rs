//! The conformance kit on every built-in solver (each must pass), on the exhaustive reference
//! itself, and on deliberately wrong solvers (each must fail, naming its counter-example).
//!
//! Run with `cargo test -p concerto --features testing --test conformance`; `--all-features`
//! adds the native MILP backends (`highs`, `cbc`).

#![cfg(feature = "testing")]

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use concerto::rcpsp::sgs::{self, ActivityList};
use concerto::rcpsp::ModalOutcome;
use concerto::testing::{assert_conforms, assert_modal_conforms, Conformance, Exhaustive};
use concerto::{
    Limits, ModalProblem, ModalSolution, ModalSolver, Outcome, Problem, ProblemBuilder, Schedule,
    SolveError, Solver, Status, StopReason,
};

/// The kit's settings for an exact solver in this test build.
///
/// The kit's timing defaults assume optimised solver crates, which a downstream crate gets by
/// setting `opt-level = 2` for its dependencies. Here the solver crates are members of the
/// workspace, so a debug test build runs them unoptimised: the bounds and the starting
/// heuristic on the 62-activity hard instance take 0.2 to 0.7 s before a solver first looks at
/// its clock or its cancel flag, and the MILP backends build their model before the solver
/// thread starts: microlp returned after 1.65 s on a 0.5 s limit, with no MILP work done,
/// while other tests and builds loaded the machine. A debug build gets two more seconds of
/// slack and of cancellation latency for that; a release build (`cargo test --release`)
/// runs with the kit's defaults.
fn exact() -> Conformance {
    debug_allowance(Conformance::exact())
}

/// [`exact`] for a heuristic.
fn heuristic() -> Conformance {
    debug_allowance(Conformance::heuristic())
}

fn debug_allowance(mut config: Conformance) -> Conformance {
    // Half the default limit on the hard instance: a dozen solvers take it one at a time.
    config.hard_time_limit = Duration::from_millis(500);
    if cfg!(debug_assertions) {
        config.time_slack += Duration::from_secs(2);
        config.cancel_latency += Duration::from_secs(2);
    }
    config
}

/// The MILP backends' suites run one at a time. CBC is serialised by a global mutex, so a
/// CBC case that waits for another test's CBC solve spends its time limit waiting (in a full
/// `--all-features` run a 7-activity modal case that proves in milliseconds alone timed out
/// at 10 s); and two MILP suites side by side starve each other on a 2-core machine.
static MILP: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn milp_turn() -> std::sync::MutexGuard<'static, ()> {
    MILP.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A registered solver by name (it must be compiled in).
fn backend(name: &str) -> Box<dyn Solver> {
    concerto::registry()
        .get(name)
        .unwrap_or_else(|e| panic!("{e}"))
}

/// A modal solver by name.
fn modal(name: &str) -> Box<dyn ModalSolver> {
    concerto::modal_solver(name).unwrap_or_else(|e| panic!("{e}"))
}

/// The work-limit probe runs for the solvers whose work limit bounds the whole solve
/// (pumpkin in conflicts, `sgs` in schedules, the reference in search nodes). microlp has no
/// work limit (it runs to its proof, deterministically); HiGHS's and CBC's node limits leave
/// the root node unbounded: with a limit of 5 nodes both ran the hard instance to a 60 s
/// guard.
#[cfg(feature = "pumpkin")]
#[test]
fn pumpkin_conforms() {
    let mut config = exact().cases(24);
    config.hard_work_limit = Some(2000);
    assert_conforms(backend("pumpkin").as_ref(), &config);
}

#[cfg(feature = "pumpkin")]
#[test]
fn pumpkin_modal_conforms() {
    let mut config = exact().cases(16);
    config.hard_work_limit = Some(2000);
    assert_modal_conforms(modal("pumpkin").as_ref(), &config);
}

#[cfg(feature = "microlp")]
#[test]
fn microlp_conforms() {
    let _turn = milp_turn();
    assert_conforms(backend("microlp").as_ref(), &exact().cases(16));
}

/// microlp's modal encoding is slow: it took 9.4 s to prove a modal problem of 7 activities
/// (durations up to 9, one region of two modes) in a debug build. Its cases keep to durations
/// 0 to 4 and one region, so that each proves well within the 10 s case limit.
#[cfg(feature = "microlp")]
#[test]
fn microlp_modal_conforms() {
    let _turn = milp_turn();
    let mut config = exact().cases(6);
    config.modal.problem.max_duration = 4;
    config.modal.regions = (1, 1);
    assert_modal_conforms(modal("microlp").as_ref(), &config);
}

#[cfg(feature = "highs")]
#[test]
fn highs_conforms() {
    let _turn = milp_turn();
    assert_conforms(backend("highs").as_ref(), &exact().cases(12));
}

#[cfg(feature = "highs")]
#[test]
fn highs_modal_conforms() {
    let _turn = milp_turn();
    assert_modal_conforms(modal("highs").as_ref(), &exact().cases(6));
}

/// CBC's two suites in one test, the hard-instance probes last. A cancelled CBC solve
/// returns at once but leaves CBC's own thread running, and CBC does not stop in its root
/// node at its time limit, so that thread holds CBC's global mutex for tens of seconds: any
/// CBC solve after it in the process spends its own time limit waiting (a 6-activity modal
/// case that proves in milliseconds reported `feasible (time-limit)` after 10 s, bound at the
/// LP relaxation). So the random cases of both suites run first, then the RCPSP probes on the
/// hard instance; the modal probes on the hard instance, which would only time that wait, are
/// not run for CBC (they run for every other modal solver).
#[cfg(feature = "cbc")]
#[test]
fn cbc_conforms() {
    let _turn = milp_turn();
    let mut modal_cases = exact().cases(6);
    modal_cases.hard_instance = false;
    assert_modal_conforms(modal("cbc").as_ref(), &modal_cases);
    assert_conforms(backend("cbc").as_ref(), &exact().cases(12));
}

/// The heuristic: not exact, so it is held to what it claims. Its search runs until the
/// lower bound is met or its budget is spent, so the random cases give it a work limit of 300
/// schedules (the probes on the hard instance give it none but their own).
#[test]
fn sgs_conforms_as_a_heuristic() {
    let mut config = heuristic().cases(32);
    config.case_work_limit = Some(300);
    config.hard_work_limit = Some(300);
    assert_conforms(backend("sgs").as_ref(), &config);
}

/// The reference itself, with the work-limit probe: it counts search nodes.
#[test]
fn the_exhaustive_reference_conforms() {
    let mut config = exact().cases(16);
    config.hard_work_limit = Some(2000);
    assert_conforms(&Exhaustive, &config);
}

/// Runs the kit on `solver` without the hard-instance probes, and returns its panic message.
fn failure(solver: &dyn Solver, cases: u32) -> String {
    let mut config = exact().cases(cases).seed(11);
    config.hard_instance = false;
    let caught = catch_unwind(AssertUnwindSafe(|| assert_conforms(solver, &config)));
    panic_message(caught.expect_err("the kit must reject this solver"))
}

fn panic_message(payload: Box<dyn std::any::Any + Send>) -> String {
    match payload.downcast::<String>() {
        Ok(s) => *s,
        Err(payload) => payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .unwrap_or_default(),
    }
}

/// What every counter-example shows: the solver, the problem as text and JSON, the limits,
/// what was expected and what came.
fn names_the_counter_example(message: &str, solver: &str) {
    for part in [
        &format!("solver `{solver}` does not conform") as &str,
        "counter-example (shrunk):",
        "activities:",
        "precedences:",
        "limits: time limit",
        "expected: ",
        "got: ",
        "\"activities\"",
    ] {
        assert!(message.contains(part), "no `{part}` in:\n{message}");
    }
}

/// Moves the activity that finishes last one unit earlier and reports one unit less.
struct OneUnitShort;

impl Solver for OneUnitShort {
    fn name(&self) -> &str {
        "one-unit-short"
    }

    fn solve(&self, p: &Problem, limits: &Limits) -> Result<Outcome, SolveError> {
        let mut o = Exhaustive.solve(p, limits)?;
        if let Some(s) = &o.schedule {
            let mut starts = s.starts().to_vec();
            let last = p
                .ids()
                .max_by_key(|&a| starts[a.index()] + p.duration(a))
                .expect("a problem has activities");
            starts[last.index()] -= 1;
            let m = o.makespan.expect("with a schedule") - 1;
            o.schedule = Some(Schedule::new(starts));
            o.makespan = Some(m);
            o.lower_bound = m;
        }
        Ok(o)
    }
}

#[test]
fn a_schedule_one_unit_too_short_fails() {
    let message = failure(&OneUnitShort, 16);
    names_the_counter_example(&message, "one-unit-short");
    assert!(
        message.contains("fails the independent check")
            || message.contains("is not the schedule's"),
        "{message}"
    );
}

/// Solves the problem without its first precedence.
struct DropsPrecedence;

impl Solver for DropsPrecedence {
    fn name(&self) -> &str {
        "drops-a-precedence"
    }

    fn solve(&self, p: &Problem, limits: &Limits) -> Result<Outcome, SolveError> {
        let mut b = ProblemBuilder::new();
        for r in p.resources() {
            b.resource(r.name.clone(), r.capacity);
        }
        for a in p.activities() {
            let id = b.activity(a.name.clone(), a.duration);
            for (r, &q) in a.demands.iter().enumerate() {
                if q > 0 {
                    b.demand(id, concerto::ResourceId(r), q);
                }
            }
        }
        for pr in p.precedences().iter().skip(1) {
            b.precedence_with_lag(pr.from, pr.to, pr.lag);
        }
        let relaxed = b.build().expect("a relaxation of a valid problem");
        let limits = Limits {
            initial: None,
            ..limits.clone()
        };
        Exhaustive.solve(&relaxed, &limits)
    }
}

#[test]
fn a_dropped_precedence_fails() {
    let message = failure(&DropsPrecedence, 32);
    names_the_counter_example(&message, "drops-a-precedence");
    assert!(
        message.contains("fails the independent check") && message.contains("precedence `"),
        "{message}"
    );
}

/// Claims `Optimal` for the serial SGS of the topological order.
struct FalseOptimal;

impl Solver for FalseOptimal {
    fn name(&self) -> &str {
        "false-optimal"
    }

    fn solve(&self, p: &Problem, _: &Limits) -> Result<Outcome, SolveError> {
        let list = ActivityList::new(p, p.topological_order().to_vec()).expect("topological");
        let s = sgs::serial(p, &list);
        let m = s.makespan(p);
        Ok(Outcome {
            status: Status::Optimal,
            schedule: Some(s),
            makespan: Some(m),
            lower_bound: m,
            solver: self.name().to_string(),
            elapsed: Duration::ZERO,
            work: 0,
        })
    }
}

#[test]
fn a_false_claim_of_optimality_fails() {
    let message = failure(&FalseOptimal, 32);
    names_the_counter_example(&message, "false-optimal");
    assert!(message.contains("above the optimum"), "{message}");
}

/// Every other call answers with a worse schedule and no proof.
#[derive(Default)]
struct Forgetful(AtomicU64);

impl Solver for Forgetful {
    fn name(&self) -> &str {
        "forgetful"
    }

    fn solve(&self, p: &Problem, limits: &Limits) -> Result<Outcome, SolveError> {
        if self.0.fetch_add(1, Ordering::Relaxed) % 2 == 0 {
            return Exhaustive.solve(p, limits);
        }
        let list = ActivityList::new(p, p.topological_order().to_vec()).expect("topological");
        let s = sgs::serial(p, &list);
        Ok(Outcome::with_schedule(
            p,
            s,
            0,
            StopReason::Exhausted,
            self.name(),
            Duration::ZERO,
            0,
        ))
    }
}

#[test]
fn two_answers_for_one_seed_fail() {
    let message = failure(&Forgetful::default(), 16);
    names_the_counter_example(&message, "forgetful");
    assert!(
        message.contains("gave another answer") || message.contains("did not prove"),
        "{message}"
    );
}

/// Ignores the cancel flag.
struct Stubborn;

impl Solver for Stubborn {
    fn name(&self) -> &str {
        "stubborn"
    }

    fn solve(&self, p: &Problem, limits: &Limits) -> Result<Outcome, SolveError> {
        let limits = Limits {
            cancel: None,
            ..limits.clone()
        };
        Exhaustive.solve(p, &limits)
    }
}

#[test]
fn an_ignored_cancel_flag_fails() {
    let mut config = exact().cases(2);
    config.cancel_delay = Duration::from_millis(50);
    config.cancel_latency = Duration::from_millis(100);
    let caught = catch_unwind(AssertUnwindSafe(|| assert_conforms(&Stubborn, &config)));
    let message =
        panic_message(caught.expect_err("the kit must reject a solver that ignores cancellation"));
    assert!(message.contains("on the hard instance"), "{message}");
    assert!(message.contains("cancelled before it started"), "{message}");
    assert!(message.contains("cancel flag raised"), "{message}");
}

/// Returns mode 0's brute-force answer for every modal problem, claiming it optimal.
struct FirstModeOnly;

impl ModalSolver for FirstModeOnly {
    fn name(&self) -> &str {
        "first-mode-only"
    }

    fn solve_modal(
        &self,
        problem: &ModalProblem,
        limits: &Limits,
        _: Option<&ModalSolution>,
    ) -> Result<ModalOutcome, SolveError> {
        let modes = vec![0; problem.regions().len()];
        let reduced = problem.reduce(&modes).expect("mode 0 exists");
        let o = Exhaustive.solve(&reduced.problem, limits)?;
        let schedule = o.schedule.expect("exhaustive finds a schedule");
        Ok(ModalOutcome {
            status: o.status,
            solution: Some(ModalSolution {
                starts: reduced.expand(&schedule, problem.problem().len()),
                modes,
            }),
            makespan: o.makespan,
            lower_bound: o.lower_bound,
            solver: self.name().to_string(),
            elapsed: o.elapsed,
            work: o.work,
        })
    }
}

#[test]
fn a_modal_solver_that_ignores_modes_fails() {
    let mut config = exact().cases(32).seed(5);
    config.hard_instance = false;
    let caught = catch_unwind(AssertUnwindSafe(|| {
        assert_modal_conforms(&FirstModeOnly, &config)
    }));
    let message = panic_message(caught.expect_err("the kit must reject this modal solver"));
    for part in [
        "modal solver `first-mode-only` does not conform",
        "region x0: mode 0 {",
        "mandatory activities:",
        "above the optimum",
        "got: optimal",
    ] {
        assert!(message.contains(part), "no `{part}` in:\n{message}");
    }
}
