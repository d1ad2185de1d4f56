//! Proven lower bounds on the contention-free makespan of every stream plan of a graph.
//!
//! Each op runs on one stream, one op at a time per stream, after all its inputs; contention
//! only lengthens ops, so every bound here also bounds simulated makespans. With `r(v)` the
//! head of op `v` (the longest path of durations that must finish before it starts) and `q(v)`
//! its tail (the longest path that must run after it ends):
//!
//! - **critical path**: `max_v r(v) + d(v)`;
//! - **busiest stream**: `max_s sum of d(v) on s`;
//! - **precedence energy**: for each op, the largest total duration of its ancestors on any one
//!   stream, plus its own duration, plus the same for its descendants (a stream runs one op at
//!   a time, so all ancestors on one stream finish before the op starts). Ancestor sets are
//!   bitsets: O(n^2 / 64) memory and time, so it is computed for graphs of at most
//!   [`PRECEDENCE_ENERGY_MAX_OPS`] ops and left out above;
//! - **Jackson**: per stream, the optimal preemptive one-machine schedule with release dates
//!   `r(v)` and delivery times `q(v)` (Jackson's preemptive schedule, which solves
//!   `1|r_j, pmtn|max C_j + q_j` exactly; Carlier, "The one-machine sequencing problem",
//!   EJOR 1982). O(n log n) per stream.
//!
//! [`bounds`] computes them all and [`Bounds::best`] says which binds.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};
use std::fmt;

use crate::ir::Graph;
use crate::plan::Stream;

/// The largest graph whose precedence-energy bound is computed (its ancestor bitsets take
/// `n^2 / 8` bytes: 32 MiB here).
pub const PRECEDENCE_ENERGY_MAX_OPS: usize = 16_384;

/// Which bound.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum BoundKind {
    /// The longest dependency chain.
    CriticalPath,
    /// The most loaded stream.
    BusiestStream,
    /// Ancestors and descendants on one stream, around each op.
    PrecedenceEnergy,
    /// Jackson's preemptive schedule of one stream, with heads and tails.
    Jackson,
}

impl BoundKind {
    /// `critical-path`, `busiest-stream`, `precedence-energy` or `jackson`.
    pub fn as_str(self) -> &'static str {
        match self {
            BoundKind::CriticalPath => "critical-path",
            BoundKind::BusiestStream => "busiest-stream",
            BoundKind::PrecedenceEnergy => "precedence-energy",
            BoundKind::Jackson => "jackson",
        }
    }
}

impl fmt::Display for BoundKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One bound's value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Bound {
    /// Which bound.
    pub kind: BoundKind,
    /// Its value (ns).
    pub value_ns: u64,
    /// The stream it comes from, for the per-stream bounds.
    pub stream: Option<Stream>,
}

/// Every bound of a graph (see the module docs).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Bounds {
    /// Each bound computed, in [`BoundKind`] order.
    pub all: Vec<Bound>,
}

impl Bounds {
    /// The largest bound (the first of the largest, in [`BoundKind`] order): the one that
    /// binds.
    pub fn best(&self) -> &Bound {
        self.all
            .iter()
            .rev()
            .max_by_key(|b| b.value_ns)
            .expect("the critical path is always computed")
    }

    /// The value of the best bound (ns).
    pub fn value_ns(&self) -> u64 {
        self.best().value_ns
    }
}

/// Every bound of `graph` with `durations` (one per op, ns). See the module docs for each
/// bound's cost.
pub fn bounds(graph: &Graph, durations: &[u64]) -> Bounds {
    let n = graph.len();
    let streams: Vec<Stream> = graph.ops().map(Stream::of).collect();
    let preds: Vec<Vec<usize>> = graph
        .ids()
        .map(|v| graph.predecessors(v).iter().map(|p| p.0).collect())
        .collect();
    // Ops are in program order, which is topological: inputs come first.
    let mut head = vec![0u64; n];
    for v in 0..n {
        head[v] = preds[v]
            .iter()
            .map(|&p| head[p] + durations[p])
            .max()
            .unwrap_or(0);
    }
    let mut tail = vec![0u64; n];
    for v in (0..n).rev() {
        for &p in &preds[v] {
            tail[p] = tail[p].max(durations[v] + tail[v]);
        }
    }
    let mut all = Vec::new();
    let cp = (0..n).map(|v| head[v] + durations[v]).max().unwrap_or(0);
    all.push(Bound {
        kind: BoundKind::CriticalPath,
        value_ns: cp,
        stream: None,
    });
    let mut by_stream: BTreeMap<Stream, Vec<usize>> = BTreeMap::new();
    for (v, s) in streams.iter().enumerate() {
        by_stream.entry(*s).or_default().push(v);
    }
    let busiest = by_stream
        .iter()
        .map(|(s, ops)| (ops.iter().map(|&v| durations[v]).sum::<u64>(), *s))
        .max();
    if let Some((value_ns, s)) = busiest {
        all.push(Bound {
            kind: BoundKind::BusiestStream,
            value_ns,
            stream: Some(s),
        });
    }
    if n <= PRECEDENCE_ENERGY_MAX_OPS {
        all.push(Bound {
            kind: BoundKind::PrecedenceEnergy,
            value_ns: precedence_energy(&preds, &streams, durations),
            stream: None,
        });
    }
    let jackson = by_stream
        .iter()
        .map(|(s, ops)| (jackson(ops, &head, &tail, durations), *s))
        .max();
    if let Some((value_ns, s)) = jackson {
        all.push(Bound {
            kind: BoundKind::Jackson,
            value_ns,
            stream: Some(s),
        });
    }
    Bounds { all }
}

/// The precedence-energy bound (see the module docs): ancestor bitsets in program order,
/// descendant bitsets in reverse, then per op the heaviest stream on each side.
fn precedence_energy(preds: &[Vec<usize>], streams: &[Stream], durations: &[u64]) -> u64 {
    let n = preds.len();
    let words = n.div_ceil(64);
    let ids: BTreeMap<Stream, usize> = streams
        .iter()
        .copied()
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .enumerate()
        .map(|(i, s)| (s, i))
        .collect();
    let stream_of: Vec<usize> = streams.iter().map(|s| ids[s]).collect();
    // The heaviest stream of each op's set (ancestors, or descendants).
    let heaviest = |sets: &[u64], v: usize| -> u64 {
        let mut load = vec![0u64; ids.len()];
        for (w, &word) in sets[v * words..(v + 1) * words].iter().enumerate() {
            let mut bits = word;
            while bits != 0 {
                let u = w * 64 + bits.trailing_zeros() as usize;
                load[stream_of[u]] += durations[u];
                bits &= bits - 1;
            }
        }
        load.into_iter().max().unwrap_or(0)
    };
    let mut anc = vec![0u64; n * words];
    for (v, mine_preds) in preds.iter().enumerate() {
        for &p in mine_preds {
            let (before, rest) = anc.split_at_mut(v * words);
            let mine = &mut rest[..words];
            for (m, a) in mine.iter_mut().zip(&before[p * words..(p + 1) * words]) {
                *m |= *a;
            }
            mine[p / 64] |= 1 << (p % 64);
        }
    }
    let before: Vec<u64> = (0..n).map(|v| heaviest(&anc, v)).collect();
    drop(anc);
    let mut desc = vec![0u64; n * words];
    for v in (0..n).rev() {
        for &p in &preds[v] {
            // p < v: p's set is in the first part, v's (complete: all of v's successors come
            // after it) in the second.
            let (low, high) = desc.split_at_mut(v * words);
            let theirs = &high[..words];
            let mine = &mut low[p * words..(p + 1) * words];
            for (m, t) in mine.iter_mut().zip(theirs) {
                *m |= *t;
            }
            mine[v / 64] |= 1 << (v % 64);
        }
    }
    (0..n)
        .map(|v| before[v] + durations[v] + heaviest(&desc, v))
        .max()
        .unwrap_or(0)
}

/// Jackson's preemptive schedule of `ops` on one machine with release dates `head` and
/// delivery times `tail`: at every moment run the released op with the largest tail. Returns
/// `max C + q`, the optimum of the preemptive relaxation. O(k log k) for k ops.
fn jackson(ops: &[usize], head: &[u64], tail: &[u64], durations: &[u64]) -> u64 {
    let mut by_release: Vec<usize> = ops.to_vec();
    by_release.sort_by_key(|&v| (head[v], v));
    let mut remaining: BTreeMap<usize, u64> = ops.iter().map(|&v| (v, durations[v])).collect();
    // Ready ops by largest tail (ties by op index, for determinism).
    let mut ready: BinaryHeap<(u64, Reverse<usize>)> = BinaryHeap::new();
    let mut next = 0;
    let mut t = 0u64;
    let mut best = 0u64;
    while next < by_release.len() || !ready.is_empty() {
        if ready.is_empty() {
            t = t.max(head[by_release[next]]);
        }
        while next < by_release.len() && head[by_release[next]] <= t {
            let v = by_release[next];
            ready.push((tail[v], Reverse(v)));
            next += 1;
        }
        let (q, Reverse(v)) = ready.pop().expect("an op was released");
        let left = remaining[&v];
        let until = by_release.get(next).map_or(u64::MAX, |&u| head[u]);
        if t + left <= until {
            t += left;
            remaining.insert(v, 0);
            best = best.max(t + q);
        } else {
            remaining.insert(v, left - (until - t));
            t = until;
            ready.push((q, Reverse(v)));
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::{CollectiveKind, ComputeClass, GraphBuilder, LinkClass, Op, OpId};
    use crate::plan::StreamPlan;
    use crate::simulate::simulate;

    /// The optimum over every plan: each permutation of the ops that respects the
    /// dependencies gives every stream's FIFO order, and the simulation starts each op as
    /// early as those orders allow.
    fn brute_force(g: &Graph, d: &[u64]) -> u64 {
        fn go(g: &Graph, d: &[u64], order: &mut Vec<OpId>, used: &mut Vec<bool>, best: &mut u64) {
            if order.len() == g.len() {
                let plan = StreamPlan::from_order(g, order).unwrap();
                *best = (*best).min(simulate(g, &plan, d, 1.0).unwrap().makespan);
                return;
            }
            for v in g.ids() {
                if !used[v.0] && g.predecessors(v).iter().all(|p| used[p.0]) {
                    used[v.0] = true;
                    order.push(v);
                    go(g, d, order, used, best);
                    order.pop();
                    used[v.0] = false;
                }
            }
        }
        let mut best = u64::MAX;
        go(g, d, &mut Vec::new(), &mut vec![false; g.len()], &mut best);
        best
    }

    /// A small random graph: compute and collectives on two links, random inputs from earlier
    /// ops, random durations (seeded LCG).
    fn random_graph(seed: u64, n: usize) -> (Graph, Vec<u64>) {
        let mut state = seed.wrapping_mul(6364136223846793005).wrapping_add(1);
        let mut next = |m: u64| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (state >> 33) % m
        };
        let mut b = GraphBuilder::new("random");
        let mut ids = Vec::new();
        let mut d = Vec::new();
        for i in 0..n {
            let op = match next(3) {
                0 => Op::collective(
                    format!("ar{i}"),
                    CollectiveKind::AllReduce,
                    8,
                    8,
                    LinkClass::IntraNode,
                ),
                1 if i % 2 == 0 => Op::collective(
                    format!("ag{i}"),
                    CollectiveKind::AllGather,
                    8,
                    16,
                    LinkClass::InterNode,
                ),
                _ => Op::compute(format!("c{i}"), ComputeClass::Gemm, 1, 1),
            };
            let inputs: Vec<OpId> = ids.iter().copied().filter(|_| next(3) == 0).collect();
            ids.push(b.add(op, &inputs));
            d.push(1 + next(9));
        }
        (b.finish(), d)
    }

    #[test]
    fn every_bound_is_at_most_the_brute_force_optimum() {
        let mut binding = std::collections::BTreeSet::new();
        for seed in 0..150 {
            let (g, d) = random_graph(seed, 3 + (seed % 5) as usize);
            let optimum = brute_force(&g, &d);
            let b = bounds(&g, &d);
            for x in &b.all {
                assert!(
                    x.value_ns <= optimum,
                    "seed {seed}: {} {} > optimum {optimum}",
                    x.kind,
                    x.value_ns
                );
            }
            assert!(b.value_ns() >= crate::lower::lower_bound(&g, &d), "seed {seed}");
            binding.insert(b.best().kind);
        }
        // The stronger bounds bind somewhere: the test is not only about the classic two.
        assert!(
            binding.contains(&BoundKind::PrecedenceEnergy) || binding.contains(&BoundKind::Jackson),
            "{binding:?}"
        );
    }

    #[test]
    fn jackson_sees_the_second_gemm_delay_its_collective() {
        // a -> x -> c and b -> y -> c, a and b compute (5 each), x and y all-reduces (5 each),
        // c compute (1). The critical path and the busiest stream say 11 and 11; Jackson on
        // the compute stream sees that whichever of a and b runs second ends at 10 and still
        // has its collective and c behind it: 10 + 5 + 1 = 16, the optimum.
        let mut b = GraphBuilder::new("g");
        let ar = |n: &str| Op::collective(n, CollectiveKind::AllReduce, 8, 8, LinkClass::IntraNode);
        let ga = b.add(Op::compute("a", ComputeClass::Gemm, 1, 1), &[]);
        let gb = b.add(Op::compute("b", ComputeClass::Gemm, 1, 1), &[]);
        let x = b.add(ar("x"), &[ga]);
        let y = b.add(ar("y"), &[gb]);
        b.add(Op::compute("c", ComputeClass::Other, 1, 1), &[x, y]);
        let g = b.finish();
        let d = vec![5, 5, 5, 5, 1];
        let bs = bounds(&g, &d);
        assert_eq!(brute_force(&g, &d), 16);
        assert_eq!(bs.value_ns(), 16, "{bs:?}");
        assert_eq!(crate::lower::lower_bound(&g, &d), 11);
    }
}
