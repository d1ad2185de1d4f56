//! Choosing decompositions by evaluating schedules.
//!
//! Greedy over the critical collectives of the current graph's best baseline schedule, most
//! exposed first: for each, every axis and chunk count `N` that its context allows is
//! rewritten ([`rewrite`], checked) and evaluated by scheduling the rewritten graph with the
//! baselines (the best of program order, the LHS-like list scheduler and the Inductor-like
//! pass, simulated with contention); the best candidate is kept when it shortens the
//! makespan, at most one per collective. Cost: O(critical * axes * Ns * (rewrite +
//! baselines)).
//!
//! The paper selects with a small ILP over the candidates' cost `max(uncovered, overhead, 0)`;
//! this module measures each candidate's effect on a whole schedule instead, which accounts
//! for interactions the ILP's cost leaves out but is greedy across collectives.

use concerto_graph::{baselines, simulate, Graph, Hardware, StreamPlan, Timeline};

use crate::context::context;
use crate::critical::critical;
use crate::error::DecompError;
use crate::rewrite::rewrite;
use crate::rules::chunk;
use crate::split::Axis;

/// Options of [`select`].
#[derive(Clone, Debug)]
pub struct SelectConfig {
    /// Exposed fraction of the makespan from which a collective is critical.
    pub threshold: f64,
    /// Chunk counts tried.
    pub ns: Vec<u32>,
    /// Axes tried.
    pub axes: Vec<Axis>,
    /// Ops added on each side of the collective, at most.
    pub depth: usize,
    /// A fixed split slowdown (chunk duration = op duration x slowdown / N) instead of the
    /// measured tables; for sensitivity sweeps.
    pub slowdown: Option<f64>,
    /// Critical collectives tried, at most.
    pub max_collectives: usize,
}

impl Default for SelectConfig {
    fn default() -> Self {
        Self {
            threshold: 0.002,
            ns: vec![2, 4, 8],
            axes: vec![Axis::Rows, Axis::Batch, Axis::Cols],
            depth: 4,
            slowdown: None,
            max_collectives: 64,
        }
    }
}

/// One decomposition applied.
#[derive(Clone, Debug, PartialEq)]
pub struct Decomposition {
    /// The collective's name in the graph it was chosen in.
    pub collective: String,
    /// The axis.
    pub axis: Axis,
    /// Chunks.
    pub n: u32,
    /// Ops in the context (the collective included).
    pub context_ops: usize,
    /// Makespan before and after (ns), as evaluated.
    pub before_ns: u64,
    /// Makespan after (ns).
    pub after_ns: u64,
}

/// What [`select`] returns.
#[derive(Clone, Debug)]
pub struct Selected {
    /// The rewritten graph (the input when nothing helped).
    pub graph: Graph,
    /// The decompositions applied, in order.
    pub decompositions: Vec<Decomposition>,
    /// Evaluated makespan of the input (ns).
    pub before_ns: u64,
    /// Evaluated makespan of the result (ns).
    pub after_ns: u64,
}

/// The best baseline schedule of `graph` (makespan and timeline).
pub fn evaluate(graph: &Graph, hardware: &Hardware) -> Result<(u64, Timeline), DecompError> {
    let d = hardware.durations(graph);
    let plans: [StreamPlan; 3] = [
        baselines::program_order(graph)?,
        baselines::lhs(graph, &d)?,
        baselines::inductor(graph, baselines::INDUCTOR_DISTANCE)?,
    ];
    let mut best: Option<Timeline> = None;
    for p in &plans {
        let t = simulate(graph, p, &d, hardware.contention)?;
        if best.as_ref().is_none_or(|b| t.makespan < b.makespan) {
            best = Some(t);
        }
    }
    let t = best.expect("three plans");
    Ok((t.makespan, t))
}

/// Chooses decompositions for `graph` (see the module docs).
pub fn select(
    graph: &Graph,
    hardware: &Hardware,
    config: &SelectConfig,
) -> Result<Selected, DecompError> {
    let (before, timeline) = evaluate(graph, hardware)?;
    let names: Vec<String> = critical(graph, &timeline, config.threshold)
        .into_iter()
        .take(config.max_collectives)
        .map(|c| graph.op(c.op).name.clone())
        .collect();
    let mut current = graph.clone();
    let mut makespan = before;
    let mut applied = Vec::new();
    for name in names {
        let Some(c) = current.find(&name) else {
            continue; // split by an earlier decomposition's context
        };
        let mut best: Option<(u64, Graph, Decomposition)> = None;
        for &axis in &config.axes {
            for &n in &config.ns {
                let Some(ctx) = context(&current, c, axis, n, config.depth) else {
                    continue;
                };
                let split = |op: &concerto_graph::Op, i: u32| {
                    let slow = config.slowdown.map(|f| (f, hardware.op_ns(op)));
                    chunk(op, axis, n, i, slow)
                };
                let r = rewrite(&current, &ctx, &split)?;
                let (m, _) = evaluate(&r.graph, hardware)?;
                if m < best.as_ref().map_or(makespan, |b| b.0) {
                    best = Some((
                        m,
                        r.graph,
                        Decomposition {
                            collective: name.clone(),
                            axis,
                            n,
                            context_ops: ctx.ops.len(),
                            before_ns: makespan,
                            after_ns: m,
                        },
                    ));
                }
            }
        }
        if let Some((m, g, d)) = best {
            current = g;
            makespan = m;
            applied.push(d);
        }
    }
    Ok(Selected {
        graph: current,
        decompositions: applied,
        before_ns: before,
        after_ns: makespan,
    })
}
