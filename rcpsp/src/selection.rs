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

/// Exact selection by enumeration over the groups: depth-first, one item or none per group,
/// skipping items that conflict with one already chosen. Cost: O(prod(group size + 1)) in
/// the worst case; meant for the tens of candidates of one graph and for tests.
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
        // Items in no group form a group of their own each.
        let mut groups = selection.groups.clone();
        for i in 0..selection.weights.len() {
            if !groups.iter().flatten().any(|&j| j == i) {
                groups.push(vec![i]);
            }
        }
        let mut best = (0, Vec::new());
        go(0, &groups, selection, &mut Vec::new(), &mut best);
        let mut items = best.1;
        items.sort_unstable();
        Ok(Chosen {
            items,
            value: best.0,
            optimal: true,
        })
    }
}

fn go(
    k: usize,
    groups: &[Vec<usize>],
    s: &Selection,
    chosen: &mut Vec<usize>,
    best: &mut (i64, Vec<usize>),
) {
    if k == groups.len() {
        let v: i64 = chosen.iter().map(|&i| s.weights[i]).sum();
        if v > best.0 {
            *best = (v, chosen.clone());
        }
        return;
    }
    go(k + 1, groups, s, chosen, best);
    for &i in &groups[k] {
        if s.weights[i] > 0
            && !chosen.iter().any(|&j| {
                s.conflicts.contains(&(i, j)) || s.conflicts.contains(&(j, i)) || i == j
            })
        {
            chosen.push(i);
            go(k + 1, groups, s, chosen, best);
            chosen.pop();
        }
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
