//! A weighted selection MILP for decomposition choices: pick items of maximum total weight,
//! at most one per group, never two that conflict. `max sum w_i x_i` subject to
//! `sum_{i in g} x_i <= 1` per group and `x_i + x_j <= 1` per conflict, `x` binary (a
//! weighted independent set with group constraints; Concerto, ASPLOS 2025, §4.3 selects
//! decomposition candidates with such an ILP).

use std::time::Duration;

use good_lp::Expression;

use super::{Backend, Milp, Model, RawStatus, RunOptions};

pub use concerto_rcpsp::selection::{Chosen, Selection};
use concerto_rcpsp::selection::{SelectionError, Selector};

impl Milp {
    /// Solves a selection problem with this backend.
    pub fn select(
        &self,
        s: &Selection,
        time_limit: Option<Duration>,
    ) -> Result<Chosen, SelectionError> {
        s.validate()?;
        let n = s.weights.len();
        let failed = |message: String| SelectionError::Failed {
            selector: self.backend.name().to_string(),
            message,
        };
        let total: i64 = s.weights.iter().filter(|w| **w > 0).sum();
        if total == 0 {
            return Ok(Chosen {
                items: Vec::new(),
                value: 0,
                optimal: true,
            });
        }
        // Minimise z = -sum w x, with z in [-total, 0].
        let mut model = Model::new(-total, 0, None);
        let z = model.objective;
        let x: Vec<_> = (0..n)
            .map(|i| {
                let def = good_lp::variable().binary();
                let def = if s.weights[i] <= 0 { def.max(0.0) } else { def };
                model.var(def, None)
            })
            .collect();
        let mut e: Expression = Model::sum(s.weights.iter().zip(&x).map(|(&w, &v)| (w as f64, v)));
        e += z;
        model.add(e.eq(0.0));
        for g in &s.groups {
            if g.len() > 1 {
                model.add(Model::sum(g.iter().map(|&i| (1.0, x[i]))).leq(1.0));
            }
        }
        for &(a, b) in &s.conflicts {
            model.add((x[a] + x[b]).leq(1.0));
        }
        let options = RunOptions {
            time_limit,
            threads: 1,
            seed: 0,
            mip_gap: 0.0,
            work_limit: None,
        };
        let raw = self.dispatch(model, &options).map_err(failed)?;
        let Some(values) = raw.values else {
            return Err(failed(format!(
                "{} found no selection ({:?})",
                self.backend.name(),
                raw.status
            )));
        };
        // Position 0 is z; the x follow in order.
        let items: Vec<usize> = (0..n).filter(|&i| values[1 + i] > 0.5).collect();
        let value = items.iter().map(|&i| s.weights[i]).sum();
        Ok(Chosen {
            items,
            value,
            optimal: raw.status == RawStatus::Optimal,
        })
    }
}

impl Selector for Milp {
    fn name(&self) -> &str {
        self.backend.name()
    }

    fn select(
        &self,
        selection: &Selection,
        time_limit: Option<Duration>,
    ) -> Result<Chosen, SelectionError> {
        Milp::select(self, selection, time_limit)
    }
}

/// The backend for selections: HiGHS, else CBC, else microlp, as compiled in.
pub fn default_backend() -> Backend {
    #[cfg(feature = "highs")]
    return Backend::Highs;
    #[cfg(all(not(feature = "highs"), feature = "cbc"))]
    return Backend::Cbc;
    #[cfg(all(not(feature = "highs"), not(feature = "cbc")))]
    return Backend::Microlp;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_and_conflicts_are_respected_and_the_optimum_found() {
        // Items 0,1 in one group; 2 conflicts with 0; 3 alone.
        let s = Selection {
            weights: vec![5, 4, 3, 1, -2],
            groups: vec![vec![0, 1], vec![2], vec![3], vec![4]],
            conflicts: vec![(0, 2)],
        };
        let mut backends = vec![default_backend()];
        #[cfg(feature = "microlp")]
        backends.push(Backend::Microlp);
        #[cfg(feature = "cbc")]
        backends.push(Backend::Cbc);
        for b in backends {
            let c = Milp::new(b)
                .select(&s, Some(Duration::from_secs(10)))
                .unwrap();
            // {1, 2, 3} = 8 beats {0, 3} = 6.
            assert_eq!(c.items, vec![1, 2, 3]);
            assert_eq!(c.value, 8);
            assert!(c.optimal);
        }
        let bad = Selection {
            weights: vec![1],
            groups: vec![],
            conflicts: vec![(0, 3)],
        };
        assert!(Milp::new(default_backend()).select(&bad, None).is_err());
    }
}
