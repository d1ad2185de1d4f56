//! The CBC backend through good_lp, serialised process-wide by good_lp's `singlethread-cbc`
//! mutex (see the parent module). CBC reports success with garbage values when the clock
//! stops it before any solution; the caller checks every schedule. A work limit is CBC's
//! `maxNodes`; the nodes CBC explored are not reported (see `nodes` below), so its
//! [`Outcome::work`](concerto_rcpsp::Outcome::work) is 0.

use coin_cbc::raw::SecondaryStatus;
use good_lp::solvers::coin_cbc::coin_cbc;
use good_lp::SolverModel;

use super::{Model, RawResult, RawStatus, RunOptions};

/// Solves `model` with CBC, silent, counting wall-clock time.
pub(crate) fn run(model: Model, options: &RunOptions) -> Result<RawResult, String> {
    let Model {
        vars,
        objective,
        constraints,
        ..
    } = model;
    let mut p = vars.minimise(objective).using(coin_cbc);
    for c in constraints {
        p.add_constraint(c);
    }
    p.set_parameter("logLevel", "0");
    p.set_parameter("slogLevel", "0");
    // CBC counts CPU seconds by default and rounds the limit up to whole seconds.
    p.set_parameter("timeMode", "elapsed");
    if let Some(t) = options.time_limit {
        p.set_parameter("seconds", &format!("{:.3}", t.as_secs_f64().max(0.001)));
    }
    p.set_parameter("threads", &options.threads.max(1).to_string());
    p.set_parameter(
        "randomCbcSeed",
        &(options.seed % i32::MAX as u64).max(1).to_string(),
    );
    // Makespans are integers: an absolute gap below 1 proves optimality.
    p.set_parameter("allowableGap", "0.999");
    if let Some(nodes) = options.work_limit {
        p.set_parameter("maxNodes", &nodes.min(i32::MAX as u64).to_string());
    }
    if options.mip_gap > 0.0 {
        p.set_parameter("ratioGap", &options.mip_gap.to_string());
    }
    // coin_cbc directly (still behind the global mutex of `singlethread-cbc`): good_lp's
    // `solve` turns CBC's statuses into errors that hide the raw model.
    let started = std::time::Instant::now();
    let solution = p.as_inner().solve();
    let raw = solution.raw();
    // 1e50 is CBC's "no solution" objective.
    let has_solution = raw.obj_value() < 1e49;
    let bound = raw.best_possible_value();
    let near_limit = options
        .time_limit
        .is_some_and(|t| started.elapsed().as_secs_f64() >= 0.9 * t.as_secs_f64());
    let stopped_on_time = raw.is_seconds_limit_reached()
        || matches!(raw.secondary_status(), SecondaryStatus::StoppedOnTime)
        || near_limit;
    let stopped_on_nodes = raw.is_node_limit_reached()
        || matches!(raw.secondary_status(), SecondaryStatus::StoppedOnNodes);
    // CBC 2.10.8 has claimed "proven infeasible" for a feasible model when its clock ran out
    // during preprocessing (j6013_1, horizon 118, best known 112, 1 s limit): such a claim is
    // not a proof, and neither is the bound that comes with it.
    let distrusted = raw.is_proven_infeasible() && stopped_on_time;
    let status = if raw.is_abandoned() {
        return Err("CBC abandoned the solve (numerical difficulties)".into());
    } else if raw.is_proven_infeasible() && !distrusted {
        RawStatus::Infeasible
    } else if distrusted {
        RawStatus::TimeLimit
    } else if stopped_on_nodes && !stopped_on_time {
        RawStatus::WorkLimit
    } else if raw.is_proven_optimal() && has_solution {
        if options.mip_gap > 0.0 && raw.obj_value() - bound >= 1.0 - 1e-6 {
            RawStatus::GapReached
        } else {
            RawStatus::Optimal
        }
    } else {
        RawStatus::TimeLimit
    };
    Ok(RawResult {
        status,
        // CBC 2.10.8 keeps values beside a proof of infeasibility (a contended model capped
        // below its optimum came back "infeasible" with objective 3 and values that break a
        // work row): they are no solution.
        values: (has_solution && status != RawStatus::Infeasible)
            .then(|| raw.col_solution().to_vec()),
        bound: (!distrusted && bound.is_finite() && bound.abs() < 1e49).then_some(bound),
        // coin_cbc's safe API has no node count (`Cbc_getNodeCount` is only in the raw
        // bindings, which this crate, forbidding unsafe code, does not call).
        nodes: 0,
    })
}
