//! Jackson's preemptive schedule: the optimum of the preemptive one-machine relaxation.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Jackson's preemptive schedule of `ops` on one machine with release dates `head` and
/// delivery times `tail`: at every moment run the released op with the largest tail. Returns
/// `max C + q`, the optimum of `1|r_j, pmtn|max C_j + q_j` (Carlier, "The one-machine
/// sequencing problem", EJOR 1982), which equals `max over subsets J of min_J r + sum_J p +
/// min_J q`. O(k log k) for k ops. Sums saturate.
pub(super) fn jackson(ops: &[usize], head: &[u64], tail: &[u64], durations: &[u64]) -> u64 {
    let mut by_release: Vec<usize> = ops.to_vec();
    by_release.sort_unstable_by_key(|&v| (head[v], v));
    // Remaining work of each op, by its position in `by_release`.
    let mut remaining: Vec<u64> = by_release.iter().map(|&v| durations[v]).collect();
    // Ready ops by largest tail (ties by op index, for determinism), with their position.
    let mut ready: BinaryHeap<(u64, Reverse<usize>, usize)> = BinaryHeap::new();
    let mut next = 0;
    let mut t = 0u64;
    let mut best = 0u64;
    while next < by_release.len() || !ready.is_empty() {
        if ready.is_empty() {
            t = t.max(head[by_release[next]]);
        }
        while next < by_release.len() && head[by_release[next]] <= t {
            let v = by_release[next];
            ready.push((tail[v], Reverse(v), next));
            next += 1;
        }
        let Some((q, Reverse(v), at)) = ready.pop() else {
            // Unreachable: the loop above released at least the op at `t`.
            break;
        };
        let left = remaining[at];
        let until = by_release.get(next).map_or(u64::MAX, |&u| head[u]);
        if t.saturating_add(left) <= until {
            t = t.saturating_add(left);
            remaining[at] = 0;
            best = best.max(t.saturating_add(q));
        } else {
            remaining[at] = left - (until - t);
            t = until;
            ready.push((q, Reverse(v), at));
        }
    }
    best
}
