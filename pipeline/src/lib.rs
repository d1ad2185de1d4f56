//! # concerto-pipeline
//!
//! Concerto's optimisation pipeline as library code.

pub mod progress;

pub use progress::{Progress, Silent};
