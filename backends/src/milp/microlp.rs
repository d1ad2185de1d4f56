//! The microlp backend: pure Rust branch and bound, single-threaded. It has no node or
//! iteration limit, so a work limit does not apply: it runs to its proof (or the time limit),
//! and a run to its proof is deterministic.

use ::microlp::TerminationReason;
use good_lp::solvers::microlp::microlp;
use good_lp::{ResolutionError, Solution, SolverModel, WithMipGap, WithTimeLimit};

use super::{Model, RawResult, RawStatus, RunOptions};

/// Solves `model` with microlp (threads beyond one are ignored: microlp is sequential).
pub(crate) fn run(model: Model, options: &RunOptions) -> Result<RawResult, String> {
    let Model {
        vars,
        objective,
        constraints,
        all,
        ..
    } = model;
    let mut p = vars.minimise(objective).using(microlp);
    if let Some(t) = options.time_limit {
        p = p.with_time_limit(t.as_secs_f64());
    }
    if options.mip_gap > 0.0 {
        p = p
            .with_mip_gap(options.mip_gap as f32)
            .map_err(|e| e.to_string())?;
    }
    for c in constraints {
        p.add_constraint(c);
    }
    match p.solve() {
        Ok(solution) => {
            let values = Model::values(&all, |v| solution.value(v));
            let inner = solution.into_inner();
            let stats = inner.stats();
            let status = match inner.termination_reason() {
                TerminationReason::ProvenOptimal => RawStatus::Optimal,
                TerminationReason::MipGap => RawStatus::GapReached,
                _ => RawStatus::TimeLimit,
            };
            Ok(RawResult {
                status,
                values: Some(values),
                bound: stats.best_bound,
                nodes: stats.nodes_solved,
            })
        }
        Err(ResolutionError::Infeasible) => Ok(RawResult {
            status: RawStatus::Infeasible,
            values: None,
            bound: None,
            nodes: 0,
        }),
        // good_lp's message for "time limit before a feasible solution".
        Err(ResolutionError::Other(message)) if message.starts_with("Time limit") => {
            Ok(RawResult {
                status: RawStatus::TimeLimit,
                values: None,
                bound: None,
                nodes: 0,
            })
        }
        Err(e) => Err(e.to_string()),
    }
}
