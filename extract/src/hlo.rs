//! XLA HLO text: parse a module ([`parse()`]) and lower it to a graph ([`lower()`]).

pub mod ast;
pub mod export;
pub mod lower;
mod parse;

pub use ast::{Attribute, Computation, Instruction, Module, Pos, ReplicaGroups, Shape};
pub use export::{
    check_export, export, export_checked, replay, Checked, ExportError, Exported, REPLAY_TOLERANCE,
};
pub use lower::{lower, ImportOptions, ImportReport};
pub use parse::parse;

/// Errors of reading and lowering HLO text. Every one names a line and column or an
/// instruction.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HloError {
    /// The text does not follow the HLO grammar.
    #[error("line {line}, column {column}: {message}")]
    Syntax {
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// What was expected and found.
        message: String,
    },
    /// The module is well-formed but cannot be lowered (an unknown operand, a while loop
    /// without a known trip count, a missing called computation).
    #[error("line {line}, instruction `{instruction}`: {message}")]
    Lowering {
        /// 1-based line of the instruction.
        line: usize,
        /// The instruction.
        instruction: String,
        /// Why.
        message: String,
    },
    /// Building the graph failed.
    #[error(transparent)]
    Graph(#[from] concerto_graph::GraphError),
}
