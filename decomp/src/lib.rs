//! # concerto-decomp
//!
//! Auto-decomposition (Cheng et al., "Concerto", ASPLOS 2025, §4): a synchronous collective
//! whose result the next op needs cannot be hidden by reordering; splitting the computation
//! around it into `N` chunks lets chunk `i`'s collective overlap chunk `i + 1`'s compute.
//!
//! - [`critical`]: the collectives a schedule leaves exposed;
//! - [`rules`]: SPMD split rules per op and the chunk ops, costed from the measured tables;
//! - [`context`]: the ops around a collective that split along one axis;
//! - [`rewrite`]: the rewrite and the independent graph check run after every rewrite;
//! - [`ring`]: collective matmul (Wang et al., ASPLOS 2023), the other family of
//!   decompositions: an all-gather or reduce-scatter looped with its GEMM as a ring;
//! - [`select`]: choosing decompositions by evaluating schedules;
//! - [`fuse`]: collective fusion (bucketing), its independent check, and a search for bucket
//!   boundaries by evaluating schedules.

pub mod context;
pub mod critical;
mod error;
pub mod fuse;
pub mod joint;
pub mod rewrite;
mod rewritten;
pub mod ring;
pub mod rules;
pub mod select;
mod split;

pub use error::DecompError;
pub use split::{Axis, Context, Family};
