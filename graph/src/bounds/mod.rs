//! Proven lower bounds on the makespan of every stream plan of a graph: contention-free
//! ([`bounds`]), and with contention ([`bounds_contended`]).
//!
//! Each op runs on one stream, one op at a time per stream, after all its inputs and no earlier
//! than its release time ([`crate::Op::release_ns`], which seeds every head below); contention
//! only lengthens ops, so every bound here also bounds simulated makespans. With `r(v)` the
//! head of op `v` (its release time, or the longest path of durations that must finish before
//! it starts, whichever is later) and `q(v)`
//! its tail (the longest path that must run after it ends):
//!
//! - **critical path**: `max_v r(v) + d(v)`. O(n + e).
//! - **busiest stream**: `max_s sum of d(v) on s`. O(n).
//! - **precedence energy**: for each op, the largest total duration of its ancestors on any one
//!   stream, plus its own duration, plus the same for its descendants (a stream runs one op at
//!   a time, so all ancestors on one stream finish before the op starts). Ancestor sets are
//!   bitsets: O(n^2 / 64) memory and time, so it is computed for graphs of at most
//!   [`PRECEDENCE_ENERGY_MAX_OPS`] ops and left out above.
//! - **Jackson**: per stream, the optimal preemptive one-machine schedule with release dates
//!   `r(v)` and delivery times `q(v)` (Jackson's preemptive schedule, which solves
//!   `1|r_j, pmtn|max C_j + q_j` exactly; Carlier, "The one-machine sequencing problem",
//!   EJOR 1982). It equals the largest `min_J r + sum_J d + min_J q` over subsets `J` of the
//!   stream's ops, so it implies the critical path and the busiest stream. O(n log n).
//! - **energy Jackson**: the same with *energy heads and tails* `r'` and `q'` ([`horizons`]):
//!   an op starts no earlier than the smallest head of its ancestors on a stream plus their
//!   total duration (they run one at a time on that stream), and the step runs at least the
//!   symmetric amount after it ends; each raised head raises its descendants' in turn. A
//!   collective whose ancestors hold most of the compute gets a head near the end of that
//!   compute, and a GEMM that feeds a backlog of all-reduces gets a tail as long as that
//!   backlog. This is the precedence-energy argument fed into Jackson's bound on each stream
//!   (heads and tails by energy are the classic "one-machine relaxation with adjusted heads
//!   and tails" of job-shop lower bounds: Carlier and Pinson, "A practical use of Jackson's
//!   preemptive schedule for solving the job shop problem", Annals of OR 1990). Sums are exact
//!   for the collectives a work budget allows ([`ENERGY_WORK_BUDGET`]; all of them on the
//!   real modules) and lower bounds elsewhere, see [`horizons`]: O((n + e) k / 64 + e s) time
//!   for k collectives and s streams, O(n s) memory.
//!
//! - **contended** ([`bounds_contended`], with contention `c > 1` only): a compute stream's
//!   work plus `(1 - 1/c)` times the collectives that must run inside its window, plus the
//!   window's head and tail: what the slowdown costs a compute-bound step (proof in
//!   `contended.rs`). The collectives count at full length where the compute that could
//!   hide them is too little (overlap caps: the ops independent of a run of collectives, whose
//!   work slowed is all the time that run can hide). It bounds the contended simulated
//!   makespan, not the contention-free one. O(256 n) per compute stream, plus the caps'
//!   O((n + e) k / 64 + n k + k^2) for `k` collectives. Reported under the same kind, its
//!   *pivot* form (`pivot.rs`): a collective `x` whose chain (its descendants on its
//!   channel) must run after it starts; the compute not above `x` may end after that start
//!   only by bringing its own collectives into the chain's stretch, so the stretch counts at
//!   full length rather than at `1 - 1/c` (the last gradient bucket's reduce-scatter, update and all-gather of a
//!   ZeRO-2 step). O(n + n * 64 + 256 collectives) per pivot and compute stream, 8 pivots.
//!
//! [`bounds`] computes all but the contended one, [`bounds_contended`] all, and
//! [`Bounds::best`] says which binds.
//!
//! Not computed separately: Carlier's non-preemptive subset bound `max over J of min_J r +
//! sum_J d + min_J q` equals Jackson's preemptive value (Carlier 1982), so each Jackson bound
//! above is it; and on streams of thousands of short ops preemption loses almost nothing, so
//! edge finding over the same heads and tails has little to add.

mod contended;
mod energy;
mod jackson;
mod pivot;
#[cfg(test)]
mod tests;

use std::collections::BTreeSet;
use std::fmt;

use crate::ir::Graph;
use crate::plan::Stream;

pub use energy::{Horizons, ENERGY_WORK_BUDGET};
use jackson::jackson;

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
    /// Jackson's preemptive schedule of one stream, with energy heads and tails.
    EnergyJackson,
    /// A compute stream's work plus the slowdown the collectives that must run beside it
    /// cost it ([`bounds_contended`]; only with contention).
    Contended,
}

impl BoundKind {
    /// `critical-path`, `busiest-stream`, `precedence-energy`, `jackson`, `energy-jackson` or
    /// `contended`.
    pub fn as_str(self) -> &'static str {
        match self {
            BoundKind::CriticalPath => "critical-path",
            BoundKind::BusiestStream => "busiest-stream",
            BoundKind::PrecedenceEnergy => "precedence-energy",
            BoundKind::Jackson => "jackson",
            BoundKind::EnergyJackson => "energy-jackson",
            BoundKind::Contended => "contended",
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

/// The graph as the bounds read it: producers and consumers in compressed rows (each sorted),
/// and each op's stream as an index into the streams present.
pub(crate) struct Dag {
    n: usize,
    pred_at: Vec<usize>,
    pred: Vec<usize>,
    succ_at: Vec<usize>,
    succ: Vec<usize>,
    /// Index into `streams` of each op's stream.
    stream: Vec<usize>,
    /// The streams present, in [`Stream`] order.
    streams: Vec<Stream>,
    /// Per op: its release time ([`crate::Op::release_ns`]), a head no plan goes below.
    release: Vec<u64>,
}

impl Dag {
    fn new(graph: &Graph) -> Dag {
        let n = graph.len();
        let of: Vec<Stream> = graph.ops().map(Stream::of).collect();
        let streams: Vec<Stream> = of
            .iter()
            .copied()
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        let stream = of
            .iter()
            .map(|s| streams.binary_search(s).unwrap_or(0))
            .collect();
        let mut pred_at = Vec::with_capacity(n + 1);
        let mut pred = Vec::new();
        pred_at.push(0);
        let mut outdegree = vec![0usize; n];
        for v in graph.ids() {
            for p in graph.predecessors(v) {
                pred.push(p.0);
                outdegree[p.0] += 1;
            }
            pred_at.push(pred.len());
        }
        let mut succ_at = Vec::with_capacity(n + 1);
        succ_at.push(0);
        for d in &outdegree {
            succ_at.push(succ_at[succ_at.len() - 1] + d);
        }
        // Consumers in increasing order: fill by consumer, in program order.
        let mut fill = succ_at[..n].to_vec();
        let mut succ = vec![0usize; pred.len()];
        for v in 0..n {
            for &p in &pred[pred_at[v]..pred_at[v + 1]] {
                succ[fill[p]] = v;
                fill[p] += 1;
            }
        }
        Dag {
            n,
            pred_at,
            pred,
            succ_at,
            succ,
            stream,
            streams,
            release: graph.ops().map(|o| o.release_ns).collect(),
        }
    }

    fn preds(&self, v: usize) -> &[usize] {
        &self.pred[self.pred_at[v]..self.pred_at[v + 1]]
    }

    fn succs(&self, v: usize) -> &[usize] {
        &self.succ[self.succ_at[v]..self.succ_at[v + 1]]
    }

    /// Whether op `v` is a collective (the ops whose sums [`energy`] computes exactly).
    fn is_target(&self, v: usize) -> bool {
        self.streams[self.stream[v]].is_comm()
    }

    /// Longest-path heads and tails.
    fn longest_paths(&self, durations: &[u64]) -> (Vec<u64>, Vec<u64>) {
        let mut head = vec![0u64; self.n];
        for v in 0..self.n {
            head[v] = self
                .preds(v)
                .iter()
                .map(|&p| head[p].saturating_add(durations[p]))
                .max()
                .unwrap_or(0)
                .max(self.release[v]);
        }
        let mut tail = vec![0u64; self.n];
        for v in (0..self.n).rev() {
            tail[v] = self
                .succs(v)
                .iter()
                .map(|&w| durations[w].saturating_add(tail[w]))
                .max()
                .unwrap_or(0);
        }
        (head, tail)
    }

    /// Ancestor bitsets, `words` words per op: op `v`'s row holds bit `bit(u)` of each of its
    /// ancestors `u` that `bit` maps to one. Built in program order (a row is the union of its
    /// producers' rows and bits). O((n + e) words) time, `8 n words` bytes.
    fn ancestor_sets(&self, words: usize, bit: impl Fn(usize) -> Option<usize>) -> Vec<u64> {
        let mut sets = vec![0u64; self.n * words];
        for v in 0..self.n {
            for &p in self.preds(v) {
                // p < v: p's row is in the first part, v's in the second.
                let (low, high) = sets.split_at_mut(v * words);
                let mine = &mut high[..words];
                for (m, a) in mine.iter_mut().zip(&low[p * words..(p + 1) * words]) {
                    *m |= *a;
                }
                if let Some(b) = bit(p) {
                    mine[b / 64] |= 1 << (b % 64);
                }
            }
        }
        sets
    }

    /// [`Dag::ancestor_sets`] for descendants, built in reverse program order.
    fn descendant_sets(&self, words: usize, bit: impl Fn(usize) -> Option<usize>) -> Vec<u64> {
        let mut sets = vec![0u64; self.n * words];
        for v in (0..self.n).rev() {
            for &w in self.succs(v) {
                // v < w: v's row is in the first part, w's (complete) in the second.
                let (low, high) = sets.split_at_mut(w * words);
                let mine = &mut low[v * words..(v + 1) * words];
                for (m, t) in mine.iter_mut().zip(&high[..words]) {
                    *m |= *t;
                }
                if let Some(b) = bit(w) {
                    mine[b / 64] |= 1 << (b % 64);
                }
            }
        }
        sets
    }

    /// The ops of each stream, in program order.
    fn by_stream(&self) -> Vec<Vec<usize>> {
        let mut ops = vec![Vec::new(); self.streams.len()];
        for v in 0..self.n {
            ops[self.stream[v]].push(v);
        }
        ops
    }
}

/// `durations` with one entry per op of `graph`: missing entries count 0 and extra ones are
/// ignored, so a short slice gives bounds of the graph with those ops free (still below
/// every makespan with any durations for them).
fn fitted(graph: &Graph, durations: &[u64]) -> Vec<u64> {
    let mut d = durations[..durations.len().min(graph.len())].to_vec();
    d.resize(graph.len(), 0);
    d
}

/// Energy heads and tails of every op of `graph` with `durations` (one per op, ns; missing
/// ones count 0): `head[v]` is at most the start of `v` and `tail[v]` at most the time from
/// the end of `v` to the end of the step, in every schedule. See the `energy` docs in the
/// module overview: exact ancestor and descendant sums for the collectives
/// [`ENERGY_WORK_BUDGET`] allows, O((n + e) k / 64 + e s) time, O(n s) memory.
/// Deterministic. Schedulers may use the tails as priorities.
pub fn horizons(graph: &Graph, durations: &[u64]) -> Horizons {
    let d = fitted(graph, durations);
    energy::energy_horizons(&Dag::new(graph), &d, ENERGY_WORK_BUDGET)
}

/// Every bound of `graph` with `durations` (one per op, ns; missing ones count 0, see
/// [`horizons`]). See the module docs for each bound's cost. Deterministic.
pub fn bounds(graph: &Graph, durations: &[u64]) -> Bounds {
    bounds_with_budget(graph, durations, ENERGY_WORK_BUDGET)
}

/// [`bounds`] and, with `contention > 1` (compute slowed that many times while a collective
/// runs, as the simulator does), the contended bound ([`BoundKind::Contended`]; see the module
/// docs), with longest-path and energy heads and tails: a bound on the *contended* simulated
/// makespan of every plan. Cost: [`bounds`] plus O(256 n) per compute stream.
pub fn bounds_contended(graph: &Graph, durations: &[u64], contention: f64) -> Bounds {
    bounds_with(graph, durations, ENERGY_WORK_BUDGET, contention)
}

/// [`bounds_contended`] with the energy sums' work budget `energy_budget` instead of
/// [`ENERGY_WORK_BUDGET`] (counted work, about 1 ns each): a caller under a short time limit
/// gives it less, and gets weaker energy heads and tails (and fewer two-threshold contended
/// windows, in proportion), never invalid ones.
pub fn bounds_contended_within(
    graph: &Graph,
    durations: &[u64],
    contention: f64,
    energy_budget: u64,
) -> Bounds {
    bounds_with(graph, durations, energy_budget, contention)
}

/// [`bounds`] with the energy sums' work budget `budget` (tests degrade it).
fn bounds_with_budget(graph: &Graph, durations: &[u64], budget: u64) -> Bounds {
    bounds_with(graph, durations, budget, 1.0)
}

/// [`bounds_contended`] with the energy sums' work budget `budget`.
fn bounds_with(graph: &Graph, durations: &[u64], budget: u64, contention: f64) -> Bounds {
    let d = fitted(graph, durations);
    let dag = Dag::new(graph);
    let (head, tail) = dag.longest_paths(&d);
    let by_stream = dag.by_stream();
    let mut all = Vec::new();
    let cp = (0..dag.n)
        .map(|v| head[v].saturating_add(d[v]))
        .max()
        .unwrap_or(0);
    all.push(Bound {
        kind: BoundKind::CriticalPath,
        value_ns: cp,
        stream: None,
    });
    let busiest = by_stream
        .iter()
        .enumerate()
        .map(|(s, ops)| {
            let load = ops.iter().fold(0u64, |x, &v| x.saturating_add(d[v]));
            (load, dag.streams[s])
        })
        .max();
    if let Some((value_ns, s)) = busiest {
        all.push(Bound {
            kind: BoundKind::BusiestStream,
            value_ns,
            stream: Some(s),
        });
    }
    if dag.n <= PRECEDENCE_ENERGY_MAX_OPS {
        all.push(Bound {
            kind: BoundKind::PrecedenceEnergy,
            value_ns: precedence_energy(&dag, &d),
            stream: None,
        });
    }
    let per_stream = |head: &[u64], tail: &[u64]| {
        by_stream
            .iter()
            .enumerate()
            .map(|(s, ops)| (jackson(ops, head, tail, &d), dag.streams[s]))
            .max()
    };
    if let Some((value_ns, s)) = per_stream(&head, &tail) {
        all.push(Bound {
            kind: BoundKind::Jackson,
            value_ns,
            stream: Some(s),
        });
    }
    let (h, anc, desc) = energy::energy_horizons_and_sums(&dag, &d, budget);
    if let Some((value_ns, s)) = per_stream(&h.head, &h.tail) {
        all.push(Bound {
            kind: BoundKind::EnergyJackson,
            value_ns,
            stream: Some(s),
        });
    }
    // The two-threshold windows' work shrinks with the energy budget (a short time limit).
    let grid = (contended::GRID_WORK as u128 * u128::from(budget.min(ENERGY_WORK_BUDGET))
        / u128::from(ENERGY_WORK_BUDGET)) as usize;
    let caps = contended::overlap_caps(&dag, &d, &anc, &desc, contention);
    drop((anc, desc));
    let caps = caps.as_ref();
    let plain = contended::contended(&dag, &d, &head, &tail, contention, grid, caps);
    let energy = contended::contended(&dag, &d, &h.head, &h.tail, contention, grid, caps);
    // The pivot bound's thresholds and pivots shrink with the budget too.
    let count =
        (contended::THRESHOLDS * grid / contended::GRID_WORK).clamp(16, contended::THRESHOLDS);
    let pivots = (pivot::PIVOTS * grid / contended::GRID_WORK).clamp(1, pivot::PIVOTS);
    let pivoted = pivot::pivot(&dag, &d, &h.head, &h.tail, contention, count, pivots);
    if let Some((value_ns, s)) = plain.into_iter().chain(energy).chain(pivoted).max() {
        all.push(Bound {
            kind: BoundKind::Contended,
            value_ns,
            stream: Some(dag.streams[s]),
        });
    }
    Bounds { all }
}

/// The precedence-energy bound (see the module docs): ancestor bitsets in program order,
/// descendant bitsets in reverse, then per op the heaviest stream on each side.
fn precedence_energy(dag: &Dag, durations: &[u64]) -> u64 {
    let n = dag.n;
    let words = n.div_ceil(64);
    // The heaviest stream of each op's set (ancestors, or descendants).
    let heaviest = |sets: &[u64], v: usize| -> u64 {
        let mut load = vec![0u64; dag.streams.len()];
        for (w, &word) in sets[v * words..(v + 1) * words].iter().enumerate() {
            let mut bits = word;
            while bits != 0 {
                let u = w * 64 + bits.trailing_zeros() as usize;
                load[dag.stream[u]] = load[dag.stream[u]].saturating_add(durations[u]);
                bits &= bits - 1;
            }
        }
        load.into_iter().max().unwrap_or(0)
    };
    let anc = dag.ancestor_sets(words, Some);
    let before: Vec<u64> = (0..n).map(|v| heaviest(&anc, v)).collect();
    drop(anc);
    let desc = dag.descendant_sets(words, Some);
    (0..n)
        .map(|v| {
            before[v]
                .saturating_add(durations[v])
                .saturating_add(heaviest(&desc, v))
        })
        .max()
        .unwrap_or(0)
}
