//! Counts of a graph: ops, collectives by kind, links, flops and bytes moved.

use std::collections::BTreeMap;
use std::fmt;

use serde::Serialize;

use crate::ir::{CollectiveKind, Graph, LinkClass, OpKind};

/// What a graph holds, for summaries (`concerto model`, `concerto import`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Summary {
    /// The graph's name.
    pub name: String,
    /// Ops.
    pub ops: usize,
    /// Compute ops.
    pub compute_ops: usize,
    /// Collectives by kind (`all-reduce`, ...).
    pub collectives: BTreeMap<String, usize>,
    /// Link classes the collectives use (`intra-node`, `inter-node`).
    pub links: Vec<String>,
    /// Flops of the compute ops.
    pub flops: u64,
    /// Bytes the collectives move.
    pub collective_bytes: u64,
}

impl Summary {
    /// The summary of `graph`. Cost: O(ops).
    pub fn of(graph: &Graph) -> Self {
        let mut collectives = BTreeMap::new();
        let mut flops = 0u64;
        let mut bytes = 0u64;
        for op in graph.ops() {
            match op.kind {
                OpKind::Compute { flops: f, .. } => flops += f,
                OpKind::Collective { kind, bytes: b, .. } => {
                    *collectives.entry(kind.as_str().to_string()).or_default() += 1;
                    bytes += b;
                }
            }
        }
        Self {
            name: graph.name().to_string(),
            ops: graph.len(),
            compute_ops: graph.len() - graph.collective_count(),
            collectives,
            links: graph
                .link_classes()
                .into_iter()
                .map(|l: LinkClass| l.as_str().to_string())
                .collect(),
            flops,
            collective_bytes: bytes,
        }
    }
}

/// The summary as aligned lines (`graph`, `ops`, `collectives`, `links`, `flops`,
/// `comm bytes`).
impl fmt::Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let or_none = |v: Vec<String>| {
            if v.is_empty() {
                "none".to_string()
            } else {
                v.join(", ")
            }
        };
        let kinds: Vec<String> = CollectiveKind::ALL
            .iter()
            .filter_map(|k| {
                self.collectives
                    .get(k.as_str())
                    .map(|n| format!("{} {n}", k.as_str()))
            })
            .collect();
        writeln!(f, "graph        {}", self.name)?;
        writeln!(
            f,
            "ops          {} ({} compute, {} collectives)",
            self.ops,
            self.compute_ops,
            self.ops - self.compute_ops
        )?;
        writeln!(f, "collectives  {}", or_none(kinds))?;
        writeln!(f, "links        {}", or_none(self.links.clone()))?;
        writeln!(f, "flops        {:.3e}", self.flops as f64)?;
        writeln!(f, "comm bytes   {:.3e}", self.collective_bytes as f64)
    }
}
