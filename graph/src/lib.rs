//! # concerto-graph
//!
//! The part of Concerto that knows deep learning: a training-step graph IR ([`ir`]), measured
//! hardware cost models ([`hardware`]), lowering to an RCPSP ([`lower`]), stream plans and the
//! event simulator ([`plan`], [`simulate()`]), trace export ([`trace`]), and baseline
//! schedulers ([`baselines`]). The model builders with parallel plans that make such graphs are
//! the `concerto-models` crate; the optimisation pipeline that uses them is the
//! `concerto-pipeline` crate.
//!
//! ## Walkthrough
//!
//! ```
//! use concerto_graph::{baselines, simulate, CollectiveKind, ComputeClass, GemmShape, DType};
//! use concerto_graph::{GraphBuilder, Hardware, LinkClass, Op};
//!
//! // Backward of two layers: each weight gradient is all-reduced over 8 GPUs, and the
//! // program waits for each all-reduce before it moves on (eager data parallelism).
//! let mut b = GraphBuilder::new("two-layers");
//! let shape = GemmShape { b: 1, m: 4096, n: 4096, k: 4096 };
//! let g1 = b.add(Op::gemm("layer1.wgrad", shape, DType::Bf16), &[]);
//! let ar1 = b.add(
//!     Op::collective("layer1.allreduce", CollectiveKind::AllReduce, 32 << 20, 8, LinkClass::IntraNode),
//!     &[g1],
//! );
//! let u1 = b.add(Op::compute("layer1.adam", ComputeClass::Elementwise, 0, 256 << 20), &[ar1]);
//! let g0 = b.add(Op::gemm("layer0.wgrad", shape, DType::Bf16), &[g1]);
//! let ar0 = b.add(
//!     Op::collective("layer0.allreduce", CollectiveKind::AllReduce, 32 << 20, 8, LinkClass::IntraNode),
//!     &[g0],
//! );
//! b.add(Op::compute("layer0.adam", ComputeClass::Elementwise, 0, 256 << 20), &[ar0, u1]);
//! let graph = b.finish();
//!
//! // Cost it on an H100 (measured GEMM and collective tables), then time two plans.
//! let hw = Hardware::h100();
//! let d = hw.durations(&graph);
//! let eager = simulate(&graph, &baselines::program_order(&graph)?, &d, hw.contention)?;
//! let lhs = simulate(&graph, &baselines::lhs(&graph, &d)?, &d, hw.contention)?;
//! // The list scheduler runs layer 0's GEMM while layer 1's all-reduce is in flight.
//! assert!(lhs.makespan < eager.makespan);
//! assert!(lhs.exposed_comm_ns(&graph) < eager.exposed_comm_ns(&graph));
//! # Ok::<(), concerto_graph::GraphError>(())
//! ```

pub mod baselines;
pub mod bounds;
mod error;
pub mod fingerprint;
pub mod hardware;
pub mod horizon;
pub mod ir;
pub mod list;
pub mod lower;
pub mod memory;
pub mod plan;
pub mod simulate;
pub mod summary;
pub mod trace;

pub use error::GraphError;
pub use hardware::Hardware;
pub use ir::{
    CollectiveKind, ComputeClass, DType, Dep, GemmShape, Graph, GraphBuilder, LinkClass, Op, OpId,
    OpKind, Tensor,
};
pub use plan::{Stream, StreamPlan};
pub use simulate::{simulate, Timeline};
