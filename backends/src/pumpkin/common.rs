//! What the RCPSP and the modal pumpkin models share: the name, the `i32` limits of pumpkin's
//! domains, the cumulative constraints, and reading the makespan's bound at the root.

use concerto_rcpsp::{Problem, SolveError, Time};
use pumpkin_core::variables::DomainId;

/// The name the backend is registered under (both the RCPSP and the modal solver).
pub const NAME: &str = "pumpkin";

/// The largest makespan bound the model accepts: pumpkin's domains are `i32`, and the margin
/// keeps sums like `s_i + d_i + lag` inside it.
pub const MAX_HORIZON: Time = (i32::MAX / 2) as Time;

/// [`SolveError::Unsupported`] from this backend.
pub(super) fn unsupported(reason: String) -> SolveError {
    SolveError::Unsupported {
        solver: NAME.into(),
        reason,
    }
}

/// Converts a time or amount known to fit (checked against [`MAX_HORIZON`]) to `i32`.
pub(super) fn small(value: i64) -> i32 {
    i32::try_from(value).expect("values are checked against MAX_HORIZON")
}

/// `value` as an `i32` of the model, or [`SolveError::Unsupported`] naming `what`.
pub(super) fn fit(value: Time, what: &str) -> Result<i32, SolveError> {
    if (0..=MAX_HORIZON).contains(&value) {
        Ok(small(value))
    } else {
        Err(unsupported(format!(
            "{what} {value} exceeds the i32 domains of pumpkin (at most {MAX_HORIZON}); \
             rescale the time unit"
        )))
    }
}

/// Propagates `solver` at the root and reads `makespan`'s lower bound there; `None` when the
/// root is infeasible (no solution within the model's cap).
pub(super) fn root_lower_bound(
    solver: &mut pumpkin_core::Solver,
    makespan: DomainId,
) -> Option<Time> {
    if solver.is_inconsistent() || solver.propagate_to_fixpoint().is_infeasible() {
        return None;
    }
    Some(Time::from(solver.lower_bound(&makespan)))
}

/// The options of every `cumulative`: pumpkin's defaults (incremental time-tabling over
/// intervals, pointwise explanations) with `generate_sequence`: a propagation across several
/// adjacent profiles is explained by the chain of profiles that pushes the task, step by step
/// (Schutt et al. 2011, section 4), instead of one explanation per profile.
///
/// Measured with `examples/pumpkin_config`, one thread, backward series, the four j60
/// instances that the 2-core portfolio proved just after 10 s (`j6046_4`, `j6046_10`,
/// `j6030_7`, `j605_4`), two solves side by side: 42.9 s in all against 49.7 s without it
/// (about the same conflicts, 5.0k against 4.3k a second). pumpkin's `BigStep` explanations
/// panic in its conflict analysis (pumpkin-conflict-resolvers 0.5, `working_nogood.rs`) on
/// `j6046_10` and are not used.
fn cumulative_options() -> pumpkin_propagators::cumulative::options::CumulativeOptions {
    let mut options = pumpkin_propagators::cumulative::options::CumulativeOptions::default();
    options.propagator_options.generate_sequence = true;
    options
}

/// One `cumulative` per resource of `problem` over its activities with positive duration and
/// demand (time-table propagation with explanations, Schutt et al. 2011, options
/// [`cumulative_options`]), `starts[a]` being activity `a`'s start; a resource whose total
/// demand fits its capacity gets none.
/// Returns the resources posted: their tasks (start, duration, demand) and capacity.
/// [`SolveError::Unsupported`] when a total demand exceeds pumpkin's i32 arithmetic.
pub(super) fn post_cumulatives(
    solver: &mut pumpkin_core::Solver,
    problem: &Problem,
    starts: &[DomainId],
    tag: pumpkin_core::proof::ConstraintTag,
) -> Result<Vec<Posted>, SolveError> {
    let mut posted = Vec::new();
    for (r, resource) in problem.resources().iter().enumerate() {
        let tasks: Vec<(DomainId, i32, u32)> = problem
            .ids()
            .filter_map(|a| {
                let demand = problem.activity(a).demands[r];
                let d = problem.duration(a);
                (d > 0 && demand > 0).then(|| (starts[a.index()], small(d), demand))
            })
            .collect();
        let total: u64 = tasks.iter().map(|&(_, _, c)| u64::from(c)).sum();
        if total <= u64::from(resource.capacity) {
            continue;
        }
        if total > MAX_HORIZON as u64 {
            return Err(unsupported(format!(
                "resource `{}`: its total demand {total} exceeds the i32 arithmetic of \
                 pumpkin's cumulative; scale the demands down",
                resource.name
            )));
        }
        let capacity = i32::try_from(resource.capacity).expect("capacity < total demand");
        solver
            .add_constraint(pumpkin_constraints::cumulative_with_options(
                tasks.iter().map(|t| t.0),
                tasks.iter().map(|t| t.1),
                tasks
                    .iter()
                    .map(|t| i32::try_from(t.2).expect("demand < total demand")),
                capacity,
                cumulative_options(),
                tag,
            ))
            .post();
        let tasks = tasks
            .into_iter()
            .map(|(s, p, c)| (s, p, i32::try_from(c).expect("demand < total demand")))
            .collect();
        posted.push(Posted { tasks, capacity });
    }
    Ok(posted)
}

/// A resource with a `cumulative` posted: its tasks (start, duration, demand; all positive)
/// and its capacity.
pub(super) struct Posted {
    pub(super) tasks: Vec<(DomainId, i32, i32)>,
    pub(super) capacity: i32,
}
