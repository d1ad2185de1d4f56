//! A conformance kit for solvers (feature `testing`): proptest strategies for random small
//! instances, an exhaustive reference solver, and one call that property-tests any
//! [`Solver`](concerto_rcpsp::Solver) or [`ModalSolver`](concerto_rcpsp::ModalSolver)
//! against the reference and the contract of its trait.
//!
//! - [`assert_conforms`] / [`assert_modal_conforms`] with a [`Conformance`]: the same
//!   optimum as the reference when the solver claims `Optimal`, `bound <= optimum <=
//!   makespan`, every schedule passing [`check`](concerto_rcpsp::check), time limits kept
//!   within 110 % (plus a small constant, see [`Conformance`]), cancellation obeyed promptly,
//!   the same answer for the same seed; a violation panics with the shrunk counter-example
//!   printed as text;
//! - [`Exhaustive`]: the exact reference, an enumeration of serial-SGS activity lists;
//! - [`problems`], [`training_steps`], [`graphs`], [`modal_problems`] and their shapes:
//!   proptest strategies for other property tests;
//! - [`hard_instance`]: a PSPLIB instance no solver proves quickly, for time limits and
//!   cancellation;
//! - [`describe_problem`] and friends: the text of counter-examples.
//!
//! A backend's test suite needs one test per solver:
//!
//! ```
//! use concerto::testing::{assert_conforms, Conformance, Exhaustive};
//!
//! // In a real suite: your solver, and `Conformance::exact()` or `::heuristic()` as it is.
//! let mut config = Conformance::exact().cases(8);
//! config.hard_instance = false; // the probes on the hard instance take a second or two
//! assert_conforms(&Exhaustive, &config);
//! ```
//!
//! A solver that breaks a property fails with the problem, the limits, what was expected and
//! what came:
//!
//! ```should_panic
//! use concerto::testing::{assert_conforms, Conformance, Exhaustive};
//! use concerto::{Limits, Outcome, Problem, SolveError, Solver, Status};
//!
//! /// Reports one unit less than the makespan of its schedule.
//! struct Boastful;
//! impl Solver for Boastful {
//!     fn name(&self) -> &str {
//!         "boastful"
//!     }
//!     fn solve(&self, p: &Problem, limits: &Limits) -> Result<Outcome, SolveError> {
//!         let mut o = Exhaustive.solve(p, limits)?;
//!         o.makespan = o.makespan.map(|m| m - 1);
//!         Ok(o)
//!     }
//! }
//! assert_conforms(&Boastful, &Conformance::exact().cases(4));
//! ```

mod conformance;
mod exhaustive;
mod hard;
mod probes;
mod strategies;
mod text;

pub use conformance::{assert_conforms, assert_modal_conforms, Claim, Conformance};
pub use exhaustive::Exhaustive;
pub use hard::{hard_instance, hard_modal_instance, HARD_LOWER_BOUND, HARD_UPPER_BOUND};
pub use strategies::{
    durations_of, graphs, modal_problems, problems, training_steps, GraphShape, ModalShape,
    ProblemShape, ProblemSpec,
};
pub use text::{
    describe_limits, describe_modal, describe_modal_outcome, describe_modal_solution,
    describe_outcome, describe_problem, describe_schedule,
};
