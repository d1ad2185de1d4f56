//! [`assert_conforms`] and [`assert_modal_conforms`]: a solver against an exhaustive
//! reference and the contract of [`Solver`] and [`ModalSolver`].

use std::time::{Duration, Instant};

use concerto_rcpsp::io::json::problem_to_json;
use concerto_rcpsp::sgs::{self, ActivityList};
use concerto_rcpsp::{
    brute_force, check, check_modal, Limits, ModalProblem, ModalSolution, ModalSolver, Problem,
    Schedule, Solver, Status, Time,
};
use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestCaseResult, TestError, TestRng, TestRunner};

use super::exhaustive::Exhaustive;
use super::hard::{hard_instance, hard_modal_instance, HARD_LOWER_BOUND, HARD_UPPER_BOUND};
use super::probes::{probe_case, probe_hard};
use super::strategies::{durations_of, GraphShape, ModalShape, ProblemShape};
use super::text::{
    describe_limits, describe_modal, describe_modal_outcome, describe_modal_solution,
    describe_outcome, describe_problem,
};

/// What a solver claims about its answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Claim {
    /// It proves optimality: on the kit's small problems, within the case limits, every
    /// answer must be [`Status::Optimal`] with the reference's optimum.
    Exact,
    /// It finds schedules and proves what it can (the `sgs` heuristic): it must never claim
    /// `Optimal` for a schedule above the optimum, its bound must hold, its schedules must
    /// pass the check; it need not prove anything.
    Heuristic,
}

/// What [`assert_conforms`] and [`assert_modal_conforms`] test, and how hard.
///
/// Start from [`Conformance::exact`] or [`Conformance::heuristic`] and change fields.
///
/// **Time limits.** A solve under a time limit `t` must return within
/// `1.1 t + time_slack`. The constant covers what a percentage cannot on a short limit:
/// starting a worker thread, a backend that polls its clock every few tens of milliseconds
/// (the MILP backends wait for their solver thread in 20 ms steps), and a loaded machine's
/// scheduler. The default is 100 ms: on the default 1 s limit of the hard instance a solve
/// may take 1.2 s.
///
/// The hard-instance probes measure time, so the kit runs them one at a time within a process
/// (a lock): several `assert_conforms` tests of one test binary may run in parallel, and only
/// their random cases overlap. Work done before a solver looks at its clock counts: in a debug
/// build of a workspace that contains the solver (whose own crates then run unoptimised),
/// computing the lower bound of the 62-activity hard instance alone took 220 ms, which is why
/// the default limit is 1 s and not less.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Conformance {
    /// What the solver claims.
    pub claim: Claim,
    /// Random cases (each a problem, solved four times: plain, again with the same limits,
    /// with the optimum as upper bound, and from a starting schedule). 0 runs only the probes
    /// on the hard instance.
    pub cases: u32,
    /// Seed of the case generator and of every solve ([`Limits::seed`]).
    pub seed: u64,
    /// [`Limits::threads`] of every solve.
    pub threads: usize,
    /// The random RCPSPs.
    pub problems: ProblemShape,
    /// The random training steps, lowered to RCPSPs, that make a third of the cases of
    /// [`assert_conforms`] (`None`: none).
    pub graphs: Option<GraphShape>,
    /// The random modal problems of [`assert_modal_conforms`].
    pub modal: ModalShape,
    /// The time limit of each random case: generous, the cases take milliseconds; an exact
    /// solver must prove the optimum within it.
    pub case_time_limit: Duration,
    /// [`Limits::work_limit`] of each random case (`None`: none). Meant for heuristics, whose
    /// search otherwise runs to the time limit on a case they cannot prove; leave it `None`
    /// for an exact solver, which must prove every case.
    pub case_work_limit: Option<u64>,
    /// Whether to run the probes on the hard instance ([`super::hard_instance`]): a time
    /// limit, cancellation before and during a solve, and the work limit.
    pub hard_instance: bool,
    /// The time limit of the time-limit probe on the hard instance.
    pub hard_time_limit: Duration,
    /// With `Some(w)`, the hard instance is solved twice with [`Limits::work_limit`] `w` (and
    /// a guard time limit of 60 s): the solve must stop at the work limit (or with a proof),
    /// not at the clock, and both answers must be identical, down to the work reported.
    /// `None` by default: set it for a solver that honours work limits, in its own unit.
    pub hard_work_limit: Option<u64>,
    /// The constant added to 110 % of a time limit (see above).
    pub time_slack: Duration,
    /// How long after the start of a solve the cancel flag is raised, in the probe that
    /// cancels a running solve.
    pub cancel_delay: Duration,
    /// How soon a solve must return once its cancel flag is raised (before or during it).
    pub cancel_latency: Duration,
}

impl Conformance {
    /// The settings for an exact solver: 32 cases, seed 0, one thread, cases limited to 10 s,
    /// the hard instance limited to 1 s, 100 ms of slack, cancellation after 200 ms to be
    /// obeyed within 500 ms.
    pub fn exact() -> Self {
        Self {
            claim: Claim::Exact,
            cases: 32,
            seed: 0,
            threads: 1,
            problems: ProblemShape::default(),
            graphs: Some(GraphShape::default()),
            modal: ModalShape::default(),
            case_time_limit: Duration::from_secs(10),
            case_work_limit: None,
            hard_instance: true,
            hard_time_limit: Duration::from_secs(1),
            hard_work_limit: None,
            time_slack: Duration::from_millis(100),
            cancel_delay: Duration::from_millis(200),
            cancel_latency: Duration::from_millis(500),
        }
    }

    /// [`Conformance::exact`] for a heuristic ([`Claim::Heuristic`]).
    pub fn heuristic() -> Self {
        Self {
            claim: Claim::Heuristic,
            ..Self::exact()
        }
    }

    /// Sets the number of random cases.
    pub fn cases(mut self, cases: u32) -> Self {
        self.cases = cases;
        self
    }

    /// Sets the seed.
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// The most a solve under `limit` may take: `1.1 limit + time_slack`.
    pub fn allowed(&self, limit: Duration) -> Duration {
        limit.mul_f64(1.1) + self.time_slack
    }

    fn validate(&self) {
        assert!(self.threads >= 1, "Conformance::threads must be at least 1");
        for (what, d) in [
            ("case_time_limit", self.case_time_limit),
            ("hard_time_limit", self.hard_time_limit),
        ] {
            assert!(!d.is_zero(), "Conformance::{what} must be positive");
        }
    }

    pub(super) fn case_limits(&self) -> Limits {
        Limits {
            time_limit: Some(self.case_time_limit),
            work_limit: self.case_work_limit,
            seed: self.seed,
            threads: self.threads,
            ..Limits::default()
        }
    }

    /// Runs `test` on `self.cases` values of `strategy` (none at all for 0 cases).
    fn run<S: Strategy>(
        &self,
        strategy: &S,
        test: impl Fn(S::Value) -> TestCaseResult,
    ) -> Result<(), TestError<S::Value>> {
        if self.cases == 0 {
            return Ok(());
        }
        let mut seed = [0u8; 32];
        seed[..8].copy_from_slice(&self.seed.to_le_bytes());
        let config = Config {
            cases: self.cases,
            failure_persistence: None,
            max_shrink_iters: 1024,
            ..Config::default()
        };
        TestRunner::new_with_rng(config, TestRng::from_seed(RngAlgorithm::ChaCha, &seed))
            .run(strategy, test)
    }
}

impl Default for Conformance {
    /// [`Conformance::exact`].
    fn default() -> Self {
        Self::exact()
    }
}

/// Property-tests `solver` against the exhaustive reference ([`Exhaustive`]) and the contract
/// of [`Solver`], and panics with a readable counter-example on the first violation.
///
/// On `config.cases` random problems (small RCPSPs, and training-step graphs lowered to
/// RCPSPs), each solved with `config.case_time_limit`:
/// - the outcome is consistent: a schedule exactly with `Optimal` and `Feasible`, passing
///   [`check`], whose makespan is the one reported;
/// - `lower bound <= optimum <= makespan`;
/// - `Optimal` only at the optimum (and with the bound equal to the makespan); never
///   `Infeasible` (every generated problem has a schedule);
/// - an [`Claim::Exact`] solver answers `Optimal`;
/// - solving again with the same limits and seed gives the same answer (status, makespan,
///   bound, schedule), unless the clock stopped either solve;
/// - with the optimum as [`Limits::upper_bound`] the answer is still consistent (and optimal
///   for an exact solver);
/// - from a valid starting schedule ([`Limits::initial`]: the serial SGS of the topological
///   order) the answer is at least as good;
/// - every solve returns within [`Conformance::allowed`] of its time limit.
///
/// Then, on the hard instance ([`super::hard_instance`], unless
/// `config.hard_instance` is false): the solve at `config.hard_time_limit` returns in time
/// with an answer within the known bounds; a solve whose cancel flag is raised before it
/// starts, and one whose flag is raised `config.cancel_delay` after it starts, return within
/// `config.cancel_latency` of the flag with [`StopReason::Cancelled`](concerto_rcpsp::StopReason::Cancelled) or a proven result; and
/// with `config.hard_work_limit`, two solves stop at the work limit with the same answer.
///
/// A failure names the solver, the property, the limits, what was expected and what came, and
/// prints the (shrunk) problem as text and as JSON. Cost: a few solves per case plus an
/// enumeration of the problem (milliseconds); the hard probes take about
/// `hard_time_limit + 2 cancel_delay` and the work-limit solves.
///
/// # Panics
/// When the solver violates a property (that is the point), or `config` is invalid (no
/// threads, a zero time limit).
pub fn assert_conforms(solver: &dyn Solver, config: &Conformance) {
    config.validate();
    let name = solver.name().to_string();
    let strategy = match &config.graphs {
        Some(g) => {
            let steps = g.strategy().prop_map(|g| {
                concerto_graph::lower::lower(&g, &durations_of(&g))
                    .expect("a random graph lowers")
                    .problem
            });
            prop_oneof![2 => config.problems.strategy(), 1 => steps].boxed()
        }
        None => config.problems.strategy(),
    };
    let result = config.run(&strategy, |p| {
        let subject = Plain::new(solver, &p);
        let optimum = reference_optimum(&p).map_err(TestCaseError::fail)?;
        probe_case(&subject, optimum, config).map_err(TestCaseError::fail)
    });
    if let Err(e) = result {
        match e {
            TestError::Fail(reason, p) => panic!(
                "solver `{name}` does not conform ({:?}; {} cases from seed {}): {}\n\
                 counter-example (shrunk):\n{}\
                 the same problem as JSON (concerto::rcpsp::io::json::parse_problem reads it):\n{}",
                config.claim,
                config.cases,
                config.seed,
                reason.message(),
                indent(&describe_problem(&p)),
                problem_to_json(&p)
            ),
            TestError::Abort(reason) => panic!(
                "the conformance run of solver `{name}` aborted: {}",
                reason.message()
            ),
        }
    }
    if config.hard_instance {
        let p = hard_instance();
        let subject = Plain::new(solver, &p);
        let known = Known {
            lower: HARD_LOWER_BOUND,
            upper: HARD_UPPER_BOUND,
        };
        if let Err(reason) = probe_hard(&subject, known, config) {
            panic!(
                "solver `{name}` does not conform ({:?}) on the hard instance \
                 (concerto::testing::hard_instance(): PSPLIB j6013_1, {} activities, {} resources, \
                 optimum in [{HARD_LOWER_BOUND}, {HARD_UPPER_BOUND}]): {reason}",
                config.claim,
                p.len(),
                p.resources().len()
            );
        }
    }
}

/// [`assert_conforms`] for a [`ModalSolver`]: random modal problems
/// (`config.modal`), the reference being [`brute_force`] over every mode choice with
/// [`Exhaustive`]; the same properties, the starting solution (mode 0 everywhere, the serial
/// SGS of its reduced problem) passed as `initial`, and every solution checked by
/// [`check_modal`]; then the hard probes on [`super::hard_modal_instance`].
///
/// # Panics
/// As [`assert_conforms`].
pub fn assert_modal_conforms(solver: &dyn ModalSolver, config: &Conformance) {
    config.validate();
    let name = solver.name().to_string();
    let result = config.run(&config.modal.strategy(), |m| {
        let subject = Modal::new(solver, &m);
        let optimum = reference_modal_optimum(&m).map_err(TestCaseError::fail)?;
        probe_case(&subject, optimum, config).map_err(TestCaseError::fail)
    });
    if let Err(e) = result {
        match e {
            TestError::Fail(reason, m) => panic!(
                "modal solver `{name}` does not conform ({:?}; {} cases from seed {}): {}\n\
                 counter-example (shrunk):\n{}",
                config.claim,
                config.cases,
                config.seed,
                reason.message(),
                indent(&describe_modal(&m)),
            ),
            TestError::Abort(reason) => panic!(
                "the conformance run of modal solver `{name}` aborted: {}",
                reason.message()
            ),
        }
    }
    if config.hard_instance {
        let m = hard_modal_instance();
        let subject = Modal::new(solver, &m);
        // One job may be one unit shorter (see `hard_modal_instance`).
        let known = Known {
            lower: HARD_LOWER_BOUND - 1,
            upper: HARD_UPPER_BOUND,
        };
        if let Err(reason) = probe_hard(&subject, known, config) {
            panic!(
                "modal solver `{name}` does not conform ({:?}) on the hard modal instance \
                 (concerto::testing::hard_modal_instance(): PSPLIB j6013_1 with one region of two \
                 modes, optimum in [{}, {HARD_UPPER_BOUND}]): {reason}",
                config.claim,
                HARD_LOWER_BOUND - 1,
            );
        }
    }
}

fn indent(text: &str) -> String {
    text.lines().map(|l| format!("  {l}\n")).collect()
}

/// The optimum by [`Exhaustive`]; an error here is a fault of the kit, not of the solver.
fn reference_optimum(p: &Problem) -> Result<Time, String> {
    let o = Exhaustive
        .solve(p, &Limits::default())
        .map_err(|e| format!("the exhaustive reference failed (a bug of the kit): {e}"))?;
    match (o.status, o.makespan) {
        (Status::Optimal, Some(m)) => Ok(m),
        _ => Err(format!(
            "the exhaustive reference did not prove an optimum (a bug of the kit): {}",
            describe_outcome(p, &o)
        )),
    }
}

/// The modal optimum by [`brute_force`] with [`Exhaustive`].
fn reference_modal_optimum(m: &ModalProblem) -> Result<Time, String> {
    let o = brute_force(m, &Exhaustive, &Limits::default())
        .map_err(|e| format!("the brute-force reference failed (a bug of the kit): {e}"))?;
    match (o.status, o.makespan) {
        (Status::Optimal, Some(best)) => Ok(best),
        _ => Err(format!(
            "the brute-force reference did not prove an optimum (a bug of the kit): {}",
            describe_modal_outcome(m, &o)
        )),
    }
}

/// What the optimum is known to be: `[lower, upper]`.
#[derive(Clone, Copy, Debug)]
pub(super) struct Known {
    pub(super) lower: Time,
    pub(super) upper: Time,
}

impl Known {
    fn text(self) -> String {
        if self.lower == self.upper {
            format!("the optimum {}", self.lower)
        } else {
            format!("an optimum in [{}, {}]", self.lower, self.upper)
        }
    }
}

/// An outcome of either kind, reduced to what the properties look at.
#[derive(Clone, Debug)]
pub(super) struct Answer {
    pub(super) status: Status,
    pub(super) makespan: Option<Time>,
    pub(super) lower_bound: Time,
    /// The independent check of the schedule or solution (`None` without one).
    pub(super) checked: Option<Result<Time, String>>,
    /// Modes and starts, for comparing two answers.
    pub(super) solution: Option<(Vec<usize>, Vec<Time>)>,
    /// The work reported ([`Outcome::work`](concerto_rcpsp::Outcome::work),
    /// [`ModalOutcome::work`](concerto_rcpsp::ModalOutcome::work)).
    pub(super) work: u64,
    /// The outcome as text.
    pub(super) text: String,
}

impl Answer {
    pub(super) fn same(&self, other: &Answer) -> bool {
        (self.status, self.makespan, self.lower_bound, &self.solution)
            == (
                other.status,
                other.makespan,
                other.lower_bound,
                &other.solution,
            )
    }
}

/// A solver on one problem: what the probes need of either kind.
pub(super) trait Subject {
    /// Solves; `warm` starts from [`Subject::start_makespan`]'s solution. `Err`: the solver's
    /// error, as text.
    fn solve(&self, limits: &Limits, warm: bool) -> Result<Answer, String>;
    /// The makespan of the starting solution.
    fn start_makespan(&self) -> Time;
    /// The limits as text (with the starting solution when `warm`).
    fn limits_text(&self, limits: &Limits, warm: bool) -> String;
}

/// The serial SGS schedule of the topological order: a valid, usually poor, start.
fn topological_start(p: &Problem) -> Schedule {
    let list = ActivityList::new(p, p.topological_order().to_vec())
        .expect("a topological order is precedence-feasible");
    sgs::serial(p, &list)
}

struct Plain<'a> {
    solver: &'a dyn Solver,
    problem: &'a Problem,
    start: Schedule,
}

impl<'a> Plain<'a> {
    fn new(solver: &'a dyn Solver, problem: &'a Problem) -> Self {
        Self {
            solver,
            problem,
            start: topological_start(problem),
        }
    }
}

impl Subject for Plain<'_> {
    fn solve(&self, limits: &Limits, warm: bool) -> Result<Answer, String> {
        let limits = if warm {
            limits.clone().initial(self.start.clone())
        } else {
            limits.clone()
        };
        let o = self
            .solver
            .solve(self.problem, &limits)
            .map_err(|e| e.to_string())?;
        let p = self.problem;
        Ok(Answer {
            status: o.status,
            makespan: o.makespan,
            lower_bound: o.lower_bound,
            checked: o
                .schedule
                .as_ref()
                .map(|s| check(p, s).map_err(|v| v.to_string())),
            solution: o
                .schedule
                .as_ref()
                .map(|s| (Vec::new(), s.starts().to_vec())),
            work: o.work,
            text: describe_outcome(p, &o),
        })
    }

    fn start_makespan(&self) -> Time {
        self.start.makespan(self.problem)
    }

    fn limits_text(&self, limits: &Limits, warm: bool) -> String {
        if warm {
            describe_limits(self.problem, &limits.clone().initial(self.start.clone()))
        } else {
            describe_limits(self.problem, limits)
        }
    }
}

struct Modal<'a> {
    solver: &'a dyn ModalSolver,
    problem: &'a ModalProblem,
    start: ModalSolution,
    start_makespan: Time,
}

impl<'a> Modal<'a> {
    /// The starting solution: mode 0 in every region, the serial SGS of the topological
    /// order of its reduced problem.
    fn new(solver: &'a dyn ModalSolver, problem: &'a ModalProblem) -> Self {
        let modes = vec![0; problem.regions().len()];
        let reduced = problem
            .reduce(&modes)
            .expect("mode 0 exists in every region");
        let schedule = topological_start(&reduced.problem);
        let start_makespan = schedule.makespan(&reduced.problem);
        let starts = reduced.expand(&schedule, problem.problem().len());
        Self {
            solver,
            problem,
            start: ModalSolution { modes, starts },
            start_makespan,
        }
    }
}

impl Subject for Modal<'_> {
    fn solve(&self, limits: &Limits, warm: bool) -> Result<Answer, String> {
        let o = self
            .solver
            .solve_modal(self.problem, limits, warm.then_some(&self.start))
            .map_err(|e| e.to_string())?;
        Ok(Answer {
            status: o.status,
            makespan: o.makespan,
            lower_bound: o.lower_bound,
            checked: o
                .solution
                .as_ref()
                .map(|s| check_modal(self.problem, s).map_err(|e| e.to_string())),
            solution: o
                .solution
                .as_ref()
                .map(|s| (s.modes.clone(), s.starts.clone())),
            work: o.work,
            text: describe_modal_outcome(self.problem, &o),
        })
    }

    fn start_makespan(&self) -> Time {
        self.start_makespan
    }

    fn limits_text(&self, limits: &Limits, warm: bool) -> String {
        let text = describe_limits(self.problem.problem(), limits);
        if warm {
            format!(
                "{text}, starting solution {} (makespan {})",
                describe_modal_solution(self.problem, &self.start),
                self.start_makespan
            )
        } else {
            text
        }
    }
}

/// A failure: what is wrong, under which limits, what was expected and what came.
pub(super) fn report(what: &str, limits: &str, expected: &str, got: &str) -> String {
    format!("{what}\n  limits: {limits}\n  expected: {expected}\n  got: {got}")
}

/// Solves and checks the time limit.
pub(super) fn timed(
    s: &dyn Subject,
    limits: &Limits,
    warm: bool,
    c: &Conformance,
) -> Result<(Answer, Duration), String> {
    let started = Instant::now();
    let result = s.solve(limits, warm);
    let elapsed = started.elapsed();
    let answer = result.map_err(|e| {
        report(
            "the solve returned an error",
            &s.limits_text(limits, warm),
            "an outcome",
            &format!("error: {e}"),
        )
    })?;
    if let Some(t) = limits.time_limit {
        let allowed = c.allowed(t);
        if elapsed > allowed {
            return Err(report(
                "the solve overran its time limit",
                &s.limits_text(limits, warm),
                &format!(
                    "a return within {allowed:?} (110 % of the limit + {:?})",
                    c.time_slack
                ),
                &format!("a return after {elapsed:?}: {}", answer.text),
            ));
        }
    }
    Ok((answer, elapsed))
}

/// The properties every answer has: a consistent outcome, a valid schedule, bounds that hold.
pub(super) fn holds(a: &Answer, known: Known, limits: &str) -> Result<(), String> {
    let fail = |what: &str, expected: &str| Err(report(what, limits, expected, &a.text));
    let with_schedule = matches!(a.status, Status::Optimal | Status::Feasible(_));
    if with_schedule != a.checked.is_some() {
        return fail(
            "the status does not match the schedule",
            "a schedule exactly with `optimal` and `feasible`",
        );
    }
    if let Some(checked) = &a.checked {
        let m = match checked {
            Ok(m) => *m,
            Err(violations) => {
                return Err(report(
                    "the schedule fails the independent check",
                    limits,
                    "a schedule that passes concerto::check",
                    &format!("{}\n  violations: {violations}", a.text),
                ))
            }
        };
        if a.makespan != Some(m) {
            return fail(
                "the reported makespan is not the schedule's",
                &format!("makespan {m}, the schedule's"),
            );
        }
        if m < known.lower {
            return fail(
                "a valid schedule shorter than the optimum: the reference is wrong (a bug of the kit)",
                &format!("a makespan of at least {}", known.lower),
            );
        }
    }
    if a.lower_bound > known.upper {
        return fail(
            "the lower bound is above the optimum",
            &format!("a lower bound of at most {}", known.text()),
        );
    }
    match a.status {
        Status::Optimal => {
            if a.makespan.is_some_and(|m| m > known.upper) {
                return fail(
                    "claims optimal for a schedule above the optimum",
                    &format!("`optimal` only at {}", known.text()),
                );
            }
            if a.makespan != Some(a.lower_bound) {
                return fail(
                    "claims optimal with a lower bound below its makespan",
                    "the lower bound of an optimal outcome equal to its makespan",
                );
            }
        }
        Status::Infeasible => {
            return fail(
                "claims infeasible, but the problem has a schedule",
                &format!("a schedule, {}", known.text()),
            )
        }
        _ => {}
    }
    Ok(())
}
