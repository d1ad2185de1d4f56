//! The [`Graph`] itself: the DAG of ops with its producers and consumers kept sorted, its
//! accessors, and the [`GraphBuilder`] that only lets an op read ops added before it.

use petgraph::graph::{DiGraph, NodeIndex};
use petgraph::visit::EdgeRef;
use petgraph::Direction;
use serde::{Deserialize, Serialize};

use super::{LinkClass, Op, OpId, OpKind};
use crate::error::GraphError;

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

    /// The graph with `duration_ns` set on the ops of `overrides` (op, ns): measured costs
    /// that override the cost model ([`crate::Hardware::op_ns`]). The structure is unchanged.
    /// O(ops + overrides).
    pub fn with_durations(mut self, overrides: &[(OpId, u64)]) -> Graph {
        for &(v, ns) in overrides {
            if v.0 < self.len() {
                self.dag[NodeIndex::new(v.0)].duration_ns = Some(ns);
            }
        }
        self
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
