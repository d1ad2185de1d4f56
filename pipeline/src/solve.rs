//! One RCPSP solve as `concerto solve` runs it: a solver alone, or inside the odd-even driver,
//! with a flat summary of the outcome.

use concerto_rcpsp::{Limits, OddEven, OddEvenConfig, Outcome, Problem, SolveError, Solver};
use serde::Serialize;

use crate::bench::scale::ScaleRound;

/// The outcome of [`solve`], flattened for JSON.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SolveSummary {
    /// `optimal`, `feasible`, `infeasible` or `unknown`.
    pub status: &'static str,
    /// Why a feasible solve stopped (`time-limit`, `work-limit`, ...).
    pub stop_reason: Option<&'static str>,
    /// The makespan found.
    pub makespan: Option<i64>,
    /// The best lower bound proven.
    pub lower_bound: i64,
    /// The solver's name.
    pub solver: String,
    /// Wall time (s).
    pub time_s: f64,
    /// Work done in the solver's unit (schedules, nodes, conflicts).
    pub work: u64,
    /// The instance (a file name, as given).
    pub instance: String,
    /// The odd-even driver's starting makespan.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start_makespan: Option<i64>,
    /// The odd-even driver's rounds.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub rounds: Vec<ScaleRound>,
}

/// Solves `problem` (named `instance` in the summary) with `solver`, inside the odd-even
/// driver when `windows` is given, within `limits`. Returns the outcome (its schedule passed
/// the solver's own check) and its summary.
pub fn solve(
    problem: &Problem,
    instance: &str,
    solver: Box<dyn Solver>,
    windows: Option<OddEvenConfig>,
    limits: &Limits,
) -> Result<(Outcome, SolveSummary), SolveError> {
    let (outcome, start_makespan, rounds) = match windows {
        None => (solver.solve(problem, limits)?, None, Vec::new()),
        Some(config) => {
            let r = OddEven::new(solver, config).run(problem, limits)?;
            let rounds = r.rounds.iter().map(ScaleRound::from).collect();
            (r.outcome, Some(r.start_makespan), rounds)
        }
    };
    let summary = SolveSummary {
        status: outcome.status.as_str(),
        stop_reason: outcome.status.stop_reason().map(|r| r.as_str()),
        makespan: outcome.makespan,
        lower_bound: outcome.lower_bound,
        solver: outcome.solver.clone(),
        time_s: outcome.elapsed.as_secs_f64(),
        work: outcome.work,
        instance: instance.to_string(),
        start_makespan,
        rounds,
    };
    Ok((outcome, summary))
}
