//! Errors of the graph crate.

use thiserror::Error;

/// What went wrong reading, building, costing, planning or simulating a graph.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum GraphError {
    /// The JSON text is malformed or does not match the format.
    #[error("malformed graph JSON at line {line}, column {column}: {message}")]
    Json {
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// serde_json's message.
        message: String,
    },
    /// The `format` field is not `concerto-graph`.
    #[error("not a concerto graph: format is `{found}`, expected `concerto-graph`")]
    Format {
        /// The format found.
        found: String,
    },
    /// The format version is not supported.
    #[error(
        "graph format version {found} is not supported (this build reads version {supported})"
    )]
    Version {
        /// The version found.
        found: u32,
        /// The version this build reads.
        supported: u32,
    },
    /// Two ops have the same name.
    #[error("two ops are named `{name}`")]
    DuplicateName {
        /// The name.
        name: String,
    },
    /// An op reads an op that is not before it in program order (a cycle or a dangling index).
    #[error("op `{op}` (position {position}) reads op #{input}, which is not before it in program order")]
    ForwardInput {
        /// The reading op.
        op: String,
        /// The index it reads.
        input: usize,
        /// Its own position.
        position: usize,
    },
    /// An op reads an output its producer does not have.
    #[error("op `{op}` reads output {tensor} of `{producer}`, which has {outputs} output(s)")]
    MissingTensor {
        /// The reading op.
        op: String,
        /// The producer.
        producer: String,
        /// The output index read.
        tensor: usize,
        /// Outputs the producer has.
        outputs: usize,
    },
    /// An op is invalid on its own.
    #[error("invalid op `{op}`: {reason}")]
    InvalidOp {
        /// The op.
        op: String,
        /// Why.
        reason: String,
    },
    /// An unknown hardware profile was asked for.
    #[error("unknown hardware `{name}` (known: {known})")]
    UnknownHardware {
        /// The name asked for.
        name: String,
        /// Names known.
        known: String,
    },
    /// A model builder got impossible sizes or parallel degrees.
    #[error("invalid model configuration: {reason}")]
    InvalidModel {
        /// Why.
        reason: String,
    },
    /// A stream plan does not fit its graph (an op missing, twice, or on the wrong stream).
    #[error("invalid stream plan: {reason}")]
    InvalidPlan {
        /// Why.
        reason: String,
    },
    /// A stream plan whose FIFO orders and waits form a cycle: it would hang on a GPU.
    #[error("stream plan deadlocks: {cycle}")]
    Deadlock {
        /// The ops of a cycle, `a -> b -> ... -> a`.
        cycle: String,
    },
    /// A plan holds more memory than its budget ([`crate::memory::check_memory`]).
    #[error(
        "the plan's memory peak is {peak_bytes} B, over the budget of {budget_bytes} B; first \
         over at {at_ns} ns, the largest tensors live then: {live}"
    )]
    OverBudget {
        /// The plan's peak (bytes).
        peak_bytes: u64,
        /// The budget (bytes).
        budget_bytes: u64,
        /// When the budget is first exceeded (ns).
        at_ns: u64,
        /// The largest tensors live then, with their bytes.
        live: String,
    },
    /// An op's duration or release time takes the step past the longest one Concerto can time
    /// without overflowing ([`crate::horizon`]).
    #[error(
        "op `{op}`: {what} takes the step past the longest one Concerto times ({limit_ns} ns, \
         about 213 days); is it a duration in ns?"
    )]
    Overflow {
        /// The op.
        op: String,
        /// What overflows: its duration or release time, with the value.
        what: String,
        /// The longest step (ns), [`crate::horizon::MAX_HORIZON_NS`].
        limit_ns: u64,
    },
    /// The solver failed (an error, not an outcome such as a time limit).
    #[error("solver failed: {0}")]
    Solve(#[from] concerto_rcpsp::SolveError),
    /// Lowering to an RCPSP failed.
    #[error("lowering to an RCPSP failed: {0}")]
    Lowering(#[from] concerto_rcpsp::ProblemError),
}
