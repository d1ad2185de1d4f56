//! The alpha-beta ring model of a collective (see the [`super`] module docs for its table).

use super::NS_PER_S;
use crate::ir::CollectiveKind;

/// The ring model's bandwidth term factor, in units of `B / bw`.
pub(super) fn ring_factor(kind: CollectiveKind, n: f64) -> f64 {
    match kind {
        CollectiveKind::AllReduce => 2.0 * (n - 1.0) / n,
        CollectiveKind::AllGather | CollectiveKind::AllToAll => (n - 1.0) / n,
        CollectiveKind::ReduceScatter => n - 1.0,
        CollectiveKind::SendRecv | CollectiveKind::Broadcast => 1.0,
    }
}

/// An alpha-beta ring link.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Ring {
    /// Bus bandwidth per GPU, bytes/s.
    pub(super) bytes_per_sec: f64,
    /// Latency per ring step, ns.
    pub(super) alpha_ns: f64,
}

impl Ring {
    pub(super) fn ns(&self, kind: CollectiveKind, bytes: u64, n: u32) -> f64 {
        let nf = f64::from(n.max(1));
        let steps = |s: f64| s * self.alpha_ns;
        let beta = ring_factor(kind, nf) * bytes as f64 * NS_PER_S / self.bytes_per_sec;
        beta + match kind {
            CollectiveKind::AllReduce => steps(2.0 * (nf - 1.0)),
            CollectiveKind::AllGather
            | CollectiveKind::AllToAll
            | CollectiveKind::ReduceScatter => steps(nf - 1.0),
            CollectiveKind::SendRecv => steps(1.0),
            CollectiveKind::Broadcast => steps(nf.log2().ceil()),
        }
    }
}
