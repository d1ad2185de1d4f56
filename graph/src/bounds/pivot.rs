//! The pivot bound: the contended bound of [`super::contended`] with a final stretch that the
//! channel must spend on one collective's chain.
//!
//! Take a compute stream `s`, a channel `k`, a collective `x` on `k` (the pivot) and a window
//! start `r` no later than `x`'s head; let `S >= r` be `x`'s start, `C` the work of `k`,
//! `b = min(r, before)` what `k` can do before `r` (as in the contended bound), `J` the ops of
//! `s` with a head at least `r`. Every
//! ancestor of `x` ends by `S`; let `L` be the other ops of `J` that end after `S`. After `S`
//! the channel runs `x` and its descendants on `k` (work `Q`), and the collectives on `k` that
//! descend from `L` (work `D(L)`), none of which can start before `S`; so `T - S >= Δ` with
//! `Δ = max(Q + D(L), d(x) + tail(x))`, and `k` does at most `T - S` of its work after `S`.
//! In `[r, S]` the contended argument gives `S - r >= W(J \ L) + (1 - 1/c) C_in` with
//! `C_in >= C - b - (T - S)`. Adding the two, with `(1 - 1/c) (T - S)` moved over:
//!
//! `T >= r + W(J) + (1 - 1/c) (C - b) + min_L [ Δ(L) / c - W(L) ]`.
//!
//! The minimum over `L` is bounded below without enumerating: `Δ(L) >= Q + D(L)`, and `D(L)`
//! at least `Σ_{v in L} p(v)` where `p(v)` shares each collective `y` below `v` equally among
//! the `m(y)` ops of `s` it lies below (`p(v) = Σ d(y) / m(y)`), so the minimum is at least
//! `Q / c - Σ_{v in J} max(0, d(v) - p(v) / c)`; also at least `(d(x) + tail(x)) / c - W(J \
//! A)` (`A` the ancestors of `x`). A weight-gradient GEMM that could run after the last
//! gradient's reduce-scatter (its tail is short) must then bring its own reduce-scatter and
//! all-gather into that stretch, which costs more than the GEMM saves: on a ZeRO-2 step the
//! last bucket's reduce-scatter, update and all-gather are a stretch of pure communication
//! that the plain contended bound lets compute fill.
//!
//! Pivots: the [`PIVOTS`] collectives with the largest `d(x) + tail(x)` (fewer under a smaller
//! budget); the collectives below each op are searched up to [`REACH`] ops (a subset of them
//! only weakens `p`). Cost per pivot and compute stream: O(n + |J| REACH + thresholds *
//! collectives).

use super::contended::{rates, spaced_starts, UNITS};
use super::Dag;

/// Most pivots tried.
pub(super) const PIVOTS: usize = 8;

/// Most ops visited below each op when collecting the collectives it must precede.
const REACH: usize = 64;

/// The pivot bound (see the module docs) over every compute stream and the pivots, with heads
/// `head`, tails `tail`, contention `contention` and `count` window starts per stream; `None`
/// without a compute stream or a collective, or at `contention = 1`. `pivots` caps the pivots.
pub(super) fn pivot(
    dag: &Dag,
    durations: &[u64],
    head: &[u64],
    tail: &[u64],
    contention: f64,
    count: usize,
    pivots: usize,
) -> Option<(u64, usize)> {
    let (slowed, lost) = rates(contention)?;
    let mut comm: Vec<usize> = (0..dag.n).filter(|&v| dag.is_target(v)).collect();
    if comm.is_empty() {
        return None;
    }
    comm.sort_unstable_by_key(|&x| (std::cmp::Reverse(durations[x].saturating_add(tail[x])), x));
    // Per compute stream, its ops by head and the positions of the window starts: the same
    // for every pivot.
    let by_stream: Vec<Option<(Vec<usize>, Vec<usize>)>> = dag
        .by_stream()
        .into_iter()
        .enumerate()
        .map(|(s, mut ops)| {
            (!ops.is_empty() && !dag.streams[s].is_comm()).then(|| {
                ops.sort_unstable_by_key(|&v| (head[v], v));
                let starts = spaced_starts(&ops, head, count);
                (ops, starts)
            })
        })
        .collect();
    let mut marks = Marks::new(dag.n);
    let mut best: Option<(u64, usize)> = None;
    for &x in comm.iter().take(pivots) {
        let k = dag.stream[x];
        let below = marks.closure(dag, x, true);
        let above = marks.closure(dag, x, false);
        let chain = (0..dag.n)
            .filter(|&y| below[y] && dag.stream[y] == k)
            .fold(0u64, |a, y| a.saturating_add(durations[y]));
        let stretch = durations[x].saturating_add(tail[x]);
        let channel: Vec<usize> = comm
            .iter()
            .copied()
            .filter(|&y| dag.stream[y] == k)
            .collect();
        let total = channel
            .iter()
            .fold(0u64, |a, &y| a.saturating_add(durations[y]));
        for (s, (ops, starts)) in by_stream
            .iter()
            .enumerate()
            .filter_map(|(s, x)| x.as_ref().map(|x| (s, x)))
        {
            let free: Vec<usize> = ops.iter().copied().filter(|&v| !above[v]).collect();
            let loss = losses(dag, durations, &free, k, &below, &mut marks, slowed);
            // Per op of `s`: its work, and (for ops not above x) what it may save by ending
            // after S, and its work again (the second form's W(J \ A)).
            let mut saving = vec![(0u64, 0u64); dag.n];
            for (&v, &l) in free.iter().zip(&loss) {
                saving[v] = (l, durations[v]);
            }
            // The window must begin by the pivot's start (`r <= S`).
            let windows = windows(ops, starts, durations, head, &saving);
            for (r, w, lossy, loose) in windows.into_iter().filter(|&(r, ..)| r <= head[x]) {
                let before = channel
                    .iter()
                    .filter(|&&y| head[y] < r)
                    .fold(0u64, |a, &y| {
                        a.saturating_add(durations[y].min(r - head[y]))
                    });
                let inside = total.saturating_sub(before.min(r));
                let base = i128::from(r) + i128::from(w) + i128::from(scale(inside, lost));
                let first = i128::from(scale(chain, slowed)) - i128::from(lossy);
                let second = i128::from(scale(stretch, slowed)) - i128::from(loose);
                let value = base + first.max(second);
                let value = u64::try_from(value.max(0)).unwrap_or(u64::MAX);
                if best.is_none_or(|(b, _)| value > b) {
                    best = Some((value, s));
                }
            }
        }
    }
    best
}

/// `amount * rate / UNITS`, rounded down.
fn scale(amount: u64, rate: u64) -> u64 {
    (u128::from(amount) * u128::from(rate) / u128::from(UNITS)) as u64
}

/// Per op of `free`: `max(0, d(v) - p(v) / c)` (see the module docs), `p(v)` over the
/// collectives of channel `k` below `v` that are not below the pivot (`below`), found within
/// [`REACH`] ops.
fn losses(
    dag: &Dag,
    durations: &[u64],
    free: &[usize],
    k: usize,
    below: &[bool],
    marks: &mut Marks,
    slowed: u64,
) -> Vec<u64> {
    let mut found: Vec<Vec<usize>> = Vec::with_capacity(free.len());
    let mut sharers = vec![0u64; dag.n];
    for &v in free {
        let ys = marks.reach(dag, v, REACH, |y| !below[y] && dag.stream[y] == k, below);
        for &y in &ys {
            sharers[y] += 1;
        }
        found.push(ys);
    }
    free.iter()
        .zip(&found)
        .map(|(&v, ys)| {
            let share = ys.iter().fold(0u128, |a, &y| {
                a + u128::from(durations[y]) * u128::from(slowed)
                    / (u128::from(UNITS) * u128::from(sharers[y]))
            });
            durations[v].saturating_sub(u64::try_from(share).unwrap_or(u64::MAX))
        })
        .collect()
}

/// The windows of one compute stream, its ops `sorted` by head and `starts` the positions
/// in it where windows begin ([`spaced_starts`]): `(r, W(J), Σ loss, Σ work)` over `J` = the
/// ops with a head at least `r`, the sums over `saving`'s `(loss, work)` (zero for the
/// ancestors of the pivot). O(n).
fn windows(
    sorted: &[usize],
    starts: &[usize],
    durations: &[u64],
    head: &[u64],
    saving: &[(u64, u64)],
) -> Vec<(u64, u64, u64, u64)> {
    let n = sorted.len();
    let mut sums = vec![(0u64, 0u64, 0u64); n + 1];
    for i in (0..n).rev() {
        let v = sorted[i];
        let (w, l, f) = sums[i + 1];
        sums[i] = (
            w.saturating_add(durations[v]),
            l.saturating_add(saving[v].0),
            f.saturating_add(saving[v].1),
        );
    }
    starts
        .iter()
        .map(|&i| (head[sorted[i]], sums[i].0, sums[i].1, sums[i].2))
        .collect()
}

/// Scratch marks for graph searches, stamped so that no search clears them.
struct Marks {
    stamp: Vec<u32>,
    now: u32,
    stack: Vec<usize>,
}

impl Marks {
    fn new(n: usize) -> Marks {
        Marks {
            stamp: vec![0; n],
            now: 0,
            stack: Vec::new(),
        }
    }

    fn next(&mut self) {
        self.now = self.now.wrapping_add(1);
        if self.now == 0 {
            self.stamp.iter_mut().for_each(|s| *s = 0);
            self.now = 1;
        }
    }

    /// `x` and its descendants (`down`) or its ancestors without `x` (`!down`), as flags.
    fn closure(&mut self, dag: &Dag, x: usize, down: bool) -> Vec<bool> {
        let mut flag = vec![false; dag.n];
        self.stack.clear();
        self.stack.push(x);
        if down {
            flag[x] = true;
        }
        while let Some(v) = self.stack.pop() {
            let next = if down { dag.succs(v) } else { dag.preds(v) };
            for &w in next {
                if !flag[w] {
                    flag[w] = true;
                    self.stack.push(w);
                }
            }
        }
        flag
    }

    /// The ops below `v` that satisfy `wanted`, searching at most `limit` ops and not past
    /// `stop` ops (whose descendants are never wanted).
    fn reach(
        &mut self,
        dag: &Dag,
        v: usize,
        limit: usize,
        wanted: impl Fn(usize) -> bool,
        stop: &[bool],
    ) -> Vec<usize> {
        self.next();
        let now = self.now;
        let mut out = Vec::new();
        let mut visited = 0;
        self.stack.clear();
        self.stack.push(v);
        self.stamp[v] = now;
        while let Some(u) = self.stack.pop() {
            for &w in dag.succs(u) {
                if self.stamp[w] == now || stop[w] {
                    continue;
                }
                self.stamp[w] = now;
                visited += 1;
                if wanted(w) {
                    out.push(w);
                }
                if visited >= limit {
                    return out;
                }
                self.stack.push(w);
            }
        }
        out
    }
}
