//! The HiGHS backend. good_lp builds the model; this module drives HiGHS's own model so that
//! it can read the dual bound (`mip_dual_bound`) and map every status itself (good_lp maps
//! "unbounded or infeasible" to infeasible and drops the bound).
//!
//! HiGHS 1.15's presolve can reduce an infeasible time-indexed model to nothing, call it
//! optimal, and then fail in postsolve (status `Error`, "solution has untransformed
//! violations": seen on a 6-activity model with a horizon one below the optimum). Such a run is
//! repeated once with presolve off, within the time left.

use ::highs::{HighsModelStatus, HighsSolutionStatus};
use good_lp::solvers::highs::highs;
use good_lp::SolverModel;

use super::{Model, RawResult, RawStatus, RunOptions};

/// An absolute gap below 1 proves optimality: makespans are integers.
const ABSOLUTE_GAP: f64 = 0.999;

/// Solves `model` with HiGHS, silent, with `options.threads` threads.
pub(crate) fn run(model: Model, options: &RunOptions) -> Result<RawResult, String> {
    let started = std::time::Instant::now();
    match attempt(model.clone(), options, true) {
        Ok(Some(result)) => Ok(result),
        Ok(None) | Err(_) => {
            let left = options
                .time_limit
                .map(|t| t.saturating_sub(started.elapsed()));
            if left.is_some_and(|t| t.is_zero()) {
                return Ok(RawResult {
                    status: RawStatus::TimeLimit,
                    values: None,
                    bound: None,
                    nodes: 0,
                });
            }
            let retry = RunOptions {
                time_limit: left,
                ..options.clone()
            };
            attempt(model, &retry, false)?.ok_or_else(|| {
                "HiGHS found an infeasible solution optimal, even without presolve".to_owned()
            })
        }
    }
}

/// One HiGHS run; `Ok(None)` when HiGHS claims optimality for a solution that breaks a row.
fn attempt(
    model: Model,
    options: &RunOptions,
    presolve: bool,
) -> Result<Option<RawResult>, String> {
    let Model {
        vars,
        objective,
        constraints,
        initial,
        warm,
        ..
    } = model;
    let mut p = vars.minimise(objective).using(highs);
    for c in constraints {
        p.add_constraint(c);
    }
    let mut m = p.try_into_inner().map_err(|e| e.to_string())?;
    m.make_quiet();
    macro_rules! option {
        ($key:literal, $value:expr) => {
            m.try_set_option($key, $value)
                .map_err(|e| format!("setting the HiGHS option `{}`: {e:?}", $key))?
        };
    }
    option!("output_flag", false);
    if let Some(t) = options.time_limit {
        option!("time_limit", t.as_secs_f64());
    }
    option!(
        "threads",
        i32::try_from(options.threads.max(1)).unwrap_or(i32::MAX)
    );
    option!("random_seed", (options.seed % i32::MAX as u64) as i32);
    option!("mip_rel_gap", options.mip_gap);
    option!("mip_abs_gap", ABSOLUTE_GAP);
    if let Some(nodes) = options.work_limit {
        option!("mip_max_nodes", i32::try_from(nodes).unwrap_or(i32::MAX));
    }
    if !presolve {
        option!("presolve", "off");
    }
    if warm {
        m.try_set_solution(Some(&initial), None, None, None)
            .map_err(|e| format!("HiGHS refused the warm start: {e:?}"))?;
    }
    let solved = m.try_solve().map_err(|e| format!("HiGHS failed: {e:?}"))?;
    let bound = solved.double_info_value(c"mip_dual_bound").ok();
    // `mip_node_count` is an int64 info, which the highs crate's `int_info_value` (HighsInt
    // only) cannot read: the nodes are not reported.
    let nodes = 0;
    let values = (solved.primal_solution_status() == HighsSolutionStatus::Feasible)
        .then(|| solved.get_solution().columns().to_vec());
    let status = match solved.status() {
        HighsModelStatus::Optimal if values.is_none() => return Ok(None),
        HighsModelStatus::Optimal
        | HighsModelStatus::ObjectiveBound
        | HighsModelStatus::ObjectiveTarget => {
            // Optimal within the tolerances: with a relative gap asked for, the stop may be
            // the gap, not a proof.
            let objective = solved.objective_value();
            match bound {
                Some(b) if options.mip_gap > 0.0 && objective - b >= 1.0 - 1e-6 => {
                    RawStatus::GapReached
                }
                _ => RawStatus::Optimal,
            }
        }
        // Every variable of both formulations is bounded, so this can only be infeasible.
        HighsModelStatus::Infeasible | HighsModelStatus::UnboundedOrInfeasible => {
            RawStatus::Infeasible
        }
        // HiGHS reports its node limit as a solution limit (HighsMipSolverData.cpp); no
        // iteration or solution limit is set otherwise.
        HighsModelStatus::ReachedIterationLimit | HighsModelStatus::ReachedSolutionLimit
            if options.work_limit.is_some() =>
        {
            RawStatus::WorkLimit
        }
        HighsModelStatus::ReachedTimeLimit
        | HighsModelStatus::ReachedInterrupt
        | HighsModelStatus::ReachedIterationLimit
        | HighsModelStatus::ReachedSolutionLimit => RawStatus::TimeLimit,
        other => return Err(format!("HiGHS stopped with status {other:?}")),
    };
    Ok(Some(RawResult {
        status,
        values,
        bound,
        nodes,
    }))
}
