//! Seeded generators of scheduling instances shaped like a deep-learning training step, for
//! benches and tests of the windowed solver at 1k to 100k activities.
//!
//! [`training_step`] builds a step of `layers` layers over `microbatches` micro-batches (as in
//! gradient accumulation or a pipeline stage's 1F1B), with compute on one stream (a unit
//! resource) and collectives on one or two communication channels (unit resources: intra-node,
//! inter-node):
//! - per layer, a parameter all-gather (ZeRO-3 style) that the layer's first forward op of
//!   every micro-batch needs;
//! - per layer and micro-batch, a forward chain of compute ops and a tensor-parallel
//!   all-reduce whose result the next layer of that micro-batch needs (synchronous: it can
//!   only be overlapped with other micro-batches' work);
//! - per layer and micro-batch, in reverse layer order, a backward chain that needs the layer's
//!   forward output of that micro-batch and the next layer's backward;
//! - per layer, a gradient reduce-scatter after every micro-batch's backward of that layer,
//!   which only the layer's optimizer step needs (it can hide behind later backward work).
//!
//! Micro-batches are independent chains that compete for the compute stream, so the order on
//! each stream decides how much communication is hidden. Durations are nanoseconds drawn
//! uniformly: compute 20-400 us, collectives 30-600 us. The same shape and seed give the same
//! problem.
//!
//! [`project`] builds a PSPLIB-like project instead: several renewable resources of larger
//! capacity, each activity demanding a random subset of them, which makes problems of 60-120
//! activities that exact solvers do not close in a few thousand conflicts (training steps of
//! that size are usually settled by their lower bound).

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::problem::{ActivityId, Problem, ProblemBuilder, ResourceId, Time};

/// The shape of a generated training step.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TrainingStep {
    /// Number of layers.
    pub layers: usize,
    /// Independent micro-batches.
    pub microbatches: usize,
    /// Compute ops per layer, micro-batch and pass are drawn in `[min_ops, max_ops]`.
    pub min_ops: usize,
    /// See `min_ops`.
    pub max_ops: usize,
    /// Communication channels: 1 (intra-node only) or 2 (intra- and inter-node; gradient
    /// collectives alternate between them).
    pub channels: usize,
    /// Seed of every draw.
    pub seed: u64,
}

impl TrainingStep {
    /// A shape with about `activities` activities: 4 micro-batches, 1 to 3 ops per pass,
    /// 23 activities per layer on average (an all-gather, 4 forward chains of 2 ops and their
    /// all-reduces, 4 backward chains of 2 ops, a reduce-scatter and an optimizer step).
    pub fn with_size(activities: usize, channels: usize, seed: u64) -> Self {
        Self {
            layers: (activities / 23).max(1),
            microbatches: 4,
            min_ops: 1,
            max_ops: 3,
            channels,
            seed,
        }
    }
}

/// Builds the training step described by `shape` (see the module docs).
///
/// # Panics
/// If `channels` is not 1 or 2, `microbatches` is 0, or `min_ops` is 0 or above `max_ops`.
pub fn training_step(shape: &TrainingStep) -> Problem {
    assert!(
        matches!(shape.channels, 1 | 2),
        "1 or 2 communication channels"
    );
    assert!(shape.microbatches >= 1, "at least one micro-batch");
    assert!(
        shape.min_ops >= 1 && shape.min_ops <= shape.max_ops,
        "ops per layer"
    );
    const COMPUTE: (Time, Time) = (20_000, 400_000);
    const COMM: (Time, Time) = (30_000, 600_000);
    let mut rng = ChaCha8Rng::seed_from_u64(shape.seed);
    let mut b = ProblemBuilder::new();
    let compute = b.resource("compute", 1);
    let channels: Vec<ResourceId> = (0..shape.channels)
        .map(|c| b.resource(if c == 0 { "intra-node" } else { "inter-node" }, 1))
        .collect();
    let op = |b: &mut ProblemBuilder,
              rng: &mut ChaCha8Rng,
              name: String,
              on: ResourceId,
              range: (Time, Time)| {
        let a = b.activity(name, rng.random_range(range.0..=range.1));
        b.demand(a, on, 1);
        a
    };
    // A chain of compute ops after `first_needs`; returns its last op.
    let chain = |b: &mut ProblemBuilder,
                 rng: &mut ChaCha8Rng,
                 prefix: String,
                 first_needs: &[ActivityId]| {
        let ops = rng.random_range(shape.min_ops..=shape.max_ops);
        let mut last: Option<ActivityId> = None;
        for k in 0..ops {
            let a = op(b, rng, format!("{prefix}.op{k}"), compute, COMPUTE);
            match last {
                None => first_needs.iter().for_each(|&p| b.precedence(p, a)),
                Some(p) => b.precedence(p, a),
            }
            last = Some(a);
        }
        last.expect("at least one op")
    };

    let m = shape.microbatches;
    // Per micro-batch: what the next forward layer needs, and each layer's forward output.
    let mut ready: Vec<Option<ActivityId>> = vec![None; m];
    let mut forward_out = vec![vec![ActivityId(0); m]; shape.layers];
    for (l, outputs) in forward_out.iter_mut().enumerate() {
        let gather = op(
            &mut b,
            &mut rng,
            format!("L{l}.all-gather"),
            channels[0],
            COMM,
        );
        for mb in 0..m {
            let mut needs = vec![gather];
            needs.extend(ready[mb]);
            let last = chain(&mut b, &mut rng, format!("L{l}.mb{mb}.fwd"), &needs);
            let reduce = op(
                &mut b,
                &mut rng,
                format!("L{l}.mb{mb}.all-reduce"),
                channels[0],
                COMM,
            );
            b.precedence(last, reduce);
            outputs[mb] = reduce;
            ready[mb] = Some(reduce);
        }
    }
    for l in (0..shape.layers).rev() {
        let mut outs = Vec::with_capacity(m);
        for mb in 0..m {
            let mut needs = vec![forward_out[l][mb]];
            needs.extend(ready[mb]);
            let last = chain(&mut b, &mut rng, format!("L{l}.mb{mb}.bwd"), &needs);
            ready[mb] = Some(last);
            outs.push(last);
        }
        let channel = channels[l % channels.len()];
        let gradient = op(
            &mut b,
            &mut rng,
            format!("L{l}.reduce-scatter"),
            channel,
            COMM,
        );
        for &o in &outs {
            b.precedence(o, gradient);
        }
        let step = op(
            &mut b,
            &mut rng,
            format!("L{l}.optimizer"),
            compute,
            (5_000, 50_000),
        );
        b.precedence(gradient, step);
    }
    b.build().expect("the generator builds a valid DAG")
}

/// The shape of a generated PSPLIB-like project (see [`project`]).
#[derive(Clone, Debug, PartialEq)]
pub struct Project {
    /// Number of activities.
    pub activities: usize,
    /// Number of renewable resources.
    pub resources: usize,
    /// Capacity of every resource.
    pub capacity: u32,
    /// Durations are drawn in `[1, max_duration]`.
    pub max_duration: Time,
    /// Probability that an activity demands a given resource (ProGen's resource factor).
    pub resource_factor: f64,
    /// A demand is drawn in `[1, max_demand]` (at most the capacity).
    pub max_demand: u32,
    /// Each activity after the first `max_predecessors` gets 1 to this many predecessors.
    pub max_predecessors: usize,
    /// Predecessors are drawn among this many activities before (small: a deep network;
    /// large: a wide one, where resources decide more).
    pub predecessor_window: usize,
    /// Seed of every draw.
    pub seed: u64,
}

impl Project {
    /// A shape of `activities` activities on 4 resources of capacity 10, durations 1-10,
    /// resource factor 1 (every activity on every resource), demands 1-6, 1 or 2 predecessors
    /// among the 40 activities before: resource-bound, like PSPLIB's hardest j30 class
    /// (without its dummy source and sink). pumpkin does not close one of 80 activities in a
    /// few thousand conflicts.
    pub fn with_size(activities: usize, seed: u64) -> Self {
        Self {
            activities,
            resources: 4,
            capacity: 10,
            max_duration: 10,
            resource_factor: 1.0,
            max_demand: 6,
            max_predecessors: 2,
            predecessor_window: 40,
            seed,
        }
    }
}

/// Builds the project described by `shape`: activity `k` gets a duration in
/// `[1, max_duration]`, a demand in `[1, max_demand]` on each resource with probability
/// `resource_factor`, and (after the first few) 1 to `max_predecessors` predecessors drawn
/// among the `predecessor_window` activities before it. A
/// simplified ProGen (R. Kolisch, A. Sprecher, A. Drexl, "Characterization and generation of a
/// general class of resource-constrained project scheduling problems", Management Science 41
/// (1995) 1693-1703): resource factor as there, a fixed capacity instead of the resource
/// strength, a bounded in-degree instead of the network complexity. `O(n (R + p))`.
///
/// # Panics
/// If `activities` or `max_duration` is 0, or `max_demand` is 0 or above `capacity`.
pub fn project(shape: &Project) -> Problem {
    assert!(shape.activities >= 1, "at least one activity");
    assert!(shape.max_duration >= 1, "positive durations");
    assert!(
        (1..=shape.capacity).contains(&shape.max_demand),
        "demands within the capacity"
    );
    let mut rng = ChaCha8Rng::seed_from_u64(shape.seed);
    let mut b = ProblemBuilder::new();
    let resources: Vec<ResourceId> = (0..shape.resources)
        .map(|r| b.resource(format!("R{}", r + 1), shape.capacity))
        .collect();
    let mut ids = Vec::with_capacity(shape.activities);
    for k in 0..shape.activities {
        let a = b.activity(
            format!("a{}", k + 1),
            rng.random_range(1..=shape.max_duration),
        );
        for &r in &resources {
            if rng.random_bool(shape.resource_factor.clamp(0.0, 1.0)) {
                b.demand(a, r, rng.random_range(1..=shape.max_demand));
            }
        }
        if k >= shape.max_predecessors.max(1) {
            let count = rng.random_range(1..=shape.max_predecessors.max(1));
            for _ in 0..count {
                let back = rng.random_range(1..=shape.predecessor_window.clamp(1, k));
                b.precedence(ids[k - back], a);
            }
        }
        ids.push(a);
    }
    b.build().expect("the generator builds a valid DAG")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bounds::lower_bound;

    #[test]
    fn a_project_is_seeded_and_shaped_as_asked() {
        let shape = Project::with_size(90, 3);
        let a = project(&shape);
        assert_eq!(a.activities(), project(&shape).activities());
        assert_eq!(a.precedences(), project(&shape).precedences());
        assert_eq!(a.len(), 90);
        assert_eq!(a.resources().len(), 4);
        assert!(a.precedences().len() >= 80);
        assert!(a
            .activities()
            .iter()
            .all(|x| x.demands.iter().all(|&d| d >= 1)));
        assert!(a
            .activities()
            .iter()
            .all(|x| (1..=10).contains(&x.duration) && x.demands.iter().all(|&d| d <= 6)));
    }

    #[test]
    fn same_seed_same_problem_and_size_is_close() {
        let shape = TrainingStep::with_size(1000, 2, 7);
        let a = training_step(&shape);
        let b = training_step(&shape);
        assert_eq!(a.activities(), b.activities());
        assert_eq!(a.precedences(), b.precedences());
        assert!((900..=1100).contains(&a.len()), "{}", a.len());
        assert_eq!(a.resources().len(), 3);
        assert!(lower_bound(&a).value > 0);
    }
}
