//! Errors of the pipeline.

use thiserror::Error;

/// What went wrong in a pipeline call. Outcomes (a time limit reached, a rewrite not kept) are
/// not errors: the report says them.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum PipelineError {
    /// Building, costing, planning or simulating a graph failed.
    #[error(transparent)]
    Graph(#[from] concerto_graph::GraphError),
    /// Detecting, rewriting, selecting or jointly solving decompositions failed.
    #[error(transparent)]
    Decomp(#[from] concerto_decomp::DecompError),
    /// A solver failed (an error, not an outcome such as a time limit).
    #[error("solver failed: {0}")]
    Solve(#[from] concerto_rcpsp::SolveError),
    /// No plan found keeps the memory budget (see [`crate::schedule::ScheduleConfig::memory_budget`]).
    #[error(
        "no plan within the memory budget of {budget_bytes} B ({budget_gib:.3} GiB): the \
         smallest peak found is {smallest_bytes} B ({smallest_gib:.3} GiB, by {by}); no order \
         can go below {lower_bound_bytes} B ({lower_bound_gib:.3} GiB)",
        budget_gib = crate::table::gib(*budget_bytes),
        smallest_gib = crate::table::gib(*smallest_bytes),
        lower_bound_gib = crate::table::gib(*lower_bound_bytes)
    )]
    MemoryBudget {
        /// The budget (bytes).
        budget_bytes: u64,
        /// The smallest peak of every plan the step built (bytes).
        smallest_bytes: u64,
        /// The plan that had it (a scheduler or portfolio rule).
        by: String,
        /// The proven lower bound on every plan's peak ([`concerto_graph::memory::peak_lower_bound`]).
        lower_bound_bytes: u64,
    },
    /// The configuration asks for something impossible (zero threads, joint mode without a
    /// modal solver, noise out of range).
    #[error("invalid pipeline configuration: {reason}")]
    InvalidConfig {
        /// What is wrong.
        reason: String,
    },
}
