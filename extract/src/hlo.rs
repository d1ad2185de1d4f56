//! XLA HLO text: parse a module ([`parse()`]) and lower it to a graph ([`lower()`]).
//!
//! The lowered graph carries the module's memory information ([`concerto_graph::memory`]):
//! the entry parameters' bytes as resident bytes
//! ([`Graph::resident_bytes`](concerto_graph::Graph::resident_bytes)), and the ops whose
//! outputs reach the entry's `ROOT` as step outputs
//! ([`Op::live_out`](concerto_graph::Op::live_out)); the [`lower`](mod@lower) module docs say
//! what is counted.

pub mod ast;
pub mod export;
pub mod lower;
mod parse;
pub mod pgle;

pub use ast::{Attribute, Computation, Instruction, Module, Pos, ReplicaGroups, Shape};
pub use export::{
    check_export, export, export_checked, export_verbatim, export_verbatim_checked, replay,
    Checked, ExportError, Exported, REPLAY_TOLERANCE,
};
pub use lower::{lower, sequence_plan, ImportOptions, ImportReport, SeqEvent};
pub use parse::{parse, parse_with, ParseOptions};

/// The collective opcodes (their `-start`/`-done` forms begin with them): what an
/// `async-start` wrapper of an async collective wraps, and what XLA's loop analysis never
/// evaluates (`IsCollective`).
pub(crate) const COLLECTIVE_OPCODES: &[&str] = &[
    "all-reduce",
    "all-gather",
    "reduce-scatter",
    "all-to-all",
    "ragged-all-to-all",
    "collective-permute",
    "collective-broadcast",
];

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
