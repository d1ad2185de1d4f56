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
    /// The configuration asks for something impossible (zero threads, joint mode without a
    /// modal solver, noise out of range).
    #[error("invalid pipeline configuration: {reason}")]
    InvalidConfig {
        /// What is wrong.
        reason: String,
    },
}
