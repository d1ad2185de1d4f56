//! Collectives: which opcodes are collectives, and one collective op per instruction (group
//! size and link class from the replica groups).

use concerto_graph::{CollectiveKind, LinkClass, Op, OpId};

use super::{tensor, Deps, Lowerer};
use crate::hlo::ast::{Instruction, ReplicaGroups, Shape};
use crate::hlo::HloError;

/// The collective kind of an opcode, and whether it is the `-start` half of an async pair.
pub(super) fn collective_kind(opcode: &str) -> Option<(CollectiveKind, bool)> {
    let (base, start) = match opcode.strip_suffix("-start") {
        Some(b) => (b, true),
        None => (opcode, false),
    };
    let kind = match base {
        "all-reduce" => CollectiveKind::AllReduce,
        "all-gather" => CollectiveKind::AllGather,
        "reduce-scatter" => CollectiveKind::ReduceScatter,
        "all-to-all" | "ragged-all-to-all" => CollectiveKind::AllToAll,
        "collective-permute" | "send" => CollectiveKind::SendRecv,
        "collective-broadcast" => CollectiveKind::Broadcast,
        _ => return None,
    };
    Some((kind, start))
}

impl<'m> Lowerer<'m> {
    /// The collective an instruction runs, with its kind: the instruction itself for a
    /// collective opcode (`all-reduce`, `all-gather-start`, ...), the wrapped collective for
    /// an `async-start` whose called computation's root is one (XLA's GPU compiler wraps
    /// `reduce-scatter`, `all-to-all` and some `all-gather`s so); `None` otherwise.
    pub(super) fn collective_of(
        &self,
        i: &'m Instruction,
    ) -> Result<Option<(&'m Instruction, CollectiveKind)>, HloError> {
        if let Some((kind, _)) = collective_kind(&i.opcode) {
            return Ok(Some((i, kind)));
        }
        if i.opcode != "async-start" {
            return Ok(None);
        }
        let wrapped = self.called(i, "calls")?;
        Ok(wrapped.instructions.get(wrapped.root).and_then(|r| {
            collective_kind(&r.opcode)
                .filter(|(_, start)| !start)
                .map(|(kind, _)| (r, kind))
        }))
    }

    /// One collective op named `name` for `i` reading `deps`, or `None` for a group of one
    /// rank (which moves nothing: the value is the operand's).
    pub(super) fn collective(
        &mut self,
        i: &Instruction,
        kind: CollectiveKind,
        deps: &Deps,
        name: &str,
    ) -> Result<Option<OpId>, HloError> {
        // The result of an async start: `all-reduce-start` has the result's shape; the others
        // are `(operands, result, context...)`: element 1.
        let shape = match &i.shape {
            Shape::Tuple(v) if i.opcode.ends_with("-start") && i.opcode != "all-reduce-start" => {
                v.get(1).unwrap_or(&i.shape)
            }
            s => s,
        };
        let groups: Vec<Vec<u64>> = if let Some(a) = i.attribute("source_target_pairs") {
            match a.replica_groups()? {
                ReplicaGroups::Explicit(pairs) => pairs,
                other => other.expand(),
            }
        } else if let Some(a) = i.attribute("replica_groups") {
            let g = a.replica_groups()?.expand();
            if g.is_empty() {
                vec![(0..u64::from(self.devices)).collect()]
            } else {
                g
            }
        } else {
            vec![(0..u64::from(self.devices)).collect()]
        };
        let group = groups.first().map_or(1, Vec::len) as u32;
        let group = if kind == CollectiveKind::SendRecv {
            group.max(2)
        } else {
            group
        };
        if group < 2 {
            return Ok(None);
        }
        let per_node = u64::from(self.options.gpus_per_node.max(1));
        let inter = groups.iter().any(|g| {
            g.first()
                .is_some_and(|f| g.iter().any(|d| d / per_node != f / per_node))
        });
        let link = if inter {
            LinkClass::InterNode
        } else {
            LinkClass::IntraNode
        };
        let mut op = Op::collective(name, kind, shape.bytes().max(1), group, link);
        op.outputs.extend(tensor(shape));
        Ok(Some(self.add(op, deps)))
    }
}
