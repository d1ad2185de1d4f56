//! Baseline schedulers, each producing a [`StreamPlan`] that the simulator times like any
//! other.
//!
//! - [`program_order`]: every stream follows the program's op order: what an eager framework
//!   (PyTorch eager, Megatron-LM, DeepSpeed) issues.
//! - [`lhs`]: a greedy list scheduler in the spirit of XLA's latency-hiding scheduler
//!   (`xla/service/latency_hiding_scheduler.cc`): compute ops by critical-path priority
//!   (longest path to the end of the step, the "bottom level"), collectives started as soon as
//!   they are ready, one in flight per channel; an op is ready once its producers have ended
//!   and its release time ([`crate::Op::release_ns`]: a trace kernel's CPU launch) has come,
//!   as in the simulator and the list scheduler. XLA's scheduler works bottom-up over an
//!   HLO sequence with its own cost model; this one is top-down over the graph with the
//!   profile's durations: the same policy, not a port. O((ops + deps) log ops).
//!   [`lhs_within`] adds XLA's treatment of a memory limit: a tie-breaker, and one retry at
//!   0.9 of the limit when the schedule's peak is over it.
//! - [`inductor`]: PyTorch Inductor's overlap passes (`torch/_inductor/comms.py`:
//!   `raise_comms`, `sink_waits`) applied to the program order: each collective moves earlier,
//!   to just after its last producer, and each op that reads a collective's result moves later,
//!   to just before its first consumer, each by at most `distance` positions. O(ops * distance).

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use crate::error::GraphError;
use crate::ir::{Graph, OpId};
use crate::plan::{Stream, StreamPlan};

/// Program order (see the module docs).
pub fn program_order(graph: &Graph) -> Result<StreamPlan, GraphError> {
    StreamPlan::program_order(graph)
}

/// Priority of a ready op in [`lhs`]: (earlier ready time for collectives, higher bottom
/// level, earlier in program order).
type ReadyKey = (Reverse<u64>, u64, Reverse<usize>);

/// Longest path from the start of each op to the end of the graph (its duration included).
/// O(ops + deps). Sums saturate: past the horizon ([`crate::horizon`]) a level is `u64::MAX`.
pub fn bottom_levels(graph: &Graph, durations: &[u64]) -> Vec<u64> {
    let mut level = vec![0u64; graph.len()];
    for id in graph.ids().rev() {
        let tail = graph
            .successors(id)
            .iter()
            .map(|s| level[s.0])
            .max()
            .unwrap_or(0);
        level[id.0] = durations[id.0].saturating_add(tail);
    }
    level
}

/// The XLA-latency-hiding-scheduler-like list scheduler (see the module docs).
pub fn lhs(graph: &Graph, durations: &[u64]) -> Result<StreamPlan, GraphError> {
    lhs_limited(graph, durations, u64::MAX)
}

/// Ready ops [`lhs_within`] looks at, best first, when the best does not fit its limit.
const LHS_LOOKAHEAD: usize = 64;

/// [`lhs`] under a memory budget (bytes, resident included; see [`crate::memory`]), with
/// the treatment XLA's latency-hiding scheduler gives its memory limit: memory is a
/// tie-breaker, not a constraint. Each stream takes its best ready op by the [`lhs`] key when
/// its buffers fit under the limit; when they do not, it takes the best of the next ready ops
/// (up to 64) that fits, else the one that frees the most memory when it ends if that is more
/// than it allocates, else it waits for memory to be freed (starting its best op anyway when
/// nothing runs). XLA then checks the schedule's peak and, when it is over the limit,
/// schedules once more with 0.9 of it (`xla/service/latency_hiding_scheduler.cc`); so does
/// this. The plan can still be over the budget: that is the baseline's answer, reported as
/// is. Cost: two [`lhs`] runs, each op compared with at most 64 others, and two simulations.
pub fn lhs_within(
    graph: &Graph,
    durations: &[u64],
    budget_bytes: u64,
    contention: f64,
) -> Result<StreamPlan, GraphError> {
    let limit = |b: u64| b.saturating_sub(graph.resident_bytes());
    let plan = lhs_limited(graph, durations, limit(budget_bytes))?;
    let peak = crate::simulate(graph, &plan, durations, contention)?.peak_memory_bytes(graph);
    if peak <= budget_bytes {
        return Ok(plan);
    }
    lhs_limited(graph, durations, limit(budget_bytes / 10 * 9))
}

/// [`lhs`] with live-tensor bytes kept under `limit` as a tie-breaker (see [`lhs_within`]).
fn lhs_limited(graph: &Graph, durations: &[u64], limit: u64) -> Result<StreamPlan, GraphError> {
    let n = graph.len();
    // Its clock, as the simulator's, stays within the horizon.
    crate::horizon::horizon(graph, durations)?;
    let mut l = LimitedLhs::new(graph, durations, limit);
    while l.placed < n {
        for s in 0..l.streams.len() {
            if l.free_at[s] > l.now {
                continue;
            }
            let pick = if limit == u64::MAX {
                l.ready[s].pop()
            } else {
                l.pick_within(s)
            };
            if let Some((_, _, Reverse(o))) = pick {
                l.start(s, o);
            }
        }
        if !l.advance() {
            break;
        }
    }
    StreamPlan::new(graph, l.streams.into_iter().zip(l.orders).collect())
}

/// The state of one [`lhs_limited`] run: the ready ops, the ops in flight and the live bytes.
struct LimitedLhs<'g> {
    graph: &'g Graph,
    durations: &'g [u64],
    /// The live-tensor bytes to stay under.
    limit: u64,
    /// Each op's bottom level.
    level: Vec<u64>,
    /// The graph's streams, and each op's.
    streams: Vec<Stream>,
    stream_of: Vec<usize>,
    /// Per op, the producers not finished yet, and when the last finished.
    missing: Vec<usize>,
    ready_at: Vec<u64>,
    /// Per stream, the ops whose producers have all finished: compute by (bottom level,
    /// program order), collectives by (ready time, program order).
    ready: Vec<BinaryHeap<ReadyKey>>,
    /// Per stream, the ops placed so far, and when its last one ends.
    orders: Vec<Vec<OpId>>,
    free_at: Vec<u64>,
    /// Ops in flight, by end time.
    running: BinaryHeap<Reverse<(u64, usize)>>,
    /// Ops whose producers have ended but whose release time has not come, by release time.
    pending: BinaryHeap<Reverse<(u64, usize)>>,
    now: u64,
    placed: usize,
    /// Memory, as `memory::profile` counts it: each op's bytes, whether it stays live, its
    /// readers left, and the live-tensor bytes.
    alloc: Vec<u64>,
    keep: Vec<bool>,
    readers: Vec<usize>,
    live: u64,
}

impl<'g> LimitedLhs<'g> {
    /// The state before any op starts: the ops without producers ready.
    fn new(graph: &'g Graph, durations: &'g [u64], limit: u64) -> Self {
        let n = graph.len();
        let streams = Stream::of_graph(graph);
        let stream_of: Vec<usize> = graph
            .ids()
            .map(|o| {
                let s = Stream::of(graph.op(o));
                streams
                    .iter()
                    .position(|t| *t == s)
                    .expect("stream of the graph")
            })
            .collect();
        let mut l = LimitedLhs {
            graph,
            durations,
            limit,
            level: bottom_levels(graph, durations),
            missing: graph.ids().map(|o| graph.predecessors(o).len()).collect(),
            ready_at: vec![0u64; n],
            ready: vec![BinaryHeap::new(); streams.len()],
            orders: vec![Vec::new(); streams.len()],
            free_at: vec![0u64; streams.len()],
            running: BinaryHeap::new(),
            pending: BinaryHeap::new(),
            now: 0,
            placed: 0,
            alloc: graph.ops().map(|o| o.buffer_bytes()).collect(),
            keep: graph.ops().map(|o| o.live_out).collect(),
            readers: graph.ids().map(|o| graph.successors(o).len()).collect(),
            live: 0,
            streams,
            stream_of,
        };
        for o in 0..n {
            if l.missing[o] == 0 {
                l.push(o, 0);
            }
        }
        l
    }

    /// Makes op `o`, whose producers have all ended by `at`, ready on its stream at time `at`,
    /// or holds it until its release time when that is later than now.
    fn push(&mut self, o: usize, at: u64) {
        let release = self.graph.op(OpId(o)).release_ns;
        if release > self.now {
            self.pending.push(Reverse((release, o)));
            return;
        }
        let at = at.max(release);
        let s = self.stream_of[o];
        let key = if !self.streams[s].is_comm() {
            (Reverse(0), self.level[o], Reverse(o))
        } else {
            (Reverse(at), self.level[o], Reverse(o))
        };
        self.ready[s].push(key);
    }

    /// Bytes freed when `o` ends, if it started now.
    fn frees(&self, o: usize) -> u64 {
        let (alloc, keep, readers) = (&self.alloc, &self.keep, &self.readers);
        let own = if readers[o] == 0 && !keep[o] {
            alloc[o]
        } else {
            0
        };
        own + self
            .graph
            .predecessors(OpId(o))
            .iter()
            .filter(|p| readers[p.0] == 1 && !keep[p.0])
            .map(|p| alloc[p.0])
            .sum::<u64>()
    }

    /// Stream `s`'s pick under the limit: its best ready op that fits (of the next
    /// [`LHS_LOOKAHEAD`]), else the one freeing the most more than it allocates, else none
    /// (or, when nothing runs, the best op anyway).
    fn pick_within(&mut self, s: usize) -> Option<ReadyKey> {
        let idle = self.running.is_empty();
        let mut seen = Vec::new();
        let mut pick = None;
        while let Some(k) = self.ready[s].pop() {
            if self.live.saturating_add(self.alloc[k.2 .0]) <= self.limit {
                pick = Some(k);
                break;
            }
            seen.push(k);
            if seen.len() >= LHS_LOOKAHEAD {
                break;
            }
        }
        if pick.is_none() {
            // Nothing fits: the op freeing the most more than it allocates, else
            // wait (or, when nothing runs, the best op anyway).
            let relief = seen
                .iter()
                .enumerate()
                .map(|(i, k)| (self.frees(k.2 .0) as i128 - self.alloc[k.2 .0] as i128, i))
                .max_by_key(|&(r, i)| (r, Reverse(i)));
            match relief {
                Some((r, i)) if r > 0 => pick = Some(seen.swap_remove(i)),
                Some(_) if idle && !seen.is_empty() => pick = Some(seen.swap_remove(0)),
                _ => {}
            }
        }
        self.ready[s].extend(seen);
        pick
    }

    /// Starts op `o` on stream `s` now.
    fn start(&mut self, s: usize, o: usize) {
        self.orders[s].push(OpId(o));
        // Within the horizon (checked by `lhs_limited`): no overflow.
        self.free_at[s] = self.now + self.durations[o];
        self.running.push(Reverse((self.free_at[s], o)));
        self.placed += 1;
        self.live += self.alloc[o];
    }

    /// Advances to the next event, the next completion or release: a completion releases its
    /// consumers and the bytes nothing reads any more; a release makes its ops ready. `false`
    /// when nothing runs and nothing waits for its release.
    fn advance(&mut self) -> bool {
        let end = self.running.peek().map(|r| r.0 .0);
        let release = self.pending.peek().map(|r| r.0 .0);
        let Some(t) = end.into_iter().chain(release).min() else {
            return false;
        };
        self.now = t;
        while let Some(Reverse((r, o))) = self.pending.peek().copied() {
            if r > self.now {
                break;
            }
            self.pending.pop();
            self.push(o, r);
        }
        let graph = self.graph;
        while let Some(Reverse((t2, o))) = self.running.peek().copied() {
            if t2 != self.now {
                break;
            }
            self.running.pop();
            if self.readers[o] == 0 && !self.keep[o] {
                self.live -= self.alloc[o];
            }
            for p in graph.predecessors(OpId(o)) {
                self.readers[p.0] -= 1;
                if self.readers[p.0] == 0 && !self.keep[p.0] {
                    self.live -= self.alloc[p.0];
                }
            }
            for s in graph.successors(OpId(o)) {
                self.ready_at[s.0] = self.ready_at[s.0].max(self.now);
                self.missing[s.0] -= 1;
                if self.missing[s.0] == 0 {
                    self.push(s.0, self.ready_at[s.0]);
                }
            }
        }
        true
    }
}

/// Default bound on how far [`inductor`] moves an op, in program positions.
pub const INDUCTOR_DISTANCE: usize = 16;

/// The Inductor-like reordering of the program order (see the module docs).
pub fn inductor(graph: &Graph, distance: usize) -> Result<StreamPlan, GraphError> {
    let n = graph.len();
    let mut order: Vec<OpId> = graph.ids().collect();
    let mut pos: Vec<usize> = (0..n).collect();
    let reindex = |order: &Vec<OpId>, pos: &mut Vec<usize>, lo: usize, hi: usize| {
        for (i, o) in order.iter().enumerate().take(hi + 1).skip(lo) {
            pos[o.0] = i;
        }
    };
    // Raise collectives, in program order.
    for c in graph.ids().filter(|o| graph.op(*o).is_collective()) {
        let i = pos[c.0];
        let earliest = graph
            .predecessors(c)
            .iter()
            .map(|p| pos[p.0] + 1)
            .max()
            .unwrap_or(0)
            .max(i.saturating_sub(distance));
        if earliest < i {
            // `remove(i)` then `insert(earliest)`, moving only the ops in between.
            order[earliest..=i].rotate_right(1);
            reindex(&order, &mut pos, earliest, i);
        }
    }
    // Sink the ops that read a collective's result ("waits"), in reverse program order.
    let waits: Vec<OpId> = graph
        .ids()
        .filter(|o| {
            !graph.op(*o).is_collective()
                && graph
                    .predecessors(*o)
                    .iter()
                    .any(|p| graph.op(*p).is_collective())
        })
        .collect();
    for w in waits.into_iter().rev() {
        let i = pos[w.0];
        let latest = graph
            .successors(w)
            .iter()
            .map(|s| pos[s.0] - 1)
            .min()
            .unwrap_or(n - 1)
            .min(i + distance);
        if latest > i {
            order[i..=latest].rotate_left(1);
            reindex(&order, &mut pos, i, latest);
        }
    }
    StreamPlan::from_order(graph, &order)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::{CollectiveKind, ComputeClass, GraphBuilder, LinkClass, Op};
    use crate::simulate::simulate;

    /// A backward pass in program order that waits for each gradient all-reduce right away:
    /// g1 -> ar1 -> u1 (update), then g0 -> ar0 -> u0, with g0 independent of ar1.
    fn eager() -> Graph {
        let mut b = GraphBuilder::new("eager");
        let c = |n: &str| Op::compute(n, ComputeClass::Other, 0, 0);
        let ar = |n: &str| Op::collective(n, CollectiveKind::AllReduce, 8, 8, LinkClass::IntraNode);
        let g1 = b.add(c("g1"), &[]);
        let ar1 = b.add(ar("ar1"), &[g1]);
        let u1 = b.add(c("u1"), &[ar1]);
        let g0 = b.add(c("g0"), &[g1]);
        let ar0 = b.add(ar("ar0"), &[g0]);
        let _u0 = b.add(c("u0"), &[ar0, u1]);
        b.finish()
    }

    const D: [u64; 6] = [4, 5, 1, 4, 5, 1];

    #[test]
    fn program_order_exposes_and_the_others_hide() {
        let g = eager();
        let po = simulate(&g, &program_order(&g).unwrap(), &D, 1.0).unwrap();
        // g1 [0,4) ar1 [4,9) u1 [9,10) g0 [10,14) ar0 [14,19) u0 [19,20).
        assert_eq!(po.makespan, 20);
        let l = simulate(&g, &lhs(&g, &D).unwrap(), &D, 1.0).unwrap();
        // g1 [0,4), g0 [4,8) beside ar1 [4,9), u1 [9,10), ar0 [9,14), u0 [14,15).
        assert_eq!(l.makespan, 15);
        let i = simulate(&g, &inductor(&g, 16).unwrap(), &D, 1.0).unwrap();
        assert_eq!(i.makespan, 15);
        // A distance of 0 moves nothing.
        let i0 = simulate(&g, &inductor(&g, 0).unwrap(), &D, 1.0).unwrap();
        assert_eq!(i0.makespan, 20);
    }

    #[test]
    fn lhs_starts_no_op_before_its_release() {
        // `late` (released at 100) leads the longest path; `early` and `also` are free now.
        let mut b = GraphBuilder::new("released");
        let late = b.add(
            Op::compute("late", ComputeClass::Other, 0, 0).released_at(100),
            &[],
        );
        b.add(Op::compute("tail", ComputeClass::Other, 0, 0), &[late]);
        let early = b.add(Op::compute("early", ComputeClass::Other, 0, 0), &[]);
        b.add(
            Op::collective("ar", CollectiveKind::AllReduce, 8, 8, LinkClass::IntraNode)
                .released_at(30),
            &[early],
        );
        b.add(Op::compute("also", ComputeClass::Other, 0, 0), &[]);
        let g = b.finish();
        let d = [10, 50, 5, 7, 20];
        let plan = lhs(&g, &d).unwrap();
        // The ops free at time 0 go first (by bottom level); `late` waits for its release, not
        // the others, and `ar` for its own.
        let names: Vec<&str> = plan.streams[0]
            .1
            .iter()
            .map(|o| g.op(*o).name.as_str())
            .collect();
        assert_eq!(names, ["also", "early", "late", "tail"]);
        let t = simulate(&g, &plan, &d, 1.0).unwrap();
        for o in g.ids() {
            assert!(t.start[o.0] >= g.op(o).release_ns, "{}", g.op(o).name);
        }
        assert_eq!((t.start[3], t.start[0]), (30, 100));
        assert_eq!(t.makespan, 160);
        // Program order puts `late` first and holds everything behind it until 100.
        let p = simulate(&g, &program_order(&g).unwrap(), &d, 1.0).unwrap();
        assert_eq!(p.makespan, 100 + 10 + 50 + 5 + 20);
        // Under a memory limit the same release times hold.
        let within = lhs_within(&g, &d, 0, 1.0).unwrap();
        let t = simulate(&g, &within, &d, 1.0).unwrap();
        assert_eq!(t.start[0], 100);
    }

    #[test]
    fn bottom_levels_are_longest_paths() {
        let g = eager();
        assert_eq!(bottom_levels(&g, &D), vec![14, 7, 2, 10, 6, 1]);
    }
}
