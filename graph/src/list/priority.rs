//! The rules' priorities: bottom and top levels, the energy tail and the comm-weighted level.

use super::engine::Net;
use super::ENERGY_COLLECTIVES;
#[cfg(doc)]
use crate::baselines::bottom_levels;

/// The rules' priorities, each computed once.
pub(super) struct Priorities<'a> {
    d: &'a [u64],
    bottom: Option<Vec<u64>>,
    top: Option<Vec<u64>>,
    energy: Option<Vec<u64>>,
    weighted: Option<Vec<u64>>,
    /// Per op and channel: descendant collective time (see [`descendant_comm`]).
    descendant: Option<Vec<Vec<u64>>>,
}

impl<'a> Priorities<'a> {
    pub(super) fn new(d: &'a [u64]) -> Self {
        Priorities {
            d,
            bottom: None,
            top: None,
            energy: None,
            weighted: None,
            descendant: None,
        }
    }

    /// [`bottom_levels`], on the flat adjacency (no allocation per op).
    pub(super) fn bottom(&mut self, net: &Net) -> &[u64] {
        let d = self.d;
        self.bottom.get_or_insert_with(|| {
            let mut level = vec![0u64; d.len()];
            for v in (0..d.len()).rev() {
                let tail = net.succs(v).iter().map(|&s| level[s]).max().unwrap_or(0);
                level[v] = d[v].saturating_add(tail);
            }
            level
        })
    }

    /// Longest path from the start of the step to each op's end.
    pub(super) fn top(&mut self, net: &Net) -> &[u64] {
        let d = self.d;
        self.top.get_or_insert_with(|| {
            let mut top = vec![0u64; d.len()];
            for v in 0..d.len() {
                let head = net.preds(v).iter().map(|&p| top[p]).max().unwrap_or(0);
                top[v] = head.saturating_add(d[v]);
            }
            top
        })
    }

    /// The larger of the critical path and the busiest stream's load: no plan is shorter.
    pub(super) fn floor(&mut self, net: &Net) -> u64 {
        let mut load = vec![0u64; net.streams.len()];
        for (v, &d) in self.d.iter().enumerate() {
            load[net.stream[v]] = load[net.stream[v]].saturating_add(d);
        }
        let path = self.bottom(net).iter().copied().max().unwrap_or(0);
        load.into_iter().max().unwrap_or(0).max(path)
    }

    /// [`descendant_comm`] over the [`ENERGY_COLLECTIVES`] longest collectives.
    fn descendant(&mut self, net: &Net) -> &[Vec<u64>] {
        let d = self.d;
        self.descendant
            .get_or_insert_with(|| descendant_comm(net, d, ENERGY_COLLECTIVES))
    }

    /// The energy tail: the bottom level, or for each channel the shortest path to a
    /// descendant on it plus its descendant collective time there, whichever is largest.
    pub(super) fn energy(&mut self, net: &Net) -> &[u64] {
        if self.energy.is_none() {
            let bottom = self.bottom(net).to_vec();
            let d = self.d;
            let desc = self.descendant(net);
            let mut e = bottom;
            for (c, sums) in desc.iter().enumerate() {
                if !net.comm[c] {
                    continue;
                }
                let reach = reach_time(net, d, c);
                for v in 0..e.len() {
                    if let Some(h) = reach[v] {
                        e[v] = e[v].max(h.saturating_add(sums[v]));
                    }
                }
            }
            self.energy = Some(e);
        }
        self.energy.as_deref().unwrap_or_default()
    }

    /// The bottom level plus the descendant collective time on the busiest channel (the
    /// first of the busiest).
    pub(super) fn weighted(&mut self, net: &Net) -> &[u64] {
        if self.weighted.is_none() {
            let bottom = self.bottom(net).to_vec();
            let d = self.d;
            let desc = self.descendant(net);
            let mut load = vec![0u64; net.streams.len()];
            for v in 0..d.len() {
                load[net.stream[v]] = load[net.stream[v]].saturating_add(d[v]);
            }
            let busiest = (0..load.len())
                .filter(|&c| net.comm[c])
                .max_by_key(|&c| (load[c], usize::MAX - c));
            self.weighted = Some(match busiest {
                Some(c) => bottom
                    .iter()
                    .zip(&desc[c])
                    .map(|(b, e)| b.saturating_add(*e))
                    .collect(),
                None => bottom,
            });
        }
        self.weighted.as_deref().unwrap_or_default()
    }
}

/// Per stream (empty for compute), per op: the total duration of the collectives of that
/// channel among the op and its descendants, counting only the `cap` longest collectives (ties
/// to the earlier; [`ENERGY_COLLECTIVES`] for the rules). Bitsets of 64 collectives at a time,
/// propagated in reverse program order (which is reverse topological); a bitset's sum by byte
/// tables. O((n + e + 8 n s) k / 64) for k counted collectives.
pub(super) fn descendant_comm(net: &Net, d: &[u64], cap: usize) -> Vec<Vec<u64>> {
    let n = net.len();
    let ns = net.streams.len();
    let mut colls: Vec<usize> = (0..n).filter(|&v| net.comm[net.stream[v]]).collect();
    colls.sort_by_key(|&v| (std::cmp::Reverse(d[v]), v));
    colls.truncate(cap);
    colls.sort_unstable();
    let mut sums: Vec<Vec<u64>> = (0..ns)
        .map(|c| {
            if net.comm[c] {
                vec![0u64; n]
            } else {
                Vec::new()
            }
        })
        .collect();
    let mut bits = vec![0u64; n];
    for block in colls.chunks(64) {
        // Per channel, per byte of the bitset, the sum of each byte value's collectives.
        let mut tables = vec![[[0u64; 256]; 8]; ns];
        for (i, &v) in block.iter().enumerate() {
            let t = &mut tables[net.stream[v]][i / 8];
            let bit = 1usize << (i % 8);
            for (x, sum) in t.iter_mut().enumerate() {
                if x & bit != 0 {
                    *sum = sum.saturating_add(d[v]);
                }
            }
        }
        // Ops after the block's last collective reach none of it.
        let last = block[block.len() - 1];
        bits[last + 1..].fill(0);
        let mut k = block.len();
        for v in (0..=last).rev() {
            let mut b = 0u64;
            if k > 0 && block[k - 1] == v {
                k -= 1;
                b = 1u64 << k;
            }
            for &s in net.succs(v) {
                b |= bits[s];
            }
            bits[v] = b;
            if b == 0 {
                continue;
            }
            for (c, t) in tables.iter().enumerate() {
                if !net.comm[c] {
                    continue;
                }
                let mut sum = 0u64;
                for (j, row) in t.iter().enumerate() {
                    sum = sum.saturating_add(row[((b >> (8 * j)) & 0xff) as usize]);
                }
                sums[c][v] = sums[c][v].saturating_add(sum);
            }
        }
    }
    sums
}

/// Per op: the shortest path (durations) from its start to the start of a descendant on
/// stream `c` (0 on `c` itself), `None` when it has none. O(n + e).
fn reach_time(net: &Net, d: &[u64], c: usize) -> Vec<Option<u64>> {
    let n = net.len();
    let mut h: Vec<Option<u64>> = vec![None; n];
    for v in (0..n).rev() {
        h[v] = if net.stream[v] == c {
            Some(0)
        } else {
            net.succs(v)
                .iter()
                .filter_map(|&s| h[s])
                .min()
                .map(|x| x.saturating_add(d[v]))
        };
    }
    h
}
