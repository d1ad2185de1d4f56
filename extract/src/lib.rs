//! # concerto-extract
//!
//! Thin importers that turn exported deep-learning graphs into [`concerto_graph::Graph`]s:
//! XLA HLO text modules ([`hlo`]), as `XLA_FLAGS=--xla_dump_to=DIR --xla_dump_hlo_as_text`
//! writes them for any JAX or TensorFlow step, and PyTorch profiler (Kineto) traces
//! ([`kineto`]) of measured steps; and the measured kernel times of a `jax.profiler` trace as
//! the costs of a module's ops ([`profile`]).

pub mod fidelity;
pub mod hlo;
pub mod kineto;
pub mod profile;
pub mod read;

pub use read::{read_graph, read_imported, Imported, ReadError};
