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

use petgraph::graph::{DiGraph, NodeIndex};
use petgraph::visit::EdgeRef;
use petgraph::Direction;
use serde::{Deserialize, Serialize};

use crate::error::GraphError;

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
        self.shape.iter().product()
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
        self.outputs.iter().map(Tensor::bytes).sum()
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

/// A data dependency: the consumer reads output `tensor` of the producer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Dep {
    /// Output index in the producer (0 when the producer has at most one output).
    pub tensor: usize,
}

/// A training-step graph (see the module docs).
#[derive(Clone, Debug)]
pub struct Graph {
    name: String,
    /// Bytes resident for the whole step whatever the order: parameters, optimizer state and
    /// other inputs that no op of the graph produces (see [`crate::memory`]).
    resident_bytes: u64,
    dag: DiGraph<Op, Dep>,
    /// Producers of each op, each once, sorted (kept by the builder: a graph never changes
    /// after [`GraphBuilder::finish`]).
    preds: Vec<Vec<OpId>>,
    /// Consumers of each op, each once, sorted.
    succs: Vec<Vec<OpId>>,
}

/// Current version of the native JSON format.
pub const FORMAT_VERSION: u32 = 1;
/// The `format` field of the native JSON format.
pub const FORMAT_NAME: &str = "concerto-graph";

/// An input of an op in the JSON format: `[producer, tensor]` or just `producer`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
enum InputRecord {
    Op(usize),
    Tensor(usize, usize),
}

/// An op of the JSON format, as read.
#[derive(Deserialize)]
struct OpRecord {
    #[serde(flatten)]
    op: Op,
    #[serde(default)]
    inputs: Vec<InputRecord>,
}

/// The JSON format, as read.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct GraphRecord {
    format: String,
    version: u32,
    name: String,
    #[serde(default)]
    resident_bytes: u64,
    ops: Vec<OpRecord>,
}

/// An op of the JSON format, as written (borrowing the graph; the same fields as
/// [`OpRecord`]).
#[derive(Serialize)]
struct OpRecordRef<'a> {
    #[serde(flatten)]
    op: &'a Op,
    inputs: Vec<InputRecord>,
}

/// The JSON format, as written (the same fields as [`GraphRecord`]).
#[derive(Serialize)]
struct GraphRecordRef<'a> {
    format: &'static str,
    version: u32,
    name: &'a str,
    #[serde(skip_serializing_if = "is_zero")]
    resident_bytes: u64,
    ops: Vec<OpRecordRef<'a>>,
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}

/// `Serialize` writes the native JSON format's record (what [`Graph::to_json`] prints), so a
/// graph inside another serde structure has the same form as a graph file.
#[cfg(feature = "serde")]
impl Serialize for Graph {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.record().serialize(serializer)
    }
}

/// `Deserialize` reads the native JSON format's record and checks it as [`Graph::from_json`]
/// does (format, version, inputs earlier in program order). The record's `inputs` are
/// untagged and its ops flattened, so the data format must be self-describing (JSON, YAML,
/// ...).
#[cfg(feature = "serde")]
impl<'de> Deserialize<'de> for Graph {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Graph, D::Error> {
        let record = GraphRecord::deserialize(deserializer)?;
        Graph::from_record(record).map_err(serde::de::Error::custom)
    }
}

impl Graph {
    /// The graph's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Number of ops.
    pub fn len(&self) -> usize {
        self.dag.node_count()
    }

    /// Bytes resident for the whole step whatever the order (parameters, optimizer state,
    /// other inputs no op produces; see [`crate::memory`]). 0 unless the graph's source said.
    pub fn resident_bytes(&self) -> u64 {
        self.resident_bytes
    }

    /// Whether it has no op.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Op ids in program order.
    pub fn ids(&self) -> impl DoubleEndedIterator<Item = OpId> + ExactSizeIterator + Clone {
        (0..self.len()).map(OpId)
    }

    /// The op.
    pub fn op(&self, id: OpId) -> &Op {
        &self.dag[NodeIndex::new(id.0)]
    }

    /// Every op in program order.
    pub fn ops(&self) -> impl ExactSizeIterator<Item = &Op> + Clone {
        self.dag.raw_nodes().iter().map(|n| &n.weight)
    }

    /// Producers `op` reads, with the tensor index, sorted by producer.
    pub fn inputs(&self, id: OpId) -> Vec<(OpId, usize)> {
        let mut v: Vec<(OpId, usize)> = self
            .dag
            .edges_directed(NodeIndex::new(id.0), Direction::Incoming)
            .map(|e| (OpId(e.source().index()), e.weight().tensor))
            .collect();
        v.sort_unstable();
        v
    }

    /// Producers of `op` (each once), sorted. O(1): kept by the builder.
    pub fn predecessors(&self, id: OpId) -> &[OpId] {
        &self.preds[id.0]
    }

    /// Consumers of `op` (each once), sorted. O(1): kept by the builder.
    pub fn successors(&self, id: OpId) -> &[OpId] {
        &self.succs[id.0]
    }

    /// Every dependency `(producer, consumer)`, each pair once, sorted. O(deps), no sort.
    pub fn dependencies(&self) -> Vec<(OpId, OpId)> {
        let mut v = Vec::with_capacity(self.dag.edge_count());
        for (p, succs) in self.succs.iter().enumerate() {
            v.extend(succs.iter().map(|&c| (OpId(p), c)));
        }
        v
    }

    /// Number of dependencies, each producer-consumer pair once. O(ops).
    pub fn dependency_count(&self) -> usize {
        self.succs.iter().map(Vec::len).sum()
    }

    /// The op named `name`.
    pub fn find(&self, name: &str) -> Option<OpId> {
        self.ops().position(|o| o.name == name).map(OpId)
    }

    /// The underlying petgraph DAG (node `i` is op `i`).
    pub fn dag(&self) -> &DiGraph<Op, Dep> {
        &self.dag
    }

    /// Number of collectives.
    pub fn collective_count(&self) -> usize {
        self.ops().filter(|o| o.is_collective()).count()
    }

    /// The link classes of the graph's collectives, sorted (intra-node first).
    pub fn link_classes(&self) -> Vec<LinkClass> {
        let mut v: Vec<LinkClass> = self.ops().filter_map(Op::link).collect();
        v.sort_unstable();
        v.dedup();
        v
    }

    /// The native JSON format (see [`Graph::from_json`]).
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(&self.record()).expect("a graph always serialises")
    }

    /// The record that the native JSON format writes.
    fn record(&self) -> GraphRecordRef<'_> {
        GraphRecordRef {
            format: FORMAT_NAME,
            version: FORMAT_VERSION,
            name: &self.name,
            resident_bytes: self.resident_bytes,
            ops: self
                .ids()
                .map(|id| OpRecordRef {
                    op: self.op(id),
                    inputs: self
                        .inputs(id)
                        .into_iter()
                        .map(|(p, t)| {
                            if t == 0 {
                                InputRecord::Op(p.0)
                            } else {
                                InputRecord::Tensor(p.0, t)
                            }
                        })
                        .collect(),
                })
                .collect(),
        }
    }

    /// Reads the native JSON format, version 1:
    ///
    /// ```json
    /// {"format": "concerto-graph", "version": 1, "name": "tiny",
    ///  "ops": [
    ///    {"name": "fc", "kind": {"type": "compute", "class": "gemm", "flops": 2000, "bytes": 300,
    ///                           "gemm": {"b": 1, "m": 10, "n": 10, "k": 10}},
    ///     "outputs": [{"shape": [10, 10], "dtype": "bf16"}]},
    ///    {"name": "ar", "kind": {"type": "collective", "kind": "all-reduce", "bytes": 200,
    ///                           "group": 8, "link": "intra-node"},
    ///     "inputs": [0], "duration_ns": 1500}
    ///  ]}
    /// ```
    ///
    /// `inputs` lists producers by index, each earlier in the list (program order), as
    /// `p` or `[p, tensor]`; `duration_ns` overrides the cost model. Optional memory fields
    /// ([`crate::memory`]): `resident_bytes` at the top (bytes resident for the whole step:
    /// parameters, optimizer state; default 0) and `"live_out": true` on an op whose outputs are
    /// kept to the end of the step (default false). Errors name the op and the line and column
    /// of malformed JSON.
    pub fn from_json(text: &str) -> Result<Graph, GraphError> {
        let record: GraphRecord = serde_json::from_str(text).map_err(|e| GraphError::Json {
            line: e.line(),
            column: e.column(),
            message: e.to_string(),
        })?;
        Graph::from_record(record)
    }

    /// The graph of a record read from the native JSON format, checked (see
    /// [`Graph::from_json`]).
    fn from_record(record: GraphRecord) -> Result<Graph, GraphError> {
        if record.format != FORMAT_NAME {
            return Err(GraphError::Format {
                found: record.format,
            });
        }
        if record.version != FORMAT_VERSION {
            return Err(GraphError::Version {
                found: record.version,
                supported: FORMAT_VERSION,
            });
        }
        let mut b = GraphBuilder::new(record.name);
        b.set_resident_bytes(record.resident_bytes);
        for r in record.ops {
            let inputs: Vec<(OpId, usize)> = r
                .inputs
                .iter()
                .map(|i| match *i {
                    InputRecord::Op(p) => (OpId(p), 0),
                    InputRecord::Tensor(p, t) => (OpId(p), t),
                })
                .collect();
            b.try_add(r.op, &inputs)?;
        }
        Ok(b.finish())
    }
}

/// Builds a [`Graph`] in program order.
#[derive(Clone, Debug)]
pub struct GraphBuilder {
    graph: Graph,
    names: std::collections::BTreeMap<String, OpId>,
}

impl GraphBuilder {
    /// An empty graph named `name`.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            graph: Graph {
                name: name.into(),
                resident_bytes: 0,
                dag: DiGraph::new(),
                preds: Vec::new(),
                succs: Vec::new(),
            },
            names: Default::default(),
        }
    }

    /// Adds `op` reading output 0 of each of `inputs`. Panics on an invalid input; use
    /// [`GraphBuilder::try_add`] for untrusted data.
    pub fn add(&mut self, op: Op, inputs: &[OpId]) -> OpId {
        let inputs: Vec<(OpId, usize)> = inputs.iter().map(|&i| (i, 0)).collect();
        match self.try_add(op, &inputs) {
            Ok(id) => id,
            Err(e) => panic!("invalid op in a model builder: {e}"),
        }
    }

    /// Adds `op` reading `(producer, output index)` pairs. Each producer must already be in
    /// the graph and have that output (an op without declared outputs may be read as output
    /// 0: a pure ordering dependency); names must be unique; a collective needs a group of at
    /// least 2 ranks.
    pub fn try_add(&mut self, op: Op, inputs: &[(OpId, usize)]) -> Result<OpId, GraphError> {
        let id = OpId(self.graph.len());
        if op.name.is_empty() {
            return Err(GraphError::InvalidOp {
                op: format!("#{}", id.0),
                reason: "empty name".into(),
            });
        }
        if self.names.contains_key(&op.name) {
            return Err(GraphError::DuplicateName { name: op.name });
        }
        if let OpKind::Collective { group, .. } = op.kind {
            if group < 2 {
                return Err(GraphError::InvalidOp {
                    op: op.name,
                    reason: format!("a collective needs a group of at least 2 ranks, not {group}"),
                });
            }
        }
        for &(p, t) in inputs {
            if p.0 >= id.0 {
                return Err(GraphError::ForwardInput {
                    op: op.name,
                    input: p.0,
                    position: id.0,
                });
            }
            let producer = self.graph.op(p);
            if t > 0 && t >= producer.outputs.len() {
                return Err(GraphError::MissingTensor {
                    op: op.name,
                    producer: producer.name.clone(),
                    tensor: t,
                    outputs: producer.outputs.len(),
                });
            }
        }
        self.names.insert(op.name.clone(), id);
        let node = self.graph.dag.add_node(op);
        debug_assert_eq!(node.index(), id.0);
        let mut preds: Vec<OpId> = Vec::with_capacity(inputs.len());
        for &(p, t) in inputs {
            self.graph
                .dag
                .add_edge(NodeIndex::new(p.0), node, Dep { tensor: t });
            preds.push(p);
        }
        preds.sort_unstable();
        preds.dedup();
        // `id` is the largest op so far: each producer's consumers stay sorted.
        for p in &preds {
            self.graph.succs[p.0].push(id);
        }
        self.graph.preds.push(preds);
        self.graph.succs.push(Vec::new());
        Ok(id)
    }

    /// The op added as `id`.
    pub fn op(&self, id: OpId) -> &Op {
        self.graph.op(id)
    }

    /// Sets [`Graph::resident_bytes`] (a rewrite of a graph copies its source's).
    pub fn set_resident_bytes(&mut self, bytes: u64) -> &mut Self {
        self.graph.resident_bytes = bytes;
        self
    }

    /// Ops so far.
    pub fn len(&self) -> usize {
        self.graph.len()
    }

    /// Whether no op was added.
    pub fn is_empty(&self) -> bool {
        self.graph.is_empty()
    }

    /// The graph.
    pub fn finish(self) -> Graph {
        self.graph
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tiny() -> Graph {
        let mut b = GraphBuilder::new("tiny");
        let fc = b.add(
            Op::gemm(
                "fc",
                GemmShape {
                    b: 1,
                    m: 64,
                    n: 64,
                    k: 64,
                },
                DType::Bf16,
            ),
            &[],
        );
        let ar = b.add(
            Op::collective(
                "ar",
                CollectiveKind::AllReduce,
                8192,
                8,
                LinkClass::IntraNode,
            )
            .with_output(Tensor::new(vec![64, 64], DType::Bf16)),
            &[fc],
        );
        let mut add = Op::compute("add", ComputeClass::Elementwise, 4096, 24576);
        add.duration_ns = Some(700);
        b.try_add(add, &[(ar, 0), (fc, 0)]).unwrap();
        b.finish()
    }

    #[test]
    fn json_round_trip_keeps_everything() {
        let g = tiny();
        let text = g.to_json();
        let back = Graph::from_json(&text).unwrap();
        assert_eq!(back.name(), "tiny");
        assert_eq!(back.len(), 3);
        for id in g.ids() {
            assert_eq!(g.op(id), back.op(id));
            assert_eq!(g.inputs(id), back.inputs(id));
        }
        assert_eq!(back.to_json(), text);
    }

    #[test]
    fn bad_json_names_line_and_column() {
        let e = Graph::from_json("{\"format\": \"concerto-graph\",\n \"version\": 1,\n oops}")
            .unwrap_err();
        assert!(matches!(e, GraphError::Json { line: 3, .. }), "{e}");
    }

    #[test]
    fn forward_inputs_and_bad_versions_are_rejected() {
        let text = r#"{"format":"concerto-graph","version":1,"name":"g","ops":[
            {"name":"a","kind":{"type":"compute","class":"other","flops":0,"bytes":0},"inputs":[1]},
            {"name":"b","kind":{"type":"compute","class":"other","flops":0,"bytes":0}}]}"#;
        let e = Graph::from_json(text).unwrap_err();
        assert!(e.to_string().contains("`a`"), "{e}");
        let text = r#"{"format":"concerto-graph","version":7,"name":"g","ops":[]}"#;
        assert!(matches!(
            Graph::from_json(text).unwrap_err(),
            GraphError::Version { found: 7, .. }
        ));
        let text = r#"{"format":"concerto-graph","version":1,"name":"g","ops":[
            {"name":"a","kind":{"type":"collective","kind":"all-reduce","bytes":8,"group":1,"link":"intra-node"}}]}"#;
        assert!(Graph::from_json(text)
            .unwrap_err()
            .to_string()
            .contains("group"));
        let text = r#"{"format":"concerto-graph","version":1,"name":"g","ops":[
            {"name":"a","kind":{"type":"compute","class":"other","flops":0,"bytes":0}},
            {"name":"a","kind":{"type":"compute","class":"other","flops":0,"bytes":0}}]}"#;
        assert!(matches!(
            Graph::from_json(text).unwrap_err(),
            GraphError::DuplicateName { .. }
        ));
    }

    #[test]
    fn accessors_follow_the_edges() {
        let g = tiny();
        assert_eq!(g.predecessors(OpId(2)), vec![OpId(0), OpId(1)]);
        assert_eq!(g.successors(OpId(0)), vec![OpId(1), OpId(2)]);
        assert_eq!(g.collective_count(), 1);
        assert_eq!(g.link_classes(), vec![LinkClass::IntraNode]);
        assert_eq!(g.find("add"), Some(OpId(2)));
        assert_eq!(g.dependencies().len(), 3);
    }
}
