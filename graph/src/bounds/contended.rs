//! The contended bound: a compute stream's work plus what the collectives that must run beside
//! it cost it.
//!
//! While some collective runs, compute progresses `1/c` times as fast ([`crate::simulate`]).
//! Take one compute stream with work `W` (at full speed) and a window `[r, T - q]` that all of
//! its ops `J` lie in (`r` their smallest head, `q` their smallest tail). Let `C` be the time
//! inside the window during which some collective runs, `O` the part of it during which the
//! stream also computes. The stream is busy `W + O (1 - 1/c)` (the work done while slowed
//! takes `c` times as long), and outside its busy time the collectives still take `C - O`;
//! so `T - q - r >= W + O (1 - 1/c) + C - O = W + C - O / c >= W + (1 - 1/c) C`, since
//! `O <= C`. Collectives run at full speed and those of one channel never overlap, so `C` is
//! at least each channel's work inside the window: its total work, less what can run before
//! `r` (at most `r`, and at most `min(d(x), r - head(x))` of each collective `x` with a head
//! below `r`) and what can run after `T - q` (at most `q`, and at most
//! `min(d(x), q - tail(x))` of each `x` with a tail below `q`). Hence
//!
//! `T >= r + q + W + (1 - 1/c) max_channel (total - min(r, before) - min(q, after))`.
//!
//! With `r = q = 0` every collective counts (`W + (1 - 1/c) * busiest channel`); larger
//! windows trade collectives for heads and tails (a collective free to run at any time, such
//! as a ZeRO-3 all-gather, still counts beyond what the channel can do before `r`). Each
//! compute stream is tried with `J` = its ops whose head is at least a threshold (for up to
//! [`THRESHOLDS`] thresholds: every distinct head below that count, evenly spaced ones above),
//! with `J` = its ops whose tail is at least a threshold (the same way), and, where the
//! graph is small enough, with both thresholds at once (`grid`). `1/c` is the
//! simulator's own discrete rate (`round(1000 / c) / 1000`), and the product is rounded down,
//! so the bound holds for simulated makespans exactly. Without contention (`c = 1`) it is the
//! Jackson argument's `r + W + q` and adds nothing. Cost: O(THRESHOLDS * (n + collectives))
//! per compute stream.
//!
//! **Overlap caps** ([`overlap_caps`]). `O <= C` assumes every collective can be hidden behind
//! compute. While a collective `x` runs, the stream can run only ops that are neither
//! ancestors nor descendants of `x`; their work `I(x)`, slowed throughout, takes at most
//! `I(x) c` plus 1 ns of rounding per op. For a group `G` of collectives (which never run at
//! once on one channel, and whose overlaps add up in any case), the ops that can run beside
//! any of them are the union `U_G` of those sets, so the time `G` hides is at most
//! `min(sum_G d, c W(U_G) + |U_G|)`. Summed over a split of the collectives into groups, this
//! caps `O <= S`, and `T - q - r >= W + C - min(C, S) / c`, which grows with `C`:
//!
//! `T >= r + q + W + (C - min(C, S)) + (1 - 1/c) min(C, S)`.
//!
//! The groups are runs of collectives in program order, the best split found by a shortest
//! path over the runs (`grouped_cap`). Only the window's ops `J` count in `O`, so a window's
//! cap counts the ops with a head at least `r` and a tail at least `q` (a superset of `J`)
//! where [`WINDOW_CAPS_WORK`] allows, and the stream's cap elsewhere. The forward all-reduces
//! of a tensor-parallel step each sit between the GEMM that produces their tensor and the one
//! that consumes it; the few side ops that could hide them are the same for all of them and
//! count once, so the all-reduces count at nearly their full length instead of at `1 - 1/c`
//! of it. This is the overlap
//! argument of the one-machine bounds with the independent sets of Carlier and Pinson's
//! adjusted heads and tails, applied to the time a channel can hide. Cost: O((n + e) k / 64)
//! for the reachability bitsets and O(n k + k^2) per compute stream for `k` collectives, within
//! [`GROUP_MAX_BITS`] and [`GROUP_MAX_COLLECTIVES`]; above them each collective is its own
//! group, with `I(x)` the stream's work less the ancestor and descendant sums of the energy
//! heads (exact for the collectives their budget covers, a lower bound, so a larger `I(x)`, for
//! the rest), O(k) per compute stream.

use super::energy::PerStream;
use super::Dag;

/// Most head thresholds tried per compute stream.
pub(super) const THRESHOLDS: usize = 256;

/// Work units per ns at full speed (the simulator's).
pub(super) const UNITS: u64 = 1000;

/// The simulator's rate of compute beside a collective and what it loses, in [`UNITS`] per
/// ns: `(round(UNITS / c), UNITS - that)`; `None` when nothing is lost (`c = 1`, or not a
/// number above 1).
pub(super) fn rates(contention: f64) -> Option<(u64, u64)> {
    if !(contention.is_finite() && contention > 1.0) {
        return None;
    }
    let slowed = ((UNITS as f64 / contention).round() as u64).clamp(1, UNITS);
    let lost = UNITS - slowed;
    (lost > 0).then_some((slowed, lost))
}

/// Most `ops x collectives` for which [`overlap_caps`] builds the independence sets and groups
/// collectives (8 MiB of bits each way); above it, every collective is its own group.
pub(super) const GROUP_MAX_BITS: usize = 1 << 26;

/// Most collectives [`overlap_caps`] groups (its table has one entry per pair).
pub(super) const GROUP_MAX_COLLECTIVES: usize = 1024;

/// Most counted work of the caps per window ([`Caps::within`]: windows times `(ops x
/// collectives + collectives^2)` per compute stream, about 1 ns each); above it, every window
/// of the stream uses the stream's cap.
pub(super) const WINDOW_CAPS_WORK: usize = 50_000_000;

/// The overlap caps of the compute streams (see the module docs).
pub(super) struct Caps {
    /// Per stream index: the cap over all the stream's ops; `u64::MAX` for the channels.
    all: Vec<u64>,
    /// The collectives, in program order.
    comm: Vec<usize>,
    /// Their reachability, when small enough to group them.
    related: Option<Related>,
    /// The simulator's slowed rate (units per ns).
    slowed: u64,
}

impl Caps {
    /// Slowed throughout, `work` ns of compute in `ops` ops take `work * UNITS / slowed` ns,
    /// plus 1 ns of rounding per op.
    fn slowed_ns(&self, work: u64, ops: u64) -> u64 {
        let t = (u128::from(work) * u128::from(UNITS)).div_ceil(u128::from(self.slowed));
        (t.min(u128::from(u64::MAX)) as u64).saturating_add(ops)
    }

    /// The cap of the ops `ops` of a compute stream alone (a window's `J`), grouped; `None`
    /// when the collectives are not grouped.
    fn within(&self, ops: &[usize], durations: &[u64]) -> Option<u64> {
        let related = self.related.as_ref()?;
        Some(grouped_cap(related, ops, durations, &self.comm, |w, c| {
            self.slowed_ns(w, c)
        }))
    }

    /// Whether [`Caps::within`] fits `windows` windows of a stream of `ops` ops.
    fn per_window(&self, windows: usize, ops: usize) -> bool {
        let k = self.comm.len();
        self.related.is_some()
            && windows.saturating_mul(ops.saturating_mul(k).saturating_add(k * k))
                <= WINDOW_CAPS_WORK
    }
}

/// The overlap caps (see the module docs), from `anc` and `desc` (lower bounds on each
/// collective's ancestor and descendant sums per stream); `None` at `contention = 1`.
pub(super) fn overlap_caps(
    dag: &Dag,
    durations: &[u64],
    anc: &PerStream,
    desc: &PerStream,
    contention: f64,
) -> Option<Caps> {
    let (slowed, _) = rates(contention)?;
    let comm: Vec<usize> = (0..dag.n).filter(|&v| dag.is_target(v)).collect();
    let related = (comm.len() <= GROUP_MAX_COLLECTIVES
        && dag.n.saturating_mul(comm.len()) <= GROUP_MAX_BITS)
        .then(|| Related::new(dag, &comm));
    let mut caps = Caps {
        all: vec![u64::MAX; dag.streams.len()],
        comm,
        related,
        slowed,
    };
    for (s, ops) in dag.by_stream().iter().enumerate() {
        if ops.is_empty() || dag.streams[s].is_comm() {
            continue;
        }
        let work = ops
            .iter()
            .fold(0u64, |a, &v| a.saturating_add(durations[v]));
        let count = ops.len() as u64;
        caps.all[s] = match caps.within(ops, durations) {
            Some(cap) => cap,
            None => caps.comm.iter().fold(0u64, |cap, &x| {
                let independent = work
                    .saturating_sub(anc.at(s, x))
                    .saturating_sub(desc.at(s, x));
                cap.saturating_add(durations[x].min(caps.slowed_ns(independent, count)))
            }),
        };
    }
    Some(caps)
}

/// Which collectives each op follows and precedes: bitsets over the collectives (in program
/// order), one row of `words` per op. O((n + e) k / 64) time and `2 n k / 8` bytes.
struct Related {
    words: usize,
    anc: Vec<u64>,
    desc: Vec<u64>,
}

impl Related {
    fn new(dag: &Dag, comm: &[usize]) -> Related {
        let (n, words) = (dag.n, comm.len().div_ceil(64));
        let mut index = vec![usize::MAX; n];
        for (i, &x) in comm.iter().enumerate() {
            index[x] = i;
        }
        let bit = |u: usize| (index[u] != usize::MAX).then_some(index[u]);
        let anc = dag.ancestor_sets(words, bit);
        let desc = dag.descendant_sets(words, bit);
        Related { words, anc, desc }
    }

    /// Whether op `v` may run while the `i`-th collective does: neither is above the other.
    fn independent(&self, v: usize, i: usize) -> bool {
        let (w, bit) = (v * self.words + i / 64, 1u64 << (i % 64));
        self.anc[w] & bit == 0 && self.desc[w] & bit == 0
    }
}

/// The overlap cap of one compute stream's `ops` over groups of collectives: the collectives,
/// in program order, split into runs; a run `G` hides at most `min(sum_G d, c W(U_G) + |U_G|)`
/// (`U_G` the ops independent of some collective of `G`: only they run while `G` does), and
/// the best split is a shortest path over the runs' ends. Singleton runs give the per-collective
/// cap of the module docs; a run of collectives that share their independent compute (the
/// forward all-reduces of tensor parallelism, which only a few side ops can hide) counts that
/// compute once. O(n k + k^2) for `k` collectives.
fn grouped_cap(
    related: &Related,
    ops: &[usize],
    durations: &[u64],
    comm: &[usize],
    slowed_ns: impl Fn(u64, u64) -> u64,
) -> u64 {
    let k = comm.len();
    // `joins[i * k + j]`: work and ops that first become independent at `j` of a run from `i`.
    let mut joins = vec![(0u64, 0u64); k * k];
    let mut next = vec![usize::MAX; k + 1];
    for &v in ops {
        for i in (0..k).rev() {
            next[i] = if related.independent(v, i) {
                i
            } else {
                next[i + 1]
            };
        }
        for i in 0..k {
            if next[i] != usize::MAX {
                let e = &mut joins[i * k + next[i]];
                *e = (e.0.saturating_add(durations[v]), e.1 + 1);
            }
        }
    }
    // best[j]: the least cap of the first j collectives.
    let mut best = vec![u64::MAX; k + 1];
    best[0] = 0;
    for i in 0..k {
        let (mut length, mut work, mut count) = (0u64, 0u64, 0u64);
        for j in i..k {
            length = length.saturating_add(durations[comm[j]]);
            let (w, c) = joins[i * k + j];
            work = work.saturating_add(w);
            count += c;
            let cap = best[i].saturating_add(length.min(slowed_ns(work, count)));
            best[j + 1] = best[j + 1].min(cap);
        }
    }
    best[k]
}

/// The contended bound (see the module docs) over every compute stream, with `head` and `tail`
/// (any valid heads and tails: longest paths or energy ones) and the contention factor
/// `contention`, the two-threshold windows within `grid_work` ([`grid`]), and the overlap caps
/// `caps` ([`overlap_caps`]: per window `J` where [`WINDOW_CAPS_WORK`] allows, else per
/// stream; `None`: every collective may be hidden); `None` without a compute stream or a
/// collective, or at `contention = 1`.
pub(super) fn contended(
    dag: &Dag,
    durations: &[u64],
    head: &[u64],
    tail: &[u64],
    contention: f64,
    grid_work: usize,
    caps: Option<&Caps>,
) -> Option<(u64, usize)> {
    let (_, lost) = rates(contention)?;
    let streams = dag.streams.len();
    let comm: Vec<usize> = (0..dag.n).filter(|&v| dag.is_target(v)).collect();
    if comm.is_empty() {
        return None;
    }
    let by_stream = dag.by_stream();
    // Fewer thresholds under a smaller grid budget (a short time limit), never below 16.
    let count = (THRESHOLDS * grid_work / GRID_WORK).clamp(16, THRESHOLDS);
    let mut best: Option<(u64, usize)> = None;
    let (mut total, mut before, mut after) = (
        vec![0u64; streams],
        vec![0u64; streams],
        vec![0u64; streams],
    );
    for (s, ops) in by_stream.iter().enumerate() {
        if ops.is_empty() || dag.streams[s].is_comm() {
            continue;
        }
        // Windows from head thresholds (J: ops with a head at least r; q their least tail),
        // then from tail thresholds (J: ops with a tail at least q; r their least head).
        let mut windows: Vec<(u64, u64, u64)> = vec![(
            0,
            0,
            ops.iter()
                .map(|&v| durations[v])
                .fold(0u64, u64::saturating_add),
        )];
        windows.extend(thresholds(ops, durations, head, tail, count));
        windows.extend(
            thresholds(ops, durations, tail, head, count)
                .into_iter()
                .map(|(q, r, w)| (r, q, w)),
        );
        windows.extend(grid(ops, durations, head, tail, comm.len(), grid_work));
        let per_window = caps.is_some_and(|caps| caps.per_window(windows.len(), ops.len()));
        let mut inside: Vec<usize> = Vec::with_capacity(ops.len());
        for (r, q, w) in windows {
            total.iter_mut().for_each(|x| *x = 0);
            before.iter_mut().for_each(|x| *x = 0);
            after.iter_mut().for_each(|x| *x = 0);
            for &x in &comm {
                let k = dag.stream[x];
                total[k] = total[k].saturating_add(durations[x]);
                if head[x] < r {
                    before[k] = before[k].saturating_add(durations[x].min(r - head[x]));
                }
                if tail[x] < q {
                    after[k] = after[k].saturating_add(durations[x].min(q - tail[x]));
                }
            }
            let c = (0..streams)
                .map(|k| {
                    total[k]
                        .saturating_sub(before[k].min(r))
                        .saturating_sub(after[k].min(q))
                })
                .max()
                .unwrap_or(0);
            // At most `cap` of `c` overlaps the window's compute (its ops `J` are among those
            // with a head at least `r` and a tail at least `q`); the rest is exposed.
            let cap = match caps {
                None => u64::MAX,
                Some(caps) if per_window && (r, q) != (0, 0) => {
                    inside.clear();
                    inside.extend(ops.iter().filter(|&&v| head[v] >= r && tail[v] >= q));
                    caps.within(&inside, durations).unwrap_or(caps.all[s])
                }
                Some(caps) => caps.all[s],
            };
            let hidden = c.min(cap);
            let slowdown = (u128::from(hidden) * u128::from(lost) / u128::from(UNITS)) as u64;
            let extra = (c - hidden).saturating_add(slowdown);
            let value = r.saturating_add(q).saturating_add(w).saturating_add(extra);
            if best.is_none_or(|(b, _)| value > b) {
                best = Some((value, s));
            }
        }
    }
    best
}

/// Counted work of the two-threshold windows ([`grid`]) per compute stream: windows times
/// (ops + collectives), about 1 ns each (less under a smaller energy budget).
pub(super) const GRID_WORK: usize = 20_000_000;

/// Windows from a head threshold and a tail threshold at once: `(r, q, work)` for `J` = the
/// ops of `ops` whose head is at least `r` and whose tail is at least `q`, over `k` evenly
/// spaced distinct heads and `k` tails, `k` the largest that keeps `k^2 (n + collectives)`
/// within `work` ([`GRID_WORK`] by default; at most [`THRESHOLDS`]; none below 2). A step whose start cannot
/// overlap communication (a forward pass before any gradient) and whose end cannot overlap
/// compute (the last gradient's reduce-scatter, an update, its all-gather) needs both.
/// O(k^2 n).
fn grid(
    ops: &[usize],
    durations: &[u64],
    head: &[u64],
    tail: &[u64],
    collectives: usize,
    work: usize,
) -> Vec<(u64, u64, u64)> {
    let per_window = ops.len() + collectives;
    let k = ((work / per_window.max(1)) as f64).sqrt() as usize;
    let k = k.min(THRESHOLDS);
    if k < 2 {
        return Vec::new();
    }
    let spaced = |key: &[u64]| -> Vec<u64> {
        let mut v: Vec<u64> = ops.iter().map(|&o| key[o]).collect();
        v.sort_unstable();
        v.dedup();
        if v.len() > k {
            let step = v.len() as f64 / k as f64;
            v = (0..k).map(|i| v[(i as f64 * step) as usize]).collect();
        }
        v
    };
    let (rs, qs) = (spaced(head), spaced(tail));
    let mut out = Vec::with_capacity(rs.len() * qs.len());
    for &r in &rs {
        for &q in &qs {
            let w = ops
                .iter()
                .filter(|&&v| head[v] >= r && tail[v] >= q)
                .fold(0u64, |a, &v| a.saturating_add(durations[v]));
            if w > 0 {
                out.push((r, q, w));
            }
        }
    }
    out
}

/// The windows of one compute stream's ops `ops` by thresholds on `key` (heads, or tails):
/// `(threshold, least other, work)` for `J` = the ops whose `key` is at least the threshold,
/// `least other` the smallest `other` (tails, or heads) over `J` and `work` their durations'
/// sum; up to `count` thresholds ([`THRESHOLDS`] by default; every distinct value below that count, evenly spaced
/// ones above). O(n log n).
fn thresholds(
    ops: &[usize],
    durations: &[u64],
    key: &[u64],
    other: &[u64],
    count: usize,
) -> Vec<(u64, u64, u64)> {
    let mut sorted = ops.to_vec();
    sorted.sort_unstable_by_key(|&v| (key[v], v));
    // Suffix sums of work and suffix minima of `other`, by `key`.
    let n = sorted.len();
    let mut work = vec![0u64; n + 1];
    let mut least = vec![u64::MAX; n + 1];
    for k in (0..n).rev() {
        let v = sorted[k];
        work[k] = work[k + 1].saturating_add(durations[v]);
        least[k] = least[k + 1].min(other[v]);
    }
    spaced_starts(&sorted, key, count)
        .into_iter()
        .map(|k| (key[sorted[k]], least[k], work[k]))
        .collect()
}

/// The positions in `sorted` (sorted by `key`) where a new `key` value begins: every one when
/// there are at most `count`, else `count` evenly spaced ones. O(n).
pub(super) fn spaced_starts(sorted: &[usize], key: &[u64], count: usize) -> Vec<usize> {
    let starts: Vec<usize> = (0..sorted.len())
        .filter(|&k| k == 0 || key[sorted[k]] != key[sorted[k - 1]])
        .collect();
    if starts.len() <= count {
        return starts;
    }
    let step = starts.len() as f64 / count as f64;
    (0..count)
        .map(|i| starts[(i as f64 * step) as usize])
        .collect()
}
