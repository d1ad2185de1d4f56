//! Collective fusion (bucketing): merging small collectives into one call.
//!
//! Every collective call pays a latency that does not depend on its size (kernel launch, NCCL
//! protocol steps, the ring's per-hop latency): on the measured H100 tables an 8 KiB
//! all-reduce runs at a tiny fraction of the link's bandwidth. Collectives of the same kind
//! over the same group size and link class can be merged into one call over the concatenation
//! of their buffers, which pays that latency once, at the price of waiting for the producers
//! of every member before any of it starts (and of every consumer waiting for the whole
//! bucket).
//!
//! - [`fuse_ops`] is the rewrite: each group of at least 2 collectives becomes one bucket op;
//!   every other op is copied. The result has passed [`check_fusion`].
//! - [`check_fusion`] is the independent check, sharing no code path with [`fuse_ops`].
//! - [`fuse_by`] is the search: it chooses the bucket boundaries by evaluating schedules with
//!   a judge it is given; [`fuse`] judges by the best baseline schedule, [`fuse_under`] by the
//!   plan of a schedule already found (concerto's), each candidate keeping its order
//!   ([`mapped_order`]).
//!
//! # The rewrite
//!
//! A bucket is a collective of its members' kind, group and link class, named
//! `bucket(<first>..<last>)` after its first and last member in program order (with `#2`,
//! `#3`, ... appended should that name be taken), whose bytes are the sum of the members'
//! and whose outputs are the members' outputs concatenated in program order. It reads the
//! union of its members' producers, and each consumer of a member reads the bucket instead,
//! at the member's output index plus the member's offset in the concatenation (the outputs
//! of the members before it), so it keeps reading the same tensor. A member without declared
//! outputs contributes none, and a read of it (a pure ordering dependency, output 0) becomes
//! a read of output 0 of the bucket. A bucket has no duration override: the cost model costs
//! the merged call, which is the point (members' overrides are dropped).
//!
//! Merging must not create a cycle: a group is rejected when one member depends on another,
//! directly or through other ops (a consumer of member `a` feeds member `b`), and a set of
//! groups is rejected when buckets would depend on each other in a cycle (a consumer of
//! bucket `A` feeds bucket `B` and a consumer of `B` feeds `A`), each an
//! [`DecompError::InvalidContext`] naming the ops. The result's program order is a stable
//! topological order (Kahn's algorithm, taking the ready op first in the original program
//! order, a bucket at the position of its last member): ops keep their original order except
//! where a consumer of an early member sat before the last member, and moves after the bucket.
//!
//! Cost: [`fuse_ops`] is O((ops + deps) log ops) plus, for the cycle check, one walk over
//! the ops between the first and the last member of each group (O(span + deps in it));
//! [`check_fusion`] is O((ops + deps) log deps) in the size of both graphs.
//!
//! # The search
//!
//! [`fuse`] is a greedy, left-to-right boundary search evaluated by schedules. The
//! collectives of each class (kind, group size, link class) are taken in program order, one
//! class after the other. A bucket opens at the first collective not yet considered and is
//! extended by the next collective of its class while the graph with the extended bucket
//! (and every bucket kept before) schedules no longer than with the bucket as it was (`<=`:
//! at equal makespan fewer calls are preferred); it closes when an extension would schedule
//! longer, would form a cycle, or the bucket has `max_members` members, and the next bucket
//! opens at the collective that did not join. A closed bucket is kept only when it made the
//! makespan strictly shorter than before it was opened. Each extension is one evaluation
//! ([`evaluate`]: the best of the baseline schedules, simulated), at most `max_candidates`
//! in all, so the cost is O(max_candidates x (rewrite + evaluate)). Which schedule judges
//! matters: under a baseline, fusion repairs what the baseline orders badly, and the buckets
//! that help it can hurt a better plan (on an 8-layer ZeRO-3 GPT at dp 16 the baseline-judged
//! buckets scheduled 1.8 % longer than unfused under concerto); under concerto's own plan
//! ([`fuse_under`]) a bucket is kept only where it shortens that plan. It only tries runs of
//! consecutive collectives of one class, and never revisits a boundary.
//!
//! Fixed-size bucketing (PyTorch DDP's 25 MiB cap) picks boundaries by bytes alone; here they
//! follow the schedule: a bucket grows while the latency it saves outweighs the wait for its
//! last member.
//!
//! Memory is not modelled: a bucket holds all its members' buffers at once, and the search
//! may merge collectives that a memory-saving plan keeps apart on purpose (ZeRO-3's forward
//! and backward gathers of one layer's parameters, which it frees in between). Bound the
//! members (`max_members`) or pass the groups to [`fuse_ops`] yourself where memory matters.
//!
//! # Sources
//!
//! - S. Cheng et al., "Concerto: Automatic Communication Optimization and Scheduling for
//!   Large-Scale Deep Learning", ASPLOS 2025, §5: small collectives are fused to save their
//!   per-call latency.
//! - S. Li et al., "PyTorch Distributed: Experiences on Accelerating Data Parallel Training",
//!   VLDB 2020: DDP's gradient bucketing (a fixed 25 MiB bucket cap), and the trade-off
//!   between per-call latency and the wait for a bucket's last gradient.
//!
//! [`DecompError::InvalidContext`]: crate::DecompError::InvalidContext
//! [`evaluate`]: crate::select::evaluate

mod bucket;
mod check;
mod search;
#[cfg(test)]
mod tests;

pub use bucket::fuse_ops;
pub use check::check_fusion;
pub use search::{fuse, fuse_by, fuse_under, mapped_order, Judge};

use concerto_graph::{CollectiveKind, Graph, LinkClass, Op, OpId, OpKind};

use crate::rewritten::describe;

/// Options of [`fuse`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FuseConfig {
    /// Members of one bucket, at most.
    pub max_members: usize,
    /// Candidate buckets evaluated (schedules simulated), at most, over the whole search.
    pub max_candidates: usize,
}

impl Default for FuseConfig {
    /// At most 16 members per bucket and 64 evaluations.
    fn default() -> Self {
        Self {
            max_members: 16,
            max_candidates: 64,
        }
    }
}

/// One bucket of a fused graph.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Bucket {
    /// The names of the collectives merged, in program order of the original graph.
    pub members: Vec<String>,
    /// Bytes of the merged call (the members' sum).
    pub bytes: u64,
}

/// What [`fuse`] returns.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Clone, Debug)]
pub struct Fused {
    /// The fused graph (a copy of the input when no bucket helped); it has passed
    /// [`check_fusion`].
    pub graph: Graph,
    /// `origin[i]` lists the original ops that op `i` of `graph` comes from: one for a copy,
    /// the members (in program order) for a bucket.
    pub origin: Vec<Vec<OpId>>,
    /// The buckets of `graph` (of at least 2 members), in its program order.
    pub buckets: Vec<Bucket>,
    /// Evaluated makespan of the input (ns).
    pub before_ns: u64,
    /// Evaluated makespan of `graph` (ns).
    pub after_ns: u64,
    /// Candidate graphs evaluated by the search.
    pub evaluations: usize,
}

/// The class of a collective: the ops of one bucket must share it.
type Class = (CollectiveKind, u32, LinkClass);

fn class(op: &Op) -> Option<Class> {
    match op.kind {
        OpKind::Collective {
            kind, group, link, ..
        } => Some((kind, group, link)),
        OpKind::Compute { .. } => None,
    }
}

fn class_str((kind, group, link): Class) -> String {
    format!("{} over {group} ranks, {}", kind.as_str(), link.as_str())
}
