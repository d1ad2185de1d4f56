//! Errors of the decomposition crate.

use thiserror::Error;

/// What went wrong detecting, rewriting, checking or selecting a decomposition.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum DecompError {
    /// A decomposition context does not fit its graph (no ops, ops unsorted, repeated or out of
    /// range, fewer than 2 chunks, or the collective not among its ops).
    #[error("invalid decomposition context: {reason}")]
    InvalidContext {
        /// Why, naming the op involved.
        reason: String,
    },
    /// A rewritten graph fails the independent graph check: a bug in a rewrite, never a
    /// result.
    #[error("rewritten graph fails the check: {reason}")]
    CheckFailed {
        /// Which invariant broke, naming the ops involved.
        reason: String,
    },
    /// Building, costing, planning or simulating a graph failed.
    #[error("graph error: {0}")]
    Graph(#[from] concerto_graph::GraphError),
    /// A solver failed (an error, not an outcome such as a time limit).
    #[error("solver failed: {0}")]
    Solve(#[from] concerto_rcpsp::SolveError),
    /// The selection of decompositions failed (a selector's error, not a choice).
    #[error("selecting decompositions: {0}")]
    Selection(#[from] concerto_rcpsp::SelectionError),
    /// The joint windows failed (the modal solver's error, not an outcome).
    #[error("the joint windows: {0}")]
    Modal(#[from] concerto_rcpsp::ModalError),
}
