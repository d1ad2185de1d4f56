//! Robustness to timing noise: every plan re-simulated with perturbed durations.

use concerto_graph::{simulate, Graph, StreamPlan};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::error::PipelineError;

/// Mean and worst simulated makespan of one plan under noise.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NoiseStats {
    /// Mean makespan (ns).
    pub mean_ns: f64,
    /// Worst makespan (ns).
    pub worst_ns: u64,
}

/// Re-simulates each plan `samples` times with every duration scaled by an independent
/// uniform factor in `[1 - pct/100, 1 + pct/100]` (seeded ChaCha8; the same perturbed
/// durations for every plan of a sample, common random numbers), and returns each plan's mean
/// and worst makespan. Cost: O(samples * plans * simulation).
pub fn noise(
    graph: &Graph,
    plans: &[&StreamPlan],
    durations: &[u64],
    contention: f64,
    pct: f64,
    samples: usize,
    seed: u64,
) -> Result<Vec<NoiseStats>, PipelineError> {
    if !(pct.is_finite() && (0.0..100.0).contains(&pct)) || samples == 0 {
        return Err(PipelineError::InvalidConfig {
            reason: format!(
                "noise needs 0 <= PCT < 100 and at least one sample (got {pct} and {samples})"
            ),
        });
    }
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut sum = vec![0f64; plans.len()];
    let mut worst = vec![0u64; plans.len()];
    let mut noisy = vec![0u64; durations.len()];
    for _ in 0..samples {
        for (n, &d) in noisy.iter_mut().zip(durations) {
            let f: f64 = 1.0 + pct / 100.0 * rng.random_range(-1.0..=1.0);
            *n = ((d as f64) * f).round().max(1.0) as u64;
        }
        for (i, plan) in plans.iter().enumerate() {
            let m = simulate(graph, plan, &noisy, contention)?.makespan;
            sum[i] += m as f64;
            worst[i] = worst[i].max(m);
        }
    }
    Ok(sum
        .into_iter()
        .zip(worst)
        .map(|(s, w)| NoiseStats {
            mean_ns: s / samples as f64,
            worst_ns: w,
        })
        .collect())
}
