//! # concerto-benches
//!
//! The bench matrices behind `concerto bench`, as library code: the command line calls these
//! and renders their typed reports. Concerto's Criterion benches live in `benches/`.
//!
//! - [`psplib`]: solve a set of PSPLIB instances with one solver, check every schedule with
//!   [`concerto_rcpsp::check`], and compare each result with a reference table of best known
//!   bounds; a result that contradicts the reference is reported as such. [`psplib::peers`]
//!   counts other solvers' published proofs on the same instances within the same time.
//! - [`scale`]: the odd-even driver ([`concerto_rcpsp::OddEven`]) on generated training steps
//!   of growing size, against the plain heuristic given the same wall time.
//! - [`graphs`]: every scheduler on model x parallelism configurations and given graphs.
//! - [`ablation`]: the pipeline's steps switched on one at a time.
//! - [`shard`]: a deterministic split of a bench's items (`--shard I/N`), the file each shard
//!   writes, and the merge that rebuilds the unsharded rows and summary from the files.
//!
//! Solvers come in as trait objects, so this crate depends on no backend. Progress goes to a
//! [`Progress`](concerto_pipeline::Progress) between items (instances, sizes), never from
//! inside a solve.

use std::path::PathBuf;

use concerto_rcpsp::{ReadError, SolveError, Violations};
use thiserror::Error;

pub mod ablation;
pub mod graphs;
pub mod psplib;
pub mod scale;
pub mod shard;

/// Why a bench could not run. Results that contradict a reference are not errors: the report
/// says them.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum BenchError {
    /// The instance directory could not be listed.
    #[error("reading directory {}", dir.display())]
    ReadDir {
        /// The directory.
        dir: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// No instance file of the directory matches the selection.
    #[error(
        "no .sm instance in {} matches{}",
        dir.display(),
        pattern.as_deref().map_or(String::new(), |p| format!(" `{p}`"))
    )]
    NoInstances {
        /// The directory.
        dir: PathBuf,
        /// The file-name pattern, if one was given.
        pattern: Option<String>,
    },
    /// The reference table could not be read (the error names the file, line and column).
    #[error(transparent)]
    Reference(#[from] ReadError),
    /// The configuration asks for something impossible (zero jobs, zero threads, a size of
    /// zero, a channel count other than 1 or 2).
    #[error("invalid bench configuration: {reason}")]
    InvalidConfig {
        /// What is wrong.
        reason: String,
    },
    /// A solver failed (an error, not an outcome such as a time limit).
    #[error("{solver} failed on {instance}")]
    Solve {
        /// The instance.
        instance: String,
        /// The solver's name.
        solver: String,
        /// The solver's error.
        #[source]
        source: Box<SolveError>,
    },
    /// A solver returned no schedule where the bench needs one.
    #[error("{solver} returned no schedule of {instance}")]
    NoSchedule {
        /// The instance.
        instance: String,
        /// The solver's name.
        solver: String,
    },
    /// A schedule failed the independent checker: a solver bug, never an outcome.
    #[error("the schedule {solver} found for {instance} fails the checker")]
    Unchecked {
        /// The instance.
        instance: String,
        /// The solver's name.
        solver: String,
        /// What the checker found.
        #[source]
        source: Box<Violations>,
    },
    /// The pipeline failed on a configuration of `bench graphs` or `bench ablation`.
    #[error("{config}: {source}")]
    Pipeline {
        /// The configuration.
        config: String,
        /// The pipeline's error.
        #[source]
        source: Box<concerto_pipeline::PipelineError>,
    },
}

/// `100 * (value - base) / base`, 0 when `base` is 0: the gap of a makespan above a bound.
fn pct_above(value: i64, base: i64) -> f64 {
    if base == 0 {
        0.0
    } else {
        100.0 * (value - base) as f64 / base as f64
    }
}
