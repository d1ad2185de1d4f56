//! The time horizon: the longest step the simulator, the schedulers and the bounds can time
//! without overflowing their 64-bit arithmetic.
//!
//! Every time a schedule of a graph reaches is at most its horizon, the latest release time
//! plus the sum of all durations at full speed (each op waits at most for its release and for
//! every other op). The simulator counts work in 1/1000 ns ([`crate::simulate()`]) and the
//! exact solvers take times as `i64`, so a graph is timed only when that horizon is at most
//! [`MAX_HORIZON_NS`] (`u64::MAX / 1000` ns, about 213 days): far beyond any training step,
//! and small enough that a duration times the simulator's units, a sum of a few horizons, or
//! a horizon as an `i64` never overflows. A graph past it, such as one whose hand-written
//! `duration_ns` is `u64::MAX / 2`, gets [`GraphError::Overflow`] naming the op, never a
//! wrapped or saturated makespan.

use crate::error::GraphError;
use crate::ir::Graph;

/// The largest horizon (latest release plus all durations, ns) that Concerto times: `u64::MAX
/// / 1000`, about 1.8e16 ns or 213 days (see the module docs).
pub const MAX_HORIZON_NS: u64 = u64::MAX / 1000;

/// The horizon of `graph` with `durations` (ns, one per op): its latest release time plus the
/// sum of its durations. O(ops).
///
/// Errors: [`GraphError::InvalidPlan`] when `durations` does not have one entry per op;
/// [`GraphError::Overflow`] naming the op whose duration (or release time) takes the horizon
/// past [`MAX_HORIZON_NS`].
pub fn horizon(graph: &Graph, durations: &[u64]) -> Result<u64, GraphError> {
    if durations.len() != graph.len() {
        return Err(GraphError::InvalidPlan {
            reason: format!("{} durations for {} ops", durations.len(), graph.len()),
        });
    }
    let too_long = |op: &str, what: String| GraphError::Overflow {
        op: op.to_string(),
        what,
        limit_ns: MAX_HORIZON_NS,
    };
    if let Some(op) = graph.ops().find(|op| op.release_ns > MAX_HORIZON_NS) {
        return Err(too_long(
            &op.name,
            format!("its release time of {} ns", op.release_ns),
        ));
    }
    let mut total = graph.ops().map(|op| op.release_ns).max().unwrap_or(0);
    for (op, &d) in graph.ops().zip(durations) {
        total = match total.checked_add(d) {
            Some(t) if t <= MAX_HORIZON_NS => t,
            _ if d > MAX_HORIZON_NS / 2 => {
                return Err(too_long(&op.name, format!("its duration of {d} ns")))
            }
            _ => {
                return Err(too_long(
                    &op.name,
                    format!("its duration of {d} ns, added to the step's total of {total} ns"),
                ))
            }
        };
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::{ComputeClass, GraphBuilder, Op};

    fn chain(release: u64) -> Graph {
        let mut b = GraphBuilder::new("chain");
        let a = b.add(Op::compute("a", ComputeClass::Other, 0, 0), &[]);
        b.add(
            Op::compute("b", ComputeClass::Other, 0, 0).released_at(release),
            &[a],
        );
        b.finish()
    }

    #[test]
    fn the_horizon_is_the_latest_release_plus_every_duration() {
        assert_eq!(horizon(&chain(10), &[3, 4]).unwrap(), 17);
        assert_eq!(
            horizon(&chain(0), &[MAX_HORIZON_NS - 1, 1]).unwrap(),
            MAX_HORIZON_NS
        );
    }

    #[test]
    fn a_duration_past_the_horizon_names_its_op() {
        let e = horizon(&chain(0), &[1, u64::MAX / 2]).unwrap_err();
        assert!(
            matches!(e, GraphError::Overflow { ref op, .. } if op == "b"),
            "{e}"
        );
        assert!(e.to_string().contains(&(u64::MAX / 2).to_string()), "{e}");
        // Two durations that fit alone but not together name the second.
        let e = horizon(&chain(0), &[MAX_HORIZON_NS, 1]).unwrap_err();
        assert!(e.to_string().contains("op `b`"), "{e}");
        assert!(e.to_string().contains("the step's total"), "{e}");
        let e = horizon(&chain(u64::MAX), &[1, 1]).unwrap_err();
        assert!(e.to_string().contains("release time"), "{e}");
        assert!(matches!(
            horizon(&chain(0), &[1]).unwrap_err(),
            GraphError::InvalidPlan { .. }
        ));
    }
}
