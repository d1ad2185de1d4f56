//! Weighted selection: the small combinatorial problem behind choosing decompositions.
//!
//! Pick items of maximum total weight, at most one per group, never two that conflict:
//! `max sum w_i x_i` subject to `sum_{i in g} x_i <= 1` per group and `x_i + x_j <= 1` per
//! conflict, `x` binary (a weighted independent set with group constraints; Concerto, ASPLOS
//! 2025, §4.3 selects decomposition candidates with such an ILP).
//!
//! A [`Selector`] solves it. [`Enumeration`] (here) is exact by enumeration and fine for the
//! few candidates of one graph; `concerto-backends` implements [`Selector`] with its MILP
//! backends. The pipeline takes any `&dyn Selector`, so it depends on no backend.

use std::time::Duration;

/// A selection problem (see the module docs).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Selection {
    /// Weight of each item (items with weight <= 0 are never chosen).
    pub weights: Vec<i64>,
    /// Groups of items of which at most one is chosen.
    pub groups: Vec<Vec<usize>>,
    /// Pairs of items that exclude each other.
    pub conflicts: Vec<(usize, usize)>,
}

impl Selection {
    /// Checks that every group and conflict names an item of `0..weights.len()`.
    pub fn validate(&self) -> Result<(), SelectionError> {
        let n = self.weights.len();
        if let Some(&(a, b)) = self.conflicts.iter().find(|(a, b)| *a >= n || *b >= n) {
            return Err(SelectionError::Invalid {
                reason: format!("conflict ({a}, {b}) names an item out of 0..{n}"),
            });
        }
        if let Some(g) = self.groups.iter().flatten().find(|&&i| i >= n) {
            return Err(SelectionError::Invalid {
                reason: format!("a group names item {g}, out of 0..{n}"),
            });
        }
        Ok(())
    }

    /// Whether `items` is a feasible choice (at most one per group, no conflicting pair,
    /// every item in range), and its total weight.
    pub fn value_of(&self, items: &[usize]) -> Result<i64, SelectionError> {
        let n = self.weights.len();
        if let Some(i) = items.iter().find(|&&i| i >= n) {
            return Err(SelectionError::Invalid {
                reason: format!("item {i} is out of 0..{n}"),
            });
        }
        for g in &self.groups {
            if g.iter().filter(|i| items.contains(i)).count() > 1 {
                return Err(SelectionError::Invalid {
                    reason: format!("two items of group {g:?} are chosen"),
                });
            }
        }
        if let Some((a, b)) = self
            .conflicts
            .iter()
            .find(|(a, b)| items.contains(a) && items.contains(b))
        {
            return Err(SelectionError::Invalid {
                reason: format!("conflicting items {a} and {b} are both chosen"),
            });
        }
        Ok(items.iter().map(|&i| self.weights[i]).sum())
    }
}

/// The answer of a [`Selector`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Chosen {
    /// The items chosen, sorted.
    pub items: Vec<usize>,
    /// Their total weight.
    pub value: i64,
    /// Whether the selector proved it optimal (else: the best found at the time limit).
    pub optimal: bool,
}

/// Why a selection failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SelectionError {
    /// The problem names items that do not exist.
    #[error("invalid selection problem: {reason}")]
    Invalid {
        /// What is wrong.
        reason: String,
    },
    /// The selector failed (a backend error, no answer within the time limit).
    #[error("selector `{selector}` failed: {message}")]
    Failed {
        /// The selector.
        selector: String,
        /// What happened.
        message: String,
    },
}

/// Solves [`Selection`] problems. Implement it to plug another solver into the pipeline's
/// decomposition choice.
pub trait Selector: Send + Sync {
    /// A short name (`enumeration`, `highs`, ...).
    fn name(&self) -> &str;

    /// The best choice of `selection` within `time_limit` (`None`: no limit).
    fn select(
        &self,
        selection: &Selection,
        time_limit: Option<Duration>,
    ) -> Result<Chosen, SelectionError>;
}

/// Exact selection by depth-first branch and bound over the groups: one item or none per
/// group, skipping items that conflict with one already chosen, and pruning a branch when
/// its weight plus the best positive weight of every remaining group cannot beat the best
/// choice found. Groups are taken heaviest first and items best first, so the first leaf is
/// the greedy choice. Cost: O(prod(group size + 1)) in the worst case (many conflicts); with
/// few conflicts the bound prunes nearly everything and it is near-linear in the items.
/// Without conflicts the greedy choice is optimal and found at once.
#[derive(Clone, Copy, Debug, Default)]
pub struct Enumeration;

impl Selector for Enumeration {
    fn name(&self) -> &str {
        "enumeration"
    }

    fn select(
        &self,
        selection: &Selection,
        _time_limit: Option<Duration>,
    ) -> Result<Chosen, SelectionError> {
        selection.validate()?;
        let w = &selection.weights;
        // Items in no group form a group of their own each; only positive items matter.
        let mut groups: Vec<Vec<usize>> = selection.groups.clone();
        for i in 0..w.len() {
            if !groups.iter().flatten().any(|&j| j == i) {
                groups.push(vec![i]);
            }
        }
        for g in &mut groups {
            g.retain(|&i| w[i] > 0);
            g.sort_by_key(|&i| (std::cmp::Reverse(w[i]), i));
            g.dedup();
        }
        groups.retain(|g| !g.is_empty());
        groups.sort_by_key(|g| std::cmp::Reverse(w[g[0]]));
        // rest[k]: the best weight groups k.. could add.
        let mut rest = vec![0i64; groups.len() + 1];
        for k in (0..groups.len()).rev() {
            rest[k] = rest[k + 1] + w[groups[k][0]];
        }
        let conflicts: std::collections::BTreeSet<(usize, usize)> = selection
            .conflicts
            .iter()
            .flat_map(|&(a, b)| [(a, b), (b, a)])
            .collect();
        let mut search = Search {
            groups: &groups,
            rest: &rest,
            weights: w,
            conflicts: &conflicts,
            chosen: Vec::new(),
            best: (0, Vec::new()),
        };
        search.go(0, 0);
        let (value, mut items) = search.best;
        items.sort_unstable();
        Ok(Chosen {
            items,
            value,
            optimal: true,
        })
    }
}

struct Search<'a> {
    groups: &'a [Vec<usize>],
    rest: &'a [i64],
    weights: &'a [i64],
    conflicts: &'a std::collections::BTreeSet<(usize, usize)>,
    chosen: Vec<usize>,
    best: (i64, Vec<usize>),
}

impl Search<'_> {
    fn go(&mut self, k: usize, value: i64) {
        if value > self.best.0 {
            self.best = (value, self.chosen.clone());
        }
        if k == self.groups.len() || value + self.rest[k] <= self.best.0 {
            return;
        }
        for idx in 0..self.groups[k].len() {
            let i = self.groups[k][idx];
            if self
                .chosen
                .iter()
                .all(|&j| !self.conflicts.contains(&(i, j)))
            {
                self.chosen.push(i);
                self.go(k + 1, value + self.weights[i]);
                self.chosen.pop();
            }
        }
        self.go(k + 1, value);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn enumeration_is_exact_on_a_small_case() {
        let s = Selection {
            weights: vec![5, 4, 3, 1, -2],
            groups: vec![vec![0, 1], vec![2], vec![3], vec![4]],
            conflicts: vec![(0, 2)],
        };
        let c = Enumeration.select(&s, None).unwrap();
        // {0, 3} = 6, {1, 2, 3} = 8.
        assert_eq!(c.items, vec![1, 2, 3]);
        assert_eq!(c.value, 8);
        assert!(c.optimal);
        assert_eq!(s.value_of(&c.items).unwrap(), 8);
    }

    /// The branch and bound against plain enumeration on random selections.
    #[test]
    fn branch_and_bound_matches_plain_enumeration() {
        fn plain(s: &Selection) -> i64 {
            let n = s.weights.len();
            (0u32..1 << n)
                .filter_map(|mask| {
                    let items: Vec<usize> = (0..n).filter(|&i| mask >> i & 1 == 1).collect();
                    s.value_of(&items).ok()
                })
                .max()
                .unwrap_or(0)
                .max(0)
        }
        let mut state = 12345u64;
        let mut next = |m: u64| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (state >> 33) % m
        };
        for _ in 0..300 {
            let n = 1 + next(10) as usize;
            let weights: Vec<i64> = (0..n).map(|_| next(21) as i64 - 5).collect();
            let mut groups = Vec::new();
            let mut i = 0;
            while i < n {
                let len = 1 + next(3) as usize;
                groups.push((i..(i + len).min(n)).collect());
                i += len;
            }
            let conflicts = (0..next(5))
                .map(|_| (next(n as u64) as usize, next(n as u64) as usize))
                .filter(|(a, b)| a != b)
                .collect();
            let s = Selection {
                weights,
                groups,
                conflicts,
            };
            let c = Enumeration.select(&s, None).unwrap();
            assert_eq!(c.value, plain(&s), "{s:?}");
            assert_eq!(s.value_of(&c.items).unwrap(), c.value, "{s:?}");
        }
    }

    /// A hundred groups of three without conflicts: the greedy leaf is optimal and the bound
    /// prunes the rest (plain enumeration would visit 4^100 leaves).
    #[test]
    fn many_groups_are_solved_at_once() {
        let s = Selection {
            weights: (0..300).map(|i| (i % 7) as i64 + 1).collect(),
            groups: (0..100)
                .map(|g| vec![3 * g, 3 * g + 1, 3 * g + 2])
                .collect(),
            conflicts: vec![(0, 3), (6, 9)],
        };
        let c = Enumeration.select(&s, None).unwrap();
        assert_eq!(s.value_of(&c.items).unwrap(), c.value);
        assert!(c.value > 0);
    }

    #[test]
    fn bad_items_are_named() {
        let s = Selection {
            weights: vec![1],
            groups: vec![],
            conflicts: vec![(0, 3)],
        };
        let e = Enumeration.select(&s, None).unwrap_err();
        assert!(e.to_string().contains("(0, 3)"), "{e}");
        assert!(Selection {
            weights: vec![1, 1],
            groups: vec![vec![0, 1]],
            conflicts: vec![]
        }
        .value_of(&[0, 1])
        .is_err());
    }
}
