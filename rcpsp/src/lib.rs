//! # concerto-rcpsp
//!
//! The resource-constrained project scheduling problem (RCPSP) at the core of Concerto: the
//! model, an independent schedule checker, lower bounds, schedule-generation heuristics, the
//! [`Solver`] trait every backend implements, and readers for PSPLIB files.
//!
//! This crate depends on no solver. Exact backends (CP, MILP) live in `concerto-backends`.
//!
//! ## Walkthrough
//!
//! ```
//! use concerto_rcpsp::{bounds, check, Heuristic, Limits, ProblemBuilder, Solver, Status};
//!
//! // Two streams of a GPU: compute and communication, capacity 1 each.
//! let mut b = ProblemBuilder::new();
//! let compute = b.resource("compute", 1);
//! let comm = b.resource("comm", 1);
//! let fwd = b.activity("forward", 4);
//! let bwd1 = b.activity("backward.layer1", 3);
//! let ar1 = b.activity("all-reduce.layer1", 3);
//! let bwd0 = b.activity("backward.layer0", 3);
//! let ar0 = b.activity("all-reduce.layer0", 2);
//! for (a, r) in [(fwd, compute), (bwd1, compute), (bwd0, compute), (ar1, comm), (ar0, comm)] {
//!     b.demand(a, r, 1);
//! }
//! b.precedence(fwd, bwd1);
//! b.precedence(bwd1, ar1);
//! b.precedence(bwd1, bwd0);
//! b.precedence(bwd0, ar0);
//! let problem = b.build()?;
//!
//! // The all-reduce of layer 1 hides behind the backward of layer 0.
//! let bound = bounds::lower_bound(&problem);
//! let outcome = Heuristic::default().solve(&problem, &Limits::default())?;
//! let schedule = outcome.schedule.expect("a heuristic always finds a schedule");
//! assert_eq!(check(&problem, &schedule)?, 12);
//! assert_eq!(bound.value, 12);
//! assert_eq!(outcome.status, Status::Optimal);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod bounds;
mod check;
pub mod contended;
pub mod generate;
pub mod io;
pub mod joint;
mod justify;
pub mod modal;
pub mod oddeven;
pub mod priority;
mod problem;
mod profile;
mod registry;
mod schedule;
pub mod search;
pub mod selection;
pub mod sgs;
mod solver;
pub mod temporal;
#[cfg(test)]
mod test_support;

pub use bounds::{lower_bound, BoundKind, LowerBound};
pub use check::{check, Violation, Violations};
pub use contended::{
    check_contended, verified_contended, ContendedProblem, ContentionError, Role, RATE_UNITS,
};
pub use io::{read_problem, ReadError};
pub use justify::justify;
pub use modal::{
    brute_force, check_modal, verified_modal, ModalError, ModalOutcome, ModalProblem,
    ModalSolution, ModalSolver, Region,
};
pub use modal::{Membership, Reduced};
pub use oddeven::{Admission, OddEven, OddEvenConfig, OddEvenReport, RoundReport};
pub use problem::{
    Activity, ActivityId, Arc, Precedence, Problem, ProblemBuilder, ProblemError, Resource,
    ResourceId, Time,
};
pub use registry::{Registry, RegistryError, SolverInfo};
pub use schedule::Schedule;
pub use search::{Heuristic, HeuristicConfig, StallStop};
pub use selection::{Chosen, Enumeration, Selection, SelectionError, Selector};
pub use sgs::{ActivityList, ListError};
pub use solver::{
    verified, CancelFlag, Clock, Limits, Outcome, SolveError, Solver, Status, StopReason,
};
