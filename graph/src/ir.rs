//! The graph IR: ops (compute and collective), their output tensors and data dependencies.
//!
//! A [`Graph`] is a DAG kept in a [`petgraph`] `DiGraph`: node `i` is op `i`, and ops are
//! numbered in *program order* (the order a framework would issue them). An edge `a -> b`
//! carries the index of the output tensor of `a` that `b` reads. [`GraphBuilder`] only lets
//! an op read ops added before it, so every graph it builds is acyclic and its program order
//! is a topological order; [`Graph::from_json`] checks the same of a file.
//!
//! Costs are not stored here: an op carries what a cost model needs (flops, bytes moved, GEMM
//! shape, collective bytes, group size, link class) and a
//! [`Hardware`](crate::hardware::Hardware) profile turns it into integer nanoseconds.

mod graph;
mod json;

use serde::{Deserialize, Serialize};

pub use graph::{Dep, Graph, GraphBuilder};
pub use json::{FORMAT_NAME, FORMAT_VERSION};

/// Index of an op in a [`Graph`] (its position in program order).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct OpId(pub usize);

impl OpId {
    /// The index as `usize`.
    pub fn index(self) -> usize {
        self.0
    }
}

/// Element type of a tensor.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum DType {
    /// 32-bit float.
    F32,
    /// bfloat16.
    Bf16,
    /// IEEE half.
    F16,
    /// 8-bit float (e4m3 or e5m2).
    F8,
    /// 64-bit float.
    F64,
    /// 32-bit integer.
    S32,
    /// 64-bit integer.
    S64,
    /// 8-bit integer / byte.
    S8,
    /// Boolean (one byte).
    Pred,
}

impl DType {
    /// Bytes per element.
    pub fn size(self) -> u64 {
        match self {
            DType::F64 | DType::S64 => 8,
            DType::F32 | DType::S32 => 4,
            DType::Bf16 | DType::F16 => 2,
            DType::F8 | DType::S8 | DType::Pred => 1,
        }
    }
}

/// An output tensor of an op.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tensor {
    /// Dimensions (per device, after partitioning).
    pub shape: Vec<u64>,
    /// Element type.
    pub dtype: DType,
}

impl Tensor {
    /// A tensor of the given shape and type.
    pub fn new(shape: impl Into<Vec<u64>>, dtype: DType) -> Self {
        Self {
            shape: shape.into(),
            dtype,
        }
    }

    /// Number of elements.
    pub fn elements(&self) -> u64 {
        self.shape.iter().fold(1u64, |n, &d| n.saturating_mul(d))
    }

    /// Size in bytes.
    pub fn bytes(&self) -> u64 {
        self.elements().saturating_mul(self.dtype.size())
    }
}

/// What kind of computation a compute op does (it picks the cost model's formula).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ComputeClass {
    /// A (batched) matrix multiply or a convolution lowered to one.
    Gemm,
    /// Fused attention (softmax(QK^T)V).
    Attention,
    /// Elementwise (activation, add, scale, optimizer update).
    Elementwise,
    /// A reduction (sum, max, loss).
    Reduction,
    /// Layer or batch normalisation.
    Norm,
    /// Anything else (data movement, gathers, custom calls).
    Other,
}

/// The shape of a matrix multiply: `b` independent `(m x k) * (k x n)` products.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct GemmShape {
    /// Batch count.
    pub b: u64,
    /// Rows of the result.
    pub m: u64,
    /// Columns of the result.
    pub n: u64,
    /// Contracted dimension.
    pub k: u64,
}

impl GemmShape {
    /// `2 b m n k`.
    pub fn flops(&self) -> u64 {
        2u64.saturating_mul(self.b)
            .saturating_mul(self.m)
            .saturating_mul(self.n)
            .saturating_mul(self.k)
    }
}

/// Collective operations.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum CollectiveKind {
    /// Every rank ends with the reduction of every rank's buffer.
    AllReduce,
    /// Every rank ends with the concatenation of every rank's shard.
    AllGather,
    /// Every rank ends with its shard of the reduction.
    ReduceScatter,
    /// Every rank sends a distinct shard to every other rank.
    AllToAll,
    /// Point-to-point transfer (pipeline stages, collective-permute).
    SendRecv,
    /// One rank's buffer to every rank.
    Broadcast,
}

impl CollectiveKind {
    /// The name used in files and tables (`all-reduce`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            CollectiveKind::AllReduce => "all-reduce",
            CollectiveKind::AllGather => "all-gather",
            CollectiveKind::ReduceScatter => "reduce-scatter",
            CollectiveKind::AllToAll => "all-to-all",
            CollectiveKind::SendRecv => "send-recv",
            CollectiveKind::Broadcast => "broadcast",
        }
    }

    /// Every kind, in a fixed order.
    pub const ALL: [CollectiveKind; 6] = [
        CollectiveKind::AllReduce,
        CollectiveKind::AllGather,
        CollectiveKind::ReduceScatter,
        CollectiveKind::AllToAll,
        CollectiveKind::SendRecv,
        CollectiveKind::Broadcast,
    ];
}

/// Which links a collective crosses. Each class present becomes its own channel (stream).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LinkClass {
    /// Every rank of the group is in one node (NVLink / NVSwitch).
    IntraNode,
    /// The group spans nodes (InfiniBand / RoCE).
    InterNode,
}

impl LinkClass {
    /// `intra-node` or `inter-node`.
    pub fn as_str(self) -> &'static str {
        match self {
            LinkClass::IntraNode => "intra-node",
            LinkClass::InterNode => "inter-node",
        }
    }
}

/// What an op does.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum OpKind {
    /// Work on the compute stream.
    Compute {
        /// Which formula costs it.
        class: ComputeClass,
        /// Floating-point operations.
        flops: u64,
        /// Bytes read and written in device memory.
        bytes: u64,
        /// The matrix-multiply shape, for GEMMs and attention (looked up in GEMM tables).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        gemm: Option<GemmShape>,
    },
    /// Work on a communication channel.
    Collective {
        /// Which collective.
        kind: CollectiveKind,
        /// Bytes of the collective's result buffer per device.
        bytes: u64,
        /// Ranks in the group.
        group: u32,
        /// Links crossed.
        link: LinkClass,
    },
}

/// One op of a graph.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Op {
    /// Unique name.
    pub name: String,
    /// What it does.
    pub kind: OpKind,
    /// Output tensors.
    #[serde(default)]
    pub outputs: Vec<Tensor>,
    /// A duration that overrides the cost model (measured, or imported with the graph).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ns: Option<u64>,
    /// The element type a GEMM or attention kernel reads, when the cost model should not
    /// take its output's: XLA's dots read bf16 and often write f32
    /// (`preferred_element_type`), and it is the operands' type that picks the GEMM table and
    /// the tensor-core peak. `None`: the first output's type (bf16 without outputs). JSON:
    /// optional `"operand_dtype": "bf16"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operand_dtype: Option<DType>,
    /// Whether the op's outputs are outputs of the step (updated weights, gradients, the
    /// loss), kept in memory until the step ends instead of being freed after their last
    /// consumer (see [`crate::memory`]). JSON: optional `"live_out": true`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub live_out: bool,
    /// Earliest start (ns from the start of the step): a kernel from a profiler trace starts
    /// no earlier than the CPU launched it. 0 (default) for ops of compiled or built graphs.
    /// The simulator, the list schedulers and the lowering to an RCPSP (as a release date)
    /// respect it. JSON: optional `"release_ns": 12000`.
    #[serde(default, skip_serializing_if = "is_default")]
    pub release_ns: u64,
    /// Which stream of its kind the op runs on ([`crate::plan::Stream::of`]): 0 (default) the
    /// compute stream, or its link class's channel; `n > 0` a further compute stream or channel
    /// of that link class, for graphs from profiler traces that used several (a side stream
    /// for copies, a second NCCL communicator). JSON: optional `"lane": 1`.
    #[serde(default, skip_serializing_if = "is_default")]
    pub lane: u16,
}

/// Whether a field has its default (serde's `skip_serializing_if`).
fn is_default<T: Default + PartialEq>(x: &T) -> bool {
    *x == T::default()
}

impl Op {
    /// A compute op.
    pub fn compute(name: impl Into<String>, class: ComputeClass, flops: u64, bytes: u64) -> Self {
        Self {
            name: name.into(),
            kind: OpKind::Compute {
                class,
                flops,
                bytes,
                gemm: None,
            },
            outputs: Vec::new(),
            duration_ns: None,
            operand_dtype: None,
            live_out: false,
            release_ns: 0,
            lane: 0,
        }
    }

    /// A matrix multiply of the given shape reading and writing `dtype` values.
    pub fn gemm(name: impl Into<String>, shape: GemmShape, dtype: DType) -> Self {
        let s = dtype.size();
        let bytes = shape.b * (shape.m * shape.k + shape.k * shape.n + shape.m * shape.n) * s;
        Self {
            name: name.into(),
            kind: OpKind::Compute {
                class: ComputeClass::Gemm,
                flops: shape.flops(),
                bytes,
                gemm: Some(shape),
            },
            outputs: vec![Tensor::new(vec![shape.b, shape.m, shape.n], dtype)],
            duration_ns: None,
            operand_dtype: None,
            live_out: false,
            release_ns: 0,
            lane: 0,
        }
    }

    /// A collective.
    pub fn collective(
        name: impl Into<String>,
        kind: CollectiveKind,
        bytes: u64,
        group: u32,
        link: LinkClass,
    ) -> Self {
        Self {
            name: name.into(),
            kind: OpKind::Collective {
                kind,
                bytes,
                group,
                link,
            },
            outputs: Vec::new(),
            duration_ns: None,
            operand_dtype: None,
            live_out: false,
            release_ns: 0,
            lane: 0,
        }
    }

    /// Adds an output tensor.
    pub fn with_output(mut self, tensor: Tensor) -> Self {
        self.outputs.push(tensor);
        self
    }

    /// Sets the op's release time ([`Op::release_ns`]).
    pub fn released_at(mut self, ns: u64) -> Self {
        self.release_ns = ns;
        self
    }

    /// Puts the op on lane `lane` of its kind's streams ([`Op::lane`]).
    pub fn on_lane(mut self, lane: u16) -> Self {
        self.lane = lane;
        self
    }

    /// Marks the op's outputs as outputs of the step ([`Op::live_out`]).
    pub fn kept_to_end(mut self) -> Self {
        self.live_out = true;
        self
    }

    /// Whether it runs on a communication channel.
    pub fn is_collective(&self) -> bool {
        matches!(self.kind, OpKind::Collective { .. })
    }

    /// The link class of a collective, `None` for compute.
    pub fn link(&self) -> Option<LinkClass> {
        match self.kind {
            OpKind::Collective { link, .. } => Some(link),
            OpKind::Compute { .. } => None,
        }
    }

    /// Bytes of all outputs.
    pub fn output_bytes(&self) -> u64 {
        self.outputs
            .iter()
            .fold(0u64, |n, t| n.saturating_add(t.bytes()))
    }

    /// Bytes the op allocates when it starts (see [`crate::memory`]): its declared outputs;
    /// for a collective that declares none, its result buffer ([`OpKind::Collective`]'s
    /// `bytes`).
    pub fn buffer_bytes(&self) -> u64 {
        match self.kind {
            OpKind::Collective { bytes, .. } if self.outputs.is_empty() => bytes,
            _ => self.output_bytes(),
        }
    }
}

#[cfg(test)]
mod tests;
