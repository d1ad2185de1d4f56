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

/// The contended bound (see the module docs) over every compute stream, with `head` and `tail`
/// (any valid heads and tails: longest paths or energy ones) and the contention factor
/// `contention`, the two-threshold windows within `grid_work` ([`grid`]); `None` without a
/// compute stream or a collective, or at `contention = 1`.
pub(super) fn contended(
    dag: &Dag,
    durations: &[u64],
    head: &[u64],
    tail: &[u64],
    contention: f64,
    grid_work: usize,
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
            let extra = (u128::from(c) * u128::from(lost) / u128::from(UNITS)) as u64;
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
