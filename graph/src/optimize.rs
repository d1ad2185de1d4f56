//! The optimisation pipeline behind `concerto optimize`: baselines, the exact windowed solve,
//! and one comparison under the simulator.
//!
//! 1. Cost every op with the hardware profile ([`Hardware::durations`]).
//! 2. Build the baseline plans ([`baselines`]) and simulate each, with contention.
//! 3. Lower the graph to an RCPSP ([`lower`]) and solve it with the odd-even driver
//!    ([`concerto_rcpsp::OddEven`]) around an exact solver, starting from the best baseline's
//!    contention-free timeline (a valid schedule of the lowered problem), so the solver can
//!    only improve on it. When the driver converges with more than half the time limit left,
//!    it runs again from its result with blocks twice as large, up to
//!    [`OptimizeConfig::max_block`].
//! 4. Check the solver's schedule with [`concerto_rcpsp::check`], turn it into a stream plan
//!    ([`StreamPlan::from_starts`]) and simulate it with contention.
//! 5. The solver minimises the contention-free makespan; contention can reorder candidates.
//!    Concerto's plan is the solver's plan, unless a baseline plan simulates strictly shorter;
//!    [`Optimized::origin`] says which one was kept. Every makespan reported is simulated.
//!    Plans given as [`OptimizeConfig::hints`] join the baselines in steps 3 and 5 (not as
//!    rows of [`Optimized::results`]).

use std::time::{Duration, Instant};

use concerto_rcpsp::{check, Limits, OddEven, OddEvenConfig, Solver, Status};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::baselines;
use crate::error::GraphError;
use crate::hardware::Hardware;
use crate::ir::Graph;
use crate::lower::{lower, lower_bound, schedule_of};
use crate::plan::StreamPlan;
use crate::simulate::{simulate, Timeline};

/// Options of [`optimize`].
#[derive(Clone, Debug)]
pub struct OptimizeConfig {
    /// The odd-even driver's options.
    pub oddeven: OddEvenConfig,
    /// Overall wall-clock limit of the solve.
    pub time_limit: Option<Duration>,
    /// Seed of every random choice.
    pub seed: u64,
    /// Threads (windows of a pass in parallel).
    pub threads: usize,
    /// How far the Inductor-like pass moves an op.
    pub inductor_distance: usize,
    /// Largest block of the escalating windows: once the driver converges with more than
    /// half the time limit left, it runs again with blocks twice as large, up to this.
    pub max_block: usize,
    /// Extra plans of the graph (for example a plan carried over from the graph before a
    /// rewrite): each competes with the baselines for the solver's start and with the solver
    /// for concerto's plan ([`Optimized::origin`] `hint` when one is kept). Default none.
    pub hints: Vec<StreamPlan>,
}

impl Default for OptimizeConfig {
    fn default() -> Self {
        Self {
            oddeven: OddEvenConfig {
                block: 8,
                rounds: 4,
                window_time_limit: Duration::from_millis(100),
                ..OddEvenConfig::default()
            },
            time_limit: Some(Duration::from_secs(10)),
            seed: 0,
            threads: 1,
            inductor_distance: baselines::INDUCTOR_DISTANCE,
            max_block: 32,
            hints: Vec::new(),
        }
    }
}

/// One scheduler's plan and its simulated timeline.
#[derive(Clone, Debug)]
pub struct Scheduled {
    /// `program-order`, `lhs`, `inductor` or `concerto`.
    pub scheduler: &'static str,
    /// The plan.
    pub plan: StreamPlan,
    /// Its simulated timeline (with contention).
    pub timeline: Timeline,
    /// Time some collective runs while no compute does (ns).
    pub exposed_comm_ns: u64,
    /// Peak memory of the tensor lifetimes (bytes).
    pub peak_memory_bytes: u64,
}

impl Scheduled {
    fn new(
        scheduler: &'static str,
        graph: &Graph,
        plan: StreamPlan,
        durations: &[u64],
        contention: f64,
    ) -> Result<Self, GraphError> {
        let timeline = simulate(graph, &plan, durations, contention)?;
        Ok(Self {
            scheduler,
            exposed_comm_ns: timeline.exposed_comm_ns(graph),
            peak_memory_bytes: timeline.peak_memory_bytes(graph),
            plan,
            timeline,
        })
    }

    /// The simulated makespan (ns).
    pub fn makespan_ns(&self) -> u64 {
        self.timeline.makespan
    }
}

/// What [`optimize`] found.
#[derive(Clone, Debug)]
pub struct Optimized {
    /// Ops in the graph.
    pub ops: usize,
    /// Collectives in the graph.
    pub collectives: usize,
    /// `max(critical path, busiest stream)` (ns), a bound on every plan.
    pub lower_bound_ns: u64,
    /// Contention-free op durations (ns), by op.
    pub durations: Vec<u64>,
    /// The contention factor simulated.
    pub contention: f64,
    /// Program order, lhs, inductor and concerto, in that order.
    pub results: Vec<Scheduled>,
    /// Where concerto's plan comes from: `solver`, the baseline that simulated shorter, or
    /// `hint` (one of [`OptimizeConfig::hints`]).
    pub origin: &'static str,
    /// The solver's (contention-free) makespan and the status of its solve.
    pub solver_makespan_ns: u64,
    /// The solve's status.
    pub solver_status: Status,
    /// The solver's name (`<inner>+oddeven`).
    pub solver: String,
    /// Contention-free makespan of the starting plan given to the solver.
    pub start_makespan_ns: u64,
    /// Wall time of the whole pipeline.
    pub time: Duration,
}

impl Optimized {
    /// The result of `scheduler`.
    pub fn get(&self, scheduler: &str) -> Option<&Scheduled> {
        self.results.iter().find(|r| r.scheduler == scheduler)
    }

    /// Concerto's result.
    pub fn concerto(&self) -> &Scheduled {
        self.get("concerto")
            .expect("optimize always has a concerto row")
    }

    /// The best baseline's simulated makespan.
    pub fn best_baseline_ns(&self) -> u64 {
        self.results
            .iter()
            .filter(|r| r.scheduler != "concerto")
            .map(Scheduled::makespan_ns)
            .min()
            .unwrap_or(0)
    }
}

/// Runs the pipeline (see the module docs) with `solver` inside the odd-even driver.
pub fn optimize(
    graph: &Graph,
    hardware: &Hardware,
    solver: Box<dyn Solver>,
    config: &OptimizeConfig,
) -> Result<Optimized, GraphError> {
    let began = Instant::now();
    if graph.is_empty() {
        return Err(GraphError::InvalidOp {
            op: graph.name().to_string(),
            reason: "the graph has no op".into(),
        });
    }
    let durations = hardware.durations(graph);
    let contention = hardware.contention;
    let mut results = vec![
        Scheduled::new(
            "program-order",
            graph,
            baselines::program_order(graph)?,
            &durations,
            contention,
        )?,
        Scheduled::new(
            "lhs",
            graph,
            baselines::lhs(graph, &durations)?,
            &durations,
            contention,
        )?,
        Scheduled::new(
            "inductor",
            graph,
            baselines::inductor(graph, config.inductor_distance)?,
            &durations,
            contention,
        )?,
    ];
    let lowered = lower(graph, &durations)?;
    // The solver starts from the baseline with the shortest contention-free timeline.
    let mut hints = Vec::with_capacity(config.hints.len());
    for plan in &config.hints {
        hints.push(Scheduled::new(
            "hint",
            graph,
            plan.clone(),
            &durations,
            contention,
        )?);
    }
    let mut start: Option<(u64, Timeline)> = None;
    for r in results.iter().chain(&hints) {
        let t = simulate(graph, &r.plan, &durations, 1.0)?;
        if start.as_ref().is_none_or(|(m, _)| t.makespan < *m) {
            start = Some((t.makespan, t));
        }
    }
    let (start_makespan_ns, start) = start.expect("three baselines");
    let initial = schedule_of(&start);
    check(&lowered.problem, &initial).map_err(|v| GraphError::InvalidPlan {
        reason: format!("a baseline timeline is not a valid schedule: {v}"),
    })?;
    // Escalating windows: run the odd-even driver; when it has converged with time left,
    // run it again from its result with blocks twice as large (up to `max_block`).
    let mut driver = OddEven::new(solver, config.oddeven.clone());
    let mut best = initial;
    let mut outcome;
    loop {
        let time_limit = config.time_limit.map(|t| t.saturating_sub(began.elapsed()));
        let limits = Limits {
            time_limit: time_limit
                .filter(|t| !t.is_zero())
                .or(Some(Duration::from_millis(1))),
            seed: config.seed,
            threads: config.threads.max(1),
            initial: Some(best.clone()),
            ..Limits::default()
        };
        let report = driver.run(&lowered.problem, &limits)?;
        outcome = report.outcome;
        let schedule = outcome
            .schedule
            .clone()
            .ok_or_else(|| GraphError::InvalidPlan {
                reason: format!("the solver returned no schedule ({})", outcome.status),
            })?;
        best = schedule;
        let out_of_time = config.time_limit.is_some_and(|t| began.elapsed() * 2 >= t);
        if out_of_time
            || matches!(outcome.status, Status::Optimal)
            || driver.config.block >= config.max_block
            || driver.config.block >= graph.len()
        {
            break;
        }
        driver.config.block = (driver.config.block * 2).min(config.max_block);
    }
    let schedule = best;
    let solver_makespan =
        check(&lowered.problem, &schedule).map_err(|v| GraphError::InvalidPlan {
            reason: format!("the solver's schedule fails the checker: {v}"),
        })?;
    let starts: Vec<u64> = schedule.starts().iter().map(|&s| s as u64).collect();
    let mut concerto = Scheduled::new(
        "concerto",
        graph,
        StreamPlan::from_starts(graph, &starts)?,
        &durations,
        contention,
    )?;
    let mut origin = "solver";
    for r in results.iter().chain(&hints) {
        if r.makespan_ns() < concerto.makespan_ns() {
            concerto = Scheduled {
                scheduler: "concerto",
                ..r.clone()
            };
            origin = r.scheduler;
        }
    }
    results.push(concerto);
    Ok(Optimized {
        ops: graph.len(),
        collectives: graph.collective_count(),
        lower_bound_ns: lower_bound(graph, &durations),
        durations,
        contention,
        results,
        origin,
        solver_makespan_ns: solver_makespan as u64,
        solver_status: outcome.status,
        solver: outcome.solver,
        start_makespan_ns,
        time: began.elapsed(),
    })
}

/// Mean and worst simulated makespan of one plan under noise.
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
) -> Result<Vec<NoiseStats>, GraphError> {
    if !(pct.is_finite() && (0.0..100.0).contains(&pct)) || samples == 0 {
        return Err(GraphError::InvalidPlan {
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
