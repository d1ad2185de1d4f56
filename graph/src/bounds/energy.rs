//! Energy heads and tails: lower bounds on when each op can start and on how long the step
//! still runs after it ends, from the work its ancestors and descendants put on each stream.
//!
//! Every ancestor of `v` on a stream `s` runs on `s`, one at a time, none before the smallest
//! head among them, and all end before `v` starts; so `v` starts no earlier than that
//! smallest head plus their total duration. The same holds for descendants, with tails. With
//! the longest path this gives, for each op,
//!
//! ```text
//! r'(v) = max( max over preds p of r'(p) + d(p),  max over s of min_{a in anc_s(v)} r'(a) + sum_{a in anc_s(v)} d(a) )
//! q'(v) = max( max over succs w of d(w) + q'(w),  max over s of min_{b in desc_s(v)} q'(b) + sum_{b in desc_s(v)} d(b) )
//! ```
//!
//! computed in one pass in program order (heads) and one in reverse (tails), so a head made
//! larger by energy raises the heads of every descendant in turn. Minima over ancestor sets
//! are exact by recursion (the minimum of a union is the minimum of the minima); sums are not
//! (ancestor sets overlap), and exact sums for every op need `n^2` bits. So sums are exact
//! where they matter for the one-machine bounds of the communication channels and of the
//! compute stream:
//!
//! - for each selected **collective** `c`, the total duration of its ancestors and of its
//!   descendants on **every** stream (compute included);
//! - for **every op** `v`, the total duration of its selected collective ancestors and
//!   descendants on each channel.
//!
//! Both come from one bit matrix "op `u` is an ancestor of collective `c`" and its mirror,
//! never stored whole: collectives go in blocks of 64, one `u64` per op and block, built in
//! reverse program order (an op's word is the OR of its consumers' words and bits) and
//! forward (the same with producers). Each word then adds, through tables of 256 entries per
//! byte, the block's collective durations to the op's row sums and the op's duration to the
//! block's column sums: O(n + e + 8 n) per block, O(n) memory. Every other sum (compute
//! ancestors of a compute op) is the largest over the op's producers of theirs plus the
//! producer's own duration, a subset of the true set and so a lower bound.
//!
//! Blocks are taken while their counted work ([`ENERGY_WORK_BUDGET`]) allows, collectives by
//! longest duration first (ties by program order); the ones left out count through the
//! recursion only. Any subset keeps every value a valid bound. The result is deterministic.

use super::Dag;

/// Counted work of the exact sums: an edge visited in a block counts 1, an op 2 (its word's
/// table lookups and additions), about 1 ns each on one core, so at most about 0.4 s. Above
/// it, fewer collectives get exact sums (see the module docs). Measured: 9.2e7 on a 41k-op
/// module with 1.7M dependencies, 1.5e8 on a 102k-op graph with 23k collectives (all exact).
pub const ENERGY_WORK_BUDGET: u64 = 400_000_000;

/// Counted work of one op visited in a block (its word's table lookups and additions).
const OP_WORK: u64 = 2;

/// Per-op lower bounds that hold in every schedule of the graph with these durations (see
/// [`horizons`](super::horizons)).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Horizons {
    /// The earliest start of each op (ns), indexed by op.
    pub head: Vec<u64>,
    /// The least time from each op's end to the end of the step (ns), indexed by op.
    pub tail: Vec<u64>,
    /// Collectives whose ancestor and descendant sums were computed exactly.
    pub exact_collectives: usize,
    /// Collectives in the graph.
    pub collectives: usize,
    /// Work the exact sums counted (see [`ENERGY_WORK_BUDGET`]).
    pub work: u64,
}

/// Sums per stream and op: `at(s, v)`.
pub(super) struct PerStream {
    n: usize,
    values: Vec<u64>,
}

impl PerStream {
    fn new(streams: usize, n: usize, value: u64) -> Self {
        Self {
            n,
            values: vec![value; streams * n],
        }
    }

    pub(super) fn at(&self, s: usize, v: usize) -> u64 {
        self.values[s * self.n + v]
    }

    fn raise(&mut self, s: usize, v: usize, x: u64) {
        let e = &mut self.values[s * self.n + v];
        *e = (*e).max(x);
    }

    fn lower(&mut self, s: usize, v: usize, x: u64) {
        let e = &mut self.values[s * self.n + v];
        *e = (*e).min(x);
    }

    fn add(&mut self, s: usize, v: usize, x: u64) {
        let e = &mut self.values[s * self.n + v];
        *e = e.saturating_add(x);
    }
}

/// Byte tables of one block: `table[pos][b]` is the total of `weight[j]` over the bits `k` of
/// `b`, with `j = 8 pos + k`.
type ByteTables = [[u64; 256]; 8];

fn byte_tables(weight: &[u64; 64]) -> Box<ByteTables> {
    let mut t = Box::new([[0u64; 256]; 8]);
    for (pos, row) in t.iter_mut().enumerate() {
        for b in 1..256usize {
            let low = b.trailing_zeros() as usize;
            row[b] = row[b & (b - 1)].saturating_add(weight[pos * 8 + low]);
        }
    }
    t
}

fn lookup(t: &ByteTables, word: u64) -> u64 {
    t.iter().enumerate().fold(0u64, |acc, (pos, row)| {
        acc.saturating_add(row[((word >> (8 * pos)) & 0xff) as usize])
    })
}

/// Column accumulators of one block and stream: `acc[pos][b]` is the total duration of the
/// ops whose word has byte `b` at `pos`.
fn accumulate(acc: &mut ByteTables, word: u64, duration: u64) {
    for (pos, row) in acc.iter_mut().enumerate() {
        let b = ((word >> (8 * pos)) & 0xff) as usize;
        if b != 0 {
            row[b] = row[b].saturating_add(duration);
        }
    }
}

/// Column `j` of accumulators: the total over the bytes at `j / 8` that have bit `j % 8`.
fn column(acc: &ByteTables, j: usize) -> u64 {
    let (pos, k) = (j / 8, j % 8);
    acc[pos]
        .iter()
        .enumerate()
        .filter(|(b, _)| b & (1 << k) != 0)
        .fold(0u64, |x, (_, &y)| x.saturating_add(y))
}

/// The collectives that get exact sums, in program order: the longest first (ties by program
/// order) while the blocks' counted work stays within `budget`.
pub(super) fn select(dag: &Dag, durations: &[u64], budget: u64) -> (Vec<usize>, u64) {
    let mut by_length: Vec<usize> = (0..dag.n).filter(|&v| dag.is_target(v)).collect();
    by_length.sort_unstable_by_key(|&v| (std::cmp::Reverse(durations[v]), v));
    let mut k = by_length.len();
    loop {
        let mut chosen = by_length[..k].to_vec();
        chosen.sort_unstable();
        let work = chosen.chunks(64).fold(0u64, |w, block| {
            w.saturating_add(block_work(dag, block[0], block[block.len() - 1]))
        });
        if work <= budget || k == 0 {
            return (chosen, work);
        }
        // Shrink in proportion, by whole blocks, and at least one block.
        let scaled = (k as u128 * budget as u128 / work as u128) as usize;
        k = (scaled / 64 * 64).min(k.saturating_sub(64));
    }
}

/// Counted work of a block whose collectives span `lo..=hi` in program order: the ops and
/// edges each of its two passes visits.
fn block_work(dag: &Dag, lo: usize, hi: usize) -> u64 {
    let ops = (hi + 1 + dag.n - lo) as u64;
    let edges = (dag.succ_at[hi + 1] + (dag.pred_at[dag.n] - dag.pred_at[lo])) as u64;
    ops.saturating_mul(OP_WORK).saturating_add(edges)
}

/// Exact sums over the `chosen` collectives (see the module docs): `(anc, desc)` with, for
/// every op, the total duration of its chosen collective ancestors (descendants) on each
/// channel, and for each chosen collective, the total duration of all its ancestors
/// (descendants) on every stream.
pub(super) fn exact_sums(dag: &Dag, durations: &[u64], chosen: &[usize]) -> (PerStream, PerStream) {
    let n = dag.n;
    let streams = dag.streams.len();
    let mut anc = PerStream::new(streams, n, 0);
    let mut desc = PerStream::new(streams, n, 0);
    let mut word = vec![0u64; n];
    let mut bit = vec![0u64; n];
    // Column sums (exact, per chosen collective), applied once every row sum is in: a row
    // adds up over blocks, a column replaces.
    let mut anc_columns: Vec<(usize, usize, u64)> = Vec::new();
    let mut desc_columns: Vec<(usize, usize, u64)> = Vec::new();
    for block in chosen.chunks(64) {
        let (lo, hi) = (block[0], block[block.len() - 1]);
        for (j, &c) in block.iter().enumerate() {
            bit[c] = 1 << j;
        }
        // Row tables per channel present in the block.
        let rows: Vec<(usize, Box<ByteTables>)> = (0..streams)
            .filter(|&s| block.iter().any(|&c| dag.stream[c] == s))
            .map(|s| {
                let mut weight = [0u64; 64];
                for (j, &c) in block.iter().enumerate() {
                    if dag.stream[c] == s {
                        weight[j] = durations[c];
                    }
                }
                (s, byte_tables(&weight))
            })
            .collect();
        let mut acc: Vec<ByteTables> = vec![[[0u64; 256]; 8]; streams];
        // Descendants: word[u] = the block's collectives that are strict descendants of u.
        for u in (0..=hi).rev() {
            let mut w = 0u64;
            for &s in dag.succs(u) {
                if s > hi {
                    break;
                }
                w |= word[s] | bit[s];
            }
            word[u] = w;
            if w != 0 {
                for (s, t) in &rows {
                    desc.add(*s, u, lookup(t, w));
                }
                accumulate(&mut acc[dag.stream[u]], w, durations[u]);
            }
        }
        for (j, &c) in block.iter().enumerate() {
            for (s, a) in acc.iter().enumerate() {
                anc_columns.push((s, c, column(a, j)));
            }
        }
        // Ancestors: word[u] = the block's collectives that are strict ancestors of u.
        let mut acc: Vec<ByteTables> = vec![[[0u64; 256]; 8]; streams];
        for u in lo..n {
            let mut w = 0u64;
            for &p in dag.preds(u).iter().rev() {
                if p < lo {
                    break;
                }
                w |= word[p] | bit[p];
            }
            word[u] = w;
            if w != 0 {
                for (s, t) in &rows {
                    anc.add(*s, u, lookup(t, w));
                }
                accumulate(&mut acc[dag.stream[u]], w, durations[u]);
            }
        }
        for (j, &c) in block.iter().enumerate() {
            for (s, a) in acc.iter().enumerate() {
                desc_columns.push((s, c, column(a, j)));
            }
        }
        for &c in block {
            bit[c] = 0;
        }
    }
    for (s, c, x) in anc_columns {
        anc.raise(s, c, x);
    }
    for (s, c, x) in desc_columns {
        desc.raise(s, c, x);
    }
    (anc, desc)
}

/// Energy heads and tails of `dag` (see the module docs), at least `head` and `tail` (the
/// longest paths), with exact sums for the collectives `budget` allows.
pub(super) fn energy_horizons(dag: &Dag, durations: &[u64], budget: u64) -> Horizons {
    energy_horizons_and_sums(dag, durations, budget).0
}

/// [`energy_horizons`] and the sums it used, `(horizons, anc, desc)`: `anc.at(s, v)` is at
/// most the total duration of the ancestors of `v` on stream `s` (exactly it for the chosen
/// collectives), and `desc` the same for descendants.
pub(super) fn energy_horizons_and_sums(
    dag: &Dag,
    durations: &[u64],
    budget: u64,
) -> (Horizons, PerStream, PerStream) {
    let n = dag.n;
    let streams = dag.streams.len();
    let (chosen, work) = select(dag, durations, budget);
    let (mut anc, mut desc) = exact_sums(dag, durations, &chosen);
    // Every other sum: the largest of a producer's (consumer's) plus its own duration.
    for v in 0..n {
        for &p in dag.preds(v) {
            for s in 0..streams {
                let own = if dag.stream[p] == s { durations[p] } else { 0 };
                anc.raise(s, v, anc.at(s, p).saturating_add(own));
            }
        }
    }
    for v in (0..n).rev() {
        for &w in dag.succs(v) {
            for s in 0..streams {
                let own = if dag.stream[w] == s { durations[w] } else { 0 };
                desc.raise(s, v, desc.at(s, w).saturating_add(own));
            }
        }
    }
    // Heads, in program order; `least` is the smallest head of an ancestor on each stream.
    let mut head = vec![0u64; n];
    let mut least = PerStream::new(streams, n, u64::MAX);
    for v in 0..n {
        let mut h = dag.release[v];
        for &p in dag.preds(v) {
            h = h.max(head[p].saturating_add(durations[p]));
            for s in 0..streams {
                least.lower(s, v, least.at(s, p));
            }
            least.lower(dag.stream[p], v, head[p]);
        }
        for s in 0..streams {
            let m = least.at(s, v);
            if m != u64::MAX {
                h = h.max(m.saturating_add(anc.at(s, v)));
            }
        }
        head[v] = h;
    }
    let mut tail = vec![0u64; n];
    let mut least = PerStream::new(streams, n, u64::MAX);
    for v in (0..n).rev() {
        let mut q = 0u64;
        for &w in dag.succs(v) {
            q = q.max(durations[w].saturating_add(tail[w]));
            for s in 0..streams {
                least.lower(s, v, least.at(s, w));
            }
            least.lower(dag.stream[w], v, tail[w]);
        }
        for s in 0..streams {
            let m = least.at(s, v);
            if m != u64::MAX {
                q = q.max(m.saturating_add(desc.at(s, v)));
            }
        }
        tail[v] = q;
    }
    let horizons = Horizons {
        head,
        tail,
        exact_collectives: chosen.len(),
        collectives: (0..n).filter(|&v| dag.is_target(v)).count(),
        work,
    };
    (horizons, anc, desc)
}
