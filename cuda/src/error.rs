//! Errors of the CUDA executor.

use concerto_graph::GraphError;
use thiserror::Error;

/// What went wrong lowering, checking or running a stream plan.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum CudaError {
    /// The plan does not fit its graph (see [`concerto_graph::StreamPlan::validate`]).
    #[error(transparent)]
    Graph(#[from] GraphError),
    /// There is not one duration per op of the graph.
    #[error("{durations} durations for a graph of {ops} ops")]
    Durations {
        /// Durations given.
        durations: usize,
        /// Ops in the graph.
        ops: usize,
    },
    /// A configuration value is out of range.
    #[error("invalid executor configuration: {reason}")]
    Config {
        /// Which value, and why.
        reason: String,
    },
    /// A command set is malformed: an op launched twice or never, an event recorded twice,
    /// an event id out of range.
    #[error("invalid commands: {reason}")]
    InvalidCommands {
        /// Why.
        reason: String,
    },
    /// The commands cannot complete: some streams wait for events no stream can record.
    #[error("the commands deadlock: {stuck}")]
    Deadlock {
        /// The stuck streams, each with the command it is stuck on.
        stuck: String,
    },
    /// The commands do not order a producer before one of its consumers.
    #[error("`{consumer}` reads `{producer}`, but no FIFO order or wait of the commands puts it after it")]
    MissingDependency {
        /// The producer op.
        producer: String,
        /// The consumer op.
        consumer: String,
    },
    /// The CUDA driver library cannot be loaded, or it sees no GPU (or not the one asked for).
    #[error("no CUDA driver/GPU: {reason}")]
    NoDevice {
        /// Why.
        reason: String,
    },
    /// A CUDA driver call failed.
    #[error("CUDA driver error ({call}): {message}")]
    Driver {
        /// The call that failed, or what the executor was doing when cudarc panicked.
        call: &'static str,
        /// The driver's error name and string.
        message: String,
    },
    /// The spin kernel could be neither compiled with NVRTC nor loaded from its embedded PTX.
    #[error("the spin kernel could not be built: {reason}")]
    Kernel {
        /// Both failures.
        reason: String,
    },
}
