//! One RCPSP solve as `concerto solve` runs it: a solver alone, or inside the odd-even driver,
//! with a flat summary of the outcome.

use concerto_rcpsp::{
    Limits, OddEven, OddEvenConfig, Outcome, Problem, RoundReport, SolveError, Solver,
};
use serde::Serialize;

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
    pub rounds: Vec<RoundSummary>,
}

/// One round of the odd-even driver, flattened for JSON: the rounds of a [`SolveSummary`] and
/// of a `bench scale` row (`concerto_benches::scale::ScaleRow`).
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
#[cfg_attr(feature = "serde", derive(serde::Deserialize))]
pub struct RoundSummary {
    /// 1-based round number.
    pub round: usize,
    /// Global makespan after the round.
    pub makespan: i64,
    /// Global lower bound.
    pub lower_bound: i64,
    /// Windows solved in the round.
    pub windows: usize,
    /// Windows whose new schedule was kept.
    pub improved: usize,
    /// Wall time of the round, in seconds.
    pub time_s: f64,
}

impl From<&RoundReport> for RoundSummary {
    fn from(r: &RoundReport) -> Self {
        Self {
            round: r.round,
            makespan: r.makespan,
            lower_bound: r.lower_bound,
            windows: r.windows,
            improved: r.improved,
            time_s: r.time.as_secs_f64(),
        }
    }
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
            let rounds = r.rounds.iter().map(RoundSummary::from).collect();
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
