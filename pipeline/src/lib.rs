//! # concerto-pipeline
//!
//! Concerto's optimisation pipeline as library code: schedule a training-step graph (S),
//! decompose computation around critical collectives (S+AD), decide decompositions and order
//! together (joint), fuse collectives (S+F), and measure robustness to timing noise, with one
//! policy per decision ([`policy::keep`]) and typed reports ([`Report`]).
//!
//! Solvers come in as trait objects ([`Solvers`]: a [`concerto_rcpsp::Solver`] for the
//! windows, a [`concerto_rcpsp::ModalSolver`] for joint mode, a [`concerto_rcpsp::Selector`]
//! for the decomposition choice), so this crate depends on no backend: take them from
//! `concerto_backends::registry()` or bring your own.
//!
//! ```
//! use std::sync::Arc;
//! use concerto_models::{GptConfig, Model, Parallel};
//! use concerto_graph::Hardware;
//! use concerto_pipeline::{Config, Pipeline, Row, Silent, Solvers};
//! use concerto_rcpsp::Heuristic;
//!
//! let gpt = GptConfig { layers: 2, ..GptConfig::default() };
//! let parallel = Parallel { tp: 8, ..Parallel::default() };
//! let graph = concerto_models::build(&Model::Gpt(gpt), &parallel)?;
//! let mut config = Config::new(Hardware::h100());
//! config.schedule.time_limit = Some(std::time::Duration::from_secs(2));
//! let pipeline = Pipeline::new(config, Solvers::new(Arc::new(Heuristic::default())));
//! let report = pipeline.run(&graph, &Silent)?;
//! assert_eq!(report.kept, Row::S);
//! // Concerto's plan is never behind a baseline.
//! assert!(report.s_ns() <= report.schedule.best_baseline_ns());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod analysis;
pub mod error;
pub mod evaluate;
pub mod noise;
pub mod pareto;
pub mod pipeline;
pub mod policy;
pub mod progress;
pub mod schedule;
pub mod solve;
pub mod summary;
pub mod table;

pub use concerto_decomp::fuse::{FuseConfig, Fused};
pub use concerto_decomp::select::{Decomposition, Scored, SelectConfig, Selected};
pub use error::PipelineError;
pub use evaluate::{evaluate, Evaluation};
pub use noise::{noise, NoiseStats};
pub use pareto::{pareto, Pareto, ParetoPoint};
pub use pipeline::{
    Config, Decompose, Decomposed, Families, Fusion, Joint, Measured, MemoryBudget, NoiseConfig,
    Pipeline, Report, Row, Solvers,
};
pub use progress::{Progress, Silent};
pub use schedule::{
    schedule, ModuleSchedule, Optimized, Origin, ScheduleConfig, Scheduled, Scheduler,
};
pub use summary::{Comparison, DecompositionSummary, ReportSummary, SchedulerSummary};

#[cfg(test)]
mod tests;
